"""The two-stage alternative to non-local inference (Krishnan & Manning 2006).

A first chain CRF tags the input; a second chain CRF reads, besides the usual
columns, six columns of document and corpus statistics of the first one's
labels, and gives the final labels.  The second stage is trained on
jackknifed first-stage output (:func:`fstcrf.model.compose.jackknife`), so it learns
how far to trust the kind of labels the first stage gives to unseen text.

The majority columns (:data:`MAJORITY_COLUMNS`), for a token t of a sentence in
document D of corpus C (C: all sentences given together, e.g. one file).  The
first stage's labels are read as entities (first token, last token, type) with
:func:`fstcrf.corpus.schemes.read_chunks`; a token's type is its entity's type, or
"O" outside every entity.

* ``token_doc`` / ``token_corpus``: the majority type of the *other* tokens of
  D / C with the same word (case-sensitive), "O" counting as a type; "none"
  when the word occurs nowhere else.
* ``entity_doc`` / ``entity_corpus``: for a token inside an entity e, the
  majority type of the *other* entities of D / C with exactly e's words;
  "none" when there is no such entity or t is outside every entity.
* ``superentity_doc`` / ``superentity_corpus``: for a token inside an entity e,
  the majority type of the entities of D / C whose words contain e's words as a
  proper contiguous part ("Bank of England" for "England"), each entity voting
  once; "none" when there is none or t is outside every entity.

Ties go to an entity type over "O", then to the alphabetically first type, so
the columns depend on the labels only, never on the order of the sentences.

Beyond the paper (:data:`BEYOND_PAPER_COLUMNS`), majorities that compare words
lower-cased, so that a name in an all-capitals headline ("JAPAN") meets its
occurrences in the text ("Japan"), and the first stage's own label of the token:

* ``token_doc_lower`` / ``token_corpus_lower``: as ``token_doc`` /
  ``token_corpus``, the words compared lower-cased;
* ``entity_doc_lower`` / ``entity_corpus_lower``: as ``entity_doc`` /
  ``entity_corpus``, the entities' words compared lower-cased;
* ``first_stage``: the first stage's label (as given, e.g. "B-PER").

With ``consistency_scale`` the tagger also carries Finkel et al.'s
label-consistency penalties (:mod:`fstcrf.document.consistency`), estimated
from the training documents, on its second stage, and
:meth:`TwoStageTagger.predict_nonlocal` decodes the second stage under them
(:func:`fstcrf.document.decode.decode_documents`): the combination that
``fstcrf train --consistency`` trains by default.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from importlib import resources
from collections.abc import Iterable, Iterator, Sequence

from fstcrf.model.compose import jackknife
from fstcrf.corpus.conll import Corpus, Sentence, as_corpus, as_sentences
from fstcrf.errors import ArgumentTypeError, FstcrfError, ModelFileError, PenaltyError, ShapeError
from fstcrf.features.defaults import second_stage_files
from fstcrf.features.template import Template, parse_template
from fstcrf.features.template import resolve_template
from fstcrf.model.chain import ChainCRF
from fstcrf.model.file import TWO_STAGE_KIND, arrays_under, header_field, read_kind, write_container
from fstcrf.progress import Progress
from fstcrf.corpus.schemes import read_chunks
from fstcrf.document.annealing import Annealed
from fstcrf.document.casing import CASING_COLUMNS, casing_columns
from fstcrf.document.consistency import is_penalty_scale, proper_parts
from fstcrf.document.decode import decode_documents, estimate_consistency, model_factors
from fstcrf.document.documents import document_spans
from fstcrf.document.settings import DEFAULT_BLOCK_SIZE, DEFAULT_SWEEPS, DEFAULT_T_END, DEFAULT_T_START

logger = logging.getLogger(__name__)

#: Krishnan & Manning's six majority columns, which every second stage reads.
MAJORITY_COLUMNS = ("token_doc", "token_corpus", "entity_doc", "entity_corpus", "superentity_doc", "superentity_corpus")
#: The majorities of lower-cased words and the first stage's own label (see the module doc).
BEYOND_PAPER_COLUMNS = (
    "token_doc_lower",
    "token_corpus_lower",
    "entity_doc_lower",
    "entity_corpus_lower",
    "first_stage",
)
#: The columns :func:`majority_columns` adds, in this order.
LABEL_COLUMNS = MAJORITY_COLUMNS + BEYOND_PAPER_COLUMNS
#: The columns :meth:`TwoStageTagger.with_majorities` adds: the label columns, then
#: the casing columns of :mod:`fstcrf.document.casing`.
SECOND_STAGE_COLUMNS = LABEL_COLUMNS + CASING_COLUMNS
#: The value of a majority column without any vote.
NO_VOTE = "none"
#: The type of a token outside every entity.
OUTSIDE = "O"
#: The two stages' names in a two-stage model file (each stage's arrays are prefixed "NAME.").
STAGES = ("first", "second")


def _majority(votes: dict[str, int], own: str | None = None) -> str:
    """The type with most votes, leaving out one vote for ``own`` (ties: an entity type
    before "O", then alphabetical); NO_VOTE without any vote."""
    best = None
    for label, count in votes.items():
        count -= label == own
        if count > 0 and (best is None or (-count, label == OUTSIDE, label) < best):
            best = (-count, label == OUTSIDE, label)
    return NO_VOTE if best is None else best[2]


def _vote(table: dict, key, label: str) -> None:
    votes = table.setdefault(key, {})
    votes[label] = votes.get(label, 0) + 1


class _Votes:
    """The first-stage votes of a group of sentences (one document or the whole corpus):
    per word, per entity's words and per proper part of an entity's words, the count
    of each type; the same per lower-cased word and lower-cased entity words."""

    def __init__(self, words: Iterable[list[str]], entities: Iterable[list[tuple[int, int, str]]]):
        self.token: dict[str, dict[str, int]] = {}
        self.token_lower: dict[str, dict[str, int]] = {}
        self.entity: dict[tuple[str, ...], dict[str, int]] = {}
        self.entity_lower: dict[tuple[str, ...], dict[str, int]] = {}
        self.superentity: dict[tuple[str, ...], dict[str, int]] = {}
        for sentence_words, sentence_entities in zip(words, entities):
            for word, token_type in zip(sentence_words, _token_types(sentence_entities, len(sentence_words))):
                _vote(self.token, word, token_type)
                _vote(self.token_lower, word.lower(), token_type)
            for first, last, entity_type in sentence_entities:
                entity_words = tuple(sentence_words[first : last + 1])
                _vote(self.entity, entity_words, entity_type)
                _vote(self.entity_lower, _lowered(entity_words), entity_type)
                for part in proper_parts(entity_words):
                    _vote(self.superentity, part, entity_type)

    def token_columns(self, words: list[str], types: list[str]) -> list[str]:
        """token majority [T] of one sentence's tokens, each leaving out its own vote."""
        return [_majority(self.token[word], own) for word, own in zip(words, types)]

    def token_lower_columns(self, words: list[str], types: list[str]) -> list[str]:
        """token majority [T] of the lower-cased words, each token leaving out its own vote."""
        return [_majority(self.token_lower[word.lower()], own) for word, own in zip(words, types)]

    def entity_columns(
        self, words: list[str], entities: list[tuple[int, int, str]]
    ) -> tuple[list[str], list[str], list[str]]:
        """entity, superentity and lower-cased entity majorities [T] of one sentence (each
        entity leaves out its own vote)."""
        entity_column = [NO_VOTE] * len(words)
        superentity_column = [NO_VOTE] * len(words)
        lower_column = [NO_VOTE] * len(words)
        for first, last, entity_type in entities:
            entity_words = tuple(words[first : last + 1])
            span = last + 1 - first
            entity_column[first : last + 1] = [_majority(self.entity[entity_words], entity_type)] * span
            superentity_column[first : last + 1] = [_majority(self.superentity.get(entity_words, {}))] * span
            lower_column[first : last + 1] = [_majority(self.entity_lower[_lowered(entity_words)], entity_type)] * span
        return entity_column, superentity_column, lower_column


def _lowered(words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(word.lower() for word in words)


def _token_types(entities: list[tuple[int, int, str]], length: int) -> list[str]:
    types = [OUTSIDE] * length
    for first, last, entity_type in entities:
        types[first : last + 1] = [entity_type] * (last + 1 - first)
    return types


def majority_columns(
    sentences: Sequence[Sentence],
    labels: Sequence[Sequence[str]],
    spans: Sequence[tuple[int, int]],
    word_column: str = "word",
) -> list[Sentence]:
    """The sentences with the :data:`LABEL_COLUMNS` (see the module doc) computed from
    first-stage ``labels`` [B][T] (IOB2, or any scheme :func:`~fstcrf.corpus.schemes.read_chunks`
    reads) within the documents ``spans`` ([first, last) sentence ranges, as from
    :func:`~fstcrf.document.documents.document_spans`) and over all the sentences."""
    sentences = as_sentences(sentences, "majority_columns")
    if len(labels) != len(sentences):
        raise ShapeError(f"majority_columns: {len(sentences)} sentences but {len(labels)} label sequences")
    covered = [index for first, last in spans for index in range(first, last)]
    if covered != list(range(len(sentences))):
        raise FstcrfError(
            f"majority_columns: the document spans must cover sentences 0..{len(sentences) - 1} "
            f"in order, each once; got {list(spans)[:5]}..."
        )
    words = []
    for index, (sentence, sentence_labels) in enumerate(zip(sentences, labels)):
        sentence_words = sentence.values_of(word_column, index, "majority_columns")
        if len(sentence_labels) != len(sentence):
            raise ShapeError(
                f"majority_columns: sentence {index} has {len(sentence)} tokens but {len(sentence_labels)} labels"
            )
        words.append(sentence_words)
    entities = [read_chunks(sentence_labels) for sentence_labels in labels]
    corpus_votes = _Votes(words, entities)
    extended = []
    for first, last in spans:
        document_votes = _Votes(words[first:last], entities[first:last])
        for index in range(first, last):
            types = _token_types(entities[index], len(words[index]))
            columns = {"first_stage": list(labels[index])}
            for level, votes in (("doc", document_votes), ("corpus", corpus_votes)):
                columns[f"token_{level}"] = votes.token_columns(words[index], types)
                columns[f"token_{level}_lower"] = votes.token_lower_columns(words[index], types)
                entity, superentity, lower = votes.entity_columns(words[index], entities[index])
                columns[f"entity_{level}"], columns[f"superentity_{level}"] = entity, superentity
                columns[f"entity_{level}_lower"] = lower
            extended.append(sentences[index].with_columns({name: columns[name] for name in LABEL_COLUMNS}))
    return extended


@contextmanager
def _errors_naming(caller: str) -> Iterator[None]:
    """A stage's errors that name its ChainCRF method ("ChainCRF.predict: sentence 3:
    ...") name ``caller``, the TwoStageTagger method called, instead."""
    try:
        yield
    except FstcrfError as error:
        called, separator, rest = str(error).partition(": ")
        if not (separator and called.startswith("ChainCRF.")):
            raise
        renamed = type(error)(f"{caller}: {rest}")
        vars(renamed).update(vars(error))
        raise renamed from None


def second_stage_template(first_template: Template | str) -> Template:
    """The first stage's template (a Template, text or shipped name) followed by the
    predicates of the second-stage files chosen for it
    (:func:`fstcrf.features.defaults.second_stage_files`: the majority columns and,
    for some shipped templates, the casing columns)."""
    first = resolve_template(first_template)
    files = second_stage_files(first_template)
    folder = resources.files("fstcrf") / "templates"
    extra = "".join((folder / name).read_text("utf-8") for name in files)
    source = " + ".join([first.source, *(f"fstcrf/templates/{name}" for name in files)])
    return parse_template(first.text + extra, source)


class TwoStageTagger:
    """Krishnan & Manning's two-stage tagger: a chain CRF, then a chain CRF that also
    reads the majority columns of the first one's labels (see the module doc).

    Args:
        first: an unfitted ChainCRF giving the first stage's settings (cloned).
        second: an unfitted ChainCRF giving the second stage's settings, its template
            reading the majority columns; None: ``first``'s settings with
            :func:`second_stage_template` of its template.
        folds: the jackknife's folds: the second stage trains on the labels that
            models trained on the other folds give to each fold.
        word_column: the column whose values the token majorities compare.
        progress: report the stages of ``fit`` on stderr.
        consistency_scale: None: no penalties; else ``fit`` also estimates the
            label-consistency penalties from the gold training documents and stores
            them at this scale on the second stage (``second_.consistency_``), which
            :meth:`predict_nonlocal` decodes under.
        block_size: tokens per block of :meth:`predict_nonlocal`'s block sampler
            (0: whole sentences).

    Learned attributes: ``first_`` and ``second_`` (the fitted ChainCRFs; ``first_``
    trained on all of the training corpus), ``target_`` and ``interrupted_``.

    Ctrl-C (or SIGTERM on the command line) during the first stage or the jackknife
    stops ``fit`` with KeyboardInterrupt, ``first_`` then holding the first stage if
    it was reached (its best weights so far); during the second stage, the second
    stage keeps its best weights so far and ``interrupted_`` is True.
    """

    def __init__(
        self,
        first: ChainCRF,
        second: ChainCRF | None = None,
        folds: int = 10,
        word_column: str = "word",
        progress: bool = True,
        consistency_scale: float | None = None,
        block_size: int = DEFAULT_BLOCK_SIZE,
    ):
        self.first = first
        self.second = second
        self.folds = folds
        self.word_column = word_column
        self.progress = progress
        self.consistency_scale = consistency_scale
        self.block_size = block_size

    def _check_params(self) -> None:
        for name in ("first", "second"):
            value = getattr(self, name)
            if not isinstance(value, ChainCRF) and not (name == "second" and value is None):
                raise ArgumentTypeError(
                    f"TwoStageTagger: {name} must be a ChainCRF"
                    f"{' or None' if name == 'second' else ''}, got {type(value).__name__}"
                )
        scale = self.consistency_scale
        if scale is not None and not is_penalty_scale(scale):
            raise PenaltyError(f"TwoStageTagger: consistency_scale must be None or a finite number >= 0, got {scale!r}")
        block = self.block_size
        if isinstance(block, bool) or not isinstance(block, int) or block < 0:
            raise ArgumentTypeError(f"TwoStageTagger: block_size must be an integer >= 0, got {block!r}")

    def _second_settings(self) -> ChainCRF:
        if self.second is not None:
            return ChainCRF(**self.second.get_params())
        params = self.first.get_params()
        return ChainCRF(**{**params, "template": second_stage_template(params["template"])})

    def with_majorities(self, corpus: Corpus, labels: Sequence[Sequence[str]], source: str) -> Corpus:
        """``corpus`` with the :data:`SECOND_STAGE_COLUMNS` of first-stage ``labels`` [B][T]
        within its documents (``source`` names it in errors)."""
        spans = document_spans(corpus.sentences, source)
        labelled = majority_columns(corpus.sentences, labels, spans, self.word_column)
        sentences = casing_columns(labelled, spans, self.word_column)
        names = corpus.column_names + tuple(name for name in SECOND_STAGE_COLUMNS if name not in corpus.column_names)
        return Corpus(names, sentences, corpus.path, corpus.separator, corpus.trailing_docstart_lines)

    def fit(
        self, corpus: Corpus | Sequence[Sentence], target: str = "ner", dev: Corpus | Sequence[Sentence] | None = None
    ) -> TwoStageTagger:
        """Train the first stage on ``corpus``, jackknife it over ``folds`` folds, and train
        the second stage on the gold ``target`` column with the jackknifed labels'
        majority columns (and estimate the penalties, with ``consistency_scale``).
        With ``dev`` each stage keeps its best iteration on it (the second stage
        reads the fitted first stage's labels of ``dev``)."""
        self._check_params()
        corpus = as_corpus(corpus, "TwoStageTagger.fit")
        dev = None if dev is None else as_corpus(dev, "TwoStageTagger.fit (dev)")
        settings = self.first.get_params()
        # counted in trainings of a stage (the jackknife's folds each one), for a fair ETA
        trainings = self.folds + 2
        with Progress(
            trainings, "two-stage training", unit="trainings", enabled=self.progress, interval=0.0
        ) as progress:
            logger.info("two-stage training, stage 1 of 3: the first stage on %d sentences", len(corpus))
            self.first_ = ChainCRF(**settings).fit(corpus, target=target, dev=dev)
            if self.first_.interrupted_:
                raise KeyboardInterrupt
            progress.update()
            logger.info("two-stage training, stage 2 of 3: the first stage's %d-fold jackknife", self.folds)
            held_out = jackknife(corpus, ChainCRF(**settings), target, folds=self.folds).column(target)
            progress.update(self.folds)
            logger.info("two-stage training, stage 3 of 3: the second stage")
            self.fit_second(corpus, self.first_, held_out, target, dev)
            progress.update()
        return self

    def fit_second(
        self,
        corpus: Corpus | Sequence[Sentence],
        first: ChainCRF,
        held_out: Sequence[Sequence[str]],
        target: str = "ner",
        dev: Corpus | Sequence[Sentence] | None = None,
    ) -> TwoStageTagger:
        """The second half of :meth:`fit`, for a first stage and jackknifed labels [B][T]
        of ``corpus`` computed before (so that several second stages can share them):
        train the second stage (with the penalties of ``corpus``, given
        ``consistency_scale``) and keep ``first`` as the first stage."""
        self._check_params()
        corpus = as_corpus(corpus, "TwoStageTagger.fit_second")
        dev = None if dev is None else as_corpus(dev, "TwoStageTagger.fit_second (dev)")
        train_second = self.with_majorities(corpus, held_out, "the training corpus")
        dev_second = None if dev is None else self.with_majorities(dev, first.predict(dev), "the dev corpus")
        second = self._second_settings().fit(train_second, target=target, dev=dev_second)
        if self.consistency_scale is not None:
            second.consistency_ = estimate_consistency(corpus, target, self.consistency_scale)
        self.first_, self.second_, self.target_ = first, second, target
        self.interrupted_ = second.interrupted_
        return self

    def predict_stages(
        self, corpus: Corpus | Sequence[Sentence], constraints=None
    ) -> tuple[list[list[str]], list[list[str]]]:
        """The first stage's and the final labels [B][T] of every sentence; under
        ``constraints`` (one Constraints or None per sentence) both stages keep to
        them, so the majorities the second stage reads already hold them."""
        return self._stages(corpus, "TwoStageTagger.predict_stages", constraints)

    def predict(self, corpus: Corpus | Sequence[Sentence], constraints=None) -> list[list[str]]:
        """The second stage's labels [B][T] of every sentence (under ``constraints``, see
        :meth:`predict_stages`)."""
        return self._stages(corpus, "TwoStageTagger.predict", constraints)[1]

    def _stages(
        self, corpus: Corpus | Sequence[Sentence], caller: str, constraints=None
    ) -> tuple[list[list[str]], list[list[str]]]:
        """:meth:`predict_stages`, its errors naming ``caller``."""
        first_labels, extended = self._second_input(corpus, caller, constraints)
        with _errors_naming(caller):
            return first_labels, self.second_.predict(extended, constraints=constraints)

    def predict_spans(self, corpus: Corpus | Sequence[Sentence], temperature: float = 1.0, constraints=None):
        """The second stage's entities of each sentence with their exact probabilities
        (:meth:`ChainCRF.predict_spans`), under ``constraints`` in both stages."""
        extended = self._second_input(corpus, "TwoStageTagger.predict_spans", constraints)[1]
        with _errors_naming("TwoStageTagger.predict_spans"):
            return self.second_.predict_spans(extended, temperature=temperature, constraints=constraints)

    def _second_input(
        self, corpus: Corpus | Sequence[Sentence], caller: str, constraints=None
    ) -> tuple[list[list[str]], Corpus]:
        """(the first stage's labels [B][T] of ``corpus``, ``corpus`` with their majority
        columns: what the second stage reads); errors name ``caller``."""
        if not hasattr(self, "second_"):
            raise FstcrfError("this TwoStageTagger is not fitted yet; call fit first")
        corpus = as_corpus(corpus, caller)
        with _errors_naming(caller):
            first_labels = self.first_.predict(corpus, constraints=constraints)
        return first_labels, self.with_majorities(corpus, first_labels, str(corpus.path or "the input"))

    def predict_mbr(
        self,
        corpus: Corpus | Sequence[Sentence],
        threshold: float | None = None,
        temperature: float | None = None,
        constraints=None,
    ) -> list[list[str]]:
        """The labels [B][T] whose entities maximise the second stage's expected entity F1
        over the batch (:meth:`ChainCRF.predict_mbr` of the second stage, tempered by
        ``temperature``, default the second stage's ``mbr_temperature_``, on the majority
        columns of the first stage's best labels), under ``constraints`` in both stages."""
        extended = self._second_input(corpus, "TwoStageTagger.predict_mbr", constraints)[1]
        with _errors_naming("TwoStageTagger.predict_mbr"):
            return self.second_.predict_mbr(extended, threshold, temperature=temperature, constraints=constraints)

    def fit_temperature(self, corpus: Corpus | Sequence[Sentence]) -> float:
        """The temperature that calibrates the second stage's probabilities on held-out
        ``corpus`` (:meth:`ChainCRF.fit_temperature`), read as at tagging time: with the
        majority columns of the first stage's labels."""
        return self.second_.fit_temperature(self._second_input(corpus, "TwoStageTagger.fit_temperature")[1])

    def predict_nonlocal(
        self,
        corpus: Corpus | Sequence[Sentence],
        sampler: str = "block",
        sweeps: int = DEFAULT_SWEEPS,
        t_start: float = DEFAULT_T_START,
        t_end: float = DEFAULT_T_END,
        block_size: int | None = None,
        seed: int = 0,
        scale: float | None = None,
        progress: bool = False,
    ) -> tuple[list[list[str]], Annealed | None]:
        """(labels [B][T], the annealing record) of :func:`~fstcrf.document.decode.decode_documents`
        of the second stage under its consistency penalties (at ``scale``; None: as
        stored), over the majority columns of the first stage's labels of ``corpus``
        (its documents, and all of it as the corpus); ``block_size`` None: the tagger's."""
        if not hasattr(self, "second_"):
            raise FstcrfError("this TwoStageTagger is not fitted yet; call fit first")
        if self.second_.consistency_ is None:
            raise FstcrfError(
                "this two-stage tagger stores no consistency penalties: train it with --consistency "
                "--document-method both (or TwoStageTagger(..., consistency_scale=...))"
            )
        extended = self._second_input(corpus, "TwoStageTagger.predict_nonlocal")[1]
        return decode_documents(
            self.second_,
            extended,
            model_factors(self.second_, ["consistency"], scale),
            sampler,
            sweeps,
            t_start,
            t_end,
            self.block_size if block_size is None else block_size,
            seed,
            progress,
        )

    @property
    def threads(self) -> int:
        """The threads both stages tag with."""
        return int(self.second_.threads)

    @threads.setter
    def threads(self, count: int) -> None:
        self.first_.threads = self.second_.threads = count

    # -- files -------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write both fitted stages and the tagger's settings to one file, atomically
        (the model container of :mod:`fstcrf.model.file`, format ``fstcrf-two-stage``)."""
        if not hasattr(self, "second_"):
            raise FstcrfError("this TwoStageTagger is not fitted yet; call fit before save")
        headers, arrays = {}, {}
        for name, model in zip(STAGES, (self.first_, self.second_)):
            headers[name], stage_arrays = model.to_payload()
            arrays.update({f"{name}.{key}": array for key, array in stage_arrays.items()})
        settings = {
            "target": self.target_,
            "folds": self.folds,
            "word_column": self.word_column,
            "consistency_scale": self.consistency_scale,
            "block_size": self.block_size,
        }
        write_container(path, TWO_STAGE_KIND, {"stages": headers, **settings}, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> TwoStageTagger:
        """Read a two-stage tagger written by :meth:`save` (see :func:`load_two_stage`)."""
        return load_two_stage(path)


def load_two_stage(path: str | os.PathLike) -> TwoStageTagger:
    """A fitted TwoStageTagger from a file written by :meth:`TwoStageTagger.save`
    (files written before ``consistency_scale`` and ``block_size`` were stored load
    with None and DEFAULT_BLOCK_SIZE); ModelFileError for a file of another kind or
    an inconsistent one."""
    where = os.fspath(path)
    header, arrays = read_kind(path, (TWO_STAGE_KIND,), "a two-stage tagger")
    headers = header_field(header, "stages", dict, where)
    stages = []
    for name in STAGES:
        prefix = f"{name}."
        own = arrays_under(arrays, prefix)
        stage_header = header_field(headers, name, dict, where)
        stages.append(ChainCRF.from_payload(stage_header, own, f"{where} ({name} stage)"))
    first, second = stages
    target = header_field(header, "target", str, where)
    _check_stages(first, second, target, where)
    tagger = TwoStageTagger(
        ChainCRF(**first.get_params()),
        ChainCRF(**second.get_params()),
        folds=header_field(header, "folds", int, where),
        word_column=header_field(header, "word_column", str, where),
        progress=False,
        consistency_scale=_stored_scale(header, where),
        block_size=header_field(header, "block_size", int, where) if "block_size" in header else DEFAULT_BLOCK_SIZE,
    )
    if tagger.block_size < 0:
        raise ModelFileError(f"{where}: the stored block size {tagger.block_size} is negative")
    if tagger.consistency_scale is not None and second.consistency_ is None:
        raise ModelFileError(
            f"{where}: the file stores a consistency scale but its second stage holds no consistency penalties"
        )
    tagger.first_, tagger.second_, tagger.target_ = first, second, target
    tagger.interrupted_ = second.interrupted_
    return tagger


def _stored_scale(header: dict, where: str) -> float | None:
    """The header's consistency_scale: None if absent or null, else a finite number >= 0."""
    scale = header.get("consistency_scale")
    if scale is None:
        return None
    if not is_penalty_scale(scale):
        raise ModelFileError(f"{where}: the stored consistency scale {scale!r} is not a finite number >= 0")
    return float(scale)


def _check_stages(first: ChainCRF, second: ChainCRF, target: str, where: str) -> None:
    """ModelFileError unless both stages predict ``target`` and the second reads the majority columns."""
    for name, stage in zip(STAGES, (first, second)):
        if stage.target_ != target:
            raise ModelFileError(
                f"{where}: the {name} stage predicts {stage.target_!r}, but the tagger's target is {target!r}"
            )
    missing = [name for name in MAJORITY_COLUMNS if name not in second.columns_]
    if missing:
        raise ModelFileError(
            f"{where}: the second stage was not trained on the majority columns ({', '.join(missing)} missing)"
        )


def two_stage_info(tagger: TwoStageTagger, path: str | os.PathLike | None = None) -> str:
    """What ``fstcrf info`` prints of a fitted two-stage tagger: its settings, then
    :func:`fstcrf.model.inspection.info_text` of each stage, indented; with ``path``,
    the file's size first."""
    from fstcrf.model.inspection import info_text

    lines = [] if path is None else [f"file size: {os.path.getsize(path)} bytes"]
    scale = tagger.consistency_scale
    lines += [
        f"two-stage tagger of {tagger.target_}: {tagger.folds}-fold jackknife, majorities of the "
        f"column {tagger.word_column!r}",
        "non-local decoding: "
        + (
            "none stored"
            if scale is None
            else f"consistency penalties at scale {scale:g}, blocks of {tagger.block_size}"
        ),
    ]
    for name, stage in zip(STAGES, (tagger.first_, tagger.second_)):
        lines.append(f"{name} stage")
        lines += ["  " + line for line in info_text(stage).splitlines()]
    return "\n".join(lines) + "\n"
