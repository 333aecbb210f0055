"""Model files: the container, one self-describing binary file per model,
written atomically.  What goes in it is the model's business
(:meth:`fstcrf.model.ChainCRF.to_payload`, :class:`fstcrf.model.compose.JointModel`):
this module knows bytes, arrays and checksums, never an estimator.

    magic        16 bytes  b"FSTCRF MODEL\\r\\n\\x1a\\n"
    version      uint32    FORMAT_VERSION
    header size  uint64    H
    data size    uint64    A
    header       H bytes   UTF-8 JSON (padded with spaces): labels, order,
                           topology, template, training parameters and
                           history, and the name, dtype, shape and offset in
                           the data of each array
    data         A bytes   the arrays, little-endian, 8-byte aligned: the
                           weights, the feature dictionary and the predicate
                           dictionary (64-bit keys, names as one UTF-8 text
                           and offsets; see FeatureExtractor.to_payload)
    digest       32 bytes  checksum of everything before it: four 64-bit
                           lanes of csrc/fstcrf_hashing.h's fh_checksum

All integers are little-endian.  :func:`read_container` first makes the
file's bytes the process's own (:func:`private_bytes`): a file of at most
MODEL_IN_MEMORY_BYTES (64 MiB; the environment variable
FSTCRF_MODEL_IN_MEMORY_BYTES overrides it) is read into memory, a larger one
is copied to an unlinked temporary file that is mapped.  A model in use thus
survives its file being replaced or truncated in place, which killed a
process that mapped the file itself (SIGBUS), and the digest is checked over
exactly the bytes that are used.  It checks magic, version, size and digest
before it reads anything else, and raises ModelFileError for any file that is
not an intact model of a version it knows (a file changed while it is read
fails the size or the digest check) or whose float arrays hold a NaN or an
infinity.  The arrays are then read-only views of those bytes: nothing is
rebuilt per predicate or per weight (load costs: docs/architecture.md,
"Loading").  Version 1 files (a SHA-256 digest, the predicate names in the
header) still load, by rebuilding the dictionary from the names;
:func:`fstcrf.model.compose.upgrade_model` rewrites one as the current version.  A joint model
(:mod:`fstcrf.model.compose`) and a two-stage tagger
(:mod:`fstcrf.document.two_stage`) use the same container with another "format".
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import struct
import tempfile

import numpy as np

from fstcrf.engine import kernel
from fstcrf.errors import FstcrfError, ModelFileError
from fstcrf.files import write_atomically

MAGIC = b"FSTCRF MODEL\r\n\x1a\n"
#: The header's "format": one model, a composition of models, or a two-stage tagger
#: (:class:`fstcrf.document.two_stage.TwoStageTagger`: two models, the second reading
#: document statistics of the first one's labels).
MODEL_KIND = "fstcrf-model"
JOINT_KIND = "fstcrf-joint"
TWO_STAGE_KIND = "fstcrf-two-stage"
#: What each kind of file is called in errors, and what loads it.
KIND_NAMES = {
    MODEL_KIND: "a single model (fstcrf.model.load_model reads it)",
    JOINT_KIND: "a joint model (from fstcrf compose; fstcrf.model.compose.load_joint reads it)",
    TWO_STAGE_KIND: "a two-stage tagger (from fstcrf train --consistency; fstcrf tag, eval, calibrate, info, "
    "dump and history, and fstcrf.document.two_stage.load_two_stage, read it)",
}
FORMAT_VERSION = 2
#: The first version, whose digest is SHA-256 and whose header holds the predicate names.
_SHA256_VERSION = 1
_PREAMBLE = struct.Struct("<16sIQQ")
_DIGEST_SIZE = 32
#: A model file of at most this many bytes is read into memory; a larger one is
#: copied to a private snapshot (see :func:`private_bytes`).
MODEL_IN_MEMORY_BYTES = 64 << 20
#: The environment variable that overrides MODEL_IN_MEMORY_BYTES (0: always a snapshot).
MODEL_IN_MEMORY_VARIABLE = "FSTCRF_MODEL_IN_MEMORY_BYTES"
#: Bytes copied at a time into a snapshot.
SNAPSHOT_BLOCK = 1 << 20
#: How the header of a file of :func:`write_container` starts, and how many of its bytes
#: :func:`file_kind` reads.
_KIND_PATTERN = re.compile(rb'\{"format": "([a-z-]+)"')
_KIND_PEEK_BYTES = 64


def write_container(path: str | os.PathLike, kind: str, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write a header and 1-D arrays as one model file (layout in the module doc), atomically."""
    table: dict[str, dict] = {}
    pieces: list[bytes | memoryview] = []
    offset = 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array).data.cast("B")
        padding = b"\0" * (-len(data) % 8)
        table[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset}
        pieces += [data, padding]
        offset += len(data) + len(padding)
    header = {"format": kind, **header, "arrays": table}
    header_bytes = json.dumps(header, ensure_ascii=False).encode("utf-8")
    header_bytes += b" " * (-(_PREAMBLE.size + len(header_bytes)) % 8)
    preamble = _PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(header_bytes), offset)

    def write(stream) -> None:
        """The pieces, then the checksum of them."""
        body = b"".join((preamble, header_bytes, *pieces))
        stream.write(body)
        stream.write(checksum(body))

    write_atomically(path, write)


def checksum(data) -> bytes:
    """The 32-byte digest of a version-2 file: fh_checksum of the bytes of ``data``."""
    lanes = np.empty(4, dtype="<u8")
    kernel.checksum(np.frombuffer(data, dtype=np.uint8), lanes)
    return lanes.tobytes()


#: dtypes an array of a model file may have.
_ARRAY_DTYPES = ("<f8", "<i8", "<i4", "<u8", "|u1")


def in_memory_limit() -> int:
    """The size in bytes up to which a model file is read into memory:
    ``$FSTCRF_MODEL_IN_MEMORY_BYTES`` if set, else MODEL_IN_MEMORY_BYTES."""
    text = os.environ.get(MODEL_IN_MEMORY_VARIABLE, "")
    if not text:
        return MODEL_IN_MEMORY_BYTES
    try:
        limit = int(text)
    except ValueError:
        limit = -1
    if limit < 0:
        raise FstcrfError(f"{MODEL_IN_MEMORY_VARIABLE} must be a number of bytes (an integer >= 0), got {text!r}")
    return limit


def private_bytes(path: str | os.PathLike, where: str):
    """The file's bytes as this process's own copy, which nothing can change or
    truncate: read into memory if the file has at most :func:`in_memory_limit`
    bytes, else a read-only map of a snapshot (an unlinked temporary file).  A
    file changed while it is read gives bytes that fail the size or checksum checks."""
    limit = in_memory_limit()
    try:
        with open(path, "rb", buffering=0) as stream:
            size = os.fstat(stream.fileno()).st_size
            if size <= limit:
                return _read_into_memory(stream, size)
            return _snapshot(stream, size, where)
    except ModelFileError:
        raise
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        raise ModelFileError(
            f"{where}: cannot read the model file: {getattr(error, 'strerror', None) or error}"
        ) from None


def _read_into_memory(stream, size: int):
    """The first ``size`` bytes of an unbuffered binary stream (fewer if it ends first),
    read into private anonymous memory: on transparent huge pages where the system
    offers them, which cuts the cost of first touching the memory about threefold."""
    if size == 0:
        return b""
    if hasattr(mmap, "MAP_ANONYMOUS"):
        memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    else:  # Windows: anonymous memory is the only kind of -1
        memory = mmap.mmap(-1, size)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        memory.madvise(mmap.MADV_HUGEPAGE)
    filled = 0
    with memoryview(memory) as view:
        while filled < size:
            count = stream.readinto(view[filled:])
            if not count:
                break
            filled += count
    return memory if filled == size else memory[:filled]


def _snapshot(stream, size: int, where: str):
    """The first ``size`` bytes of an unbuffered binary stream (fewer if it ends first),
    copied to an unlinked temporary file and mapped read-only (b"" if none)."""
    block = bytearray(min(size, SNAPSHOT_BLOCK))
    try:
        with tempfile.TemporaryFile() as snapshot, memoryview(block) as view:
            copied = 0
            while copied < size:
                count = stream.readinto(view[: min(len(block), size - copied)])
                if not count:
                    break
                snapshot.write(view[:count])
                copied += count
            snapshot.flush()
            return mmap.mmap(snapshot.fileno(), 0, access=mmap.ACCESS_READ) if copied else b""
    except OSError as error:
        raise ModelFileError(
            f"{where}: cannot copy the model file to a snapshot in {tempfile.gettempdir()}: {error.strerror or error}"
        ) from None


def read_container(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """The JSON header and the arrays of an intact model file (of any kind) whose
    float arrays are finite; the arrays are read-only views of :func:`private_bytes`."""
    where = os.fspath(path)
    raw = private_bytes(path, where)
    if raw[: len(MAGIC)] != MAGIC:
        if len(raw) < len(MAGIC) and MAGIC.startswith(raw[:]) and len(raw):
            raise ModelFileError(f"{where}: the model file is truncated ({len(raw)} bytes)")
        raise ModelFileError(f"{where}: not an fstcrf model file (it does not start with the fstcrf magic bytes)")
    if len(raw) < _PREAMBLE.size:
        raise ModelFileError(f"{where}: the model file is truncated ({len(raw)} bytes)")
    _, version, header_size, data_size = _PREAMBLE.unpack_from(raw)
    if version not in (_SHA256_VERSION, FORMAT_VERSION):
        newer = " (written by a newer fstcrf; upgrade fstcrf to read it)" if version > FORMAT_VERSION else ""
        raise ModelFileError(
            f"{where}: model file format version {version} is not supported; "
            f"this fstcrf reads versions {_SHA256_VERSION} and {FORMAT_VERSION}{newer}"
        )
    expected = _PREAMBLE.size + header_size + data_size + _DIGEST_SIZE
    if len(raw) != expected:
        raise ModelFileError(
            f"{where}: the model file is truncated or corrupt: its preamble "
            f"announces {expected} bytes but it has {len(raw)}"
        )
    body = memoryview(raw)[:-_DIGEST_SIZE]
    digest = hashlib.sha256(body).digest() if version == _SHA256_VERSION else checksum(body)
    if digest != raw[-_DIGEST_SIZE:]:
        kind = "SHA-256 checksum" if version == _SHA256_VERSION else "checksum"
        raise ModelFileError(f"{where}: the model file is corrupt ({kind} mismatch)")
    try:
        header = json.loads(raw[_PREAMBLE.size : _PREAMBLE.size + header_size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFileError(f"{where}: the model header is not UTF-8 JSON: {error}") from None
    if not isinstance(header, dict) or header.get("format") not in KIND_NAMES:
        raise ModelFileError(f"{where}: the model header does not describe an fstcrf model")
    data_start = _PREAMBLE.size + header_size
    arrays = {}
    for name, entry in header_field(header, "arrays", dict, where).items():
        dtype, shape, offset = (
            entry.get(key) if isinstance(entry, dict) else None for key in ("dtype", "shape", "offset")
        )
        if (
            dtype not in _ARRAY_DTYPES
            or not isinstance(shape, list)
            or len(shape) != 1
            or not all(isinstance(n, int) and n >= 0 for n in shape)
            or not isinstance(offset, int)
            or offset < 0
            or offset % 8
            or offset + shape[0] * np.dtype(dtype).itemsize > data_size
        ):
            raise ModelFileError(f"{where}: array {name!r} is described wrongly in the header")
        array = np.frombuffer(raw, dtype=dtype, count=shape[0], offset=data_start + offset)
        array.flags.writeable = False
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            index = int(np.flatnonzero(~np.isfinite(array))[0])
            raise ModelFileError(
                f"{where}: array {name!r} has a non-finite value {float(array[index])} at index {index}"
            )
        arrays[name] = array
    return header, arrays


def read_kind(path: str | os.PathLike, kinds: tuple[str, ...], expected: str) -> tuple[dict, dict[str, np.ndarray]]:
    """:func:`read_container` of a file whose kind is one of ``kinds``; ModelFileError
    naming what the file is and, after "not ", what was ``expected`` otherwise."""
    header, arrays = read_container(path)
    if header["format"] not in kinds:
        raise ModelFileError(f"{os.fspath(path)}: this is {KIND_NAMES[header['format']]}, not {expected}")
    return header, arrays


def arrays_under(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The arrays whose names start with ``prefix`` ("0.", "first."...), named without it."""
    return {name[len(prefix) :]: array for name, array in arrays.items() if name.startswith(prefix)}


def file_kind(path: str | os.PathLike) -> str | None:
    """The "format" at the start of a model file's header (one of KIND_NAMES), read
    from its first bytes without any check, to choose a loader; None when the file
    does not start that way (the loaders then say what is wrong with it)."""
    try:
        with open(path, "rb") as stream:
            start = stream.read(_PREAMBLE.size + _KIND_PEEK_BYTES)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    if not start.startswith(MAGIC):
        return None
    found = _KIND_PATTERN.match(start, _PREAMBLE.size)
    kind = found.group(1).decode("ascii") if found else None
    return kind if kind in KIND_NAMES else None


def header_field(mapping, key: str, kind: type, where: str):
    """mapping[key], which must be a ``kind``; else ModelFileError."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ModelFileError(f"{where}: the model header lacks a valid {key!r} ({kind.__name__} expected)")
    return value
