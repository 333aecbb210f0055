"""The template ``fstcrf train`` uses when none is given: chosen by the target column
and the columns the training file has; and the prior's sigma that goes with it.

    target "chunk"                       chunking-extended  (Sha & Pereira's Table 1,
                                         word pairs and word-POS pairs)
    target "pos"                         pos          (words, affixes, shapes)
    target "ner", by columns:
        word, pos and chunk              ner-rich     (CoNLL-2003 layout; value lists)
        word and pos                     ner-pos-rich (CoNLL-2002 layout)
        word                             words-rich
    any other target, by columns:
        word, pos and chunk              ner
        word and pos                     ner-pos
        word                             words        (word windows, shapes, affixes)

The chunking and ``ner`` choices were made by cross-validation on the training data
(``fstcrf bench defaults``), the rich NER templates, their sigmas
(:data:`TEMPLATE_SIGMAS`), feature sets (:data:`TEMPLATE_FEATURE_SETS`) and
decodings (:data:`TEMPLATE_DECODINGS`) on the development sets eng.testa, esp.testa
and ned.testa (docs/benchmarks.md, "NER defaults"); never on a test set.
"""

from __future__ import annotations

from collections.abc import Sequence

from fstcrf.errors import TemplateError

#: The Gaussian prior's sigma chosen on the development sets with a shipped template,
#: where it differs from the learner's default (fstcrf.learn.settings.DEFAULT_SIGMA):
#: ner-pos-rich's by the mean F1 of esp.testa and ned.testa over sigma 0.35-1.5 with
#: every (predicate, label) pair (docs/benchmark-history.md, "Sigma and temperature of
#: the CoNLL-2002 default").
TEMPLATE_SIGMAS = {"ner-rich": 1.0, "ner-pos-rich": 0.5, "words-rich": 3.0}

#: The feature set chosen on the development sets with a shipped template trained by
#: L-BFGS, where it differs from the learner's default ("supported").
TEMPLATE_FEATURE_SETS = {
    "ner-rich": "complete-if-fits",
    "ner-pos-rich": "complete-if-fits",
    "words-rich": "complete-if-fits",
}

#: The decoding ``fstcrf tag`` and ``eval`` use by default for a chunk-labelled model
#: trained with a shipped template, where the development sets chose other than
#: Viterbi: MBR (the chunks of the largest expected F1) gained 0.32, 0.63 and 0.51 F1
#: on eng.testa, esp.testa and ned.testa (docs/benchmarks.md, "F1-optimal decoding").
TEMPLATE_DECODINGS = {"ner-rich": "mbr", "ner-pos-rich": "mbr"}

#: The temperature MBR decoding tempers a chunk-labelled model trained with a shipped
#: template by, where it is not 1: the temperature that maximises the likelihood of
#: the labels of the template's development sets under its default models (ner-rich:
#: eng.testa, 1.1894; ner-pos-rich: esp.testa and ned.testa together, 1.0578; fitted
#: again when the templates took the training entities' marks: docs/benchmarks.md,
#: "The training entities as a gazetteer").
TEMPLATE_MBR_TEMPERATURES = {"ner-rich": 1.19, "ner-pos-rich": 1.06}
#: The files of fstcrf/templates/ whose lines a two-stage tagger's second stage adds
#: to its first stage's template (fstcrf.document.two_stage.second_stage_template):
#: Krishnan & Manning's six majorities, then the lower-cased majorities, the first
#: stage's labels and the neighbours' majorities, which paid on eng.testa, esp.testa
#: and ned.testa (docs/benchmark-history.md, "A second stage that reads more").
SECOND_STAGE_FILES = ("ner_second_stage.txt", "ner_second_stage_more.txt")
#: Second-stage files added for a shipped first-stage template: the casing lines
#: (fstcrf.document.casing) gained 0.08 beside the others on eng.testa; on esp.testa,
#: a file without documents, they cost 0.88.
TEMPLATE_SECOND_STAGE_FILES = {"ner-rich": ("ner_second_stage_casing.txt",)}
#: The range of a model's default MBR temperature (``ChainCRF.mbr_temperature_``):
#: about that of ``ChainCRF.fit_temperature``'s search, exp(-4) to exp(4).
MBR_TEMPERATURE_RANGE = (0.018, 54.6)


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
    rich = "-rich" if target == "ner" else ""
    if {"pos", "chunk"} <= available:
        return "ner" + rich
    if "pos" in available:
        return "ner-pos" + rich
    return "words" + rich


def template_sigma(template, default: float) -> float:
    """The sigma that goes with ``template`` (a shipped template's name, or a Template)
    when none is given: the one chosen with it on the development sets, else ``default``."""
    return TEMPLATE_SIGMAS.get(template, default) if isinstance(template, str) else default


def template_feature_set(template, algorithm: str) -> str | None:
    """The feature set that goes with ``template`` (a shipped template's name, or a
    Template) trained by ``algorithm`` when none is given: the one chosen with it on
    the development sets (L-BFGS only), else None (the learner's default)."""
    if algorithm != "lbfgs" or not isinstance(template, str):
        return None
    return TEMPLATE_FEATURE_SETS.get(template)


def template_decoding(template) -> str:
    """The default decoding (one of fstcrf.model.fitting.DECODINGS) of a chunk-labelled
    model trained with ``template`` (a shipped template's name, or a Template): the
    one chosen with it on the development sets, else "viterbi"."""
    return TEMPLATE_DECODINGS.get(template, "viterbi") if isinstance(template, str) else "viterbi"


def template_mbr_temperature(template) -> float:
    """The default MBR temperature of a chunk-labelled model trained with ``template``
    (a shipped template's name, or a Template): the one chosen with it on the
    development sets, else 1."""
    return TEMPLATE_MBR_TEMPERATURES.get(template, 1.0) if isinstance(template, str) else 1.0


def second_stage_files(template) -> tuple[str, ...]:
    """The files of fstcrf/templates/ whose lines the second stage of a two-stage tagger
    whose first stage reads ``template`` (a shipped template's name, or a Template)
    adds: :data:`SECOND_STAGE_FILES`, then the template's own choices."""
    own = TEMPLATE_SECOND_STAGE_FILES.get(template, ()) if isinstance(template, str) else ()
    return SECOND_STAGE_FILES + own
