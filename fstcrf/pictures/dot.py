"""Graphviz's dot language as the pictures write it: quoted strings that Graphviz shows
as the text they hold (quotes, backslashes, line breaks, any Unicode), attribute lists,
and node and edge statements.  Plain Python: no Graphviz is needed to write dot text."""

from __future__ import annotations

from collections.abc import Mapping


def quoted(text: str) -> str:
    """``text`` as a dot double-quoted string that Graphviz draws as ``text``: a
    backslash is doubled (Graphviz reads ``\\n``, ``\\l``, ``\\N``, ... in labels as
    escapes), a double quote escaped and a line break written as ``\\n`` (a centred
    line)."""
    lines = text.replace("\r\n", "\n").split("\n")
    return '"' + "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines) + '"'


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
