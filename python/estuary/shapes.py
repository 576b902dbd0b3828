"""Run-time shapes of a model with dynamic dimensions: which input sizes it accepts and the shapes
of its outputs for them.

A signature's dynamic dimension is a symbol (`seq`, with bounds) or, in outputs, an expression
of symbols (`2*seq`); its "dims" entry holds the symbols' bounds and the rules type inference
found: symbols that must be equal (two inputs whose lengths meet in a broadcast) and derived
dimensions that must stay positive (a convolution's output). `ShapeRules.bind` reads the symbols'
values off the input arrays and checks all of it, so a shape the compiled code cannot run is a
RuntimeInputError naming the input, the dimension and the bound, never a crash in IREE.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from estuary.base import dims
from estuary.base.errors import RuntimeInputError

Shape = tuple[int | str, ...]


class ShapeRules:
    """The dynamic dimensions of one function's signature."""

    def __init__(self, sig: Mapping[str, Any], where: str) -> None:
        entry = sig.get("dims") or {}
        self.where = where
        self.symbols = {n: dims.Sym(n, lo, hi) for n, (lo, hi) in entry.get("symbols", {}).items()}
        self.rules = dims.Unifier.from_text(entry.get("rules", []))
        self.inputs = [(n, [self._parse(d) for d in s]) for n, s, _ in sig["inputs"]]
        self.outputs = [(n, [self._parse(d) for d in s]) for n, s, _ in sig["outputs"]]
        self._last: tuple[tuple[int, ...], ...] | None = None  # the input shapes last found valid
        self._last_outputs: list[tuple[int, ...]] = []

    def _parse(self, d: int | str) -> dims.Value:
        return dims.parse(d, self.symbols) if isinstance(d, str) else int(d)

    @property
    def dynamic(self) -> bool:
        return bool(self.symbols)

    def bind(self, shapes: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """Check the input arrays' shapes (in signature order) and return the outputs' shapes;
        RuntimeInputError naming the input and dimension when they do not fit."""
        key = tuple(tuple(s) for s in shapes)
        if key == self._last:
            return self._last_outputs
        env: dict[str, int] = {}
        source: dict[str, str] = {}
        for (name, want), got in zip(self.inputs, shapes):
            if len(got) != len(want):
                raise RuntimeInputError(f"{self.where}: input {name!r} has shape {list(got)}, the model expects rank "
                                        f"{len(want)} ({_show(want)})")
            for axis, (w, g) in enumerate(zip(want, got)):
                if not isinstance(w, dims.Dim):
                    if w != g:
                        raise RuntimeInputError(f"{self.where}: input {name!r} has shape {list(got)}, the model expects "
                                                f"{_show(want)} (dimension {axis} is fixed at {w})")
                    continue
                sym = w.sym
                assert sym is not None  # an input's dynamic dimension is a plain symbol
                if not sym.lo <= g <= sym.hi:
                    raise RuntimeInputError(f"{self.where}: input {name!r} dimension {axis} ({sym.name}) is {g}, "
                                            f"outside its bounds {sym.lo}..{sym.hi}")
                if sym.name in env and env[sym.name] != g:
                    raise RuntimeInputError(f"{self.where}: input {name!r} dimension {axis} ({sym.name}) is {g}, but "
                                            f"{source[sym.name]} gave {sym.name} = {env[sym.name]}")
                env[sym.name] = g
                source.setdefault(sym.name, f"input {name!r} dimension {axis}")
        self._check_rules(env, source)
        outputs = [tuple(dims.evaluate(d, env) for d in shape) for _, shape in self.outputs]
        self._last, self._last_outputs = key, outputs
        return outputs

    def _check_rules(self, env: dict[str, int], source: dict[str, str]) -> None:
        for name, value in self.rules.bindings.items():
            if name not in env:
                continue
            try:
                expected = dims.evaluate(value, env)
            except KeyError:
                continue
            if env[name] != expected:
                raise RuntimeInputError(f"{self.where}: {source[name]} ({name}) is {env[name]}, but the model needs "
                                        f"{name} = {value} = {expected} (the two meet in one operation)")
        for check in self.rules.checks:
            try:
                value = dims.evaluate(check, env)
            except KeyError:
                continue
            if value < 1:
                names = ", ".join(f"{s.name} = {env[s.name]}" for s in sorted(check.symbols()))
                raise RuntimeInputError(f"{self.where}: the inputs are too small for the model: with {names} an "
                                        f"intermediate dimension {check} would be {value}")


def _show(shape: Sequence[dims.Value]) -> str:
    parts = []
    for d in shape:
        sym = d.sym if isinstance(d, dims.Dim) else None
        parts.append(f"{sym.name} ({sym.lo}..{sym.hi})" if sym is not None else str(d))
    return f"[{', '.join(parts)}]"


def describe(shape: Sequence[int | str], sig: Mapping[str, Any]) -> str:
    """A signature shape for people: `[1, seq (1..512), 64]`."""
    table = (sig.get("dims") or {}).get("symbols", {})
    parts = []
    for d in shape:
        if isinstance(d, str) and d in table:
            lo, hi = table[d]
            parts.append(f"{d} ({lo}..{hi})")
        else:
            parts.append(str(d))
    return f"[{', '.join(parts)}]"
