"""fstcrf.sklearn.CRF beside sklearn_crfsuite.CRF where the two once parted: parameters
given as text, max_iterations=0, X and y given as generators, Decimal values."""

from decimal import Decimal

import pytest

from fstcrf.errors import ArgumentTypeError, FstcrfError, ShapeError
from fstcrf.sklearn import CRF
from needs import import_or_skip
from test_sklearn import toy_corpus

sklearn_crfsuite = import_or_skip("sklearn_crfsuite", "needs sklearn-crfsuite: pip install 'fstcrf[bench]'")

BOTH = pytest.mark.parametrize("make", [sklearn_crfsuite.CRF, CRF], ids=["sklearn_crfsuite", "fstcrf"])


def weights(crf) -> dict:
    return {key: round(weight, 6) for key, weight in crf.state_features_.items()}


@BOTH
def test_parameters_given_as_text_train_as_their_numbers(make):
    X, y = toy_corpus(20)
    as_text = make(c1="0.1", c2="0.05", max_iterations="15", all_possible_transitions="1").fit(X, y)
    as_numbers = make(c1=0.1, c2=0.05, max_iterations=15, all_possible_transitions=True).fit(X, y)
    assert weights(as_text) == weights(as_numbers)
    assert as_text.transition_features_.keys() == as_numbers.transition_features_.keys()


def test_text_that_is_no_number_is_refused_where_crfsuite_reads_it_as_0(tmp_path):
    X, y = toy_corpus(20)
    theirs = sklearn_crfsuite.CRF(c1="abc", max_iterations=10).fit(X, y)
    assert weights(theirs) == weights(sklearn_crfsuite.CRF(c1=0, max_iterations=10).fit(X, y))
    path = tmp_path / "model"
    with pytest.raises(FstcrfError, match="parameter 'c1' takes a finite number, got 'abc'"):
        CRF(c1="abc", model_filename=str(path)).fit(X, y)
    with pytest.raises(FstcrfError, match="parameter 'all_possible_states' takes 0 or 1"):
        CRF(all_possible_states="yes").fit(X, y)
    with pytest.raises(ArgumentTypeError, match="parameter 'c2' takes a number or its text"):
        CRF(c2=object()).fit(X, y)
    assert not path.exists()


def test_max_iterations_0_runs_lbfgs_until_convergence():
    X, y = toy_corpus(20)
    theirs = [sklearn_crfsuite.CRF(max_iterations=limit, c2=0.01).fit(X, y) for limit in (0, None)]
    assert len(theirs[0].training_log_.iterations) == len(theirs[1].training_log_.iterations)
    assert weights(theirs[0]) == weights(theirs[1])
    ours = [CRF(max_iterations=limit, c2=0.01) for limit in (0, None)]
    assert ours[0].chain_crf().max_iter == ours[1].chain_crf().max_iter
    fitted = [crf.fit(X, y) for crf in ours]
    assert len(fitted[0].training_log_) == len(fitted[1].training_log_)
    assert weights(fitted[0]) == weights(fitted[1])


@pytest.mark.parametrize("algorithm", ["l2sgd", "ap", "pa", "arow"])
def test_max_iterations_0_of_an_online_algorithm_is_refused_where_crfsuite_learns_nothing(algorithm):
    X, y = toy_corpus(10)
    assert sklearn_crfsuite.CRF(algorithm=algorithm, max_iterations=0).fit(X, y).state_features_ == {}
    with pytest.raises(FstcrfError, match=f"max_iterations must be at least 1 for {algorithm}"):
        CRF(algorithm=algorithm, max_iterations=0).fit(X, y)
    with pytest.raises(FstcrfError, match="max_iterations"):
        CRF(algorithm=algorithm, max_iterations=-1).fit(X, y)


@BOTH
def test_fit_predict_and_score_take_generators(make):
    X, y = toy_corpus(20)
    from_lists = make(c2=0.1, max_iterations=15).fit(X, y)
    from_generators = make(c2=0.1, max_iterations=15).fit((xseq for xseq in X), (yseq for yseq in y))
    assert weights(from_generators) == weights(from_lists)
    predicted = from_generators.predict(xseq for xseq in X)
    assert [list(labels) for labels in predicted] == [list(labels) for labels in from_lists.predict(X)]
    assert from_generators.score(iter(X), iter(y)) == from_lists.score(X, y)


def test_bad_sequences_are_still_refused():
    X, y = toy_corpus(6)
    with pytest.raises(ArgumentTypeError, match="X must be a list"):
        CRF().fit("word", y)
    with pytest.raises(ArgumentTypeError, match="y must be a list"):
        CRF().fit(X, 5)
    with pytest.raises(ShapeError, match="X has 5 sequences but y has 6"):
        CRF().fit(iter(X[:5]), iter(y))


@BOTH
def test_decimal_values_train_and_tag_as_floats(make):
    X, y = toy_corpus(20)
    with_decimals = [[{**token, "bias": Decimal("0.5")} for token in xseq] for xseq in X]
    with_floats = [[{**token, "bias": 0.5} for token in xseq] for xseq in X]
    crf = make(c2=0.1, max_iterations=15).fit(with_decimals, y)
    assert weights(crf) == weights(make(c2=0.1, max_iterations=15).fit(with_floats, y))
    assert crf.predict_single(with_decimals[3]) == crf.predict_single(with_floats[3])
    assert crf.predict_marginals([with_decimals[3]])[0] == crf.predict_marginals([with_floats[3]])[0]
