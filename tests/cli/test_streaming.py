"""Streaming: fstcrf.corpus.conll.iter_conll and ``fstcrf tag`` over standard input, several files,
batches, Ctrl-C/SIGTERM and closed pipes."""

import os
import select
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings, strategies as st

from fstcrf.cli import main
from fstcrf.corpus.conll import iter_conll, read_conll
from fstcrf.errors import ConllFormatError
from fstcrf.corpus.synthetic import DATA_DIR

TEST = str(DATA_DIR / "demo_test.txt")


@pytest.fixture
def model_path(demo_chunker):
    return demo_chunker


@st.composite
def conll_texts(draw):
    """CoNLL text of a few sentences of 1-4 tokens, some after -DOCSTART- lines."""
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            lines += ["-DOCSTART- -X- O", ""]
        for _ in range(draw(st.integers(1, 4))):
            lines.append(f"w{draw(st.integers(0, 9))} T{draw(st.integers(0, 2))}")
        lines.append("")
    if draw(st.booleans()):
        lines += ["-DOCSTART- -X- O", ""]
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(text=conll_texts(), batch_tokens=st.integers(1, 6), whole_documents=st.booleans())
def test_batches_hold_the_sentences_read_whole_in_order(tmp_path_factory, text, batch_tokens, whole_documents):
    path = tmp_path_factory.mktemp("batches") / "in.txt"
    path.write_text(text)
    whole = read_conll(path)
    batches = list(iter_conll(path, batch_tokens=batch_tokens, whole_documents=whole_documents))
    assert [s for batch in batches for s in batch.sentences] == whole.sentences
    assert batches[-1].trailing_docstart_lines == whole.trailing_docstart_lines
    for batch in batches[:-1]:
        assert batch.num_tokens >= batch_tokens
    if whole_documents:  # the last batch may hold only trailing -DOCSTART- lines
        assert all(batch.sentences[0].document_start for batch in batches[1:] if batch.sentences)


def test_a_bad_line_of_a_stream_is_named_by_its_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"a B\n\nb C\n\nc \xff\n")
    batches = iter_conll(open(path, "rb"), batch_tokens=1, name="standard input")
    assert next(batches).num_tokens == 1  # the batches before the bad line's
    with pytest.raises(ConllFormatError, match=r"standard input:5: expected UTF-8"):
        next(batches)


def _tag(args, **kwargs):
    return subprocess.run([sys.executable, "-m", "fstcrf.cli", "-q", "tag", *args], capture_output=True, **kwargs)


def test_standard_input_and_several_files_tag_as_their_concatenation(model_path, tmp_path):
    both = tmp_path / "both.txt"
    both.write_text(open(TEST).read() * 2)
    assert main(["-q", "tag", str(model_path), str(both), "-o", str(tmp_path / "whole.txt")]) == 0
    assert main(["-q", "tag", str(model_path), TEST, TEST, "-o", str(tmp_path / "files.txt")]) == 0
    piped = _tag([str(model_path), "-", TEST], input=open(TEST, "rb").read())
    assert piped.returncode == 0, piped.stderr
    expected = (tmp_path / "whole.txt").read_bytes()
    assert (tmp_path / "files.txt").read_bytes() == expected
    assert piped.stdout == expected


def test_batch_boundaries_do_not_change_the_output(model_path, tmp_path, monkeypatch):
    assert main(["-q", "tag", str(model_path), TEST, "-o", str(tmp_path / "one.txt")]) == 0
    monkeypatch.setattr("fstcrf.cli.tag.TAG_BATCH_TOKENS", 7)
    assert main(["-q", "tag", str(model_path), TEST, "-o", str(tmp_path / "many.txt"), "--marginals"]) == 0
    one = (tmp_path / "one.txt").read_text().splitlines()
    many = (tmp_path / "many.txt").read_text().splitlines()
    assert [line.rsplit(" ", 1)[0] if line else line for line in many] == one


@pytest.mark.slow
def test_sigterm_while_the_reader_waits_for_input_ends_cleanly(model_path, tmp_path):
    # the reader thread is blocked in a read of standard input (less than a block
    # arrived, the pipe is open) when the signal comes: shutdown must not wait for it
    process = subprocess.Popen(
        [sys.executable, "-m", "fstcrf.cli", "-q", "tag", str(model_path), "-", "-o", str(tmp_path / "out.txt")],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdin.write(open(TEST, "rb").read()[:4000])
    process.stdin.flush()
    time.sleep(2.0)  # start-up, then the reader waits for the rest of its block
    process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    stderr = process.stderr.read()
    process.stdin.close()
    process.kill()
    assert process.wait() == 130, stderr
    assert b"Fatal Python error" not in stderr and b"Traceback" not in stderr


@pytest.mark.slow
def test_sigterm_keeps_every_finished_sentence(model_path, tmp_path):
    out = tmp_path / "out.txt"
    text = open(TEST, "rb").read()
    process = subprocess.Popen(
        [sys.executable, "-m", "fstcrf.cli", "-q", "tag", str(model_path), "-", "-o", str(out)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    copies = 0
    deadline = time.monotonic() + 60
    while not any(name.startswith(".out.txt.") and (tmp_path / name).stat().st_size for name in os.listdir(tmp_path)):
        process.stdin.write(text)  # more than a batch, so some output is written
        process.stdin.flush()
        copies += 1
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert b"Traceback" not in stderr and b"were tagged and written" in stderr
    written = out.read_text()
    assert written.endswith("\n\n")  # whole sentences only
    reference = tmp_path / "reference.txt"
    (tmp_path / "copies.txt").write_bytes(text * copies)
    assert main(["-q", "tag", str(model_path), str(tmp_path / "copies.txt"), "-o", str(reference)]) == 0
    assert reference.read_text().startswith(written) and len(written) > 0
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_a_closed_pipe_ends_quietly(model_path, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text(open(TEST).read() * 20)
    process = subprocess.Popen(
        [sys.executable, "-m", "fstcrf.cli", "-q", "tag", str(model_path), str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 141
    assert b"Traceback" not in stderr


def test_standard_input_is_read_once(model_path, capsys):
    assert main(["-q", "tag", str(model_path), "-", "-"]) == 2
    assert "read once" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="a stalled pipe ends a batch on POSIX only")
def test_a_program_that_writes_a_sentence_and_waits_gets_its_tags(model_path, tmp_path):
    # fstcrf tag as a coprocess: each sentence's tags come back while standard input stays
    # open, the same as tagging the file, and the process ends when input does
    reference = tmp_path / "reference.txt"
    assert main(["-q", "tag", str(model_path), TEST, "-o", str(reference)]) == 0
    sentences = open(TEST, "rb").read().split(b"\n\n")[:4]
    assert _coprocess_answers(model_path, sentences) == reference.read_bytes().split(b"\n\n")[:4]


def _coprocess_answers(model_path, sentences: list[bytes]) -> list[bytes]:
    """What ``fstcrf tag MODEL -`` answers to each sentence written after the last answer."""
    process = subprocess.Popen(
        [sys.executable, "-m", "fstcrf.cli", "-q", "tag", str(model_path), "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    answers = []
    try:
        for sentence in sentences:
            process.stdin.write(sentence + b"\n\n")
            process.stdin.flush()
            answer = b""
            while not answer.endswith(b"\n\n"):
                ready, _, _ = select.select([process.stdout], [], [], 30)
                assert ready, f"no tags 30 s after the sentence; got {answer!r}"
                piece = os.read(process.stdout.fileno(), 1 << 16)
                assert piece, process.stderr.read()
                answer += piece
            answers.append(answer[:-2])
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
    return answers


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="a stalled pipe ends a batch on POSIX only")
def test_mbr_of_sentences_that_come_one_by_one_uses_the_stream_s_threshold(model_path, tmp_path):
    # a one-sentence batch is not searched for its own threshold: it takes half the
    # expected F1 of what the stream has chosen so far (1/2 for the first)
    from fstcrf.engine.mbr import StreamThreshold
    from fstcrf.model import ChainCRF

    model = ChainCRF.load(model_path)
    model.decoding_ = "mbr"
    path = tmp_path / "mbr.model"
    model.save(path)
    text = open(TEST, "rb").read().split(b"\n\n")[:6]
    corpus = read_conll(TEST, columns="word,pos,chunk")
    stream, expected = StreamThreshold(), []
    for sentence in corpus.sentences[:6]:
        labels = model.predict_mbr([sentence], threshold=stream.threshold(), stream=stream)[0]
        expected.append(
            b"\n".join(f"{w} {p} {c} {y}".encode() for w, p, c, y in zip(*sentence.columns.values(), labels))
        )
    assert _coprocess_answers(path, text) == expected
