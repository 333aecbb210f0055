"""What the commands share: reading a CoNLL file, the chunk types of --only-types,
the scores printed, the parameters of --define, and where CoNLL-2000 is."""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fstcrf.corpus.schemes import keep_types, missing_types_warning
from fstcrf.errors import FstcrfError, InfeasibleError
from fstcrf.phases import phase
from fstcrf.extras import require

LOG = logging.getLogger("fstcrf")


def read_corpus(path: str, columns=None, allow_missing=(), separator: str | None = None):
    """A CoNLL file read whole (see :func:`fstcrf.corpus.conll.read_conll`), timed as the phase "read"."""
    from fstcrf.corpus.conll import read_conll

    with phase("read"):
        return read_conll(path, columns, separator, allow_missing=allow_missing)


def report_kept(estimator, what: str, *values) -> None:
    """Log "kept WHAT" % values after training ``estimator``: a warning, "interrupted;
    kept ...", when Ctrl-C or SIGTERM stopped it (``interrupted_``)."""
    report = LOG.warning if estimator.interrupted_ else LOG.info
    report("%s " + what, "interrupted; kept" if estimator.interrupted_ else "kept", *values)


def only_types(args: argparse.Namespace) -> set[str] | None:
    """The chunk types of --only-types (None when the option is not given)."""
    return set(args.only_types.split(",")) if args.only_types else None


def check_only_types(keep: set[str] | None, labels: list[list[str]], where: str) -> None:
    """Warn when a type of --only-types never occurs among chunk labels [sentences][tokens]."""
    warning = missing_types_warning(keep, labels, where)
    if warning:
        LOG.warning("%s", warning)


def grammar_params(args: argparse.Namespace) -> dict | None:
    """Grammar parameters from --define NAME=VALUE options (None if there are none)."""
    params = {}
    for definition in args.define:
        name, equals, value = definition.partition("=")
        if not equals or not name or not value:
            raise FstcrfError(f"--define expects NAME=VALUE, got {definition!r}")
        if name in params:
            raise FstcrfError(f"--define {definition}: {name} is already defined (--define {name}={params[name]})")
        params[name] = value
    return params or None


def check_grammar_options(args: argparse.Namespace) -> None:
    """Before any work: MissingExtraError if --grammar is given without pynini, which
    compiles it; a warning that --define is ignored when --grammar is not given."""
    if args.grammar:
        require("pynini", "--grammar")
    if args.define and not args.grammar:
        LOG.warning(
            "--define %s is ignored: it sets parameters of --grammar, which is not given", " ".join(args.define)
        )


def label_scores(gold: list[list[str]], predicted: list[list[str]], keep: set[str] | None = None, where: str = ""):
    """Chunk scores, or token accuracy for labels without chunk structure; the
    types ``keep`` (--only-types) apply to chunk labels only, checked against
    the gold labels of ``where``."""
    from fstcrf.corpus.evaluate import is_chunk_labels, score_labels

    if keep and is_chunk_labels(gold):
        check_only_types(keep, gold, where)
        gold, predicted = keep_types(gold, keep), keep_types(predicted, keep)
    return score_labels(gold, predicted)


def find_conll2000(data_dir: str | None = None) -> Path | None:
    """The CoNLL-2000 folder (train.txt, test.txt) from --data, $FSTCRF_DATA or NLTK's
    data folders (None if none has it); a ``data_dir`` that has not is an error."""
    if data_dir:
        for folder in (Path(data_dir), Path(data_dir) / "conll2000"):
            if (folder / "train.txt").is_file() and (folder / "test.txt").is_file():
                return folder
        raise FstcrfError(
            f"--data {data_dir}: found no CoNLL-2000 train.txt and test.txt in this folder or in its conll2000 folder"
        )
    candidates = []
    if os.environ.get("FSTCRF_DATA"):
        candidates.append(Path(os.environ["FSTCRF_DATA"]) / "conll2000")
    candidates.append(Path("../shared/data/conll2000"))
    nltk_roots = os.environ.get("NLTK_DATA", "").split(os.pathsep) + [
        str(Path.home() / "nltk_data"),
        "/usr/share/nltk_data",
        "/usr/local/share/nltk_data",
        "/usr/lib/nltk_data",
        "/usr/local/lib/nltk_data",
    ]
    candidates += [Path(root) / "corpora" / "conll2000" for root in nltk_roots if root]
    for folder in candidates:
        if (folder / "train.txt").is_file() and (folder / "test.txt").is_file():
            return folder
    return None


@contextmanager
def infeasible_located(corpus) -> Iterator[None]:
    """An InfeasibleError of sentences of ``corpus`` (its ``sentence`` or ``sentences``,
    indices in ``corpus``) named by the file and first line of each instead."""
    from fstcrf.corpus.labels import token_location

    try:
        yield
    except InfeasibleError as error:
        if error.sentence is None and not error.sentences:
            raise
        first = error.sentence if error.sentence is not None else error.sentences[0]
        length = f" ({len(corpus.sentences[first])} tokens)" if error.sentence is None else ""
        message = f"{token_location(corpus, first)}{length}: {error.reason}"
        if len(error.sentences) > 1:
            others = [f"{token_location(corpus, i)} ({len(corpus.sentences[i])} tokens)" for i in error.sentences[1:6]]
            message += f" (also the sentences at {', '.join(others)}{' ...' if len(error.sentences) > 6 else ''})"
        located = InfeasibleError(message)
        located.sentence, located.clashing, located.reason = error.sentence, error.clashing, error.reason
        located.sentences = error.sentences
        raise located from None
