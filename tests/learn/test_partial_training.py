"""Training on partial labels ("?" and label sets "A|B") and under a constraint grammar.

The objective is checked against brute force: every allowed label sequence of
a sentence is enumerated, scored from the model's potentials, and

    loss = sum over sentences of  log Z - log Z_clamped

where Z sums over the sequences the topology (and the training grammar)
allows and Z_clamped over those of them whose labels keep to each token's
allowed set (for a fully labelled sentence: the gold sequence alone).
"""

import copy
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from fstcrf.cli import main
from fstcrf.corpus.conll import Corpus, Sentence, read_conll, write_conll
from fstcrf.errors import FstcrfError, GrammarError, LabelError
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.grammar import accepts, load_grammar, parse_grammar
from fstcrf.corpus.labels import chain_topology, gold_label_set, parse_gold
from fstcrf.model import ChainCRF, load_model
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.topology import first_order

from oracles import check_finite_differences, edge_index_table, enumerate_state_paths
from corpora import TEMPLATE, chunk_corpus, random_corpus, training_set

try:  # the tests that need pynini are marked pynini: the CI leg without it skips them
    import pynini
    from fstcrf.engine.bounded import as_arrays, to_fst
    from fstcrf.grammar import compile_grammar
except ImportError:
    pynini = as_arrays = to_fst = compile_grammar = None

#: Sentences are cut to this many tokens so that every label sequence can be enumerated.
MAX_LENGTH = 5
#: The chunk labels random_corpus draws from (label sets take their second member here).
CHUNK_LABELS = ("O", "B-NP", "I-NP", "B-VP", "I-VP")

#: Training grammars for the oracle: IOB2 itself, and small grammars that also reject
#: IOB2-valid sequences (so some gold sequences and partial sets must be dropped).
GRAMMARS = {
    "iob2": load_grammar("iob2"),
    "no_two_outside": parse_grammar("start = .* - .* O O .* ;", "no_two_outside.fgr"),
    "at_most_two_begins": parse_grammar("start = !(.* [B-*] .* [B-*] .* [B-*] .*) ;", "at_most_two_begins.fgr"),
    "iob2_no_leading_outside": parse_grammar(
        'import "iob2" ;\nstart = iob2.start & !(O .*) ;', "iob2_no_leading_outside.fgr"
    ),
    "ends_outside_or_one_token": parse_grammar("start = .* O | . ;", "ends_outside.fgr"),
}

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# -- helpers --------------------------------------------------------------------------


def sentence(chunks, words=None) -> Sentence:
    words = words or [f"w{i}" for i in range(len(chunks))]
    return Sentence({"word": list(words), "pos": ["P"] * len(chunks), "chunk": list(chunks)})


def corpus_of(*chunk_lists) -> Corpus:
    return Corpus(("word", "pos", "chunk"), [sentence(chunks) for chunks in chunk_lists])


def hide_labels(
    corpus: Corpus, seed: int, unknown: float, label_set: float, max_length: int | None = MAX_LENGTH
) -> Corpus:
    """A copy of ``corpus`` (sentences cut to ``max_length`` tokens) whose gold chunk
    labels are hidden as "?" with probability ``unknown`` and written as a random
    two-label set containing the gold label with probability ``label_set``."""
    rng = random.Random(seed)
    sentences = []
    for original in corpus:
        columns = {name: list(values[:max_length]) for name, values in original.columns.items()}
        chunks = []
        for gold in columns["chunk"]:
            r = rng.random()
            if r < unknown:
                chunks.append("?")
            elif r < unknown + label_set:
                other = rng.choice([label for label in CHUNK_LABELS if label != gold])
                chunks.append("|".join(rng.sample([gold, other], 2)))
            else:
                chunks.append(gold)
        columns["chunk"] = chunks
        sentences.append(Sentence(columns))
    return Corpus(corpus.column_names, sentences)


def allowed_sets(values, labels) -> list[set[int]]:
    """The label indices each gold value allows, read off the strings directly."""
    out = []
    for value in values:
        if value == "?":
            out.append(set(range(len(labels))))
        else:
            out.append({labels.index(label) for label in value.split("|")})
    return out


def enumerate_paths(topology, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(state paths int [M, T], their label paths int [M, T]): every sequence the topology allows."""
    paths = np.array(enumerate_state_paths(topology, length), dtype=np.int64).reshape(-1, length)
    return paths, topology.state_label[paths]


def path_scores(pot, paths: np.ndarray) -> np.ndarray:
    """float [M]: the scores of allowed state paths [M, T] of a one-sentence Potentials."""
    edges = edge_index_table(pot.topology)
    emit = pot.emissions
    score = pot.start[paths[:, 0]] + emit[0, paths[:, 0]]
    for t in range(1, paths.shape[1]):
        ids = edges[paths[:, t - 1], paths[:, t]]
        assert np.all(ids >= 0)
        score = score + pot.transitions[ids] + emit[t, paths[:, t]]
    return score + pot.final[paths[:, -1]]


def acceptance(constraint, labels, label_paths: np.ndarray) -> np.ndarray:
    """bool [M]: which label paths [M, T] the constraint accepts (all of them without
    one), every path at once: each path's set of states as a row of a boolean matrix,
    moved along the arcs of its next label and closed under epsilon arcs."""
    if constraint is None:
        return np.ones(len(label_paths), dtype=bool)
    acceptor = as_arrays(constraint)
    Q = acceptor.num_states
    key_of = {symbol: key for key, symbol in acceptor.symbols.items()}

    def arcs_of(key: int) -> np.ndarray:
        moves = np.zeros((Q, Q), dtype=np.int64)
        chosen = acceptor.arc_key == key
        moves[acceptor.arc_src[chosen], acceptor.arc_dst[chosen]] = 1
        return moves

    closure, epsilon = np.eye(Q, dtype=np.int64), arcs_of(0)
    while not np.array_equal(grown := np.minimum(closure + closure @ epsilon, 1), closure):
        closure = grown
    step = np.stack([np.minimum(arcs_of(key_of[label]) @ closure, 1) for label in labels])
    states = np.zeros((len(label_paths), Q), dtype=np.int64)
    states[:, acceptor.start] = 1
    states = np.minimum(states @ closure, 1)
    for t in range(label_paths.shape[1]):
        for label in range(len(labels)):
            rows = label_paths[:, t] == label
            states[rows] = np.minimum(states[rows] @ step[label], 1)
    return (states[:, acceptor.final] > 0).any(axis=1)


def consistency(sets: list[set[int]], label_paths: np.ndarray) -> np.ndarray:
    """bool [M]: which label paths keep to each token's allowed set."""
    ok = np.ones(len(label_paths), dtype=bool)
    for t, allowed in enumerate(sets):
        ok &= np.isin(label_paths[:, t], sorted(allowed))
    return ok


def brute_force_loss(problem, corpus: Corpus, theta: np.ndarray, constraint=None) -> float:
    """sum_b log Z_b - log Z_b(clamped), by enumerating every allowed label sequence."""
    topology = problem.scorer.topology
    total = 0.0
    for b, original in enumerate(corpus):
        pot = problem.scorer.potentials(problem.encoded, theta, b, b + 1)
        paths, label_paths = enumerate_paths(topology, len(original))
        scores = path_scores(pot, paths)
        accepted = acceptance(constraint, topology.labels, label_paths)
        consistent = accepted & consistency(allowed_sets(original["chunk"], topology.labels), label_paths)
        assert accepted.any() and consistent.any()
        total += logsumexp(scores[accepted]) - logsumexp(scores[consistent])
    return float(total)


def feasible_under(corpus: Corpus, order: int, grammar=None) -> tuple[Corpus, object] | None:
    """The sentences of ``corpus`` some allowed (and accepted) sequence fits, with the
    grammar compiled for their labels (the label set shrinks as sentences go, so repeat
    until stable); None if no sentence is left."""
    while True:
        if all(value == "?" for values in corpus.column("chunk") for value in values):
            return None
        labels = gold_label_set(corpus.column("chunk"))
        if order == 2 and "O" not in labels:
            return None
        constraint = None
        if grammar is not None:
            try:
                constraint = compile_grammar(grammar, labels)
            except GrammarError:  # e.g. no label matches a class of the grammar
                return None
        topology = chain_topology(order, labels)
        keep = []
        for original in corpus:
            _, label_paths = enumerate_paths(topology, len(original))
            fits = acceptance(constraint, labels, label_paths) & consistency(
                allowed_sets(original["chunk"], labels), label_paths
            )
            if fits.any():
                keep.append(original)
        if not keep:
            return None
        if len(keep) == len(corpus):
            return corpus, constraint
        corpus = Corpus(corpus.column_names, keep)


@st.composite
def partial_corpora(draw, max_sentences: int = 5):
    seed = draw(st.integers(0, 2**31 - 1))
    num_sentences = draw(st.integers(1, max_sentences))
    unknown = draw(st.sampled_from([0.0, 0.25, 0.5, 0.8]))
    label_set = draw(st.sampled_from([0.0, 0.2, 0.4]))
    corpus = hide_labels(random_corpus(seed, num_sentences), seed + 1, unknown, label_set)
    assume(any(value != "?" for values in corpus.column("chunk") for value in values))
    return corpus, seed


def _check_loss_against_oracle(problem, corpus, seed, constraint=None):
    theta = np.random.default_rng(seed).normal(0, 1, problem.num_weights)
    loss, gradient = problem.loss_and_gradient(theta)
    assert gradient.shape == (problem.num_weights,)
    expected = brute_force_loss(problem, corpus, theta, constraint)
    assert loss == pytest.approx(expected, rel=1e-9, abs=1e-9)


def _check_finite_differences(problem, seed: int, num_coordinates: int = 24):
    theta = np.random.default_rng(seed).normal(0, 0.5, problem.num_weights)
    check_finite_differences(
        problem.loss_and_gradient,
        theta,
        problem.scorer.features.num_features,
        seed=seed,
        num_coordinates=num_coordinates,
    )


# -- the objective against brute force --------------------------------------------------


@pytest.mark.parametrize(
    "order,feature_set", [(1, "supported"), (1, "complete"), (2, "supported"), (2, "complete-tags")]
)
@SETTINGS
@given(instance=partial_corpora())
def test_partial_label_loss_matches_brute_force(order, feature_set, instance):
    corpus, seed = instance
    feasible = feasible_under(corpus, order)  # (order 2 "O ? I-VP" may fit no path)
    assume(feasible is not None)
    corpus = feasible[0]
    problem = training_set(corpus, order, feature_set)
    _check_loss_against_oracle(problem, corpus, seed)


@pytest.mark.pynini
@pytest.mark.slow
@pytest.mark.parametrize("order", [1, 2])
@SETTINGS
@given(instance=partial_corpora(), grammar_name=st.sampled_from(sorted(GRAMMARS)))
def test_constrained_partial_label_loss_matches_brute_force(order, instance, grammar_name):
    corpus, seed = instance
    feasible = feasible_under(corpus, order, GRAMMARS[grammar_name])
    assume(feasible is not None)
    corpus, constraint = feasible
    problem = training_set(corpus, order, "supported", constraint=constraint)
    _check_loss_against_oracle(problem, corpus, seed, constraint)


@pytest.mark.pynini
def test_oracle_sees_the_clamp_and_the_grammar():
    """The oracle terms differ from the plain ones on these instances (the tests above
    would not notice an implementation that ignored partial labels or the grammar
    only if the oracle itself ignored them)."""
    corpus = corpus_of(["B-NP", "?", "O"], ["?", "B-NP|I-NP", "?"])
    problem = training_set(corpus, 1, "supported")
    theta = np.random.default_rng(1).normal(size=problem.num_weights)
    free = brute_force_loss(problem, corpus, theta)
    constraint = compile_grammar(load_grammar("iob2"), problem.scorer.topology.labels)
    constrained = brute_force_loss(problem, corpus, theta, constraint)
    assert free != pytest.approx(constrained, rel=1e-6)
    full = corpus_of(["B-NP", "I-NP", "O"], ["O", "B-NP", "O"])  # one completion of corpus
    assert free != pytest.approx(brute_force_loss(problem, full, theta), rel=1e-6)


# -- gradients ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "order,feature_set", [(1, "supported"), (1, "complete"), (2, "supported"), (2, "complete-tags")]
)
def test_partial_label_gradient_matches_finite_differences(order, feature_set):
    corpus = hide_labels(random_corpus(31, 14), 32, 0.15, 0.1, max_length=None)
    problem = training_set(corpus, order, feature_set)
    assert problem.partial.any() and not problem.partial.all()
    _check_finite_differences(problem, order)


@pytest.mark.pynini
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("grammar_name", ["iob2", "no_two_outside", "at_most_two_begins"])
def test_constrained_gradient_matches_finite_differences(order, grammar_name):
    feasible = feasible_under(hide_labels(random_corpus(41, 16), 42, 0.3, 0.3), order, GRAMMARS[grammar_name])
    assert feasible is not None
    corpus, constraint = feasible
    assert len(corpus) >= 5
    problem = training_set(corpus, order, "supported", constraint=constraint)
    _check_finite_differences(problem, 10 + order)


@pytest.mark.pynini
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("grammar_name", [None, "iob2", "no_two_outside"])
def test_sentence_gradients_sum_to_the_full_gradient_with_partial_labels(order, grammar_name):
    corpus = hide_labels(random_corpus(51, 15), 52, 0.3, 0.3)
    constraint = None
    if grammar_name is not None:
        corpus, constraint = feasible_under(corpus, order, GRAMMARS[grammar_name])
    problem = training_set(corpus, order, "supported", constraint=constraint)
    assert problem.partial.any() and not problem.partial.all()
    theta = np.random.default_rng(53).normal(size=problem.num_weights)
    loss, gradient = problem.loss_and_gradient(theta)
    total, summed = 0.0, np.zeros(problem.num_weights)
    for index in range(problem.num_sequences):
        total += problem.add_gradient(theta / 4, 4.0, index, summed, -1.0)
    assert total == pytest.approx(loss, rel=1e-10)
    np.testing.assert_allclose(-summed, gradient, atol=1e-9)


@pytest.mark.pynini
def test_a_sentence_of_unknown_labels_contributes_nothing():
    """Z_clamped = Z when every token is "?": no loss, no gradient."""
    for order, constraint_name in [(1, None), (2, None), (1, "iob2"), (2, "iob2")]:
        corpus = corpus_of(["B-NP", "I-NP", "O"], ["?", "?", "?", "?"], ["O", "B-VP", "I-VP"])
        constraint = None
        if constraint_name:
            constraint = compile_grammar(GRAMMARS[constraint_name], gold_label_set(corpus.column("chunk")))
        problem = training_set(corpus, order, "supported", constraint=constraint)
        theta = np.random.default_rng(order).normal(size=problem.num_weights)
        out = np.zeros(problem.num_weights)
        assert problem.add_gradient(theta, 1.0, 1, out, 1.0) == pytest.approx(0.0, abs=1e-10)
        np.testing.assert_allclose(out, 0.0, atol=1e-10)


# -- partial labels that pin one path give the fully labelled objective -----------------------


def _same_objective(full: Corpus, pinned: Corpus, order: int, feature_set: str, constraint=None):
    """(Unknown labels leave out the supported features of their tokens, so the pinned
    corpora of the clamped-path tests use the complete feature set.)"""
    a = training_set(full, order, feature_set, constraint=constraint)
    b = training_set(pinned, order, feature_set, constraint=constraint)
    assert a.num_weights == b.num_weights
    theta = np.random.default_rng(5).normal(size=a.num_weights)
    (loss_a, gradient_a), (loss_b, gradient_b) = a.loss_and_gradient(theta), b.loss_and_gradient(theta)
    assert loss_b == pytest.approx(loss_a, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(gradient_b, gradient_a, atol=1e-9)
    return a, b


@pytest.mark.parametrize("order", [1, 2])
def test_a_one_member_label_set_is_the_label(order):
    """ "GOLD|GOLD" means GOLD: the same loss and gradient as the plain label."""
    full = random_corpus(61, 12)
    pinned = copy.deepcopy(full)
    for sentence_ in pinned.sentences[::2]:
        gold = sentence_.columns["chunk"][0]
        sentence_.columns["chunk"][0] = f"{gold}|{gold}"
    _same_objective(full, pinned, order, "supported")


def test_a_label_set_the_topology_narrows_to_gold_takes_the_clamped_path():
    """Order 2: after O (and at the first token) no I- tag can follow, so "B-NP|I-NP"
    there admits only the gold B-NP.  The sentence is partially labelled -- its term is
    log Z - log Z_clamped -- and must equal the fully labelled term log Z - score(gold)."""
    full = random_corpus(71, 20)
    pinned = copy.deepcopy(full)
    changed = 0
    for sentence_ in pinned.sentences:
        chunks = sentence_.columns["chunk"]
        for t, gold in enumerate(chunks):
            if gold.startswith("B-") and (t == 0 or chunks[t - 1] == "O"):
                chunks[t] = f"{gold}|I-{gold[2:]}"
                changed += 1
                break
    assert changed >= 5
    _, problem = _same_objective(full, pinned, 2, "complete")
    assert problem.partial.sum() == changed


@pytest.mark.pynini
def test_a_label_set_the_grammar_narrows_to_gold_takes_the_clamped_path():
    """Order 1 under IOB2: "O|I-NP" or "B-NP|I-NP" where an I- tag cannot go pins gold."""
    full = random_corpus(81, 20)
    labels = gold_label_set(full.column("chunk"))
    constraint = compile_grammar(load_grammar("iob2"), labels)
    pinned = copy.deepcopy(full)
    changed = 0
    for sentence_ in pinned.sentences:
        chunks = sentence_.columns["chunk"]
        for t, gold in enumerate(chunks):
            if not gold.startswith("I-") and (t == 0 or chunks[t - 1] == "O"):
                chunks[t] = f"I-NP|{gold}"
                changed += 1
                break
    assert changed >= 5
    _, problem = _same_objective(full, pinned, 1, "complete", constraint)
    assert problem.partial.sum() == changed


# -- errors -------------------------------------------------------------------------------


def test_gold_labels_the_topology_forbids_among_partial_sentences():
    corpus = corpus_of(["B-NP", "?"], ["O", "I-NP", "O"])
    with pytest.raises(LabelError):
        training_set(corpus, 2, "supported")
    with pytest.raises(LabelError, match="O I-NP O"):
        ChainCRF(TEMPLATE, order=2).fit(corpus)


def test_the_topology_error_names_the_corpus_sentence():
    """The offending sentence is sentence 1 of the corpus (sentence 0 is partially
    labelled); the message must not renumber the fully labelled sentences."""
    corpus = corpus_of(["B-NP", "?"], ["O", "I-NP", "O"])
    with pytest.raises(LabelError, match=r"sentence 1 \(O I-NP O\)"):
        ChainCRF(TEMPLATE, order=2).fit(corpus)


@pytest.mark.pynini
def test_gold_labels_the_grammar_rejects_name_the_sentence():
    corpus = corpus_of(["B-NP", "I-NP"], ["?", "O"], ["O", "I-NP", "O"], ["B-VP"])
    with pytest.raises(LabelError, match="training sentence 2"):
        ChainCRF(TEMPLATE, grammar="iob2").fit(corpus)
    labels = gold_label_set(corpus.column("chunk"))
    with pytest.raises(LabelError, match="training sentence 2"):
        training_set(corpus, 1, "supported", constraint=compile_grammar(load_grammar("iob2"), labels))
    # without the grammar the first-order model takes it
    assert ChainCRF(TEMPLATE, max_iter=2).fit(corpus).constraint_ is None


@pytest.mark.pynini
def test_grammar_parameters_reject_gold_and_restrict_predictions():
    """at_most_one with X=PP: gold with two PP chunks is refused; predictions never have two."""
    train = chunk_corpus(0, 40)  # at most one PP per sentence
    model = ChainCRF(TEMPLATE, grammar="at_most_one", grammar_params={"X": "PP"}, max_iter=30).fit(train)
    words = "the dog sees a cat in the park with the ball near a big cat .".split()
    tags = ["DT", "NN", "VB", "DT", "NN", "IN", "DT", "NN", "IN", "DT", "NN", "IN", "DT", "JJ", "NN", "."]
    two_pps = Sentence({"word": words, "pos": tags, "chunk": ["O"] * len(words)})
    free = ChainCRF(TEMPLATE, max_iter=30).fit(train).predict([two_pps])[0]
    assert free.count("B-PP") >= 2  # the words call for several PP chunks
    predicted = model.predict([two_pps])[0]
    assert predicted.count("B-PP") <= 1
    assert accepts(model.constraint_, predicted)
    bad = copy.deepcopy(train)
    bad.sentences[3] = Sentence(
        {
            "word": words,
            "pos": tags,
            "chunk": [
                "B-NP",
                "I-NP",
                "B-VP",
                "B-NP",
                "I-NP",
                "B-PP",
                "B-NP",
                "I-NP",
                "B-PP",
                "B-NP",
                "I-NP",
                "B-PP",
                "B-NP",
                "I-NP",
                "I-NP",
                "O",
            ],
        }
    )
    with pytest.raises(LabelError, match="training sentence 3"):
        ChainCRF(TEMPLATE, grammar="at_most_one", grammar_params={"X": "PP"}).fit(bad)


@pytest.mark.pynini
@pytest.mark.parametrize("order,grammar", [(2, None), (1, "iob2"), (2, "iob2")])
def test_label_sets_that_admit_no_path(order, grammar):
    corpus = corpus_of(["B-NP", "I-NP", "O"], ["O", "I-NP|I-VP", "O"], ["B-VP"])
    with pytest.raises(LabelError, match="training sentence 1"):
        ChainCRF(TEMPLATE, order=order, grammar=grammar).fit(corpus)
    # a first token can never be an I- tag in order 2 or under IOB2 either
    corpus = corpus_of(["B-NP", "I-NP", "O"], ["I-NP|I-VP", "O"], ["B-VP"])
    with pytest.raises(LabelError, match="training sentence 1"):
        ChainCRF(TEMPLATE, order=order, grammar=grammar).fit(corpus)


@pytest.mark.pynini
@pytest.mark.parametrize(
    "order,grammar,chunks",
    [
        (2, None, ["O", "?", "I-VP"]),  # labels O, I-VP: no state has label I-VP
        (1, "iob2", ["O", "?", "I-VP"]),  # no B-VP, so IOB2 accepts no I-VP
        (1, "iob2", ["O", "I-VP"]),  # the same with full labels
    ],
)
def test_labels_no_allowed_state_carries_are_label_errors(order, grammar, chunks):
    """A token whose allowed labels no state of the (constrained) topology carries is a
    gold sequence that fits no path: LabelError naming the training sentence, like any
    other (not the internal ShapeError of Potentials.clamp)."""
    corpus = corpus_of(["O", "B-NP", "I-NP"], chunks) if grammar else corpus_of(["O", "O"], chunks)
    with pytest.raises(LabelError, match="training sentence 1"):
        ChainCRF(TEMPLATE, order=order, grammar=grammar, max_iter=2).fit(corpus)


def test_unknown_and_malformed_labels_in_sets():
    topology = first_order(["B-NP", "I-NP", "O"])
    with pytest.raises(LabelError, match="unknown label 'B-XX'"):
        parse_gold(topology, [["B-NP", "B-NP|B-XX"]])
    for bad in ("B-NP|", "|O", "B-NP||I-NP", "B-NP|?"):
        with pytest.raises(LabelError, match="empty member"):
            ChainCRF(TEMPLATE, max_iter=2).fit(corpus_of(["B-NP", bad], ["O"]))
    with pytest.raises(LabelError, match="no label"):
        ChainCRF(TEMPLATE, max_iter=2).fit(corpus_of(["?", "?"], ["?"]))


def test_partial_label_syntax_stays_on_the_training_side():
    """Model labels never hold "?" or "A|B"; gold holding them cannot score predictions,
    neither in score nor as the dev set of fit (refused before training starts)."""
    corpus = hide_labels(chunk_corpus(0, 30), 1, 0.3, 0.3, max_length=None)
    assert any("|" in label or label == "?" for labels in corpus.column("chunk") for label in labels)
    iterations = []
    model = ChainCRF(TEMPLATE, max_iter=3).fit(corpus, callback=iterations.append)
    assert iterations and not any("|" in label or label == "?" for label in model.labels_)
    with pytest.raises(LabelError, match="partial labels"):
        model.score(corpus)
    iterations.clear()
    with pytest.raises(LabelError, match="partial labels"):
        ChainCRF(TEMPLATE, max_iter=3).fit(chunk_corpus(1, 20), dev=corpus, callback=iterations.append)
    assert iterations == []


@pytest.mark.pynini
def test_the_perceptron_refuses_partial_labels():
    corpus = hide_labels(chunk_corpus(0, 20), 1, 0.2, 0.1, max_length=None)
    with pytest.raises(FstcrfError, match="perceptron"):
        ChainCRF(TEMPLATE, algorithm="perceptron", max_iter=2).fit(corpus)
    with pytest.raises(FstcrfError, match="perceptron"):
        ChainCRF(TEMPLATE, algorithm="perceptron", max_iter=2, grammar="iob2").fit(corpus)
    problem = training_set(corpus, 1, "supported")
    partial = int(np.flatnonzero(problem.partial)[0])
    with pytest.raises(FstcrfError, match="partially labelled"):
        problem.gold(partial)
    # full labels are fine, and SGD takes partial ones
    ChainCRF(TEMPLATE, algorithm="perceptron", max_iter=2).fit(chunk_corpus(0, 20))
    assert ChainCRF(TEMPLATE, algorithm="sgd", max_iter=2).fit(corpus).weights_ is not None


# -- end to end ----------------------------------------------------------------------------


def invalid_iob2(labels) -> bool:
    previous = "O"
    for label in labels:
        if label.startswith("I-") and not (previous[:1] in "BI" and previous[2:] == label[2:]):
            return True
        previous = label
    return False


@pytest.fixture(scope="module")
def demo():
    return read_conll(DATA_DIR / "demo_train.txt"), read_conll(DATA_DIR / "demo_test.txt")


def _sabotage(model: ChainCRF) -> ChainCRF:
    """A copy whose O -> I-NP transition weight is huge, so that decoding without the
    grammar outputs invalid IOB2."""
    sabotaged = copy.copy(model)
    topology = model.topology_
    outside, inside = topology.label_index("O"), topology.label_index("I-NP")
    edge = np.flatnonzero((topology.edge_src == outside) & (topology.edge_dst == inside))
    assert len(edge) == 1
    sabotaged.weights_ = model.weights_.copy()
    sabotaged.weights_[model.features_.num_features + edge] = 50.0
    return sabotaged


@pytest.mark.pynini
def test_a_model_trained_under_iob2_always_decodes_under_it(demo, tmp_path):
    train, test = demo
    model = ChainCRF(grammar="iob2", max_iter=30).fit(train)
    assert model.constraint_ is not None
    independent = compile_grammar(load_grammar("iob2"), model.labels_)
    assert pynini.equivalent(to_fst(model.constraint_), independent)
    predicted = model.predict(test)
    assert all(accepts(independent, labels) and not invalid_iob2(labels) for labels in predicted)
    assert score_chunks(test.column("chunk"), predicted).f1 > 95.0
    # decoding stays under the grammar even when the weights push against it
    free_sabotaged = _sabotage(ChainCRF(max_iter=30).fit(train)).predict(test)
    assert sum(map(invalid_iob2, free_sabotaged)) > 0
    sabotaged = _sabotage(model)
    assert all(accepts(independent, labels) for labels in sabotaged.predict(test))
    # files keep the constraint
    path = tmp_path / "iob2.model"
    sabotaged.save(path)
    loaded = load_model(path)
    kept, trained = loaded.constraint_, model.constraint_
    assert kept is not None and (kept.num_states, kept.start, kept.symbols) == (
        trained.num_states,
        trained.start,
        trained.symbols,
    )
    for name in ("final", "arc_src", "arc_key", "arc_dst"):
        np.testing.assert_array_equal(getattr(kept, name), getattr(trained, name))
    assert loaded.get_params() == model.get_params()
    reloaded = loaded.predict(test)
    assert reloaded == sabotaged.predict(test)
    assert all(accepts(independent, labels) for labels in reloaded)
    model.save(path)
    assert load_model(path).predict(test) == predicted
    # a model trained without a grammar stores none
    plain = ChainCRF(max_iter=3).fit(train)
    plain.save(path)
    assert load_model(path).constraint_ is None


@pytest.mark.pynini
@pytest.mark.parametrize("order,grammar", [(1, None), (2, "iob2")])
def test_half_hidden_labels_still_learn_the_chunker(demo, order, grammar):
    """Measured (hidden-token seeds 0..3, max_iter 30): order 1 reaches F1 97.8-98.2 and
    order 2 97.7-98.7 on demo_test with 50% of the training labels hidden (98.98 with all
    of them); the most frequent label (I-NP) everywhere scores F1 0.0, B-NP everywhere 10.8,
    and each word's most frequent training label 79.8."""
    train, test = demo
    gold = test.column("chunk")
    counts = Counter(label for labels in train.column("chunk") for label in labels)
    most_frequent = counts.most_common(1)[0][0]
    baseline = score_chunks(gold, [[most_frequent] * len(labels) for labels in gold]).f1
    hidden = hide_labels(train, 0, 0.5, 0.0, max_length=None)
    values = [value for labels in hidden.column("chunk") for value in labels]
    assert 0.45 < values.count("?") / len(values) < 0.55
    model = ChainCRF(order=order, grammar=grammar, max_iter=30).fit(hidden)
    f1 = model.score(test).f1
    assert f1 > 95.0 and f1 > baseline + 50.0


# -- the command line -----------------------------------------------------------------------


@pytest.mark.pynini
def test_cli_trains_on_partial_labels_under_a_grammar(tmp_path):
    rng = random.Random(3)
    corpus = read_conll(DATA_DIR / "demo_train.txt")
    corpus = Corpus(corpus.column_names, corpus.sentences[:60])
    sets = unknowns = 0
    for sentence_ in corpus.sentences:
        chunks = sentence_.columns["chunk"]
        for t, gold in enumerate(chunks):
            if gold in ("B-NP", "I-NP") and rng.random() < 0.3:
                chunks[t] = "B-NP|I-NP"
                sets += 1
            elif rng.random() < 0.2:
                chunks[t] = "?"
                unknowns += 1
    assert sets and unknowns
    path, model_path = tmp_path / "partial.txt", tmp_path / "partial.model"
    write_conll(corpus, path)
    text = path.read_text()
    assert "B-NP|I-NP" in text and " ?\n" in text
    assert main(["-q", "train", str(path), "-o", str(model_path), "--grammar", "iob2", "--max-iter", "5"]) == 0
    loaded = load_model(model_path)
    assert loaded.constraint_ is not None
    assert set(loaded.labels_) == {"O", "B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "B-ADVP"}
    assert all(accepts(loaded.constraint_, labels) for labels in loaded.predict(corpus))
    # a gold sequence the grammar rejects: an error naming the sentence, exit status 2
    bad = tmp_path / "bad.txt"
    write_conll(corpus_of(["B-NP", "I-NP"], ["O", "I-NP"]), bad)
    assert (
        main(["-q", "train", str(bad), "-o", str(tmp_path / "bad.model"), "--grammar", "iob2", "--max-iter", "2"]) == 2
    )
    assert not (tmp_path / "bad.model").exists()
