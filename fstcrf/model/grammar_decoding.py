"""``ChainCRF.predict`` under a grammar: the sentences whose length the grammar fits
are decoded under it; the others raise InfeasibleError or, with
``on_infeasible="unconstrained"``, are decoded without the grammar.  A sentence's
own constraints hold either way: "unconstrained" drops the grammar only."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from fstcrf.corpus.conll import Sentence
from fstcrf.corpus.labels import split_labels
from fstcrf.engine.acceptor import Acceptor, is_fst
from fstcrf.engine.constraints import SentenceRules
from fstcrf.errors import FstcrfError, InfeasibleError
from fstcrf.grammar import Grammar, load_grammar

logger = logging.getLogger(__name__)

#: What ``predict`` does with a sentence no sequence of the grammar fits.
ON_INFEASIBLE = ("error", "unconstrained")


def check_on_infeasible(on_infeasible) -> None:
    """FstcrfError unless ``on_infeasible`` is one of ON_INFEASIBLE."""
    if not isinstance(on_infeasible, str) or on_infeasible not in ON_INFEASIBLE:
        raise FstcrfError(f"on_infeasible must be 'error' or 'unconstrained', got {on_infeasible!r}")


def predict_under_grammar(
    model,
    sentences: Sequence[Sentence],
    grammar,
    params: dict | None,
    on_infeasible: str,
    rules: Sequence[SentenceRules | None] | None,
) -> list[list[str]]:
    """The best labels [B][T] of ``model`` (a fitted ChainCRF) under ``grammar`` (a
    Grammar, what ``load_grammar`` reads, an Acceptor or a pynini.Fst) and each sentence's ``rules`` (None: none);
    the sentences the grammar cannot fit as ``on_infeasible`` says."""
    if not (isinstance(grammar, (Grammar, Acceptor)) or is_fst(grammar)):
        grammar = load_grammar(grammar)
    name = grammar.source if isinstance(grammar, Grammar) else "the acceptor given"
    topology = model.scorer().decoding_topology(grammar, params)
    infeasible = [i for i, sentence in enumerate(sentences) if not topology.is_feasible(len(sentence))]
    if infeasible and on_infeasible == "error":
        shown = ", ".join(f"{i} (length {len(sentences[i])})" for i in infeasible[:10])
        remedy = (
            "fix the grammar, or tag such sentences without it (on_infeasible='unconstrained', "
            "CLI --on-infeasible unconstrained)"
        )
        error = InfeasibleError(
            f"grammar {name} accepts no label sequence as long as sentence "
            f"{shown}{' ...' if len(infeasible) > 10 else ''}; {remedy}"
        )
        error.sentences = infeasible
        error.reason = f"grammar {name} accepts no label sequence of this sentence's length; {remedy}"
        raise error
    result: list[list[str]] = [[] for _ in sentences]  # every one is filled below
    feasible = sorted(set(range(len(sentences))) - set(infeasible))
    for chosen, under in ((feasible, grammar), (infeasible, None)):
        if chosen:
            for i, labels in zip(chosen, _best_labels(model, sentences, chosen, under, params, rules)):
                result[i] = labels
    if infeasible:
        logger.warning(
            "grammar %s accepts no sequence as long as %d sentence(s); tagged them without it",
            name,
            len(infeasible),
        )
    return result


def _best_labels(
    model,
    sentences: Sequence[Sentence],
    chosen: list[int],
    grammar,
    params: dict | None,
    rules: Sequence[SentenceRules | None] | None,
) -> list[list[str]]:
    """The best labels of the ``chosen`` sentences, under ``grammar`` when it is given
    and under their rules (which keep the sentence index they name)."""
    part = [sentences[i] for i in chosen]
    part_rules = None if rules is None else [rules[i] for i in chosen]
    if part_rules is not None and any(rule is not None for rule in part_rules):
        return model.best_labels(model.span_potentials(part, grammar, params, part_rules))
    if grammar is None:
        return model.predict(part)
    encoded = model.encode(part)
    return split_labels(
        model.topology_, model.scorer().paths(encoded, model.weights_, grammar, params), encoded.offsets
    )
