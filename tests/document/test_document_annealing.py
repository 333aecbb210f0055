"""Annealed decoding of the product of a chain CRF and non-local factors, against
enumeration: at T = 1 both samplers draw from the exact product distribution
(chi-square, with the power to see a 2% error), cooled they reach the exact MAP
labelling, without factors they return Viterbi, and bad settings are typed errors."""

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from fstcrf.document.annealing import AnnealingError, anneal
from fstcrf.document.consistency import ConsistencyFactor, ConsistencyPenalties
from fstcrf.document.factors import DocumentFactor, FactorError, LabelledDocument
from fstcrf.engine.inference import Potentials, viterbi
from fstcrf.engine.topology import first_order, second_order

from oracles import BruteForce

#: I- labels only (read as IOB1), so two neighbouring I-A tokens make one two-token
#: entity and both the same-sequence and the sub-sequence penalties come into play.
LABELS = ("O", "I-A", "I-B")
TOPOLOGY = first_order(LABELS)
FACTOR = ConsistencyFactor(
    ConsistencyPenalties(("A", "B"), np.array([[1.0, 0.25], [0.25, 1.0]]), np.array([[1.0, 0.4], [0.5, 1.0]]))
)


class Scores:
    """Random local scores of one document [sentences of ``lengths`` tokens] over TOPOLOGY."""

    def __init__(self, rng, lengths, spread=1.5, shared=None):
        """``shared``: another document's Scores whose transition, start and final scores to reuse."""
        S, E = TOPOLOGY.num_states, TOPOLOGY.num_edges
        self.lengths = list(lengths)
        self.emissions = rng.uniform(-spread, spread, (sum(lengths), S))
        if shared is None:
            self.transitions = rng.uniform(-1.0, 1.0, E)
            self.start = rng.uniform(-0.5, 0.5, S)
            self.final = rng.uniform(-0.5, 0.5, S)
        else:
            self.transitions, self.start, self.final = shared.transitions, shared.start, shared.final

    def potentials(self, copies=1, emissions=None):
        """Potentials of ``copies`` copies of the document (or of the stacked ``emissions``)."""
        emissions = np.tile(self.emissions, (copies, 1)) if emissions is None else emissions
        return Potentials(TOPOLOGY, emissions, self.lengths * copies, self.transitions, self.start, self.final)

    def exact(self, words, factors=(FACTOR,), index=0):
        """(labellings [M, N] of the whole document, product log scores [M]) by enumeration."""
        offsets = np.concatenate([[0], np.cumsum(self.lengths)])
        per_sentence = [
            BruteForce(TOPOLOGY, self.emissions[offsets[j] : offsets[j + 1]], self.transitions, self.start, self.final)
            for j in range(len(self.lengths))
        ]
        labellings, scores = [], []
        for choice in itertools.product(*[range(oracle.num_paths) for oracle in per_sentence]):
            paths = [oracle.paths[i] for oracle, i in zip(per_sentence, choice)]
            labels = [TOPOLOGY.state_label[path].tolist() for path in paths]
            document = LabelledDocument(words, LABELS, labels, index)
            local = sum(float(oracle.scores[i]) for oracle, i in zip(per_sentence, choice))
            labellings.append(np.concatenate(paths))
            scores.append(local + sum(factor.log_score(document) for factor in factors))
        return np.array(labellings), np.array(scores)


def _chi_square_p(counts, probabilities):
    """p-value of observed ``counts`` against ``probabilities``, cells expected < 5 merged."""
    expected = probabilities * counts.sum()
    small = expected < 5
    observed = np.append(counts[~small], counts[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    return chisquare(observed, expected).pvalue


def _draws(scores, words, copies, sampler, block_size, sweeps, seed):
    """Counts [M] of each labelling among the final states of ``copies`` independent chains."""
    labellings, log_scores = scores.exact(words)
    N = sum(scores.lengths)
    result = anneal(
        scores.potentials(copies),
        [(j * len(words), (j + 1) * len(words)) for j in range(copies)],
        words * copies,
        LABELS,
        TOPOLOGY.state_label,
        [FACTOR],
        sampler,
        sweeps,
        1.0,
        1.0,
        block_size,
        seed,
    )
    index = {tuple(row): i for i, row in enumerate(labellings.tolist())}
    drawn = np.array([index[tuple(row)] for row in result.final.reshape(copies, N).tolist()])
    probabilities = np.exp(log_scores - log_scores.max())
    return np.bincount(drawn, minlength=len(labellings)), probabilities / probabilities.sum()


#: Every chain starts at Viterbi, so its sweeps are burn-in; blocks of one token (block_size 1)
#: move about half the tokens per sweep and need more of them.
@pytest.mark.slow
@pytest.mark.parametrize("sampler, block_size, sweeps", [("gibbs", 0, 5), ("block", 0, 5), ("block", 1, 15)])
def test_at_temperature_one_the_samplers_draw_the_exact_product_distribution(sampler, block_size, sweeps):
    rng = np.random.default_rng(11)
    words = [["x"], ["x", "y"]]  # 2 sentences, 3 tokens, 27 labellings
    scores = Scores(rng, [1, 2])
    counts, exact = _draws(scores, words, 4000, sampler, block_size, sweeps=sweeps, seed=3)
    assert _chi_square_p(counts, exact) > 1e-3
    # the same draws tell apart a distribution 2% away in total variation: a point mass
    # on a labelling of probability near 1% (not the most likely one) mixed in
    likely = int(np.argmin(np.abs(exact - 0.01)))
    assert exact[likely] < exact.max()
    perturbed = 0.98 * exact
    perturbed[likely] += 0.02
    assert _chi_square_p(counts, perturbed) < 1e-3


def test_the_factor_changes_the_exact_distribution():
    """The chi-square test above would be blind to a sampler that ignored the factor if the
    factor barely moved the distribution; here it moves it by far more than 2%."""
    rng = np.random.default_rng(11)
    words = [["x"], ["x", "y"]]
    scores = Scores(rng, [1, 2])
    _, with_factor = scores.exact(words)
    _, local = scores.exact(words, factors=())
    p, q = (np.exp(s - s.max()) / np.exp(s - s.max()).sum() for s in (with_factor, local))
    assert 0.5 * np.abs(p - q).sum() > 0.05


def _stacked(seed, count):
    """``count`` random tiny documents (2-3 sentences, at most 7 tokens, words x and y)
    sharing transition scores: (their Scores, one Potentials of them all, spans, words)."""
    rng = np.random.default_rng(seed)
    documents, spans, words = [], [], []
    for _ in range(count):
        lengths = rng.integers(1, 4, int(rng.integers(2, 4)))
        while lengths.sum() > 7:
            lengths = rng.integers(1, 4, int(rng.integers(2, 4)))
        documents.append(Scores(rng, lengths.tolist(), 1.0, documents[0] if documents else None))
        spans.append((len(words), len(words) + len(lengths)))
        words.extend([str(w) for w in rng.choice(["x", "y"], T)] for T in lengths)
    first = documents[0]
    pot = Potentials(
        TOPOLOGY,
        np.concatenate([d.emissions for d in documents]),
        [T for d in documents for T in d.lengths],
        first.transitions,
        first.start,
        first.final,
    )
    return documents, pot, spans, words


@pytest.mark.parametrize("sampler, block_size", [("gibbs", 0), ("block", 0), ("block", 1)])
def test_annealing_reaches_the_exact_map_labelling(sampler, block_size):
    shared, pot, spans, words = _stacked(7, 12)
    result = anneal(
        pot,
        spans,
        words,
        LABELS,
        TOPOLOGY.state_label,
        [FACTOR],
        sampler,
        sweeps=60,
        t_start=1.0,
        t_end=0.02,
        block_size=block_size,
        seed=1,
    )
    local_map_differs = 0
    for d, (scores, (first, last)) in enumerate(zip(shared, spans)):
        labellings, log_scores = scores.exact(words[first:last], index=d)
        best = int(np.argmax(log_scores))
        rows = slice(int(pot.offsets[first]), int(pot.offsets[last]))
        assert result.best_score[d] == pytest.approx(log_scores[best], abs=1e-9)
        assert result.best[rows].tolist() == labellings[best].tolist()
        assert result.best_score[d] >= result.viterbi_score[d]
        local_map_differs += result.best_score[d] > result.viterbi_score[d] + 1e-9
    assert local_map_differs >= 2  # the factor matters on some of the instances


@pytest.mark.parametrize("sampler, block_size", [("gibbs", 0), ("block", 0), ("block", 2)])
def test_without_factors_the_result_is_exactly_viterbi(sampler, block_size):
    shared, pot, spans, words = _stacked(21, 10)
    paths = viterbi(pot).paths
    result = anneal(
        pot,
        spans,
        words,
        LABELS,
        TOPOLOGY.state_label,
        [],
        sampler,
        sweeps=8,
        t_start=2.0,
        t_end=0.5,
        block_size=block_size,
        seed=4,
    )
    np.testing.assert_array_equal(result.best, paths)
    np.testing.assert_array_equal(result.best_score, result.viterbi_score)
    assert result.proposed > 0  # the chain did move, at these temperatures


def test_without_factors_block_moves_on_a_second_order_topology_return_viterbi():
    rng = np.random.default_rng(2)
    topology = second_order(["O", "A"])
    lengths = [3, 1, 4, 2]
    pot = Potentials(
        topology, rng.normal(size=(sum(lengths), topology.num_states)), lengths, rng.normal(size=topology.num_edges)
    )
    result = anneal(
        pot,
        [(0, 2), (2, 4)],
        [["w"] * T for T in lengths],
        topology.labels,
        topology.state_label,
        [],
        "block",
        sweeps=5,
        t_start=1.5,
        t_end=0.5,
        seed=0,
    )
    np.testing.assert_array_equal(result.best, viterbi(pot).paths)
    with pytest.raises(AnnealingError, match="one state per label"):
        anneal(
            pot, [(0, 4)], [["w"] * T for T in lengths], topology.labels, topology.state_label, [], "gibbs", sweeps=2
        )


def test_best_score_is_never_below_viterbi_and_scores_the_best_labelling():
    shared, pot, spans, words = _stacked(5, 8)
    result = anneal(
        pot, spans, words, LABELS, TOPOLOGY.state_label, [FACTOR], "block", sweeps=4, t_start=1.0, t_end=0.5, seed=9
    )
    local = pot.path_scores(result.best)[0]
    for d, (first, last) in enumerate(spans):
        labels = [
            TOPOLOGY.state_label[result.best[pot.offsets[j] : pot.offsets[j + 1]]].tolist() for j in range(first, last)
        ]
        expected = local[first:last].sum() + FACTOR.log_score(LabelledDocument(words[first:last], LABELS, labels, d))
        assert result.best_score[d] == pytest.approx(expected, abs=1e-9)
        assert result.best_score[d] >= result.viterbi_score[d]


def _small_problem():
    rng = np.random.default_rng(0)
    scores = Scores(rng, [2, 3])
    return scores.potentials(), [["x", "y"], ["y", "x", "x"]]


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"sampler": "metropolis"}, "sampler must be one of"),
        ({"sweeps": 0}, "sweeps must be a whole number >= 1, got 0"),
        ({"sweeps": 2.5}, "sweeps"),
        ({"t_start": 0.5, "t_end": 1.0}, "t_end 1.0 is above t_start 0.5"),
        ({"t_end": 0.0}, "t_end must be a finite temperature > 0"),
        ({"t_start": float("nan")}, "t_start"),
        ({"block_size": -1}, "block_size must be a whole number >= 0"),
        ({"block_size": True}, "block_size"),
    ],
)
def test_bad_settings_are_annealing_errors(settings, message):
    pot, words = _small_problem()
    with pytest.raises(AnnealingError, match=message) as raised:
        anneal(pot, [(0, 2)], words, LABELS, TOPOLOGY.state_label, [FACTOR], **settings)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(
    "spans", [[], [(0, 1)], [(1, 2)], [(0, 1), (0, 2)], [(0, 0), (0, 2)], [(0, 1), (1, 3)], [(1, 2), (0, 1)]]
)
def test_documents_must_cover_the_sentences_in_order(spans):
    pot, words = _small_problem()
    with pytest.raises(AnnealingError, match="cover the 2 sentences"):
        anneal(pot, spans, words, LABELS, TOPOLOGY.state_label, [FACTOR])


def test_an_empty_last_document_is_rejected():
    pot, words = _small_problem()
    with pytest.raises(AnnealingError, match="cover the 2 sentences"):
        anneal(pot, [(0, 2), (2, 2)], words, LABELS, TOPOLOGY.state_label, [FACTOR])


class _FailsOnDocument(DocumentFactor):
    """Fails (raises, or returns ``value``) on document ``bad`` when a token there is I-A."""

    name = "fussy"

    def __init__(self, bad, value=None):
        self.bad, self.value = bad, value

    def log_score(self, document):
        if document.index == self.bad and any(1 in labels for labels in document.labels):
            if self.value is None:
                raise RuntimeError("cannot score this")
            return self.value
        return 0.0


@pytest.mark.parametrize("value", [None, float("nan"), float("inf")])
@pytest.mark.parametrize("sampler", ["gibbs", "block"])
def test_a_failing_factor_stops_annealing_with_a_factor_error_naming_the_document(sampler, value):
    rng = np.random.default_rng(3)
    scores = Scores(rng, [2, 2])
    scores.emissions[:, 1] -= 4.0  # Viterbi avoids I-A; sampling at T = 3 proposes it
    words = [["x", "y"], ["y", "x"]]
    pot = Potentials(TOPOLOGY, np.tile(scores.emissions, (3, 1)), [2, 2] * 3, scores.transitions)
    with pytest.raises(FactorError, match=r"'fussy'.*document 1\b"):
        anneal(
            pot,
            [(0, 2), (2, 4), (4, 6)],
            words * 3,
            LABELS,
            TOPOLOGY.state_label,
            [_FailsOnDocument(1, value)],
            sampler,
            sweeps=20,
            t_start=3.0,
            t_end=3.0,
            seed=0,
        )
