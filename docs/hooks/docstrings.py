"""A griffe extension for fstcrf's docstring conventions (mkdocs.yml, tests/test_reference.py).

- An attribute's ``#:`` comment lines just above its assignment are its docstring, as
  Sphinx reads them; else a comment at the end of its line (a dataclass field's
  ``# [B]``), with the comment lines that continue it.
- Shapes of nested lists such as ``[B][T]`` are text, not Markdown reference links:
  outside code spans the second bracket is escaped."""

from __future__ import annotations

import io
import re
import tokenize

import griffe

_CODE_SPAN = re.compile(r"(`+).*?\1", re.S)
_SHAPE_JOIN = re.compile(r"\](?=\[)")


def plain_shapes(text: str) -> str:
    """``text`` with every ``][`` outside code spans written ``]\\[``."""
    pieces, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        pieces += [_SHAPE_JOIN.sub(r"]\\", text[last : span.start()]), span.group(0)]
        last = span.end()
    return "".join([*pieces, _SHAPE_JOIN.sub(r"]\\", text[last:])])


def _trailing_comment(lines: list[str], last: int) -> list[str]:
    """The comment ending line ``last`` (1-based) of an assignment, and the comment-only
    lines right below it that continue it."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(lines[last - 1] + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    found = [token.string[1:].strip() for token in tokens if token.type == tokenize.COMMENT]
    if not found:
        return []
    number = last
    while number < len(lines) and lines[number].strip().startswith("#") and not lines[number].strip().startswith("#:"):
        found.append(lines[number].strip()[1:].strip())
        number += 1
    return found


class FstcrfDocstrings(griffe.Extension):
    """Comment docstrings for attributes, and shapes kept as text."""

    def on_attribute_instance(self, *, node, attr: griffe.Attribute, agent, **kwargs) -> None:
        if attr.docstring is not None or attr.lineno is None or attr.filepath is None:
            return
        lines = attr.lines_collection[attr.filepath]
        comment = []
        number = attr.lineno - 2  # the line above the assignment, 0-based
        while number >= 0 and lines[number].strip().startswith("#:"):
            comment.insert(0, lines[number].strip()[2:].strip())
            number -= 1
        if not comment:
            comment = _trailing_comment(lines, attr.endlineno or attr.lineno)
        if comment:
            attr.docstring = griffe.Docstring(plain_shapes(" ".join(comment)), lineno=attr.lineno, parent=attr)

    def on_instance(self, *, node, obj: griffe.Object, agent, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_shapes(obj.docstring.value)
