"""Models for the server's tests, trained once per session on the demo corpus: a
three-level pipeline (part of speech, chunks reading them, entities reading the
chunks) composed into one model, and a two-stage tagger; and a server on a free
loopback port, in a process of its own, that a test starts and always stops."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fstcrf.cli import main

DEMO_TRAIN = Path(__file__).resolve().parents[2] / "fstcrf" / "data" / "demo_train.txt"

#: The pipeline corpus's columns: the demo corpus's, and entities (its noun phrases).
PIPELINE_COLUMNS = "word,pos,chunk,ner"

#: The entity model's template: it reads the chunk labels at offset 0 only, as joint decoding asks.
NER_TEMPLATE = "bias\nword[0]\nchunk[0]\nchunk[0]|word[0]\nchunk[0]|word[-1]\n"


def pipeline_corpus(path: Path) -> Path:
    """The demo corpus with a fourth column, ner: its noun phrases as ENT entities."""
    lines = []
    for line in DEMO_TRAIN.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if fields:
            chunk = fields[2]
            fields.append(chunk.replace("NP", "ENT") if chunk.endswith("NP") else "O")
        lines.append(" ".join(fields))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _train(corpus: Path, output: Path, *options: str) -> Path:
    assert main(["-q", "train", str(corpus), "--columns", PIPELINE_COLUMNS, *options, "-o", str(output)]) == 0
    return output


@pytest.fixture(scope="session")
def pipeline_folder(tmp_path_factory) -> Path:
    """A folder holding the pipeline corpus (train.txt), its three models and their
    composition pipeline.model (pos -> chunk -> ner, 3 iterations each)."""
    folder = tmp_path_factory.mktemp("pipeline")
    corpus = pipeline_corpus(folder / "train.txt")
    (folder / "ner.txt").write_text(NER_TEMPLATE, encoding="utf-8")
    pos = _train(corpus, folder / "pos.model", "--target", "pos", "--template", "pos", "--max-iter", "3")
    chunk = _train(
        corpus,
        folder / "chunk.model",
        *("--target", "chunk", "--reads", "pos", "--template", "chunking-reads-pos", "--max-iter", "3"),
    )
    ner = _train(
        corpus,
        folder / "ner.model",
        *("--target", "ner", "--reads", "chunk", "--template", str(folder / "ner.txt"), "--max-iter", "3"),
    )
    assert main(["-q", "compose", str(pos), str(chunk), str(ner), "-o", str(folder / "pipeline.model")]) == 0
    return folder


@pytest.fixture(scope="session")
def two_stage_model(pipeline_folder) -> Path:
    """A two-stage entity tagger (train --consistency) on the pipeline corpus."""
    return _train(
        pipeline_folder / "train.txt",
        pipeline_folder / "two_stage.model",
        *("--target", "ner", "--template", "ner", "--max-iter", "3", "--threads", "1"),
        *("--consistency", "--jackknife-folds", "2"),
    )


class ServerProcess:
    """``fstcrf serve`` (or another serving ``command``, such as ``view --edit``) in a
    process of its own on a free loopback port: its URL, its process and what it has logged."""

    def __init__(
        self, arguments: list[str], log: Path, environment: dict | None = None, command: tuple[str, ...] = ("serve",)
    ):
        self.log_path = log
        self.log = open(log, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fstcrf.cli", *command, "--port", "0", *arguments],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(environment or {})},
        )
        self.url = ""

    def wait_until_listening(self, timeout: float = 60.0) -> str:
        """The server's URL, once it has logged it (a failure if it exits or takes longer)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(r"on (http://[^ ]+?)/ ", self.logged())
            if found:
                self.url = found.group(1)
                return self.url
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited with {self.process.returncode}:\n{self.logged()}")
            time.sleep(0.05)
        raise AssertionError(f"the server did not start within {timeout} s:\n{self.logged()}")

    def logged(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def signal(self, number: int) -> None:
        self.process.send_signal(number)

    def wait(self, timeout: float = 60.0) -> int:
        """The exit status, once the process has ended (a failure after ``timeout`` seconds)."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the server did not exit within {timeout} s:\n{self.logged()}") from None

    def stop(self) -> None:
        """Kill the process if it still runs, and reap it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        self.log.close()


@pytest.fixture
def start_server(tmp_path):
    """A function that starts ``fstcrf serve ARGUMENTS`` (a ServerProcess; ``command``
    another serving command); every server it started is killed at the end of the test,
    whatever happened."""
    started = []

    def start(*arguments: str, environment: dict | None = None, command: tuple[str, ...] = ("serve",)) -> ServerProcess:
        server = ServerProcess(list(arguments), tmp_path / f"server{len(started)}.log", environment, command)
        started.append(server)
        server.wait_until_listening()
        return server

    yield start
    for server in started:
        server.stop()
