"""The template ``fstcrf train`` uses when none is given: chosen by the target column
and the columns the training file has.

    target "chunk"                       chunking-extended  (Sha & Pereira's Table 1,
                                         word pairs and word-POS pairs)
    target "pos"                         pos          (words, affixes, shapes)
    any other target, by columns:
        word, pos and chunk              ner          (CoNLL-2003 layout)
        word and pos                     ner-pos      (CoNLL-2002 layout)
        word                             words        (word windows, shapes, affixes)

Both choices were made by cross-validation on the training data (``fstcrf
bench defaults``, docs/benchmarks.md): chunking-extended over sha-pereira
and crfpp, ner over words and sha-pereira; never on a test set.
"""

from __future__ import annotations

from collections.abc import Sequence

from fstcrf.errors import TemplateError


def default_template(target: str, columns: Sequence[str]) -> str:
    """The name of the default template (a key of ``fstcrf.model.TEMPLATES``) for
    learning column ``target`` of a file with ``columns``; TemplateError when no
    default fits (no word column)."""
    available = set(columns) - {target}
    if "word" not in available:
        raise TemplateError(
            f"no default template fits the columns {', '.join(columns)}: the defaults read a "
            f"'word' column; name the columns with --columns or give --template"
        )
    if target == "chunk" and "pos" in available:
        return "chunking-extended"
    if target == "pos":
        return "pos"
    if {"pos", "chunk"} <= available:
        return "ner"
    if "pos" in available:
        return "ner-pos"
    return "words"
