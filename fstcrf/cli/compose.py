"""``fstcrf compose``: trained models composed into a joint model."""

from __future__ import annotations

import argparse
import os
import logging

from fstcrf.cli.options import (
    POSITIVE,
    add_budget_arguments,
    add_command,
    add_lbfgs_memory,
    add_lbfgs_precision,
    real_number,
)
from fstcrf.learn.settings import DEFAULT_SIGMA, JOINT_INITS, JOINT_PRIORS
from fstcrf.errors import FstcrfError
from fstcrf.extras import require

LOG = logging.getLogger("fstcrf")


def _compose(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import compose
    from fstcrf.model.chain import load_model

    pynini = require("pynini", "--compat") if args.compat else None
    if args.joint is not None:
        require("pynini", "--joint")
    models = [load_model(path) for path in args.models]
    relations = [None] * (len(models) - 1)
    for spec in args.compat:
        position, equals, path = spec.partition("=")
        if not equals or not position.isdigit() or not 1 <= int(position) < len(models):
            raise FstcrfError(
                f"--compat expects K=FILE with 1 <= K < {len(models)} (the relation between "
                f"models K-1 and K), got {spec!r}"
            )
        relations[int(position) - 1] = _read_fst(pynini, path)
    scales = None
    if args.scales:
        try:
            scales = [float(value) for value in args.scales.split(",")]
        except ValueError:
            raise FstcrfError(f"--scales expects comma-separated numbers, got {args.scales!r}") from None
    joint = compose(models, relations, scales=scales, joint=args.joint)
    if args.train is not None:
        _train_jointly(joint, args)
    joint.save(args.output)
    sizes = " x ".join(str(topology.num_states) for topology in joint.topologies)
    LOG.info(
        "composed %s (%s = %d joint states%s%s; decoder: %s); written to %s",
        " + ".join(joint.targets),
        sizes,
        joint.space.num_states,
        "" if joint.space.allowed is None else f", {int(joint.space.allowed.sum())} allowed",
        "" if joint.grammar is None else f", joint grammar {joint.grammar}",
        joint.space.decoder,
        args.output,
    )
    return 0


def training_columns(joint, columns: str | None) -> tuple[tuple[str, ...] | str, tuple[str, ...]]:
    """(the column names to read --train and --dev with, the columns that may be
    missing): --columns if given, else the columns the top component was trained on
    (which include the lower labels it reads); the components' gold columns but the
    top one's may be missing (latent)."""
    if columns is not None:
        return columns, ()
    names = tuple(joint.components[-1].columns_)
    return names, tuple(component.target_ for component in joint.components[:-1] if component.target_ in names)


def _read_training(joint, path: str, columns: str | None):
    """A --train or --dev file, checked to hold every column a component reads."""
    from fstcrf.cli.common import read_corpus

    names, allow_missing = training_columns(joint, columns)
    corpus = read_corpus(path, names, allow_missing=allow_missing)
    targets = set(joint.targets)
    for k, component in enumerate(joint.components):
        missing = [name for name in component.columns_ if name not in targets and name not in corpus.column_names]
        if missing:
            raise FstcrfError(
                f"{path}: component {k} ({component.target_}) reads the column {', '.join(missing)}, which the "
                f"file (read as {','.join(corpus.column_names)}) lacks; name the columns with --columns"
            )
    return corpus


#: The first four bytes of an OpenFst binary file (its magic number, little-endian).
FST_MAGIC = (2125659606).to_bytes(4, "little")


def _read_fst(pynini, path: str):
    """The FST in the OpenFst binary file ``path``; FstcrfError naming the file when it
    cannot be read or is not one (checked here, before OpenFst, which would print its
    own error lines)."""
    from fstcrf.engine import budget

    unreadable = f"{path}: cannot read an FST (OpenFst binary with symbol tables expected)"
    try:
        budget.check_resource_bytes(os.path.getsize(path), f"the relation {path}")
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as problem:
        raise FstcrfError(f"{unreadable}: {problem.strerror}") from None
    if data[:4] != FST_MAGIC:
        raise FstcrfError(f"{unreadable}: it does not begin as one")
    try:
        return pynini.Fst.read_from_string(data)
    except pynini.FstIOError:
        raise FstcrfError(unreadable) from None


def _train_jointly(joint, args: argparse.Namespace) -> None:
    """--train: every component's weights trained together (fstcrf.model.joint_training)."""
    from fstcrf.cli.common import report_kept
    from fstcrf.cli.train import sigma_of

    train = _read_training(joint, args.train, args.columns)
    dev = None if args.dev is None else _read_training(joint, args.dev, args.columns)
    joint.threads = args.threads
    joint.fit(
        train,
        dev,
        init=args.init,
        prior=args.prior,
        sigma=sigma_of(args),
        max_iter=args.max_iter,
        tol=args.tol,
        memory=args.lbfgs_memory,
        history=args.lbfgs_precision,
    )
    report_kept(joint, "the weights of joint iteration %d of %d", joint.best_iteration_, joint.n_iter_)


def add_parsers(commands) -> None:
    """Register fstcrf compose on the subparsers ``commands``."""
    compose = add_command(
        commands,
        "compose",
        "compose trained models (lowest first) into a joint model",
        _compose,
        inputs=("models", "compat", "joint", "train", "dev"),
        outputs=("output",),
    )
    compose.add_argument(
        "models",
        nargs="+",
        help="model files in chain order; each reads the previous one's labels (under --joint: or nothing)",
    )
    compose.add_argument("-o", "--output", required=True, help="joint model file to write")
    compose.add_argument(
        "--compat",
        action="append",
        default=[],
        metavar="K=FST",
        help="restrict the label pairs of models K-1 and K to a transducer from lower to upper "
        "labels (OpenFst binary with symbol tables; repeatable; default: all pairs)",
    )
    compose.add_argument(
        "--scales",
        default=None,
        metavar="W0,W1,...",
        help="weigh each model's score, e.g. 1,0.5 to temper an upper model trained on gold "
        "lower labels; choose the weights on held-out data (default: all 1)",
    )
    compose.add_argument(
        "--joint",
        default=None,
        metavar="GRAMMAR",
        help="tie the models by a joint grammar (a shipped name such as no_overlap or nest, or a .fgr "
        "file) over joint labels 'A/B/...', the models' labels in order; models may then read nothing "
        "(default: none)",
    )
    training = compose.add_argument_group(
        "joint training (--train): every model's weights trained together, a factorial CRF"
    )
    training.add_argument(
        "--train",
        default=None,
        metavar="FILE",
        help="CoNLL file to train the composition on: each model reads its gold column; a lower column that "
        "is absent or '?' is latent (marginalised) (default: no training, the models as they are)",
    )
    training.add_argument(
        "--dev",
        default=None,
        metavar="FILE",
        help="keep the iteration whose top model scores best on this CoNLL file (default: the last)",
    )
    training.add_argument(
        "--columns",
        default=None,
        help="comma-separated column names of --train and --dev (default: the columns the top model was "
        "trained on; the lower models' gold columns may be missing)",
    )
    training.add_argument(
        "--init",
        choices=JOINT_INITS,
        default="warm",
        help="warm: start from the models' weights; zero: from zero (default %(default)s)",
    )
    training.add_argument(
        "--prior",
        choices=JOINT_PRIORS,
        default="start",
        help="centre the Gaussian prior on the starting weights or on zero (default %(default)s)",
    )
    training.add_argument(
        "--sigma",
        type=real_number(1e-4, 1e6),
        default=None,
        help=f"standard deviation of the Gaussian prior (default {DEFAULT_SIGMA})",
    )
    training.add_argument(
        "--c2",
        type=real_number(0.0, 1e8),
        default=None,
        help="CRFsuite's L2 coefficient c2 = 1 / (2 sigma^2), instead of --sigma (default: from --sigma)",
    )
    training.add_argument("--max-iter", type=POSITIVE, default=50, help="L-BFGS iterations (default %(default)s)")
    training.add_argument(
        "--tol",
        type=real_number(0.0, 1.0, closed=False),
        default=1e-7,
        help="stop when an iteration lowers the objective by less than this fraction of it (default %(default)s)",
    )
    add_lbfgs_memory(training)
    add_lbfgs_precision(training)
    training.add_argument(
        "--threads", type=POSITIVE, default=2, help="threads for the joint gradient (default %(default)s)"
    )
    add_budget_arguments(compose)
