"""A logit decoder with a few parameters fitted on a labelled dev set: a scale on
the logits (a temperature) and transition biases tied by the prefixes of the
labels they join (O->B, B->I, I->I, I->O, ..., as hand-tuned biases are), plus
start and end biases by prefix, fitted by maximum likelihood of the CRF they
define over the logits.

The parameter vector ``theta`` [1 + K + 2C]: the scale, the K biases of the
prefix pairs the topology's edges join, then the C start and C end biases of
the prefix classes.  Its gradient is the gold statistics (forward-backward
under the gold labels) minus the expected ones (forward-backward over every
allowed sequence): node marginals [N, S] for the scale, start and end; expected
edge counts [E] for the pair biases.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fstcrf.engine.inference import ForwardBackward, Potentials, forward_backward, lengths_to_offsets
from fstcrf.engine.topology import chunk_type
from fstcrf.errors import LabelError, ShapeError
from fstcrf.grammar.declaration import label_topology
from fstcrf.engine.constraints import resolve_batch
from fstcrf.engine.kernel.logits import TopologyParts
from fstcrf.logits.decode import (
    DecodedLogits,
    as_numpy,
    decode_potentials,
    decode_rows,
    logit_rows,
    sentence_rows,
    state_log_probs,
)


#: The kernel's parts of each decoder's parameters (:meth:`LogitDecoder.kernel_parts`):
#: decoder -> (its parameters' bytes, the parts).
_kernel_parts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class LabelledLogits:
    """A dev set: float ``rows`` [N, L] (the logits of its tokens), ``lengths`` [B]
    and the index of each token's gold label, ``gold`` int [N]."""

    rows: np.ndarray
    lengths: np.ndarray
    gold: np.ndarray


class LogitDecoder:
    """:func:`~fstcrf.logits.decode_logits` over one topology (built once, so a
    grammar is compiled once), with biases :meth:`fit` on a labelled dev set.

    Before :meth:`fit`, the scale is 1 and every bias 0: the decoder is
    :func:`~fstcrf.logits.decode_logits` without transition scores.

    Attributes:
        topology: the topology of ``labels``, ``scheme`` and ``grammar``.
        classes: the prefix classes (``"O"``, ``"B"``, ``"I"``, ...; a label without
            a dash is its own class), sorted.
        pairs: the K (previous class, next class) pairs the topology's edges join.
        scale_: the fitted factor on the logits.
        transition_bias_: {(previous class, next class): bias}.
        start_bias_, end_bias_: {class: bias}.
        log_likelihood_: mean dev log-likelihood per sentence at the fitted parameters.
        n_iter_: L-BFGS iterations.
    """

    def __init__(
        self,
        labels: Sequence[str],
        scheme: str | None = None,
        grammar=None,
        rule: str = "start",
        params: Mapping[str, str] | None = None,
        l2: float = 0.01,
        max_iter: int = 100,
    ):
        self.topology = label_topology(labels, scheme=scheme, grammar=grammar, rule=rule, params=params)
        self.l2, self.max_iter = l2, max_iter
        label_class = [chunk_type(label)[0] for label in self.topology.labels]
        self.classes = tuple(sorted(set(label_class)))
        self.state_class = np.searchsorted(self.classes, label_class)[self.topology.state_label]
        edge_pairs = (
            self.state_class[self.topology.edge_src] * len(self.classes) + self.state_class[self.topology.edge_dst]
        )
        pair_ids, self.edge_pair = np.unique(edge_pairs, return_inverse=True)
        self.pairs = tuple(
            (self.classes[p // len(self.classes)], self.classes[p % len(self.classes)]) for p in pair_ids
        )

    # -- the parameter vector -------------------------------------------------
    def parameters(self) -> np.ndarray:
        """float [1 + K + 2C]: theta of the fitted parameters (the neutral ones before fit)."""
        if not hasattr(self, "scale_"):
            theta = np.zeros(1 + len(self.pairs) + 2 * len(self.classes))
            theta[0] = 1.0
            return theta
        return np.array(
            [
                self.scale_,
                *map(self.transition_bias_.__getitem__, self.pairs),
                *map(self.start_bias_.__getitem__, self.classes),
                *map(self.end_bias_.__getitem__, self.classes),
            ],
            dtype=np.float64,
        )

    def scores(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The scores ``theta`` puts on the topology's edges, float [E], and on its
        states as first and as last, float [S] each."""
        K, C = len(self.pairs), len(self.classes)
        return (
            theta[1 : 1 + K][self.edge_pair],
            theta[1 + K : 1 + K + C][self.state_class],
            theta[1 + K + C :][self.state_class],
        )

    def potentials(self, theta: np.ndarray, rows: np.ndarray, lengths: np.ndarray) -> Potentials:
        """The potentials of logits ``rows`` [N, L] (sentences of ``lengths`` [B]) under ``theta``."""
        emissions = state_log_probs(theta[0] * rows, self.topology.state_label, lengths_to_offsets(lengths))
        return Potentials(self.topology, emissions, lengths, *self.scores(theta))

    def kernel_parts(self, theta: np.ndarray) -> TopologyParts:
        """The kernel's parts of the topology scored as :meth:`potentials` scores it under
        ``theta`` (the log-probabilities of the scaled logits aside), made once while
        the parameters stay ``theta``."""
        kept = _kernel_parts.get(self)
        key = theta.tobytes()
        if kept is None or kept[0] != key:
            transitions, first, last = self.scores(theta)
            start = np.where(self.topology.start, first, -np.inf)  # as Potentials masks them
            final = np.where(self.topology.final, last, -np.inf)
            for array in (transitions, start, final):
                array.flags.writeable = False
            kept = _kernel_parts[self] = (key, TopologyParts(self.topology, transitions, start, final))
        return kept[1]

    def statistics(self, result: ForwardBackward, pot: Potentials, rows: np.ndarray) -> np.ndarray:
        """float [1 + K + 2C]: the derivative of the log-score summed over the
        distribution ``result`` describes, up to terms that are the same for every
        distribution (each token's log-normaliser)."""
        marginals, C = result.node_marginals, len(self.classes)
        assert marginals is not None and result.edge_counts is not None  # both requested
        state_logits = rows[:, self.topology.state_label]
        firsts, lasts = pot.offsets[:-1], pot.offsets[1:] - 1
        return np.concatenate(
            [
                [np.sum(marginals * state_logits)],
                np.bincount(self.edge_pair, result.edge_counts, minlength=len(self.pairs)),
                np.bincount(self.state_class, marginals[firsts].sum(axis=0), minlength=C),
                np.bincount(self.state_class, marginals[lasts].sum(axis=0), minlength=C),
            ]
        )

    # -- the dev set and its likelihood ----------------------------------------
    def labelled(self, logits, labels: Sequence[Sequence[str]], lengths=None) -> LabelledLogits:
        """The dev set of ``logits`` [T, L] or [B, T, L] (with ``lengths`` [B]) and each
        sentence's gold ``labels``; LabelError naming an unknown or unreachable label."""
        rows, lengths = logit_rows(logits, lengths, self.topology.num_labels)
        if isinstance(labels, str) or len(labels) != len(lengths):
            raise ShapeError(f"labels must hold one label sequence per sentence ({len(lengths)}), got {labels!r}")
        index = {label: i for i, label in enumerate(self.topology.labels)}
        with_state = np.zeros(self.topology.num_labels, dtype=bool)
        with_state[self.topology.state_label] = True
        gold = []
        for b, (sentence, length) in enumerate(zip(labels, lengths)):
            if isinstance(sentence, str) or len(sentence) != length:
                raise ShapeError(f"sentence {b} has {length} tokens of logits but labels {sentence!r}")
            for t, label in enumerate(sentence):
                if label not in index or not with_state[index[label]]:
                    error = LabelError(
                        f"label {label!r} of sentence {b}, token {t} is not one the topology "
                        f"{self.topology.name!r} can output"
                    )
                    error.sentence, error.position = b, t
                    raise error
                gold.append(index[label])
        return LabelledLogits(rows, lengths, np.asarray(gold, dtype=np.int64))

    def likelihoods(self, theta, data: LabelledLogits, gradient: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """float [B]: each sentence's log-likelihood under ``theta``; and with
        ``gradient`` its sum's gradient [1 + K + 2C] (else None)."""
        pot = self.potentials(np.asarray(theta, dtype=np.float64), data.rows, data.lengths)
        expected = forward_backward(pot, marginals=gradient, edge_counts=gradient)
        clamped = pot.clamp(self.topology.state_label[None, :] == data.gold[:, None])
        observed = forward_backward(clamped, marginals=gradient, edge_counts=gradient, allow_infeasible=True)
        rejected = np.flatnonzero(~np.isfinite(observed.log_z))
        if len(rejected):
            raise LabelError(
                f"the gold labels of sentence {int(rejected[0])} are not a sequence the topology "
                f"{self.topology.name!r} allows"
            )
        if not gradient:
            return observed.log_z - expected.log_z, None
        statistics = self.statistics(observed, clamped, data.rows) - self.statistics(expected, pot, data.rows)
        return observed.log_z - expected.log_z, statistics

    def loss(self, theta, data: LabelledLogits) -> tuple[float, np.ndarray]:
        """The negative mean log-likelihood per sentence of ``data`` plus ``l2`` / 2
        times the squared biases, and its gradient [1 + K + 2C]."""
        likelihoods, gradient = self.likelihoods(theta, data, gradient=True)
        assert gradient is not None  # requested
        biases = np.array(theta, dtype=np.float64)
        biases[0] = 0.0
        count = len(data.lengths)
        value = -np.sum(likelihoods) / count + self.l2 / 2 * biases @ biases
        return float(value), -gradient / count + self.l2 * biases

    def log_likelihood(self, logits, labels: Sequence[Sequence[str]], lengths=None) -> float:
        """The mean log-likelihood per sentence of gold ``labels`` under the current parameters."""
        likelihoods, _ = self.likelihoods(self.parameters(), self.labelled(logits, labels, lengths), gradient=False)
        return float(np.mean(likelihoods))

    # -- fitting and decoding ---------------------------------------------------
    def fit(self, logits, labels: Sequence[Sequence[str]], lengths=None) -> LogitDecoder:
        """Fit the scale and biases by L-BFGS (scipy) on dev ``logits`` [T, L] or
        [B, T, L] (with ``lengths`` [B]) and gold ``labels``; returns self."""
        from scipy.optimize import minimize

        data = self.labelled(logits, labels, lengths)
        bounds = [(1e-3, None)] + [(None, None)] * (len(self.parameters()) - 1)
        result = minimize(
            self.loss,
            self.parameters(),
            args=(data,),
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": self.max_iter},
        )
        K, C = len(self.pairs), len(self.classes)
        theta = result.x
        self.scale_ = float(theta[0])
        self.transition_bias_ = {pair: float(b) for pair, b in zip(self.pairs, theta[1 : 1 + K])}
        self.start_bias_ = {c: float(b) for c, b in zip(self.classes, theta[1 + K : 1 + K + C])}
        self.end_bias_ = {c: float(b) for c, b in zip(self.classes, theta[1 + K + C :])}
        self.log_likelihood_ = float(np.mean(self.likelihoods(theta, data, gradient=False)[0]))
        self.n_iter_ = int(result.nit)
        return self

    def decode(self, logits, lengths=None, threads: int = 1, constraints=None) -> DecodedLogits:
        """The best allowed label sequences of ``logits`` [T, L] or [B, T, L] (with
        ``lengths`` [B]) under the current scale and biases, and under ``constraints``
        (one Constraints or None per sentence) when given."""
        if lengths is None and threads == 1 and constraints is None:
            rows = sentence_rows(as_numpy(logits), self.topology.num_labels)
            if rows is not None:  # one sentence: one kernel call on the scores of the parameters
                theta = self.parameters()
                parts = self.kernel_parts(theta)
                return decode_rows(parts, parts.sentence(len(rows)), rows if theta[0] == 1.0 else theta[0] * rows)
        rows, lengths = logit_rows(logits, lengths, self.topology.num_labels)
        rules = resolve_batch(constraints, lengths, self.topology.labels, "LogitDecoder.decode")
        return decode_potentials(self.potentials(self.parameters(), rows, lengths), threads, rules)
