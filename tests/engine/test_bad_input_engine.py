"""Budgets for work that can explode, and argument checks of the engine API."""

from __future__ import annotations

import re
import threading
import warnings
import time

import numpy as np
import pytest

import fstcrf
from fstcrf import errors
from fstcrf.engine import budget, joint
from fstcrf.grammar import constrain, load_grammar, parse_grammar, shipped_grammars
from fstcrf.engine.lattice import to_fst, write_lattice
from fstcrf.engine.topology import (
    bioes,
    first_order,
    from_acceptor,
    intersect,
    iob2,
    iob2_labels,
    kth_order,
    second_order,
    symbol_table,
)

try:  # the tests that need pynini are marked pynini: the CI leg without it skips them
    import pynini
    from fstcrf.engine.bounded import acceptor_arcs, subset_states
    from fstcrf.grammar import compile_grammar
except ImportError:
    pynini = acceptor_arcs = subset_states = compile_grammar = None

CHUNK_TYPES = "ADJP ADVP CONJP INTJ LST NP PP PRT SBAR UCP VP".split()
CHUNK_LABELS = iob2_labels(CHUNK_TYPES)  # the 23 CoNLL-2000 chunk labels


@pytest.fixture
def pot():
    return fstcrf.Potentials(first_order(["a", "b", "c"]), np.random.default_rng(0).normal(size=(7, 3)), [3, 4])


# -- the budget module ----------------------------------------------------------


def test_limits_are_scoped_nested_and_seen_by_other_threads():
    default = budget.current("max_states")
    with budget.limits(max_states=10):
        with budget.limits(max_work=20):
            assert (budget.current("max_states"), budget.current("max_work")) == (10, 20)
            seen = []
            worker = threading.Thread(target=lambda: seen.append(budget.current("max_states")))
            worker.start()
            worker.join()
            assert seen == [10]
        assert budget.current("max_work") == budget.DEFAULT_MAX_WORK
    assert budget.current("max_states") == default


def test_check_messages_give_estimate_limit_and_options():
    with budget.limits(max_states=100):
        with pytest.raises(
            errors.BudgetError,
            match=r"about 1,000 states.*budget of 100.*--max-states N.*"
            r"fstcrf\.engine\.budget\.limits\(max_states=N\)",
        ):
            budget.check_states(1000, "the thing")
        budget.check_states(100, "the thing")
    with budget.limits(max_work=5):
        with pytest.raises(errors.BudgetError, match=r"--max-work N.*limits\(max_work=N\)"):
            budget.check_work(6, "the work")


def test_bad_limits():
    with pytest.raises(errors.ArgumentTypeError):
        budget.set_limits(max_states="many")
    with pytest.raises(errors.BudgetError):
        with budget.limits(max_work=0):
            pass


def test_cascade_budget_counts_a_model_call_per_hypothesis():
    budget.check_cascade(5, 30, [45, 23])
    with pytest.raises(errors.BudgetError, match="k=100000"):
        budget.check_cascade(100_000, 1, [45, 23])


# -- states of topologies and grammars ---------------------------------------------


@pytest.mark.pynini
def test_subset_count_matches_pynini_determinize():
    rng = np.random.default_rng(3)
    for _ in range(40):
        fsa = pynini.Fst()
        states = [fsa.add_state() for _ in range(int(rng.integers(2, 9)))]
        fsa.set_start(states[0])
        fsa.set_final(states[-1])
        for _ in range(int(rng.integers(3, 25))):
            key = int(rng.integers(1, 4))
            fsa.add_arc(states[rng.integers(len(states))], pynini.Arc(key, key, 0, states[rng.integers(len(states))]))
        assert subset_states(*acceptor_arcs(fsa), limit=10**6) == pynini.determinize(fsa).num_states()


def test_kth_order_is_refused_before_it_is_built():
    started = time.perf_counter()
    with pytest.raises(errors.BudgetError, match=r"order-8 topology over 10 labels.*about 111,111,110 states"):
        kth_order([f"L{i}" for i in range(10)], 8)
    assert time.perf_counter() - started < 1.0
    with budget.limits(max_states=8):
        with pytest.raises(errors.BudgetError, match="about 9 states"):
            kth_order(["a", "b", "c"], 2, pad="a")
    assert kth_order(["a", "b", "c"], 2, pad="a").num_states == 9


@pytest.mark.pynini
def test_exploding_grammar_fails_fast_with_an_estimate():
    grammar = parse_grammar("start = .* B-NP .{20} ;")
    started = time.perf_counter()
    with pytest.raises(errors.BudgetError, match=r"<string>:1:9: .*at least [\d,]+ states.*--max-states"):
        compile_grammar(grammar, CHUNK_LABELS)
    assert time.perf_counter() - started < 5.0


@pytest.mark.pynini
def test_grammar_under_and_over_a_lowered_budget():
    grammar = parse_grammar("start = .* B-NP .{6} ;")  # 2^7 = 128 states
    with budget.limits(max_states=100):
        with pytest.raises(errors.BudgetError, match="at least"):
            compile_grammar(grammar, CHUNK_LABELS)
    with budget.limits(max_states=200):
        assert compile_grammar(grammar, CHUNK_LABELS).num_states() == 128


@pytest.mark.pynini
def test_bounded_repeat_is_estimated_before_it_is_built():
    with budget.limits(max_states=500):
        with pytest.raises(errors.BudgetError, match="about 1,500 states"):  # 500 copies of 3 states
            compile_grammar(parse_grammar("start = (B-NP I-NP){500} ;"), CHUNK_LABELS)


@pytest.mark.pynini
def test_product_with_the_topology_is_budgeted():
    grammar = parse_grammar("start = .* B-NP .{5} ;")  # 64 grammar states, 24 x 64 bound
    topology = first_order(CHUNK_LABELS)
    with budget.limits(max_states=500):
        with pytest.raises(errors.BudgetError, match="product of the topology and the constraint"):
            intersect(topology, compile_grammar(grammar, CHUNK_LABELS))
    with budget.limits(max_states=1000):  # counted: the bound is passed, the product is not
        assert 500 < constrain(topology, grammar).num_states <= 1000


@pytest.mark.pynini
def test_from_acceptor_budgets_model_states():
    acceptor = pynini.union(*[pynini.accep(f"[{k}]") for k in range(1, 24)]).closure().optimize()
    with budget.limits(max_states=10):
        with pytest.raises(errors.BudgetError, match="about 23 states"):
            from_acceptor(acceptor, CHUNK_LABELS)


@pytest.mark.pynini
def test_shipped_grammars_compile_within_the_default_budget():
    for name in shipped_grammars():
        if name in ("nest", "no_overlap"):  # joint grammars: tests/model/test_joint_grammar.py
            continue
        params = {"X": "NP"} if name.startswith("at_") else None
        topologies = [bioes(CHUNK_TYPES)] if name == "bioes" else [iob2(CHUNK_TYPES), second_order(CHUNK_LABELS)]
        for topology in topologies:
            assert constrain(topology, load_grammar(name), params=params).num_states > 0


# -- k-best lists and sampling ------------------------------------------------------


def test_kbest_and_sample_budget(pot):
    with budget.limits(max_work=100):
        with pytest.raises(errors.BudgetError, match=r"k=5.*7 tokens and 3 states"):
            fstcrf.kbest(pot, 5)
        with pytest.raises(errors.BudgetError, match="10 samples"):
            fstcrf.sample(pot, 10)
        assert fstcrf.kbest(pot, 4).found.tolist() == [4, 4]


def test_joint_kbest_and_sample_budget():
    space = joint.JointSpace([iob2(["NP"]), first_order(["a", "b"])])
    jp = joint.JointPotentials(space, np.zeros((2, space.num_states)))
    with budget.limits(max_work=50):
        with pytest.raises(errors.BudgetError, match="joint k-best"):
            joint.joint_kbest(jp, 5)
        with pytest.raises(errors.BudgetError, match="joint samples"):
            joint.joint_sample(jp, 5)
    with budget.limits(max_states=5):
        with pytest.raises(errors.BudgetError, match="dense cross product"):
            joint.joint_kbest(jp, 2)
    with pytest.raises(errors.ArgumentTypeError, match="JointPotentials"):
        joint.joint_viterbi(jp.to_product())


# -- argument types of the engine API -----------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda p: fstcrf.forward_backward(p.emissions),
        lambda p: fstcrf.viterbi(None),
        lambda p: fstcrf.max_marginals("potentials"),
        lambda p: fstcrf.kbest([p], 2),
        lambda p: fstcrf.sample({}, 2),
        lambda p: fstcrf.kbest(p, "3"),
        lambda p: fstcrf.kbest(p, 2.5),
        lambda p: fstcrf.kbest(p, True),
        lambda p: fstcrf.sample(p, 1.0),
        lambda p: fstcrf.sample(p, 2, seed="7"),
        lambda p: fstcrf.viterbi(p, threads="2"),
        lambda p: fstcrf.forward_backward(p, marginals="yes"),
        lambda p: to_fst(p, sentence="0"),
        lambda p: to_fst(p, arc_type=None),
        lambda p: to_fst(None),
        lambda p: write_lattice(p, 42),
        lambda p: p.score("abc"),
        lambda p: fstcrf.Potentials("first-order", np.zeros((2, 3))),
    ],
)
def test_wrong_types_raise_argument_type_error(pot, call):
    with pytest.raises(errors.ArgumentTypeError) as raised:
        call(pot)
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, ValueError)
    assert "must be" in str(raised.value)


@pytest.mark.pynini
def test_bad_values(pot):
    with pytest.raises(errors.LabelError, match="state 99 at token 0"):
        pot.score([99] * 7)
    with pytest.raises(errors.ShapeError, match=r"expected \(7,\)"):
        pot.score([0] * 6)
    with pytest.raises(errors.ShapeError, match="threads"):
        fstcrf.viterbi(pot, threads=0)
    with pytest.raises(errors.LabelError, match="sentence 2"):
        to_fst(pot, 2)
    with pytest.raises(errors.LabelError, match="sentence 5"):
        pot.select([5])


@pytest.mark.pynini
def test_write_lattice_to_a_missing_folder_or_a_folder(pot, tmp_path):
    with pytest.raises(errors.OutputPathError, match="does not exist"):
        write_lattice(pot, tmp_path / "missing" / "lattice.fst")
    with pytest.raises(errors.OutputPathError, match="folder"):
        write_lattice(pot, tmp_path)
    write_lattice(pot, tmp_path / "lattice.fst", sentence=1)
    assert pynini.Fst.read(str(tmp_path / "lattice.fst")).num_states() == 1 + 4 * 3
    assert [p.name for p in tmp_path.iterdir()] == ["lattice.fst"]


# -- arrays changed after a Potentials was built ---------------------------------------


@pytest.mark.pynini
@pytest.mark.parametrize(
    "change, error, message",
    [
        (lambda p: setattr(p, "emissions", np.full((7, 3), np.nan)), errors.ScoreError, "emissions.*nan"),
        (lambda p: setattr(p, "emissions", np.zeros((8, 3))), errors.ShapeError, r"emissions.*\(8, 3\)"),
        (lambda p: setattr(p, "emissions", p.emissions.astype(np.float32)), errors.ShapeError, "emissions"),
        (lambda p: p.emissions.__setitem__((2, 1), np.inf), errors.ScoreError, "emissions.*inf"),
        (lambda p: setattr(p, "transitions", np.zeros(4)), errors.ShapeError, "transitions"),
        (lambda p: setattr(p, "start", np.zeros(2)), errors.ShapeError, "start"),
        (lambda p: setattr(p, "lengths", np.array([2, 4])), errors.ShapeError, "lengths"),
        (lambda p: setattr(p, "token_class", np.zeros(7, dtype=np.int32)), errors.ShapeError, "token_class"),
    ],
)
def test_changed_arrays_are_the_users_error(pot, change, error, message):
    change(pot)
    for run in (
        fstcrf.forward_backward,
        fstcrf.viterbi,
        fstcrf.max_marginals,
        lambda p: fstcrf.kbest(p, 2),
        lambda p: fstcrf.sample(p, 2),
        to_fst,
    ):
        with pytest.raises(error, match=message):
            run(pot)


def test_forbidden_start_given_a_score_is_reported():
    topology = iob2(["NP"])  # I-NP may not start
    pot = fstcrf.Potentials(topology, np.zeros((3, topology.num_states)))
    pot.start = np.zeros(topology.num_states)
    with pytest.raises(errors.ScoreError, match="start"):
        fstcrf.viterbi(pot)


def test_clamped_potentials_still_run(pot):
    allowed = np.ones((7, 3), dtype=bool)
    allowed[0, 0] = False
    clamped = pot.clamp(allowed)
    assert fstcrf.viterbi(clamped).paths[0] != 0
    assert np.isfinite(fstcrf.log_partition(clamped)).all()


@pytest.mark.pynini
def test_symbol_table_of_grammar_result_survives(pot):
    fst = compile_grammar(parse_grammar("start = (a | b)+ ;"), ["a", "b", "c"])
    assert fst.input_symbols().find(1) == symbol_table(["a", "b", "c"]).find(1)


# -- values no float64 arithmetic can hold ---------------------------------------


@pytest.mark.parametrize(
    "scores, error",
    [
        (np.full((7, 3), 1 + 2j), errors.ScoreError),
        (np.full((7, 3), 1.0, dtype=object), errors.ScoreError),
        (np.full((7, 3), "1.5"), errors.ShapeError),
    ],
    ids=["complex", "object", "strings"],
)
def test_scores_that_are_not_real_numbers_are_refused(scores, error):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning must not leak
        with pytest.raises(error, match=f"dtype {scores.dtype}"):
            fstcrf.Potentials(first_order(["a", "b", "c"]), scores, [3, 4])


@pytest.mark.parametrize("inference", [fstcrf.forward_backward, fstcrf.log_partition, fstcrf.viterbi])
def test_scores_whose_sum_overflows_name_the_sentence(inference):
    scores = np.zeros((7, 3))
    scores[3:] = 1e308  # sentence 1 (tokens 3..6) overflows, sentence 0 does not
    pot = fstcrf.Potentials(first_order(["a", "b", "c"]), scores, [3, 4])
    with pytest.raises(errors.ScoreError, match="of sentence 1 is inf"):
        inference(pot)


def test_token_values_that_are_not_strings_name_sentence_token_and_column():
    from fstcrf.corpus.conll import Sentence
    from fstcrf.features.extractor import FeatureExtractor

    good = Sentence({"word": ["the", "cat"], "pos": ["DT", "NN"]})
    extractor = FeatureExtractor("word[0]\nlower(word[-1])|pos[0]").fit([good])
    cases = [
        (Sentence({"word": [1, None], "pos": [2.5, "NN"]}), "sentence 2, token 1: column 'word' holds int 1"),
        (Sentence({"word": ["a", ["b"]], "pos": ["NN", "NN"]}), "sentence 2, token 2: column 'word' holds list"),
        (Sentence({"word": ["a", "b"], "pos": ["NN", b"NN"]}), "sentence 2, token 2: column 'pos' holds bytes"),
    ]
    for bad, message in cases:
        with pytest.raises(errors.ArgumentTypeError, match=re.escape(message)):
            extractor.transform([good, bad])
        with pytest.raises(errors.ArgumentTypeError, match=re.escape(message)):
            FeatureExtractor("word[0]\nlower(word[-1])|pos[0]").fit([good, bad])


def test_kernel_arrays_unpickled_from_misaligned_buffers_are_aligned():
    """Dask sends arrays as out-of-band buffers that may start at any byte; the
    kernel reads int64 and double arrays, which must be aligned (UBSan found one)."""
    import pickle

    from fstcrf.features.encoding import EncodedSentences
    from fstcrf.features.sparse_rows import SparseRows

    rows = SparseRows(np.array([0, 2, 3, 5]), np.array([0, 1, 1, 0, 2], dtype=np.int32), np.ones(5), (3, 3))
    encoded = EncodedSentences(rows, [1, 2])
    buffers = []
    data = pickle.dumps(encoded, protocol=5, buffer_callback=buffers.append)
    shifted = []
    for buffer in buffers:
        raw = bytearray(len(buffer.raw()) + 1)
        raw[1:] = buffer.raw()
        shifted.append(memoryview(raw)[1:])
    copy = pickle.loads(data, buffers=shifted)
    arrays = {name: value for name, value in vars(copy).items() if isinstance(value, np.ndarray)}
    assert arrays and all(array.flags.aligned for array in arrays.values()), {
        name: array.flags.aligned for name, array in arrays.items()
    }
    assert np.array_equal(copy.indptr, encoded.indptr) and np.array_equal(copy.indices, encoded.indices)


def test_misaligned_weights_give_the_aligned_gradient():
    """Weights unpickled on a Dask worker may start at any byte (UBSan found
    ft_gradient reading them misaligned; the sanitizer run of docs/development.md
    checks this test): a misaligned copy of the weights gives the same loss and
    gradient as the aligned array."""
    from corpora import random_corpus, training_set

    problem = training_set(random_corpus(3, 12), 1, "supported")
    theta = np.random.default_rng(3).normal(size=problem.num_weights)
    raw = bytearray(theta.nbytes + 1)
    misaligned = np.frombuffer(memoryview(raw)[1:], dtype=np.float64)
    misaligned[:] = theta
    assert not misaligned.flags.aligned
    loss, gradient = problem.loss_and_gradient(theta)
    loss_misaligned, gradient_misaligned = problem.loss_and_gradient(misaligned)
    assert loss_misaligned == loss and np.array_equal(gradient_misaligned, gradient)


@pytest.mark.parametrize("argument", ["emissions", "transitions", "start"])
def test_ragged_scores_are_a_shape_error(argument):
    topology = first_order(["a", "b", "c"])
    scores = {"emissions": np.zeros((3, 3))}
    scores[argument] = [[0.0, 1.0], [2.0]]
    with pytest.raises(errors.ShapeError, match=f"{argument} must be numeric"):
        fstcrf.Potentials(topology, scores.pop("emissions"), **scores)
