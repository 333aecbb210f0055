"""Model file format version 2 (issue 18 item 2): memory-mapped arrays, the
hashed predicate dictionary, a checksum over every byte; version 1 still loads."""

import hashlib
import json
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.model import ChainCRF, load_model
from fstcrf.errors import ModelFileError
from fstcrf.model.compose import compose, load_joint, upgrade_model
from fstcrf.model import extractor_from_payload
from fstcrf.model.file import FORMAT_VERSION, JOINT_KIND, MAGIC, checksum, read_container
from corpora import READING_TEMPLATE, TEMPLATE, chunk_corpus

PREAMBLE = struct.Struct("<16sIQQ")


@pytest.fixture(scope="module")
def fitted():
    return ChainCRF(TEMPLATE, max_iter=5).fit(chunk_corpus(3, 20))


@pytest.fixture
def saved(fitted, tmp_path):
    path = tmp_path / "m.model"
    fitted.save(path)
    return path


def sections(raw: bytes) -> tuple[dict, int]:
    """The JSON header of a file and where its data starts."""
    _, _, header_size, _ = PREAMBLE.unpack_from(raw)
    return json.loads(raw[PREAMBLE.size : PREAMBLE.size + header_size]), PREAMBLE.size + header_size


def repack(raw: bytes, edit_header=lambda header: None, edit_array=None) -> bytes:
    """The file with its header and one array (name, function of its bytes) edited
    and a valid checksum."""
    header, start = sections(raw)
    data = bytearray(raw[start:-32])
    if edit_array is not None:
        name, edit = edit_array
        entry = header["arrays"][name]
        size = entry["shape"][0] * np.dtype(entry["dtype"]).itemsize
        data[entry["offset"] : entry["offset"] + size] = edit(bytes(data[entry["offset"] : entry["offset"] + size]))
    edit_header(header)
    text = json.dumps(header).encode()
    text += b" " * (-(PREAMBLE.size + len(text)) % 8)
    body = PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(text), len(data)) + text + bytes(data)
    return body + checksum(body)


def version_1_bytes(path) -> bytes:
    """The model or joint model file as fstcrf wrote it before version 2: the
    predicate names in the header and a SHA-256 digest (the version 1 layout)."""
    header, arrays = read_container(path)
    arrays = dict(arrays)
    components = header["components"] if header["format"] == JOINT_KIND else [header]
    for k, component in enumerate(components):
        prefix = f"{k}." if header["format"] == JOINT_KIND else ""
        own = {name[len(prefix) :]: array for name, array in arrays.items() if name.startswith(prefix)}
        component["extractor"] = extractor_from_payload(component["extractor"], own).to_dict()
        arrays = {name: array for name, array in arrays.items() if not name.startswith(prefix + "extractor.")}
    table, data = {}, b""
    for name, array in arrays.items():
        table[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": len(data)}
        data += array.tobytes() + b"\0" * (-array.nbytes % 8)
    text = json.dumps({**header, "arrays": table}).encode()
    text += b" " * (-(PREAMBLE.size + len(text)) % 8)
    body = PREAMBLE.pack(MAGIC, 1, len(text), len(data)) + text + data
    return body + hashlib.sha256(body).digest()


def test_round_trip_keeps_the_dictionary_without_names_in_the_header(fitted, saved):
    raw = saved.read_bytes()
    header, _ = sections(raw)
    assert PREAMBLE.unpack_from(raw)[1] == FORMAT_VERSION == 2
    assert "predicates" not in header["extractor"] and header["extractor"]["salt"] == 0
    assert {"extractor.keys", "extractor.names", "extractor.name_offsets"} <= set(header["arrays"])
    loaded = load_model(saved)
    assert not loaded.weights_.flags.writeable  # a view of the mapped file
    np.testing.assert_array_equal(loaded.weights_, fitted.weights_)
    test = chunk_corpus(4, 8)
    assert loaded.predict(test) == fitted.predict(test)
    assert loaded.extractor_._names is None  # tagging decoded no name
    assert loaded.extractor_.predicate_names_ == fitted.extractor_.predicate_names_
    # a loaded model trains on (a warm start copies the read-only weights) and saves again
    warm = ChainCRF(TEMPLATE, max_iter=2).fit(chunk_corpus(3, 20), init=loaded)
    warm.save(saved.parent / "again.model")
    assert load_model(saved.parent / "again.model").predict(test) == warm.predict(test)


def test_version_1_files_load_and_upgrade(fitted, saved, tmp_path):
    old = tmp_path / "old.model"
    old.write_bytes(version_1_bytes(saved))
    test = chunk_corpus(5, 8)
    assert load_model(old).predict(test) == fitted.predict(test)
    upgrade_model(old, tmp_path / "new.model")
    raw = (tmp_path / "new.model").read_bytes()
    assert PREAMBLE.unpack_from(raw)[1] == FORMAT_VERSION
    assert load_model(tmp_path / "new.model").predict(test) == fitted.predict(test)
    upgrade_model(old, old)  # in place
    assert PREAMBLE.unpack_from(old.read_bytes())[1] == FORMAT_VERSION
    corrupt = bytearray(version_1_bytes(saved))
    corrupt[len(corrupt) // 2] ^= 1
    old.write_bytes(bytes(corrupt))
    with pytest.raises(ModelFileError, match="SHA-256 checksum mismatch"):
        load_model(old)


def test_unknown_versions_are_named(saved):
    raw = bytearray(saved.read_bytes())
    for version in (0, 3, 99):
        raw[16:20] = struct.pack("<I", version)
        saved.write_bytes(bytes(raw))
        with pytest.raises(
            ModelFileError, match=f"version {version} is not supported; this fstcrf reads versions 1 and 2"
        ):
            load_model(saved)


def test_truncation_at_every_section_boundary(saved):
    raw = saved.read_bytes()
    header, start = sections(raw)
    cuts = {0, 1, 15, 16, 35, 36, start - 1, start, len(raw) - 33, len(raw) - 32, len(raw) - 1}
    for entry in header["arrays"].values():
        cuts |= {start + entry["offset"], start + entry["offset"] + 3}
    for cut in sorted(cuts):
        saved.write_bytes(raw[:cut])
        with pytest.raises(ModelFileError, match="truncated|not an fstcrf model"):
            load_model(saved)
    saved.write_bytes(raw + b"\0" * 8)
    with pytest.raises(ModelFileError, match="truncated or corrupt"):
        load_model(saved)


def test_a_flipped_bit_in_any_section_is_detected(saved):
    raw = saved.read_bytes()
    header, start = sections(raw)
    positions = set(range(0, len(raw), max(1, len(raw) // 150)))
    for entry in header["arrays"].values():  # the first and last byte of every array
        size = entry["shape"][0] * np.dtype(entry["dtype"]).itemsize
        positions |= {start + entry["offset"], start + entry["offset"] + max(size - 1, 0)}
    positions |= {len(raw) - 32, len(raw) - 1}
    for position in sorted(positions):
        for bit in (0, 7):
            corrupt = bytearray(raw)
            corrupt[position] ^= 1 << bit
            saved.write_bytes(bytes(corrupt))
            with pytest.raises(ModelFileError):
                load_model(saved)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=0, max_size=300), position=st.integers(0, 299), word=st.integers(1, 2**64 - 1))
def test_the_checksum_detects_any_change_within_one_aligned_word(data, position, word):
    """Each lane step is a bijection of the lane and of the word, so a change
    confined to one aligned 8-byte word always changes the digest."""
    if not data:
        return
    position = position % len(data) // 8 * 8
    changed = bytearray(data + b"\0" * 8)
    original = int.from_bytes(changed[position : position + 8], "little")
    changed[position : position + 8] = (original ^ word).to_bytes(8, "little")
    changed = bytes(changed[: len(data)])
    if changed == data:  # the change fell beyond the end of the data
        return
    assert checksum(changed) != checksum(data)
    assert checksum(data + b"\0") != checksum(data)  # the size is part of the digest


def test_valid_checksums_over_inconsistent_dictionaries(saved):
    raw = saved.read_bytes()
    duplicate_keys = ("extractor.keys", lambda b: b[:8] * (len(b) // 8))
    bad_names = ("extractor.names", lambda b: b"\xff" + b[1:])
    bad_offsets = ("extractor.name_offsets", lambda b: b[:-8] + struct.pack("<q", 10**9))
    falling_offsets = ("extractor.name_offsets", lambda b: b[:8] + struct.pack("<q", 10**6) + b[16:])
    for edit, match in [
        (duplicate_keys, "same key"),
        (bad_names, "not UTF-8"),
        (bad_offsets, "offsets"),
        (falling_offsets, "offsets"),
    ]:
        saved.write_bytes(repack(raw, edit_array=edit))
        with pytest.raises(ModelFileError, match=match):
            load_model(saved)
    header_edits = [
        (lambda h: h["extractor"].update(salt=-1), "salt"),
        (lambda h: h["extractor"].update(salt=True), "salt"),
        (lambda h: h["extractor"].pop("salt"), "salt"),
        (lambda h: h["arrays"].pop("extractor.keys"), "keys"),
        (lambda h: h["arrays"]["extractor.keys"].update(dtype="<i8"), "keys"),
        (lambda h: h["arrays"]["extractor.names"].update(offset=3), "described wrongly"),
        (lambda h: h["arrays"]["extractor.name_offsets"].update(shape=[2]), "do not fit"),
    ]
    for edit, match in header_edits:
        saved.write_bytes(repack(raw, edit))
        with pytest.raises(ModelFileError, match=match):
            load_model(saved)
    saved.write_bytes(repack(raw))
    assert load_model(saved).predict(chunk_corpus(6, 3))


def test_a_version_1_joint_model_upgrades(tmp_path):
    corpus = chunk_corpus(7, 20)
    pos = ChainCRF("bias\nword[0]\nword[-1]\n", max_iter=5).fit(corpus, target="pos")
    chunk = ChainCRF(READING_TEMPLATE, reads="pos", max_iter=5).fit(corpus)
    joint = compose([pos, chunk])
    joint.save(tmp_path / "joint.model")
    old = tmp_path / "old.model"
    old.write_bytes(version_1_bytes(tmp_path / "joint.model"))
    test = chunk_corpus(8, 6)
    assert load_joint(old).predict(test) == joint.predict(test)
    upgrade_model(old, tmp_path / "new.model")
    assert PREAMBLE.unpack_from((tmp_path / "new.model").read_bytes())[1] == FORMAT_VERSION
    assert (tmp_path / "new.model").read_bytes() == (tmp_path / "joint.model").read_bytes()
