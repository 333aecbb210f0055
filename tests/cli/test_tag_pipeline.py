"""``fstcrf tag`` reading and writing in C in threads of their own: its output byte for
byte what the Python reader and writer (fstcrf.corpus.conll) give, for every kind of
model and decoding, malformed input included; and fstcrf.cli.pipeline's order, errors,
Ctrl-C and bounded look-ahead."""

import gc
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import fstcrf.cli.tag as tag_command
import fstcrf.corpus.scanned as scanned
from fstcrf.cli import main
from fstcrf.cli.pipeline import QUEUE_BATCHES, SignalGate, overlapped
from fstcrf.corpus.conll import conll_lines, iter_conll
from fstcrf.corpus.synthetic import DATA_DIR


def _python_lines(batch, columns, target):
    """What fstcrf tag wrote before its writer moved to C."""
    return "".join(
        conll_lines(batch.sentences, batch.trailing_docstart_lines, columns, batch.separator or " ", target)
    ).encode("utf-8")


def _odd_text(separator: str = " ") -> bytes:
    """The demo test set with CRLF lines, runs of spaces and tabs, blank lines holding
    spaces, -DOCSTART- lines, UTF-8 words and a byte order mark."""
    lines = (DATA_DIR / "demo_test.txt").read_text().splitlines()
    out = []
    for number, line in enumerate(lines):
        fields = line.split()
        if not fields:
            out.append(" \r" if number % 3 else "")
            # not at the end: a last batch of -DOCSTART- lines alone fails composed models'
            # --entity-probabilities, whichever reader reads it
            if number % 7 == 0 and number < len(lines) - 10:
                out += [separator.join(["-DOCSTART-", "-X-", "O"]), ""]
            continue
        if number % 5 == 0:
            fields[0] += "é"
        if separator == " ":
            gap = [" ", "\t", "  \t"][number % 3]
            out.append(gap.join(fields) + ("\r" if number % 2 else ""))
        else:
            out.append(separator.join(fields))
    return ("\ufeff" + "\n".join(out) + "\n").encode("utf-8")


def _tag_both_ways(
    monkeypatch, tmp_path, arguments: list[str], text: bytes, capsysbinary, to_stdout: bool = False
) -> list:
    """(exit status, output bytes, standard error) of fstcrf tag with ARGUMENTS on TEXT
    (to a file, or to standard output), read and written in C, then by the Python reader
    and writer."""
    source = tmp_path / "in.txt"
    source.write_bytes(text)
    results = []
    for way in ("c", "python"):
        if way == "python":
            monkeypatch.setattr(scanned, "iter_scanned", iter_conll)
            monkeypatch.setattr(scanned, "tagged_lines", _python_lines)
        output = tmp_path / f"{way}.txt"
        target = "-" if to_stdout else str(output)
        status = main(["-q", "tag", *arguments[:1], str(source), *arguments[1:], "-o", target])
        captured = capsysbinary.readouterr()
        results.append((status, captured.out if to_stdout else output.read_bytes(), captured.err))
    return results


@pytest.fixture(scope="module")
def consistency_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("consistency") / "consistency.model"
    assert (
        main(
            [
                "-q",
                "train",
                str(DATA_DIR / "demo_train.txt"),
                "--consistency",
                "--document-method",
                "consistency",
                "--max-iter",
                "3",
                "-o",
                str(path),
            ]
        )
        == 0
    )
    return path


@pytest.mark.parametrize(
    "model, options",
    [
        ("demo_chunker", []),
        ("demo_order2_chunker", []),
        pytest.param("demo_chunker", ["--grammar", "iob2"], marks=pytest.mark.pynini),
        ("demo_chunker", ["--marginals", "--entity-probabilities"]),
        ("demo_chunker", ["--nbest", "3"]),
        ("demo_joint", []),
        ("demo_joint", ["--mode", "joint", "--entity-probabilities"]),
        ("consistency_model", ["--nonlocal", "consistency", "--sweeps", "2", "--seed", "4"]),
    ],
)
@pytest.mark.parametrize("batch_tokens", [7, 20_000])
def test_tag_writes_what_the_python_reader_and_writer_wrote(
    request, monkeypatch, tmp_path, capsysbinary, model, options, batch_tokens
):
    monkeypatch.setattr(tag_command, "TAG_BATCH_TOKENS", batch_tokens)
    path = str(request.getfixturevalue(model))
    c, python = _tag_both_ways(monkeypatch, tmp_path, [path, *options], _odd_text(), capsysbinary)
    assert c == python
    assert c[0] == 0 and c[1].count(b"\n") > 1000


def test_a_tab_separated_file_is_written_alike(monkeypatch, tmp_path, capsysbinary, demo_chunker):
    c, python = _tag_both_ways(
        monkeypatch, tmp_path, [str(demo_chunker), "--separator", "tab"], _odd_text("\t"), capsysbinary
    )
    assert c == python and c[0] == 0


@pytest.mark.parametrize(
    "damage",
    [
        lambda lines: lines.insert(400, b"only two"),  # a field count
        lambda lines: lines.insert(401, b"a \xff b"),  # a byte that is not UTF-8
        lambda lines: lines.insert(0, b"a b c d e"),  # a first line that fits no layout
    ],
)
def test_a_malformed_line_stops_tagging_after_the_batches_before_it(
    monkeypatch, tmp_path, capsysbinary, demo_chunker, damage
):
    monkeypatch.setattr(tag_command, "TAG_BATCH_TOKENS", 50)
    lines = _odd_text().split(b"\n")
    damage(lines)
    c, python = _tag_both_ways(monkeypatch, tmp_path, [str(demo_chunker)], b"\n".join(lines), capsysbinary, True)
    assert c == python
    assert c[0] != 0 and b"in.txt:" in c[2]
    assert (len(c[1]) > 1000) == (lines[0] != b"a b c d e")  # the batches before the bad line


def test_items_are_finished_in_order_with_their_results():
    finished = []
    overlapped(range(100), lambda item: item * item, lambda item, result: finished.append((item, result)))
    assert finished == [(item, item * item) for item in range(100)]


def _items_failing_at(number: int):
    yield from range(number)
    raise ValueError("unreadable")


@pytest.mark.parametrize("stage", ["read", "work", "finish"])
def test_an_error_is_raised_once_the_items_before_it_are_finished(stage):
    finished = []

    def work(item):
        if stage == "work" and item == 5:
            raise ValueError("undecodable")
        return item

    def finish(item, result):
        if stage == "finish" and item == 5:
            raise ValueError("unwritable")
        finished.append(item)

    items = _items_failing_at(5) if stage == "read" else range(20)
    with pytest.raises(ValueError):
        overlapped(items, work, finish)
    assert finished == list(range(5))


def test_ctrl_c_while_tagging_finishes_the_items_already_tagged():
    finished = []

    def work(item):
        if item == 7:
            raise KeyboardInterrupt
        return item

    with pytest.raises(KeyboardInterrupt):
        overlapped(range(1000), work, lambda item, result: finished.append(item))
    assert finished == list(range(7))


def test_the_reader_stays_a_few_items_ahead_and_collections_are_restored():
    produced = []
    lead = []
    thresholds = gc.get_threshold()

    def items():
        for item in range(200):
            produced.append(item)
            yield item

    def work(item):
        lead.append(len(produced) - item)
        return threading.current_thread() is threading.main_thread()

    results = []
    overlapped(items(), work, lambda item, result: results.append(result))
    assert max(lead) <= QUEUE_BATCHES + 2
    assert all(results)  # work ran in the calling thread
    assert gc.get_threshold() == thresholds


# -- the preparing stage (features extracted beside decoding) ---------------------------


def test_prepared_items_are_worked_on_and_finished_in_order():
    finished = []
    threads = set()

    def prepare(item):
        threads.add(threading.current_thread() is threading.main_thread())
        return item + 1000

    overlapped(range(100), lambda ready: ready * 2, lambda item, result: finished.append((item, result)), prepare)
    assert finished == [(item, 2 * (item + 1000)) for item in range(100)]
    assert threads == {False}  # prepared off the calling thread


@pytest.mark.parametrize("stage", ["read", "prepare", "work", "finish"])
def test_with_a_preparer_an_error_is_raised_once_the_items_before_it_are_finished(stage):
    finished = []

    def fail_at_five(where):
        def step(item):
            if stage == where and item == 5:
                raise ValueError(where)
            return item

        return step

    def finish(item, result):
        fail_at_five("finish")(item)
        finished.append((item, result))

    items = _items_failing_at(5) if stage == "read" else range(20)
    with pytest.raises(ValueError, match=stage):
        overlapped(items, fail_at_five("work"), finish, fail_at_five("prepare"))
    assert finished == [(item, item) for item in range(5)]


def test_ctrl_c_while_a_batch_is_prepared_finishes_the_items_already_worked_on():
    finished = []
    worked = threading.Event()

    def prepare(item):
        if item == 8:
            worked.wait(10)  # item 7 reached work: Ctrl-C comes while this one is prepared
        return item

    def work(item):
        if item == 7:
            worked.set()
            raise KeyboardInterrupt
        return item

    with pytest.raises(KeyboardInterrupt):
        overlapped(range(1000), work, lambda item, result: finished.append(item), prepare)
    assert finished == list(range(7))


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_batch_is_decoded_stops_at_once(number):
    finished = []
    before = [signal.getsignal(held) for held in (signal.SIGINT, signal.SIGTERM)]

    def work(item):
        if item == 7:
            signal.raise_signal(number)  # its handler runs here, before work goes on
            raise AssertionError("the signal did not stop the work in hand")
        return item

    with pytest.raises(KeyboardInterrupt):
        overlapped(range(1000), work, lambda item, result: finished.append(item), lambda item: item)
    assert finished == list(range(7))
    assert [signal.getsignal(held) for held in (signal.SIGINT, signal.SIGTERM)] == before


@pytest.mark.parametrize("prepared", [False, True])
def test_a_signal_while_the_stages_wait_is_held_until_they_are_at_rest(prepared):
    # the reader is stalled at item 5, so the main thread waits on a queue when the
    # signal comes: the handler only notes it, and KeyboardInterrupt is raised after
    # the finished items are written and the handlers of before are back
    finished, waiting = [], threading.Event()

    def items():
        yield from range(5)
        waiting.set()
        threading.Event().wait(30)  # never resumed: a reader blocked on input
        yield 5

    def send_once_waiting():
        waiting.wait(10)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=send_once_waiting)
    sender.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        overlapped(
            items(),
            lambda item: item,
            lambda item, result: finished.append(item),
            (lambda item: item) if prepared else None,
        )
    sender.join()
    assert finished == list(range(5)) and time.monotonic() - started < 10
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_gate_raises_only_while_open_and_outside_the_main_thread_changes_nothing():
    gate = SignalGate()
    gate(signal.SIGTERM, None)  # closed: noted
    with gate.opened(), pytest.raises(KeyboardInterrupt):
        gate(signal.SIGINT, None)
    assert gate.received == [signal.SIGTERM, signal.SIGINT] and not gate.open
    handlers = []

    def elsewhere():
        with SignalGate.installed():
            handlers.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert handlers == [signal.default_int_handler]


STRESS = """
import os, random, signal, sys, threading
from fstcrf.cli.pipeline import overlapped
rng = random.Random(int(sys.argv[1]))
for round in range(int(sys.argv[2])):
    finished = []
    timer = threading.Timer(rng.uniform(0.0, 0.03), os.kill, (os.getpid(), signal.SIGINT))
    def finish(item, result):
        sum(range(2000))  # a writer slower than the work: the main thread waits on a full queue
        finished.append(item)
    try:
        timer.start()
        overlapped(iter(range(10**6)), lambda x: x, finish, (lambda x: x) if round % 2 else None)
    except KeyboardInterrupt:
        pass
    timer.join()
    assert finished == list(range(len(finished))), round
print("done")
"""


@pytest.mark.slow
def test_signals_at_random_moments_never_leave_the_pipeline_waiting():
    # Ctrl-C at random moments of 100 short runs (most land while the main thread
    # is inside a queue's put or get): every run ends, its finished items in order
    result = subprocess.run([sys.executable, "-c", STRESS, "1", "100"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "done", result.stderr


def test_the_preparer_and_the_reader_stay_a_few_items_ahead():
    produced, prepared, lead = [], [], []

    def items():
        for item in range(200):
            produced.append(item)
            yield item

    def prepare(item):
        prepared.append(item)
        return item

    def work(item):
        lead.append((len(prepared) - item, len(produced) - item))
        return item

    overlapped(items(), work, lambda item, result: None, prepare)
    assert max(ahead for ahead, _ in lead) <= QUEUE_BATCHES + 2
    assert max(ahead for _, ahead in lead) <= 2 * QUEUE_BATCHES + 4


def test_phases_of_other_threads_are_not_timed(monkeypatch):
    import fstcrf.phases as phases

    timer = phases.PhaseTimer()
    monkeypatch.setattr(phases, "_TIMER", timer)

    def in_a_thread():
        with phases.phase("features"):
            pass

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    with phases.phase("decode"):
        pass
    assert set(timer.calls) == {"decode"}


@pytest.mark.parametrize(
    "options, prepared",
    [([], True), (["--marginals"], False), (["--nbest", "2"], False), (["--threads", "1"], True)],
)
def test_best_labels_alone_are_encoded_in_the_features_thread(monkeypatch, tmp_path, demo_chunker, options, prepared):
    from fstcrf.model.chain import ChainCRF

    threads = []
    encode = ChainCRF.encode

    def recording(self, sentences):
        threads.append(threading.current_thread().name)
        return encode(self, sentences)

    monkeypatch.setattr(ChainCRF, "encode", recording)
    monkeypatch.setattr(tag_command, "TAG_BATCH_TOKENS", 50)
    output = tmp_path / "out.txt"
    assert main(["-q", "tag", str(demo_chunker), str(DATA_DIR / "demo_test.txt"), *options, "-o", str(output)]) == 0
    assert len(threads) > 10  # a batch at a time
    assert set(threads) == ({"fstcrf-prepare"} if prepared else {threading.main_thread().name})
    monkeypatch.setattr(ChainCRF, "encode", encode)
    expected = tmp_path / "expected.txt"
    monkeypatch.setattr(tag_command, "TAG_BATCH_TOKENS", 10**9)  # one batch: what the batches must add up to
    assert main(["-q", "tag", str(demo_chunker), str(DATA_DIR / "demo_test.txt"), *options, "-o", str(expected)]) == 0
    assert output.read_bytes() == expected.read_bytes()
