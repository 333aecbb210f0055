"""Checkpoints: L-BFGS continued from a saved state ends where the uninterrupted run
ends, in one process, on Dask after the driver died, and through the command line
after SIGKILL."""

import os
import signal
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstcrf.learn import train
from fstcrf.errors import CheckpointError
from fstcrf.corpus.evaluate import TagScores

from objectives import Logistic

DEMO = Path(__file__).resolve().parents[2] / "fstcrf" / "data" / "demo_train.txt"


class DriverDied(BaseException):
    """Stands for the driver's death right after an iteration's checkpoint."""


def _dev_score(theta):
    """A made-up dev score that rises and falls, so that the kept weights move."""
    correct = int(1000 * abs(np.sin(theta.sum())))
    return TagScores(accuracy=correct / 10, num_tokens=1000, num_correct_tokens=correct)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 10_000),
    st.sampled_from([0.0, 0.3]),
    st.integers(1, 9),
    st.booleans(),
    st.sampled_from([None, 3]),
    st.sampled_from(["double", "single"]),
)
def test_resumed_lbfgs_ends_where_the_uninterrupted_run_ends(
    tmp_path_factory, seed, l1, stop_after, with_dev, period, history
):
    from fstcrf.distributed.checkpoint import load_state, save_state

    problem = Logistic(seed, 6)
    options = dict(
        sigma=3.0, max_iter=10, evaluate=_dev_score if with_dev else None, l1=l1, period=period, history=history
    )
    states = []
    whole = train.lbfgs(problem, checkpoint=states.append, **options)
    if len(states) < stop_after:
        return
    path = tmp_path_factory.mktemp("checkpoint") / "state.npz"
    save_state(path, states[stop_after - 1], "run")
    resumed = train.lbfgs(problem, resume=load_state(path, "run"), **options)
    assert np.array_equal(resumed.weights, whole.weights)
    assert (resumed.n_iter, resumed.best_iteration) == (whole.n_iter, whole.best_iteration)
    strip = [{k: v for k, v in record.items() if k not in ("seconds", "elapsed")} for record in whole.history]
    assert [{k: v for k, v in record.items() if k not in ("seconds", "elapsed")} for record in resumed.history] == strip


def test_a_checkpoint_of_another_run_or_none_is_refused(tmp_path):
    from fstcrf.distributed.checkpoint import load_state, save_state

    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_state(tmp_path / "missing.npz", "run")
    states = []
    train.lbfgs(Logistic(0, 4), max_iter=2, checkpoint=states.append)
    save_state(tmp_path / "state.npz", states[-1], "run")
    with pytest.raises(CheckpointError, match="another run"):
        load_state(tmp_path / "state.npz", "other run")
    (tmp_path / "junk.npz").write_text("not a checkpoint")
    with pytest.raises(CheckpointError, match="not a readable"):
        load_state(tmp_path / "junk.npz", "run")


@pytest.mark.slow
def test_resume_on_dask_after_the_driver_died(tmp_path):
    distributed = pytest.importorskip("distributed")
    from fstcrf.distributed.fit import fit_on_dask
    from fstcrf.model import ChainCRF

    path = tmp_path / "run.npz"

    def die_after_iteration_5(record):
        if record["iteration"] == 5:
            raise DriverDied

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        whole = fit_on_dask(ChainCRF(max_iter=8, threads=1), str(DEMO), client)
        died = ChainCRF(max_iter=8, threads=1)
        with pytest.raises(DriverDied):
            fit_on_dask(died, str(DEMO), client, checkpoint=path, checkpoint_every=2, callback=die_after_iteration_5)
        assert not hasattr(died, "weights_")
        resumed = fit_on_dask(
            ChainCRF(max_iter=8, threads=1), str(DEMO), client, checkpoint=path, checkpoint_every=2, resume=True
        )
        with pytest.raises(CheckpointError, match="another run"):
            fit_on_dask(ChainCRF(max_iter=8, threads=1, sigma=3.0), str(DEMO), client, checkpoint=path, resume=True)
    assert np.array_equal(resumed.weights_, whole.weights_)
    assert [r["objective"] for r in resumed.history_] == [r["objective"] for r in whole.history_]
    assert resumed.traffic_.evaluations < whole.traffic_.evaluations


def _iteration_saved(path: Path) -> int:
    """The iteration of the checkpoint at ``path`` (0 while there is none)."""
    try:
        with np.load(path) as data:
            return json.loads(data["header"].tobytes().decode())["iteration"]
    except (OSError, ValueError, KeyError):
        return 0


@pytest.mark.slow
def test_cli_resumes_after_the_driver_is_killed(tmp_path):
    pytest.importorskip("distributed")
    command = [
        sys.executable,
        "-m",
        "fstcrf.cli",
        "-q",
        "train",
        str(DEMO),
        "--dask",
        "local:2",
        "--threads",
        "1",
        "--max-iter",
        "12",
        "--sigma",
        "3",
    ]
    environment = {**os.environ, "PYTHONPATH": str(DEMO.parents[2])}
    whole = tmp_path / "whole.fcrf"
    subprocess.run(command + ["-o", str(whole)], check=True, env=environment, timeout=300)
    checkpoint, model = tmp_path / "run.npz", tmp_path / "resumed.fcrf"
    driver = subprocess.Popen(
        command + ["-o", str(model), "--checkpoint", str(checkpoint)], env=environment, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 240
        while _iteration_saved(checkpoint) < 4 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and the workers it started
        driver.wait()
    assert 4 <= _iteration_saved(checkpoint) < 12 and not model.exists()
    subprocess.run(
        command + ["-o", str(model), "--checkpoint", str(checkpoint), "--resume"],
        check=True,
        env=environment,
        timeout=300,
    )
    from fstcrf.model import load_model

    assert np.array_equal(load_model(model).weights_, load_model(whole).weights_)
