"""The CRFsuite side of the whole-process benchmarks (:mod:`fstcrf.bench.process`):
the script a python-crfsuite user writes, run as ``python -m fstcrf.bench.crfsuite
crfsuite-tag ...`` (or ``crfsuite-train``).  It reads the CoNLL file, builds each
token's attribute strings in Python from the same template (named as
:mod:`fstcrf.features` names predicates, so the attributes are the model's
predicates), then tags or trains with pycrfsuite and writes its output, timing
its phases as fstcrf does (:mod:`fstcrf.phases`).  It imports neither numpy nor
fstcrf.features, as such a script would not, so its naming code is its own
(checked against FeatureExtractor by the tests); this module imports only the
standard library at the top, so that the CRFsuite process pays nothing for it.
"""

from __future__ import annotations

import json
import sys

from fstcrf.phases import phase

#: Sentences whose attributes the CRFsuite tagging script builds before tagging them.
CRFSUITE_CHUNK = 1000


def _escaped(value: str) -> str:
    """A value as a predicate name holds it: "\\" and "|" escaped, a value that
    looks like a boundary value (``__BOS-1__``) given a leading backslash."""
    value = value.replace("\\", "\\\\").replace("|", "\\|")
    if (
        value.startswith(("__BOS-", "__EOS+"))
        and value.endswith("__")
        and value[6:-2].isdigit()
        and value[6:-2].isascii()
    ):
        value = "\\" + value
    return value


def _shape(value: str) -> str:
    """Upper-case letters X, lower-case x, digits d, others kept; runs collapsed."""
    symbols = []
    for character in value:
        symbol = (
            "X" if character.isupper() else "x" if character.islower() else "d" if character.isdigit() else character
        )
        if not symbols or symbols[-1] != symbol:
            symbols.append(symbol)
    return "".join(symbols)


def _transform(name: str | None):
    """The function of a template transform name (None: the value itself)."""
    if name is None:
        return None
    if name == "lower":
        return str.lower
    if name == "shape":
        return _shape
    length = int(name[len("prefix") :]) if name.startswith("prefix") else int(name[len("suffix") :])
    if name.startswith("prefix"):
        return lambda value: value[:length]
    return lambda value: value[-length:]


def template_spec(template) -> list:
    """A :class:`fstcrf.features.template.Template` as plain JSON data: one
    [name, [[column, offset, transform or None], ...]] per predicate template."""
    return [
        [predicate.name, [[o.column, o.offset, o.transform] for o in predicate.observations]]
        for predicate in template.predicates
    ]


def token_attributes(spec: list, columns: dict[str, list[str]]) -> list[list[str]]:
    """The predicate names of each token [T][len(spec)] of one sentence, whose
    ``columns`` map a name to its values [T]; ``spec`` is from :func:`template_spec`."""
    length = len(next(iter(columns.values())))
    escaped: dict[tuple[str, str | None], list[str]] = {}
    shifted: dict[tuple[str, str | None, int], list[str]] = {}
    plan = []
    for name, items in spec:
        for column, offset, transform in items:
            if (column, transform) not in escaped:
                function = _transform(transform)
                values = columns[column] if function is None else map(function, columns[column])
                escaped[column, transform] = [_escaped(value) for value in values]
            if (column, transform, offset) not in shifted:
                shifted[column, transform, offset] = _shifted(escaped[column, transform], offset)
        plan.append((name + "=", [shifted[column, transform, offset] for column, offset, transform in items]))
    tokens = []
    for i in range(length):
        tokens.append(
            [prefix + "|".join([values[i] for values in items]) if items else "bias" for prefix, items in plan]
        )
    return tokens


def _shifted(values: list[str], offset: int) -> list[str]:
    """The value at ``offset`` from each token [T], a boundary value outside the sentence."""
    length = len(values)
    return [
        values[j] if 0 <= j < length else f"__BOS-{-j}__" if j < 0 else f"__EOS+{j - length + 1}__"
        for j in range(offset, offset + length)
    ]


def read_sentences(path: str, names: list[str]) -> list[dict[str, list[str]]]:
    """The sentences of a CoNLL file, each a dict from column name to values [T]
    (fields split on whitespace; fields beyond ``names`` dropped; -DOCSTART-
    lines end a sentence and are not kept)."""
    sentences, rows = [], []
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            fields = line.split()
            if fields and fields[0] != "-DOCSTART-":
                rows.append(fields)
            elif rows:
                sentences.append({name: list(values) for name, values in zip(names, zip(*rows))})
                rows = []
    if rows:
        sentences.append({name: list(values) for name, values in zip(names, zip(*rows))})
    return sentences


def crfsuite_tag(spec_path: str, model_path: str, input_path: str, output_path: str) -> None:
    """Tag a CoNLL file with a CRFsuite model, one label column appended to its columns."""
    import pycrfsuite

    with open(spec_path, encoding="utf-8") as stream:
        spec = json.load(stream)
    tagger = pycrfsuite.Tagger()
    with phase("load"):
        tagger.open(model_path)
    with phase("read"):
        sentences = read_sentences(input_path, spec["columns"])
    labels = []
    for first in range(0, len(sentences), CRFSUITE_CHUNK):
        with phase("features"):
            attributes = [
                token_attributes(spec["predicates"], sentence) for sentence in sentences[first : first + CRFSUITE_CHUNK]
            ]
        with phase("decode"):
            labels += [tagger.tag(tokens) for tokens in attributes]
    with phase("write"):
        lines = []
        for sentence, tags in zip(sentences, labels):
            lines += [" ".join(fields) + "\n" for fields in zip(*sentence.values(), tags)]
            lines.append("\n")
        with open(output_path, "w", encoding="utf-8") as stream:
            stream.writelines(lines)


def crfsuite_train(spec_path: str, train_path: str, model_path: str, iterations: int, c2: float) -> dict:
    """Train a first-order CRFsuite model with L-BFGS and an L2 prior ``c2`` (all label
    transitions, as fstcrf's default); returns its iterations and feature count."""
    import pycrfsuite

    with open(spec_path, encoding="utf-8") as stream:
        spec = json.load(stream)
    with phase("read"):
        sentences = read_sentences(train_path, spec["columns"])
    trainer = pycrfsuite.Trainer(verbose=False)
    with phase("features"):
        for sentence in sentences:
            trainer.append(token_attributes(spec["predicates"], sentence), sentence[spec["target"]])
    trainer.select("lbfgs")
    trainer.set_params({"c1": 0.0, "c2": c2, "max_iterations": iterations, "feature.possible_transitions": True})
    with phase("train"):  # CRFsuite writes the model file inside train()
        trainer.train(model_path)
    return {
        "iterations": len(trainer.logparser.iterations),
        "features": int(trainer.logparser.last_iteration["active_features"]),
    }


def main(argv: list[str] | None = None) -> int:
    """The CRFsuite side's processes: crfsuite-tag and crfsuite-train."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m fstcrf.bench.crfsuite",
        description="the CRFsuite processes of fstcrf bench tag|train --vs crfsuite",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    tag = commands.add_parser("crfsuite-tag", help="tag a CoNLL file with a CRFsuite model")
    train = commands.add_parser("crfsuite-train", help="train a CRFsuite model; prints its iterations and features")
    for sub, files in ((tag, ("spec", "model", "input", "output")), (train, ("spec", "train", "model"))):
        for file in files:
            sub.add_argument(file)
    train.add_argument("iterations", type=int)
    train.add_argument("c2", type=float)
    args = parser.parse_args(argv)
    if args.command == "crfsuite-tag":
        crfsuite_tag(args.spec, args.model, args.input, args.output)
    else:
        print(json.dumps(crfsuite_train(args.spec, args.train, args.model, args.iterations, args.c2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
