"""``fstcrf bench grammar``: decoding time of a trained model under each shipped
grammar, as a ratio to unconstrained decoding."""

from __future__ import annotations

from fstcrf.bench.harness import best_time


def bench_grammar(model_path, test_path, repeats: int = 3) -> list[dict]:
    """Decoding time of a trained model under each shipped grammar that fits
    its labels, as a ratio to unconstrained decoding, with the size of the
    constrained state space.  Parameterised grammars get X = the most
    frequent chunk type of the model."""
    from fstcrf.corpus.conll import read_conll
    from fstcrf.errors import GrammarError
    from fstcrf.grammar import constrain, load_grammar, shipped_grammars
    from fstcrf.model.chain import load_model

    model = load_model(model_path)
    test = read_conll(test_path, model.columns_)
    types = [label[2:] for label in model.labels_ if label.startswith("B-")]
    counts = {t: sum(labels.count(f"B-{t}") for labels in test.column(model.target_)) for t in types}
    params = {"X": max(counts, key=counts.get)} if counts else {}
    model.predict(test)
    free = best_time(lambda: model.predict(test), repeats)
    rows = [
        {
            "grammar": "(none)",
            "states": model.topology_.num_states,
            "edges": model.topology_.num_edges,
            "seconds": free,
            "ratio": 1.0,
        }
    ]
    for name in shipped_grammars():
        grammar = load_grammar(name)
        needed = params if name.startswith("at_") else None
        try:
            topology = constrain(model.topology_, grammar, params=needed)
        except GrammarError as error:
            reason = str(error).split(": ", 1)[-1].split(";")[0]  # drop file:line:col and the label list
            rows.append({"grammar": name, "skipped": reason})
            continue
        model.predict(test, grammar=grammar, params=needed, on_infeasible="unconstrained")
        seconds = best_time(
            lambda: model.predict(test, grammar=grammar, params=needed, on_infeasible="unconstrained"), repeats
        )
        label = name + (f" (X={params['X']})" if needed else "")
        rows.append(
            {
                "grammar": label,
                "states": topology.num_states,
                "edges": topology.num_edges,
                "seconds": seconds,
                "ratio": seconds / free,
            }
        )
    return rows


def format_grammar(rows: list[dict]) -> str:
    """The rows of :func:`bench_grammar` as a Markdown table."""
    lines = ["| grammar | states | edges | decode s (test set) | x unconstrained |", "|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['grammar']} | - | - | - | not applicable: {r['skipped']} |")
        else:
            lines.append(f"| {r['grammar']} | {r['states']} | {r['edges']} | {r['seconds']:.3f} | {r['ratio']:.2f} |")
    return "\n".join(lines)
