"""Symbolic dimensions: a tensor dimension that is not fixed when the model is compiled.

A dynamic dimension is a symbol with a name and bounds (WebNN's `MLDynamicDimension {name,
maxSize}`, Core ML's `RangeDim`, tract's `tract_symbol`), or an expression of symbols that type
inference derives from them: `past + seq` (a concatenation), `(h - 1) // 2 + 1` (a strided
convolution), `8 * seq` (a reshape). `Dim` is that expression in a canonical form: a sum of
monomials with integer coefficients over atoms, an atom being a symbol or a floor division of an
expression by a positive constant. Equal expressions have equal canonical forms, so shapes
compare and hash by value; arithmetic with ints gives a `Dim`, or a plain int when the result is
constant. Every symbol is at least 1.

Text form (printer and parser): `2*seq + 1`, `(h - 1)//2 + 1`; a shape's symbols with their
bounds as `seq=1..512` (`shape_text`, `parse_shape`).

`Unifier` records what type inference learns: two symbols that must be equal (two inputs whose
lengths meet in a broadcast) are bound to one representative, or a symbol to an expression;
the runtime checks those bindings against the inputs' actual sizes.
"""
from __future__ import annotations

import contextvars
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Union

MAX_BOUND = (1 << 31) - 1  # no dynamic dimension may exceed this (WebIDL long; the size limit of one tensor)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class DimError(ValueError):
    """An expression that is not a valid dimension (bad text, division by a non-constant, a name
    that is not an identifier); type rules turn it into a VerificationError."""


@dataclass(frozen=True, order=True)
class Sym:
    """A symbol: a dimension known at run time, between `lo` and `hi` (inclusive)."""

    name: str
    lo: int = 1
    hi: int = MAX_BOUND

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise DimError(f"dimension name {self.name!r} is not an identifier (letters, digits, '_')")
        if not 1 <= self.lo <= self.hi <= MAX_BOUND:
            raise DimError(f"dimension {self.name!r}: bounds {self.lo}..{self.hi} are not 1 <= min <= max <= "
                           f"{MAX_BOUND}")

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True)
class FloorDiv:
    """`num // den` with a constant `den` > 1 that does not divide `num` exactly."""

    num: Dim
    den: int

    @property
    def key(self) -> str:
        return f"{self.num}//{self.den}" if self.num.sym else f"({self.num})//{self.den}"


Atom = Union[Sym, FloorDiv]
Monomial = tuple[Atom, ...]  # sorted by key; () is the constant term
Value = Union[int, "Dim"]


def _mono_key(m: Monomial) -> tuple[int, tuple[str, ...]]:
    return (len(m), tuple(a.key for a in m))


class Dim:
    """A symbolic dimension (see the module docstring). Build one with `Dim.symbol(name, lo, hi)`
    and arithmetic; never constant (constant results are plain ints)."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: Mapping[Monomial, int]) -> None:
        items = sorted(((m, c) for m, c in terms.items() if c), key=lambda mc: _mono_key(mc[0]))
        self.terms: tuple[tuple[Monomial, int], ...] = tuple(items)
        self._hash = hash(tuple((tuple(a.key for a in m), c) for m, c in self.terms))

    # ------------------------------------------------------------ construction

    @staticmethod
    def symbol(name: str, lo: int = 1, hi: int = MAX_BOUND) -> Dim:
        return Dim({(Sym(name, lo, hi),): 1})

    @staticmethod
    def make(terms: Mapping[Monomial, int]) -> Value:
        """The expression with these terms: a plain int when only a constant remains."""
        terms = {m: c for m, c in terms.items() if c}
        if not terms:
            return 0
        if set(terms) == {()}:
            return terms[()]
        return Dim(terms)

    # ------------------------------------------------------------ arithmetic

    def __add__(self, other: Value) -> Value:
        out = dict(self.terms)
        for m, c in _terms(other):
            out[m] = out.get(m, 0) + c
        return Dim.make(out)

    __radd__ = __add__

    def __neg__(self) -> Value:
        return Dim.make({m: -c for m, c in self.terms})

    def __sub__(self, other: Value) -> Value:
        return self + (-other if isinstance(other, Dim) else -int(other))

    def __rsub__(self, other: Value) -> Value:
        return (-self) + other

    def __mul__(self, other: Value) -> Value:
        out: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in _terms(other):
                m = tuple(sorted(m1 + m2, key=lambda a: a.key))
                out[m] = out.get(m, 0) + c1 * c2
        return Dim.make(out)

    __rmul__ = __mul__

    def __floordiv__(self, other: Value) -> Value:
        if isinstance(other, Dim):
            raise DimError(f"cannot divide {self} by the dynamic {other}")
        k = int(other)
        if k <= 0:
            raise DimError(f"cannot divide {self} by {k}")
        if k == 1:
            return self
        whole: dict[Monomial, int] = {}
        rest: dict[Monomial, int] = {}
        for m, c in self.terms:
            if m == ():
                whole[m] = c // k  # an integer plus c/k: the constant's floor and remainder split
                if c % k:
                    rest[m] = c % k
            elif c % k == 0:
                whole[m] = c // k
            else:
                rest[m] = c
        remainder = Dim.make(rest)
        if not isinstance(remainder, Dim):
            return Dim.make(whole)  # the remainder is a constant in [0, k): floor adds nothing
        if remainder.lower() >= 0 and remainder.upper() < k:
            return Dim.make(whole)
        return Dim.make(whole) + Dim({(FloorDiv(remainder, k),): 1})

    def __mod__(self, other: Value) -> Value:
        return self - other * (self // other)

    def ceildiv(self, k: int) -> Value:
        return (self + (k - 1)) // k

    # ------------------------------------------------------------ comparison

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dim) and self.terms == other.terms

    def __hash__(self) -> int:
        return self._hash

    def __int__(self) -> int:
        raise DimError(f"the dynamic dimension {self} has no fixed value")

    def __index__(self) -> int:
        raise DimError(f"the dynamic dimension {self} has no fixed value")

    def __bool__(self) -> bool:
        return True  # a dimension is at least 1

    def __lt__(self, other: object) -> bool:
        raise DimError(f"cannot order the dynamic dimension {self}; use its lower() or upper() bound")

    __le__ = __gt__ = __ge__ = __lt__

    # ------------------------------------------------------------ inspection

    def atoms(self) -> Iterator[Atom]:
        for m, _ in self.terms:
            yield from m

    def symbols(self) -> set[Sym]:
        """Every symbol the expression uses (inside floor divisions too)."""
        out: set[Sym] = set()
        for a in self.atoms():
            out |= {a} if isinstance(a, Sym) else a.num.symbols()
        return out

    @property
    def sym(self) -> Sym | None:
        """The symbol when the expression is exactly one symbol, else None."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and len(self.terms[0][0]) == 1:
            atom = self.terms[0][0][0]
            return atom if isinstance(atom, Sym) else None
        return None

    def lower(self) -> int:
        return self._bounds()[0]

    def upper(self) -> int:
        return self._bounds()[1]

    def _bounds(self) -> tuple[int, int]:
        lo = hi = 0
        for m, c in self.terms:
            a, b = 1, 1
            for atom in m:
                x, y = _atom_bounds(atom)
                a, b = min(a * x, a * y, b * x, b * y), max(a * x, a * y, b * x, b * y)
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi

    def evaluate(self, env: Mapping[str, int]) -> int:
        """The value for symbol values `env` (KeyError for a missing symbol)."""
        total = 0
        for m, c in self.terms:
            v = c
            for atom in m:
                v *= env[atom.name] if isinstance(atom, Sym) else atom.num.evaluate(env) // atom.den
            total += v
        return total

    def substitute(self, env: Mapping[str, Value]) -> Value:
        """The expression with symbols replaced by `env`'s values (ints or expressions)."""
        total: Value = 0
        for m, c in self.terms:
            v: Value = c
            for atom in m:
                if isinstance(atom, Sym):
                    v = v * env.get(atom.name, Dim({(atom,): 1}))
                else:
                    v = v * (substitute(atom.num, env) // atom.den)
            total = total + v
        return total

    # ------------------------------------------------------------ text

    def __str__(self) -> str:
        parts: list[str] = []
        for m, c in sorted(self.terms, key=lambda mc: (-len(mc[0]), [a.key for a in mc[0]])):  # constant last
            if m == ():
                body = str(abs(c))
            else:
                wrap = abs(c) != 1 or len(m) > 1  # a floor division inside a product gets parentheses
                atoms = "*".join(f"({a.key})" if wrap and isinstance(a, FloorDiv) else a.key for a in m)
                body = atoms if abs(c) == 1 else f"{abs(c)}*{atoms}"
            if not parts:
                parts.append(body if c > 0 else f"-{body}")
            else:
                parts.append(f"+ {body}" if c > 0 else f"- {body}")
        return " ".join(parts)

    def __repr__(self) -> str:
        return str(self)  # messages print shapes as lists: [1, seq, 64]


def _terms(v: Value) -> tuple[tuple[Monomial, int], ...]:
    if isinstance(v, Dim):
        return v.terms
    return (((), int(v)),)


def _atom_bounds(atom: Atom) -> tuple[int, int]:
    if isinstance(atom, Sym):
        return atom.lo, atom.hi
    return atom.num.lower() // atom.den, atom.num.upper() // atom.den


# ---------------------------------------------------------------- helpers on values (int or Dim)


def is_dynamic(v: object) -> bool:
    return isinstance(v, Dim)


def is_static(shape: Iterable[Value]) -> bool:
    return not any(isinstance(d, Dim) for d in shape)


def substitute(v: Value, env: Mapping[str, Value]) -> Value:
    return v.substitute(env) if isinstance(v, Dim) else v


def evaluate(v: Value, env: Mapping[str, int]) -> int:
    return v.evaluate(env) if isinstance(v, Dim) else int(v)


def upper(v: Value) -> int:
    """The largest value `v` can take (itself when static)."""
    return v.upper() if isinstance(v, Dim) else int(v)


def lower(v: Value) -> int:
    return v.lower() if isinstance(v, Dim) else int(v)


def size(shape: Iterable[Value]) -> Value:
    """The element count of a shape (an expression when a dimension is dynamic)."""
    total: Value = 1
    for d in shape:
        total = total * d
    return total


def symbols(shape: Iterable[Value]) -> dict[str, Sym]:
    """name -> Sym of every symbol in a shape."""
    out: dict[str, Sym] = {}
    for d in shape:
        if isinstance(d, Dim):
            for s in d.symbols():
                out[s.name] = s
    return out


def value(v: object) -> Value:
    """`v` (an int, numpy integer or Dim) as a dimension value; DimError otherwise."""
    if isinstance(v, Dim):
        return v
    try:  # any object: float() and int() raise TypeError for what they cannot convert
        if isinstance(v, bool) or float(v) != int(v):  # type: ignore[arg-type, call-overload]
            raise DimError(f"{v!r} is not a whole number")
        return int(v)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        raise DimError(f"{v!r} is not a dimension") from None


# ---------------------------------------------------------------- text form


def bounds_text(syms: Iterable[Sym]) -> str:
    return ", ".join(f"{s.name}={s.lo}..{s.hi}" for s in sorted(syms, key=lambda s: s.name))


def shape_text(shape: Sequence[Value], only_dynamic: bool = False) -> str:
    """`1, seq, 64; seq=1..512` (with `only_dynamic`: `seq; seq=1..512`)."""
    dims = [str(d) for d in shape if isinstance(d, Dim) or not only_dynamic]
    syms = symbols(shape)
    return ", ".join(dims) + (f"; {bounds_text(syms.values())}" if syms else "")


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*()]))")


def parse(text: str, bounds: Mapping[str, Sym]) -> Value:
    """One expression (`2*seq + 1`, `(h - 1)//2 + 1`); its symbols must be in `bounds`."""
    tokens: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise DimError(f"cannot read dimension {text!r} at {text[pos:]!r}")
        tokens.append(m.group(m.lastindex or 0))
        pos = m.end()
    result, i = _sum(tokens, 0, bounds, text)
    if i != len(tokens):
        raise DimError(f"cannot read dimension {text!r}")
    return result


def _sum(t: list[str], i: int, b: Mapping[str, Sym], text: str) -> tuple[Value, int]:
    sign = 1
    if i < len(t) and t[i] == "-":
        sign, i = -1, i + 1
    v, i = _product(t, i, b, text)
    total: Value = v * sign
    while i < len(t) and t[i] in "+-":
        op = t[i]
        v, i = _product(t, i + 1, b, text)
        total = total + v if op == "+" else total - v
    return total, i


def _product(t: list[str], i: int, b: Mapping[str, Sym], text: str) -> tuple[Value, int]:
    v, i = _atom(t, i, b, text)
    while i < len(t) and t[i] in ("*", "//"):
        op = t[i]
        w, i = _atom(t, i + 1, b, text)
        v = v * w if op == "*" else _floordiv(v, w)
    return v, i


def _floordiv(a: Value, b: Value) -> Value:
    if isinstance(b, Dim):
        raise DimError(f"cannot divide by the dynamic {b}")
    return a // b if isinstance(a, Dim) else int(a) // int(b)


def _atom(t: list[str], i: int, b: Mapping[str, Sym], text: str) -> tuple[Value, int]:
    if i >= len(t):
        raise DimError(f"cannot read dimension {text!r}: it ends early")
    tok = t[i]
    if tok == "(":
        v, i = _sum(t, i + 1, b, text)
        if i >= len(t) or t[i] != ")":
            raise DimError(f"cannot read dimension {text!r}: unbalanced parentheses")
        return v, i + 1
    if tok.isdigit():
        return int(tok), i + 1
    if _NAME.match(tok):
        if tok not in b:
            raise DimError(f"dimension {text!r} uses {tok!r}, whose bounds are not given")
        s = b[tok]
        return Dim({(s,): 1}), i + 1
    raise DimError(f"cannot read dimension {text!r} at {tok!r}")


def parse_bounds(text: str) -> dict[str, Sym]:
    """`seq=1..512, past=0..448` -> {name: Sym}."""
    out: dict[str, Sym] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\d+)\s*\.\.\s*(\d+)", item)
        if not m:
            raise DimError(f"cannot read symbol bounds {item!r} (expected name=min..max)")
        out[m.group(1)] = Sym(m.group(1), int(m.group(2)), int(m.group(3)))
    return out


def parse_shape(text: str) -> list[Value]:
    """The inverse of `shape_text` (the full form: every dimension listed)."""
    dims, _, bounds = text.partition(";")
    table = parse_bounds(bounds)
    return [parse(d, table) for d in dims.split(",") if d.strip()]


# ---------------------------------------------------------------- unification


class Unifier:
    """What type inference learned about a graph's symbols: `bindings` maps a symbol's name to the
    value it equals (another symbol, an expression, or a constant); `checks` are derived
    dimensions that must be at least 1 at run time (a convolution's output on a short input)."""

    def __init__(self, bindings: Mapping[str, Value] | None = None, checks: Iterable[Dim] = ()) -> None:
        self.bindings: dict[str, Value] = dict(bindings or {})
        self.checks: set[Dim] = set(checks)

    def need_positive(self, v: Value) -> bool:
        """Record that `v` must be at least 1; False when it never can be."""
        v = self.resolve(v)
        if not isinstance(v, Dim):
            return v >= 1
        if v.upper() < 1:
            return False
        if v.lower() < 1:
            self.checks.add(v)
        return True

    def resolve(self, v: Value) -> Value:
        """`v` with every bound symbol replaced by what it equals."""
        for _ in range(len(self.bindings) + 1):
            if not isinstance(v, Dim) or not (set(s.name for s in v.symbols()) & set(self.bindings)):
                return v
            v = v.substitute(self.bindings)
        return v

    def unify(self, a: Value, b: Value) -> Value | None:
        """The common value of `a` and `b` when they can be made equal (recording the binding
        that makes them so), else None (two different constants, or two expressions that are
        not a plain symbol)."""
        a, b = self.resolve(a), self.resolve(b)
        if a == b:
            return a
        sa = a.sym if isinstance(a, Dim) else None
        sb = b.sym if isinstance(b, Dim) else None
        if sa is not None and sb is not None:
            keep, drop = sa, sb  # the first operand's symbol stays
            if max(keep.lo, drop.lo) > min(keep.hi, drop.hi):
                return None  # their ranges do not meet
            self.bindings[drop.name] = Dim({(keep,): 1})
            return Dim({(keep,): 1})
        for s, other in ((sa, b), (sb, a)):
            if s is not None and not (isinstance(other, Dim) and s in other.symbols()):
                if lower(other) > s.hi or upper(other) < s.lo:
                    return None
                self.bindings[s.name] = other
                return other
        return None

    def text(self) -> list[str]:
        """The bindings as `name = value` lines and the checks as `value >= 1` lines (with the
        symbols' bounds), for the module and the signature."""
        out = []
        for name, v in sorted(self.bindings.items()):
            syms = symbols([v])
            out.append(f"{name} = {v}" + (f"; {bounds_text(syms.values())}" if syms else ""))
        for c in sorted(self.checks, key=str):
            out.append(f"{c} >= 1; {bounds_text(c.symbols())}")
        return out

    @staticmethod
    def from_text(lines: Iterable[str]) -> Unifier:
        u = Unifier()
        for line in lines:
            body, _, bounds = line.partition(";")
            table = parse_bounds(bounds)
            if body.rstrip().endswith(">= 1"):
                check = parse(body.rstrip()[:-4], table)
                if isinstance(check, Dim):
                    u.checks.add(check)
                continue
            name, _, expr = body.partition("=")
            u.bindings[name.strip()] = parse(expr, table)
        return u


_CURRENT: contextvars.ContextVar[Unifier | None] = contextvars.ContextVar("estuary_unifier", default=None)


def current() -> Unifier | None:
    """The Unifier of the graph being built or checked (None outside one: no symbol may then be
    unified, only equal dimensions agree)."""
    return _CURRENT.get()


@contextmanager
def unifying(unifier: Unifier) -> Iterator[Unifier]:
    token = _CURRENT.set(unifier)
    try:
        yield unifier
    finally:
        _CURRENT.reset(token)


def same(a: Value, b: Value) -> Value | None:
    """The common value of dimensions `a` and `b` (unified in the current Unifier), else None."""
    if a == b:
        return a
    u = current()
    if u is None:
        return None
    return u.unify(a, b)


def ceil_div(a: Value, k: int) -> Value:
    return a.ceildiv(k) if isinstance(a, Dim) else -(-int(a) // k)


def prod(values: Iterable[Value]) -> Value:
    return size(values)


__all__ = ["Dim", "DimError", "FloorDiv", "MAX_BOUND", "Sym", "Unifier", "Value", "bounds_text", "ceil_div",
           "current", "evaluate", "is_dynamic", "is_static", "lower", "parse", "parse_bounds", "parse_shape",
           "prod", "same", "shape_text", "size", "substitute", "symbols", "unifying", "upper", "value"]
