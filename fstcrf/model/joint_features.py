"""The features of a composition's components, extracted once, scored under any weights.

Joint decoding scores each block of sentences once under the fitted weights; joint
training scores the same blocks at every iteration under new ones, and needs the
transpose: expected feature counts from the joint marginals.  Both go through
:class:`ComponentFeatures`.

Component k runs on its *decoding topology* (S'_k states, E'_k edges), which is its
own topology (S_k, E_k) or a restriction of it to its training grammar; ``maps[k]``
is then (int [S'_k], int [E'_k]), the original state and edge behind each, else None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.engine.topology import Topology
from fstcrf.features.encoding import EncodedSentences, ReadingFeatures
from fstcrf.model.chain import ChainCRF
from fstcrf.model.reading import add_reading_counts, reading_block, reading_features

#: (state map int [S'], edge map int [E']) of a decoding topology, or None.
Maps = tuple[np.ndarray, np.ndarray] | None


def on_decoding_topology(maps: Maps, scores: np.ndarray, edges: bool = False) -> np.ndarray:
    """State scores [..., S] (``edges``: edge scores [..., E]) on the decoding topology's
    S' states (E' edges)."""
    return scores if maps is None else scores[..., maps[1] if edges else maps[0]]


def from_decoding_topology(maps: Maps, values: np.ndarray, size: int, edges: bool = False) -> np.ndarray:
    """The transpose of :func:`on_decoding_topology`: values [..., S'] (or [..., E'])
    summed onto the original ``size`` states (edges), float [..., size]."""
    if maps is None:
        return values
    out = np.zeros(values.shape[:-1] + (size,))
    index = maps[1] if edges else maps[0]
    np.add.at(out.T, index, values.T)  # several decoding states may stand for one original state
    return out


def lower_label_sum(values: np.ndarray, state_label: np.ndarray, num_labels: int, axis: int) -> np.ndarray:
    """``values`` with its ``axis`` over a lower component's S' states summed by their label
    (int [S']) onto ``num_labels`` labels."""
    one_hot = np.zeros((len(state_label), num_labels))
    one_hot[np.arange(len(state_label)), state_label] = 1.0
    return np.moveaxis(np.tensordot(np.moveaxis(values, axis, -1), one_hot, axes=1), -1, axis)


class ComponentFeatures:
    """The features of ``sentences`` for every component of a composition, lowest first.

    A component that reads nothing has its sentences encoded
    (:meth:`ChainCRF.encode`); one that reads the labels of the component below it has
    its :class:`~fstcrf.features.encoding.ReadingFeatures` under each of that component's
    labels.  ``clock(name)``, if given, is a context manager timing each phase.
    """

    def __init__(
        self,
        components: Sequence[ChainCRF],
        topologies: Sequence[Topology],
        maps: Sequence[Maps],
        sentences: list[Sentence],
        clock: Callable[[str], AbstractContextManager] | None = None,
    ):
        self.components, self.topologies, self.maps = tuple(components), tuple(topologies), tuple(maps)
        self.clock = clock
        self.phases: list[str] = []
        self.features: list[EncodedSentences | ReadingFeatures] = []
        #: per component, int [S'_{k-1}] the lower label of each lower state, or None
        #: (reads nothing, or one lower state per label in label order)
        self.lower_state_label: list[np.ndarray | None] = []
        for k, model in enumerate(self.components):
            state_label = None
            if model.reads is None:
                phase = f"features and emissions: {model.target_}"
                with self._timed(phase):
                    self.features.append(model.encode(sentences))
            else:
                lower = self.components[k - 1]
                phase = f"features and emissions: {model.target_} under each {lower.target_} label"
                with self._timed(phase):
                    self.features.append(
                        reading_features(model.extractor_, model.reads, model.features_, sentences, lower.labels_)
                    )
                state_label = self.topologies[k - 1].state_label
                if np.array_equal(state_label, np.arange(len(lower.labels_))):
                    state_label = None
            self.lower_state_label.append(state_label)
            self.phases.append(phase)

    def _timed(self, phase: str) -> AbstractContextManager:
        return nullcontext() if self.clock is None else self.clock(phase)

    def emissions(self, first: int, last: int, weights: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """The component emissions of sentences first..last-1 (n tokens) under ``weights``
        (per component, float [F_k + T_k]; default the fitted ``weights_``), on the
        decoding topologies: float [n, S'_k] for a component that reads nothing, float
        [n, S'_{k-1}, S'_k] for one that reads the lower labels (the scores of each state
        given the lower component's state)."""
        scores = []
        for k, (model, features) in enumerate(zip(self.components, self.features)):
            w = model.weights_ if weights is None else weights[k]
            with self._timed(self.phases[k]):
                if isinstance(features, EncodedSentences):
                    emit = model.features_.emissions(features.tokens(first, last), w[: model.features_.num_features])
                else:
                    emit = reading_block(model.features_, features, first, last, w)  # [n, L_{k-1}, S_k]
                    if self.lower_state_label[k] is not None:
                        emit = emit[:, self.lower_state_label[k], :]
                scores.append(on_decoding_topology(self.maps[k], emit))
        return scores

    def add_counts(self, k: int, first: int, last: int, marginals: np.ndarray, out: np.ndarray) -> None:
        """Add to ``out`` [F_k + T_k] component k's expected emission feature counts of
        sentences first..last-1 (n tokens) under ``marginals``: float [n, S'_k] for a
        component that reads nothing, float [n, S'_{k-1}, S'_k] (the joint probability
        of the lower and the upper state) for one that reads."""
        model, features = self.components[k], self.features[k]
        num_states = model.topology_.num_states
        if isinstance(features, EncodedSentences):
            states = from_decoding_topology(self.maps[k], marginals, num_states)
            model.features_.accumulate(features.tokens(first, last), states, out[: model.features_.num_features])
            return
        by_label = lower_label_sum(
            marginals, self.topologies[k - 1].state_label, len(self.components[k - 1].labels_), axis=1
        )
        add_reading_counts(
            model.features_, features, first, last, from_decoding_topology(self.maps[k], by_label, num_states), out
        )
