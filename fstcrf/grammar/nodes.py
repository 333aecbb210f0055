"""The syntax tree of a constraint grammar: positions, the expression nodes, rules,
imports and :class:`Grammar`, and label templates (literal text, variables and
wildcards) with their helpers."""

from __future__ import annotations

import re

from dataclasses import dataclass, fields
from functools import cached_property
from collections.abc import Iterator


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


#: ``*`` inside a class pattern (a piece of a label template).
WILDCARD = _Wildcard()
# A template is a tuple of pieces: literal text (str), Var or WILDCARD.
Template = tuple


def render(template: Template) -> str:
    """The source spelling of a template, e.g. ``B-{T}`` or ``*-NP``."""
    return "".join(p if isinstance(p, str) else "*" if p is WILDCARD else "{" + p.name + "}" for p in template)


def template_variables(template: Template) -> set[str]:
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


def children(node: Node) -> Iterator[Node]:
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, tuple):
            yield from (item for item in value if isinstance(item, Node))


IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_identifier(template: Template) -> bool:
    return len(template) == 1 and isinstance(template[0], str) and IDENTIFIER.fullmatch(template[0]) is not None


def merge_pieces(pieces: list) -> Template:
    """Join adjacent literal pieces."""
    out: list = []
    for piece in pieces:
        if isinstance(piece, str) and out and isinstance(out[-1], str):
            out[-1] += piece
        else:
            out.append(piece)
    return tuple(out)
