"""The document view's page, read back with an HTML parser, shows the model's output:
each predicted chunk over its tokens with its exact probability, flagged when below
the threshold or not gold, the gold chunks with those the model missed, tags with their
marginal probabilities, a composed model's layers in chain order; every text is
escaped and nothing is fetched from anywhere."""

import numpy as np
import pytest

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.spans import Entity
from fstcrf.model.compose import load_any
from fstcrf.pictures.html import PALETTE, type_colours, view_page
from fstcrf.pictures.tagged import ChunkLayer, TaggedSentence, chunk_types, tagged_sentences
from page import read_page

TEST = read_conll(DATA_DIR / "demo_test.txt")


def iob2_chunks(labels) -> set[tuple[int, int, str]]:
    """The chunks of IOB2 (or IOB1) labels, read by a plain scan: B-X begins a chunk,
    I-X continues one of type X or begins one."""
    chunks, begun, kind = set(), None, None
    for t, label in enumerate([*labels, "O"]):
        if begun is not None and label != f"I-{kind}":
            chunks.add((begun, t - 1, kind))
            begun = None
        if label.startswith("B-") or (label.startswith("I-") and begun is None):
            begun, kind = t, label[2:]
    return chunks


def span_cells(row) -> list[tuple[int, int, str]]:
    """The chunks (first, last, type) of a row's cells, checking that they tile the row."""
    position, chunks = 0, []
    for cell in row.cells:
        width = int(cell.attributes.get("colspan", "1"))
        if "gap" not in cell.classes:
            assert (int(cell.attributes["data-first"]), int(cell.attributes["data-last"])) == (
                position,
                position + width - 1,
            )
            chunks.append((position, position + width - 1, cell.attributes["data-type"]))
        position += width
    return chunks


def test_a_chunkers_page_shows_its_chunks_probabilities_flags_and_the_gold(demo_chunker):
    model = load_any(demo_chunker)
    sentences = TEST.sentences[:40]
    low = 0.9995
    page = read_page(view_page("demo", tagged_sentences(model, sentences), chunk_types(model), low))
    assert len(page.sentences) == len(sentences)
    predicted_spans = model.predict_spans(sentences)
    flagged = {"low": 0, "wrong": 0, "missed": 0}
    for table, sentence, spans in zip(page.sentences, sentences, predicted_spans):
        tokens, layer, gold = table.rows
        assert [cell.text for cell in tokens.cells] == sentence["word"]
        assert (layer.heading, layer.attributes["data-layer"], gold.heading) == ("chunk", "chunk", "gold")
        gold_chunks = iob2_chunks(sentence["chunk"])
        assert span_cells(layer) == [(first, last, kind) for first, last, kind, _ in spans]
        for cell, (first, last, kind, p) in zip((c for c in layer.cells if "span" in c.classes), spans):
            assert float(cell.attributes["data-probability"]) == p
            assert f"p = {p:.6f}" in cell.attributes["title"]
            assert cell.text.startswith(f"{kind} {p:.4f}")
            assert ("low" in cell.classes) == (p < low) == ("?" in cell.text)
            assert ("wrong" in cell.classes) == ((first, last, kind) not in gold_chunks) == ("✗" in cell.text)
            assert cell.attributes["style"] == f"background: {type_colours(['NP', 'PP', 'VP', 'ADVP'])[kind]}"
            flagged["low"] += p < low
            flagged["wrong"] += (first, last, kind) not in gold_chunks
        assert span_cells(gold) == sorted(gold_chunks)
        predicted = {(first, last, kind) for first, last, kind, _ in spans}
        for cell in gold.cells:
            if "gap" not in cell.classes:
                chunk = (
                    int(cell.attributes["data-first"]),
                    int(cell.attributes["data-last"]),
                    cell.attributes["data-type"],
                )
                assert ("missed" in cell.classes) == (chunk not in predicted)
                flagged["missed"] += chunk not in predicted
    assert flagged["low"] > 0 and flagged["wrong"] > 0  # the thresholds above exercise the flags
    summary = view_page("demo", tagged_sentences(model, sentences), chunk_types(model), low)
    chunks = sum(len(spans) for spans in predicted_spans)
    assert f"{chunks} chunks and 0 tags predicted, {flagged['low']} of probability below {low:g}" in summary
    assert f"{flagged['wrong']} not gold (red, ✗), {flagged['missed']} gold ones missed" in summary


def test_a_taggers_page_shows_each_tag_with_its_marginal(demo_pos_tagger):
    model = load_any(demo_pos_tagger)
    sentences = TEST.sentences[:10]
    page = read_page(view_page("pos", tagged_sentences(model, sentences), chunk_types(model)))
    for table, sentence, tags, marginals in zip(
        page.sentences, sentences, model.predict(sentences), model.predict_marginals(sentences)
    ):
        _, layer, gold = table.rows
        assert [cell.text.split(" ")[0] for cell in layer.cells] == tags
        expected = marginals[np.arange(len(tags)), [model.labels_.index(tag) for tag in tags]]
        assert [float(cell.attributes["data-probability"]) for cell in layer.cells] == expected.tolist()
        assert [("wrong" in cell.classes) for cell in layer.cells] == [a != b for a, b in zip(tags, sentence["pos"])]
        assert [cell.text.removesuffix(" missed") for cell in gold.cells] == sentence["pos"]
        assert [("missed" in cell.classes) for cell in gold.cells] == [a != b for a, b in zip(tags, sentence["pos"])]


def test_a_composed_models_page_has_a_row_per_component_in_chain_order(demo_joint):
    joint = load_any(demo_joint)
    sentences = TEST.sentences[:5]
    page = read_page(view_page("joint", tagged_sentences(joint, sentences), chunk_types(joint)))
    spans = joint.predict_spans(sentences)[1]
    predicted = joint.predict(sentences)
    for b, table in enumerate(page.sentences):
        assert [(row.attributes["class"], row.attributes.get("data-layer")) for row in table.rows] == [
            ("tokens", None),
            ("layer", "pos"),
            ("gold", "pos"),
            ("layer", "chunk"),
            ("gold", "chunk"),
        ]
        assert [cell.text.split(" ")[0] for cell in table.rows[1].cells] == predicted[0][b]
        assert span_cells(table.rows[3]) == [(first, last, kind) for first, last, kind, _ in spans[b]]


NASTY = ['<script>alert("x")</script>', "&amp;", "'quoted'", '"', "<!--", "]]>", "é→日"]


def test_every_text_is_escaped_and_the_page_is_self_contained():
    kind = '<b class="x">N&P</b>'
    sentence = TaggedSentence(
        7,
        tuple(NASTY),
        True,
        (ChunkLayer('la"yer<', (Entity(0, 1, kind, 0.25),), tuple([f"B-{kind}", f"I-{kind}"] + ["O"] * 5)),),
    )
    text = view_page('title <with> "quotes" & more', [sentence], {'la"yer<': [kind]})
    assert "<script" not in text and "<!--" not in text and "<b " not in text
    for external in ("http:", "https:", "//", "<link", "<img", "@import", "url(", "src=", "@font-face"):
        assert external not in text
    page = read_page(text)
    assert page.tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "div"} | {
        "table",
        "tr",
        "th",
        "td",
    }
    assert page.headings == ["document 1"]
    (table,) = page.sentences
    assert table.identifier == "sentence-7"
    tokens, layer, gold = table.rows
    assert [cell.text for cell in tokens.cells] == NASTY
    assert layer.heading == 'la"yer<' and layer.attributes["data-layer"] == 'la"yer<'
    cell = layer.cells[0]
    assert cell.attributes["data-type"] == kind and cell.text == f"{kind} 0.2500 ?"
    assert cell.attributes["title"].startswith(f"{kind}: {NASTY[0]} {NASTY[1]} (tokens 0-1), p = 0.250000")
    assert gold.cells[0].attributes["data-type"] == kind and "missed" not in gold.cells[0].classes


def test_documents_get_headings_and_types_their_colours():
    sentences = [
        Sentence({"word": ["a"], "chunk": ["O"]}, docstart_lines=("-DOCSTART- -X- O",)),
        Sentence({"word": ["b"], "chunk": ["O"]}),
        Sentence({"word": ["c"], "chunk": ["O"]}, docstart_lines=("-DOCSTART- -X- O",)),
    ]
    tagged = [
        TaggedSentence(i, tuple(s["word"]), s.document_start, (ChunkLayer("chunk", (), None),))
        for i, s in enumerate(sentences)
    ]
    page = read_page(view_page("docs", tagged, {"chunk": ["VP", "NP"]}))
    assert page.headings == ["document 1", "document 2"]
    assert type_colours(["VP", "NP", "NP"]) == {"NP": PALETTE[0], "VP": PALETTE[1]}
    assert len(type_colours([f"T{i:02d}" for i in range(len(PALETTE) + 1)])) == len(PALETTE) + 1


@pytest.mark.parametrize("low", [0.0, 1.0])
def test_the_threshold_bounds_flag_nothing_or_every_chunk_below_certainty(demo_chunker, low):
    model = load_any(demo_chunker)
    page = read_page(view_page("x", tagged_sentences(model, TEST.sentences[:5]), chunk_types(model), low))
    cells = [cell for table in page.sentences for cell in table.rows[1].cells if "span" in cell.classes]
    assert cells
    for cell in cells:
        assert ("low" in cell.classes) == (float(cell.attributes["data-probability"]) < low)
    assert all("low" not in cell.classes for cell in cells) == (low == 0.0)
