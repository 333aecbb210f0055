"""Bad input raises a typed fstcrf error, before the kernel runs."""

import numpy as np
import pytest

import fstcrf
from fstcrf import errors
from fstcrf.engine.topology import Topology, first_order, from_acceptor, intersect, iob2, kth_order, symbol_table

try:  # the tests that need pynini are marked pynini: the CI leg without it skips them
    import pynini
except ImportError:
    pynini = None


@pytest.fixture
def topo():
    return iob2(["NP"])


def test_every_error_is_a_value_error():
    for name in dir(errors):
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, errors.FstcrfError):
            assert issubclass(cls, ValueError)


@pytest.mark.parametrize(
    "emissions, error",
    [
        (np.zeros(3), errors.ShapeError),
        (np.zeros((4, 2)), errors.ShapeError),
        (np.zeros((4, 3, 1)), errors.ShapeError),
        (np.array([["a", "b", "c"]]), errors.ShapeError),
        (np.array([[0.0, np.nan, 0.0]]), errors.ScoreError),
        (np.array([[0.0, np.inf, 0.0]]), errors.ScoreError),
        (np.zeros((0, 3)), errors.EmptySequenceError),
    ],
)
def test_bad_emissions(topo, emissions, error):
    with pytest.raises(error):
        fstcrf.Potentials(topo, emissions)


def test_non_finite_score_names_its_position(topo):
    emissions = np.zeros((4, 3))
    emissions[2, 1] = -np.inf
    with pytest.raises(errors.ScoreError, match=r"\(2, 1\)"):
        fstcrf.Potentials(topo, emissions)


def test_bad_lengths(topo):
    with pytest.raises(errors.EmptySequenceError, match="sentence 1 is empty"):
        fstcrf.Potentials(topo, np.zeros((4, 3)), [4, 0])
    with pytest.raises(errors.ShapeError, match="sum to 5"):
        fstcrf.Potentials(topo, np.zeros((4, 3)), [2, 3])
    with pytest.raises(errors.ShapeError):
        fstcrf.Potentials(topo, np.zeros((4, 3)), [2.0, 2.0])


def test_bad_transition_start_final(topo):
    with pytest.raises(errors.ShapeError):
        fstcrf.Potentials(topo, np.zeros((4, 3)), None, np.zeros(topo.num_edges + 1))
    with pytest.raises(errors.ScoreError):
        fstcrf.Potentials(topo, np.zeros((4, 3)), None, np.full(topo.num_edges, np.nan))
    with pytest.raises(errors.ShapeError):
        fstcrf.Potentials(topo, np.zeros((4, 3)), None, None, np.zeros(2))
    with pytest.raises(errors.ScoreError):
        fstcrf.Potentials(topo, np.zeros((4, 3)), None, None, None, [0, np.inf, 0])


def test_infeasible_length_is_reported_with_sentence_index():
    # a -> b -> c -> a cycle, ending only in c: lengths 3, 6, 9, ... only
    cycle = Topology(["a", "b", "c"], [0, 1, 2], [0, 1, 2], [1, 2, 0], [True, False, False], [False, False, True])
    assert [cycle.is_feasible(n) for n in range(1, 10)] == [False, False, True] * 3
    assert cycle.is_feasible(300_000) and not cycle.is_feasible(300_001)
    with pytest.raises(errors.InfeasibleError, match=r"length 4 \(sentences 1\)"):
        fstcrf.Potentials(cycle, np.zeros((7, 3)), [3, 4])


def test_bad_k_samples_seed(topo):
    pot = fstcrf.Potentials(topo, np.zeros((4, 3)))
    with pytest.raises(errors.ShapeError):
        fstcrf.kbest(pot, 0)
    with pytest.raises(errors.ShapeError):
        fstcrf.sample(pot, 0)
    with pytest.raises(errors.ShapeError):
        fstcrf.sample(pot, 2, seed=-1)


def test_bad_topologies():
    with pytest.raises(errors.TopologyError):
        first_order([])
    with pytest.raises(errors.LabelError, match="duplicate"):
        first_order(["A", "A"])
    with pytest.raises(errors.LabelError):
        first_order(["A B"])
    with pytest.raises(errors.LabelError):
        Topology(["a"], [1], [], [], [True], [True])
    with pytest.raises(errors.LabelError):
        Topology(["a", "b"], [0, 1], [0], [2], [True, True], [True, True])
    with pytest.raises(errors.TopologyError, match="duplicate edges"):
        Topology(["a"], [0], [0, 0], [0, 0], [True], [True])
    with pytest.raises(errors.TopologyError):
        kth_order(["a"], 0)
    with pytest.raises(errors.LabelError):
        kth_order(["a"], 2, pad="O")


@pytest.mark.pynini
def test_bad_acceptors():
    labels = ["a", "b"]
    empty = pynini.Fst()
    with pytest.raises(errors.TopologyError, match="empty language"):
        from_acceptor(empty, labels)
    transducer = pynini.cross("a", "b")
    with pytest.raises(errors.TopologyError, match="transducer"):
        from_acceptor(transducer, labels)
    no_final = pynini.Fst()
    q = no_final.add_state()
    no_final.set_start(q)
    no_final.add_arc(q, pynini.Arc(1, 1, 0, q))
    with pytest.raises(errors.TopologyError):
        from_acceptor(no_final, labels)
    unknown = pynini.accep("z", token_type=symbol_table(["a", "b", "y", "z"]))
    with pytest.raises(errors.LabelError, match="key 4"):
        intersect(first_order(labels), unknown)
    disjoint = pynini.accep("a", token_type=symbol_table(labels)) + pynini.accep("b", token_type=symbol_table(labels))
    topo = intersect(iob2(["X"]), pynini.accep("O", token_type=symbol_table(iob2(["X"]).labels)))
    assert topo.num_states == 1
    with pytest.raises(errors.TopologyError, match="no label sequence"):
        intersect(Topology(labels, [0, 1], [0], [0], [True, False], [True, False]), disjoint)


@pytest.mark.pynini
def test_pynini_acceptor_recognised_in_a_fresh_process():
    # pynini 2.1.7 loads OpenFst's binding as _pywrapfst; nothing imports pywrapfst here
    import subprocess
    import sys

    program = (
        "import sys, pynini\n"
        "from fstcrf.engine.topology import from_acceptor\n"
        "acceptor = pynini.union(pynini.accep('[1]'), pynini.accep('[1][2]')).optimize()\n"
        "topology = from_acceptor(acceptor, ['a', 'b'])\n"
        "print(topology.num_states, 'pywrapfst' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert result.stdout.split()[0] == "2"
