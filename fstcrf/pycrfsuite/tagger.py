"""python-crfsuite's ``Tagger`` over fstcrf models.

A Tagger opens an fstcrf model file (``Trainer.train`` writes them; any
:class:`~fstcrf.model.ChainCRF` trained over token dicts, ``template="attributes"``),
or model bytes, or (:meth:`Tagger.of_model`) a fitted ChainCRF in memory, which
is how ``fstcrf.sklearn.CRF.tagger_`` serves sklearn-crfsuite's users.  ``set``
reads and encodes one sequence of items; ``tag`` decodes it as
``ChainCRF.predict`` decodes a batch (emissions and Viterbi in one kernel call; the
items given to ``tag`` go to it as they are, with no Sentence made:
:meth:`~fstcrf.model.tagging.TaggingPlan.item_labels`), and ``probability`` and
``marginal`` answer from its scores, made on first use (the score of the labels
against log Z, and forward-backward's marginals, each computed once per sequence),
under the model's training grammar if it has one.

Errors are python-crfsuite's: a missing model file raises the OSError of
opening it, a file that is not an fstcrf model ModelFileError (a ValueError),
bad items FeatureTypeError (a TypeError) or FeatureValueError; with no model
open, ``labels``, ``tag``, ``set``, ``probability`` and ``marginal`` raise
TaggerStateError, which is both the ValueError python-crfsuite raises there and
the RuntimeError it raises from ``dump`` and ``info``; an unknown label raises
TaggerLabelError (a RuntimeError), labels that are not strings LabelTypeError
(a TypeError), a position out of range or labels of the wrong length a
ValueError.

A Tagger may be shared between threads: ``tag(xseq)`` tags in the calling
thread's buffers, and the sequence set last (with its scores) changes under a
lock, so ``probability`` and ``marginal`` answer for one sequence, the last one
set, whole.  A call that raises leaves the sequence set before it.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import sys
import tempfile
import threading
from typing import cast

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.corpus.labels import label_states
from fstcrf.engine.inference import Potentials, forward_backward, log_partition
from fstcrf.errors import (
    ArgumentTypeError,
    FstcrfError,
    LabelError,
    ModelFileError,
    ShapeError,
    TaggerLabelError,
    TaggerStateError,
)
from fstcrf.features.attributes import AttributeExtractor
from fstcrf.features.encoding import EncodedSentences
from fstcrf.files import write_atomically
from fstcrf.model.chain import ChainCRF, load_model
from fstcrf.model.tagging import TaggingPlan, tagging_plan
from fstcrf.pycrfsuite.dump import ParsedDump, dump_text, parsed_dump
from fstcrf.pycrfsuite.items import item_list, item_sentence, label_list
from fstcrf.pycrfsuite.params import integer_argument

#: The first bytes of a CRFsuite model file (python-crfsuite's format, which fstcrf does not read).
CRFSUITE_MAGIC = b"lCRF"


class Tagger:
    """Tags sequences of items with a model (python-crfsuite's Tagger; see the module doc)."""

    def __init__(self):
        #: held while the model or the sequence set last (and its scores) is read or changed
        self._lock = threading.Lock()
        self._model: ChainCRF | None = None
        self._size: int | None = None
        self._info: ParsedDump | None = None
        self._plan: TaggingPlan | None = None
        self._forget_sequence()

    @classmethod
    def of_model(cls, model: ChainCRF) -> Tagger:
        """An open Tagger over a fitted ChainCRF trained over token dicts."""
        tagger = cls()
        tagger._adopt(model, None, "the model", own=False)
        return tagger

    # -- opening and closing -------------------------------------------------
    def open(self, name) -> contextlib.closing:
        """Open the model file ``name``; returns a context manager that closes the tagger.
        A missing or unreadable file raises OSError, a file that is not an fstcrf model
        over token dicts ModelFileError."""
        if not isinstance(name, (str, bytes, os.PathLike)):
            raise ArgumentTypeError(f"the model file name must be a path, got {type(name).__name__}")
        path = os.fsdecode(name)
        with open(path, "rb") as stream:
            magic = stream.read(len(CRFSUITE_MAGIC))
        if magic == CRFSUITE_MAGIC:
            raise ModelFileError(
                f"{path}: this is a CRFsuite model file (python-crfsuite's format); fstcrf.pycrfsuite reads "
                "fstcrf model files: train it again with fstcrf.pycrfsuite.Trainer"
            )
        self._adopt(load_model(path), os.path.getsize(path), path)
        return contextlib.closing(self)

    def open_inmemory(self, value) -> contextlib.closing:
        """Open a model from its bytes (the content of a file ``Trainer.train`` wrote);
        returns a context manager that closes the tagger."""
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise ArgumentTypeError(f"open_inmemory takes the model's bytes, got {type(value).__name__}")
        data = bytes(value)
        if data[: len(CRFSUITE_MAGIC)] == CRFSUITE_MAGIC:
            raise ModelFileError(
                "these bytes are a CRFsuite model (python-crfsuite's format); fstcrf.pycrfsuite reads "
                "fstcrf models: train it again with fstcrf.pycrfsuite.Trainer"
            )
        handle, path = tempfile.mkstemp(prefix="fstcrf-model-")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            model = load_model(path)
        except ModelFileError as error:
            raise ModelFileError(f"the bytes given to open_inmemory are not an fstcrf model: {error}") from None
        finally:
            os.unlink(path)
        self._adopt(model, len(data), "the model bytes")
        return contextlib.closing(self)

    def close(self) -> None:
        """Close the model (a closed tagger may open another)."""
        with self._lock:
            self._model = self._size = self._info = self._plan = None
            self._forget_sequence()

    def _adopt(self, model: ChainCRF, size: int | None, where: str, own: bool = True) -> None:
        """Tag with ``model`` (``size`` bytes of a file, ``where`` named in errors); a
        model the tagger ``own``s (loaded from a file or bytes, never seen by another
        object, so never fitted again) keeps its tagging plan, made once here."""
        if not isinstance(getattr(model, "extractor_", None), AttributeExtractor):
            raise ModelFileError(
                f"{where}: this model reads CoNLL columns, not token feature dicts; tag with it through "
                "fstcrf tag or ChainCRF.predict (a Tagger needs a model trained with template='attributes')"
            )
        plan = tagging_plan(model) if own else None
        with self._lock:
            self._model, self._size, self._info = model, size, None
            #: the plan of a model this tagger owns (None: asked of tagging_plan at each call)
            self._plan = plan
            self._forget_sequence()

    def _forget_sequence(self) -> None:
        self._items: list | None = None  # the items of the sequence set last (None: none is)
        self._sentence: Sentence | None = None  # their Sentence, made on first use
        self._encoded: EncodedSentences | None = None
        self._potentials: Potentials | None = None
        self._best: list[str] | None = None
        self._log_z: float | None = None
        self._marginals: np.ndarray | None = None

    def _open_model(self) -> ChainCRF:
        if self._model is None:
            raise TaggerStateError(
                "The tagger is not opened: call Tagger.open(MODEL_FILE) or Tagger.open_inmemory(DATA) first"
            )
        return self._model

    # -- the current sequence ------------------------------------------------
    def set(self, xseq) -> None:
        """Read a sequence of items (a list, or an ItemSequence) for ``tag()``,
        ``probability`` and ``marginal``."""
        model = self._open_model()
        items = item_list(xseq, "xseq") or None
        sentence = None if items is None else item_sentence(items, "xseq", reads=model.reads)
        encoded = None if sentence is None else model.encode([sentence])
        with self._lock:
            self._forget_sequence()
            self._items, self._sentence, self._encoded = items, sentence, encoded

    def _current_encoded(self, model: ChainCRF) -> EncodedSentences:
        """The sequence set last, encoded (on first use: ``tag(xseq)`` encodes none);
        under the lock."""
        if self._encoded is None:
            if self._sentence is None:
                self._sentence = item_sentence(cast(list, self._items), "xseq", reads=model.reads)
            self._encoded = model.encode([self._sentence])
        return self._encoded

    def _sequence_potentials(self, model: ChainCRF) -> Potentials | None:
        """The potentials of the sequence set last on the decoding topology (made on
        first use: ``tag`` needs none), or None before any sequence is set; under the lock."""
        if self._potentials is None and self._items is not None:
            self._potentials = model.encoded_potentials(self._current_encoded(model))[0]
        return self._potentials

    def labels(self) -> list[str]:
        """The model's labels."""
        return list(self._open_model().labels_)

    def tag(self, xseq=None) -> list[str]:
        """The best label sequence [T] of ``xseq`` (read as by ``set``), or of the
        sequence set last when ``xseq`` is None.  Threads sharing a Tagger each get
        the labels of their own ``xseq`` (each tags in its own buffers); the sequence
        set last, which ``probability`` and ``marginal`` read, is the last one set."""
        model = self._open_model()
        if xseq is None:
            with self._lock:
                if self._items is None:
                    return []
                if self._best is None:
                    (self._best,) = model.decode(self._current_encoded(model))
                return list(self._best)
        # read as ``set`` reads it, tagged as predict tags it (encoded on asking for scores)
        best = items = sentence = None
        plan = self._plan if self._plan is not None else tagging_plan(model)
        if type(xseq) is list and xseq:  # read and tagged in one call when its items are dicts and lists
            items = list(xseq)
            best = plan.direct_labels(items)
        if best is None:
            items = item_list(xseq, "xseq") or None
            if items is not None:
                best = plan.item_labels(items)
                if best is None:
                    sentence = item_sentence(items, "xseq", reads=model.reads)
                    (best,) = model.predict([sentence])
        with self._lock:
            self._forget_sequence()
            self._items, self._sentence, self._best = items, sentence, best
        return [] if best is None else list(best)

    def probability(self, yseq) -> float:
        """p(yseq | the sequence set last): 0 for a label sequence the model's grammar
        forbids, and before any sequence is set."""
        model = self._open_model()
        labels = label_list(yseq, "yseq")
        with self._lock:
            pot = self._sequence_potentials(model)
            if pot is None:
                return 0.0
            if len(labels) != pot.num_tokens:
                raise ShapeError(f"The numbers of items and labels differ: |x| = {pot.num_tokens}, |y| = {len(labels)}")
            ids = np.array([self._label_index(model, label) for label in labels], dtype=np.int64)
            try:
                states = label_states(pot.topology, ids, pot.offsets)
            except LabelError:
                return 0.0
            if self._log_z is None:
                self._log_z = float(log_partition(pot)[0])
            return math.exp(float(pot.path_scores(states)[0, 0]) - self._log_z)

    def marginal(self, y, pos) -> float:
        """p(label ``y`` at position ``pos`` | the sequence set last); 0 before any
        sequence is set."""
        model = self._open_model()
        (label,) = label_list([y], "y")
        pos = integer_argument("the position", pos)
        with self._lock:
            pot = self._sequence_potentials(model)
            if pot is None:
                return 0.0
            index = self._label_index(model, label)
            if not 0 <= pos < pot.num_tokens:
                raise FstcrfError(f"The position {pos} is out of range of the {pot.num_tokens} items")
            if self._marginals is None:
                by_label = np.zeros((pot.topology.num_states, len(model.labels_)))
                by_label[np.arange(pot.topology.num_states), pot.topology.state_label] = 1.0
                node_marginals = cast(np.ndarray, forward_backward(pot, edge_counts=False).node_marginals)  # [T, S]
                self._marginals = node_marginals @ by_label  # [T, L]
            return float(self._marginals[pos, index])

    @staticmethod
    def _label_index(model: ChainCRF, label: str) -> int:
        if label not in model.labels_:
            raise TaggerLabelError(
                f"Failed to convert into label identifier: the model has no label {label!r} "
                f"(its labels are {', '.join(model.labels_)})"
            )
        return model.labels_.index(label)

    # -- the model's weights -------------------------------------------------
    def info(self) -> ParsedDump:
        """The model's labels, attributes and nonzero weights (see :mod:`fstcrf.pycrfsuite.dump`)."""
        if self._model is None:
            raise TaggerStateError("Tagger is closed: open a model before reading its weights")
        if self._info is None:
            if self._size is None:
                self._size = len(pickle.dumps(self._model, protocol=pickle.HIGHEST_PROTOCOL))
            self._info = parsed_dump(self._model, self._size)
        return self._info

    def dump(self, filename=None) -> None:
        """Write the model as ``crfsuite dump`` does to ``filename`` (atomically), or to
        standard output."""
        if self._model is None:
            raise TaggerStateError("Tagger is closed: open a model before dumping it")
        text = dump_text(self.info())
        if filename is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            write_atomically(filename, lambda stream: stream.write(text.encode("utf-8")))
