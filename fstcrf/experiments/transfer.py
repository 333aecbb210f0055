"""Sutton & McCallum's (2005) transfer experiment: a named-entity CRF trained on
CoNLL-2003 newswire, composed with a seminar CRF that reads its labels.

The pieces, as library functions:

- :func:`read_conll2003` and :func:`ner_model`: the NER CRF (word column only,
  template ``seminar_ner.txt``, IOB2 labels), trained once and cached.
- :func:`seminar_documents`, :func:`with_ner`: the 485 announcements as
  documents of sentences (columns word, field) and the same with the NER
  model's 1-best labels in a column ``ner`` (cascaded training: the seminar
  CRF never sees gold NER).
- :func:`random_splits`, :func:`upstream_split`, :func:`dev_side`: seeded
  50/50 splits of the documents, the upstream 301/184 split, and the held-out
  part of a training side on which the component scales are chosen.
- :func:`run_split`: the three systems on one split (no transfer: the
  seminar CRF alone; cascade: NER 1-best feeds the reading seminar CRF;
  joint: exact Viterbi of the composition), scored one value per document
  and per token (:mod:`fstcrf.experiments.seminars`).
- :func:`paired_tests` (paired t-test and sign test over splits),
  :func:`header_counts` (how often a header word such as "Host:" is an
  entity under each decoding) and :func:`learning_curve`.

Labels are [documents][sentences][tokens] throughout, as the seminar scorers
take them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from collections.abc import Sequence

import numpy as np

from fstcrf.model.compose import JointModel, compose
from fstcrf.corpus.conll import Corpus, Sentence, read_conll
from fstcrf.errors import FstcrfError
from fstcrf.corpus.evaluate import mcnemar, score_labels
from fstcrf.features.template import parse_template
from fstcrf.model.chain import ChainCRF
from fstcrf.corpus.schemes import convert
from fstcrf.experiments.seminars import FIELDS, document_scores, mean_f1, read_seminars, token_scores

logger = logging.getLogger(__name__)

#: The systems compared, in table order.
SYSTEMS = ("none", "cascade", "joint")
#: The score columns: the four fields and their mean.
SCORE_FIELDS = ("speaker", "location", "stime", "etime", "overall")
#: CoNLL-2003's columns; its NER column is IOB1 and is read as IOB2.
CONLL2003_COLUMNS = ("word", "pos", "chunk", "ner")
#: NER training settings, chosen on eng.testa (docs/composition.md).
NER_SETTINGS = {"sigma": 10.0, "max_iter": 150}
#: Seminar CRF settings, shared by the reading and the plain model.
SEMINAR_SETTINGS = {"sigma": 10.0, "max_iter": 100}
#: The NER component scales tried on the dev side of each split (the seminar component's is 1).
NER_SCALES = (0.25, 0.5, 1.0, 2.0)
#: A header word: a line's first token ending in a colon ("Host:", "Who:").
HEADER_WORD = re.compile(r"[^\W\d_][\w-]*:")

Document = list[Sentence]
Labels = list[list[list[str]]]


def _shipped_text(name: str) -> str:
    return (resources.files("fstcrf") / "templates" / name).read_text("utf-8")


def ner_template_text() -> str:
    """The word-only NER template (fstcrf/templates/seminar_ner.txt)."""
    return _shipped_text("seminar_ner.txt")


def seminar_template_text(reads_ner: bool) -> str:
    """The seminar template; with ``reads_ner`` the NER-reading conjunctions appended."""
    text = _shipped_text("seminar.txt")
    return text + _shipped_text("seminar_reads_ner.txt") if reads_ner else text


# -- the NER model ---------------------------------------------------------------
def read_conll2003(folder: str | os.PathLike) -> dict[str, Corpus]:
    """eng.train, eng.testa and eng.testb of ``folder``, the NER column rewritten in IOB2."""
    folder = Path(folder)
    corpora = {}
    for name in ("eng.train", "eng.testa", "eng.testb"):
        corpus = read_conll(folder / name, CONLL2003_COLUMNS)
        sentences = [sentence.with_column("ner", convert(sentence["ner"], "iob2")) for sentence in corpus]
        corpora[name] = Corpus(corpus.column_names, sentences)
    return corpora


def _ner_cache_key(folder: Path, settings: dict) -> str:
    """A digest of the NER template, ``settings`` and the CoNLL-2003 files."""
    digest = hashlib.sha256()
    digest.update(ner_template_text().encode())
    digest.update(json.dumps(settings, sort_keys=True).encode())
    for name in ("eng.train", "eng.testa", "eng.testb"):
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:16]


def default_cache() -> Path:
    """$FSTCRF_CACHE, else ~/.cache/fstcrf."""
    return Path(os.environ.get("FSTCRF_CACHE", Path.home() / ".cache" / "fstcrf"))


@dataclass
class NerModel:
    """The transfer NER CRF and its chunk F1 on eng.testa (dev) and eng.testb (test)."""

    model: ChainCRF
    dev_f1: float
    test_f1: float
    cached: bool


def ner_model(
    conll_folder: str | os.PathLike,
    cache: str | os.PathLike | None = None,
    threads: int = 2,
    max_iter: int = NER_SETTINGS["max_iter"],
) -> NerModel:
    """The word-only NER CRF trained on eng.train for ``max_iter`` L-BFGS iterations
    (the one kept by eng.testa F1), loaded from ``cache`` (default
    :func:`default_cache`) when trained before on the same files, template and settings."""
    conll_folder = Path(conll_folder)
    for name in ("eng.train", "eng.testa", "eng.testb"):
        if not (conll_folder / name).is_file():
            raise FstcrfError(
                f"{conll_folder / name}: missing; give the folder holding CoNLL-2003's "
                "eng.train, eng.testa and eng.testb"
            )
    cache = Path(cache) if cache is not None else default_cache()
    settings = {**NER_SETTINGS, "max_iter": max_iter}
    key = _ner_cache_key(conll_folder, settings)
    model_path, scores_path = cache / f"transfer-ner-{key}.model", cache / f"transfer-ner-{key}.json"
    if model_path.is_file() and scores_path.is_file():
        scores = json.loads(scores_path.read_text())
        model = ChainCRF.load(model_path)
        model.threads = threads
        return NerModel(model, scores["dev_f1"], scores["test_f1"], cached=True)
    corpora = read_conll2003(conll_folder)
    model = ChainCRF(
        parse_template(ner_template_text(), "fstcrf/templates/seminar_ner.txt"), threads=threads, **settings
    )
    model.fit(corpora["eng.train"], "ner", dev=corpora["eng.testa"])
    dev_f1, test_f1 = (
        score_labels(corpora[name].column("ner"), model.predict(corpora[name])).primary
        for name in ("eng.testa", "eng.testb")
    )
    cache.mkdir(parents=True, exist_ok=True)
    model.save(model_path)
    temporary = scores_path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps({"dev_f1": dev_f1, "test_f1": test_f1}))
    os.replace(temporary, scores_path)
    return NerModel(model, dev_f1, test_f1, cached=False)


# -- seminar data --------------------------------------------------------------
def seminar_documents(folder: str | os.PathLike) -> tuple[list[Document], list[Path]]:
    """The announcements with text under ``folder`` (sentences with columns word,
    field) and their paths."""
    documents = [document for document in read_seminars(folder) if document.sentences]
    return [document.sentences for document in documents], [document.path for document in documents]


def flatten_documents(documents: Sequence[Document]) -> list[Sentence]:
    return [sentence for document in documents for sentence in document]


def regroup_documents(flat: Sequence, documents: Sequence[Document]) -> list[list]:
    """Per-sentence items [sentences] grouped as ``documents`` are."""
    grouped, position = [], 0
    for document in documents:
        grouped.append(list(flat[position : position + len(document)]))
        position += len(document)
    return grouped


def with_ner(documents: Sequence[Document], model: ChainCRF) -> list[Document]:
    """``documents`` with the NER model's 1-best labels in a column ``ner``."""
    flat = flatten_documents(documents)
    labels = model.predict(flat)
    return regroup_documents([sentence.with_column("ner", tags) for sentence, tags in zip(flat, labels)], documents)


def with_ner_samples(documents: Sequence[Document], model: ChainCRF, samples: int, seed: int = 0) -> list[Document]:
    """Each document ``samples`` times, the ``ner`` column of copy k drawn exactly from
    the NER model's p(y | x) (a training set that shows the reading model the
    NER model's uncertainty instead of its 1-best alone)."""
    flat = flatten_documents(documents)
    drawn, _ = model.sample(flat, samples, seed=seed)
    copies = []
    for labels in drawn:
        copies += regroup_documents(
            [sentence.with_column("ner", tags) for sentence, tags in zip(flat, labels)], documents
        )
    return copies


def column(documents: Sequence[Document], name: str) -> Labels:
    """One column of every sentence, [documents][sentences][tokens]."""
    return [[sentence[name] for sentence in document] for document in documents]


# -- splits ----------------------------------------------------------------------
@dataclass(frozen=True)
class Split:
    """Document indices of a training and a test side."""

    name: str
    train: tuple[int, ...]
    test: tuple[int, ...]


def random_splits(num_documents: int, splits: int, seed: int = 0) -> list[Split]:
    """``splits`` random halves: split i permutes the documents with the generator
    seeded by (seed, i) and trains on the first floor(n / 2)."""
    if num_documents < 2:
        raise FstcrfError(f"random splits need at least 2 documents, got {num_documents}")
    result = []
    for index in range(splits):
        order = np.random.default_rng([seed, index]).permutation(num_documents)
        half = num_documents // 2
        result.append(
            Split(f"random {index}", tuple(sorted(order[:half].tolist())), tuple(sorted(order[half:].tolist())))
        )
    return result


def upstream_split(paths: Sequence[Path]) -> Split:
    """The upstream split: documents under a folder named training/ against the rest."""
    train = tuple(i for i, path in enumerate(paths) if path.parent.name == "training")
    test = tuple(i for i in range(len(paths)) if i not in set(train))
    if not train or not test:
        raise FstcrfError("the upstream split needs announcements under training/ and test/")
    return Split("upstream", train, test)


def dev_side(split: Split, fraction: float = 0.25, seed: int = 0) -> Split:
    """The training side of ``split`` cut into a smaller training side and a dev
    side of ``fraction`` of its documents (seeded), for choosing settings."""
    order = np.random.default_rng([seed, len(split.train)]).permutation(len(split.train))
    held = max(1, round(fraction * len(split.train)))
    documents = np.array(split.train)
    return Split(
        f"{split.name} dev",
        tuple(sorted(documents[order[held:]].tolist())),
        tuple(sorted(documents[order[:held]].tolist())),
    )


def pick_documents(documents: Sequence[Document], indices: Sequence[int]) -> list[Document]:
    return [documents[i] for i in indices]


# -- the systems ------------------------------------------------------------------
def train_seminar(
    documents: Sequence[Document], reads_ner: bool, threads: int = 2, max_iter: int = SEMINAR_SETTINGS["max_iter"]
) -> ChainCRF:
    """The seminar CRF on ``documents`` (column field), trained for ``max_iter`` L-BFGS
    iterations; with ``reads_ner`` it reads the column ``ner`` (the NER model's
    predictions) at the same token."""
    template = parse_template(seminar_template_text(reads_ner), "fstcrf/templates/seminar.txt")
    settings = {**SEMINAR_SETTINGS, "max_iter": max_iter}
    model = ChainCRF(template, reads="ner" if reads_ner else None, threads=threads, **settings)
    sentences = flatten_documents(documents)
    return model.fit(Corpus(sentences[0].column_names, sentences), "field")


def scores(words: Labels, gold: Labels, predicted: Labels) -> dict[str, float]:
    """Document-level F1 per field and "overall" (their mean), in percent."""
    per_field = document_scores(words, gold, predicted)
    return {**{name: per_field[name].f1 for name in FIELDS}, "overall": mean_f1(per_field)}


def per_token_scores(gold: Labels, predicted: Labels) -> dict[str, float]:
    """Per-token F1 per field and "overall", in percent."""
    per_field = token_scores(gold, predicted)
    return {**{name: per_field[name].f1 for name in FIELDS}, "overall": mean_f1(per_field)}


@dataclass
class Decoded:
    """The labels [documents][sentences][tokens] of one decoding of test documents:
    ``fields`` always, ``ner`` for the composed systems; and its seconds."""

    fields: Labels
    ner: Labels | None
    seconds: float


def decode_joint(joint: JointModel, documents: Sequence[Document], mode: str) -> Decoded:
    """Decode ``documents`` with the composed model (mode "joint" or "cascade")."""
    flat = flatten_documents(documents)
    started = time.perf_counter()
    ner, fields = joint.predict(flat, mode=mode)
    seconds = time.perf_counter() - started
    return Decoded(regroup_documents(fields, documents), regroup_documents(ner, documents), seconds)


def timed_decodings(joint: JointModel, documents: Sequence[Document], repeats: int = 2) -> dict[str, Decoded]:
    """Cascade and joint decodings of ``documents``, each run ``repeats`` times in
    alternating order; ``seconds`` is the fastest run of each."""
    runs: dict[str, list[Decoded]] = {"cascade": [], "joint": []}
    for repeat in range(repeats):
        for mode in ("cascade", "joint") if repeat % 2 == 0 else ("joint", "cascade"):
            runs[mode].append(decode_joint(joint, documents, mode))
    return {
        mode: Decoded(found[0].fields, found[0].ner, min(run.seconds for run in found)) for mode, found in runs.items()
    }


def train_reader(
    ner: ChainCRF,
    documents: Sequence[Document],
    ner_samples: int = 0,
    threads: int = 2,
    seed: int = 0,
    max_iter: int = SEMINAR_SETTINGS["max_iter"],
) -> ChainCRF:
    """The seminar CRF reading the ``ner`` column of ``documents`` (the NER 1-best),
    or, with ``ner_samples`` > 0, reading that many NER samples per document
    (:func:`with_ner_samples`); ``max_iter``: see :func:`train_seminar`."""
    if ner_samples:
        documents = with_ner_samples(documents, ner, ner_samples, seed)
    return train_seminar(documents, reads_ner=True, threads=threads, max_iter=max_iter)


def choose_ner_scale(
    ner: ChainCRF,
    documents: Sequence[Document],
    split: Split,
    threads: int = 2,
    seed: int = 0,
    ner_samples: int = 0,
    max_iter: int = SEMINAR_SETTINGS["max_iter"],
) -> tuple[float, dict[float, float]]:
    """The NER component scale (of :data:`NER_SCALES`) whose joint decoding scores the
    best overall F1 on the dev side of ``split``'s training documents (ties go
    to 1), and the dev F1 of every scale.  ``documents`` carry the ``ner`` column."""
    side = dev_side(split, seed=seed)
    reader = train_reader(ner, pick_documents(documents, side.train), ner_samples, threads, seed, max_iter)
    dev = pick_documents(documents, side.test)
    dev_f1 = {}
    for scale in NER_SCALES:
        decoded = decode_joint(compose([ner, reader], threads=threads, scales=[scale, 1.0]), dev, "joint")
        dev_f1[scale] = scores(column(dev, "word"), column(dev, "field"), decoded.fields)["overall"]
    best = max(NER_SCALES, key=lambda scale: (dev_f1[scale], scale == 1.0))
    return best, dev_f1


@dataclass
class SplitResult:
    """One split: ``f1`` and ``token_f1`` [system][field] (percent), McNemar's test
    of joint against cascade on the field labels, the decoding seconds of joint
    and cascade, the NER scale used and the header counts."""

    name: str
    f1: dict[str, dict[str, float]]
    token_f1: dict[str, dict[str, float]]
    mcnemar_p: float
    seconds: dict[str, float]
    ner_scale: float
    dev_f1: dict[float, float]
    headers: HeaderCounts


def run_split(
    ner: ChainCRF,
    documents: Sequence[Document],
    split: Split,
    threads: int = 2,
    choose_scale: bool = True,
    seed: int = 0,
    ner_samples: int = 0,
    max_iter: int = SEMINAR_SETTINGS["max_iter"],
) -> SplitResult:
    """Train and decode the three systems on one split.  ``documents`` carry the
    ``ner`` column (the NER model's 1-best labels).  With ``choose_scale`` the
    NER component's scale is chosen on the dev side of the training documents
    (:func:`choose_ner_scale`), else it is 1; ``ner_samples``: see :func:`train_reader`;
    the seminar CRFs train for ``max_iter`` L-BFGS iterations."""
    train, test = pick_documents(documents, split.train), pick_documents(documents, split.test)
    scale, dev_f1 = (
        choose_ner_scale(ner, documents, split, threads, seed, ner_samples, max_iter) if choose_scale else (1.0, {})
    )
    plain = train_seminar(train, reads_ner=False, threads=threads, max_iter=max_iter)
    reader = train_reader(ner, train, ner_samples, threads, seed, max_iter)
    joint = compose([ner, reader], threads=threads, scales=[scale, 1.0])
    flat_test = flatten_documents(test)
    decoded = {
        "none": Decoded(regroup_documents(plain.predict(flat_test), test), None, 0.0),
        **timed_decodings(joint, test),
    }
    words, gold = column(test, "word"), column(test, "field")
    flat_gold = [tags for document in gold for tags in document]
    flat = {system: [tags for document in result.fields for tags in document] for system, result in decoded.items()}
    return SplitResult(
        name=split.name,
        f1={system: scores(words, gold, result.fields) for system, result in decoded.items()},
        token_f1={system: per_token_scores(gold, result.fields) for system, result in decoded.items()},
        mcnemar_p=mcnemar(flat_gold, flat["cascade"], flat["joint"]).p_value,
        seconds={system: decoded[system].seconds for system in ("cascade", "joint")},
        ner_scale=scale,
        dev_f1=dev_f1,
        headers=header_counts(words, gold, decoded["cascade"].ner, decoded["joint"].ner),
    )


# -- analysis ---------------------------------------------------------------------
@dataclass
class HeaderCounts:
    """Header words (a line's first token ending in ":") and the NER labels the two
    decodings give them: ``tokens`` header words, ``entity`` [decoding] how many are
    inside an entity, ``by_word`` [decoding] the same per lower-cased header word;
    ``changed`` tokens whose NER label differs between the decodings, ``changed_in_field``
    those of them inside a gold seminar mention."""

    tokens: int = 0
    entity: Counter = field(default_factory=Counter)
    by_word: dict[str, Counter] = field(default_factory=lambda: {"cascade": Counter(), "joint": Counter()})
    header_totals: Counter = field(default_factory=Counter)
    changed: int = 0
    changed_in_field: int = 0

    def add(self, other: HeaderCounts) -> HeaderCounts:
        """The sum of two counts (a new object)."""
        return HeaderCounts(
            self.tokens + other.tokens,
            self.entity + other.entity,
            {name: self.by_word[name] + other.by_word[name] for name in self.by_word},
            self.header_totals + other.header_totals,
            self.changed + other.changed,
            self.changed_in_field + other.changed_in_field,
        )


def header_counts(words: Labels, gold: Labels, cascade_ner: Labels, joint_ner: Labels) -> HeaderCounts:
    """How often header words are tagged as entities by the cascade's NER labels
    and by the joint decoding's, and how many NER labels the joint decoding changed."""
    counts = HeaderCounts()
    for document in zip(words, gold, cascade_ner, joint_ner):
        for sentence_words, fields, cascade, joint in zip(*document):
            if HEADER_WORD.fullmatch(sentence_words[0]):
                head = sentence_words[0].lower()
                counts.tokens += 1
                counts.header_totals[head] += 1
                for name, tags in (("cascade", cascade), ("joint", joint)):
                    if tags[0] != "O":
                        counts.entity[name] += 1
                        counts.by_word[name][head] += 1
            for tag_cascade, tag_joint, gold_field in zip(cascade, joint, fields):
                if tag_cascade != tag_joint:
                    counts.changed += 1
                    counts.changed_in_field += gold_field != "O"
    return counts


@dataclass(frozen=True)
class PairedTest:
    """System ``better`` against ``worse`` on one field over splits: the mean
    difference of F1, the paired t-test's and the sign test's two-sided p."""

    mean_difference: float
    t_p: float
    sign_p: float
    wins: int
    losses: int


def paired_tests(results: Sequence[SplitResult], better: str, worse: str) -> dict[str, PairedTest]:
    """Paired tests per field of :data:`SCORE_FIELDS` over the splits."""
    from scipy import stats

    tests = {}
    for name in SCORE_FIELDS:
        differences = np.array([result.f1[better][name] - result.f1[worse][name] for result in results])
        wins, losses = int((differences > 0).sum()), int((differences < 0).sum())
        if len(differences) > 1 and np.ptp(differences) > 0:
            t_p = float(
                stats.ttest_rel([r.f1[better][name] for r in results], [r.f1[worse][name] for r in results]).pvalue
            )
        else:
            t_p = 1.0 if not differences.any() else math.nan
        sign_p = float(stats.binomtest(wins, wins + losses, 0.5).pvalue) if wins + losses else 1.0
        tests[name] = PairedTest(float(differences.mean()), t_p, sign_p, wins, losses)
    return tests


def learning_curve(
    ner: ChainCRF,
    documents: Sequence[Document],
    split: Split,
    fractions: Sequence[float] = (0.25, 0.5, 0.75, 1.0),
    threads: int = 2,
    ner_scale: float = 1.0,
    seed: int = 0,
    ner_samples: int = 0,
    max_iter: int = SEMINAR_SETTINGS["max_iter"],
) -> dict[float, dict[str, dict[str, float]]]:
    """F1 [fraction][system][field] when the seminar CRFs train on the first
    ``fraction`` of a seeded permutation of ``split``'s training documents,
    tested on its whole test side.  ``documents`` carry the ``ner`` column."""
    order = np.random.default_rng([seed, len(split.train), 1]).permutation(len(split.train))
    test = pick_documents(documents, split.test)
    words, gold = column(test, "word"), column(test, "field")
    curve = {}
    for fraction in fractions:
        chosen = [split.train[i] for i in sorted(order[: max(1, round(fraction * len(split.train)))])]
        train = pick_documents(documents, chosen)
        plain = train_seminar(train, reads_ner=False, threads=threads, max_iter=max_iter)
        joint = compose(
            [ner, train_reader(ner, train, ner_samples, threads, seed, max_iter)],
            threads=threads,
            scales=[ner_scale, 1.0],
        )
        predicted = {
            "none": regroup_documents(plain.predict(flatten_documents(test)), test),
            "cascade": decode_joint(joint, test, "cascade").fields,
            "joint": decode_joint(joint, test, "joint").fields,
        }
        curve[fraction] = {system: scores(words, gold, labels) for system, labels in predicted.items()}
    return curve
