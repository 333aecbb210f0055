"""``fstcrf tag MODEL INPUT... --dask SPEC``: the inputs -- many files, or one large
file -- cut into shards of whole sentences (several per worker, so that a slow
shard does not hold the others up), each tagged on a worker that loads the
model once, and the tagged text written in input order as the shards finish
(the output file is replaced atomically at the end)."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

from fstcrf.files import write_atomically
from fstcrf.distributed.dictionary import worker_name
from fstcrf.distributed.shards import Shard, partition, read_shard

#: Shards per worker: enough that the workers stay busy to the end.
SHARDS_PER_WORKER = 4

_loaded: dict[tuple, object] = {}


def _model(path: str, threads: int):
    """The model at ``path``, loaded once per worker process (again if the file changes)."""
    from fstcrf.model.chain import load_model

    status = os.stat(path)
    key = (os.path.realpath(path), status.st_mtime_ns, status.st_size)
    if key not in _loaded:
        _loaded.clear()
        _loaded[key] = load_model(path)
    model = _loaded[key]
    model.threads = threads
    return model


def tag_shard(
    model_path: str,
    shard: Shard,
    columns,
    allow_missing: Sequence[str],
    separator: str | None,
    threads: int,
    options: dict,
) -> str:
    """Worker: the CoNLL text of a shard's sentences with the predicted column appended
    (``options``: keyword arguments of ``ChainCRF.predict``)."""
    from fstcrf.corpus.conll import write_conll

    model = _model(model_path, threads)
    corpus = read_shard(shard, columns, separator, worker_name(), allow_missing)
    text = io.StringIO()
    write_conll(corpus, text, extra_columns=[model.predict(corpus, **options)] if corpus.sentences else None)
    return text.getvalue()


def tag_on_dask(
    client,
    model_path: str,
    inputs: Sequence[str],
    output: str,
    columns=None,
    allow_missing: Sequence[str] = (),
    separator: str | None = None,
    threads: int = 1,
    options: dict | None = None,
    shards: int | None = None,
) -> int:
    """Tag ``inputs`` (files, read one after another) with the model at ``model_path``
    on the workers of ``client`` into ``output`` (a path, or "-"); returns the number
    of shards.  ``columns``, ``allow_missing`` and ``separator`` are
    :func:`~fstcrf.corpus.conll.read_conll`'s."""
    parts = partition(list(inputs), shards or SHARDS_PER_WORKER * len(client.nthreads()))
    path = os.path.realpath(model_path)
    futures = [
        client.submit(
            tag_shard, path, shard, columns, tuple(allow_missing), separator, threads, options or {}, pure=False
        )
        for shard in parts
    ]

    def write(stream) -> None:
        for index, future in enumerate(futures):
            stream.write(future.result().encode("utf-8"))
            futures[index] = None  # its text may go

    write_atomically(output, write)
    return len(parts)
