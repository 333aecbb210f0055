"""A model's weights as python-crfsuite shows them: ``Tagger.info()``'s
:class:`ParsedDump` and ``Tagger.dump()``'s text, in the layout of
``crfsuite dump`` (FILEHEADER, LABELS, ATTRIBUTES, TRANSITIONS and
STATE_FEATURES blocks), so that code reading either keeps working.

Both hold the nonzero weights (:func:`fstcrf.model.inspection.model_features`):
ATTRIBUTES lists the attributes with a nonzero state weight, TRANSITIONS the
label pairs with a nonzero weight.  The header gives the model file's size in
bytes, fstcrf's format version and the counts.  The weights of ParsedDump are
the model's own floats (python-crfsuite's are read back from six decimals); a
model that reads a lower tagger's labels keeps the transition weights that
depend on them out of both.
"""

from __future__ import annotations

from fstcrf.model.chain import ChainCRF
from fstcrf.model.file import FORMAT_VERSION, MODEL_KIND
from fstcrf.model.inspection import model_features


class ParsedDump:
    """A model's weights (python-crfsuite's ``ParsedDump``):

    - header: {field: text}: magic, size (bytes), type, version, num_features,
      num_labels, num_attrs
    - labels: {label: its number, as text}
    - attributes: {attribute: its number, as text}
    - transitions: {(label from, label to): weight}
    - state_features: {(attribute, label): weight}
    """

    def __init__(self):
        self.header: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.attributes: dict[str, str] = {}
        self.transitions: dict[tuple[str, str], float] = {}
        self.state_features: dict[tuple[str, str], float] = {}


def parsed_dump(model: ChainCRF, size: int) -> ParsedDump:
    """The ParsedDump of a fitted model whose file has ``size`` bytes."""
    attributes, state, transition, _ = model_features(model)
    parsed = ParsedDump()
    parsed.header = {
        "magic": MODEL_KIND,
        "size": str(size),
        "type": f"CRF{model.order}d",
        "version": str(FORMAT_VERSION),
        "num_features": str(len(state) + len(transition)),
        "num_labels": str(len(model.labels_)),
        "num_attrs": str(len(attributes)),
    }
    parsed.labels = {label: str(number) for number, label in enumerate(model.labels_)}
    parsed.attributes = {name: str(number) for number, name in enumerate(attributes)}
    parsed.transitions = transition
    parsed.state_features = state
    return parsed


def dump_text(parsed: ParsedDump) -> str:
    """The text of ``crfsuite dump`` for a ParsedDump (weights with six decimals)."""
    lines = ["FILEHEADER = {", *(f"  {field}: {value}" for field, value in parsed.header.items()), "}", ""]
    for title, numbered in (("LABELS", parsed.labels), ("ATTRIBUTES", parsed.attributes)):
        lines += [f"{title} = {{", *(f"{number:>7}: {name}" for name, number in numbered.items()), "}", ""]
    for title, kind, weights in (
        ("TRANSITIONS", 1, parsed.transitions),
        ("STATE_FEATURES", 0, parsed.state_features),
    ):
        lines += [
            f"{title} = {{",
            *(f"  ({kind}) {source} --> {target}: {weight:f}" for (source, target), weight in weights.items()),
            "}",
            "",
        ]
    return "\n".join(lines) + "\n"
