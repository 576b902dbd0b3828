"""The user pages' Python blocks run as written: docs/building-models.md's then the README's, in
order, as one script, in an empty folder (so a snippet may use a file an earlier one wrote, and
nothing from the repository)."""
import os
import re
import subprocess
import sys

from helpers import ROOT  # noqa: E402 - the repository


PAGES = ["docs/building-models.md", "README.md"]  # the README's examples use the model files the first writes


def blocks(lang):
    found = []
    for page in PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            found += re.findall(rf"^```{lang}\n(.*?)^```", f.read(), flags=re.S | re.M)
    return found


def test_python_blocks_run_as_written(tmp_path):
    code = blocks("python")
    assert len(code) >= 4
    script = "\n".join(f"# --- block {i}\n{block}" for i, block in enumerate(code))
    (tmp_path / "readme.py").write_text(script)
    env = {**os.environ, "ESTUARY_CACHE": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "readme.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "[2. 0. 4. 0.]" in r.stdout  # the NNAPI block's result, ADD with a fused RELU
    assert (tmp_path / "model.json").exists() and (tmp_path / "add.nnapi.json").exists()


def test_json_blocks_parse():
    import json

    for block in blocks("json"):
        json.loads(block)


def test_commands_named_in_the_readme_exist():
    """Every `estuary <command>` the README's shell blocks use is a subcommand."""
    from estuary.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    used = {m for block in blocks("sh") for m in re.findall(r"^estuary (\w+)", block, flags=re.M)}
    assert used and used <= set(sub.choices), used - set(sub.choices)
