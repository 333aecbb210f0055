"""The topology a tagger is declared over: its labels, the history its states
remember, a tagging scheme and a grammar.  The torch layers and the logit
decoder build theirs here, so that both read a declaration the same way."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from fstcrf.engine.acceptor import Acceptor, is_fst
from fstcrf.engine.topology import Topology, first_order, kth_order, with_scheme
from fstcrf.errors import ArgumentTypeError, GrammarError, TopologyError
from fstcrf.grammar.nodes import Grammar
from fstcrf.grammar.parser import load_grammar, parse_grammar
from fstcrf.grammar.restriction import constrain


def label_topology(
    labels: Sequence[str],
    scheme: str | None = None,
    grammar=None,
    order: int = 1,
    rule: str = "start",
    params: Mapping[str, str] | None = None,
) -> Topology:
    """The topology over ``labels`` (in their order: tag index i is ``labels[i]``):
    states remember the last ``order`` labels; ``scheme`` (``"iob1"``, ``"iob2"``,
    ``"bioes"``) keeps the sequences valid in it; ``grammar`` (a Grammar, grammar
    text, a grammar file or shipped grammar name, an Acceptor or a pynini acceptor;
    compiled with pynini) keeps those its rule ``rule`` accepts."""
    if type(labels) not in (list, tuple) and (isinstance(labels, str) or not isinstance(labels, Sequence)):
        raise ArgumentTypeError(f"labels must be a sequence of label strings, got {type(labels).__name__}")
    if isinstance(order, bool) or not isinstance(order, int) or order < 1:
        raise TopologyError(f"order must be a positive integer, got {order!r}")
    if grammar is None or (isinstance(grammar, str) and ";" in grammar):  # nothing read from a file
        try:
            given = None if params is None else tuple(sorted(params.items()))
            key = (tuple(labels), scheme, grammar, order, rule, given)
            hash(key)
        except (TypeError, AttributeError):  # what cannot be a key: the checks below name what is wrong
            return _declared(labels, scheme, grammar, order, rule, params)
        return _kept_topology(key)
    return _declared(labels, scheme, grammar, order, rule, params)


#: Topologies declared without a grammar file are kept (at most this many).
DECLARATIONS_KEPT = 64


@functools.lru_cache(maxsize=DECLARATIONS_KEPT)
def _kept_topology(key: tuple) -> Topology:
    """:func:`_declared` of a declaration read from nothing but its arguments, made once
    (a logit decoder called per sentence declares the same topology every time)."""
    labels, scheme, grammar, order, rule, params = key
    return _declared(labels, scheme, grammar, order, rule, None if params is None else dict(params))


def _declared(labels, scheme, grammar, order: int, rule: str, params) -> Topology:
    """The topology :func:`label_topology` declares, once its arguments are checked."""
    topology = first_order(labels) if order == 1 else kth_order(labels, order)
    if scheme is not None:
        topology = with_scheme(topology, scheme)
    if grammar is not None:
        if isinstance(grammar, str):
            grammar = parse_grammar(grammar) if ";" in grammar else _named_grammar(grammar)
        if not isinstance(grammar, (Grammar, Acceptor)) and not is_fst(grammar):
            raise ArgumentTypeError(
                "grammar must be a Grammar, grammar text, a grammar file or shipped grammar "
                f"name, an Acceptor or a pynini acceptor; got {type(grammar).__name__}"
            )
        topology = constrain(topology, grammar, rule, params)
    return topology


def _named_grammar(name: str) -> Grammar:
    """The grammar file or shipped grammar ``name``; where there is none and ``name``
    reads as grammar text (it holds '='), the error says text needs its ';'."""
    try:
        return load_grammar(name)
    except GrammarError as error:
        if "=" not in name:
            raise
        raise GrammarError(f"{error}; as grammar text, end each rule with ';' (\"start = O* ;\")") from None
