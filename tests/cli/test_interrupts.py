"""Ctrl-C (SIGINT) and SIGTERM end every command that has worker threads within BOUND
seconds even when one of its threads is stuck: FSTCRF_FAULT (fstcrf.engine.faults)
blocks a thread of the pool, the bandit learner's partner or ``fstcrf tag``'s writer on
purpose, each test waits for the line saying so, sends the signal and times the exit.
What was done is kept as documented: ``train`` and ``compose --train`` write the
weights they have and exit with 0, ``tag`` writes the sentences tagged before and exits
with 130, the others exit with 130 and write nothing."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fstcrf.cli import main
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.model.compose import load_any

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="sends POSIX signals"),
]

TRAIN = str(DATA_DIR / "demo_train.txt")
TEST = str(DATA_DIR / "demo_test.txt")

#: Seconds a command may take to end once the signal is sent.
BOUND = 5.0

#: Seconds a command may take to reach its fault.
START = 120.0


def run_interrupted(arguments: list, fault: str, number: int) -> tuple[int, str]:
    """Run ``fstcrf ARGUMENTS`` with FSTCRF_FAULT=``fault``, send it the signal ``number``
    once the faulty thread blocks: (exit status, standard error).  The test fails if
    the command ends before its thread blocks or does not end within BOUND seconds of
    the signal (its process group is killed then)."""
    environment = dict(os.environ, FSTCRF_FAULT=fault)
    process = subprocess.Popen(
        [sys.executable, "-m", "fstcrf.cli", *map(str, arguments)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        start_new_session=True,
    )
    lines: list[str] = []
    blocked = threading.Event()

    def read() -> None:
        for line in process.stderr:
            lines.append(line)
            if "FSTCRF_FAULT" in line:
                blocked.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + START
        while not blocked.wait(0.05):
            assert process.poll() is None, f"ended before its thread blocked:\n{''.join(lines)}"
            assert time.monotonic() < deadline, f"no thread blocked in {START} s:\n{''.join(lines)}"
        time.sleep(0.2)  # the other threads wait for the blocked one
        process.send_signal(number)
        try:
            status = process.wait(timeout=BOUND)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {BOUND} s after signal {number}:\n{''.join(lines)}")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    reader.join(BOUND)
    stderr = "".join(lines)
    assert "Traceback" not in stderr and "Fatal Python error" not in stderr, stderr
    return status, stderr


@pytest.fixture(scope="module")
def long_input(tmp_path_factory) -> Path:
    """20 copies of the demo test file: more than two of fstcrf tag's batches."""
    path = tmp_path_factory.mktemp("interrupts") / "long.txt"
    path.write_text(Path(TEST).read_text() * 20)
    return path


def tagged_prefix(kept: Path, model: Path, source: Path, options: list) -> int:
    """The sentences of ``kept``, checked to be the first ones of the whole tagging of
    ``source`` (made here, with nothing stuck)."""
    whole = kept.with_name("whole.txt")
    assert main(["-q", "tag", str(model), str(source), "-o", str(whole), *options]) == 0
    text, reference = kept.read_text(), whole.read_text()
    assert reference.startswith(text) and (text == "" or text.endswith("\n\n"))
    return text.count("\n\n")


@pytest.mark.parametrize(
    "fault, number, stuck",
    [
        ("worker:3", signal.SIGTERM, "fstcrf_"),
        ("worker:3", signal.SIGINT, "fstcrf_"),
        ("writer:2", signal.SIGINT, "fstcrf-write"),
    ],
    ids=["worker-SIGTERM", "worker-SIGINT", "writer-SIGINT"],
)
def test_tag_keeps_the_sentences_written_before_a_thread_got_stuck(
    demo_chunker, long_input, tmp_path, fault, number, stuck
):
    output = tmp_path / "out.txt"
    status, stderr = run_interrupted(["-q", "tag", demo_chunker, long_input, "-o", output], fault, number)
    assert status == 130
    sentences = tagged_prefix(output, demo_chunker, long_input, [])
    assert sentences > 0 and f"the first {sentences} sentences were tagged and written" in stderr
    assert f"stuck in their work: {stuck}" in stderr


def test_the_cascade_of_a_composed_model_ends_with_a_stuck_worker(demo_joint, long_input, tmp_path):
    output = tmp_path / "out.txt"
    arguments = ["-q", "tag", demo_joint, long_input, "--mode", "cascade", "-o", output]
    status, stderr = run_interrupted(arguments, "worker:3", signal.SIGTERM)
    assert status == 130
    tagged_prefix(output, demo_joint, long_input, ["--mode", "cascade"])


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_train_writes_the_weights_it_has_when_a_worker_is_stuck(tmp_path, number):
    model = tmp_path / "m.model"
    status, stderr = run_interrupted(["train", TRAIN, "--max-iter", 1000, "-o", model], "worker:20", number)
    assert status == 0 and "interrupted; kept the weights of iteration" in stderr
    assert load_any(model).interrupted_


def test_train_stopped_before_its_first_iteration_writes_no_model(tmp_path):
    model = tmp_path / "m.model"
    status, stderr = run_interrupted(["train", TRAIN, "--max-iter", 1000, "-o", model], "worker:1", signal.SIGINT)
    assert status == 130 and "interrupted before the first iteration ended; no model written" in stderr
    assert not model.exists()


def test_bandit_training_writes_its_weights_when_the_partner_is_stuck(tmp_path):
    model = tmp_path / "m.model"
    arguments = ["train", TRAIN, "--algorithm", "bandit", "--max-iter", 1000, "--threads", 2, "-o", model]
    status, stderr = run_interrupted(arguments, "partner", signal.SIGTERM)
    assert status == 0 and "interrupted" in stderr and "fstcrf-partner" in stderr
    assert load_any(model).interrupted_


def test_joint_training_writes_the_weights_it_has_when_a_worker_is_stuck(demo_joint, tmp_path):
    folder = Path(demo_joint).parent
    model = tmp_path / "joint.model"
    arguments = ["compose", folder / "pos.model", folder / "chunk.model", "--train", TRAIN, "-o", model]
    status, stderr = run_interrupted(arguments, "worker:20", signal.SIGINT)
    assert status == 0 and "interrupted; kept the weights of joint iteration" in stderr
    assert load_any(model).components  # written whole


@pytest.mark.parametrize(
    "command, number",
    [
        (["calibrate", "{model}", "{input}", "-o", "{folder}/calibrated.model"], signal.SIGTERM),
        (["eval", "{model}", "{input}"], signal.SIGINT),
        (["view", "{model}", "{input}", "-o", "{folder}/page.html"], signal.SIGTERM),
    ],
    ids=["calibrate", "eval", "view"],
)
def test_a_command_with_a_stuck_worker_ends_without_output(demo_chunker, long_input, tmp_path, command, number):
    # the long input: a batch of a few sentences stays on the calling thread (useful_threads)
    arguments = [part.format(model=demo_chunker, input=long_input, folder=tmp_path) for part in command]
    status, stderr = run_interrupted(arguments, "worker:1", number)
    assert status == 130 and "fstcrf: interrupted" in stderr
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a temporary file
