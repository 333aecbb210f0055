"""A batch's lattice under its sentences' constraints: each sentence's acceptor
(:mod:`fstcrf.engine.constraints`), possibly weighted, composed with its lattice.

The composition is compiled into ordinary :class:`~fstcrf.engine.inference.Potentials`,
so every decoder and marginal computation runs on it unchanged (Viterbi, k-best,
sampling, forward-backward, span probabilities, MBR), and their results are exact
under the constraints: probabilities are conditional on them.

- Rules on one token (fixed, allowed labels, scores) are added to the emission scores
  of the states carrying each label (-inf where a label is not allowed).
- Rules on a pair of neighbouring labels (a required span: it begins at ``first``,
  continues to ``last``, is not continued after it; an unbroken range: no boundary
  between neighbours) are added to the transition scores into that token: each such
  token gets a transition row of its own (a token class of the kernel).
- A rule on a whole chunk that is not a mask (a forbidden span, a weighted span)
  needs to know where the current chunk began: the states are expanded to pairs
  (state, flag), the flag naming the chunk start of interest the current chunk began
  at (0: none), and the score of the chunk (first, last, type) is added on the edge
  that ends it, or at the sentence's last token.  Flags are reused along the
  sentence, so Q flags cover every position where at most Q - 1 starts of interest
  are pending (Q = 2 when the spans do not overlap).  Each label sequence fixes its
  flags, so paths of the expanded lattice and constrained label sequences correspond
  one to one.

Every state of the result carries its label (``state_label``) and maps to a state of
the potentials constrained (``ConstrainedLattice.state_map``).  A sentence whose hard
constraints leave no path raises InfeasibleError naming a small set of its rules
that clash (every rule of it needed: dropping any one leaves a path; found within
the work budget, :func:`clashing_rules`).
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from fstcrf.engine import budget
from fstcrf.engine.constraints import SentenceRules, resolve
from fstcrf.engine.inference import Potentials, check_potentials, lengths_to_offsets, viterbi
from fstcrf.engine.topology import Topology
from fstcrf.errors import InfeasibleError, ShapeError


#: The grammars each topology restricted to them keeps to, as errors name them
#: ("the grammar chunks.fgr"), noted by :func:`note_grammar`.
_GRAMMARS: weakref.WeakKeyDictionary[Topology, tuple[str, ...]] = weakref.WeakKeyDictionary()

#: The clashing rules an InfeasibleError lists at most (``clashing`` holds them all).
SHOWN_RULES = 20


def note_grammar(restricted: Topology, original: Topology, grammar: str) -> None:
    """Note that ``restricted`` is ``original`` kept to ``grammar`` (as errors name it,
    e.g. "the grammar chunks.fgr"), so that a sentence its constraints leave without a
    path raises InfeasibleError saying the grammar takes part."""
    _GRAMMARS[restricted] = _GRAMMARS.get(original, ()) + (grammar,)


@dataclass
class ConstrainedLattice:
    """Potentials under constraints: ``potentials`` over S' = S x ``flags`` states, and
    ``state_map`` int32 [S'], the state of the potentials constrained behind each."""

    potentials: Potentials
    state_map: np.ndarray
    flags: int

    def original_marginals(self, marginals: np.ndarray) -> np.ndarray:
        """float [N, S]: state marginals [N, S'] summed over the flags."""
        S = len(self.state_map) // self.flags
        return marginals.reshape(len(marginals), self.flags, S).sum(axis=1)


@dataclass(frozen=True)
class FlaggedTopology:
    """A topology's states paired with Q flags, every flag pair allowed on every edge:
    ``topology`` (state q S + s stands for state s with flag q), and per edge int [E']
    ``base_edge``, ``source_flag``, ``target_flag``."""

    topology: Topology
    base_edge: np.ndarray
    source_flag: np.ndarray
    target_flag: np.ndarray


_FLAGGED: weakref.WeakKeyDictionary[Topology, dict[int, FlaggedTopology]] = weakref.WeakKeyDictionary()


def flagged_topology(topology: Topology, flags: int) -> FlaggedTopology:
    """``topology`` with ``flags`` copies of its states (cached)."""
    cached = _FLAGGED.setdefault(topology, {})
    if flags not in cached:
        S, E = topology.num_states, topology.num_edges
        budget.check_states(S * flags, f"the {topology.name} topology with {flags} constraint flags")
        q, r, e = (
            axis.ravel() for axis in np.meshgrid(np.arange(flags), np.arange(flags), np.arange(E), indexing="ij")
        )
        expanded = Topology(
            topology.labels,
            np.tile(topology.state_label, flags),
            q * S + topology.edge_src[e],
            r * S + topology.edge_dst[e],
            np.tile(topology.start, flags),
            np.tile(topology.final, flags),
            [f"{name}^{flag}" for flag in range(flags) for name in topology.state_names],
            f"{topology.name}^{flags}",
        )
        src, dst = expanded.edge_src, expanded.edge_dst
        cached[flags] = FlaggedTopology(expanded, topology.edge_ids[src % S, dst % S], src // S, dst // S)
    return cached[flags]


@dataclass(frozen=True)
class EdgeFacts:
    """What the chunk rules read off each edge (int or bool [E]): ``continuing``, the
    target's label continues the source's chunk; ``source_type`` and ``target_type``,
    chunk type indices (-1: O)."""

    continuing: np.ndarray
    source_type: np.ndarray
    target_type: np.ndarray

    @classmethod
    def of(cls, topology: Topology, state_label: np.ndarray, rules: SentenceRules) -> EdgeFacts:
        chunks = rules.chunks
        a, b = state_label[topology.edge_src], state_label[topology.edge_dst]
        if chunks is None:  # rules on tokens only
            return cls(np.zeros(len(a), dtype=bool), np.full(len(a), -1), np.full(len(a), -1))
        return cls(chunks.continuing[a, b], chunks.label_type[a], chunks.label_type[b])

    def take(self, edges: np.ndarray) -> EdgeFacts:
        return EdgeFacts(self.continuing[edges], self.source_type[edges], self.target_type[edges])


def pair_scores(rules: SentenceRules, facts: EdgeFacts) -> dict[int, np.ndarray]:
    """{token t: float [E] added to the edges into t}: the required spans' and unbroken
    ranges' rules on neighbouring labels (0 or -inf; a soft range loses its weight
    per boundary).  Tokens under the same rules share one row (the same array), built
    once: the rules are summed per token first (:func:`token_rule_keys`), in time
    linear in the rules and the tokens, and the rows are budgeted before they are built."""
    keys = token_rule_keys(rules)
    distinct = set(keys.values())
    budget.check_work(
        len(distinct) * len(facts.continuing), f"the transition rows of {len(distinct)} kinds of constrained token"
    )
    cont = facts.continuing
    outside = (facts.source_type < 0) & (facts.target_type < 0)
    built = {}
    for key in distinct:
        beginning, inside, after, unbroken_loss = key
        row = np.zeros(len(cont))
        for kind in beginning:
            row[~((facts.target_type == kind) & ~cont)] = -np.inf
        if inside:
            row[~cont] = -np.inf
        if after:
            row[cont] = -np.inf
        row[~(cont | outside)] -= unbroken_loss
        built[key] = row
    return {t: built[key] for t, key in keys.items()}


def token_rule_keys(rules: SentenceRules) -> dict[int, tuple[frozenset, bool, bool, float]]:
    """{token t: (the types of the required spans beginning at t, whether t is inside one
    after its first token, whether one ends just before t, the loss of a boundary
    before t summed over the unbroken ranges holding t and its left neighbour, inf
    when one is hard)} for the tokens that some such rule reaches."""
    T = rules.length
    # difference arrays over the tokens: a rule on tokens first + 1 .. last adds at
    # first + 1 and takes away at last + 1
    inside, hard, soft_count = (np.zeros(T + 1, dtype=np.int64) for _ in range(3))
    soft = np.zeros(T + 1)
    beginning: dict[int, set] = {}
    after = np.zeros(T + 1, dtype=bool)
    for first, last, kind in rules.required:
        if first > 0:
            beginning.setdefault(first, set()).add(kind)
        inside[first + 1] += 1
        inside[last + 1] -= 1
        after[last + 1] = True
    for first, last, loss in rules.unbroken:
        counted = hard if loss == np.inf else soft_count
        counted[first + 1] += 1
        counted[last + 1] -= 1
        if loss != np.inf:
            soft[first + 1] += loss
            soft[last + 1] -= loss
    inside_at = np.cumsum(inside)[:T] > 0
    soft_at = np.where(np.cumsum(soft_count)[:T] > 0, np.cumsum(soft)[:T], 0.0)
    losses = np.where(np.cumsum(hard)[:T] > 0, np.inf, soft_at)
    reached = set(beginning) | set(np.flatnonzero(inside_at | after[:T] | (losses != 0)).tolist())
    return {
        t: (frozenset(beginning.get(t, ())), bool(inside_at[t]), bool(after[t]), float(losses[t]))
        for t in sorted(reached)
    }


@dataclass(frozen=True)
class Starts:
    """The chunk starts a sentence's weighted spans begin at, each with a flag: ``flag``
    {start: flag}, ``reach`` {start: the last token of its longest span}."""

    flag: dict[int, int]
    reach: dict[int, int]

    @classmethod
    def of(cls, rules: SentenceRules) -> Starts:
        reach: dict[int, int] = {}
        for first, last, _ in rules.weighted:
            reach[first] = max(reach.get(first, first), last)
        flag: dict[int, int] = {}
        busy: dict[int, int] = {}  # flag -> the last token its start reaches
        for first in sorted(reach):
            free = [q for q, until in busy.items() if until < first]
            q = min(free) if free else len(busy) + 1
            flag[first], busy[q] = q, reach[first]
        return cls(flag, reach)

    @property
    def count(self) -> int:
        return max(self.flag.values(), default=0)

    def pending(self, t: int) -> dict[int, int]:
        """{flag: start} of the starts whose chunks may still be running at token t."""
        return {self.flag[first]: first for first, until in self.reach.items() if first <= t <= until}


def chunk_end_scores(rules: SentenceRules, first: int, last: int) -> np.ndarray:
    """float [K]: the score of a chunk of each type from ``first`` to ``last``."""
    K = len(rules.chunks.types) if rules.chunks is not None else 0
    return np.array([rules.weighted.get((first, last, kind), 0.0) for kind in range(K)])


def flag_rows(
    rules: SentenceRules, starts: Starts, facts: EdgeFacts, flagged: FlaggedTopology
) -> dict[int, np.ndarray]:
    """{token t: float [E'] flag transitions into t (0 allowed, -inf not, or a chunk's
    score on the edges that end it)} for the tokens where a start is pending."""
    cont, source_type, target_type = facts.continuing, facts.source_type, facts.target_type
    q, r = flagged.source_flag, flagged.target_flag
    rows = {}
    for t in range(1, rules.length):
        before = starts.pending(t - 1)
        if not before and t not in starts.flag:
            continue
        beginning = np.where(target_type >= 0, starts.flag.get(t, 0), 0)  # the flag of a chunk beginning at t
        row = np.full(len(q), -np.inf)
        row[(q == 0) & ((cont & (r == 0)) | (~cont & (r == beginning)))] = 0.0
        for flag, first in before.items():
            carried = flag if t <= starts.reach[first] else 0
            row[(q == flag) & cont & (r == carried)] = 0.0
            ends = (q == flag) & ~cont & (r == beginning) & (source_type >= 0)
            row[ends] = chunk_end_scores(rules, first, t - 1)[source_type[ends]]
        rows[t] = row
    return rows


def flag_emissions(rules: SentenceRules, starts: Starts, label_type: np.ndarray, flags: int) -> np.ndarray:
    """float [T, Q, S] added to the emissions of (token, flag, state): a flag only on the
    states inside chunks while its start is pending, flag 0 nowhere a tracked chunk
    begins at token 0, and at the last token each tracked chunk's score."""
    T = rules.length
    inside = label_type >= 0
    scores = np.zeros((T, flags, len(label_type)))
    scores[:, 1:, :] = -np.inf
    if 0 in starts.flag:
        scores[0, 0, inside] = -np.inf
    for t in range(T):
        for flag, first in starts.pending(t).items():
            scores[t, flag, inside] = 0.0
            if t == T - 1:
                scores[t, flag, inside] = chunk_end_scores(rules, first, t)[label_type[inside]]
    return scores


def constrain(
    pot: Potentials,
    rules: Sequence[SentenceRules | None],
    state_label: np.ndarray | None = None,
    threads: int = 1,
    check: bool = True,
) -> ConstrainedLattice:
    """The potentials of ``pot`` under each sentence's rules (None: none), from
    :func:`fstcrf.engine.constraints.resolve`.

    ``state_label`` int [S]: the index, among the rules' labels, of each state's label
    (default: ``pot.topology.state_label``; a joint model passes one component's).
    With ``check``, a sentence its hard rules leave without a path raises
    InfeasibleError naming the rules that clash."""
    check_potentials(pot, "constrain")
    if len(rules) != pot.num_sequences:
        raise ShapeError(f"constrain: {len(rules)} sentences of rules for {pot.num_sequences} sentences")
    for b, rule in enumerate(rules):
        if rule is not None and rule.length != pot.lengths[b]:
            raise ShapeError(f"constrain: the rules of sentence {b} are for {rule.length} tokens, not {pot.lengths[b]}")
    topology = pot.topology
    S = topology.num_states
    labels_of_state = topology.state_label if state_label is None else np.asarray(state_label)
    given = [b for b, rule in enumerate(rules) if rule is not None]
    starts = {b: Starts.of(rule) for b, rule in enumerate(rules) if rule is not None and rule.weighted}
    flags = 1 + max((found.count for found in starts.values()), default=0)
    if flags > 1:
        check_flag_budget(topology, flags, pot.num_tokens, rules, starts)
    flagged = flagged_topology(topology, flags) if flags > 1 else None
    expanded = topology if flagged is None else flagged.topology
    emissions = np.tile(pot.emissions, (1, flags))
    if flags > 1:  # flags beyond 0 only in the sentences with starts to track (flag_emissions)
        untracked = np.ones(pot.num_tokens, dtype=bool)
        for b in starts:
            untracked[pot.sentence(b)] = False
        emissions[untracked, S:] = -np.inf
    emissions += np.tile(token_scores(rules, pot.lengths, labels_of_state), flags)
    by_token: dict[tuple[int, int], np.ndarray] = {}  # (sentence, token) -> float [E'] added into it
    for b in given:
        rule = rules[b]
        assert rule is not None
        if not (rule.required or rule.unbroken or rule.weighted):
            continue  # rules on single tokens: in the emissions already
        rows = pot.sentence(b)
        facts = EdgeFacts.of(topology, labels_of_state, rule)
        pairs = pair_scores(rule, facts)
        if flagged is None:
            by_token.update(((b, t), row) for t, row in pairs.items())
            continue
        label_type = rule.chunks.label_type[labels_of_state] if rule.chunks is not None else np.full(S, -1)
        found = starts.get(b)
        if found is not None:
            emissions[rows] += flag_emissions(rule, found, label_type, flags).reshape(rule.length, -1)
            flagged_rows = flag_rows(rule, found, facts.take(flagged.base_edge), flagged)
        else:
            flagged_rows = {}
        lifted: dict[int, np.ndarray] = {}  # id(a row of pairs) -> it on the flagged edges, flag 0 kept
        for t in set(pairs) | set(flagged_rows):
            if t in flagged_rows:
                by_token[(b, t)] = flagged_rows[t] + (pairs[t][flagged.base_edge] if t in pairs else 0.0)
                continue
            shared = pairs[t]  # tokens under the same rules share their row (pair_scores): so do their lifts
            if id(shared) not in lifted:
                lifted[id(shared)] = shared[flagged.base_edge] + default_flag_row(flagged)
            by_token[(b, t)] = lifted[id(shared)]
    transitions, token_class = class_rows(pot, flagged, by_token)
    constrained = copy.copy(pot)
    constrained.topology = expanded
    constrained.emissions = emissions
    constrained.transitions = transitions
    constrained.token_class = token_class
    constrained.start = np.tile(pot.start, flags)
    constrained.final = np.tile(pot.final, flags)
    lattice = ConstrainedLattice(constrained, np.tile(np.arange(S, dtype=np.int32), flags), flags)
    if check:
        hard = [b for b, rule in enumerate(rules) if rule is not None and rule.source.hard_rules()]
        if hard and flags == 1 and not by_token and is_complete(topology) and np.isfinite(pot.transitions).all():
            hard = [b for b in hard if not np.isfinite(emissions[pot.sentence(b)]).any(axis=1).all()]
        if hard:
            check_feasible(pot, lattice, rules, hard, labels_of_state, threads)
    return lattice


def check_flag_budget(
    topology: Topology, flags: int, num_tokens: int, rules: Sequence[SentenceRules | None], starts: dict
) -> None:
    """BudgetError before a batch's lattice is expanded to ``flags`` flags (``starts``
    {sentence: Starts}) when its edges, or the cells it fills, would exceed the
    budget: the emissions [N, Q S], a transition row [Q^2 E] per token with rules on
    chunks, and the flag rows of each start pending at a token (their work)."""
    flagged_edges = topology.num_edges * flags * flags
    what = f"the {topology.name} topology with {flags} flags (weighted or forbidden spans whose chunks overlap)"
    budget.check_edges(flagged_edges, what)
    rows = sum(rule.length for rule in rules if rule is not None and (rule.required or rule.unbroken or rule.weighted))
    pending = sum(until - first + 1 for found in starts.values() for first, until in found.reach.items())
    cells = (rows + pending) * flagged_edges + num_tokens * topology.num_states * flags
    budget.check_work(cells, f"constraining {rows:,} tokens on {what}")


def is_complete(topology: Topology) -> bool:
    """Whether every state may start, end and follow every state: then a sentence has a
    path as long as each of its tokens allows a state (rules on single tokens only)."""
    return bool(topology.num_edges == topology.num_states**2 and topology.start.all() and topology.final.all())


def token_scores(rules: Sequence[SentenceRules | None], lengths, state_label: np.ndarray) -> np.ndarray:
    """float [N, S]: what the rules of each sentence (of ``lengths`` [B]) on single
    tokens add to each state (``state_label`` [S]: its label's index), -inf where
    its label is not allowed; 0 in sentences without rules."""
    offsets = lengths_to_offsets(lengths)
    scores = np.zeros((int(offsets[-1]), len(state_label)))
    for b, rule in enumerate(rules):
        if rule is not None:
            scores[offsets[b] : offsets[b + 1]] = rule.label_scores[:, state_label]
    return scores


def default_flag_row(flagged: FlaggedTopology) -> np.ndarray:
    """float [E']: flag 0 stays 0, no other flag is taken (a token where no start is pending)."""
    return np.where((flagged.source_flag == 0) & (flagged.target_flag == 0), 0.0, -np.inf)


def class_rows(
    pot: Potentials, flagged: FlaggedTopology | None, by_token: dict[tuple[int, int], np.ndarray]
) -> tuple[np.ndarray, np.ndarray | None]:
    """(transitions float [C', E'] or [E'], token_class int32 [N] or None): the
    potentials' own rows (on the flagged edges, flag 0 kept), and a row of its own for
    each distinct rule a token's transitions take (``by_token``: (sentence, token) ->
    scores [E'] added to the row of the token's class)."""
    if flagged is None and not by_token:
        return pot.transitions, pot.token_class
    base = np.atleast_2d(pot.transitions)
    own = base if flagged is None else base[:, flagged.base_edge] + default_flag_row(flagged)
    token_class = (
        np.zeros(pot.num_tokens, dtype=np.int32) if pot.token_class is None else pot.token_class.astype(np.int32)
    )
    if not by_token:
        return (own if pot.transitions.ndim == 2 else own[0]), pot.token_class
    lifted = base if flagged is None else base[:, flagged.base_edge]
    contents: dict[int, bytes] = {}  # id(row) -> its bytes: a row shared by many tokens is read once
    keys = {}
    for (b, t), added in by_token.items():
        n = int(pot.offsets[b]) + t
        if id(added) not in contents:
            contents[id(added)] = added.tobytes()
        keys[n] = (int(token_class[n]), contents[id(added)], added)
    distinct = {key[:2]: key for key in keys.values()}
    budget.check_work(
        (len(own) + len(distinct)) * own.shape[-1],
        f"the transition rows of {len(own) + len(distinct)} constrained tokens",
    )
    row_of = {key: len(own) + i for i, key in enumerate(distinct)}
    for n, key in keys.items():
        token_class[n] = row_of[key[:2]]
    table = np.concatenate([own, *((lifted[cls] + added)[None] for cls, _, added in distinct.values())])
    return np.ascontiguousarray(table), token_class


def check_feasible(
    pot: Potentials,
    lattice: ConstrainedLattice,
    rules: Sequence[SentenceRules | None],
    sentences: list[int],
    state_label: np.ndarray,
    threads: int,
) -> None:
    """InfeasibleError for the first of ``sentences`` without a path in ``lattice``,
    naming a set of its rules that clash (:func:`clashing_rules`)."""
    selected = lattice.potentials.select(sentences)
    best = viterbi(selected, threads=threads, allow_infeasible=True).scores  # (max-product: faster than log Z)
    dead = np.flatnonzero(best == -np.inf)
    if not len(dead):
        return
    b = sentences[int(dead[0])]
    rule = rules[b]
    assert rule is not None
    clashing, reduced = clashing_rules(pot.select([b]), rule, state_label)
    described = [rule.source.describe(item) for item in clashing]
    listed = "; ".join(described[:SHOWN_RULES]) + (
        f"; ... ({len(described) - SHOWN_RULES} more)" if len(described) > SHOWN_RULES else ""
    )
    if not reduced:
        listed += " (not reduced further within the work budget, max_work: some may not be needed)"
    grammars = _GRAMMARS.get(pot.topology, ())
    if grammars:  # the grammars take part: they cut the paths the constraints keep to
        them = "it" if len(grammars) == 1 else "them"
        reason = f"its constraints leave no label sequence under {' and '.join(grammars)}; " + (
            f"these clash with {them}: {listed}"
            if described
            else f"the model's topology and {them} allow no sequence of its length"
        )
    else:
        reason = "its constraints leave no label sequence; " + (
            f"these clash: {listed}"
            if described
            else "the model's topology (or grammar) allows no sequence of its length"
        )
    reason += f" ({len(dead) - 1} more such sentences)" if len(dead) > 1 else ""
    error = InfeasibleError(f"{rule.where}: {reason}")
    error.sentence, error.clashing, error.reason = rule.sentence, described, reason
    raise error


def clashing_rules(pot: Potentials, rules: SentenceRules, state_label: np.ndarray) -> tuple[list, bool]:
    """(clashing, reduced): hard rules (of ``rules.source.hard_rules()``) of a
    one-sentence ``pot`` that leave no path together, and whether every one of them is
    needed for that (dropping any one leaves a path).

    A deletion filter by halves: windows of the rules kept so far are dropped while the
    rest still clash, the windows halving down to single rules, so a clash of k rules
    among R takes about 2 k log2(R) feasibility tests, not R.  Each test costs about a
    forward pass over the sentence; the tests stop at the work budget (max_work), and
    what is kept then still clashes (``reduced`` False)."""
    source = rules.source
    kept = source.hard_rules()
    test_cells = rules.length * pot.topology.num_edges + len(kept)
    tests_left = max(8, budget.current("max_work") // max(1, test_cells))

    def feasible(trial: list) -> bool:
        resolved = resolve(source.only(trial), rules.labels, rules.length, rules.sentence, rules.what)
        lattice = constrain(pot, [resolved], state_label, check=False)
        return bool(viterbi(lattice.potentials, allow_infeasible=True).scores[0] > -np.inf)

    if not feasible([]):  # the topology (or a grammar) alone allows no sequence of this length
        return [], True
    width = max(1, len(kept) // 2)
    while True:
        at = 0
        while at < len(kept):
            if tests_left == 0:
                return kept, False
            tests_left -= 1
            trial = kept[:at] + kept[at + width :]
            if feasible(trial):
                at += width  # some rule of this window is needed
            else:
                kept = trial
        if width == 1:
            return kept, True
        width = max(1, width // 2)
