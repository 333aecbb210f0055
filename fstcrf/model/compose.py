"""Separately trained CRFs composed into one joint decoder (Sutton & McCallum 2005).

N >= 2 fitted :class:`~fstcrf.model.ChainCRF` models, lowest first, where
model k > 0 was trained with ``reads=`` set to the column that model k-1
predicts (a chunker reading part-of-speech tags, an NER tagger reading
chunks...), or, under a joint grammar, reads nothing (an independent
tagger).  A reading model's score of a sentence depends on model k-1's
label at each token, so the composition scores a tuple of label sequences
(y^0, ..., y^{N-1}) by the sum of the component scores

    score(y^0 | x) + score(y^1 | x, y^0) + ... + score(y^{N-1} | x, y^{N-2})

over the cross product of the component state spaces, optionally restricted
by a compatibility relation between adjacent label sets, given as a pynini
transducer from lower to upper labels, and by a joint grammar over the
joint labels "a/b/..." (:func:`~fstcrf.model.compatibility.joint_constraint`).  Optional positive ``scales`` weigh
the component scores (a weighted product of experts, e.g. to temper an upper
model that was trained on gold lower labels and is overconfident about them);
choose them on held-out data.  Decoding modes:

    joint    exact joint Viterbi over the product space (factorised kernel)
    cascade  1-best of each model feeds the next (the usual pipeline)
    kbest    cascade with k-best lists: each level keeps the k best partial
             tuples by joint score; k = 1 is the cascade, large k tends to joint

Joint model files hold every component (same container as a model file,
"format": "fstcrf-joint"), so a composition saves and loads like a model.
"""

from __future__ import annotations

import operator
import os
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast
from collections.abc import Mapping, Sequence

import numpy as np

from fstcrf.engine.budget import check_cascade
from fstcrf.corpus.conll import Corpus, Sentence, as_corpus, as_sentences
from fstcrf.errors import (
    ArgumentTypeError,
    CompositionError,
    FstcrfError,
    InfeasibleError,
    ModelFileError,
)
from fstcrf.engine.constrained import constrain
from fstcrf.engine.inference import (
    KBest,
    Potentials,
    Viterbi,
    forward_backward,
    kbest,
    lengths_to_offsets,
    viterbi,
)
from fstcrf.engine.threads import blas_single_threaded, run_parallel
from fstcrf.engine.joint import (
    JointPotentials,
    JointSpace,
    check_joint_states,
    component_marginals,
    joint_emissions,
    joint_forward_backward,
    joint_viterbi,
)
from fstcrf.engine.openfst import read_acceptor, write_acceptor
from fstcrf.engine.chunks import parse_chunk_label
from fstcrf.engine.spans import Entity, entity_probabilities, joint_state_labels, path_chunks
from fstcrf.grammar import Grammar, restrict_to, restriction_maps
from fstcrf.corpus.labels import split_labels
from fstcrf.model.chain import ChainCRF, save_model
from fstcrf.model.fitting import check_fitted
from fstcrf.model.compatibility import check_components, check_scales, compatibility_pairs, joint_constraint
from fstcrf.model.joint_constraints import (
    ComponentRules,
    component_index,
    component_rules,
    constrained_sentences,
    on_tokens_only,
    product_lattice,
    select,
    with_token_rules,
)
from fstcrf.model.joint_features import ComponentFeatures, on_decoding_topology
from fstcrf.model.joint_training import fit_joint
from fstcrf.model.file import JOINT_KIND, MODEL_KIND, arrays_under, header_field, read_kind, write_container
from fstcrf.learn.objective import BLOCK_CELLS
from fstcrf.engine.acceptor import Acceptor, is_fst

if TYPE_CHECKING:
    import pynini

MODES = ("joint", "cascade", "kbest")
#: Joint decoding extracts the features of batches of this many tokens (fewer if the
#: threads would otherwise idle), then scores and searches them block by block; each
#: extraction codes every distinct word of its batch, a cost that small blocks pay often.
FEATURE_TOKENS = 4096


class JointModel:
    """Fitted models composed into a chain, lowest first (see the module doc).

    Attributes: ``components`` (the ChainCRFs), ``topologies`` (each one's
    decoding topology: its own, restricted to its training grammar if it has
    one), ``space`` (the :class:`~fstcrf.engine.joint.JointSpace` of the
    topologies), ``compatibility`` (per adjacent pair, bool [L_{k-1}, L_k]
    allowed label pairs, or None), ``constraint`` (the joint grammar's
    Acceptor over the joint labels ``space.labels``, or None), ``grammar``
    (its name, or None), ``scales`` (float [N], each component's score
    weight) and ``threads``.  ``space.decoder`` says how decoding runs.
    """

    def __init__(
        self,
        components: Sequence[ChainCRF],
        compatibility: Sequence[np.ndarray | None] | None = None,
        threads: int = 2,
        scales: Sequence[float] | None = None,
        constraint: Acceptor | None = None,
        grammar: str | None = None,
    ):
        self.components = tuple(components)
        self.threads = threads
        self.scales = check_scales(scales, len(self.components))
        self.compatibility = list(compatibility) if compatibility is not None else [None] * (len(self.components) - 1)
        check_components(self.components, self.compatibility, independent=constraint is not None)
        self.constraint = constraint
        self.grammar = grammar
        self.topologies = tuple(model.scorer().decoding_topology() for model in self.components)
        check_joint_states([topology.num_states for topology in self.topologies])  # before [P] masks are made
        self.space = JointSpace(list(self.topologies), self._allowed_states(), constraint)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_transitions_kept", None)  # made again on first use
        return state

    def __setstate__(self, state: dict) -> None:
        """Unpickle, also a JointModel pickled by 0.1 (no joint grammar; its components
        were never trained under grammars, so each decodes on its own topology)."""
        if "topologies" not in state:
            state = {**state, "constraint": None, "grammar": None}
            state["topologies"] = tuple(model.topology_ for model in state["components"])
        self.__dict__.update(state)

    def restriction(self, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(int [S'_k] state, int [E'_k] edge of ``topology_`` behind each state and
        edge of component k's decoding topology), or None when they are the same."""
        model, topology = self.components[k], self.topologies[k]
        return None if topology is model.topology_ else restriction_maps(model.topology_, topology)

    def restricted(self, k: int, scores: np.ndarray, edges: bool = False) -> np.ndarray:
        """Component k's state scores [..., S_k] (``edges``: edge scores [..., E_k]) on
        its decoding topology's S'_k states (E'_k edges)."""
        return on_decoding_topology(self.restriction(k), scores, edges)

    def component_features(self, sentences: list[Sentence], clock: PhaseClock | None = None) -> ComponentFeatures:
        """Every component's features of ``sentences``, extracted once (each phase timed
        by ``clock``)."""
        return ComponentFeatures(
            self.components,
            self.topologies,
            [self.restriction(k) for k in range(len(self.components))],
            sentences,
            None if clock is None else clock.phase,
        )

    @property
    def targets(self) -> tuple[str, ...]:
        """The column each component predicts, in chain order."""
        return tuple(model.target_ for model in self.components)

    def _allowed_states(self) -> np.ndarray | None:
        """bool [P] joint states whose adjacent labels the compatibility relations admit."""
        if all(pairs is None for pairs in self.compatibility):
            return None
        sizes = [topology.num_states for topology in self.topologies]
        allowed = np.ones(sizes, dtype=bool)
        for k, pairs in enumerate(self.compatibility, start=1):
            if pairs is None:
                continue
            lower = self.topologies[k - 1].state_label
            upper = self.topologies[k].state_label
            shape = [1] * len(sizes)
            shape[k - 1], shape[k] = sizes[k - 1], sizes[k]
            allowed &= pairs[np.ix_(lower, upper)].reshape(shape)
        return allowed.ravel()

    # -- joint training ----------------------------------------------------------
    def fit(
        self, corpus: Corpus | Sequence[Sentence], dev: Corpus | Sequence[Sentence] | None = None, **options
    ) -> JointModel:
        """Train every component jointly on ``corpus`` (a factorial CRF; see
        :mod:`fstcrf.model.joint_training`): each component reads its gold column
        (``targets``), whose values may be "?" or "A|B" and which may be absent (then
        latent, marginalised).  ``options`` are those of
        :func:`~fstcrf.model.joint_training.fit_joint`: ``init`` ("warm": from the
        fitted weights; "zero"), ``prior`` (centred on the "start" or on "zero"),
        ``sigma``, ``max_iter``, ``tol``, ``memory``, ``history``, ``callback``, ``dev_score``.
        With ``dev`` the iteration with the best score of the top component on it is
        kept.  Returns self, its components replaced by trained copies and its scales
        set to 1; learned attributes ``history_``, ``n_iter_``, ``best_iteration_``,
        ``interrupted_``."""
        trained, result = fit_joint(self, corpus, dev, **options)
        self.components, self.scales = trained.components, trained.scales
        self.history_, self.n_iter_ = result.history, result.n_iter
        self.best_iteration_, self.interrupted_ = result.best_iteration, result.interrupted
        return self

    # -- decoding --------------------------------------------------------------
    @blas_single_threaded()
    def predict(
        self, corpus: Corpus | Sequence[Sentence], mode: str = "joint", k: int = 5, constraints=None
    ) -> list[list[list[str]]]:
        """Labels [N components][B sentences][T] of every sentence, decoded by ``mode``
        (``k`` is the list length of mode "kbest").  ``constraints``: {component (its
        index or the column it predicts): one Constraints (or None) per sentence over
        that component's labels} (see :mod:`fstcrf.model.joint_constraints`); the
        same keyword on every decoding method."""
        if mode not in MODES:
            raise FstcrfError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if mode != "joint" and self.constraint is not None:
            raise CompositionError(
                f"mode {mode!r} decodes one model after another and cannot keep to the joint grammar "
                f"{self.grammar}; decode with mode 'joint'"
            )
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise FstcrfError(f"k must be a positive integer, got {k!r}")
        sentences = as_sentences(corpus, "JointModel.predict")
        result: list[list[list[str]]] = [[] for _ in self.components]
        rules = component_rules(self, constraints, [len(sentence) for sentence in sentences], "JointModel.predict")
        if not sentences:
            return result
        if rules is not None:
            return self._predict_under(sentences, rules, mode, int(k))
        if mode == "cascade" and all(pairs is None for pairs in self.compatibility):
            return self._pipeline(sentences)
        decode = {
            "joint": self._joint_batch,
            "cascade": lambda block: self._kbest_block(block, 1),
            "kbest": lambda block: self._kbest_block(block, int(k)),
        }[mode]
        if mode == "joint":  # the same number of feature batches per thread, decoded block by block
            num_tokens = sum(len(sentence) for sentence in sentences)
            threads = max(1, int(self.threads))
            per_thread = -(-num_tokens // (threads * FEATURE_TOKENS))
            blocks = _blocks(sentences, -(-num_tokens // (threads * per_thread)))
        else:  # per hypothesis, one component's [n, S_k] scores and tables [n, S_k, k]
            cells_per_token = max(topology.num_states for topology in self.topologies) * (
                int(k) if mode == "kbest" else 1
            )
            blocks = _blocks(sentences, max(1, BLOCK_CELLS // cells_per_token))
            # each block's cascade, before any is decoded
            check_cascade(
                int(k) if mode == "kbest" else 1,
                max(sum(len(s) for s in sentences[first:last]) for first, last in blocks),
                [topology.num_states for topology in self.topologies],
            )
        per_block = run_parallel(
            lambda plan: [decode(sentences[first:last]) for first, last in plan], _spread(blocks, self.threads)
        )
        for plan in per_block:
            for labels in plan:
                for component, sentence_labels in zip(result, labels):
                    component.extend(sentence_labels)
        return result

    def _pipeline(self, sentences: list[Sentence]) -> list[list[list[str]]]:
        """Cascaded labels [N components][B][T] without compatibility relations: each
        component's own :meth:`ChainCRF.predict` (one feature pipeline and kernel call
        per batch, cheap on one sentence) on the sentences with the column it reads
        set to the labels of the component below; each level's 1-best depends on the
        levels below only, so this is :meth:`_kbest_block` with k = 1, label for label."""
        result: list[list[list[str]]] = []
        for model in self.components:
            if result:
                read = cast(str, model.reads)  # every upper model reads (cascades are refused under a joint grammar)
                sentences = [sentence.with_column(read, labels) for sentence, labels in zip(sentences, result[-1])]
            result.append(model.predict(sentences))
        return result

    def _predict_under(
        self, sentences: list[Sentence], rules: ComponentRules, mode: str, k: int
    ) -> list[list[list[str]]]:
        """:meth:`predict` of sentences some of which have rules: those without any are
        decoded as usual, the others block by block under their rules."""
        chosen = constrained_sentences(rules, len(sentences))
        free = sorted(set(range(len(sentences))) - set(chosen.tolist()))
        result: list[list[list[str]]] = [[[] for _ in sentences] for _ in self.components]
        decoded = self.predict([sentences[b] for b in free], mode, k) if free else []
        for component, labels in zip(result, decoded):
            for b, sentence_labels in zip(free, labels):
                component[b] = sentence_labels
        block_sentences = [sentences[b] for b in chosen]
        for first, last in _blocks(block_sentences, max(1, BLOCK_CELLS // self.space.num_states)):
            block, block_rules = block_sentences[first:last], select(rules, chosen[first:last])
            under = (
                self._joint_under(block, block_rules)
                if mode == "joint"
                else self._kbest_block(block, k if mode == "kbest" else 1, block_rules)
            )
            for component, component_labels in zip(result, under):
                for b, sentence_labels in zip(chosen[first:last], component_labels):
                    component[b] = sentence_labels
        return result

    def _joint_under(self, sentences: list[Sentence], rules: ComponentRules) -> list[list[list[str]]]:
        """Joint Viterbi labels [N components][B][T] of a block under its rules:
        factorised when they concern single tokens, else on the product."""
        jp = self.potentials(sentences)
        if on_tokens_only(rules):
            try:
                paths = joint_viterbi(with_token_rules(self, jp, rules), int(self.threads)).paths
            except InfeasibleError:  # the product names the sentence and the rules that clash
                product_lattice(self, jp, rules, int(self.threads))
                raise
            states = self.space.component_states(paths)
        else:
            pot, joint_state = product_lattice(self, jp, rules, int(self.threads))
            states = self.space.component_states(joint_state[viterbi(pot, int(self.threads)).paths])
        return [split_labels(topology, states[:, k], jp.offsets) for k, topology in enumerate(self.topologies)]

    def potentials(self, corpus: Corpus | Sequence[Sentence]) -> JointPotentials:
        """The joint scores of a batch of sentences [N, P]: run
        :func:`~fstcrf.engine.joint.joint_forward_backward` (log Z, joint marginals),
        ``joint_viterbi``, ``joint_kbest`` or ``joint_sample`` on them.  Memory is
        N x P doubles: pass a few thousand tokens at a time."""
        sentences = as_sentences(corpus, "JointModel.potentials")
        return self._joint_potentials(sentences, self.component_features(sentences).emissions(0, len(sentences)))

    def _joint_potentials(self, sentences: list[Sentence], component_emissions: list[np.ndarray]) -> JointPotentials:
        """JointPotentials of sentences from their component emissions (see
        :meth:`ComponentFeatures.emissions`), under the fitted weights and scales."""
        emissions = joint_emissions(
            self.space,
            [scores if scale == 1.0 else scale * scores for scale, scores in zip(self.scales, component_emissions)],
        )
        return JointPotentials(self.space, emissions, [len(s) for s in sentences], self._scaled_transitions())

    def _scaled_transitions(self) -> list[np.ndarray]:
        """:meth:`joint_transitions` under the fitted weights times the scales, kept
        (read-only) while every component's weights are the same read-only arrays (a
        loaded model's) and the scales the same: one call on one sentence then makes
        no [S'_{k-1}, E'_k] table."""
        weights = [model.weights_ for model in self.components]
        kept = self.__dict__.get("_transitions_kept")
        if kept is not None and all(map(operator.is_, kept[0], weights)) and kept[1] == self.scales:
            return kept[2]
        transitions = [scale * scores for scale, scores in zip(self.scales, self.joint_transitions())]
        if not any(array.flags.writeable for array in weights):
            for table in transitions:
                table.flags.writeable = False
            self._transitions_kept = (weights, list(self.scales), transitions)
        return transitions

    def joint_transitions(self, weights: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """The transition scores of JointPotentials under ``weights`` (per component,
        float [F_k + T_k]; default the fitted ``weights_``), scales aside: float [1,
        E'_0], then per component k > 0 float [S'_{k-1}, E'_k], the scores of its edges
        under each lower state's label."""
        weights = [model.weights_ for model in self.components] if weights is None else weights
        first = self.components[0]
        table = first.scorer().transitions.scores(weights[0][first.features_.num_features :])
        transitions = [self.restricted(0, np.atleast_2d(table)[:1], edges=True)]
        for k in range(1, len(self.components)):
            by_label = self.components[k].transition_scores(self.components[k - 1].labels_, weights[k])
            transitions.append(self.restricted(k, by_label[self.topologies[k - 1].state_label], edges=True))
        return transitions

    @blas_single_threaded()
    def predict_marginals(self, corpus: Corpus | Sequence[Sentence], constraints=None) -> list[list[np.ndarray]]:
        """float [T, L_k] per component and sentence: p(label of component k at token t | x)
        under the joint model, columns in the component's ``labels_`` order (under
        ``constraints``, as :meth:`predict` takes them, conditional on them)."""
        sentences = as_sentences(corpus, "JointModel.predict_marginals")
        lengths = [len(sentence) for sentence in sentences]
        rules = component_rules(self, constraints, lengths, "JointModel.predict_marginals")
        result: list[list[np.ndarray]] = [[] for _ in self.components]
        for first, last in _blocks(sentences, max(1, BLOCK_CELLS // self.space.num_states)):
            block = sentences[first:last]
            if rules is None:
                _, node = joint_forward_backward(self.potentials(block))
            else:
                pot, joint_state = product_lattice(
                    self, self.potentials(block), select(rules, range(first, last)), int(self.threads)
                )
                on_states = cast(np.ndarray, forward_backward(pot, edge_counts=False).node_marginals)
                node = np.zeros((len(on_states), self.space.num_states))
                np.add.at(node.T, joint_state, on_states.T)
            for k, (model, states) in enumerate(zip(self.components, component_marginals(self.space, node))):
                topology = self.topologies[k]
                by_label = np.zeros((topology.num_states, len(model.labels_)))
                by_label[np.arange(topology.num_states), topology.state_label] = 1.0
                result[k] += np.split(states @ by_label, np.cumsum([len(s) for s in block])[:-1])
        return result

    def chunk_components(self) -> list[int]:
        """The components whose labels are chunk labels (IOB1, IOB2, BIOES): those that have entities."""
        return [
            k
            for k, model in enumerate(self.components)
            if all(parse_chunk_label(label) is not None for label in model.labels_)
        ]

    def span_probabilities(
        self,
        corpus: Corpus | Sequence[Sentence],
        spans: Sequence[Sequence[tuple[int, int, str]]],
        component: int | str,
        constraints=None,
    ) -> list[np.ndarray]:
        """float [len(spans[b])] per sentence b: the exact probability under the joint
        model (and its joint grammar, and ``constraints`` as :meth:`predict` takes them)
        that ``component``'s (its index or the column it predicts) output has a chunk of
        the given type over tokens first..last (inclusive), computed on the dense
        product lattice."""
        return self.span_probabilities_by_component(corpus, {component: spans}, constraints)[component]

    @blas_single_threaded()
    def span_probabilities_by_component(
        self,
        corpus: Corpus | Sequence[Sentence],
        spans: Mapping[int | str, Sequence[Sequence[tuple[int, int, str]]]],
        constraints=None,
    ) -> dict[int | str, list[np.ndarray]]:
        """:meth:`span_probabilities` of several components at once, ``spans`` mapping
        each (its index or the column it predicts) to its spans per sentence, and the
        result each to its probabilities: the joint scores are built once per block."""
        what = "JointModel.span_probabilities"
        sentences = as_sentences(corpus, what)
        if not isinstance(spans, Mapping):
            raise ArgumentTypeError(
                f"{what}: spans must be a dict from components to spans, got {type(spans).__name__}"
            )
        index = {key: component_index(self, key, what) for key in spans}
        if len(set(index.values())) < len(index):
            raise CompositionError(f"{what}: spans name a component twice ({', '.join(map(repr, index))})")
        self.space.check_product()  # span probabilities are computed on it
        lengths = [len(sentence) for sentence in sentences]
        rules = component_rules(self, constraints, lengths, what)
        found = self._span_probabilities(sentences, {index[key]: spans[key] for key in spans}, rules)
        return {key: found[index[key]] for key in spans}

    def _span_probabilities(
        self,
        sentences: list[Sentence],
        spans: Mapping[int, Sequence[Sequence[tuple[int, int, str]]]],
        rules: ComponentRules | None,
    ) -> dict[int, list[np.ndarray]]:
        """:meth:`span_probabilities_by_component` of sentences under their ``rules``."""
        labels = {}
        for component, component_spans in spans.items():
            if len(component_spans) != len(sentences):
                raise CompositionError(f"expected spans for {len(sentences)} sentences, got {len(component_spans)}")
            labels[component] = joint_state_labels(self.space, component)
            if self.space.constraint is not None:
                labels[component] = [labels[component][state] for state in self.space.constrained.joint_state]
        result: dict[int, list[np.ndarray]] = {component: [] for component in spans}
        for first, last in _blocks(sentences, max(1, BLOCK_CELLS // self.space.num_states)):
            jp = self.potentials(sentences[first:last])
            if rules is not None:
                pot, joint_state = product_lattice(self, jp, select(rules, range(first, last)), int(self.threads))
                for component, component_spans in spans.items():
                    of_states = [joint_state_labels(self.space, component)[state] for state in joint_state]
                    result[component] += entity_probabilities(pot, of_states, component_spans[first:last])
                continue
            pot = self.space.constrained.potentials(jp) if self.space.constraint is not None else jp.to_product()
            for component, component_spans in spans.items():
                result[component] += entity_probabilities(pot, labels[component], component_spans[first:last])
        return result

    def predict_spans(self, corpus: Corpus | Sequence[Sentence], constraints=None) -> list[list[list[Entity]] | None]:
        """Per component, the entities of each sentence's jointly decoded labels with
        their exact probabilities under the joint model [N][B][entities]; None for a
        component whose labels are not chunk labels (e.g. part-of-speech tags)."""
        sentences = as_sentences(corpus, "JointModel.predict_spans")
        self.space.check_product()  # before decoding: span probabilities are computed on it
        lengths = [len(sentence) for sentence in sentences]
        rules = component_rules(self, constraints, lengths, "JointModel.predict_spans")  # its errors name this method
        decoded = self.predict(sentences) if rules is None else self._predict_under(sentences, rules, "joint", 1)
        spans = {k: [path_chunks(labels) for labels in decoded[k]] for k in self.chunk_components()}
        probabilities = self._span_probabilities(sentences, spans, rules)
        result: list[list[list[Entity]] | None] = [None] * len(self.components)
        for k, component_spans in spans.items():
            result[k] = [
                [Entity(first, last, chunk_type, float(p)) for (first, last, chunk_type), p in zip(found, values)]
                for found, values in zip(component_spans, probabilities[k])
            ]
        return result

    def _joint_batch(self, sentences: list[Sentence], clock: PhaseClock | None = None) -> list[list[list[str]]]:
        """Joint Viterbi labels [N components][B][T] of a batch of sentences: features
        extracted once, joint scores [n, P] built and searched block by block."""
        clock = clock or PhaseClock()
        features = self.component_features(sentences, clock)
        labels: list[list[list[str]]] = [[] for _ in self.components]
        for first, last in _blocks(sentences, max(1, BLOCK_CELLS // self.space.num_states)):
            component_emissions = features.emissions(first, last)
            with clock.phase("joint scores"):
                jp = self._joint_potentials(sentences[first:last], component_emissions)
            with clock.phase("joint Viterbi kernel"):
                paths = joint_viterbi(jp).paths
            with clock.phase("labels"):
                states = self.space.component_states(paths)
                for k, topology in enumerate(self.topologies):
                    labels[k] += split_labels(topology, states[:, k], jp.offsets)
        return labels

    @blas_single_threaded()
    def joint_phases(self, corpus: Corpus | Sequence[Sentence]) -> dict[str, float]:
        """Seconds of each phase of joint decoding (predict, mode "joint"), run on one
        thread: features and emission scores of each component, joint scores, the
        kernel, and labels."""
        sentences = as_sentences(corpus, "JointModel.joint_phases")
        clock = PhaseClock()
        for first, last in _blocks(sentences, FEATURE_TOKENS):
            self._joint_batch(sentences[first:last], clock)
        return clock.seconds

    def _kbest_block(
        self, sentences: list[Sentence], k: int, rules: ComponentRules | None = None
    ) -> list[list[list[str]]]:
        """Cascaded decoding keeping the k best partial tuples (by summed score) per level,
        each level under its component's ``rules`` when given."""
        lengths = np.array([len(sentence) for sentence in sentences])
        token_sentence = np.repeat(np.arange(len(sentences)), lengths)
        # hypotheses: paths [H, N components so far, n] and scores [B, H]
        paths = np.zeros((1, 0, int(lengths.sum())), dtype=np.int64)
        scores = np.zeros((len(sentences), 1))
        for level, model in enumerate(self.components):
            keep = k if level < len(self.components) - 1 else 1
            candidate_paths, candidate_scores = [], []
            for h in range(len(paths)):
                pot = self._level_potentials(level, sentences, paths[h])
                state_map = np.arange(pot.topology.num_states)
                if rules is not None and level in rules:
                    lattice = constrain(pot, rules[level], threads=int(self.threads))
                    pot, state_map = lattice.potentials, lattice.state_map
                try:
                    best = kbest(pot, keep) if keep > 1 else _as_kbest(viterbi(pot))
                except InfeasibleError:
                    raise InfeasibleError(
                        f"cascaded decoding: the labels chosen for model {level - 1} "
                        f"({self.components[level - 1].target_}) leave a sentence with no path of model "
                        f"{level} ({model.target_}) that the compatibility relation allows; decode with "
                        "mode 'joint', which searches compatible label pairs only"
                    ) from None
                for rank in range(keep):
                    found = np.where(best.paths[rank] >= 0, state_map[np.maximum(best.paths[rank], 0)], -1)
                    candidate_paths.append(np.concatenate([paths[h], found[None]], axis=0))
                    candidate_scores.append(scores[:, h] + self.scales[level] * best.scores[:, rank])
            if len(candidate_paths) == 1:  # one hypothesis, one path (a cascade): nothing to rank
                paths, scores = candidate_paths[0][None], candidate_scores[0][:, None]
                continue
            stacked = np.stack(candidate_paths)  # [C, level+1, n]
            total = np.stack(candidate_scores, axis=1)  # [B, C]
            order = np.argsort(-total, axis=1, kind="stable")[:, :k]
            chosen = order[token_sentence]  # [n, H']
            columns = np.arange(len(token_sentence))
            paths = np.stack([stacked[chosen[:, j], :, columns].T for j in range(order.shape[1])])
            scores = np.take_along_axis(total, order, axis=1)
        states, offsets = paths[0], lengths_to_offsets(lengths)
        return [split_labels(topology, states[level], offsets) for level, topology in enumerate(self.topologies)]

    def _level_potentials(self, level: int, sentences: list[Sentence], lower_paths: np.ndarray) -> Potentials:
        """Potentials of component ``level`` on its decoding topology, with the lower
        component's labels set by a hypothesis (its states [level, n]); -1 states (no
        such hypothesis) read label 0."""
        if level == 0:
            return self._decoding_potentials(0, sentences)
        model, lower_topology = self.components[level], self.topologies[level - 1]
        lower_states = np.maximum(lower_paths[level - 1], 0)
        lower_labels = lower_topology.state_label[lower_states]
        offsets = lengths_to_offsets([len(sentence) for sentence in sentences])
        read = split_labels(lower_topology, lower_states, offsets)
        # every upper model reads (check_components; cascades are refused under a joint grammar)
        pot = self._decoding_potentials(
            level, [sentence.with_column(cast(str, model.reads), labels) for sentence, labels in zip(sentences, read)]
        )
        pairs = self.compatibility[level - 1]
        if pairs is None:
            return pot
        return pot.clamp(pairs[lower_labels][:, self.topologies[level].state_label])

    def _decoding_potentials(self, k: int, sentences: list[Sentence]) -> Potentials:
        """Component k's potentials of ``sentences`` on its decoding topology."""
        pot = self.components[k].potentials(sentences)
        return pot if self.restriction(k) is None else restrict_to(pot, self.topologies[k]).potentials

    # -- files -----------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write every component, the compatibility relations and the joint grammar's
        acceptor (OpenFst bytes) to one file, atomically."""
        headers, arrays = [], {}
        for k, model in enumerate(self.components):
            header, component_arrays = model.to_payload()
            headers.append(header)
            arrays.update({f"{k}.{name}": array for name, array in component_arrays.items()})
        for k, pairs in enumerate(self.compatibility, start=1):
            if pairs is not None:
                arrays[f"compatibility.{k}"] = pairs.astype(np.uint8).ravel()
        described = {"components": headers, "scales": list(self.scales)}
        if self.constraint is not None:
            arrays["joint_constraint"] = np.frombuffer(write_acceptor(self.constraint), dtype=np.uint8)
            described["joint_grammar"] = self.grammar
        write_container(path, JOINT_KIND, described, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> JointModel:
        """Read a joint model written by :meth:`save`."""
        return load_joint(path)


class PhaseClock:
    """Wall-clock seconds summed per named phase (``with clock.phase(name): ...``)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started


def _as_kbest(best: Viterbi) -> KBest:
    """A Viterbi result as the one-path k-best result it equals."""
    return KBest(best.paths[None], best.scores[:, None], np.isfinite(best.scores).astype(np.int32))


def _blocks(sentences: list[Sentence], max_tokens: int) -> list[tuple[int, int]]:
    """Consecutive sentence ranges (first, last) of at most ``max_tokens`` tokens (or one sentence)."""
    blocks, first, tokens = [], 0, 0
    for index, sentence in enumerate(sentences):
        if index > first and tokens + len(sentence) > max_tokens:
            blocks.append((first, index))
            first, tokens = index, 0
        tokens += len(sentence)
    blocks.append((first, len(sentences)))
    return blocks


def _spread(blocks: list[tuple[int, int]], threads: int) -> list[list[tuple[int, int]]]:
    """Deal consecutive runs of blocks to at most ``threads`` workers."""
    threads = max(1, min(int(threads), len(blocks)))
    if threads == 1:
        return [blocks]
    cuts = np.linspace(0, len(blocks), threads + 1).round().astype(int)
    return [blocks[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def compose(
    models: Sequence[ChainCRF],
    compatibility: Sequence[pynini.Fst | np.ndarray | None] | None = None,
    threads: int = 2,
    scales: Sequence[float] | None = None,
    joint: Grammar | str | os.PathLike | None = None,
) -> JointModel:
    """Compose fitted models, lowest first, into a :class:`JointModel`.

    ``compatibility`` gives, per adjacent pair, None, a pynini transducer from
    lower to upper labels (see :func:`compatibility_pairs`) or a bool
    [L_lower, L_upper] array.  ``joint``, a joint grammar (see
    :func:`joint_constraint`), restricts the label tuples; models under one may
    read nothing from each other.  Raises CompositionError naming the problem
    when the models do not fit together (e.g. a model reads labels the lower one
    never produces, or the joint grammar leaves no joint path)."""
    models = list(models)
    relations = list(compatibility) if compatibility is not None else [None] * max(len(models) - 1, 0)
    pairs = []
    for k, relation in enumerate(relations, start=1):
        if is_fst(relation):
            if k >= len(models):
                raise CompositionError(f"{len(relations)} compatibility relations for {len(models)} models")
            relation = compatibility_pairs(models[k - 1].labels_, models[k].labels_, relation)
        pairs.append(None if relation is None else np.asarray(relation, dtype=bool))
    if joint is None:
        return JointModel(models, pairs, threads, scales)
    if len(models) < 2:
        raise CompositionError(f"composition needs at least two models, got {len(models)}")
    for model in models:
        check_fitted(model)
    name = joint.source if isinstance(joint, Grammar) else os.fspath(joint)
    return JointModel(models, pairs, threads, scales, joint_constraint(models, joint), name)


def jackknife(corpus: Corpus, model: ChainCRF, target: str, folds: int = 5) -> Corpus:
    """A copy of ``corpus`` whose ``target`` column holds held-out predictions: the
    sentences are cut into ``folds`` consecutive parts and each part is tagged by
    a clone of ``model`` (same parameters) trained on the other parts.  A model
    that reads this column then trains on the kind of errors it meets at test time.
    Ctrl-C while a fold trains raises KeyboardInterrupt (a fold's model stops with
    its best weights so far, which would go on to the next fold)."""
    corpus = as_corpus(corpus, "jackknife")
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or not 2 <= folds <= len(corpus):
        raise FstcrfError(f"folds must be an integer from 2 to the number of sentences ({len(corpus)}), got {folds!r}")
    sentences = corpus.sentences
    cuts = np.linspace(0, len(sentences), int(folds) + 1).round().astype(int)
    predicted: list[list[str]] = []
    for first, last in zip(cuts[:-1], cuts[1:]):
        rest = Corpus(corpus.column_names, sentences[:first] + sentences[last:])
        fold_model = ChainCRF(**model.get_params()).fit(rest, target=target)
        if fold_model.interrupted_:
            raise KeyboardInterrupt
        predicted += fold_model.predict(sentences[first:last])
    replaced = [sentence.with_column(target, labels) for sentence, labels in zip(sentences, predicted)]
    return Corpus(corpus.column_names, replaced, trailing_docstart_lines=corpus.trailing_docstart_lines)


def load_joint(path: str | os.PathLike) -> JointModel:
    """Read a joint model written by :meth:`JointModel.save`."""
    header, arrays = read_kind(path, (JOINT_KIND,), "a composition (fstcrf compose makes one)")
    return _joint_from_payload(header, arrays, os.fspath(path))


def _joint_from_payload(header: dict, arrays: dict[str, np.ndarray], where: str) -> JointModel:
    components = []
    for k, component in enumerate(header_field(header, "components", list, where)):
        prefix = f"{k}."
        own = arrays_under(arrays, prefix)
        components.append(ChainCRF.from_payload(component, own, f"{where} (component {k})"))
    compatibility = []
    for k in range(1, len(components)):
        flat = arrays.get(f"compatibility.{k}")
        shape = (len(components[k - 1].labels_), len(components[k].labels_))
        if flat is not None and flat.size != shape[0] * shape[1]:
            raise ModelFileError(
                f"{where}: compatibility relation {k} has {flat.size} entries, expected {shape[0] * shape[1]}"
            )
        compatibility.append(None if flat is None else flat.reshape(shape).astype(bool))
    constraint = None
    if "joint_constraint" in arrays:
        constraint = read_acceptor(arrays["joint_constraint"].tobytes(), f"{where}: the joint grammar's acceptor")
    try:
        return JointModel(
            components,
            compatibility,
            scales=header.get("scales"),
            constraint=constraint,
            grammar=header.get("joint_grammar"),
        )
    except CompositionError as error:
        raise ModelFileError(f"{where}: the composed models no longer fit together: {error}") from None


def load_any(path: str | os.PathLike) -> ChainCRF | JointModel:
    """A model or a joint model, whichever the file holds (ModelFileError for another kind)."""
    header, arrays = read_kind(path, (MODEL_KIND, JOINT_KIND), "a model or a composition")
    if header["format"] == MODEL_KIND:
        return ChainCRF.from_payload(header, arrays, os.fspath(path))
    return _joint_from_payload(header, arrays, os.fspath(path))


def upgrade_model(old_path: str | os.PathLike, new_path: str | os.PathLike) -> None:
    """Rewrite a model or joint model file of any version this fstcrf reads as
    the current version (``old_path`` and ``new_path`` may be the same file)."""
    model = load_any(old_path)
    if isinstance(model, JointModel):
        model.save(new_path)
    else:
        save_model(model, new_path)
