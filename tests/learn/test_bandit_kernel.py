"""The bandit learner's C minibatch work (csrc/fstcrf_bandit.c) against the kernel
pieces and numpy formulas it replaced: the draws and posteriors equal those of the
separate kernel calls, the gradient and the fused step are bit for bit those of
the numpy reference, and a seeded run gives the weights of the unfused learner."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from fstcrf.corpus.conll import Corpus, Sentence
from fstcrf.corpus.labels import chain_topology
from fstcrf.engine import kernel
from fstcrf.features.encoding import EncodedSentences, TransitionWeights, build_features
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import parse_template
from fstcrf.learn import bandit
from fstcrf.learn.bandit import SampledGradient, SparseGradient
from fstcrf.learn.feedback import ChunkTables, sentence_accuracy, sentence_chunk_f1, simulated_feedback
from fstcrf.learn.objective import Scorer
from fstcrf.learn.settings import BanditSettings
from fstcrf.engine.inference import neighbours
from fstcrf.errors import FstcrfError, LabelError, ShapeError, TopologyError
from tests.learn.test_bandit import enumeration
from tests.strategies import oracle_settings

TEMPLATE = "bias\nword[0]\nword[-1]|word[0]\n"
LABELS = ["B-NP", "I-NP", "O"]
LOWER = 2  # lower labels of the token-class instances: classes 0, 1 and 2 (unseen)


def corpus_of(seed: int, lengths) -> Corpus:
    rng = np.random.default_rng(seed)
    sentences = [
        Sentence(
            {
                "word": [str(w) for w in rng.choice(list("abcde"), size=n)],
                "chunk": [LABELS[i] for i in rng.integers(0, 3, size=n)],
            }
        )
        for n in lengths
    ]
    return Corpus(("word", "chunk"), sentences)


def sampled_gradient(corpus: Corpus, order: int, classes: bool, threads: int = 1, seed: int = 0) -> SampledGradient:
    """The sampled gradient of ``corpus`` under complete features; with ``classes``,
    random token classes and transitions that depend on them."""
    extractor = FeatureExtractor(parse_template(TEMPLATE))
    encoded = EncodedSentences.from_corpus(extractor, corpus, fit=True)
    topology = chain_topology(order, LABELS)
    layout = None
    if classes:
        token_class = np.random.default_rng(seed).integers(0, LOWER + 1, size=encoded.num_tokens)
        encoded = EncodedSentences(encoded.rows(), encoded.lengths, token_class)
        layout = TransitionWeights(topology.num_edges, LOWER)
    features = build_features(encoded, None, None, topology, order, "complete", extractor.vocabulary_.get("bias"))
    return SampledGradient(Scorer(features, topology, threads, transitions=layout), encoded)


instances = st.tuples(
    st.integers(0, 2**32 - 1),  # seed
    st.lists(st.integers(1, 6), min_size=1, max_size=7),  # sentence lengths
    st.sampled_from([1, 2]),  # order
    st.booleans(),  # token classes
    st.integers(1, 3),  # draws
    st.sampled_from([1.0, -1.0]),  # sign
)
#: Weight scales: at 1 every sentence is drawn from the scaled (linear-domain) forward
#: pass; at 150 scores lie more than 230 nats apart and the draws fall back to the log domain.
SCALES = st.sampled_from([1.0, 150.0])


@settings(max_examples=60, deadline=None)
@given(instances, SCALES)
def test_draws_and_posteriors_are_the_separate_kernel_calls(instance, scale):
    """The posteriors are fc_forward_backward's bit for bit.  The draws (fc_sample_scaled,
    from the scaled forward pass) are fc_sample's: both consume the same uniforms, and
    their weights of each step back are proportional, so they pick the same state unless
    a uniform falls within rounding of a boundary between two states."""
    seed, lengths, order, classes, draws, sign = instance
    gradient = sampled_gradient(corpus_of(seed, lengths), order, classes, seed=seed)
    scorer, encoded = gradient.scorer, gradient.encoded
    theta = np.random.default_rng(seed).normal(0.0, scale, gradient.num_weights)
    B = encoded.num_sequences
    F = scorer.features.num_features
    # the lines of a step state asked for on the way are a hint: the results stay the same
    gradient.step_state = [None, np.zeros(F), np.zeros((F, 2))][seed % 3]
    paths, posteriors = gradient.draw(theta, 0, B, draws, seed, sign)
    transitions = np.ascontiguousarray(scorer.transitions.scores(sign * theta[F:]))
    scores = kernel.Scores(
        transitions, np.where(scorer.topology.start, 0.0, -np.inf), np.where(scorer.topology.final, 0.0, -np.inf)
    )
    graph = kernel.Graph(scorer.topology)
    columns = []
    for number, piece in enumerate(posteriors.pieces):
        emissions = scorer.features.emissions(encoded.tokens(piece.first, piece.last), theta[:F], sign)
        rows = encoded.token_rows(piece.first, piece.last)
        token_class = None if encoded.token_class is None else encoded.token_class[rows]
        lengths_ = encoded.lengths[piece.first : piece.last]
        batch = kernel.Batch(np.concatenate([[0], np.cumsum(lengths_)]).astype(np.int64), emissions, token_class)
        workspace = kernel.chain_workspace(scorer.topology, scorer.transitions.num_classes, int(lengths_.max()))
        log_z, marginals = np.empty(len(lengths_)), np.empty(emissions.shape)
        edge_counts = np.zeros((len(lengths_), *transitions.shape))
        kernel.forward_backward(graph, scores, batch, log_z, marginals, edge_counts, workspace, each_sentence=True)
        expected_paths = np.empty((draws, len(emissions)), dtype=np.int32)
        kernel.sample(graph, scores, batch, (seed + number) % 2**64, 0, expected_paths, workspace)
        assert np.array_equal(piece.emissions, emissions)
        assert np.array_equal(piece.log_z, log_z)
        assert np.array_equal(piece.marginals, marginals)
        assert np.array_equal(piece.edge_counts, edge_counts)
        columns.append(expected_paths)
    assert np.array_equal(paths, np.concatenate(columns, axis=1))


#: Draws per sentence of the chi-square test.
CHI_SQUARE_DRAWS = 4000


@oracle_settings(25)
@given(instances, SCALES)
def test_the_draws_follow_the_exact_path_probabilities(instance, scale):
    """fb_draw's sampler against p(path | x) by enumerating every path (Potentials.score,
    independent of the kernel): a chi-square test per sentence over 4,000 draws, paths
    expected fewer than 5 times pooled into one cell."""
    seed, lengths, order, classes, _, sign = instance
    short = [min(length, 3) for length in lengths[:3]]  # at most 8^3 paths per sentence to enumerate
    gradient = sampled_gradient(corpus_of(seed, short), order, classes, seed=seed)
    encoded = gradient.encoded
    theta = np.random.default_rng(seed).normal(0.0, scale, gradient.num_weights)
    paths, _ = gradient.draw(theta, 0, encoded.num_sequences, CHI_SQUARE_DRAWS, seed, sign)
    for b, (exact_paths, probabilities) in enumerate(enumeration(gradient, theta, sign)):
        index = {tuple(path): i for i, path in enumerate(exact_paths)}
        drawn = paths[:, encoded.token_rows(b, b + 1)]
        observed = np.bincount([index[tuple(path)] for path in drawn], minlength=len(exact_paths))
        kept = probabilities * CHI_SQUARE_DRAWS >= 5
        expected = np.append(probabilities[kept], probabilities[~kept].sum()) * CHI_SQUARE_DRAWS
        counts = np.append(observed[kept], observed[~kept].sum())
        if expected[-1] == 0:
            expected, counts = expected[:-1], counts[:-1]
        if len(expected) == 1:  # one path carries all the mass: every draw must be it
            assert counts[0] == CHI_SQUARE_DRAWS
            continue
        statistic = float(np.sum((counts - expected) ** 2 / expected))
        assert stats.chi2.sf(statistic, len(expected) - 1) > 1e-4, (b, statistic)


def reference_gradient(gradient: SampledGradient, posteriors, paths, coefficients) -> np.ndarray:
    """The numpy formulas the C gradient replaced: float [F + T]."""
    scorer, encoded = gradient.scorer, gradient.encoded
    F = scorer.features.num_features
    sign, first, last = posteriors.sign, posteriors.pieces[0].first, posteriors.pieces[-1].last
    layout = scorer.transitions
    buffers = [np.zeros(F) for _ in posteriors.pieces]
    expected = 0
    for number, piece in enumerate(posteriors.pieces):
        lo, hi = piece.first - first, piece.last - first
        rows = encoded.token_rows(piece.first, piece.last)
        local = slice(rows.start - encoded.offsets[first], rows.stop - encoded.offsets[first])
        weights = coefficients[:, lo:hi].sum(axis=0)
        sentence_of = np.repeat(np.arange(hi - lo), piece.lengths)
        marks = piece.marginals * -weights[sentence_of][:, None]
        for k, path in enumerate(paths):
            marks[np.arange(len(marks)), path[local]] += coefficients[k, lo + sentence_of]
        scorer.features.accumulate(encoded.tokens(piece.first, piece.last), marks, buffers[number], sign)
        expected = expected + np.tensordot(weights, piece.edge_counts, axes=1)
    offsets = encoded.offsets[first : last + 1] - encoded.offsets[first]
    before, after = neighbours(offsets, offsets[-1])
    token_class = None if encoded.token_class is None else encoded.token_class[encoded.token_rows(first, last)][after]
    per_edge = np.repeat(np.arange(last - first), np.diff(offsets) - 1)
    total = 0.0
    for k, path in enumerate(paths):
        edges = scorer.topology.edge_ids[path[before], path[after]]
        total = total + layout.gradient(layout.path_counts(edges, token_class, coefficients[k, per_edge]))
    features = 0.0
    for buffer in buffers:
        features = features + buffer
    return np.concatenate([features, sign * (total - layout.gradient(expected))])


@settings(max_examples=60, deadline=None)
@given(instances)
def test_the_gradient_is_the_numpy_formula_bit_for_bit(instance):
    seed, lengths, order, classes, draws, sign = instance
    gradient = sampled_gradient(corpus_of(seed, lengths), order, classes, seed=seed)
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, gradient.num_weights)
    B = gradient.encoded.num_sequences
    first = int(rng.integers(0, B))
    paths, posteriors = gradient.draw(theta, first, B, draws, seed, sign)
    coefficients = rng.normal(size=(draws, B - first))
    gradient.add_gradient(posteriors, paths, coefficients)
    result = gradient.take(first, B).dense(gradient.scorer.features.num_features)
    assert np.array_equal(result, reference_gradient(gradient, posteriors, paths, coefficients))


@settings(max_examples=60, deadline=None)
@given(instances.filter(lambda instance: instance[4] >= 2))
def test_without_expectations_the_gradient_of_coefficients_summing_to_zero_is_the_same(instance):
    """sum_k c_k (phi(y_k) - E[phi]) = sum_k c_k phi(y_k) when sum_k c_k = 0: the draws
    without posteriors (no backward pass) give the same gradient, to rounding, and
    exactly when the coefficients cancel exactly (pairwise-independent's +c and -c)."""
    seed, lengths, order, classes, draws, sign = instance
    gradient = sampled_gradient(corpus_of(seed, lengths), order, classes, seed=seed)
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, gradient.num_weights)
    B, F = gradient.encoded.num_sequences, gradient.scorer.features.num_features
    first = int(rng.integers(0, B))
    raw = rng.normal(size=(draws, B - first))
    centred = raw - raw.mean(axis=0, keepdims=True)
    half = rng.choice([-0.25, 0.0, 0.25], size=(draws // 2, B - first))
    opposed = np.concatenate([half, -half, np.zeros((draws % 2, B - first))])
    for coefficients, exact in ((centred, False), (opposed, True)):
        results = []
        for expectations in (True, False):
            paths, posteriors = gradient.draw(theta, first, B, draws, seed, sign, expectations=expectations)
            assert (posteriors.marginals is None) == (not expectations)
            gradient.add_gradient(posteriors, paths, coefficients)
            results.append((paths, posteriors.log_z, gradient.take(first, B).dense(F)))
        (paths, log_z, full), (paths_alone, log_z_alone, alone) = results
        assert np.array_equal(paths, paths_alone) and np.array_equal(log_z, log_z_alone)
        if exact:
            assert np.array_equal(full, alone)
        else:
            np.testing.assert_allclose(alone, full, rtol=0, atol=1e-12 * max(1.0, np.abs(full).max()))


def test_the_expectation_cancels_for_leave_one_out_and_pairwise_independent_draws():
    cancels = {
        (objective, baseline): bandit.expectation_cancels(BanditSettings(objective=objective, baseline=baseline))
        for objective, baseline in [
            ("expected", "loo"),
            ("expected", "mean"),
            ("expected", "none"),
            ("pairwise-independent", "none"),
            ("pairwise", "loo"),
            ("cross-entropy", "loo"),
        ]
    }
    assert [key for key, value in cancels.items() if value] == [("expected", "loo"), ("pairwise-independent", "none")]
    default = BanditSettings()
    default.check()  # the default baseline with 4 draws: leave-one-out
    assert bandit.expectation_cancels(default)


@settings(max_examples=60, deadline=None)
@given(instances, st.randoms(use_true_random=False))
def test_the_layout_lists_each_predicate_of_the_minibatch_once_in_ascending_order(instance, random):
    seed, lengths, order, classes, _, _ = instance
    gradient = sampled_gradient(corpus_of(seed, lengths), order, classes, seed=seed)
    encoded = gradient.encoded
    B, P = encoded.num_sequences, encoded.num_predicates
    first = random.randrange(B)
    last = random.randrange(first + 1, B + 1)
    low, high = int(encoded.offsets[first]), int(encoded.offsets[last])
    piece_rows = np.array([low, random.randint(low, high), high], dtype=np.int64)
    layout = kernel.bandit.GradientLayout(P, [np.zeros(0), np.zeros(0)])
    m, U = kernel.bandit.index(gradient._training, layout, piece_rows)

    def used(a: int, b: int) -> set:
        return set(encoded.indices[encoded.indptr[a] : encoded.indptr[b]].tolist())

    pieces = [used(piece_rows[q], piece_rows[q + 1]) for q in range(2)]
    expected = np.array(sorted(pieces[0] | pieces[1]), dtype=np.int64)
    seen, order_of, pieces_of, at = layout.seen, layout.order, layout.pieces_of, layout.at
    assert m == len(expected) and order_of[:m].tolist() == expected.tolist()
    ptr = gradient.scorer.features.ptr
    sizes = ptr[expected + 1] - ptr[expected]
    assert U == sizes.sum()
    assert at[expected].tolist() == np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
    assert np.count_nonzero(at >= 0) == m  # every other predicate stays -1
    assert pieces_of[:m].tolist() == [(p in pieces[0]) | (p in pieces[1]) << 1 for p in expected.tolist()]
    assert not seen.any()  # the scratch bits are left clear


def test_the_layout_refuses_too_few_buffers_other_predicates_and_rows_that_do_not_ascend():
    gradient = sampled_gradient(corpus_of(1, [3, 4]), 2, False)
    P = gradient.encoded.num_predicates
    for layout in (
        kernel.bandit.GradientLayout(P, [np.zeros(0)]),  # one buffer short for two pieces
        kernel.bandit.GradientLayout(P + 1, [np.zeros(0), np.zeros(0)]),
    ):
        with pytest.raises(ShapeError, match="fb_index"):
            kernel.bandit.index(gradient._training, layout, np.array([0, 3, 7], dtype=np.int64))
    layout = kernel.bandit.GradientLayout(P, [np.zeros(0), np.zeros(0)])
    with pytest.raises(RuntimeError, match="fb_index"):  # Python never passes such rows: a bug
        kernel.bandit.index(gradient._training, layout, np.array([0, 5, 3], dtype=np.int64))
    assert (layout.at == -1).all() and not layout.seen.any()


def test_a_second_minibatch_before_the_first_is_stepped_is_refused():
    gradient = sampled_gradient(corpus_of(2, [3, 4, 2]), 2, False)
    theta = np.random.default_rng(2).normal(size=gradient.num_weights)
    for first, last in ((0, 2), (1, 3)):
        paths, posteriors = gradient.draw(theta, first, last, 1, 0)
        if first == 1:
            with pytest.raises(FstcrfError, match="not taken or stepped"):
                gradient.add_gradient(posteriors, paths, np.ones((1, last - first)))
        else:
            gradient.add_gradient(posteriors, paths, np.ones((1, last - first)))


@pytest.mark.parametrize("rule", ["constant", "adagrad", "adam"])
@pytest.mark.parametrize("threads, inline_tokens", [(1, 0), (2, 0), (2, 4096)])
def test_the_fused_step_is_take_then_apply(rule, threads, inline_tokens, monkeypatch):
    # pieces on the pool even for these small minibatches, or on the partner thread
    monkeypatch.setattr(bandit, "_INLINE_TOKENS", inline_tokens)
    corpus = corpus_of(11, [5, 3, 6, 2, 4, 4, 1, 6])
    fused, unfused = (sampled_gradient(corpus, 2, False, threads=threads) for _ in range(2))
    F = fused.scorer.features.num_features
    D = fused.num_weights
    rng = np.random.default_rng(2)
    theta = {name: rng.normal(size=D) for name in ("fused", "unfused")}
    theta["unfused"][:] = theta["fused"]
    steps = {"fused": bandit._Steps(rule, 0.01, F, D), "unfused": SeparateSteps(rule, 0.01, F, D)}
    B = fused.encoded.num_sequences
    for step in range(6):
        first = int(rng.integers(0, B - 1))
        last = int(rng.integers(first + 1, B + 1))
        paths, posteriors = fused.draw(theta["fused"], first, last, 2, step)
        coefficients = rng.normal(size=(2, last - first))
        fused.add_gradient(posteriors, paths, coefficients)
        paths, posteriors = unfused.draw(theta["unfused"], first, last, 2, step)
        unfused.add_gradient(posteriors, paths, coefficients)
        fused.step(first, last, steps["fused"], theta["fused"])
        gradient = unfused.take(first, last)
        apply_sparse(steps["unfused"], theta["unfused"], gradient)
        assert np.array_equal(theta["fused"], theta["unfused"])
        assert steps["unfused"].same_state(steps["fused"])
    # the buffers were left clear: nothing is carried into the next minibatch
    assert all(not buffer.any() for buffer in fused._compact.buffers)
    assert not fused._compact.seen.any()
    assert isinstance(gradient, SparseGradient)


class SeparateSteps:
    """The step state as fu_apply keeps it, before Adam's moments were interleaved:
    squares and moments float [D] (None where the rule keeps none), with the rule
    sequence of bandit._Steps."""

    def __init__(self, rule: str, rate: float, num_features: int, size: int):
        self.rules = bandit._Steps(rule, rate, num_features, size)
        self.num_features = num_features
        self.squares = np.zeros(size) if rule in ("adagrad", "adam") else None
        self.moments = np.zeros(size) if rule == "adam" else None

    def next_rule(self) -> kernel.StepRule:
        return self.rules.next_rule()

    def same_state(self, steps: bandit._Steps) -> bool:
        """Whether ``steps`` (features interleaved, transitions apart) hold this state bit for bit."""
        F = self.num_features
        if self.squares is None:
            return steps.features is None and steps.squares is None
        squares = steps.features if self.moments is None else steps.features[:, 1]
        same = np.array_equal(squares, self.squares[:F]) and np.array_equal(steps.squares, self.squares[F:])
        if self.moments is not None:
            same = same and np.array_equal(steps.features[:, 0], self.moments[:F])
            same = same and np.array_equal(steps.moments, self.moments[F:])
        return bool(same)


def apply_sparse(steps, theta: np.ndarray, gradient: SparseGradient) -> None:
    """The step as the learner made it before the fused step: fu_apply at the sparse
    gradient's coordinates."""
    at = np.concatenate([gradient.indices, steps.num_features + np.arange(len(gradient.transitions))])
    values = np.concatenate([gradient.values, gradient.transitions])
    kernel.apply_step(steps.next_rule(), theta, steps.squares, steps.moments, at, values)


@pytest.mark.parametrize("bad", ["state", "edge"])
@pytest.mark.parametrize("threads", [1, 2])  # on two, the second piece's call refused on the partner thread
def test_a_path_the_topology_does_not_allow_is_refused_before_any_output(bad, threads):
    gradient = sampled_gradient(corpus_of(1, [3, 4, 2, 5]), 2, False, threads=threads)
    theta = np.random.default_rng(1).normal(size=gradient.num_weights)
    paths, posteriors = gradient.draw(theta, 0, 4, 1, 0)
    assert (gradient._partner is not None) == (threads == 2)
    topology = gradient.scorer.topology
    if bad == "state":
        paths[0, 1] = topology.num_states
    else:  # two states no edge joins, inside the first sentence
        a, b = np.argwhere(topology.edge_ids < 0)[0]
        paths[0, :2] = a, b
    with pytest.raises(TopologyError, match="topology"):
        gradient.add_gradient(posteriors, paths, np.ones((1, 4)))
    assert not any(buffer.any() for buffer in gradient._compact.buffers)  # refused before any output
    assert gradient._layout is None and (gradient._compact.at == -1).all()  # and the layout made for it forgotten
    gradient.close()


class UnfusedRun(bandit._Run):
    """The learner as it was before the fused step: the gradient taken as a sparse
    vector, then stepped by fu_apply on separate squares and moments."""

    def __init__(self, gradient, feedback, settings_, order):
        super().__init__(gradient, feedback, settings_, order)
        F = gradient.scorer.features.num_features
        self.steps = SeparateSteps(settings_.step, settings_.learning_rate, F, gradient.num_weights)

    def epoch(self):
        B = self.gradient.encoded.num_sequences
        size = self.settings.batch_size
        for first in self.rng.permutation(np.arange(0, B, size)).tolist():
            last = min(first + size, B)
            gradient = bandit.minibatch_gradient(
                self.gradient,
                self.feedback,
                self.settings,
                self.theta,
                first,
                last,
                self.order[first:last],
                int(self.rng.integers(2**63)),
                self.running,
            )
            apply_sparse(self.steps, self.theta, gradient)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"objective": "cross-entropy", "clip": 0.3, "baseline": "mean", "draws": 1},
        {"objective": "pairwise", "step": "adagrad", "learning_rate": 0.05},
        {"objective": "pairwise-independent", "baseline": "none", "step": "constant", "learning_rate": 0.1},
    ],
)
@pytest.mark.parametrize("inline_tokens", [0, 4096])
def test_a_seeded_run_gives_the_weights_of_the_unfused_learner(options, inline_tokens, monkeypatch):
    monkeypatch.setattr(bandit, "_INLINE_TOKENS", inline_tokens)  # pieces on two threads, or inline
    corpus = corpus_of(3, [4, 6, 2, 5, 3, 3, 1, 6, 4, 2, 5])
    weights = []
    for run_class in (bandit._Run, UnfusedRun):
        gradient = sampled_gradient(corpus, 2, False, threads=2)
        feedback = simulated_feedback(corpus.sentences, "chunk", LABELS, flip=0.2, noise=0.1, seed=4)
        settings_ = BanditSettings(batch_size=3, seed=9, **options)
        run = run_class(gradient, feedback, settings_, np.arange(len(corpus)))
        for _ in range(3):
            run.epoch()
        gradient.close()
        weights.append(run.theta)
    assert np.abs(weights[0]).sum() > 0
    assert np.array_equal(weights[0], weights[1])


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(1, 7), min_size=1, max_size=6), st.integers(1, 4))
def test_the_gains_of_all_draws_at_once_are_those_of_each_draw(seed, lengths, draws):
    corpus = corpus_of(seed, lengths)
    rng = np.random.default_rng(seed)
    indices = rng.permutation(len(corpus))
    n = sum(lengths)
    label_ids = rng.integers(0, len(LABELS), size=(draws, n))
    f1 = simulated_feedback(corpus.sentences, "chunk", LABELS)
    accuracy = simulated_feedback(corpus.sentences, "chunk", LABELS, metric="accuracy")
    gold_of = {label: i for i, label in enumerate(LABELS)}
    gold = np.array([gold_of[x] for i in indices for x in corpus.sentences[i]["chunk"]])
    offsets = np.concatenate([[0], np.cumsum([lengths[i] for i in indices])])
    for k in range(draws):
        assert np.array_equal(
            f1.gains(indices, label_ids)[k], sentence_chunk_f1(ChunkTables(LABELS), gold, label_ids[k], offsets)
        )
        assert np.array_equal(accuracy.gains(indices, label_ids)[k], sentence_accuracy(gold, label_ids[k], offsets))


def test_chunk_f1_refuses_label_ids_outside_the_labels_and_shapes_that_do_not_fit():
    tables = ChunkTables(LABELS)
    offsets = np.array([0, 2, 3])
    assert np.array_equal(sentence_chunk_f1(tables, np.array([0, 1, 2]), np.array([0, 1, 2]), offsets), [1.0, 1.0])
    with pytest.raises(LabelError, match="outside"):
        sentence_chunk_f1(tables, np.array([0, 1, 2]), np.array([0, 3, 2]), offsets)
    with pytest.raises(LabelError, match="outside"):
        sentence_chunk_f1(tables, np.array([0, -1, 2]), np.array([0, 1, 2]), offsets)
    with pytest.raises(ShapeError):
        sentence_chunk_f1(tables, np.array([0, 1, 2]), np.array([0, 1]), offsets)
    for offsets in ([0, 2, 4], [1, 2, 3], [0, 3, 2]):
        with pytest.raises(LabelError, match="offsets"):
            sentence_chunk_f1(tables, np.array([0, 1, 2]), np.array([0, 1, 2]), np.array(offsets))


@pytest.mark.parametrize("objective,calls", [("expected", 1), ("pairwise", 2)])
def test_each_minibatch_times_its_draws_feedback_gradient_and_step(objective, calls, monkeypatch):
    from fstcrf.phases import PhaseTimer

    timer = PhaseTimer()
    monkeypatch.setattr(bandit, "phase", timer.phase)  # as FSTCRF_PHASES would
    corpus = corpus_of(5, [4, 6, 2, 5, 3, 3, 1])
    gradient = sampled_gradient(corpus, 2, False)
    feedback = simulated_feedback(corpus.sentences, "chunk", LABELS)
    run = bandit._Run(gradient, feedback, BanditSettings(batch_size=3, objective=objective), np.arange(len(corpus)))
    for _ in range(2):
        run.epoch()
    minibatches = 2 * 3  # two epochs of 7 sentences in minibatches of 3
    per_minibatch = {"bandit draws": calls, "bandit feedback": calls, "bandit gradient": calls, "bandit step": 1}
    assert timer.calls == {name: minibatches * count for name, count in per_minibatch.items()}
    assert all(seconds >= 0.0 for seconds in timer.cpu.values())
