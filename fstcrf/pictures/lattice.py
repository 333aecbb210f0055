"""One sentence's lattice as a Graphviz picture: a column per token holding the states
a path may be in there, the arcs between the columns with the probability each
carries, the best (Viterbi) path and the gold path.

For a single model the probabilities are exact posteriors on its decoding topology
(its own, restricted to its training grammar): p(state s at token t) are the node
marginals of forward-backward, and p(arc i -> j into token t) is the expected count
of that arc at that token, from one forward-backward pass in which every token has a
transition class of its own (the kernel's expected edge counts per class are then
counts per position).  States and arcs below ``threshold`` are left out, except those
of the Viterbi and gold paths; an arc's width and darkness grow with its probability.

For a composed model each component's lattice shows its states' marginals under the
joint model and its part of the joint Viterbi path (the arcs drawn are those of the
joint Viterbi and gold paths), the components one above the other, token columns
aligned."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast
from collections.abc import Sequence

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.corpus.labels import label_states
from fstcrf.engine.inference import Potentials, forward_backward, viterbi
from fstcrf.engine.joint import component_marginals, joint_forward_backward, joint_viterbi
from fstcrf.engine.topology import Topology
from fstcrf.errors import LabelError, PictureError, ShapeError
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import JointModel
from fstcrf.pictures.automata import check_size
from fstcrf.pictures.dot import digraph, edge, node, quoted
from fstcrf.pictures.settings import DEFAULT_MAX_NODES, DEFAULT_THRESHOLD

BEST_COLOUR = "#1f77b4"
GOLD_COLOUR = "#2ca02c"


@dataclass(frozen=True)
class Lattice:
    """What a picture shows of one sentence under one chain.

    Attributes:
        name: what the chain predicts (its target column).
        tokens: the T words.
        topology: the S states and E edges of the chain.
        node: float [T, S], p(state s at token t).
        edge: float [T, E], p(edge e into token t) (row 0 is zero), or None when
            not computed (the components of a composed model).
        best: int [T], the Viterbi path's states.
        gold: int [T], the gold path's states, or None.
        gold_labels: the T gold labels, or None when the file has no gold column.
    """

    name: str
    tokens: tuple[str, ...]
    topology: Topology
    node: np.ndarray
    edge: np.ndarray | None
    best: np.ndarray
    gold: np.ndarray | None
    gold_labels: tuple[str, ...] | None


def position_posteriors(pot: Potentials) -> tuple[np.ndarray, np.ndarray]:
    """(float [T, S] node marginals, float [T, E] the probability of each edge into
    each token, row 0 zero) of one sentence's potentials."""
    if pot.num_sequences != 1:
        raise ShapeError(f"a lattice is one sentence's; the potentials hold {pot.num_sequences}")
    T = pot.num_tokens
    per_token = Potentials(
        pot.topology,
        pot.emissions,
        None,
        pot.transitions_into(slice(None)),
        np.where(np.isfinite(pot.start), pot.start, 0.0),
        np.where(np.isfinite(pot.final), pot.final, 0.0),
        token_class=np.arange(T),
    )
    result = forward_backward(per_token)
    return cast(np.ndarray, result.node_marginals), cast(np.ndarray, result.edge_counts)


def gold_path(topology: Topology, labels: Sequence[str]) -> np.ndarray | None:
    """int [T]: the states of the label sequence ``labels``, or None when the topology
    does not allow it (an unknown label, a transition or end it forbids)."""
    index = {label: i for i, label in enumerate(topology.labels)}
    if any(label not in index for label in labels):
        return None
    try:
        return label_states(topology, np.array([index[label] for label in labels]), np.array([0, len(labels)]))
    except LabelError:
        return None


def words(sentence: Sentence) -> tuple[str, ...]:
    """The tokens a picture shows: the column "word", else the first column."""
    return tuple(sentence["word"] if "word" in sentence.columns else next(iter(sentence.columns.values())))


def potentials_lattice(
    pot: Potentials, name: str, tokens: Sequence[str], gold_labels: Sequence[str] | None = None
) -> Lattice:
    """The lattice of one sentence's potentials (``tokens``: its words), with exact node
    and edge posteriors, its Viterbi path and the path of ``gold_labels`` if given."""
    node_marginals, edge_marginals = position_posteriors(pot)
    return Lattice(
        name,
        tuple(tokens),
        pot.topology,
        node_marginals,
        edge_marginals,
        viterbi(pot).paths,
        None if gold_labels is None else gold_path(pot.topology, gold_labels),
        None if gold_labels is None else tuple(gold_labels),
    )


def chain_lattice(model: ChainCRF, sentence: Sentence) -> Lattice:
    """The lattice of ``sentence`` under a fitted model, on its decoding topology."""
    _, pot, _ = model.decoding_potentials([sentence])
    return potentials_lattice(pot, model.target_, words(sentence), sentence.columns.get(model.target_))


def joint_lattices(joint: JointModel, sentence: Sentence) -> list[Lattice]:
    """The lattice of each component of a composed model: its states' marginals under
    the joint model and its part of the joint Viterbi path."""
    jp = joint.potentials([sentence])
    _, node_marginals = joint_forward_backward(jp)
    best = joint.space.component_states(joint_viterbi(jp).paths)  # [T, K]
    per_component = component_marginals(joint.space, cast(np.ndarray, node_marginals))
    lattices = []
    for k, (model, marginals) in enumerate(zip(joint.components, per_component)):
        topology = joint.topologies[k]
        gold_labels = sentence.columns.get(model.target_)
        lattices.append(
            Lattice(
                model.target_,
                words(sentence),
                topology,
                marginals,
                None,
                best[:, k],
                None if gold_labels is None else gold_path(topology, gold_labels),
                None if gold_labels is None else tuple(gold_labels),
            )
        )
    return lattices


def edge_width(probability: float) -> float:
    """The pen width of an arc of this probability (points)."""
    return 0.5 + 5.5 * probability


def _grey(probability: float) -> str:
    """An arc's colour: light grey for improbable arcs, near black for certain ones."""
    level = int(round(200 - 170 * probability))
    return f"#{level:02x}{level:02x}{level:02x}"


def _fill(probability: float) -> str:
    """A state's fill: white for improbable states, light blue for certain ones."""
    red, green, blue = (int(round(255 - (255 - value) * probability)) for value in (0x9E, 0xCA, 0xE1))
    return f"#{red:02x}{green:02x}{blue:02x}"


def _drawn_states(lattice: Lattice, threshold: float) -> list[np.ndarray]:
    """Per token, the states drawn: probable enough, or on the Viterbi or gold path."""
    drawn = lattice.node >= threshold
    tokens = np.arange(len(lattice.tokens))
    drawn[tokens, lattice.best] = True
    if lattice.gold is not None:
        drawn[tokens, lattice.gold] = True
    return [np.flatnonzero(row) for row in drawn]


def _component_statements(k: int, lattice: Lattice, threshold: float) -> tuple[list[str], list[list[str]]]:
    """(the statements of component k's cluster, per token the names of its nodes)."""
    topology, T = lattice.topology, len(lattice.tokens)
    states = _drawn_states(lattice, threshold)
    best = set(zip(range(T), lattice.best.tolist()))
    gold = set() if lattice.gold is None else set(zip(range(T), lattice.gold.tolist()))
    statements = [f"  subgraph cluster_{k} {{", f"  label={_caption(lattice)};"]
    names: list[list[str]] = []
    for t in range(T):
        names.append([])
        for s in states[t].tolist():
            name = f"c{k}t{t}s{s}"
            names[t].append(name)
            marks = [mark for mark, path in (("best", best), ("gold", gold)) if (t, s) in path]
            p = float(lattice.node[t, s])
            attributes = {
                "label": "\n".join([topology.state_names[s], f"{p:.3f}", *([", ".join(marks)] if marks else [])]),
                "tooltip": f"{topology.state_names[s]} at token {t} ({lattice.tokens[t]}): p = {p:.6f}",
                "fillcolor": _fill(p),
            }
            if marks:
                attributes |= {"penwidth": "3", "color": BEST_COLOUR if "best" in marks else GOLD_COLOUR}
            statements.append(node(name, attributes))
    statements += _arcs(k, lattice, states, threshold)
    statements.append("  }")
    return statements, names


def _caption(lattice: Lattice) -> str:
    """The quoted caption of a component's cluster: its name and topology, and the gold
    labels when the topology does not allow them."""
    text = f"{lattice.name} ({lattice.topology.name}, {lattice.topology.num_states} states)"
    if lattice.gold_labels is not None and lattice.gold is None:
        text += "\nthe gold labels are not a path of this topology: " + " ".join(lattice.gold_labels)
    return quoted(text)


def _arcs(k: int, lattice: Lattice, states: list[np.ndarray], threshold: float) -> list[str]:
    """The arcs of component k between drawn states: by probability when the lattice
    has edge posteriors, and those of the Viterbi and gold paths."""
    topology, statements = lattice.topology, []
    on_best = {(t, int(lattice.best[t - 1]), int(lattice.best[t])) for t in range(1, len(lattice.tokens))}
    for t in range(1, len(lattice.tokens)):
        if lattice.edge is not None:
            kept = np.isin(topology.edge_src, states[t - 1]) & np.isin(topology.edge_dst, states[t])
            for e in np.flatnonzero(kept).tolist():
                src, dst = int(topology.edge_src[e]), int(topology.edge_dst[e])
                p = float(lattice.edge[t, e])
                if p < threshold and (t, src, dst) not in on_best:
                    continue
                statements.append(
                    edge(
                        f"c{k}t{t - 1}s{src}",
                        f"c{k}t{t}s{dst}",
                        {
                            "penwidth": f"{edge_width(p):.3f}",
                            "color": BEST_COLOUR if (t, src, dst) in on_best else _grey(p),
                            "tooltip": f"{topology.state_names[src]} -> {topology.state_names[dst]} "
                            f"into token {t}: p = {p:.6f}",
                        },
                    )
                )
        else:
            src, dst = int(lattice.best[t - 1]), int(lattice.best[t])
            statements.append(edge(f"c{k}t{t - 1}s{src}", f"c{k}t{t}s{dst}", {"penwidth": "3", "color": BEST_COLOUR}))
        if lattice.gold is not None:
            src, dst = int(lattice.gold[t - 1]), int(lattice.gold[t])
            statements.append(
                edge(
                    f"c{k}t{t - 1}s{src}",
                    f"c{k}t{t}s{dst}",
                    {"penwidth": "2", "color": GOLD_COLOUR, "style": "dashed", "constraint": "false"},
                )
            )
    return statements


def lattice_dot(
    lattices: Sequence[Lattice], title: str, threshold: float = DEFAULT_THRESHOLD, max_nodes: int = DEFAULT_MAX_NODES
) -> str:
    """The dot text of one sentence's lattices (one per component, one above the other)
    under the caption ``title``, leaving out states and arcs below ``threshold``;
    PictureError if more than ``max_nodes`` states would be drawn."""
    if not lattices:
        raise PictureError("a lattice picture needs at least one lattice")
    tokens = lattices[0].tokens
    drawn = sum(len(states) for lattice in lattices for states in _drawn_states(lattice, threshold))
    check_size(drawn, f"the lattice picture of {title} at threshold {threshold:g}", max_nodes)
    # Graphviz stacks what is declared first at the bottom of each column: the last
    # component first, the tokens last, so that the tokens head the columns
    statements: list[str] = []
    columns: list[list[str]] = [[f"w{t}"] for t in range(len(tokens))]
    for k in reversed(range(len(lattices))):
        component, names = _component_statements(k, lattices[k], threshold)
        statements += component
        for column, named in zip(columns, names):
            column += named
    statements += ["  subgraph cluster_tokens {", '  peripheries=0; label="";']
    statements += [
        node(f"w{t}", {"label": f"{token}\n{t}", "shape": "plaintext", "style": "solid"})
        for t, token in enumerate(tokens)
    ]
    statements += [edge(f"w{t - 1}", f"w{t}", {"style": "invis"}) for t in range(1, len(tokens))]
    statements.append("  }")
    statements += ["  {rank=same; " + " ".join(column) + "}" for column in columns]
    legend = (
        "blue: the best (Viterbi) path; green, dashed: the gold path\n"
        f"states and arcs of probability {threshold:g} or more; an arc's width and darkness grow with its probability"
    )
    defaults = {
        "graph": {
            "rankdir": "LR",
            "newrank": "true",
            "labelloc": "t",
            "fontname": "Helvetica",
            "label": f"{title}\n{legend}",
        },
        "node": {"fontname": "Helvetica", "shape": "box", "style": "rounded,filled", "fontsize": "11"},
        "edge": {"arrowsize": "0.5"},
    }
    return digraph("lattice", defaults, statements)
