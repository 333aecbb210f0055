"""Reading, tagging and writing overlapped: ``fstcrf tag`` reads the next batches in
one thread and writes the finished ones in another while this thread tags (reading,
decoding and writing run in C with the GIL released, so the stages share the
machine's cores).  Queues of a few batches keep memory bounded."""

from __future__ import annotations

import gc
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any

from fstcrf.phases import phase

#: Batches each queue holds: the reader is at most this far ahead of tagging, the writer this far behind.
QUEUE_BATCHES = 2

#: Seconds a blocked reader waits before it looks again whether it should stop.
STOP_POLL = 0.1

#: Seconds the tagging thread waits, once it stops, for the reader to see the stop (a
#: reader waiting for input on a pipe is left behind; it holds no lock shutdown needs).
READER_JOIN_SECONDS = 1.0

#: The garbage collector's first threshold while batches flow (Python's default is 700).
#: Batches are lists and strings without cycles, which reference counting frees; at the
#: default, collections that walk the batches in flight cost about a tenth of tagging.
COLLECTION_THRESHOLD = 20_000

_END = object()


class _Failure:
    """An exception the reader met, passed on in order."""

    def __init__(self, error: BaseException):
        self.error = error


def overlapped(items: Iterable, work: Callable[[Any], Any], finish: Callable[[Any, Any], None]) -> None:
    """finish(item, work(item)) for each of ``items`` in order: the items produced in a
    reader thread, work done in this thread and finish in a writer thread.

    An exception of any stage is raised here once the items before it are finished
    (the reader's when its place in the order is reached); on any exception, Ctrl-C
    included, the reader stops and the items already worked on are finished first.
    Phase "read" is the time this thread waits for the reader, "write" the time it
    waits for the writer (fstcrf.phases, which times this thread only)."""
    stop = threading.Event()
    inbox: queue.Queue = queue.Queue(QUEUE_BATCHES)
    outbox: queue.Queue = queue.Queue(QUEUE_BATCHES)
    failed: list[BaseException] = []

    def read() -> None:
        try:
            for item in items:
                if not _put(inbox, item, stop):
                    return
            _put(inbox, _END, stop)
        except BaseException as error:  # handed to the main thread, in order
            _put(inbox, _Failure(error), stop)

    def write() -> None:
        while (entry := outbox.get()) is not _END:
            if failed:
                continue  # drain, so that the main thread never blocks on a full queue
            try:
                finish(*entry)
            except BaseException as error:  # raised in the main thread
                failed.append(error)

    reader = threading.Thread(target=read, name="fstcrf-read", daemon=True)
    writer = threading.Thread(target=write, name="fstcrf-write", daemon=True)
    thresholds = gc.get_threshold()
    gc.set_threshold(max(COLLECTION_THRESHOLD, thresholds[0]), *thresholds[1:])
    reader.start()
    writer.start()
    try:
        while not failed:
            with phase("read"):
                entry = inbox.get()
            if entry is _END:
                break
            if isinstance(entry, _Failure):
                raise entry.error
            result = work(entry)
            with phase("write"):
                outbox.put((entry, result))
    finally:
        stop.set()
        reader.join(READER_JOIN_SECONDS)
        with phase("write"):
            outbox.put(_END)
            writer.join()
        gc.set_threshold(*thresholds)
    if failed:
        raise failed[0]


def _put(box: queue.Queue, entry, stop: threading.Event) -> bool:
    """Put entry in box, waiting for room unless ``stop`` is set (False then)."""
    while not stop.is_set():
        try:
            box.put(entry, timeout=STOP_POLL)
            return True
        except queue.Full:
            pass
    return False
