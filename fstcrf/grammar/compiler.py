"""Compiling a grammar rule into a minimal deterministic acceptor over label keys
(label i = key i + 1) with pynini: classes and templates matched against the
labels, variables bound by ``any``/``all``/``with`` and parameters, every step
budgeted (:func:`compile_grammar`, :func:`accepts`)."""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass
from functools import reduce
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from typing import TYPE_CHECKING

import numpy as np

from fstcrf.extras import require

if TYPE_CHECKING:
    import pynini
else:
    pynini = require("pynini", "compiling a grammar")

from fstcrf.engine import budget
from fstcrf.errors import GrammarError, UnknownLabelError
from fstcrf.engine.bounded import (
    as_arrays,
    bounded_intersect,
    determinised_states,
    minimal_acceptor,
    minimal_arcs,
    nullable_power,
    paired_states,
    symbol_table,
)
from fstcrf.engine.topology import check_labels, shown_labels
from fstcrf.grammar.nodes import (
    AnyLabel,
    Binding,
    Complement,
    Concat,
    Difference,
    Grammar,
    Intersection,
    LabelClass,
    Name,
    Node,
    Position,
    QualifiedRef,
    Quantifier,
    QuotedLabel,
    Repeat,
    Template,
    Union,
    Var,
    WILDCARD,
    children,
    template_variables,
    render,
    IDENTIFIER,
    is_identifier,
    merge_pieces,
)


# -- compiler ------------------------------------------------------------------


def _bindings(pieces: Template, label: str, start: int = 0, bound: dict | None = None) -> Iterator[dict]:
    """Every assignment of the template's variables (non-empty values) under which it
    spells ``label``; WILDCARD matches any text."""
    bound = {} if bound is None else bound
    if not any(isinstance(piece, Var) for piece in pieces):  # the rest binds nothing: one linear match
        if _spells(pieces, label, start):
            yield dict(bound)
        return
    head, rest = pieces[0], pieces[1:]
    if isinstance(head, str):
        if label.startswith(head, start):
            yield from _bindings(rest, label, start + len(head), bound)
    elif head is WILDCARD:
        for end in range(start, len(label) + 1):
            yield from _bindings(rest, label, end, bound)
    elif head.name in bound:
        if label.startswith(bound[head.name], start):
            yield from _bindings(rest, label, start + len(bound[head.name]), bound)
    else:
        ends: Iterable[int] = range(start + 1, len(label) + 1)
        if rest and isinstance(rest[0], str):  # the value ends where the literal after it occurs
            ends = _found_at(rest[0], label, start + 1)
        for end in ends:
            bound[head.name] = label[start:end]
            yield from _bindings(rest, label, end, bound)
        bound.pop(head.name, None)


def _found_at(text: str, label: str, start: int) -> Iterator[int]:
    """Where ``text`` occurs in ``label`` from ``start`` on."""
    position = label.find(text, start)
    while position >= 0:
        yield position
        position = label.find(text, position + 1)


def _spells(pieces: Template, label: str, start: int) -> bool:
    """Whether literals and wildcards (no variables) spell ``label[start:]``: the
    literals between wildcards found left to right, each where it first occurs after
    the last, which is exact when only wildcards lie between them (linear, where
    trying every split of every wildcard is exponential in their number)."""
    segments, current = [], ""
    for piece in pieces:
        if piece is WILDCARD:
            segments.append(current)
            current = ""
        else:
            current += piece
    segments.append(current)
    if len(segments) == 1:
        return label[start:] == current
    first, *middle, last = segments
    end = len(label) - len(last)
    if end < start + len(first) or not label.startswith(first, start) or not label.endswith(last):
        return False
    position = start + len(first)
    for segment in middle:
        found = label.find(segment, position, end)
        if found < 0:
            return False
        position = found + len(segment)
    return True


def _optimized(fst: pynini.Fst, pos: Position) -> pynini.Fst:
    """The acceptor's :func:`~fstcrf.engine.bounded.minimal_acceptor`; BudgetError
    (naming the grammar position ``pos``) if it would pass max_states, or if its
    determinisation would pass max_edges arcs (:func:`determinised_arcs`)."""
    fst = pynini.rmepsilon(fst)
    if not fst.properties(pynini.I_DETERMINISTIC, True):
        budget.check_edges(determinised_arcs(fst), _part(pos), "arcs", at_least=True)
    return minimal_acceptor(fst, _part(pos))


def determinised_arcs(fsa: pynini.Fst) -> int:
    """At least how many arcs the determinisation of the epsilon-free ``fsa`` holds:
    one per label leaving its start, and for each other set of states one label leads
    to from the start, as many as the labels of its member with most."""
    start = fsa.start()
    if start == pynini.NO_STATE_ID:  # the empty language
        return 0
    following: dict[int, set[int]] = {}
    for arc in fsa.arcs(start):
        following.setdefault(arc.ilabel, set()).add(arc.nextstate)
    subsets = {frozenset(states) for states in following.values()} - {frozenset([start])}
    members = set().union(*subsets)
    labels = {state: len({arc.ilabel for arc in fsa.arcs(state)}) for state in members}
    return len(following) + sum(max(labels[state] for state in subset) for subset in subsets)


def star_arcs(operand: pynini.Fst) -> int:
    """At least how many arcs ``operand*`` holds once its epsilons are removed, for an
    epsilon-free ``operand`` with a start state: each final state also leaves as the
    start does, and the start's own arcs may go (when only epsilons led to it)."""
    if operand.start() == pynini.NO_STATE_ID:  # the empty language
        return 0
    zero = pynini.Weight.zero(operand.weight_type())
    start_arcs = operand.num_arcs(operand.start())
    total = -start_arcs
    for state in operand.states():
        arcs = operand.num_arcs(state)
        total += max(arcs, start_arcs) if operand.final(state) != zero else arcs
    return total


def concatenation_arcs(left: pynini.Fst, right: pynini.Fst) -> int:
    """At least how many arcs ``left right`` holds once its epsilons are removed, for
    epsilon-free trim acceptors (every state on a path from the start to a final
    state): each final state of ``left`` also leaves as the start of ``right`` does,
    whose own arcs may go (when only epsilons led to it)."""
    if left.start() == pynini.NO_STATE_ID or right.start() == pynini.NO_STATE_ID:  # the empty language
        return 0
    return num_arcs(left) + num_arcs(right) + junction_arcs(left, right)


def repetition_arcs(operand: pynini.Fst, copies: int) -> int:
    """At least how many arcs ``operand{copies}`` holds once its epsilons are removed,
    and so do ``operand{m,copies}`` and ``operand{copies,}`` (whose other epsilons
    lead to a final state or back into the last copy), for an epsilon-free trim
    ``operand`` and copies >= 1: :func:`concatenation_arcs` of the copies in a row."""
    if operand.start() == pynini.NO_STATE_ID:  # the empty language
        return 0
    return copies * num_arcs(operand) + (copies - 1) * junction_arcs(operand, operand)


def junction_arcs(left: pynini.Fst, right: pynini.Fst) -> int:
    """The arcs joining ``left`` to ``right`` adds once epsilons are removed, for trim
    acceptors with start states: each final state of ``left`` but one also leaves as
    the start of ``right`` does."""
    return (final_states(left) - 1) * right.num_arcs(right.start())


def num_arcs(fst: pynini.Fst) -> int:
    """The arcs of ``fst``."""
    return sum(fst.num_arcs(state) for state in fst.states())


def accepts_empty(fsa: pynini.Fst) -> bool:
    """Whether the deterministic acceptor ``fsa`` accepts the empty sequence."""
    start = fsa.start()
    return start != pynini.NO_STATE_ID and fsa.final(start) != pynini.Weight.zero(fsa.weight_type())


def _longer_by_any_start(fsa: pynini.Fst) -> bool:
    """Whether some sequence of the minimal deterministic acceptor ``fsa`` cannot be
    followed by every label that begins one of its sequences (so x x is not within x,
    and x* is not x): a final state that reads fewer of those labels than the start.
    Building x* to compare it with x took 2.8 s for x = (.? B-NP?){200}, whose last
    state reads none."""
    arrays = as_arrays(fsa)
    first = arrays.arc_key[arrays.arc_src == arrays.start]
    read = np.bincount(arrays.arc_src[np.isin(arrays.arc_key, first)], minlength=arrays.num_states)
    return bool(np.any(read[arrays.final] < len(first)))


def final_states(fst: pynini.Fst) -> int:
    """The final states of ``fst``."""
    zero = pynini.Weight.zero(fst.weight_type())
    return sum(1 for state in fst.states() if fst.final(state) != zero)


def _part(pos: Position) -> str:
    """How budget errors name the part of a grammar being compiled."""
    return f"{pos}: the acceptor of this part of the grammar"


def _combined(left: pynini.Fst, right: pynini.Fst, pos: Position, difference: bool = False) -> pynini.Fst:
    """``left & right`` (or ``left - right``) of minimal deterministic acceptors, minimal."""
    return _optimized(bounded_intersect(left, right, _part(pos), difference), pos)


def _complement(sigma_star: pynini.Fst, operand: pynini.Fst, pos: Position) -> pynini.Fst:
    """``!operand`` of a minimal deterministic acceptor: ``sigma_star - operand``, which
    is minimal as the difference leaves it (the operand with a state for what it
    rejects and its final states swapped, trimmed), so it is not minimised again
    (3 s for 131,072 states)."""
    return bounded_intersect(sigma_star, operand, _part(pos), difference=True)


#: The largest epsilon-free concatenation built for an operand of '&' or '-' before
#: its parts are joined and minimised (larger ones are joined as they are compiled).
_OPERAND_STATES = 4096
_OPERAND_ARCS = 1 << 20


@dataclass(frozen=True)
class _Operand:
    """An operand of '&' or '-' as it is before its acceptor is determinised: ``fsa``,
    epsilon-free, accepts the operand's language, or if ``negated`` the language the
    operand's complement negates (whose minimal acceptor has at most one state more
    than the operand's); it is that language's minimal deterministic acceptor if
    ``minimal``.  ``build()`` makes the operand's minimal deterministic acceptor as the
    operand alone compiles."""

    fsa: pynini.Fst
    minimal: bool
    negated: bool
    build: Callable[[], pynini.Fst]

    @staticmethod
    def built(fst: pynini.Fst) -> _Operand:
        """A part compiled already (minimal)."""
        return _Operand(fst, True, False, lambda: fst)

    def most_states(self) -> int:
        """At most how many states, and one for no state, a label sequence can lead to
        in the minimal acceptor of the language of ``fsa`` (a set of its states if
        it is not that acceptor)."""
        return self.fsa.num_states() + 1 if self.minimal else 2 ** self.fsa.num_states()


def _check_product(left: _Operand, right: _Operand, difference: bool, pos: Position) -> None:
    """BudgetError (naming ``pos``) where bounded_intersect would refuse the product of
    the operands' acceptors, found before they are determinised: it counts the pairs
    of their states (:func:`~fstcrf.engine.bounded.paired_states`) once the product of
    their sizes passes max_states, a count at least one less than the pairs counted
    on the operands' minimal arcs; and their sizes are at least the states their
    minimal arcs determinise to, less one for a complement (each counted no further
    than needed).  Operands whose minimal arcs cost more to find are left to
    bounded_intersect."""
    limit = budget.current("max_states")
    left_arcs, right_arcs = minimal_arcs(left.fsa, left.minimal), minimal_arcs(right.fsa, right.minimal)
    if left_arcs is None or right_arcs is None:
        return
    pairs = paired_states(left_arcs, right_arcs, limit + 1)
    if pairs - 1 <= limit:
        return
    left_states = determinised_states(left_arcs, math.isqrt(limit) + 1) - left.negated
    if left_states <= 0:
        return
    right_states = max(0, determinised_states(right_arcs, limit // left_states + 1) - right.negated)
    if left_states * (right_states + difference) > limit:
        budget.check_states(pairs - 1, _part(pos), at_least=True)


def _concatenated(parts: Sequence[pynini.Fst]) -> pynini.Fst | None:
    """The epsilon-free concatenation of compiled parts, or None if it could hold more
    than _OPERAND_ARCS arcs or _OPERAND_STATES states (each state keeps its arcs and
    may take those of the start of every later part, through parts that accept the
    empty sequence)."""
    states = sum(part.num_states() for part in parts)
    if states > _OPERAND_STATES or any(part.start() == pynini.NO_STATE_ID for part in parts):
        return None
    leaving = max(part.num_arcs(state) for part in parts for state in part.states())
    if states * (leaving + sum(part.num_arcs(part.start()) for part in parts)) > _OPERAND_ARCS:
        return None
    concatenation = parts[0].copy()
    for part in parts[1:]:
        concatenation.concat(part)
    return pynini.rmepsilon(concatenation)


class _Compiler:
    """Compiles rules against one label set.  ``env`` maps a variable to
    (value, bound by a quantifier); compile-time parameters are looked up last."""

    def __init__(self, labels: Sequence[str], params: Mapping[str, str]):
        self.labels = tuple(labels)
        self.keys = {label: key for key, label in enumerate(self.labels, start=1)}
        self.sorted_labels = sorted(self.labels)
        self.params = dict(params)
        self.used_params: set[str] = set()
        self.sigma = self.label_set(self.keys.values())
        self.sigma_star = pynini.closure(self.sigma).optimize()
        self.epsilon = pynini.Fst()
        self.epsilon.set_start(self.epsilon.add_state())
        self.epsilon.set_final(self.epsilon.start())
        self.memo: dict = {}
        self.active: list[tuple[int, str]] = []
        self.template_hits: dict[Node, bool] = {}

    @staticmethod
    def label_set(keys) -> pynini.Fst:
        """The acceptor of one label among ``keys``: no states for none (trim, as every
        compiled part is)."""
        fst = pynini.Fst()
        if not keys:
            return fst
        start, end = fst.add_state(), fst.add_state()
        fst.set_start(start)
        fst.set_final(end)
        for key in sorted(keys):
            fst.add_arc(start, pynini.Arc(key, key, 0, end))
        return fst

    # variables
    def lookup(self, name: str, env: dict, pos: Position) -> tuple[str, bool]:
        if name in env:
            return env[name]
        if name in self.params:
            self.used_params.add(name)
            return self.params[name], False
        raise GrammarError(
            f"{pos}: variable {{{name}}} has no value: bind it with 'any {name}:', "
            f"'all {name}:' or 'with {name} = ...:', or give it (params={{'{name}': ...}}; on the command "
            f"line --define {name}=VALUE)"
        )

    def fill(self, template: Template, env: dict, pos: Position) -> tuple[Template, bool]:
        """The template with its variables replaced, and whether a quantifier bound any."""
        pieces, quantified = [], False
        for piece in template:
            if isinstance(piece, Var):
                value, by_quantifier = self.lookup(piece.name, env, pos)
                pieces.append(value)
                quantified |= by_quantifier
            else:
                pieces.append(piece)
        return merge_pieces(pieces), quantified

    def outer_value(self, piece: Var, env: dict):
        """The value of a variable bound outside a quantifier, or the variable itself (free)."""
        if piece.name in env:
            return env[piece.name][0]
        return self.params.get(piece.name, piece)

    def note_template(self, node: Node, quantified: bool, hit: bool) -> None:
        if quantified:
            self.template_hits[node] = self.template_hits.get(node, False) or hit

    # rules
    def rule(self, grammar: Grammar, name: str, pos: Position, env: dict) -> pynini.Fst:
        return self.rule_operand(grammar, name, pos, env, self.expr).build()

    def rule_operand(self, grammar: Grammar, name: str, pos: Position, env: dict, body: Callable) -> _Operand:
        """The rule ``name`` under ``env``, its body compiled by ``body`` (:meth:`expr`,
        or :meth:`operand` to defer its determinisation); the acceptor it builds is
        kept for the rule's later uses under the same bindings."""
        key = (id(grammar), name)
        if key in self.active:
            names = [n for _, n in self.active[self.active.index(key) :]]
            cycle = " -> ".join(names + [name])
            raise GrammarError(
                f"{pos}: rule '{name}' refers to itself ({cycle}); grammars are regular: use '*' or '+' for repetition"
            )
        memo_key = (key, frozenset(env.items()))
        if memo_key in self.memo:
            return _Operand.built(self.memo[memo_key])
        self.active.append(key)
        try:
            compiled = body(grammar, grammar.rule_map[name].body, env)
        finally:
            self.active.pop()
        operand = compiled if isinstance(compiled, _Operand) else _Operand.built(compiled)

        def build() -> pynini.Fst:
            if memo_key not in self.memo:
                self.memo[memo_key] = operand.build()
            return self.memo[memo_key]

        return _Operand(operand.fsa, operand.minimal, operand.negated, build)

    def expr(self, grammar: Grammar, node: Node, env: dict) -> pynini.Fst:
        if isinstance(node, Name):
            return self.name(grammar, node, env)
        if isinstance(node, QuotedLabel):
            return self.label_set([self.known_key(node.text, node.pos, f'"{node.text}"')])
        if isinstance(node, AnyLabel):
            return self.sigma
        if isinstance(node, LabelClass):
            return self.label_class(node, env)
        if isinstance(node, QualifiedRef):
            return self.rule(grammar.import_map[node.namespace], node.name, node.pos, env)
        if isinstance(node, Concat):
            return self.concatenation([self.expr(grammar, part, env) for part in node.parts], node.pos)
        if isinstance(node, Union):
            return _optimized(pynini.union(*(self.expr(grammar, p, env) for p in node.parts)), node.pos)
        if isinstance(node, (Intersection, Difference)):
            return self.boolean(grammar, node, env)
        if isinstance(node, Complement):
            return _complement(self.sigma_star, self.expr(grammar, node.operand, env), node.pos)
        if isinstance(node, Repeat):
            return self.repetition(self.expr(grammar, node.operand, env), node)
        if isinstance(node, Quantifier):
            return self.quantifier(grammar, node, env)
        if isinstance(node, Binding):
            value, quantified = self.fill(node.value, env, node.pos)
            return self.expr(grammar, node.body, {**env, node.variable: ("".join(value), quantified)})
        raise TypeError(f"not a grammar node: {node!r}")

    def boolean(self, grammar: Grammar, node: Intersection | Difference, env: dict) -> pynini.Fst:
        """``x & y`` or ``x - y``, its product budgeted before its operands are
        determinised: their concatenations and unions (of parts compiled as usual)
        and the parts their complements negate are counted on the arcs of their
        minimal acceptors (:func:`~fstcrf.engine.bounded.minimal_arcs`), and a
        product that passes max_states is refused then; otherwise as
        :func:`_combined`.  !(.* B-NP .{16}) & !(.* B-VP .{16}) built each complement
        (2^17 states, 6 s each over 22 labels) before its product was refused."""
        left, right = self.operand(grammar, node.left, env), self.operand(grammar, node.right, env)
        difference = isinstance(node, Difference)
        deferred = not (left.minimal and right.minimal)  # else bounded_intersect counts as soon
        if deferred and left.most_states() * right.most_states() > budget.current("max_states") + 1:
            _check_product(left, right, difference, node.pos)
        return _combined(left.build(), right.build(), node.pos, difference)

    def operand(self, grammar: Grammar, node: Node, env: dict) -> _Operand:
        """``node`` as an operand of '&' or '-' (:class:`_Operand`): a concatenation or a
        union of compiled parts not yet determinised, through complements, bindings and
        rules; any other part compiled."""
        if isinstance(node, Complement):
            inner = self.operand(grammar, node.operand, env)
            return _Operand(
                inner.fsa,
                inner.minimal,
                not inner.negated,
                lambda: _complement(self.sigma_star, inner.build(), node.pos),
            )
        if isinstance(node, Binding):
            value, quantified = self.fill(node.value, env, node.pos)
            return self.operand(grammar, node.body, {**env, node.variable: ("".join(value), quantified)})
        if isinstance(node, QualifiedRef):
            return self.rule_operand(grammar.import_map[node.namespace], node.name, node.pos, env, self.operand)
        if isinstance(node, Name) and self.names_rule(grammar, node):
            return self.rule_operand(grammar, node.template[0], node.pos, env, self.operand)
        if isinstance(node, Concat):
            parts = [self.expr(grammar, part, env) for part in node.parts]
            concatenation = _concatenated(parts)
            if concatenation is not None:
                return _Operand(concatenation, False, False, lambda: self.concatenation(parts, node.pos))
            return _Operand.built(self.concatenation(parts, node.pos))
        if isinstance(node, Union):
            union = pynini.rmepsilon(pynini.union(*(self.expr(grammar, part, env) for part in node.parts)))
            return _Operand(union, False, False, lambda: _optimized(union, node.pos))
        return _Operand.built(self.expr(grammar, node, env))

    def repetition(self, operand: pynini.Fst, node: Repeat) -> pynini.Fst:
        """``x{m,n}`` (``x{m,}`` for n None) of the compiled ``operand`` x, budgeted
        before pynini's closure chains its max(m, n) copies: their states, and their
        arcs once epsilons are removed (:func:`repetition_arcs`, :func:`star_arcs`).
        A nullable x{m,n} is x^n (x{m,} is x*, and x{m,n} is x if n is 1 or x* is x),
        budgeted as (x - ""){,n} and built by :func:`~fstcrf.engine.bounded.nullable_power`:
        between copies of a nullable x, epsilons chain, and removing them led each copy
        into every later one (n^2/2 copies of x's arcs, determinised in minutes for
        (.?){300}); without them, the determinisation of (x - ""){,n} held up to n
        copies of each state of x in a set (18 s for ((.?){1000}){10})."""
        low, high = node.low, node.high
        if high == 0:  # pynini.closure(x, 0, 0) would be x*
            return self.epsilon
        nullable = operand if accepts_empty(operand) else None
        if nullable is not None:
            if high == 1:
                return operand
            if high is None or not _longer_by_any_start(operand):
                star = self.star(operand, node.pos)
                if high is None or pynini.equivalent(star, operand):
                    return star
            operand, low = _combined(operand, self.epsilon, node.pos, difference=True), 0
        copies = max(low, high or 1)
        budget.check_states(operand.num_states() * copies, _part(node.pos))
        arcs = repetition_arcs(operand, copies)
        if high is None:  # the final states of the last copy begin it again
            arcs = max(arcs, star_arcs(operand))
        budget.check_edges(arcs, _part(node.pos), "arcs", at_least=True)
        if nullable is not None:
            return nullable_power(nullable, copies, _part(node.pos))
        closure = pynini.closure(operand, low) if high is None else pynini.closure(operand, low, high)
        return _optimized(closure, node.pos)

    def star(self, operand: pynini.Fst, pos: Position) -> pynini.Fst:
        """``x*`` of the compiled ``operand`` x, minimal; budgeted by :func:`star_arcs`."""
        budget.check_edges(star_arcs(operand), _part(pos), "arcs", at_least=True)
        return _optimized(pynini.closure(operand), pos)

    def concatenation(self, parts: Sequence[pynini.Fst], pos: Position) -> pynini.Fst:
        """The concatenation of compiled parts, joined as a balanced tree: O(n log n)
        states handled for n parts (joining them left to right copies the growing
        acceptor n times)."""
        if len(parts) == 1:
            return parts[0]
        middle = len(parts) // 2
        return self.joined(self.concatenation(parts[:middle], pos), self.concatenation(parts[middle:], pos), pos)

    def joined(self, left: pynini.Fst, right: pynini.Fst, pos: Position) -> pynini.Fst:
        """``left right`` of two compiled parts (trim deterministic acceptors), minimal;
        BudgetError (naming ``pos``) if the concatenation would pass max_states, or
        its arcs once its epsilons are removed (:func:`concatenation_arcs`, counted
        when states x labels may pass it) would pass max_edges, then as
        :func:`_optimized`."""
        states = left.num_states() + right.num_states()
        budget.check_states(states, _part(pos))
        if (states + left.num_states()) * len(self.labels) > budget.current("max_edges"):
            budget.check_edges(concatenation_arcs(left, right), _part(pos), "arcs", at_least=True)
        concatenation = left.copy()
        concatenation.concat(right)
        return _optimized(concatenation, pos)

    def known_key(self, label: str, pos: Position, spelled: str) -> int:
        if label not in self.keys:
            raise UnknownLabelError(
                f"{pos}: unknown label {spelled}; the model's labels are {shown_labels(self.labels)}"
            )
        return self.keys[label]

    def names_rule(self, grammar: Grammar, node: Name) -> bool:
        """Whether the word ``node`` names a rule of ``grammar`` (GrammarError if it
        is a label too)."""
        if not (is_identifier(node.template) and node.template[0] in grammar.rule_map):
            return False
        word = node.template[0]
        if word in self.keys:
            raise GrammarError(
                f"{node.pos}: '{word}' is both a rule of {grammar.source} and a label; "
                f'write "{word}" for the label or rename the rule'
            )
        return True

    def name(self, grammar: Grammar, node: Name, env: dict) -> pynini.Fst:
        if self.names_rule(grammar, node):
            return self.rule(grammar, node.template[0], node.pos, env)
        pieces, quantified = self.fill(node.template, env, node.pos)
        label = "".join(pieces)
        self.note_template(node, quantified, label in self.keys)
        if label not in self.keys and quantified:
            return self.label_set([])
        spelled = f"'{label}'" + (f" (from {render(node.template)})" if template_variables(node.template) else "")
        rule_hint = "" if template_variables(node.template) else " (and no rule has that name)"
        return self.label_set([self.known_key(label, node.pos, spelled + rule_hint)])

    def spelled_by(self, pieces: Template) -> Iterator[str]:
        """The labels a pattern without variables spells, tried only among those that
        begin with its literal prefix (a range of the sorted labels)."""
        prefix = pieces[0] if pieces and isinstance(pieces[0], str) else ""
        first = bisect.bisect_left(self.sorted_labels, prefix)
        for label in itertools.islice(self.sorted_labels, first, None):
            if not label.startswith(prefix):
                return
            if _spells(pieces, label, 0):
                yield label

    def label_class(self, node: LabelClass, env: dict) -> pynini.Fst:
        filled, quantified = [], False
        for pattern in node.patterns:
            pieces, by_quantifier = self.fill(pattern, env, node.pos)
            filled.append(pieces)
            quantified |= by_quantifier
        matching = {label for pieces in filled for label in self.spelled_by(pieces)}
        if node.negated:
            keys = [key for label, key in self.keys.items() if label not in matching]
        else:
            keys = sorted(self.keys[label] for label in matching)
        self.note_template(node, quantified, bool(keys))
        if not keys and not quantified:
            raise UnknownLabelError(
                f"{node.pos}: the label class {node.text} matches no label; "
                f"the model's labels are {shown_labels(self.labels)}"
            )
        return self.label_set(keys)

    def quantifier(self, grammar: Grammar, node: Quantifier, env: dict) -> pynini.Fst:
        values = self.domain(grammar, node, env)
        branches = (self.expr(grammar, node.body, {**env, node.variable: (value, True)}) for value in values)
        if node.kind == "all":  # each intersection is budgeted
            return reduce(lambda left, right: _combined(left, right, node.pos), branches)
        what = f"{node.pos}: the union of the {len(values):,} branches of 'any {node.variable}:' (one per value)"
        kept, states, arcs = [], 1, 0
        for branch in branches:  # budgeted as they come, before the union is determinised
            kept.append(branch)
            states += branch.num_states()
            arcs += num_arcs(branch)
            budget.check_states(states, what, at_least=True)
            budget.check_edges(arcs, what, "arcs", at_least=True)
        return _optimized(pynini.union(*kept), node.pos)

    def domain(self, grammar: Grammar, node: Quantifier, env: dict) -> list[str]:
        """Values of the quantified variable: every non-empty text that makes some
        label pattern mentioning it (in the body or the rules it uses) match a label."""
        variable, values, patterns = node.variable, set(), []
        for template, inner in _occurrences(grammar, node.body, variable, set(), frozenset()):
            patterns.append(template)
            pieces = merge_pieces(
                [
                    self.outer_value(piece, env)
                    if isinstance(piece, Var) and piece.name != variable and piece.name not in inner
                    else piece
                    for piece in template
                ]
            )
            for label in self.labels:
                values.update(b[variable] for b in _bindings(pieces, label))
        if not patterns:
            raise GrammarError(
                f"{node.pos}: variable {{{variable}}} of '{node.kind} {variable}:' appears in "
                "no label or label class of its body"
            )
        if not values:
            shown = ", ".join(render(t) for t in patterns)
            raise UnknownLabelError(
                f"{node.pos}: '{node.kind} {variable}:' ranges over nothing: no label "
                f"matches {shown}; the model's labels are {shown_labels(self.labels)}"
            )
        return sorted(values)

    def check_templates(self) -> None:
        for node, hit in self.template_hits.items():
            if not hit:
                what = node.text if isinstance(node, LabelClass) else render(node.template)
                raise UnknownLabelError(
                    f"{node.pos}: {what} matches no label for any value of its variables; "
                    f"the model's labels are {shown_labels(self.labels)}"
                )


def _occurrences(
    grammar: Grammar, node: Node, variable: str, seen: set, inner: frozenset
) -> Iterator[tuple[Template, frozenset]]:
    """Label templates mentioning ``{variable}`` reachable from ``node`` through rule
    references, with the variables bound in between (which stay free)."""
    if isinstance(node, Name):
        if Var(variable) in node.template:
            yield node.template, inner
        elif is_identifier(node.template) and node.template[0] in grammar.rule_map:
            yield from _rule_occurrences(grammar, node.template[0], variable, seen, inner)
        return
    if isinstance(node, LabelClass):
        yield from ((p, inner) for p in node.patterns if Var(variable) in p)
        return
    if isinstance(node, QualifiedRef):
        yield from _rule_occurrences(grammar.import_map[node.namespace], node.name, variable, seen, inner)
        return
    if isinstance(node, (Quantifier, Binding)):
        if node.variable == variable:
            return
        inner = inner | {node.variable}
    for child in children(node):
        yield from _occurrences(grammar, child, variable, seen, inner)


def _rule_occurrences(
    grammar: Grammar, name: str, variable: str, seen: set, inner: frozenset
) -> Iterator[tuple[Template, frozenset]]:
    key = (id(grammar), name)
    if key not in seen:
        seen.add(key)
        yield from _occurrences(grammar, grammar.rule_map[name].body, variable, seen, inner)


def check_params(params) -> dict[str, str]:
    params = {} if params is None else params
    if not isinstance(params, Mapping):
        raise GrammarError(f"params must be a mapping from variable names to values, got {type(params).__name__}")
    for name, value in params.items():
        if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
            raise GrammarError(f"parameter name {name!r} is not an identifier")
        if not isinstance(value, str) or not value or any(c.isspace() for c in value):
            raise GrammarError(f"parameter {name} = {value!r}: values are non-empty strings without whitespace")
    return dict(params)


def compile_grammar(
    grammar: Grammar, labels: Sequence[str], rule: str = "start", params: Mapping[str, str] | None = None
) -> pynini.Fst:
    """The language of ``rule`` as a minimal deterministic acceptor over label keys
    (label i = key i + 1), with ``symbol_table(labels)`` attached.

    ``params`` gives values to free variables such as ``{X}``.  Raises GrammarError
    (UnknownLabelError for labels or classes the model lacks) and when the rule
    accepts no non-empty label sequence."""
    if not isinstance(grammar, Grammar):
        raise GrammarError(f"expected a Grammar (from parse_grammar or load_grammar), got {type(grammar).__name__}")
    params = check_params(params)
    labels = check_labels(labels)
    table = symbol_table(labels)
    if rule not in grammar.rule_map:
        rules = ", ".join(grammar.rule_names) or "none"
        raise GrammarError(f"{grammar.source}: no rule named '{rule}' (rules: {rules})")
    compiler = _Compiler(labels, params)
    try:
        fst = compiler.rule(grammar, rule, grammar.rule_map[rule].pos, {})
    except RecursionError:
        raise GrammarError(
            f"{grammar.rule_map[rule].pos}: rule '{rule}' refers to rules that refer to rules ... too "
            "deeply to compile; write the chain of rules as fewer rules"
        ) from None
    compiler.check_templates()
    unused = sorted(set(params) - compiler.used_params)
    if unused:
        raise GrammarError(f"{grammar.source}: rule '{rule}' does not use the parameter(s) {', '.join(unused)}")
    non_empty = pynini.intersect(fst, pynini.closure(compiler.sigma, 1))
    if non_empty.num_states() == 0:
        raise GrammarError(
            f"{grammar.rule_map[rule].pos}: the grammar accepts nothing: rule '{rule}' "
            f"allows no non-empty sequence of the labels {shown_labels(labels)}"
        )
    fst = fst.copy()
    fst.set_input_symbols(table)
    fst.set_output_symbols(table)
    return fst
