"""Built-in topologies against their definitions, by enumeration of every label
sequence of length <= 5.

For each topology the label sequences it allows (state paths from start to
final along its edges, states mapped to labels by state_label) must be exactly
the sequences the definition allows, each reached by exactly ONE state path
(no double counting in log Z).  The definitions are written independently of
fstcrf.engine.topology, mostly as regular expressions over space-joined labels.
"""

import itertools
import math
import re

import numpy as np
import pytest

import fstcrf
from fstcrf.errors import InfeasibleError, TopologyError
from fstcrf.engine.topology import (
    bioes,
    bioes_labels,
    first_order,
    intersect,
    iob2,
    iob2_labels,
    kth_order,
    second_order,
)

from oracles import enumerate_state_paths

try:  # the tests that need pynini are marked pynini: the CI leg without it skips them
    import pynini
except ImportError:
    pynini = None

MAX_LENGTH = 5
CONLL2000_TYPES = ["ADJP", "ADVP", "CONJP", "INTJ", "LST", "NP", "PP", "PRT", "SBAR", "UCP", "VP"]


# ---------------------------------------------------------------------------
# definitions
# ---------------------------------------------------------------------------


def sequence_regex(segment: str) -> re.Pattern:
    return re.compile(f"(?:{segment})(?: (?:{segment}))*")


def iob2_definition(types):
    """IOB2: I-X only right after B-X or I-X (so never first, never after O)."""
    chunk = "|".join(f"B-{t}(?: I-{t})*" for t in types)
    pattern = sequence_regex(f"O|{chunk}")
    return lambda seq: pattern.fullmatch(" ".join(seq)) is not None


def bioes_definition(types):
    """BIOES: segments B-X (I-X)* E-X or S-X, O elsewhere, no segment left open."""
    segment = "|".join(f"S-{t}|B-{t}(?: I-{t})* E-{t}" for t in types)
    pattern = sequence_regex(f"O|{segment}")
    return lambda seq: pattern.fullmatch(" ".join(seq)) is not None


def sha_pereira_definition(outside="O"):
    """Second order (Sha & Pereira): pairs (c_{i-1}, c_i) with c_0 = O; no pair
    (O, I-X): an I tag can't follow O or start a sentence, but CAN follow a B
    or I tag of another type."""

    def allowed(seq):
        previous = (outside,) + tuple(seq[:-1])
        return not any(p == outside and c.startswith("I-") for p, c in zip(previous, seq))

    return allowed


def everything(seq):
    return True


def label_paths(topology, length):
    """{label sequence: [state paths]} of the topology at this length."""
    out = {}
    for path in enumerate_state_paths(topology, length):
        labels = tuple(topology.labels[topology.state_label[s]] for s in path)
        out.setdefault(labels, []).append(path)
    return out


def check_against_definition(topology, definition, max_length=MAX_LENGTH):
    counts = []
    for T in range(1, max_length + 1):
        by_labels = label_paths(topology, T)
        doubles = {seq: paths for seq, paths in by_labels.items() if len(paths) > 1}
        assert not doubles, f"T={T}: label sequences with several state paths: {list(doubles.items())[:3]}"
        expected = {seq for seq in itertools.product(topology.labels, repeat=T) if definition(seq)}
        allowed = set(by_labels)
        assert allowed == expected, (
            f"T={T}: allowed but not in the definition: {sorted(allowed - expected)[:5]}; "
            f"in the definition but not allowed: {sorted(expected - allowed)[:5]}"
        )
        counts.append(len(expected))
        # the kernel counts them too: with all scores 0, log Z = log(number of sequences)
        if expected:
            pot = fstcrf.Potentials(topology, np.zeros((T, topology.num_states)))
            assert math.isclose(fstcrf.log_partition(pot)[0], math.log(len(expected)), rel_tol=1e-12, abs_tol=1e-12)
        else:
            assert not topology.is_feasible(T)
            with pytest.raises(InfeasibleError):
                fstcrf.Potentials(topology, np.zeros((T, topology.num_states)))
    return counts


# ---------------------------------------------------------------------------
# the builders
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("labels", [["a"], ["a", "b"], ["O", "B-NP", "I-NP", "x"]])
def test_first_order(labels):
    topology = first_order(labels)
    assert topology.num_states == len(labels) and topology.num_edges == len(labels) ** 2
    counts = check_against_definition(topology, everything)
    assert counts == [len(labels) ** T for T in range(1, MAX_LENGTH + 1)]


@pytest.mark.parametrize("types", [["NP"], ["NP", "VP"], ["A", "B", "C"]])
def test_iob2(types):
    topology = iob2(types)
    assert set(topology.labels) == set(iob2_labels(types))
    check_against_definition(topology, iob2_definition(types), 5 if len(types) < 3 else 4)


@pytest.mark.parametrize("types", [["NP"], ["NP", "VP"]])
def test_bioes(types):
    topology = bioes(types)
    assert set(topology.labels) == set(bioes_labels(types))
    counts = check_against_definition(topology, bioes_definition(types))
    assert all(c > 0 for c in counts)


@pytest.mark.parametrize("types", [["NP"], ["NP", "VP"]])
def test_second_order(types):
    tags = iob2_labels(types)
    topology = second_order(tags)
    L = len(tags)
    # every pair (c_{i-1}, c_i) except (O, I-X) is a state
    assert topology.num_states == L * L - len(types)
    check_against_definition(topology, sha_pereira_definition())
    # and a state IS that pair: its name is "c_{i-1} c_i", with c_0 = O
    for T in range(1, 5):
        for path in enumerate_state_paths(topology, T):
            labels = ["O"] + [topology.labels[topology.state_label[s]] for s in path]
            assert [topology.state_names[s] for s in path] == [f"{labels[t]} {labels[t + 1]}" for t in range(T)]


def test_second_order_allows_inside_after_other_type():
    topology = second_order(iob2_labels(["NP", "VP"]))
    paths = label_paths(topology, 2)
    assert ("B-NP", "I-VP") in paths and ("I-NP", "I-VP") not in paths and ("O", "I-NP") not in paths
    assert ("B-NP", "I-NP") in paths and ("I-VP",) not in label_paths(topology, 1)


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("pad", [None, "a"])
def test_kth_order(order, pad):
    labels = ["a", "b", "c"]
    topology = kth_order(labels, order, pad)
    counts = check_against_definition(topology, everything, 5 if order < 3 else 4)
    assert counts == [3**T for T in range(1, len(counts) + 1)]
    # a state remembers the last `order` labels (pad-filled, or fewer at the start)
    if order > 1:
        for T in range(1, 5):
            for path in enumerate_state_paths(topology, T):
                seq = [labels[topology.state_label[s]] for s in path]
                padded = [pad] * (order - 1) + seq if pad is not None else seq
                offset = order - 1 if pad is not None else 0
                expected = [" ".join(padded[max(0, t + offset - order + 1) : t + offset + 1]) for t in range(T)]
                assert [topology.state_names[s] for s in path] == expected


# ---------------------------------------------------------------------------
# intersect with user acceptors
# ---------------------------------------------------------------------------


def at_most_one(topology, label):
    """sigma* label? sigma* over the other labels, built with pynini operations
    (epsilons and non-determinism included)."""
    table = topology.symbols
    others = [other for other in topology.labels if other != label]
    sigma = pynini.union(*[pynini.accep(other, token_type=table) for other in others])
    fsa = sigma.closure() + pynini.accep(label, token_type=table).ques + sigma.closure()
    fsa.set_input_symbols(table)
    fsa.set_output_symbols(table)
    return fsa


@pytest.mark.pynini
def test_intersect_at_most_one_b_np():
    topology = iob2(["NP", "VP"])
    constrained = intersect(topology, at_most_one(topology, "B-NP"))
    base = iob2_definition(["NP", "VP"])
    counts = check_against_definition(constrained, lambda seq: base(seq) and seq.count("B-NP") <= 1)
    assert counts[1] < len(label_paths(topology, 2))


@pytest.mark.pynini
def test_intersect_second_order_with_constraint():
    topology = second_order(iob2_labels(["NP"]))
    constrained = intersect(topology, at_most_one(topology, "B-NP"))
    base = sha_pereira_definition()
    check_against_definition(constrained, lambda seq: base(seq) and seq.count("B-NP") <= 1, 4)


def empty_language_acceptors(topology):
    table = topology.symbols
    no_start = pynini.Fst()
    no_final = pynini.Fst()
    q = no_final.add_state()
    no_final.set_start(q)
    no_final.add_arc(q, pynini.Arc(1, 1, 0, q))
    only_empty_string = pynini.accep("", token_type=table)
    disjoint = pynini.accep("I-NP", token_type=table)  # IOB2 cannot start with I-NP
    return {
        "no start": no_start,
        "no final": no_final,
        "only the empty string": only_empty_string,
        "disjoint": disjoint,
    }


@pytest.mark.pynini
@pytest.mark.parametrize("case", ["no start", "no final", "only the empty string", "disjoint"])
def test_intersect_empty_language_raises(case):
    topology = iob2(["NP"])
    acceptor = empty_language_acceptors(topology)[case]
    with pytest.raises(TopologyError):
        intersect(topology, acceptor)


# ---------------------------------------------------------------------------
# CoNLL-2000
# ---------------------------------------------------------------------------


def test_conll2000_second_order_size():
    """23 CoNLL-2000 chunk tags (O + B/I x 11 types): 23^2 = 529 pairs minus the
    11 pairs (O, I-X) = 518 states.  Edges (a, b) -> (b, c): middle tag O gives
    23 x 12 (no I after O), a B tag 23 x 23, an I tag 22 x 23 (nothing enters
    (O, I-X)): 276 + 11 * 529 + 11 * 506 = 11661, density 11661 / 518^2 = 4.35%."""
    tags = iob2_labels(CONLL2000_TYPES)
    assert len(tags) == 23
    topology = second_order(tags)
    print(
        f"\nCoNLL-2000 second order: {topology.num_states} states, {topology.num_edges} edges, "
        f"density {topology.density():.4f}"
    )
    assert topology.num_states == 529 - 11 == 518
    assert topology.num_edges == 23 * 12 + 11 * 23 * 23 + 11 * 22 * 23 == 11661
    assert topology.density() == pytest.approx(0.0435, abs=5e-4)
    assert int(topology.start.sum()) == 12 and bool(topology.final.all())
