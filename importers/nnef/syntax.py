"""A reader of NNEF text as tract reads it: tokens, then a syntax tree (no evaluation).

The Khronos parser (`nnef.parse_string`) reads the spec's language; tract's NNEF reader is
more lenient, and torch-to-nnef's tract target relies on that: fragments and operator
expressions without the KHR extensions, `extension tract_registry ...;` / `tract_symbol S;`,
empty parameter lists, symbols and tensors where integers are declared (`shape = [1, S]`,
`reshape(x, shape = [d0, d1, -1])`), an identifier assigned twice, strings in double quotes.
This module reads that language into plain dataclasses; `importers/nnef/tract/` evaluates them.

Tokens skip comments (`# ...`); every node keeps the line and column of its first token so that
messages name `graph.nnef:line:col`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from estuary.base.errors import ModelImportError

_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\n]+|\#[^\n]*)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'[^'\n]*'|"[^"\n]*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>->|<=|>=|==|!=|&&|\|\||[-+*/^<>=!()\[\]{},;:?])
""", re.X)


@dataclass(frozen=True)
class Token:
    kind: str  # number, string, name, op, end
    text: str
    line: int
    col: int


def tokenize(where: str, text: str) -> list[Token]:
    """The tokens of `text` (comments and spaces dropped) and an 'end' token."""
    out: list[Token] = []
    pos, line, start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ModelImportError(f"{where}:{line}:{pos - start + 1}: unexpected character {text[pos]!r}")
        kind = m.lastgroup or ""
        if kind != "space":
            out.append(Token(kind, m.group(), line, pos - start + 1))
        newlines = m.group().count("\n")
        if newlines:
            line += newlines
            start = m.start() + m.group().rfind("\n") + 1
        pos = m.end()
    out.append(Token("end", "", line, pos - start + 1))
    return out


# ---------------------------------------------------------------- syntax tree


@dataclass(frozen=True)
class Literal:
    value: Union[int, float, bool, str]
    line: int
    col: int


@dataclass(frozen=True)
class Name:
    name: str
    line: int
    col: int


@dataclass(frozen=True)
class ArrayExpr:
    items: tuple[Expr, ...]
    line: int
    col: int


@dataclass(frozen=True)
class TupleExpr:
    items: tuple[Expr, ...]
    line: int
    col: int


@dataclass(frozen=True)
class Argument:
    name: str | None  # None for a positional argument
    value: Expr


@dataclass(frozen=True)
class Call:
    op: str
    generic: str | None  # the `<scalar>` of `variable<scalar>(...)`
    args: tuple[Argument, ...]
    line: int
    col: int


@dataclass(frozen=True)
class Binary:
    op: str
    left: Expr
    right: Expr
    line: int
    col: int


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Expr
    line: int
    col: int


@dataclass(frozen=True)
class Conditional:
    then: Expr
    condition: Expr
    otherwise: Expr
    line: int
    col: int


@dataclass(frozen=True)
class Subscript:
    target: Expr
    index: Expr | None
    stop: Expr | None  # `x[a:b]` when is_range
    is_range: bool
    line: int
    col: int


Expr = Union[Literal, Name, ArrayExpr, TupleExpr, Call, Binary, Unary, Conditional, Subscript]


@dataclass(frozen=True)
class Assignment:
    targets: Expr  # a Name, or an ArrayExpr / TupleExpr of targets
    value: Expr
    line: int
    col: int


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # the type's text: `tensor<scalar>`, `integer[]`, `(string, tensor<scalar>)[]`
    default: Expr | None


@dataclass
class Fragment:
    name: str
    params: list[Param]
    results: list[Param]
    body: list[Assignment] | None  # None for a declaration without a body
    generic: str | None = None  # `?` for `fragment f<?>(...)`, with an optional default type after '='
    line: int = 0


@dataclass
class Document:
    version: str
    extensions: list[tuple[str, list[str]]] = field(default_factory=list)  # (name, arguments)
    fragments: dict[str, Fragment] = field(default_factory=dict)
    graph_name: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    body: list[Assignment] = field(default_factory=list)


def tensor_type(type_text: str) -> bool:
    """Whether a parameter of this type takes tensors (`tensor<...>` or an array/tuple of them)."""
    return "tensor" in type_text


# ---------------------------------------------------------------- parser


class Parser:
    """Recursive descent over the tokens of one document (or of the standard library)."""

    def __init__(self, where: str, text: str, lenient: bool = False) -> None:
        self.where = where
        self.lenient = lenient  # skip fragment bodies it cannot read (the standard library's)
        self.tokens = tokenize(where, text)
        self.i = 0

    # ------------------------------------------------------------ tokens

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def fail(self, message: str, tok: Token | None = None) -> ModelImportError:
        t = tok or self.tok
        return ModelImportError(f"{self.where}:{t.line}:{t.col}: {message}")

    def at(self, *texts: str) -> bool:
        return self.tok.kind in ("op", "name") and self.tok.text in texts

    def take(self) -> Token:
        t = self.tok
        if t.kind != "end":
            self.i += 1
        return t

    def expect(self, text: str) -> Token:
        if not self.at(text):
            found = self.tok.text or "the end of the text"
            raise self.fail(f"expected {text!r}, found {found!r}")
        return self.take()

    def name(self) -> Token:
        if self.tok.kind != "name":
            raise self.fail(f"expected a name, found {self.tok.text or 'the end of the text'!r}")
        return self.take()

    # ------------------------------------------------------------ document

    def document(self) -> Document:
        self.expect("version")
        version = self.take()
        if version.kind != "number":
            raise self.fail("expected a version number", version)
        self.expect(";")
        doc = Document(version.text)
        while self.at("extension"):
            self.take()
            while True:
                name = self.name().text
                args = []
                while self.tok.kind == "name":
                    args.append(self.take().text)
                doc.extensions.append((name, args))
                if not self.at(","):
                    break
                self.take()
            self.expect(";")
        while self.at("fragment"):
            frag = self.fragment()
            doc.fragments[frag.name] = frag
        self.expect("graph")
        doc.graph_name = self.name().text
        doc.inputs = self.names()
        self.expect("->")
        doc.outputs = self.names()
        doc.body = self.body()
        if self.tok.kind != "end":
            raise self.fail(f"unexpected {self.tok.text!r} after the graph")
        return doc

    def library(self) -> dict[str, Fragment]:
        """Fragment declarations and definitions only (the standard library's text)."""
        out: dict[str, Fragment] = {}
        while self.at("fragment"):
            frag = self.fragment()
            out[frag.name] = frag
        if self.tok.kind != "end":
            raise self.fail(f"expected 'fragment', found {self.tok.text!r}")
        return out

    def names(self) -> list[str]:
        self.expect("(")
        out: list[str] = []
        while not self.at(")"):
            out.append(self.name().text)
            if not self.at(")"):
                self.expect(",")
        self.take()
        return out

    def fragment(self) -> Fragment:
        start = self.expect("fragment")
        name = self.name().text
        generic = None
        if self.at("<"):
            self.take()
            self.expect("?")
            generic = "?"
            if self.at("="):
                self.take()
                generic = self.type_text()
            self.expect(">")
        params = self.params(defaults=True)
        self.expect("->")
        results = self.params(defaults=False)
        body = None
        if self.at(";"):
            self.take()
        elif self.lenient:
            body = self._lenient_body()
        else:
            body = self.body()
        return Fragment(name, params, results, body, generic, start.line)

    def _lenient_body(self) -> list[Assignment] | None:
        """A body, or None (skipped) when it uses what this parser does not read (comprehensions)."""
        begin = self.i
        try:
            return self.body()
        except ModelImportError:
            self.i, depth = begin, 0
            while self.tok.kind != "end":
                text = self.take().text
                depth += {"{": 1, "}": -1}.get(text, 0)
                if depth == 0:
                    break
            return None

    def params(self, defaults: bool) -> list[Param]:
        self.expect("(")
        out: list[Param] = []
        while not self.at(")"):
            name = self.name().text
            self.expect(":")
            type_text = self.type_text()
            default = None
            if defaults and self.at("="):
                self.take()
                default = self.expression()
            out.append(Param(name, type_text, default))
            if not self.at(")"):
                self.expect(",")
        self.take()
        return out

    def type_text(self) -> str:
        if self.at("("):
            self.take()
            parts = [self.type_text()]
            while self.at(","):
                self.take()
                parts.append(self.type_text())
            self.expect(")")
            text = "(" + ", ".join(parts) + ")"
        elif self.at("?"):
            text = self.take().text
        else:
            text = self.name().text
            if text == "tensor":
                self.expect("<")
                inner = "" if self.at(">") else (self.take().text if self.at("?") else self.name().text)
                self.expect(">")
                text = f"tensor<{inner}>"
        while self.at("["):
            self.take()
            self.expect("]")
            text += "[]"
        return text

    def body(self) -> list[Assignment]:
        self.expect("{")
        out: list[Assignment] = []
        while not self.at("}"):
            if self.tok.kind == "end":
                raise self.fail("expected '}' before the end of the text")
            out.append(self.assignment())
        self.take()
        return out

    def assignment(self) -> Assignment:
        start = self.tok
        targets = self.lvalue()
        if self.at(","):  # a bare tuple of targets: `a, b = f(x);`
            items = [targets]
            while self.at(","):
                self.take()
                items.append(self.lvalue())
            targets = TupleExpr(tuple(items), start.line, start.col)
        self.expect("=")
        value = self.expression()
        self.expect(";")
        return Assignment(targets, value, start.line, start.col)

    def lvalue(self) -> Expr:
        t = self.tok
        if t.kind == "name":
            self.take()
            return Name(t.text, t.line, t.col)
        if self.at("[", "("):
            close = "]" if self.take().text == "[" else ")"
            items: list[Expr] = []
            while not self.at(close):
                items.append(self.lvalue())
                if not self.at(close):
                    self.expect(",")
            self.take()
            return (ArrayExpr if close == "]" else TupleExpr)(tuple(items), t.line, t.col)
        raise self.fail("expected a name, or an array or tuple of names, on the left of '='")

    # ------------------------------------------------------------ expressions (spec §3.2 precedence)

    def expression(self) -> Expr:
        value = self.binary(0)
        if self.at("if"):
            t = self.take()
            condition = self.binary(0)
            self.expect("else")
            otherwise = self.expression()
            return Conditional(value, condition, otherwise, t.line, t.col)
        return value

    _LEVELS: tuple[tuple[str, ...], ...] = (("||",), ("&&",), ("<", "<=", ">", ">=", "==", "!=", "in"),
                                            ("+", "-"), ("*", "/"), ("^",))

    def binary(self, level: int) -> Expr:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.at(*self._LEVELS[level]):
            t = self.take()
            right = self.binary(level if t.text == "^" else level + 1)  # ^ is right-associative
            left = Binary(t.text, left, right, t.line, t.col)
            if t.text == "^":
                break
        return left

    def unary(self) -> Expr:
        if self.at("-", "+", "!"):
            t = self.take()
            operand = self.unary()
            if t.text == "-" and isinstance(operand, Literal) and isinstance(operand.value, (int, float)) \
                    and not isinstance(operand.value, bool):
                return Literal(-operand.value, t.line, t.col)
            return operand if t.text == "+" else Unary(t.text, operand, t.line, t.col)
        return self.postfix(self.primary())

    def postfix(self, value: Expr) -> Expr:
        while self.at("["):
            t = self.take()
            index = None if self.at(":") else self.expression()
            if self.at(":"):
                self.take()
                stop = None if self.at("]") else self.expression()
                value = Subscript(value, index, stop, True, t.line, t.col)
            else:
                value = Subscript(value, index, None, False, t.line, t.col)
            self.expect("]")
        return value

    def primary(self) -> Expr:
        t = self.tok
        if t.kind == "number":
            self.take()
            is_float = any(ch in t.text for ch in ".eE")
            return Literal(float(t.text) if is_float else int(t.text), t.line, t.col)
        if t.kind == "string":
            self.take()
            return Literal(t.text[1:-1], t.line, t.col)
        if t.kind == "name":
            self.take()
            if t.text in ("true", "false"):
                return Literal(t.text == "true", t.line, t.col)
            generic = None
            if self.at("<") and self._generic_call():
                self.take()
                generic = self.type_text()
                self.expect(">")
            if self.at("("):
                return Call(t.text, generic, self.arguments(), t.line, t.col)
            return Name(t.text, t.line, t.col)
        if self.at("["):
            self.take()
            if self.at("for"):
                raise self.fail("list comprehensions ('[for ...]') are not supported here", t)
            items = self.items("]")
            return ArrayExpr(tuple(items), t.line, t.col)
        if self.at("("):
            self.take()
            items = self.items(")")
            if len(items) == 1 and not self._trailing_comma:
                return items[0]
            return TupleExpr(tuple(items), t.line, t.col)
        raise self.fail(f"expected a value, found {t.text or 'the end of the text'!r}")

    _trailing_comma = False

    def items(self, close: str) -> list[Expr]:
        out: list[Expr] = []
        self._trailing_comma = False
        while not self.at(close):
            out.append(self.expression())
            if self.at(","):
                self.take()
                self._trailing_comma = True
            elif not self.at(close):
                raise self.fail(f"expected ',' or {close!r}, found {self.tok.text or 'the end of the text'!r}")
            else:
                self._trailing_comma = False
        self.take()
        return out

    def _generic_call(self) -> bool:
        """`name<type>(` (a generic invocation) rather than a comparison `name < x`."""
        j = self.i + 1
        depth = 0
        while j < len(self.tokens) and j < self.i + 8:
            text = self.tokens[j].text
            if text == ">" and depth == 0:
                return j + 1 < len(self.tokens) and self.tokens[j + 1].text == "("
            if text in ("<",):
                depth += 1
            elif self.tokens[j].kind not in ("name",) and text not in ("?", "[", "]"):
                return False
            j += 1
        return False

    def arguments(self) -> tuple[Argument, ...]:
        self.expect("(")
        out: list[Argument] = []
        while not self.at(")"):
            if self.tok.kind == "name" and self.tokens[self.i + 1].text == "=" and self.tokens[self.i + 2].text != "=":
                name = self.take().text
                self.take()
                out.append(Argument(name, self.expression()))
            else:
                out.append(Argument(None, self.expression()))
            if not self.at(")"):
                self.expect(",")
        self.take()
        return tuple(out)


def parse_document(where: str, text: str) -> Document:
    return Parser(where, text).document()


def parse_library(where: str, text: str) -> dict[str, Fragment]:
    return Parser(where, text, lenient=True).library()
