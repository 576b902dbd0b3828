"""mypy checks every module of the package: pyproject.toml's [tool.mypy] `modules` (what
`python -m mypy` checks, as scripts/test.sh runs it) lists exactly the modules that the
[tool.setuptools] package-dir folders hold, so a new module cannot go unchecked."""
import os
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository

with open(os.path.join(ROOT, "pyproject.toml"), "rb") as _f:
    PYPROJECT = tomllib.load(_f)
MYPY = PYPROJECT["tool"]["mypy"]


def package_modules():
    """Import name of every .py file under the package-dir folders (`__init__` names its package);
    a file belongs to the package of the deepest folder that holds it."""
    folders = {os.path.normpath(os.path.join(ROOT, folder)): package
               for package, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items()}
    modules = set()
    for top in folders:
        for dirpath, dirnames, files in os.walk(top):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                folder = max((f for f in folders if path.startswith(f + os.sep)), key=len)
                parts = os.path.relpath(path, folder)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts.pop()
                modules.add(".".join([folders[folder]] + parts))
    return modules


def test_mypy_checks_every_module():
    listed = set(MYPY["modules"])
    modules = package_modules()
    assert len(modules) > 100, f"found only {len(modules)} modules: is package-dir read right?"
    missing = sorted(modules - listed)
    unknown = sorted(listed - modules)
    assert not missing, ("not type-checked: add to [tool.mypy] modules in pyproject.toml: "
                         + ", ".join(missing))
    assert not unknown, ("[tool.mypy] modules in pyproject.toml names modules the package does not have: "
                         + ", ".join(unknown))


def test_mypy_modules_sorted():
    listed = MYPY["modules"]
    duplicates = sorted({m for m in listed if listed.count(m) > 1})
    assert not duplicates, f"[tool.mypy] modules lists these more than once: {', '.join(duplicates)}"
    assert listed == sorted(listed), "[tool.mypy] modules in pyproject.toml is not sorted"


def test_mypy_overrides_name_modules():
    """An override's module (or `package.*`) that names none of the package's modules is stale
    (a renamed module would silently lose its settings); other packages' names are left alone."""
    modules = package_modules()
    stale = []
    for override in MYPY.get("overrides", []):
        names = override["module"]
        for name in [names] if isinstance(names, str) else names:
            if name.split(".")[0] != "estuary":
                continue
            if name.endswith(".*"):
                found = any(m == name[:-2] or m.startswith(name[:-1]) for m in modules)
            else:
                found = name in modules
            if not found:
                stale.append(name)
    assert not stale, f"[[tool.mypy.overrides]] in pyproject.toml name no module of the package: {', '.join(stale)}"
