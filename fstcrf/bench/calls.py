"""The two ways fstcrf is called, a file at a time and one sentence per call, for each
kind of model: per-sentence seconds of one call on a batch of test sentences and of
one call per sentence, their ratio, and the phases of each.

Cases (each measured when its model or peer is there; all in this process):

    chunker    ChainCRF.predict, the default CoNLL-2000 chunker (``fstcrf train
               train.txt``); phases: features and decode (with the features), each
               side's own (a batch's ``encode`` and ``decode``; one sentence's column
               hashes and its plan's kernel call, see fstcrf/model/tagging.py)
    grammar    the same for a model trained under a grammar (``--grammar iob2``)
    joint, cascade   JointModel.predict of a composed model (``fstcrf compose``), each mode
    ner        the NER default (``fstcrf train eng.train --target ner``): its default
               decoding, MBR (``predict_mbr``), then the exact probability of each
               chunk chosen (``span_probabilities``), as ``fstcrf tag
               --entity-probabilities`` does; phases: mbr and probabilities
    sklearn    fstcrf.sklearn.CRF.predict_single against CRF.predict, the
               python-crfsuite tutorial's token dicts, trained on ``train_sentences``
               training sentences for 50 L-BFGS iterations
    tagger     fstcrf.pycrfsuite.Tagger.tag against python-crfsuite's Tagger.tag, one
               call per sentence each, models trained alike on the tutorial's dicts
    nltk       NLTK's CRFTagger.tag_sents over fstcrf.pycrfsuite and over
               python-crfsuite (its features, its default training options, trained
               on (word, chunk) pairs), and the share of NLTK's own feature function
    logits     fstcrf.decode_logits on one sentence of 30 tokens and 9 labels (IOB2)
    spacy      the spaCy component, entity probabilities on: ``nlp(text)`` per text
               against ``nlp.pipe`` over the texts, in tokens per second (a blank
               English pipeline, the component's model reading words alone); and
               ``nlp(text)`` once over as many eng.testa texts, never met before
               (spaCy's tokenizer warmed on every text, both kinds alike: its own
               first meeting with a word is not the component's cost)

Each comparison alternates its sides ``repeats`` times (batch, one per call, batch,
...) and reports medians; the machine's load averages before and after are kept.
After its first pass a case's items are text the model has met: the value store
(fstcrf.features.hashing) holds their words.  A case with ``unseen`` items also
times one call per item once over them (:func:`first_pass`), before any case runs:
a process meeting text for the first time, the words that the store (shared by
every model of a salt) has to take in.
"""

from __future__ import annotations

import gc
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The model files ``bench calls`` reads, by case (``--models KIND=PATH,...``).
MODEL_KINDS = ("chunker", "grammar", "composed", "ner", "spacy")
#: Sentences and L-BFGS iterations of the models the sklearn, tagger and nltk cases train.
TRAIN_SENTENCES = 3000
TUTORIAL_ITERATIONS = 50


@dataclass
class Case:
    """One comparison: ``batch(items)`` and ``one(item)`` over ``items`` (``tokens``
    tokens), and phases by name, each a (batch, one) pair of the same kind."""

    name: str
    items: Sequence
    tokens: int
    batch: Callable[[Sequence], object]
    one: Callable[[object], object]
    phases: dict[str, tuple[Callable[[Sequence], object], Callable[[object], object]]] = field(default_factory=dict)
    batch_name: str = "one call"
    one_name: str = "one call per sentence"
    #: items no case has met, timed once one per call (:func:`first_pass`), their tokens and what they are
    unseen: Sequence = ()
    unseen_tokens: int = 0
    unseen_name: str = ""


def _seconds(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def first_pass(case: Case) -> dict:
    """``case.one`` once over ``case.unseen`` (after one call on the case's first item,
    which makes the structures made once per model): their number, tokens and name,
    and the seconds of the pass."""
    case.one(case.items[0])
    seconds = _seconds(lambda: [case.one(item) for item in case.unseen])
    return {"items": len(case.unseen), "tokens": case.unseen_tokens, "what": case.unseen_name, "seconds": seconds}


def measure(case: Case, repeats: int) -> dict:
    """The case's sides alternated ``repeats`` times: per item the median seconds of
    each side and of each phase, and one's / batch's."""
    items = list(case.items)
    case.batch(items[:10])  # structures made once per model, caches filled
    for item in items[:10]:
        case.one(item)
    timings: dict[str, list[float]] = {}
    for _ in range(repeats):
        for side, run in (("batch", case.batch), ("one", case.one)):
            for phase, pair in [("total", (case.batch, case.one)), *case.phases.items()]:
                work = pair[0] if side == "batch" else pair[1]
                if side == "batch":
                    seconds = _seconds(lambda: work(items))
                else:
                    seconds = _seconds(lambda: [work(item) for item in items])
                timings.setdefault(f"{side} {phase}", []).append(seconds / len(items))
    medians = {key: statistics.median(values) for key, values in timings.items()}
    return {
        "items": len(items),
        "tokens": case.tokens,
        "batch": case.batch_name,
        "one": case.one_name,
        "seconds": medians,
        "ratio": medians["one total"] / medians["batch total"],
        "spread": {key: (min(values), max(values)) for key, values in timings.items()},
    }


# -- the cases -----------------------------------------------------------------


def _model_cases(models: dict[str, str], test2000, test2003) -> list[Case]:
    from fstcrf.engine.spans import path_chunks
    from fstcrf.model.compose import load_any

    cases = []
    tokens2000 = sum(len(sentence) for sentence in test2000)
    for kind in ("chunker", "grammar"):
        if kind in models:
            model = load_any(models[kind])
            cases.append(
                Case(
                    kind,
                    test2000,
                    tokens2000,
                    model.predict,
                    lambda sentence, model=model: model.predict([sentence]),
                    _chain_phases(model),
                )
            )
    if "composed" in models:
        joint = load_any(models["composed"])
        for mode in ("joint", "cascade"):
            cases.append(
                Case(
                    mode,
                    test2000,
                    tokens2000,
                    lambda sentences, mode=mode: joint.predict(sentences, mode=mode),
                    lambda sentence, mode=mode: joint.predict([sentence], mode=mode),
                )
            )
    if "ner" in models and test2003 is not None:
        ner = load_any(models["ner"])

        def tagged(sentences):
            labels = ner.predict_mbr(sentences)
            return labels, ner.span_probabilities(sentences, [path_chunks(sentence) for sentence in labels])

        cases.append(
            Case(
                "ner",
                test2003,
                sum(len(sentence) for sentence in test2003),
                tagged,
                lambda sentence: tagged([sentence]),
                {"mbr": (ner.predict_mbr, lambda sentence: ner.predict_mbr([sentence]))},
            )
        )
    return cases


def _chain_phases(model) -> dict:
    """A ChainCRF's phases, each side as predict runs it: a batch is encoded
    (features), then decoded (decode: both); one sentence's columns are hashed
    (features), then its rows looked up and its labels searched in one kernel call
    (decode: both; the plan of fstcrf/model/tagging.py), not encoded as a batch."""
    from fstcrf.model.tagging import tagging_plan

    plan = tagging_plan(model)
    window = plan.window

    def one_features(sentence):
        if window is None:  # an extractor that gives rows itself: they are the features
            return plan.extractor.transform_rows([sentence])
        return window.source_hashes([sentence], len(sentence))

    return {
        "features": (model.encode, one_features),
        "decode": (lambda sentences: model.decode(model.encode(sentences)), lambda sentence: plan.paths([sentence])),
    }


def _tutorial_cases(folder: Path, scratch: str) -> list[Case]:
    """sklearn and tagger: the python-crfsuite tutorial's dicts (needs python-crfsuite
    for the tagger's peer)."""
    import fstcrf.pycrfsuite as ours
    from fstcrf.bench.pycrfsuite import TUTORIAL_PARAMS
    from fstcrf.bench.sklearn import read_sentences, sent2features, sent2labels
    from fstcrf.sklearn import CRF

    train = read_sentences(folder / "train.txt", TRAIN_SENTENCES)
    test = read_sentences(folder / "test.txt")
    X, y = [sent2features(s) for s in train], [sent2labels(s) for s in train]
    X_test = [sent2features(s) for s in test]
    tokens = sum(len(s) for s in test)
    crf = CRF(algorithm="lbfgs", c1=1.0, c2=1e-3, max_iterations=TUTORIAL_ITERATIONS, all_possible_transitions=True)
    crf.fit(X, y)
    cases = [Case("sklearn", X_test, tokens, crf.predict, crf.predict_single)]
    try:
        import pycrfsuite as theirs
    except ImportError:
        return cases
    taggers = []
    for module in (ours, theirs):
        path = os.path.join(scratch, f"tutorial.{module.__name__}")
        trainer = module.Trainer(verbose=False)
        trainer.set_params({**TUTORIAL_PARAMS, "max_iterations": TUTORIAL_ITERATIONS})
        for xseq, yseq in zip(X, y):
            trainer.append(xseq, yseq)
        trainer.train(path)
        tagger = module.Tagger()
        tagger.open(path)
        taggers.append(tagger)
    cases.append(
        Case(
            "tagger",
            X_test,
            tokens,
            lambda xseqs: [taggers[1].tag(xseq) for xseq in xseqs],
            taggers[0].tag,
            batch_name="python-crfsuite Tagger.tag per sentence",
            one_name="fstcrf.pycrfsuite Tagger.tag per sentence",
        )
    )
    return cases


def _nltk_case(folder: Path, scratch: str) -> Case | None:
    """NLTK's CRFTagger over each backend (both in this process: nltk.tag.crf's
    ``pycrfsuite`` is set to each module in turn while its tagger is made)."""
    try:
        import nltk.tag.crf as crf
        import pycrfsuite as theirs
    except ImportError:
        return None
    import fstcrf.pycrfsuite as ours
    from fstcrf.bench.sklearn import read_sentences

    import nltk

    nltk.data.path.insert(0, scratch)  # NLTK writes and reads models inside its data folders only
    train = [[(t[0], t[-1]) for t in s] for s in read_sentences(folder / "train.txt", TRAIN_SENTENCES)]
    test = [[t[0] for t in s] for s in read_sentences(folder / "test.txt")]
    taggers = []
    for module in (ours, theirs):
        crf.pycrfsuite = module
        tagger = crf.CRFTagger(training_opt={"max_iterations": TUTORIAL_ITERATIONS})
        tagger.train(train, os.path.join(scratch, f"nltk.{module.__name__}"))
        taggers.append(tagger)
    features = taggers[0]._feature_func
    return Case(
        "nltk",
        test,
        sum(len(s) for s in test),
        taggers[1].tag_sents,
        lambda sentence: taggers[0].tag_sents([sentence]),
        {
            "NLTK's features": (
                lambda sentences: [[features(s, i) for i in range(len(s))] for s in sentences],
                lambda sentence: [features(sentence, i) for i in range(len(sentence))],
            )
        },
        batch_name="CRFTagger.tag_sents over python-crfsuite, all sentences",
        one_name="CRFTagger.tag_sents over fstcrf.pycrfsuite, a sentence per call",
    )


def _logits_case(sentences: int) -> Case:
    import numpy as np

    from fstcrf.logits import decode_logits

    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]
    logits = np.random.default_rng(0).normal(size=(sentences, 30, len(labels)))
    return Case(
        "logits",
        list(logits),
        30 * sentences,
        lambda batch: decode_logits(np.stack(batch), labels, scheme="iob2"),
        lambda one: decode_logits(one, labels, scheme="iob2"),
    )


def _spacy_case(model: str, test2003, unseen2003) -> Case | None:
    try:
        import spacy
    except ImportError:
        return None
    from fstcrf.spacy.factory import FACTORY

    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"model": model, "reads": {"word": "text"}, "probabilities": True})
    texts = [" ".join(sentence["word"]) for sentence in test2003]
    tokens = sum(len(nlp.make_doc(text)) for text in texts)
    unseen = [" ".join(sentence["word"]) for sentence in unseen2003]
    # counted as the texts are (spaCy's tokenizer, which caches what it met, warmed alike on
    # both: its first meeting with a word is spaCy's cost, not the component's)
    unseen_tokens = sum(len(nlp.make_doc(text)) for text in unseen)
    return Case(
        "spacy",
        texts,
        tokens,
        lambda batch: list(nlp.pipe(batch, batch_size=1000)),
        nlp,
        batch_name="nlp.pipe",
        one_name="nlp(text)",
        unseen=unseen,
        unseen_tokens=unseen_tokens,
        unseen_name=f"{len(unseen)} eng.testa texts",
    )


def bench_calls(
    folder: str | os.PathLike,
    models: dict[str, str],
    conll2003: str | os.PathLike | None = None,
    sentences: int = 1000,
    repeats: int = 5,
    cases: Sequence[str] | None = None,
) -> dict:
    """The cases of the module doc whose models and peers are there (only ``cases``
    when given), on the first ``sentences`` sentences of CoNLL-2000's test.txt in
    ``folder`` and of ``conll2003``/eng.testb.  JSON-able: per case its measures
    (see :func:`measure`)."""
    from fstcrf.corpus.conll import read_conll

    folder = Path(folder)
    test2000 = read_conll(folder / "test.txt", columns="word,pos,chunk").sentences[:sentences]
    test2003 = None
    if conll2003 is not None and (Path(conll2003) / "eng.testb").is_file():
        corpus = read_conll(Path(conll2003) / "eng.testb", columns="word,pos,chunk,ner")
        test2003 = [sentence for sentence in corpus.sentences if len(sentence)][:sentences]
    unseen2003 = []
    if conll2003 is not None and (Path(conll2003) / "eng.testa").is_file():
        corpus = read_conll(Path(conll2003) / "eng.testa", columns="word,pos,chunk,ner")
        unseen2003 = [sentence for sentence in corpus.sentences if len(sentence)][:sentences]
    load_before = os.getloadavg()
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="fstcrf-bench-calls-") as scratch:
        built: list[Case | None] = list(_model_cases(models, test2000, test2003))
        wanted = set(cases) if cases else None
        if wanted is None or wanted & {"sklearn", "tagger"}:
            built += _tutorial_cases(folder, scratch)
        if wanted is None or "nltk" in wanted:
            built.append(_nltk_case(folder, scratch))
        built.append(_logits_case(sentences))
        if "spacy" in models and test2003 is not None:
            built.append(_spacy_case(models["spacy"], test2003, unseen2003))
        # the models, NLTK and spaCy made many objects that live on: the collector need
        # not walk them at every collection the calls' short-lived objects start
        gc.collect()
        gc.freeze()
        try:
            chosen = [case for case in built if case is not None and (wanted is None or case.name in wanted)]
            unseen = {case.name: first_pass(case) for case in chosen if case.unseen}  # before any case runs
            for case in chosen:
                results[case.name] = measure(case, repeats)
                if case.name in unseen:
                    results[case.name]["unseen"] = unseen[case.name]
        finally:
            gc.unfreeze()
    return {
        "test": str(folder / "test.txt"),
        "sentences": sentences,
        "repeats": repeats,
        "models": models,
        "load": [load_before, os.getloadavg()],
        "cases": results,
    }


def format_calls(result: dict) -> str:
    """A readable table of :func:`bench_calls`' result: per case the per-sentence
    microseconds of each side (medians), the ratio, and the phases."""
    load = ", ".join(f"{value:.2f}" for value in result["load"][0])
    lines = [
        f"One sentence per call against one call on {result['sentences']} sentences; medians of "
        f"{result['repeats']} alternated runs; load average before {load}",
        f"{'case':10}{'batch us/sent':>15}{'one us/sent':>13}{'ratio':>8}  phases (batch / one, us per sentence)",
    ]
    for name, case in result["cases"].items():
        seconds = case["seconds"]
        phases = sorted({key.split(" ", 1)[1] for key in seconds} - {"total"})
        shown = "; ".join(
            f"{phase} {seconds['batch ' + phase] * 1e6:.1f} / {seconds['one ' + phase] * 1e6:.1f}" for phase in phases
        )
        lines.append(
            f"{name:10}{seconds['batch total'] * 1e6:>15.1f}{seconds['one total'] * 1e6:>13.1f}"
            f"{case['ratio']:>8.2f}  {shown}"
        )
        if case["batch"] != "one call":
            per_second = case["tokens"] / case["items"]
            lines.append(
                f"{'':10}batch: {case['batch']}; one: {case['one']} "
                f"({per_second / seconds['batch total']:,.0f} and {per_second / seconds['one total']:,.0f} tokens/s)"
            )
        if "unseen" in case:
            unseen = case["unseen"]
            lines.append(
                f"{'':10}one on text never met ({unseen['what']}), once: "
                f"{unseen['tokens'] / unseen['seconds']:,.0f} tokens/s"
            )
    return "\n".join(lines)
