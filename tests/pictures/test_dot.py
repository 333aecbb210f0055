"""Dot text: any text written as a quoted string is drawn by Graphviz as that text
(quotes, backslashes, Graphviz's own escapes such as \\N or \\l, HTML specials, any
Unicode), line breaks included."""

from hypothesis import given
from hypothesis import strategies as st

from fstcrf.pictures.dot import attribute_list, digraph, edge, node, quoted
from drawn import read_picture
from strategies import oracle_settings

#: Characters that Graphviz or a careless writer could read as syntax.
AWKWARD = "\"\\{}[];,=<>&#%$'|*-./:N ldlr"

LINES = st.lists(
    st.text(st.sampled_from(AWKWARD) | st.characters(min_codepoint=0x20, max_codepoint=0x2FF), min_size=1, max_size=12)
    .map(str.strip)
    .filter(bool),
    min_size=1,
    max_size=3,
)


def test_quoted_escapes_backslashes_quotes_and_line_breaks():
    assert quoted("plain") == '"plain"'
    assert quoted('a"b') == '"a\\"b"'
    assert quoted("a\\nb") == '"a\\\\nb"'  # a backslash and an n, not a line break
    assert quoted("two\nlines") == '"two\\nlines"'
    assert quoted("crlf\r\nline") == '"crlf\\nline"'


@oracle_settings(max_examples=20)
@given(st.lists(LINES, min_size=1, max_size=8))
def test_graphviz_draws_every_label_as_written(texts):
    statements = [node(f"n{i}", {"label": "\n".join(lines), "shape": "box"}) for i, lines in enumerate(texts)]
    statements += [edge(f"n{i}", f"n{i + 1}", {"label": "\n".join(texts[i + 1])}) for i in range(len(texts) - 1)]
    title = "\n".join(texts[0])
    picture = read_picture(digraph(title, {"graph": {"label": title}}, statements))
    assert picture.title == texts[0]
    for i, lines in enumerate(texts):
        assert picture.nodes[f"n{i}"].text == lines
    assert [arc.text for _, _, arc in picture.arcs] == texts[1:]


def test_attribute_lists_keep_their_order():
    assert attribute_list({}) == ""
    assert attribute_list({"b": "1", "a": 'say "x"'}) == ' [b="1", a="say \\"x\\""]'
