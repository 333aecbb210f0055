"""An ampersand in a quoted string is drawn as itself: Graphviz reads ``&lt;``,
``&amp;``, ``&#60;`` ... in its strings as HTML entities, so quoted() writes ``&``
as ``&amp;``."""

import subprocess
import xml.etree.ElementTree as ElementTree

import pytest

from fstcrf.cli import main
from fstcrf.pictures.dot import digraph, node, quoted
from drawn import DOT, read_picture

ENTITIES = ["&lt;", "&amp;", "&#60;", "&#x3c;", "AT&T", "&"]


def test_an_ampersand_is_written_as_an_entity():
    assert quoted("a&lt;b") == '"a&amp;lt;b"'


@pytest.mark.parametrize("text", ENTITIES)
def test_graphviz_draws_an_entity_as_written(text):
    picture = read_picture(digraph(text, {"graph": {"label": text}}, [node("n0", {"label": text})]))
    assert picture.nodes["n0"].text == [text] and picture.title == [text]


def test_the_lattice_picture_shows_a_token_that_looks_like_an_entity(demo_chunker, tmp_path):
    sentence = tmp_path / "sentence.txt"
    sentence.write_text("the DT B-NP\n&lt; NN I-NP\nAT&T NNP I-NP\n\n")
    dot = tmp_path / "lattice.dot"
    assert main(["-q", "draw", "lattice", str(demo_chunker), str(sentence), "-o", str(dot)]) == 0
    svg = subprocess.run([DOT, "-Tsvg", str(dot)], capture_output=True, check=True).stdout
    texts = {element.text for element in ElementTree.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")}
    assert {"&lt;", "AT&T"} <= texts
