"""Dot text: any text written as a quoted string is drawn by Graphviz as that text
(quotes, backslashes, Graphviz's own escapes such as \\N or \\l, HTML specials, any
Unicode), line breaks included; control characters (NUL included) as their Unicode
pictures, and a text too long for Graphviz's lexer cut."""

import subprocess
import xml.etree.ElementTree as ElementTree

from hypothesis import given
from hypothesis import strategies as st

from fstcrf.pictures.dot import LONGEST, attribute_list, digraph, edge, node, quoted
from drawn import DOT, read_picture
from strategies import oracle_settings

#: Characters that Graphviz or a careless writer could read as syntax.
AWKWARD = "\"\\{}[];,=<>&#%$'|*-./:N ldlr"

LINES = st.lists(
    st.text(
        st.sampled_from(AWKWARD) | st.characters(min_codepoint=0x20, max_codepoint=0x2FF, exclude_categories=("Cc",)),
        min_size=1,
        max_size=12,
    )
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


def test_control_characters_are_drawn_as_their_pictures():
    every = "".join(chr(code) for code in range(0x20) if code != 0x0A) + "\x7f"
    assert quoted("a\x00b") == '"a\u2400b"'
    label = f"[{every}]"
    picture = read_picture(digraph("g", {}, [node("n", {"label": label, "shape": "box"})]))
    pictures = "".join(chr(0x2400 + code) for code in range(0x20) if code != 0x0A) + "\u2421"
    assert picture.nodes["n"].text == [f"[{pictures}]"]
    svg = subprocess.run([DOT, "-Tsvg"], input=digraph(label, {}, []).encode(), capture_output=True, check=True)
    ElementTree.fromstring(svg.stdout)  # the SVG is XML, which no control character but tab and newline may be in


def test_a_text_too_long_for_graphviz_is_cut():
    token = "x" * 20_000
    text = quoted(token)
    assert text == f'"{"x" * LONGEST}... (20,000 characters)"'
    picture = read_picture(digraph("g", {}, [node("n", {"label": token})]))
    assert picture.nodes["n"].text == [f"{'x' * LONGEST}... (20,000 characters)"]


def test_draw_lattice_of_a_token_holding_nul_gives_dot_text_graphviz_takes(tmp_path, demo_chunker):
    from fstcrf.cli import main

    sentence = tmp_path / "nul.txt"
    sentence.write_bytes(b"a\x00b NN B-NP\nlong" + b"y" * 20_000 + b" NN I-NP\n\n")
    picture = tmp_path / "lattice.dot"
    assert main(["-q", "draw", "lattice", str(demo_chunker), str(sentence), "-o", str(picture)]) == 0
    svg = subprocess.run([DOT, "-Tsvg", str(picture)], capture_output=True, check=True)
    assert "a\u2400b" in ElementTree.tostring(ElementTree.fromstring(svg.stdout), encoding="unicode")
