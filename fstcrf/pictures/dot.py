"""Graphviz's dot language as the pictures write it: quoted strings that Graphviz shows
as the text they hold (quotes, backslashes, ampersands, line breaks, any Unicode; control
characters, which Graphviz rejects (NUL) or writes into SVG that no XML reader takes,
as their visible Unicode pictures), attribute lists, and node and edge statements.
Plain Python: no Graphviz is needed to write dot text."""

from __future__ import annotations

from collections.abc import Mapping

#: Graphviz's lexer refuses a quoted string of more than 16,384 bytes: a longer text is
#: cut to this many characters (at most 8,000 bytes once escaped) and its length noted.
LONGEST = 1000

#: Each control character but the line break, as the Unicode picture of it (U+2400 ...).
CONTROL_PICTURES = {code: 0x2400 + code for code in range(0x20) if code != 0x0A} | {0x7F: 0x2421}


def quoted(text: str) -> str:
    """``text`` as a dot double-quoted string that Graphviz draws as ``text``: a
    backslash is doubled (Graphviz reads ``\\n``, ``\\l``, ``\\N``, ... in labels as
    escapes), a double quote escaped, an ampersand written ``&amp;`` (Graphviz reads
    ``&lt;``, ``&#60;``, ... as HTML entities), a line break written as ``\\n`` (a centred
    line), another control character (NUL included) drawn as its Unicode picture
    (U+2400 ...), and a text longer than LONGEST characters cut, with its length."""
    if len(text) > LONGEST:
        text = f"{text[:LONGEST]}... ({len(text):,} characters)"
    lines = text.replace("\r\n", "\n").split("\n")
    escaped = (
        line.replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;").translate(CONTROL_PICTURES)
        for line in lines
    )
    return '"' + "\\n".join(escaped) + '"'


def attribute_list(attributes: Mapping[str, str]) -> str:
    """`` [name="value", ...]`` in the mapping's order (empty for no attributes)."""
    if not attributes:
        return ""
    return " [" + ", ".join(f"{name}={quoted(value)}" for name, value in attributes.items()) + "]"


def node(name: str, attributes: Mapping[str, str]) -> str:
    """The statement declaring node ``name`` (an identifier the caller chose) with its attributes."""
    return f"  {name}{attribute_list(attributes)};"


def edge(source: str, target: str, attributes: Mapping[str, str]) -> str:
    """The statement of an arc from node ``source`` to node ``target``."""
    return f"  {source} -> {target}{attribute_list(attributes)};"


def digraph(name: str, defaults: Mapping[str, Mapping[str, str]], statements: list[str]) -> str:
    """A whole directed graph: ``defaults`` maps "graph", "node" and "edge" to their
    default attributes, then the statements, one per line."""
    head = [f"digraph {quoted(name)} {{"]
    head += [f"  {kind}{attribute_list(values)};" for kind, values in defaults.items()]
    return "\n".join(head + statements + ["}"]) + "\n"
