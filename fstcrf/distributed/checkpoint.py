"""L-BFGS checkpoints: the optimiser's state every N iterations, written atomically
as a numpy .npz file (no pickles), and read back by ``--resume`` after the driver
died.  A checkpoint carries a fingerprint of its run (the training settings,
labels and feature dictionary); resuming a different run raises CheckpointError."""

from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np

from fstcrf.errors import CheckpointError
from fstcrf.files import write_atomically
from fstcrf.learn.train import LbfgsState


def fingerprint(settings: dict, labels: list[str], arrays: list[np.ndarray]) -> str:
    """A digest of a run: its JSON-able ``settings``, its labels and the arrays that
    define its weights (the feature dictionary)."""
    digest = hashlib.sha256(json.dumps([settings, labels], sort_keys=True, default=str).encode())
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def save_state(path: str | os.PathLike, state: LbfgsState, run: str) -> None:
    """Write ``state`` of run ``run`` (a :func:`fingerprint`) to ``path`` atomically."""
    header = {
        "run": run,
        "loss": state.loss,
        "iteration": state.iteration,
        "history": state.history,
        "recent_losses": state.recent_losses,
        "kept_iteration": state.kept_iteration,
        "best_score": _finite_or_none(state.best_score),
        "kept": state.kept_weights is not None,
        "finished": state.finished,
    }
    D = len(state.theta)
    arrays = {
        "theta": state.theta,
        "gradient": state.gradient,
        "s": np.array([s for s, _, _ in state.pairs]).reshape(-1, D),
        "y": np.array([y for _, y, _ in state.pairs]).reshape(-1, D),
        "rho": np.array([rho for _, _, rho in state.pairs], dtype=np.float64),
        "header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
    }
    if state.kept_weights is not None:
        arrays["kept_weights"] = state.kept_weights
    write_atomically(path, lambda stream: np.savez(stream, **arrays))


def load_state(path: str | os.PathLike, run: str) -> LbfgsState:
    """The state saved at ``path``; CheckpointError if it is missing, unreadable or of
    another run."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data["header"].tobytes().decode())
            arrays = {name: data[name] for name in data.files}
    except FileNotFoundError:
        raise CheckpointError(f"{os.fspath(path)}: no checkpoint to resume from") from None
    except (OSError, ValueError, KeyError) as problem:
        raise CheckpointError(f"{os.fspath(path)}: not a readable fstcrf checkpoint ({problem})") from None
    if header.get("run") != run:
        raise CheckpointError(
            f"{os.fspath(path)} is the checkpoint of another run (other data, settings or "
            "feature dictionary); resume with the same ones, or train without --resume"
        )
    pairs = [(s, y, float(rho)) for s, y, rho in zip(arrays["s"], arrays["y"], arrays["rho"])]
    best = header["best_score"]
    return LbfgsState(
        arrays["theta"],
        float(header["loss"]),
        arrays["gradient"],
        pairs,
        int(header["iteration"]),
        header["history"],
        [float(x) for x in header["recent_losses"]],
        arrays.get("kept_weights") if header["kept"] else None,
        int(header["kept_iteration"]),
        -math.inf if best is None else float(best),
        bool(header["finished"]),
    )


def every(path: str | os.PathLike, iterations: int, run: str):
    """The ``checkpoint`` callback of :func:`fstcrf.learn.train.lbfgs` that saves every
    ``iterations``-th state to ``path``."""

    def save(state: LbfgsState) -> None:
        if state.iteration % iterations == 0:
            save_state(path, state, run)

    return save
