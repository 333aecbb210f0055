"""A lattice's picture, read back by Graphviz, shows what the posteriors say: the
states and arcs of probability at or above the threshold and those of the Viterbi
and gold paths, each arc as wide as its brute-force probability makes it, the paths
marked; a composed model's components are drawn one below the other; a picture of
too many states is refused."""

import re

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import fstcrf
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.topology import iob2
from fstcrf.errors import PictureError
from fstcrf.model.compose import load_any
from fstcrf.pictures.lattice import (
    BEST_COLOUR,
    GOLD_COLOUR,
    edge_width,
    joint_lattices,
    lattice_dot,
    potentials_lattice,
)
from drawn import read_picture
from strategies import feasible_instances, oracle_settings
from test_lattice import brute_force_edges

NODE = re.compile(r"c(\d+)t(\d+)s(\d+)")


def node_key(name: str) -> tuple[int, int, int]:
    """(component, token, state) of a lattice node's name."""
    match = NODE.fullmatch(name)
    assert match, name
    return tuple(int(part) for part in match.groups())


def far_from(values: np.ndarray, threshold: float) -> bool:
    """Whether no probability lies within rounding of the threshold."""
    return bool(np.all(np.abs(values - threshold) > 1e-9))


@oracle_settings(max_examples=60)
@given(feasible_instances(), st.sampled_from([0.0, 0.013, 0.07, 0.31]), st.integers(0, 2**32 - 1))
def test_the_picture_shows_the_brute_force_posteriors(instance, threshold, seed):
    pot, topology, oracle = instance.potentials(), instance.topology, instance.oracle(0)
    T = oracle.T
    node, edge = oracle.node_marginals, brute_force_edges(oracle, topology.num_edges)
    assume(far_from(node, threshold) and far_from(edge, threshold))
    rng = np.random.default_rng(seed)
    gold_labels = [topology.labels[s] for s in rng.integers(0, topology.num_states, T)]
    gold = [int(topology.labels.index(label)) for label in gold_labels]
    gold_allowed = tuple(gold) in {tuple(path) for path in oracle.paths.tolist()}
    best = list(oracle.best_path)
    tokens = [f"w{t}" for t in range(T)]
    picture = read_picture(lattice_dot([potentials_lattice(pot, "tags", tokens, gold_labels)], "x", threshold))

    drawn = {node_key(name)[1:]: item for name, item in picture.nodes.items() if name.startswith("c")}
    expected = {(t, s) for t in range(T) for s in range(topology.num_states) if node[t, s] >= threshold}
    expected |= set(enumerate(best)) | (set(enumerate(gold)) if gold_allowed else set())
    assert set(drawn) == expected
    for (t, s), item in drawn.items():
        marks = [
            mark for mark, path in (("best", best), ("gold", gold if gold_allowed else None)) if path and path[t] == s
        ]
        assert item.text == [topology.state_names[s], f"{node[t, s]:.3f}", *([", ".join(marks)] if marks else [])]

    arcs = [(node_key(tail), node_key(head), arc) for tail, head, arc in picture.arcs if tail.startswith("c")]
    gold_arcs = [(a[1:], b[1:]) for a, b, arc in arcs if arc.attributes.get("style") == "dashed"]
    assert gold_arcs == ([((t - 1, gold[t - 1]), (t, gold[t])) for t in range(1, T)] if gold_allowed else [])
    for arc in (arc for _, _, arc in arcs if arc.attributes.get("style") == "dashed"):
        assert arc.attributes["color"] == GOLD_COLOUR
    posterior = {}
    for (_, t0, src), (_, t, dst), arc in arcs:
        if arc.attributes.get("style") == "dashed":
            continue
        assert t == t0 + 1
        p = edge[t, topology.edge_ids[src, dst]]
        posterior[t, src, dst] = p
        assert float(arc.attributes["penwidth"]) == pytest.approx(edge_width(p), abs=1e-3)
        assert float(arc.attributes["tooltip"].rsplit("p = ", 1)[1]) == pytest.approx(p, abs=1e-6)
        on_best = best[t - 1] == src and best[t] == dst
        assert (arc.attributes["color"] == BEST_COLOUR) == on_best
    wanted = {
        (t, int(topology.edge_src[e]), int(topology.edge_dst[e]))
        for t in range(1, T)
        for e in range(topology.num_edges)
        if edge[t, e] >= threshold
    } | {(t, best[t - 1], best[t]) for t in range(1, T)}
    assert set(posterior) == {arc for arc in wanted if (arc[0] - 1, arc[1]) in drawn and (arc[0], arc[2]) in drawn}


def test_a_gold_path_the_topology_forbids_is_named_in_the_caption():
    pot = fstcrf.Potentials(iob2(["NP"]), np.zeros((2, 3)))
    picture = read_picture(lattice_dot([potentials_lattice(pot, "chunk", ["a", "b"], ["I-NP", "O"])], "x"))
    assert picture.clusters["cluster_0"].text == [
        "chunk (iob2, 3 states)",
        "the gold labels are not a path of this topology: I-NP O",
    ]
    assert not any(arc.attributes.get("style") == "dashed" for _, _, arc in picture.arcs)


def test_a_composed_models_components_are_drawn_below_the_tokens_in_chain_order(demo_joint):
    joint = load_any(demo_joint)
    sentence = read_conll(DATA_DIR / "demo_test.txt")[2]
    picture = read_picture(lattice_dot(joint_lattices(joint, sentence), "joint"))
    tokens = [picture.nodes[f"w{t}"] for t in range(len(sentence))]
    assert [item.text for item in tokens] == [[word, str(t)] for t, word in enumerate(sentence["word"])]

    def height(name: str) -> float:
        return float(picture.nodes[name].attributes["pos"].split(",")[1])

    lowest = {0: [], 1: []}
    for name in picture.nodes:
        if name.startswith("c"):
            lowest[node_key(name)[0]].append(height(name))
    # Graphviz's y axis points up: the tokens on top, then the lowest component (pos), then chunk
    assert min(height(f"w{t}") for t in range(len(sentence))) > max(lowest[0])
    assert min(lowest[0]) > max(lowest[1])
    for _, _, arc in picture.arcs:
        assert arc.attributes.get("style") in ("dashed", "invis") or arc.attributes["color"] == BEST_COLOUR


def test_a_lattice_of_too_many_states_is_refused_with_the_count_and_the_option():
    pot = fstcrf.Potentials(iob2(["NP", "VP"]), np.zeros((4, 5)))
    lattice = potentials_lattice(pot, "chunk", ["a", "b", "c", "d"])
    with pytest.raises(PictureError, match=r"has 20 states, more than the 19 .*--max-states 20"):
        lattice_dot([lattice], "x", threshold=0.0, max_nodes=19)
    lattice_dot([lattice], "x", threshold=0.0, max_nodes=20)
    with pytest.raises(PictureError, match="needs at least one lattice"):
        lattice_dot([], "x")
