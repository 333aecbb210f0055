"""A composed model (:class:`~fstcrf.model.compose.JointModel`) decoded under constraints
on its components' labels: ``constraints`` maps a component (its index, or the name
of the column it predicts) to one :class:`~fstcrf.engine.constraints.Constraints` (or
None) per sentence, naming that component's labels and chunk types.

Rules on tokens alone (fixed, allowed labels, scores) add to the joint states'
emissions through each one's component label, so the factorised decoders run on;
any other rule (spans, forbidden spans, unbroken ranges) is compiled by
:func:`fstcrf.engine.constrained.constrain` on the dense product of the components
(under the joint grammar, its constrained product), component after component, and
the sentences are decoded there: exact, at O(P^2) per token.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import numpy as np

from fstcrf.engine.constrained import constrain, token_scores
from fstcrf.engine.constraints import SentenceRules, resolve_batch
from fstcrf.engine.inference import Potentials
from fstcrf.engine.joint import JointPotentials
from fstcrf.errors import ArgumentTypeError, CompositionError

#: Rules per component: component index -> one SentenceRules (or None) per sentence.
ComponentRules = dict[int, list[SentenceRules | None]]


def component_rules(joint, constraints, lengths: Sequence[int], what: str) -> ComponentRules | None:
    """The rules of ``constraints`` ({component index or target column: [Constraints or
    None per sentence]}) over each component's labels, checked before any work; None
    when there are none."""
    if constraints is None:
        return None
    if not isinstance(constraints, Mapping):
        raise ArgumentTypeError(
            f"{what}: a composed model takes constraints per component: a dict from the component "
            f"(its index or the column it predicts: {', '.join(joint.targets)}) to one Constraints "
            f"(or None) per sentence, got {type(constraints).__name__}"
        )
    rules: ComponentRules = {}
    named: dict[int, object] = {}  # component index -> the key that named it
    for key, given in constraints.items():
        k = component_index(joint, key, what)
        if k in named:
            raise CompositionError(
                f"{what}: constraints name the component {k} ({joint.targets[k]}) twice, as {named[k]!r} and {key!r}"
            )
        named[k] = key
        resolved = resolve_batch(given, lengths, joint.topologies[k].labels, f"{what} ({joint.targets[k]})")
        if resolved is not None:
            rules[k] = resolved
    return rules or None


def component_index(joint, key, what: str) -> int:
    """The index of the component ``key`` names (an index or the column it predicts);
    ArgumentTypeError for a key of another type, CompositionError for no such component."""
    described = f"the components are 0..{len(joint.components) - 1}, predicting {', '.join(joint.targets)}"
    if isinstance(key, bool) or not isinstance(key, (str, int, np.integer)):
        raise ArgumentTypeError(
            f"{what}: a component is named by its index or the column it predicts, got {type(key).__name__} "
            f"{key!r}; {described}"
        )
    if isinstance(key, str) and key in joint.targets:
        return joint.targets.index(key)
    if not isinstance(key, str) and 0 <= key < len(joint.components):
        return int(key)
    raise CompositionError(f"{what}: there is no component {key!r}; {described}")


def constrained_sentences(rules: ComponentRules, count: int) -> np.ndarray:
    """int [n]: the sentences (of ``count``) with rules in some component."""
    return np.flatnonzero([any(by_sentence[b] is not None for by_sentence in rules.values()) for b in range(count)])


def select(rules: ComponentRules, sentences: Sequence[int] | np.ndarray) -> ComponentRules:
    """The rules of some of the sentences, in that order."""
    return {k: [by_sentence[b] for b in sentences] for k, by_sentence in rules.items()}


def on_tokens_only(rules: ComponentRules) -> bool:
    """Whether every rule concerns single tokens (fixed, allowed labels, scores)."""
    return all(
        rule is None or not (rule.required or rule.weighted or rule.unbroken)
        for by_sentence in rules.values()
        for rule in by_sentence
    )


def component_labels(joint, k: int, joint_states: np.ndarray) -> np.ndarray:
    """int [n]: component k's label index of each of the joint states int [n]."""
    return joint.topologies[k].state_label[joint.space.component_states(joint_states)[:, k]]


def with_token_rules(joint, jp: JointPotentials, rules: ComponentRules) -> JointPotentials:
    """``jp`` with each component's token rules added to the joint emissions (their
    labels' scores, -inf where a label is not allowed): factorised decoding keeps to them."""
    emissions = jp.emissions.copy()
    every_state = np.arange(joint.space.num_states)
    for k, by_sentence in rules.items():
        emissions += token_scores(by_sentence, jp.lengths, component_labels(joint, k, every_state))
    scored = copy.copy(jp)
    scored.emissions = emissions
    return scored


def product_lattice(joint, jp: JointPotentials, rules: ComponentRules, threads: int) -> tuple[Potentials, np.ndarray]:
    """(the potentials of ``jp`` on the dense product -- under the joint grammar, its
    constrained product -- under each component's rules in turn, int [S'] the joint
    state behind each of their states); InfeasibleError naming the rules that clash
    for a sentence they leave without a path."""
    space = joint.space
    if space.constraint is not None:
        pot, joint_state = space.constrained.potentials(jp), space.constrained.joint_state
    else:
        pot, joint_state = jp.to_product(), np.arange(space.num_states)
    for k, by_sentence in rules.items():
        lattice = constrain(pot, by_sentence, component_labels(joint, k, joint_state), threads)
        pot, joint_state = lattice.potentials, joint_state[lattice.state_map]
    return pot, joint_state
