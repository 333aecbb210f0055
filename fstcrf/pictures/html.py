"""The document view: one self-contained HTML page of tagged sentences (inline CSS, no
script, nothing fetched from the network, not even a font).

Each sentence is a table whose columns are its tokens and whose rows are the layers,
one per chain of the model (each component of a composed model, lowest first).  A
chunk layer shows each predicted chunk as one cell over its tokens, coloured by its
type, with its exact probability (four decimals in the cell, six on hover, where the
cell's title also names its tokens); a tag layer shows each token's tag and the
marginal probability of that tag.  Chunks and tags below the low-confidence
threshold have a dashed border and a "?".  When the file has the gold labels, a gold
row follows each layer: predicted chunks or tags that are not gold have a red border
and a "✗", gold ones the model missed a dotted red border and "missed".  Every text
the page shows is HTML-escaped."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

from fstcrf.pictures.settings import DEFAULT_LOW_CONFIDENCE
from fstcrf.pictures.tagged import ChunkLayer, TaggedSentence, TagLayer

#: The colours of chunk types, given in the sorted order of a layer's types (then again).
PALETTE = (
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
)

#: The cell under a token outside every chunk.
GAP = '<td class="gap"></td>'

#: The colour of a chunk type the model does not know (a gold chunk's) and of tags.
NEUTRAL = "#e4e4e4"

STYLE = """
body { font-family: sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 24px; } h3 { font-size: 14px; color: #555; }
.scroll { overflow-x: auto; }
table { border-collapse: separate; border-spacing: 2px 3px; }
th { font-weight: normal; color: #666; text-align: right; padding: 0 6px 0 0; white-space: nowrap; }
td { white-space: nowrap; padding: 3px 8px; border: 2px solid transparent; text-align: center; }
tr.tokens td { font-weight: bold; }
td.span, td.tag { border-color: rgba(0, 0, 0, 0.25); }
td.low { border-style: dashed; border-color: #444; }
td.wrong { border-color: #d62728; }
td.missed { border-style: dotted; border-color: #d62728; }
.p { font-size: 80%; color: #444; }
.flag { color: #d62728; font-weight: bold; }
.legend span { display: inline-block; padding: 2px 8px; margin: 2px; border: 1px solid rgba(0, 0, 0, 0.25); }
"""


def type_colours(types: Iterable[str]) -> dict[str, str]:
    """The colour of each chunk type: the palette in the types' sorted order."""
    return {chunk_type: PALETTE[i % len(PALETTE)] for i, chunk_type in enumerate(sorted(set(types)))}


def _escaped(text: str) -> str:
    return html.escape(text, quote=True)


def _cell(classes: Sequence[str], text: str, title: str, colour: str, span: int = 1, data: str = "") -> str:
    """One table cell; ``text`` is markup already, ``title`` and the classes are escaped here."""
    width = f' colspan="{span}"' if span > 1 else ""
    return (
        f'<td class="{_escaped(" ".join(classes))}"{width}{data} style="background: {colour}" '
        f'title="{_escaped(title)}">{text}</td>'
    )


def _span_data(first: int, last: int, chunk_type: str) -> str:
    """The data attributes of a chunk's cell: its type and tokens."""
    return f' data-type="{_escaped(chunk_type)}" data-first="{first}" data-last="{last}"'


def _prediction_cell(
    kind: str,
    label: str,
    probability: float,
    title: str,
    notes: Mapping[str, str],
    colour: str,
    width: int = 1,
    data: str = "",
) -> str:
    """The cell of a predicted chunk or tag (``kind``): its label and probability,
    flagged by each of ``notes`` ("low", "wrong") that is not empty."""
    raised = {name: note for name, note in notes.items() if note}
    marks = ("?" if "low" in raised else "") + ("✗" if "wrong" in raised else "")
    text = f'{_escaped(label)} <span class="p">{probability:.4f}</span>'
    text += f' <span class="flag">{marks}</span>' if marks else ""
    title += "".join(f"; {note}" for note in raised.values())
    return _cell([kind, *raised], text, title, colour, width, data + f' data-probability="{probability!r}"')


def _gold_cell(label: str, title: str, missed: str, colour: str, width: int = 1, data: str = "") -> str:
    """The cell of a gold chunk or tag, flagged "missed" with the note ``missed`` if it is not empty."""
    text = _escaped(label) + (' <span class="flag">missed</span>' if missed else "")
    return _cell(
        ["gold", *(["missed"] if missed else [])], text, title + (f"; {missed}" if missed else ""), colour, width, data
    )


def _counted(counts: dict, kind: str, notes: Mapping[str, str]) -> Mapping[str, str]:
    """``notes``, after counting a prediction of ``kind`` and the flags it raises."""
    counts[kind] += 1
    for name, note in notes.items():
        counts[name] += bool(note)
    return notes


def _chunk_rows(layer: ChunkLayer, tokens: Sequence[str], colours: Mapping[str, str], low: float, counts: dict) -> str:
    """The rows of a chunk layer: its chunks, then the gold chunks when there are."""
    gold = layer.gold_chunks()
    cells, position = [], 0
    for first, last, chunk_type, probability in sorted(layer.spans):
        cells += [GAP] * (first - position)
        notes = {
            "low": f"below {low:g}" if probability < low else "",
            "wrong": "not a gold chunk" if gold is not None and (first, last, chunk_type) not in gold else "",
        }
        words = " ".join(tokens[first : last + 1])
        title = f"{chunk_type}: {words} (tokens {first}-{last}), p = {probability:.6f}"
        colour, data = colours.get(chunk_type, NEUTRAL), _span_data(first, last, chunk_type)
        _counted(counts, "chunks", notes)
        cells.append(_prediction_cell("span", chunk_type, probability, title, notes, colour, last - first + 1, data))
        position = last + 1
    rows = [_row("layer", layer.name, layer.name, cells + [GAP] * (len(tokens) - position))]
    if gold is not None:
        predicted = {(chunk.first, chunk.last, chunk.type) for chunk in layer.spans}
        cells, position = [], 0
        for first, last, chunk_type in sorted(gold):
            cells += [GAP] * (first - position)
            missed = "the model missed it" if (first, last, chunk_type) not in predicted else ""
            counts["missed"] += bool(missed)
            title = f"gold {chunk_type}: {' '.join(tokens[first : last + 1])} (tokens {first}-{last})"
            colour, data = colours.get(chunk_type, NEUTRAL), _span_data(first, last, chunk_type)
            cells.append(_gold_cell(chunk_type, title, missed, colour, last - first + 1, data))
            position = last + 1
        rows.append(_row("gold", layer.name, "gold", cells + [GAP] * (len(tokens) - position)))
    return "\n".join(rows)


def _tag_rows(layer: TagLayer, tokens: Sequence[str], low: float, counts: dict) -> str:
    """The rows of a tag layer: each token's tag and its probability, then the gold tags."""
    cells, gold_cells = [], []
    for t, (tag, probability) in enumerate(zip(layer.labels, layer.probabilities.tolist())):
        gold = None if layer.gold is None else layer.gold[t]
        wrong = gold is not None and gold != tag
        notes = {"low": f"below {low:g}" if probability < low else "", "wrong": f"gold {gold}" if wrong else ""}
        title = f"{tag} at token {t} ({tokens[t]}): p = {probability:.6f}"
        cells.append(_prediction_cell("tag", tag, probability, title, _counted(counts, "tags", notes), NEUTRAL))
        if gold is not None:
            missed = f"the model tagged it {tag}" if wrong else ""
            gold_cells.append(_gold_cell(gold, f"gold {gold} at token {t} ({tokens[t]})", missed, NEUTRAL))
    rows = [_row("layer", layer.name, layer.name, cells)]
    if gold_cells:
        rows.append(_row("gold", layer.name, "gold", gold_cells))
    return "\n".join(rows)


def _row(kind: str, layer: str, heading: str, cells: list[str]) -> str:
    """A table row of a layer ("layer" or its "gold" row) under the row heading ``heading``."""
    return f'<tr class="{kind}" data-layer="{_escaped(layer)}"><th>{_escaped(heading)}</th>{"".join(cells)}</tr>'


def _sentence(sentence: TaggedSentence, colours: Mapping[str, Mapping[str, str]], low: float, counts: dict) -> str:
    """The heading and table of one sentence."""
    tokens = sentence.tokens
    rows = ['<tr class="tokens"><th></th>' + "".join(f"<td>{_escaped(token)}</td>" for token in tokens) + "</tr>"]
    for layer in sentence.layers:
        if isinstance(layer, ChunkLayer):
            rows.append(_chunk_rows(layer, tokens, colours.get(layer.name, {}), low, counts))
        else:
            rows.append(_tag_rows(layer, tokens, low, counts))
    return (
        f'<div class="sentence" id="sentence-{sentence.index}"><h3>sentence {sentence.index}</h3>\n'
        '<div class="scroll"><table>\n' + "\n".join(rows) + "\n</table></div></div>"
    )


def _legend(colours: Mapping[str, Mapping[str, str]]) -> str:
    """A line per chunk layer: its types in their colours."""
    lines = []
    for name, by_type in colours.items():
        swatches = "".join(
            f'<span style="background: {colour}">{_escaped(chunk_type)}</span>'
            for chunk_type, colour in by_type.items()
        )
        lines.append(f'<p class="legend">{_escaped(name)}: {swatches}</p>')
    return "\n".join(lines)


def view_fragment(
    sentences: Sequence[TaggedSentence],
    chunk_types: Mapping[str, Iterable[str]],
    low_confidence: float = DEFAULT_LOW_CONFIDENCE,
) -> str:
    """The view of ``sentences`` as HTML to place in a page styled by :data:`STYLE`: a
    summary, the legend of the chunk types, then each sentence; ``chunk_types`` maps
    each chunk layer's name to the chunk types its model knows (their colours)."""
    colours = {name: type_colours(types) for name, types in chunk_types.items()}
    counts = dict.fromkeys(("chunks", "tags", "low", "wrong", "missed"), 0)
    body, document = [], 0
    for sentence in sentences:
        if sentence.document_start:
            document += 1
            body.append(f"<h2>document {document}</h2>")
        body.append(_sentence(sentence, colours, low_confidence, counts))
    summary = (
        f"{_number(len(sentences), 'sentence')}; {_number(counts['chunks'], 'chunk')} and "
        f"{_number(counts['tags'], 'tag')} predicted, {counts['low']} of probability below {low_confidence:g} "
        "(dashed, ?)"
    )
    if any(layer.gold is not None for sentence in sentences for layer in sentence.layers):
        summary += f"; {counts['wrong']} not gold (red, ✗), {counts['missed']} gold ones missed (dotted red)"
    return "\n".join([f'<p class="summary">{_escaped(summary)}</p>', _legend(colours), *body])


def _number(count: int, noun: str) -> str:
    """ "1 chunk", "2 chunks"."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def view_page(
    title: str,
    sentences: Sequence[TaggedSentence],
    chunk_types: Mapping[str, Iterable[str]],
    low_confidence: float = DEFAULT_LOW_CONFIDENCE,
) -> str:
    """The HTML page of ``sentences`` (:func:`view_fragment`) under the heading ``title``."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{_escaped(title)}</title>",
            f"<style>{STYLE}</style></head><body>",
            f"<h1>{_escaped(title)}</h1>",
            view_fragment(sentences, chunk_types, low_confidence),
            "</body></html>",
            "",
        ]
    )
