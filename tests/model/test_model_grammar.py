"""Decoding a trained model under a constraint grammar."""

from needs_pynini import pynini  # noqa: F401  (skips the module without pynini)
import numpy as np
import pytest

from fstcrf.corpus.conll import read_conll
from fstcrf.errors import InfeasibleError
from fstcrf.grammar import accepts, compile_grammar, load_grammar, parse_grammar
from fstcrf.model import ChainCRF
from fstcrf.corpus.synthetic import DATA_DIR


def invalid_iob2(labels):
    previous = "O"
    for label in labels:
        if label.startswith("I-") and not (previous[:1] in "BI" and previous[2:] == label[2:]):
            return True
        previous = label
    return False


@pytest.fixture(scope="module")
def sabotaged():
    """A model whose transition O -> I-NP is made very attractive, so that
    unconstrained decoding produces invalid IOB2."""
    train = read_conll(DATA_DIR / "demo_train.txt")
    test = read_conll(DATA_DIR / "demo_test.txt")
    model = ChainCRF(max_iter=15).fit(train)
    topology = model.topology_
    outside, inside = topology.label_index("O"), topology.label_index("I-NP")
    edge = np.flatnonzero((topology.edge_src == outside) & (topology.edge_dst == inside))
    model.weights_ = model.weights_.copy()
    model.weights_[model.features_.num_features + edge] = 50.0
    return model, test


def test_grammar_removes_every_invalid_sequence(sabotaged):
    model, test = sabotaged
    free = model.predict(test)
    assert sum(map(invalid_iob2, free)) > 0
    grammar = load_grammar("iob2")
    constrained = model.predict(test, grammar=grammar)
    acceptor = compile_grammar(grammar, model.labels_)
    assert all(accepts(acceptor, labels) for labels in constrained)
    assert not any(map(invalid_iob2, constrained))


def test_infeasible_sentences_error_or_fall_back(sabotaged):
    model, test = sabotaged
    sentences = list(test)[:5]
    grammar = parse_grammar("start = . . .* ;", "two_or_more.fgr")  # no one-token sequence
    one_token = [type(sentences[0])({name: values[:1] for name, values in sentences[0].columns.items()})]
    with pytest.raises(InfeasibleError, match="sentence 0 \\(length 1\\)"):
        model.predict(one_token + sentences, grammar=grammar)
    tagged = model.predict(one_token + sentences, grammar=grammar, on_infeasible="unconstrained")
    assert len(tagged[0]) == 1 and all(len(t) == len(s) for t, s in zip(tagged[1:], sentences))


def test_marginals_under_a_grammar_match_brute_force():
    """p(label at t | x, the grammar accepts the labels), by enumerating every sequence."""
    import itertools

    train = read_conll(DATA_DIR / "demo_train.txt")
    test = read_conll(DATA_DIR / "demo_test.txt")
    model = ChainCRF(max_iter=10).fit(train)
    acceptor = compile_grammar(load_grammar("at_least_one"), model.labels_, params={"X": "VP"})
    sentences = [s for s in test.sentences if len(s) <= 4][:3]
    marginals = model.predict_marginals(sentences, grammar="at_least_one", params={"X": "VP"})
    L = len(model.labels_)
    for sentence, got in zip(sentences, marginals):
        pot = model.potentials([sentence])
        table, total = np.zeros((len(sentence), L)), 0.0
        paths = [
            np.array(p)
            for p in itertools.product(range(L), repeat=len(sentence))
            if accepts(acceptor, [model.labels_[i] for i in p])
        ]
        scores = np.array([pot.score(path)[0] for path in paths])
        weights = np.exp(scores - scores.max())
        for path, weight in zip(paths, weights):
            table[np.arange(len(sentence)), path] += weight
            total += weight
        np.testing.assert_allclose(got, table / total, atol=1e-9)
        assert not np.allclose(got, model.predict_marginals([sentence])[0])  # the grammar matters
