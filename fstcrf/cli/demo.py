"""``fstcrf demo``: train, tag and evaluate a chunker out of the box."""

from __future__ import annotations

import argparse
from pathlib import Path

from fstcrf.cli.common import find_conll2000, label_scores, read_corpus
from fstcrf.cli.options import POSITIVE, add_command
from fstcrf.errors import FstcrfError


def _save_corpus(folder: str) -> int:
    """Copy the shipped demo corpus into ``folder`` as train.txt and test.txt (both checked
    as outputs before, :func:`fstcrf.cli.options.check_outputs`)."""
    from fstcrf.corpus.synthetic import DATA_DIR
    from fstcrf.files import write_atomically

    copies = {
        Path(folder) / "train.txt": DATA_DIR / "demo_train.txt",
        Path(folder) / "test.txt": DATA_DIR / "demo_test.txt",
    }
    for target, source in copies.items():
        write_atomically(target, lambda stream, source=source: stream.write(source.read_bytes()))
    print(f"wrote the demo corpus to {folder}: train.txt and test.txt (columns word, pos, chunk)")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from fstcrf.model.chain import ChainCRF
    from fstcrf.corpus.synthetic import DATA_DIR

    if args.save_corpus is not None:
        return _save_corpus(args.save_corpus)
    if args.output == "-":
        raise FstcrfError("demo prints its report on standard output; give -o a file for the model")
    folder = find_conll2000(args.data)
    if folder is not None:
        train_path, test_path = folder / "train.txt", folder / "test.txt"
        print(f"fstcrf demo: using CoNLL-2000 from {folder}")
    else:
        train_path, test_path = DATA_DIR / "demo_train.txt", DATA_DIR / "demo_test.txt"
        print(
            "fstcrf demo: CoNLL-2000 not found (set FSTCRF_DATA or --data); using the small synthetic "
            f"corpus fstcrf generated itself ({DATA_DIR})"
        )
    train, test = read_corpus(str(train_path)), read_corpus(str(test_path))
    print(
        f"training a first-order CRF (Sha & Pereira features, L-BFGS, {args.max_iter} iterations) "
        f"on {len(train)} sentences"
    )
    model = ChainCRF(max_iter=args.max_iter, threads=args.threads).fit(train)
    if args.output:
        model.save(args.output)
        print(f"model written to {args.output}")
    scores = label_scores(test.column(model.target_), model.predict(test))
    print(f"tagged {len(test)} test sentences ({test.num_tokens} tokens)")
    print(scores.format())
    return 0


def add_parsers(commands) -> None:
    """Register fstcrf demo on the subparsers ``commands``."""
    demo = add_command(
        commands,
        "demo",
        "train, tag and evaluate a chunker out of the box",
        _demo,
        inputs=("data",),
        outputs=("output", "save_corpus"),
    )
    demo.add_argument(
        "--data",
        default=None,
        help="folder holding CoNLL-2000 train.txt and test.txt, or a folder holding conll2000/ "
        "(default: $FSTCRF_DATA/conll2000, NLTK's data folders, else a small synthetic "
        "corpus)",
    )
    demo.add_argument("--max-iter", type=POSITIVE, default=60, help="L-BFGS iterations (default %(default)s)")
    demo.add_argument("--threads", type=POSITIVE, default=2, help="threads (default %(default)s)")
    demo.add_argument("-o", "--output", default=None, help="also save the model here (default: not saved)")
    demo.add_argument(
        "--save-corpus",
        default=None,
        metavar="DIR",
        help="only write the small synthetic corpus fstcrf ships into DIR, as train.txt and test.txt, "
        "for trying the other commands on (default: not written)",
    )
