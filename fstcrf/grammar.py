"""Constraint grammars: a small regular language over labels, compiled with pynini.

A grammar file (extension ``.fgr``) is a list of imports and named rules::

    import "iob2" ;                       # a shipped grammar, used as iob2.<rule>
    inside = [I-*] ;                      # label class: every label matching a glob
    chunk = any T: B-{T} I-{T}* ;         # one chunk of any type T
    start = iob2.start & !(.* O inside .*) ;

Expressions use labels (``B-NP``, ``"odd,label"``), classes (``[B-*]``,
``[^O]``), the any-label ``.``, rule names, concatenation, ``|``, ``&``,
``-``, ``!``, ``*``, ``+``, ``?``, ``{m,n}``, parentheses, and variables
(``{T}`` inside labels, bound by ``any T:``, ``all T:``, ``with T = NP:`` or
compile-time parameters).  docs/grammars.md is the language reference.

:func:`parse_grammar` / :func:`load_grammar` build a :class:`Grammar` (the AST
with named rules); :func:`compile_grammar` turns a rule into a minimal
deterministic acceptor over label keys (label i = key i + 1);
:func:`constrain` intersects a topology with it; :func:`restrict` and
:func:`decode` run inference under a grammar in the original state space.
"""

from __future__ import annotations

import bisect
import re
import weakref
from dataclasses import dataclass, fields
from functools import cached_property, reduce
from pathlib import Path
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pynini

from fstcrf.engine import budget
from fstcrf.errors import GrammarError, LabelError, TopologyError, UnknownLabelError
from fstcrf.engine.inference import Potentials, Viterbi, viterbi
from fstcrf.engine.topology import (
    Topology,
    check_labels,
    bounded_determinize,
    bounded_intersect,
    intersect,
    symbol_table,
)

SHIPPED_DIR = Path(__file__).resolve().parent / "grammars"
EXTENSION = ".fgr"
MAX_REPEAT = 1000
KEYWORDS = frozenset({"import", "as", "any", "all", "with"})


# -- the syntax tree -----------------------------------------------------------


@dataclass(frozen=True)
class Position:
    """Where a token starts: ``source:line:column`` (1-based)."""

    source: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Var:
    """A variable ``{name}`` inside a label or a class pattern."""

    name: str


@dataclass(frozen=True)
class _Wildcard:
    """``*`` inside a class pattern: any (possibly empty) text."""


WILDCARD = _Wildcard()
# A template is a tuple of pieces: literal text (str), Var or WILDCARD.
Template = tuple


def render(template: Template) -> str:
    """The source spelling of a template, e.g. ``B-{T}`` or ``*-NP``."""
    return "".join(p if isinstance(p, str) else "*" if p is WILDCARD else "{" + p.name + "}" for p in template)


def _variables(template: Template) -> set[str]:
    return {p.name for p in template if isinstance(p, Var)}


@dataclass(frozen=True)
class Node:
    """Base class of expression nodes."""

    pos: Position


@dataclass(frozen=True)
class Name(Node):
    """A bare word: the rule of that name if the grammar has one, else a label
    (a template when it contains variables)."""

    template: Template


@dataclass(frozen=True)
class QuotedLabel(Node):
    """A quoted label, always taken literally."""

    text: str


@dataclass(frozen=True)
class AnyLabel(Node):
    """``.``: any one label."""


@dataclass(frozen=True)
class LabelClass(Node):
    """``[p1 p2 ...]`` (or ``[^ ...]``): one label matching (or matching none of) the patterns."""

    patterns: tuple
    negated: bool
    text: str


@dataclass(frozen=True)
class QualifiedRef(Node):
    """``namespace.rule``: a rule of an imported grammar."""

    namespace: str
    name: str


@dataclass(frozen=True)
class Concat(Node):
    """``x y ...``."""

    parts: tuple


@dataclass(frozen=True)
class Union(Node):
    """``x | y | ...``."""

    parts: tuple


@dataclass(frozen=True)
class Intersection(Node):
    """``x & y``."""

    left: Node
    right: Node


@dataclass(frozen=True)
class Difference(Node):
    """``x - y``."""

    left: Node
    right: Node


@dataclass(frozen=True)
class Complement(Node):
    """``!x``: every label sequence not in x."""

    operand: Node


@dataclass(frozen=True)
class Repeat(Node):
    """``x*``, ``x+``, ``x?``, ``x{m,n}``: between ``low`` and ``high`` (None = unbounded) copies."""

    operand: Node
    low: int
    high: int | None


@dataclass(frozen=True)
class Quantifier(Node):
    """``any V: body`` (union) or ``all V: body`` (intersection) over the values of V."""

    kind: str
    variable: str
    body: Node


@dataclass(frozen=True)
class Binding(Node):
    """``with V = value: body``."""

    variable: str
    value: Template
    body: Node


@dataclass(frozen=True)
class Rule:
    """``name = body ;``."""

    name: str
    body: Node
    pos: Position


@dataclass(frozen=True)
class Import:
    """``import "path" as alias ;``, with the imported grammar parsed."""

    alias: str
    grammar: Grammar
    pos: Position


@dataclass(frozen=True)
class Grammar:
    """A parsed grammar: its rules and the grammars it imports (by alias)."""

    source: str
    rules: tuple
    imports: tuple

    @cached_property
    def rule_map(self) -> dict[str, Rule]:
        return {rule.name: rule for rule in self.rules}

    @cached_property
    def import_map(self) -> dict[str, Grammar]:
        return {item.alias: item.grammar for item in self.imports}

    @property
    def rule_names(self) -> tuple[str, ...]:
        return tuple(rule.name for rule in self.rules)


def _children(node: Node) -> Iterator[Node]:
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, tuple):
            yield from (item for item in value if isinstance(item, Node))


# -- lexer ---------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PIECE = re.compile(r"[A-Za-z0-9_$]+|" + _VARIABLE.pattern)
_PUNCTUATION = "=;|&-!*+?(){},.:"
_CLASS_STOP = set(' \t\r\n[]"#')


@dataclass(frozen=True)
class _Token:
    kind: str  # word, string, qname, class, keyword, punct, end
    value: object
    pos: Position

    def describe(self) -> str:
        if self.kind == "end":
            return "the end of the file"
        if self.kind == "word":
            return f"'{render(self.value)}'"
        if self.kind == "string":
            return f'"{self.value}"'
        if self.kind == "qname":
            return f"'{self.value[0]}.{self.value[1]}'"
        if self.kind == "class":
            return f"the label class {self.value[2]}"
        return f"'{self.value}'"


def _is_identifier(template: Template) -> bool:
    return len(template) == 1 and isinstance(template[0], str) and _IDENTIFIER.fullmatch(template[0]) is not None


class _Lexer:
    """Splits grammar text into tokens that carry their positions."""

    def __init__(self, text: str, source: str):
        self.text = text
        self.source = source
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, offset: int) -> Position:
        line = bisect.bisect_right(self.line_starts, offset)
        return Position(self.source, line, offset - self.line_starts[line - 1] + 1)

    def error(self, offset: int, message: str) -> GrammarError:
        return GrammarError(f"{self.position(offset)}: {message}")

    def skip_space(self, i: int) -> int:
        text = self.text
        while i < len(text):
            if text[i].isspace():
                i += 1
            elif text[i] == "#":
                end = text.find("\n", i)
                i = len(text) if end < 0 else end
            else:
                break
        return i

    def tokens(self) -> list[_Token]:
        text, out = self.text, []
        i = self.skip_space(0)
        while i < len(text):
            c = text[i]
            if c == '"':
                value, end = self.string(i)
                out.append(_Token("string", value, self.position(i)))
            elif c == "[":
                value, end = self.label_class(i)
                out.append(_Token("class", value, self.position(i)))
            elif _PIECE.match(text, i):
                token, end = self.word(i)
                out.append(token)
            elif c in _PUNCTUATION:
                self.check_glob_outside_class(i)
                out.append(_Token("punct", c, self.position(i)))
                end = i + 1
            else:
                raise self.error(i, f"unexpected character {c!r}")
            i = self.skip_space(end)
        out.append(_Token("end", None, self.position(len(text))))
        return out

    def check_glob_outside_class(self, i: int) -> None:
        text = self.text
        after_word = i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$}")
        token_start = i == 0 or text[i - 1].isspace() or text[i - 1] in "(|&=:!"
        glued_star = (text[i] == "-" and text.startswith("*", i + 1) and after_word) or (
            text[i] == "*" and token_start and text.startswith("-", i + 1) and _PIECE.match(text, i + 2) is not None
        )
        if glued_star:
            start = i
            while start > 0 and not text[start - 1].isspace() and text[start - 1] not in "()|&;=":
                start -= 1
            end = i
            while end < len(text) and not text[end].isspace() and text[end] not in "()|&;":
                end += 1
            raise self.error(
                start,
                f"'{text[start:end]}' looks like a label pattern; patterns are "
                f"written in brackets, e.g. [{text[start:end]}]",
            )

    def string(self, i: int) -> tuple[str, int]:
        text, chars, j = self.text, [], i + 1
        while j < len(text) and text[j] not in '"\n':
            if text[j] == "\\" and j + 1 < len(text) and text[j + 1] != "\n":
                j += 1
            chars.append(text[j])
            j += 1
        if j >= len(text) or text[j] != '"':
            raise self.error(i, 'unterminated string (a quoted label ends with " on the same line)')
        value = "".join(chars)
        if not value or any(ch.isspace() for ch in value):
            raise self.error(
                i, f"invalid quoted label {text[i : j + 1]}: labels are non-empty and contain no whitespace"
            )
        return value, j + 1

    def word(self, i: int) -> tuple[_Token, int]:
        text, pieces, start = self.text, [], i
        while True:
            m = _PIECE.match(text, i)
            if m:
                pieces.append(Var(m.group(1)) if m.group(1) else m.group(0))
                i = m.end()
            elif pieces and text.startswith("-", i) and _PIECE.match(text, i + 1):
                pieces.append("-")
                i += 1
            else:
                break
        template = _merge(pieces)
        pos = self.position(start)
        if _is_identifier(template) and text.startswith(".", i) and _IDENTIFIER.match(text, i + 1):
            name = _IDENTIFIER.match(text, i + 1)
            return _Token("qname", (template[0], name.group(0)), pos), name.end()
        if _is_identifier(template) and template[0] in KEYWORDS:
            return _Token("keyword", template[0], pos), i
        return _Token("word", template, pos), i

    def label_class(self, i: int) -> tuple[tuple, int]:
        text, start, patterns = self.text, i, []
        i += 1
        negated = text.startswith("^", i)
        if negated:
            i += 1
        while True:
            i = self.skip_space(i)
            if i >= len(text):
                raise self.error(start, "unterminated label class: missing ']'")
            if text[i] == "]":
                break
            if text[i] == "[":
                raise self.error(i, "'[' inside a label class (classes do not nest)")
            if text[i] == '"':
                value, i = self.string(i)
                patterns.append((value,))
                continue
            end = i
            while end < len(text) and text[end] not in _CLASS_STOP:
                end += 1
            patterns.append(self.glob(i, end))
            i = end
        source_text = text[start : i + 1]
        if not patterns:
            raise self.error(start, f"empty label class {source_text}")
        return (tuple(patterns), negated, source_text), i + 1

    def glob(self, i: int, end: int) -> Template:
        pieces, text = [], self.text
        while i < end:
            if text[i] == "*":
                pieces.append(WILDCARD)
                i += 1
            elif text[i] == "{":
                m = _VARIABLE.match(text, i, end)
                if not m:
                    raise self.error(i, "'{' in a label pattern starts a variable such as {T}")
                pieces.append(Var(m.group(1)))
                i = m.end()
            elif text[i] == "}":
                raise self.error(i, "unmatched '}' in a label pattern (quote labels that contain braces)")
            else:
                pieces.append(text[i])
                i += 1
        return _merge(pieces)


def _merge(pieces: list) -> Template:
    """Join adjacent literal pieces."""
    out: list = []
    for piece in pieces:
        if isinstance(piece, str) and out and isinstance(out[-1], str):
            out[-1] += piece
        else:
            out.append(piece)
    return tuple(out)


# -- parser --------------------------------------------------------------------

_ATOM_START = {"word", "string", "qname", "class"}


class _Parser:
    """Recursive descent over the tokens; imports are loaded as they are parsed."""

    def __init__(self, text: str, source: str, base_dir: Path, loading: tuple[Path, ...]):
        self.lexer = _Lexer(text, source)
        self.tokens = self.lexer.tokens()
        self.index = 0
        self.source = source
        self.base_dir = base_dir
        self.loading = loading

    # token helpers
    def peek(self) -> _Token:
        return self.tokens[self.index]

    def advance(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def at(self, kind: str, value=None) -> bool:
        token = self.peek()
        return token.kind == kind and (value is None or token.value == value)

    def error(self, token: _Token, message: str) -> GrammarError:
        return GrammarError(f"{token.pos}: {message}")

    def expect_punct(self, value: str, context: str) -> _Token:
        if not self.at("punct", value):
            raise self.error(self.peek(), f"expected '{value}' {context}, found {self.peek().describe()}")
        return self.advance()

    def expect_identifier(self, what: str) -> _Token:
        token = self.peek()
        if token.kind != "word" or not _is_identifier(token.value):
            hint = " (a keyword)" if token.kind == "keyword" else ""
            raise self.error(token, f"expected {what} (letters, digits and _), found {token.describe()}{hint}")
        return self.advance()

    # statements
    def grammar(self) -> Grammar:
        rules, imports = {}, {}
        while not self.at("end"):
            if self.at("keyword", "import"):
                item = self.import_statement()
                if item.alias in imports:
                    raise GrammarError(
                        f"{item.pos}: a grammar is already imported as '{item.alias}' "
                        f"(at {imports[item.alias].pos}); use 'as' to pick another name"
                    )
                imports[item.alias] = item
            else:
                rule = self.rule()
                if rule.name in rules:
                    raise GrammarError(f"{rule.pos}: rule '{rule.name}' is already defined at {rules[rule.name].pos}")
                rules[rule.name] = rule
        grammar = Grammar(self.source, tuple(rules.values()), tuple(imports.values()))
        for rule in grammar.rules:
            _check_qualified_refs(grammar, rule.body)
        return grammar

    def import_statement(self) -> Import:
        keyword = self.advance()
        if not self.at("string"):
            raise self.error(
                self.peek(), f"expected a quoted grammar name or path after 'import', found {self.peek().describe()}"
            )
        spec = self.advance().value
        path = _resolve_import(spec, self.base_dir, keyword.pos)
        alias = Path(spec).name.removesuffix(EXTENSION)
        if self.at("keyword", "as"):
            self.advance()
            alias = self.expect_identifier("a namespace name after 'as'").value[0]
        elif not _IDENTIFIER.fullmatch(alias):
            raise self.error(keyword, f"'{alias}' is not a valid namespace name; add 'as <name>'")
        self.expect_punct(";", "after the import")
        if path in self.loading:
            cycle = " -> ".join(str(p) for p in self.loading[self.loading.index(path) :] + (path,))
            raise GrammarError(f"{keyword.pos}: import cycle: {cycle}")
        return Import(alias, _load(path, self.loading), keyword.pos)

    def rule(self) -> Rule:
        name = self.expect_identifier("a rule name or 'import'")
        self.expect_punct("=", f"after the rule name '{name.value[0]}'")
        body = self.expression()
        self.expect_punct(";", f"at the end of rule '{name.value[0]}'")
        return Rule(name.value[0], body, name.pos)

    # expressions, loosest first
    def expression(self) -> Node:
        first = self.peek()
        parts = [self.boolean()]
        while self.at("punct", "|"):
            self.advance()
            parts.append(self.boolean())
        return parts[0] if len(parts) == 1 else Union(first.pos, tuple(parts))

    def boolean(self) -> Node:
        left = self.concatenation()
        while self.at("punct", "&") or self.at("punct", "-"):
            operator = self.advance()
            right = self.concatenation()
            left = (Intersection if operator.value == "&" else Difference)(operator.pos, left, right)
        return left

    def concatenation(self) -> Node:
        first = self.peek()
        parts = [self.unary()]
        while self.starts_operand():
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else Concat(first.pos, tuple(parts))

    def starts_operand(self) -> bool:
        token = self.peek()
        return (
            token.kind in _ATOM_START
            or (token.kind == "punct" and token.value in ".(!")
            or (token.kind == "keyword" and token.value in ("any", "all", "with"))
        )

    def unary(self) -> Node:
        token = self.peek()
        if token.kind == "punct" and token.value == "!":
            self.advance()
            return Complement(token.pos, self.unary())
        if token.kind == "keyword" and token.value in ("any", "all", "with"):
            return self.binder()
        return self.postfix()

    def binder(self) -> Node:
        keyword = self.advance()
        variable = self.expect_identifier(f"a variable name after '{keyword.value}'").value[0]
        if keyword.value == "with":
            self.expect_punct("=", f"after 'with {variable}'")
            value = self.peek()
            if value.kind not in ("word", "string"):
                raise self.error(value, f"expected the value of {variable}, found {value.describe()}")
            self.advance()
            self.expect_punct(":", f"after 'with {variable} = ...'")
            template = value.value if value.kind == "word" else (value.value,)
            return Binding(keyword.pos, variable, template, self.expression())
        self.expect_punct(":", f"after '{keyword.value} {variable}'")
        return Quantifier(keyword.pos, keyword.value, variable, self.expression())

    def postfix(self) -> Node:
        node = self.atom()
        while self.peek().kind == "punct" and self.peek().value in "*+?{":
            token = self.advance()
            if token.value == "*":
                node = Repeat(token.pos, node, 0, None)
            elif token.value == "+":
                node = Repeat(token.pos, node, 1, None)
            elif token.value == "?":
                node = Repeat(token.pos, node, 0, 1)
            else:
                low, high = self.bounds(token)
                node = Repeat(token.pos, node, low, high)
        return node

    def bounds(self, brace: _Token) -> tuple[int, int | None]:
        low = self.number(optional=True)
        if self.at("punct", ","):
            self.advance()
            high = self.number(optional=True)
            low = 0 if low is None else low
        elif low is None:
            raise self.error(self.peek(), f"expected a number in '{{m,n}}', found {self.peek().describe()}")
        else:
            high = low
        self.expect_punct("}", "to close the repetition")
        if high is not None and high < low:
            raise self.error(brace, f"repetition {{{low},{high}}} has its upper bound below its lower bound")
        if max(low, high or 0) > MAX_REPEAT:
            raise self.error(brace, f"repetition bounds are limited to {MAX_REPEAT}")
        return low, high

    def number(self, optional: bool) -> int | None:
        token = self.peek()
        if (
            token.kind == "word"
            and len(token.value) == 1
            and isinstance(token.value[0], str)
            and token.value[0].isdigit()
        ):
            self.advance()
            return int(token.value[0])
        if optional:
            return None
        raise self.error(token, f"expected a number, found {token.describe()}")

    def atom(self) -> Node:
        token = self.advance()
        if token.kind == "word":
            return Name(token.pos, token.value)
        if token.kind == "string":
            return QuotedLabel(token.pos, token.value)
        if token.kind == "qname":
            return QualifiedRef(token.pos, *token.value)
        if token.kind == "class":
            patterns, negated, text = token.value
            return LabelClass(token.pos, patterns, negated, text)
        if token.kind == "punct" and token.value == ".":
            return AnyLabel(token.pos)
        if token.kind == "punct" and token.value == "(":
            node = self.expression()
            self.expect_punct(")", "to close the parenthesis")
            return node
        if token.kind == "keyword":
            raise self.error(token, f"'{token.value}' is a keyword; quote it (\"{token.value}\") to use it as a label")
        raise self.error(token, f"expected a label, a label class, '.', a rule or '(', found {token.describe()}")


def _check_qualified_refs(grammar: Grammar, node: Node) -> None:
    if isinstance(node, QualifiedRef):
        target = grammar.import_map.get(node.namespace)
        if target is None:
            known = ", ".join(grammar.import_map) or "none"
            raise GrammarError(
                f"{node.pos}: '{node.namespace}.{node.name}' names no imported grammar "
                f"'{node.namespace}' (imports: {known}); write '{node.namespace} . {node.name}' "
                "with spaces for a label followed by any label"
            )
        if node.name not in target.rule_map:
            raise GrammarError(
                f"{node.pos}: grammar '{node.namespace}' ({target.source}) has no rule "
                f"'{node.name}' (rules: {', '.join(target.rule_names)})"
            )
    for child in _children(node):
        _check_qualified_refs(grammar, child)


def shipped_grammars() -> tuple[str, ...]:
    """Names of the grammars shipped with fstcrf (usable as ``import "name"``)."""
    return tuple(sorted(p.stem for p in SHIPPED_DIR.glob(f"*{EXTENSION}")))


def _resolve_import(spec: str, base_dir: Path, pos: Position) -> Path:
    """A file relative to ``base_dir`` (with or without .fgr), else a shipped grammar."""
    for candidate in (base_dir / spec, base_dir / (spec + EXTENSION)):
        if candidate.is_file():
            return candidate.resolve()
    shipped = _shipped_path(spec)
    if shipped is not None:
        return shipped
    raise GrammarError(
        f"{pos}: cannot find grammar '{spec}' in {base_dir} nor among the shipped "
        f"grammars ({', '.join(shipped_grammars())})"
    )


def _shipped_path(name: str) -> Path | None:
    stem = name.removesuffix(EXTENSION)
    path = SHIPPED_DIR / (stem + EXTENSION)
    return path.resolve() if "/" not in stem and "\\" not in stem and path.is_file() else None


def _load(path: Path, loading: tuple[Path, ...]) -> Grammar:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise GrammarError(f"cannot read grammar {path}: {error}") from None
    return _Parser(text, str(path), path.parent, loading + (path,)).grammar()


def parse_grammar(text: str, source: str = "<string>") -> Grammar:
    """Parse grammar text; ``source`` names it in messages and anchors relative imports
    (the current directory when it is not a file path, e.g. ``<string>``)."""
    if not isinstance(text, str):
        raise GrammarError(f"grammar text must be a string, got {type(text).__name__}")
    is_file = not source.startswith("<")
    base_dir = Path(source).resolve().parent if is_file else Path.cwd()
    loading = (Path(source).resolve(),) if is_file else ()
    return _Parser(text, source, base_dir, loading).grammar()


def load_grammar(path_or_name) -> Grammar:
    """Load a grammar file, or a shipped grammar by name (``"iob2"``, ``"bioes"``, ...)."""
    path = Path(path_or_name)
    if path.is_file():
        return _load(path.resolve(), ())
    shipped = _shipped_path(str(path_or_name))
    if shipped is None:
        raise GrammarError(
            f"no grammar file {path_or_name!r} and no shipped grammar of that name "
            f"(shipped: {', '.join(shipped_grammars())})"
        )
    return _load(shipped, ())


# -- compiler ------------------------------------------------------------------


def _known(labels: Sequence[str]) -> str:
    shown = ", ".join(labels[:60])
    return shown + (f", ... ({len(labels)} labels)" if len(labels) > 60 else "")


def _bindings(pieces: Template, label: str, start: int = 0, bound: dict | None = None) -> Iterator[dict]:
    """Every assignment of the template's variables (non-empty values) under which it
    spells ``label``; WILDCARD matches any text."""
    bound = {} if bound is None else bound
    if not pieces:
        if start == len(label):
            yield dict(bound)
        return
    head, rest = pieces[0], pieces[1:]
    if isinstance(head, str):
        if label.startswith(head, start):
            yield from _bindings(rest, label, start + len(head), bound)
    elif head is WILDCARD:
        for end in range(start, len(label) + 1):
            yield from _bindings(rest, label, end, bound)
    elif head.name in bound:
        if label.startswith(bound[head.name], start):
            yield from _bindings(rest, label, start + len(bound[head.name]), bound)
    else:
        for end in range(start + 1, len(label) + 1):
            bound[head.name] = label[start:end]
            yield from _bindings(rest, label, end, bound)
        del bound[head.name]


def _optimized(fst: pynini.Fst, pos: Position) -> pynini.Fst:
    """A fresh acceptor made epsilon-free, deterministic and minimal; BudgetError
    (naming the grammar position ``pos``) if it would pass max_states."""
    return bounded_determinize(pynini.rmepsilon(fst), _part(pos)).minimize()


def _part(pos: Position) -> str:
    """How budget errors name the part of a grammar being compiled."""
    return f"{pos}: the acceptor of this part of the grammar"


def _combined(left: pynini.Fst, right: pynini.Fst, pos: Position, difference: bool = False) -> pynini.Fst:
    """``left & right`` (or ``left - right``) of minimal deterministic acceptors, minimal."""
    return _optimized(bounded_intersect(left, right, _part(pos), difference), pos)


class _Compiler:
    """Compiles rules against one label set.  ``env`` maps a variable to
    (value, bound by a quantifier); compile-time parameters are looked up last."""

    def __init__(self, labels: Sequence[str], params: Mapping[str, str]):
        self.labels = tuple(labels)
        self.keys = {label: key for key, label in enumerate(self.labels, start=1)}
        self.params = dict(params)
        self.used_params: set[str] = set()
        self.sigma = self.label_set(self.keys.values())
        self.sigma_star = pynini.closure(self.sigma).optimize()
        self.epsilon = pynini.Fst()
        self.epsilon.set_start(self.epsilon.add_state())
        self.epsilon.set_final(self.epsilon.start())
        self.memo: dict = {}
        self.active: list[tuple[int, str]] = []
        self.template_hits: dict[Node, bool] = {}

    @staticmethod
    def label_set(keys) -> pynini.Fst:
        fst = pynini.Fst()
        start, end = fst.add_state(), fst.add_state()
        fst.set_start(start)
        fst.set_final(end)
        for key in sorted(keys):
            fst.add_arc(start, pynini.Arc(key, key, 0, end))
        return fst

    # variables
    def lookup(self, name: str, env: dict, pos: Position) -> tuple[str, bool]:
        if name in env:
            return env[name]
        if name in self.params:
            self.used_params.add(name)
            return self.params[name], False
        raise GrammarError(
            f"{pos}: variable {{{name}}} has no value: bind it with 'any {name}:', "
            f"'all {name}:' or 'with {name} = ...:', or pass params={{'{name}': ...}}"
        )

    def fill(self, template: Template, env: dict, pos: Position) -> tuple[Template, bool]:
        """The template with its variables replaced, and whether a quantifier bound any."""
        pieces, quantified = [], False
        for piece in template:
            if isinstance(piece, Var):
                value, by_quantifier = self.lookup(piece.name, env, pos)
                pieces.append(value)
                quantified |= by_quantifier
            else:
                pieces.append(piece)
        return _merge(pieces), quantified

    def outer_value(self, piece: Var, env: dict):
        """The value of a variable bound outside a quantifier, or the variable itself (free)."""
        if piece.name in env:
            return env[piece.name][0]
        return self.params.get(piece.name, piece)

    def note_template(self, node: Node, quantified: bool, hit: bool) -> None:
        if quantified:
            self.template_hits[node] = self.template_hits.get(node, False) or hit

    # rules
    def rule(self, grammar: Grammar, name: str, pos: Position, env: dict) -> pynini.Fst:
        key = (id(grammar), name)
        if key in self.active:
            names = [n for _, n in self.active[self.active.index(key) :]]
            cycle = " -> ".join(names + [name])
            raise GrammarError(
                f"{pos}: rule '{name}' refers to itself ({cycle}); grammars are regular: use '*' or '+' for repetition"
            )
        memo_key = (key, frozenset(env.items()))
        if memo_key not in self.memo:
            self.active.append(key)
            try:
                self.memo[memo_key] = self.expr(grammar, grammar.rule_map[name].body, env)
            finally:
                self.active.pop()
        return self.memo[memo_key]

    def expr(self, grammar: Grammar, node: Node, env: dict) -> pynini.Fst:
        if isinstance(node, Name):
            return self.name(grammar, node, env)
        if isinstance(node, QuotedLabel):
            return self.label_set([self.known_key(node.text, node.pos, f'"{node.text}"')])
        if isinstance(node, AnyLabel):
            return self.sigma
        if isinstance(node, LabelClass):
            return self.label_class(node, env)
        if isinstance(node, QualifiedRef):
            return self.rule(grammar.import_map[node.namespace], node.name, node.pos, env)
        if isinstance(node, Concat):
            return _optimized(reduce(pynini.concat, (self.expr(grammar, p, env) for p in node.parts)), node.pos)
        if isinstance(node, Union):
            return _optimized(pynini.union(*(self.expr(grammar, p, env) for p in node.parts)), node.pos)
        if isinstance(node, Intersection):
            return _combined(self.expr(grammar, node.left, env), self.expr(grammar, node.right, env), node.pos)
        if isinstance(node, Difference):
            return _combined(
                self.expr(grammar, node.left, env), self.expr(grammar, node.right, env), node.pos, difference=True
            )
        if isinstance(node, Complement):
            return _combined(self.sigma_star, self.expr(grammar, node.operand, env), node.pos, difference=True)
        if isinstance(node, Repeat):
            operand = self.expr(grammar, node.operand, env)
            if node.high == 0:  # pynini.closure(x, 0, 0) would be x*
                return self.epsilon
            # the closure holds max(low, high) copies of the operand before it is determinised
            budget.check_states(operand.num_states() * max(node.low, node.high or 1), _part(node.pos))
            if node.high is None:
                return _optimized(pynini.closure(operand, node.low), node.pos)
            return _optimized(pynini.closure(operand, node.low, node.high), node.pos)
        if isinstance(node, Quantifier):
            return self.quantifier(grammar, node, env)
        if isinstance(node, Binding):
            value, quantified = self.fill(node.value, env, node.pos)
            return self.expr(grammar, node.body, {**env, node.variable: ("".join(value), quantified)})
        raise TypeError(f"not a grammar node: {node!r}")

    def known_key(self, label: str, pos: Position, spelled: str) -> int:
        if label not in self.keys:
            raise UnknownLabelError(f"{pos}: unknown label {spelled}; the model's labels are {_known(self.labels)}")
        return self.keys[label]

    def name(self, grammar: Grammar, node: Name, env: dict) -> pynini.Fst:
        if _is_identifier(node.template) and node.template[0] in grammar.rule_map:
            word = node.template[0]
            if word in self.keys:
                raise GrammarError(
                    f"{node.pos}: '{word}' is both a rule of {grammar.source} and a label; "
                    f'write "{word}" for the label or rename the rule'
                )
            return self.rule(grammar, word, node.pos, env)
        pieces, quantified = self.fill(node.template, env, node.pos)
        label = "".join(pieces)
        self.note_template(node, quantified, label in self.keys)
        if label not in self.keys and quantified:
            return self.label_set([])
        spelled = f"'{label}'" + (f" (from {render(node.template)})" if _variables(node.template) else "")
        rule_hint = "" if _variables(node.template) else " (and no rule has that name)"
        return self.label_set([self.known_key(label, node.pos, spelled + rule_hint)])

    def label_class(self, node: LabelClass, env: dict) -> pynini.Fst:
        filled, quantified = [], False
        for pattern in node.patterns:
            pieces, by_quantifier = self.fill(pattern, env, node.pos)
            filled.append(pieces)
            quantified |= by_quantifier
        matching = {label for label in self.labels if any(next(_bindings(p, label), None) is not None for p in filled)}
        keys = [self.keys[label] for label in self.labels if (label in matching) != node.negated]
        self.note_template(node, quantified, bool(keys))
        if not keys and not quantified:
            raise UnknownLabelError(
                f"{node.pos}: the label class {node.text} matches no label; "
                f"the model's labels are {_known(self.labels)}"
            )
        return self.label_set(keys)

    def quantifier(self, grammar: Grammar, node: Quantifier, env: dict) -> pynini.Fst:
        values = self.domain(grammar, node, env)
        branches = [self.expr(grammar, node.body, {**env, node.variable: (value, True)}) for value in values]
        if node.kind == "any":
            return _optimized(pynini.union(*branches), node.pos)
        return reduce(lambda left, right: _combined(left, right, node.pos), branches)

    def domain(self, grammar: Grammar, node: Quantifier, env: dict) -> list[str]:
        """Values of the quantified variable: every non-empty text that makes some
        label pattern mentioning it (in the body or the rules it uses) match a label."""
        variable, values, patterns = node.variable, set(), []
        for template, inner in _occurrences(grammar, node.body, variable, set(), frozenset()):
            patterns.append(template)
            pieces = _merge(
                [
                    self.outer_value(piece, env)
                    if isinstance(piece, Var) and piece.name != variable and piece.name not in inner
                    else piece
                    for piece in template
                ]
            )
            for label in self.labels:
                values.update(b[variable] for b in _bindings(pieces, label))
        if not patterns:
            raise GrammarError(
                f"{node.pos}: variable {{{variable}}} of '{node.kind} {variable}:' appears in "
                "no label or label class of its body"
            )
        if not values:
            shown = ", ".join(render(t) for t in patterns)
            raise UnknownLabelError(
                f"{node.pos}: '{node.kind} {variable}:' ranges over nothing: no label "
                f"matches {shown}; the model's labels are {_known(self.labels)}"
            )
        return sorted(values)

    def check_templates(self) -> None:
        for node, hit in self.template_hits.items():
            if not hit:
                what = node.text if isinstance(node, LabelClass) else render(node.template)
                raise UnknownLabelError(
                    f"{node.pos}: {what} matches no label for any value of its variables; "
                    f"the model's labels are {_known(self.labels)}"
                )


def _occurrences(
    grammar: Grammar, node: Node, variable: str, seen: set, inner: frozenset
) -> Iterator[tuple[Template, frozenset]]:
    """Label templates mentioning ``{variable}`` reachable from ``node`` through rule
    references, with the variables bound in between (which stay free)."""
    if isinstance(node, Name):
        if Var(variable) in node.template:
            yield node.template, inner
        elif _is_identifier(node.template) and node.template[0] in grammar.rule_map:
            yield from _rule_occurrences(grammar, node.template[0], variable, seen, inner)
        return
    if isinstance(node, LabelClass):
        yield from ((p, inner) for p in node.patterns if Var(variable) in p)
        return
    if isinstance(node, QualifiedRef):
        yield from _rule_occurrences(grammar.import_map[node.namespace], node.name, variable, seen, inner)
        return
    if isinstance(node, (Quantifier, Binding)):
        if node.variable == variable:
            return
        inner = inner | {node.variable}
    for child in _children(node):
        yield from _occurrences(grammar, child, variable, seen, inner)


def _rule_occurrences(
    grammar: Grammar, name: str, variable: str, seen: set, inner: frozenset
) -> Iterator[tuple[Template, frozenset]]:
    key = (id(grammar), name)
    if key not in seen:
        seen.add(key)
        yield from _occurrences(grammar, grammar.rule_map[name].body, variable, seen, inner)


def _check_params(params) -> dict[str, str]:
    params = {} if params is None else params
    if not isinstance(params, Mapping):
        raise GrammarError(f"params must be a mapping from variable names to values, got {type(params).__name__}")
    for name, value in params.items():
        if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
            raise GrammarError(f"parameter name {name!r} is not an identifier")
        if not isinstance(value, str) or not value or any(c.isspace() for c in value):
            raise GrammarError(f"parameter {name} = {value!r}: values are non-empty strings without whitespace")
    return dict(params)


def compile_grammar(
    grammar: Grammar, labels: Sequence[str], rule: str = "start", params: Mapping[str, str] | None = None
) -> pynini.Fst:
    """The language of ``rule`` as a minimal deterministic acceptor over label keys
    (label i = key i + 1), with ``symbol_table(labels)`` attached.

    ``params`` gives values to free variables such as ``{X}``.  Raises GrammarError
    (UnknownLabelError for labels or classes the model lacks) and when the rule
    accepts no non-empty label sequence."""
    if not isinstance(grammar, Grammar):
        raise GrammarError(f"expected a Grammar (from parse_grammar or load_grammar), got {type(grammar).__name__}")
    params = _check_params(params)
    labels = check_labels(labels)
    table = symbol_table(labels)
    if rule not in grammar.rule_map:
        rules = ", ".join(grammar.rule_names) or "none"
        raise GrammarError(f"{grammar.source}: no rule named '{rule}' (rules: {rules})")
    compiler = _Compiler(labels, params)
    fst = compiler.rule(grammar, rule, grammar.rule_map[rule].pos, {})
    compiler.check_templates()
    unused = sorted(set(params) - compiler.used_params)
    if unused:
        raise GrammarError(f"{grammar.source}: rule '{rule}' does not use the parameter(s) {', '.join(unused)}")
    non_empty = pynini.intersect(fst, pynini.closure(compiler.sigma, 1))
    if non_empty.num_states() == 0:
        raise GrammarError(
            f"{grammar.rule_map[rule].pos}: the grammar accepts nothing: rule '{rule}' "
            f"allows no non-empty sequence of the labels {_known(labels)}"
        )
    fst = fst.copy()
    fst.set_input_symbols(table)
    fst.set_output_symbols(table)
    return fst


def accepts(fst: pynini.Fst, labels: Sequence[str]) -> bool:
    """Whether the acceptor accepts the label sequence (looked up in its input symbols)."""
    if isinstance(labels, str):
        raise LabelError(f"expected a sequence of labels, got the string {labels!r}")
    table = fst.input_symbols()
    if table is None:
        raise LabelError("the acceptor has no symbol table to look labels up in")
    chain = pynini.Fst(arc_type=fst.arc_type())
    state = chain.add_state()
    chain.set_start(state)
    for label in labels:
        key = table.find(label) if isinstance(label, str) else -1
        if key <= 0:
            raise LabelError(
                f"unknown label {label!r}; the acceptor knows "
                f"{_known([table.find(k) for k in range(1, table.num_symbols())])}"
            )
        following = chain.add_state()
        chain.add_arc(state, pynini.Arc(key, key, pynini.Weight.one(chain.weight_type()), following))
        state = following
    chain.set_final(state)
    return pynini.intersect(chain, pynini.arcsort(fst, "ilabel")).num_states() > 0


# -- topologies and inference under a grammar ------------------------------------------

_CONSTRAINED: weakref.WeakKeyDictionary[Topology, dict] = weakref.WeakKeyDictionary()


def constrain(topology: Topology, constraint, rule: str = "start", params: Mapping[str, str] | None = None) -> Topology:
    """The topology restricted to a grammar's language (or any acceptor's, via
    :func:`fstcrf.engine.topology.intersect`).  Grammar results are cached per topology."""
    if isinstance(constraint, pynini.Fst):
        return intersect(topology, constraint)
    if not isinstance(constraint, Grammar):
        raise GrammarError(f"a constraint is a Grammar or a pynini.Fst, got {type(constraint).__name__}")
    key = (constraint, rule, tuple(sorted(_check_params(params).items())))
    cached = _CONSTRAINED.setdefault(topology, {})
    if key not in cached:
        acceptor = compile_grammar(constraint, topology.labels, rule, params)
        label = Path(constraint.source).name.removesuffix(EXTENSION) + ("" if rule == "start" else f".{rule}")
        cached[key] = intersect(topology, acceptor, name=f"{topology.name}&{label}")
    return cached[key]


def state_map(original: Topology, constrained: Topology) -> np.ndarray:
    """int32 [S']: the state of ``original`` that each state of ``constrained``
    (a restriction of it, e.g. from :func:`constrain`) stands for.

    ``original`` must be deterministic over labels (true of every topology built
    from an acceptor): a state's label sequence then fixes its original state."""
    if original.labels != constrained.labels:
        raise TopologyError("the constrained topology has other labels than the original")
    L, S = original.num_labels, original.num_states
    starts = np.flatnonzero(original.start)
    sources = np.concatenate([original.edge_src, np.full(len(starts), S)]).astype(np.int64)
    targets = np.concatenate([original.edge_dst, starts]).astype(np.int64)
    keys = sources * L + original.state_label[targets]
    if len(np.unique(keys)) != len(keys):
        raise TopologyError(
            f"topology {original.name!r} has two states with the same label that "
            "start a path or follow one state; inference under a grammar needs label "
            "sequences to determine state sequences"
        )
    successor = np.full((S + 1) * L, -1, dtype=np.int64)
    successor[keys] = targets
    mapping = np.full(constrained.num_states, -1, dtype=np.int64)
    first = np.flatnonzero(constrained.start)
    mapping[first] = successor[S * L + constrained.state_label[first]]
    src, dst = constrained.edge_src, constrained.edge_dst
    while True:
        frontier = (mapping[src] >= 0) & (mapping[dst] < 0)
        if not np.any(frontier):
            break
        mapping[dst[frontier]] = successor[mapping[src[frontier]] * L + constrained.state_label[dst[frontier]]]
    if np.any(mapping < 0):
        raise TopologyError("the constrained topology is not a restriction of the original one")
    return mapping.astype(np.int32)


@dataclass
class Restriction:
    """Potentials under a grammar and the way back to the original states."""

    potentials: Potentials  # over the constrained topology (S' states, E' edges)
    original: Topology  # the topology restricted (S states, E edges)
    state_map: np.ndarray  # int32 [S']: original state of each constrained state
    edge_map: np.ndarray  # int64 [E']: original edge of each constrained edge

    def original_marginals(self, marginals: np.ndarray) -> np.ndarray:
        """float [N, S]: constrained-state marginals [N, S'] summed per original state."""
        order = np.argsort(self.state_map, kind="stable")
        states, starts = np.unique(self.state_map[order], return_index=True)
        out = np.zeros((len(marginals), self.original.num_states))
        out[:, states] = np.add.reduceat(marginals[:, order], starts, axis=1)
        return out

    def original_edge_counts(self, counts: np.ndarray) -> np.ndarray:
        """float [E] (or [C, E]): constrained edge counts [E'] (or [C, E'], by token
        class) summed per original edge."""
        return sum_per_original_edge(self.edge_map, self.original.num_edges, counts)


def sum_per_original_edge(edge_map: np.ndarray, num_edges: int, counts: np.ndarray) -> np.ndarray:
    """float [E] (or [C, E]): counts [E'] (or [C, E']) on the edges of a restriction
    summed per original edge, edge_map int [E'] giving each one's original edge."""
    rows = np.atleast_2d(counts)
    summed = np.stack([np.bincount(edge_map, weights=row, minlength=num_edges) for row in rows])
    return summed.reshape(np.shape(counts)[:-1] + (num_edges,))


_MAPS: weakref.WeakKeyDictionary[Topology, dict] = weakref.WeakKeyDictionary()


def restriction_maps(original: Topology, constrained: Topology) -> tuple[np.ndarray, np.ndarray]:
    """(state_map int32 [S'], edge_map int64 [E']): the original state and edge that
    each state and edge of a restriction of ``original`` stands for (cached)."""
    cached = _MAPS.setdefault(constrained, {})
    if original not in cached:
        mapping = state_map(original, constrained)
        S = original.num_states
        edge_keys = original.edge_dst.astype(np.int64) * S + original.edge_src
        wanted = mapping[constrained.edge_dst].astype(np.int64) * S + mapping[constrained.edge_src]
        cached[original] = (mapping, np.searchsorted(edge_keys, wanted))
    return cached[original]


def restrict(pot: Potentials, constraint, rule: str = "start", params: Mapping[str, str] | None = None) -> Restriction:
    """The same scores on the topology constrained by a grammar (or acceptor).

    Raises InfeasibleError when the grammar allows no sequence of some sentence's length."""
    return restrict_to(pot, constrain(pot.topology, constraint, rule, params))


def restrict_to(pot: Potentials, constrained: Topology) -> Restriction:
    """The same scores on ``constrained``, a restriction of ``pot.topology`` (e.g. from
    :func:`constrain`).  Raises InfeasibleError for lengths it cannot tag."""
    original = pot.topology
    mapping, edges = restriction_maps(original, constrained)
    start = np.where(constrained.start, pot.start[mapping], 0.0)
    final = np.where(constrained.final, pot.final[mapping], 0.0)
    restricted = Potentials(
        constrained, pot.emissions[:, mapping], pot.lengths, pot.transitions[..., edges], start, final, pot.token_class
    )
    return Restriction(restricted, original, mapping, edges)


def decode(
    pot: Potentials, constraint, rule: str = "start", params: Mapping[str, str] | None = None, threads: int = 1
) -> Viterbi:
    """The best state sequence of every sentence among those the grammar accepts.

    ``.paths`` int32 [N] are states of ``pot.topology``; ``.scores`` [B]."""
    restriction = restrict(pot, constraint, rule, params)
    best = viterbi(restriction.potentials, threads=threads)
    return Viterbi(restriction.state_map[best.paths], best.scores)
