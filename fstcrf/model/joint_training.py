"""Joint (factorial) training of a composition: every component's weights fitted together.

A :class:`~fstcrf.model.compose.JointModel` scores a label tuple y = (y^0, ...,
y^{N-1}) by the sum of its components' scores, p(y | x) = exp(score(y, x)) / Z(x),
Z summing over the joint space (compatibility relations and joint grammar
included): a factorial CRF (Sutton, Rohanimanesh & McCallum 2004).  Each
component reads its gold column (its ``target_``) from the training corpus, where
a token may give one label, a label set "A|B" or "?", and the column may be
absent.  Training maximises

    sum_b log sum_{y consistent with what is observed of sentence b} p(y | x_b)

minus a Gaussian prior: with every column given, the joint likelihood of the label
tuples; with a lower column latent, the likelihood of the upper labels with the
lower ones marginalised (non-convex: training starts from the separately trained
components, and the prior is centred on them by default, so that a lower model
whose labels are never observed stays near what it learnt on its own corpus).

The loss of a sentence is log Z(x) - log Z_observed(x), and its gradient in the
weights is E_p[phi] - E_p[phi | observed], from two factorised joint
forward-backward passes (the second clamped to the observed labels): the joint node
marginals give each component's expected emission features (for a reading
component, those of (lower label, state) pairs), the joint edge counts its expected
transitions.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar, cast

import numpy as np

from fstcrf.corpus.conll import Corpus, Sentence, as_sentences
from fstcrf.corpus.evaluate import ChunkScores, TagScores, check_single_labels, score_labels
from fstcrf.corpus.labels import parse_gold
from fstcrf.engine.threads import run_parallel
from fstcrf.engine.joint import (
    JointPosteriors,
    JointPotentials,
    JointSpace,
    joint_emissions,
    joint_posteriors,
    path_posteriors,
)
from fstcrf.errors import CompositionError, FstcrfError, InfeasibleError, LabelError, ShapeError
from fstcrf.learn.objective import BLOCK_CELLS, thread_plans
from fstcrf.learn.settings import DEFAULT_SIGMA, JOINT_INITS, JOINT_PRIORS, LBFGS_MEMORY
from fstcrf.learn.train import TrainingResult, lbfgs
from fstcrf.engine.topology import Topology
from fstcrf.features.encoding import EncodedSentences
from fstcrf.model.chain import ChainCRF
from fstcrf.model.joint_features import ComponentFeatures, Maps, from_decoding_topology, lower_label_sum

logger = logging.getLogger(__name__)


class Composition(Protocol):
    """What joint training reads and writes of a :class:`~fstcrf.model.compose.JointModel`."""

    components: tuple[ChainCRF, ...]
    topologies: tuple[Topology, ...]
    space: JointSpace
    scales: list[float]
    threads: int

    @property
    def targets(self) -> tuple[str, ...]: ...

    def restriction(self, k: int) -> Maps: ...

    def component_features(self, sentences: list[Sentence]) -> ComponentFeatures: ...

    def joint_transitions(self, weights: Sequence[np.ndarray] | None = None) -> list[np.ndarray]: ...

    def predict(self, corpus: Sequence[Sentence]) -> list[list[list[str]]]: ...


Model = TypeVar("Model", bound=Composition)


def observed_labels(model: Composition, sentences: Sequence[Sentence]) -> list[np.ndarray | None]:
    """Per component, bool [N, L_k]: the labels its gold column allows at each token
    (all of them where the value is "?" or the column is absent), or None when
    nothing of the column is observed.  LabelError for a label the component lacks."""
    lengths = [len(sentence) for sentence in sentences]
    result: list[np.ndarray | None] = []
    for k, (component, topology) in enumerate(zip(model.components, model.topologies)):
        column = component.target_
        present = [column in sentence.column_names for sentence in sentences]
        if not any(present):
            result.append(None)
            continue
        values = [sentence[column] if has else ["?"] * len(sentence) for sentence, has in zip(sentences, present)]
        try:
            label_ids, allowed = parse_gold(topology, values)
        except LabelError as error:
            raise LabelError(f"component {k} ({column}): {error}") from None
        if allowed is None:  # every token gives one label
            allowed = np.zeros((int(sum(lengths)), len(topology.labels)), dtype=bool)
            allowed[np.arange(len(label_ids)), label_ids] = True
        result.append(None if allowed.all() else allowed)
    return result


class JointObjective:
    """The negative log-likelihood of a training corpus under a composition, and its
    gradient, as a function of theta [D] = (the components' weights, concatenated) -
    ``center`` [D].  The composition's scales must be 1 (:func:`fit_joint` folds them
    into the weights)."""

    def __init__(self, model: Composition, sentences: list[Sentence], center: np.ndarray, threads: int = 2):
        if any(scale != 1.0 for scale in model.scales):
            raise CompositionError("joint training needs scales of 1; fold them into the weights first")
        self.model = model
        self.sizes = [len(component.weights_) for component in model.components]
        self.bounds = np.cumsum([0] + self.sizes)
        self.num_weights = int(self.bounds[-1])
        self.center = np.asarray(center, dtype=np.float64)
        if self.center.shape != (self.num_weights,):
            raise ShapeError(f"center has shape {self.center.shape}, expected ({self.num_weights},)")
        self.observed = observed_labels(model, sentences)
        self.features = model.component_features(sentences)
        lowest = self.features.features[0]
        #: the sentences' lengths and offsets: their encoded (non-reading) features
        self.batch: EncodedSentences = lowest if isinstance(lowest, EncodedSentences) else lowest.common
        self.transitions = [component.scorer().transitions for component in model.components]
        #: per component, the transition row (class) of each lower label (one row for component 0)
        self.lower_classes = [np.zeros(1, dtype=np.int64)] + [
            model.components[k].transition_classes(model.components[k - 1].labels_)
            for k in range(1, len(model.components))
        ]
        self.plans = thread_plans(self.batch, int(threads), max(1, BLOCK_CELLS // model.space.num_states))

    def component_weights(self, theta: np.ndarray) -> list[np.ndarray]:
        """Per component, its weights float [F_k + T_k] at theta."""
        weights = self.center + theta
        return [weights[lo:hi] for lo, hi in zip(self.bounds, self.bounds[1:])]

    def loss_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The negative log-likelihood (no prior) and its gradient float [D]."""
        weights = self.component_weights(theta)
        transitions = self.model.joint_transitions(weights)  # the same for every block

        def work(plan: list[tuple[int, int]]) -> tuple[float, np.ndarray]:
            gradient = np.zeros(self.num_weights)
            loss = sum(self.block(weights, transitions, first, last, gradient) for first, last in plan)
            return loss, gradient

        results = run_parallel(work, self.plans)
        return float(sum(loss for loss, _ in results)), np.sum([gradient for _, gradient in results], axis=0)

    def clamp(self, first: int, last: int) -> np.ndarray | None:
        """bool [n, P]: the joint states the observed labels of sentences first..last-1
        allow at each token, or None when nothing of them is observed."""
        space, rows = self.model.space, self.batch.token_rows(first, last)
        n = rows.stop - rows.start
        allowed = np.ones((n,) + space.sizes, dtype=bool)
        observed = False
        for k, labels in enumerate(self.observed):
            if labels is None or labels[rows].all():
                continue
            observed = True
            shape = [n] + [1] * len(space.sizes)
            shape[k + 1] = space.sizes[k]
            allowed &= labels[rows][:, self.model.topologies[k].state_label].reshape(shape)
        return allowed.reshape(n, -1) if observed else None

    def block(
        self, weights: list[np.ndarray], transitions: list[np.ndarray], first: int, last: int, gradient: np.ndarray
    ) -> float:
        """Add the gradient of sentences first..last-1 to ``gradient`` [D] and return
        their loss, under ``weights`` (per component) and the joint transition scores
        they give (:meth:`JointModel.joint_transitions`)."""
        space = self.model.space
        allowed = self.clamp(first, last)
        if allowed is None:
            return 0.0
        jp = JointPotentials(
            space,
            joint_emissions(space, self.features.emissions(first, last, weights)),
            self.batch.lengths[first:last],
            transitions,
        )
        free = joint_posteriors(jp)
        observed = self._observed_posteriors(jp, allowed, first)
        self.add_counts(first, last, free, observed, gradient)
        return float(np.sum(free.log_z - observed.log_z))

    def _observed_posteriors(self, jp: JointPotentials, allowed: np.ndarray, first: int) -> JointPosteriors:
        """joint_posteriors of ``jp`` clamped to ``allowed``; LabelError when the observed
        labels of a sentence are impossible together under the composition."""
        single = allowed.sum(axis=1) == 1
        try:
            if single.all() and self.model.space.constraint is None:  # one path: no forward-backward needed
                observed = path_posteriors(jp, allowed.argmax(axis=1))
            else:
                observed = joint_posteriors(jp.clamp(allowed))
        except (InfeasibleError, ShapeError):
            observed = None
        if observed is None or not np.all(np.isfinite(observed.log_z)):
            raise LabelError(
                f"the observed labels of a sentence among sentences {first}..{first + jp.num_sequences - 1} "
                "are not possible together under the composition (its topologies, compatibility "
                "relations or joint grammar)"
            )
        return observed

    def add_counts(
        self, first: int, last: int, free: JointPosteriors, observed: JointPosteriors, out: np.ndarray
    ) -> None:
        """Add to ``out`` [D] the expected feature counts under ``free`` minus those under
        ``observed`` (the posteriors of the same sentences, clamped to what is observed)."""
        model, space = self.model, self.model.space
        if free.node_marginals is None or free.edge_counts is None:
            raise FstcrfError("joint training needs node marginals and edge counts")
        node = free.node_marginals - cast(np.ndarray, observed.node_marginals)
        tensor = node.reshape((len(node),) + space.sizes)
        axes = range(1, len(space.sizes) + 1)
        for k, component in enumerate(model.components):
            grad = out[self.bounds[k] : self.bounds[k + 1]]
            keep = (k, k + 1) if component.reads is not None else (k + 1,)
            marginals = tensor.sum(axis=tuple(a for a in axes if a not in keep))
            self.features.add_counts(k, first, last, np.ascontiguousarray(marginals), grad)
            counts = free.edge_counts[k] - cast(list, observed.edge_counts)[k]  # [S'_{k-1}, E'_k] ([1, E'_0])
            if k:
                counts = lower_label_sum(
                    counts, model.topologies[k - 1].state_label, len(model.components[k - 1].labels_), axis=0
                )
            counts = from_decoding_topology(model.restriction(k), counts, component.topology_.num_edges, edges=True)
            layout = self.transitions[k]
            by_class = np.zeros((layout.num_classes, layout.num_edges))
            np.add.at(by_class, self.lower_classes[k], counts)
            F = component.features_.num_features
            grad[F:] += layout.gradient(by_class if layout.num_lower_labels else by_class[0])


def dev_scorer(model: Composition, dev: Sequence[Sentence]) -> Callable[[Composition], ChunkScores | TagScores]:
    """A function scoring a composition on ``dev`` by its top component's labels
    (chunk F1 or accuracy); FstcrfError if ``dev`` lacks that column."""
    column = model.components[-1].target_
    if not all(column in sentence.column_names for sentence in dev):
        raise FstcrfError(f"the dev corpus has no {column} column, which the top component predicts")
    gold = [sentence[column] for sentence in dev]
    check_single_labels(gold)

    def score(candidate: Composition) -> ChunkScores | TagScores:
        return score_labels(gold, candidate.predict(dev)[-1])

    return score


def with_weights(model: Model, weights: Sequence[np.ndarray]) -> Model:
    """A copy of ``model`` whose components hold ``weights`` (scales 1); the
    components are shallow copies, so ``model`` is left as it was."""
    components = []
    for component, w in zip(model.components, weights):
        fitted = copy.copy(component)
        fitted.weights_ = np.array(w, dtype=np.float64)
        components.append(fitted)
    result = copy.copy(model)
    result.components = tuple(components)
    result.scales = [1.0] * len(components)
    return result


def fit_joint(
    model: Model,
    corpus: Corpus | Sequence[Sentence],
    dev: Corpus | Sequence[Sentence] | None = None,
    *,
    init: str = "warm",
    prior: str = "start",
    sigma: float = DEFAULT_SIGMA,
    max_iter: int = 100,
    tol: float = 1e-7,
    memory: int = LBFGS_MEMORY,
    history: str = "double",
    threads: int | None = None,
    callback=None,
    dev_score: Callable[[Model], ChunkScores | TagScores] | None = None,
) -> tuple[Model, TrainingResult]:
    """Train every component of ``model`` jointly on ``corpus`` by L-BFGS (see the
    module doc): ``init`` "warm" starts from the components' weights (times their
    scales), "zero" from zero; ``prior`` centres the Gaussian prior of standard
    deviation ``sigma`` on the starting weights ("start") or on zero.  With ``dev``,
    the iteration whose top-component score on it is best is kept.  Returns the
    trained copy of ``model`` and the L-BFGS result (history, iterations, whether
    it was interrupted).  ``memory`` and ``history`` are L-BFGS's (its correction pairs,
    and "single" to keep them in float32).  ``dev_score``, instead of ``dev``, scores a candidate
    model by any measure (an object with ``.primary``, higher is better, and
    ``.metric``, its name).  Errors in the corpus are raised before training starts."""
    if init not in JOINT_INITS:
        raise FstcrfError(f"init must be one of {', '.join(JOINT_INITS)}, got {init!r}")
    if prior not in JOINT_PRIORS:
        raise FstcrfError(f"prior must be one of {', '.join(JOINT_PRIORS)}, got {prior!r}")
    sentences = as_sentences(corpus, "JointModel.fit")
    if not sentences:
        raise FstcrfError("JointModel.fit: the training corpus has no sentences")
    top = model.components[-1].target_
    if not any(top in sentence.column_names and any(v != "?" for v in sentence[top]) for sentence in sentences):
        raise LabelError(
            f"the training corpus gives no label of the top component's column {top}; joint training "
            "needs the upper labels (the lower ones may be missing or '?')"
        )
    dev_sentences = None if dev is None else as_sentences(dev, "JointModel.fit (dev)")
    score = dev_score if dev_sentences is None else dev_scorer(model, dev_sentences)
    start = np.concatenate(
        [scale * component.weights_ for scale, component in zip(model.scales, model.components)]
        if init == "warm"
        else [np.zeros(len(component.weights_)) for component in model.components]
    )
    center = start if prior == "start" else np.zeros_like(start)
    unit = with_weights(model, [component.weights_ for component in model.components])
    unit.threads = model.threads if threads is None else int(threads)
    objective = JointObjective(unit, sentences, center, unit.threads)
    logger.info(
        "joint training of %s on %d sentences (%d joint states, %d weights; start %s, prior on %s)",
        " + ".join(model.targets),
        len(sentences),
        model.space.num_states,
        objective.num_weights,
        init,
        "the start" if prior == "start" else "zero",
    )

    def evaluate(theta: np.ndarray):
        assert score is not None  # evaluate is passed only with a dev corpus
        return score(with_weights(unit, objective.component_weights(theta)))

    result = lbfgs(
        objective,
        sigma=sigma,
        max_iter=max_iter,
        tol=tol,
        evaluate=None if score is None else evaluate,
        callback=callback,
        initial=start - center,
        name="joint",
        memory=memory,
        history=history,
    )
    trained = with_weights(unit, objective.component_weights(result.weights))
    trained.threads = model.threads
    return trained, result
