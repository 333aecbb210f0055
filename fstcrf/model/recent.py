"""A model's potentials of its last small batch, kept for the next call on the same
sentences.

A caller that wants a sentence's F1-optimal labels and then the probability of each
of their entities (``fstcrf tag --entity-probabilities``, a served request, a
pipeline component) calls :meth:`~fstcrf.model.ChainCRF.predict_mbr` and then
:meth:`~fstcrf.model.ChainCRF.span_probabilities` on the same sentences: both read
the potentials of those sentences, the features of which cost more than the rest of
a sentence's decoding.  The second call takes them from the first when the batch is
small (a sentence or a few: a batch's features are a small share of its work), its
sentences equal those of the first call, and the model's fitted extractor, feature
dictionary and weights are the same objects (weights that can be written in place,
a model being trained, get their potentials made again from the kept encoding).
A small batch the model's tagging plan takes gets its potentials from the plan's one
kernel call (:meth:`~fstcrf.model.tagging.TaggingPlan.potentials`) instead of the
encoding and scoring steps: the same emissions, bit for bit.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from fstcrf.corpus.conll import Sentence
from fstcrf.engine.inference import Potentials
from fstcrf.features.encoding import EncodedSentences
from fstcrf.model.tagging import tagging_plan

#: A batch of at most this many tokens is kept (a sentence or a few).
KEPT_TOKENS = 512


@dataclass(frozen=True)
class _Kept:
    """One model's last small batch: the fitted objects its potentials were made of, a
    copy of its sentences, their encoding (None when the tagging plan made the
    potentials in one kernel call) and potentials."""

    made_of: tuple[object, object, object]
    sentences: list[Sentence]
    encoded: EncodedSentences | None
    potentials: Potentials


#: Per thread (a server's threads tag different sentences), per model: its last small batch.
_threads = threading.local()


def recent_potentials(model, sentences: Sequence[Sentence]) -> Potentials:
    """The potentials of ``sentences`` on ``model``'s decoding topology, as
    ``model.decoding_potentials`` makes them, taken from the model's previous call on
    this thread when it was on equal sentences (see the module doc)."""
    if sum(map(len, sentences)) > KEPT_TOKENS:
        return model.decoding_potentials(sentences)[1]
    made_of = (model.extractor_, model.features_, model.weights_)
    if not hasattr(_threads, "kept"):
        _threads.kept = weakref.WeakKeyDictionary()
    kept = _threads.kept.get(model)
    encoded = None
    if kept is not None and all(a is b for a, b in zip(kept.made_of, made_of)) and kept.sentences == list(sentences):
        if not model.weights_.flags.writeable:
            return kept.potentials
        encoded = kept.encoded
    potentials = tagging_plan(model).potentials(sentences) if encoded is None else None
    if potentials is None:  # a batch the tagging plan does not take: encoded, then scored
        encoded = encoded if encoded is not None else model.encode(sentences)
        potentials = model.encoded_potentials(encoded)[0]
    copies = [Sentence.of_lists(dict(_copied(sentence)), None, sentence.docstart_lines) for sentence in sentences]
    _threads.kept[model] = _Kept(made_of, copies, encoded, potentials)
    return potentials


def _copied(sentence: Sentence):
    """(name, a copy of the values) of each of the sentence's columns."""
    return ((name, list(values)) for name, values in sentence.columns.items())
