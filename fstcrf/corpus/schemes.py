"""Chunk tagging schemes: read chunks from IOB1, IOB2, IOE or BIOES tags and
write them in IOB1, IOB2 or BIOES.

A tag is ``O`` or ``P-TYPE`` with prefix P in B (begin), I (inside), E (end)
or S (single).  :func:`read_chunks` reads a chunk as conlleval does, and
also honours E and S: a chunk starts at B or S, or at I / E when the tag
before it does not continue a chunk of the same type (IOB1 and ill-formed
IOB2 input), and it ends at E or S, or before a tag that does not continue
it.  Writing is exact: IOB2 marks every chunk's first tag B; IOB1 marks a
chunk's first tag B only when a chunk of the same type ends just before it;
BIOES marks a one-token chunk S and a longer chunk B I* E.

A gold column may also hold partial labels for training: the unknown label
``?`` and label sets such as ``B-NP|I-NP``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from fstcrf.engine.chunks import chunks_of_parts, parse_chunk_label
from fstcrf.errors import LabelError

SCHEMES = ("iob1", "iob2", "bioes")
#: The gold-column value of a token whose label is unknown (partial labels, training only).
UNKNOWN_LABEL = "?"
#: Joins the members of a label set such as ``B-NP|I-NP`` (partial labels, training only).
LABEL_SET_SEPARATOR = "|"


def _split(tag: str, position: int) -> tuple[str, str]:
    parts = parse_chunk_label(tag)
    if parts is None:
        error = LabelError(f"tag {tag!r} at token {position} is not O or B-, I-, E-, S- followed by a type")
        error.position = position
        raise error
    return parts


# -- conlleval's chunk boundaries, shared by its scorer and the learners' gains --


def split_tag(tag: str) -> tuple[str, str]:
    """A tag's prefix and chunk type, split at the first dash ("O" -> ("O", "")).

    The type "0" becomes "", as in conlleval, where Perl takes "0" for false.
    """
    prefix, _, chunk_type = tag.partition("-")
    return prefix, "" if chunk_type == "0" else chunk_type


def chunk_end(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """conlleval's endOfChunk: did a chunk end just before the current (prefix, type)?"""
    (previous_prefix, previous_type), (prefix, chunk_type) = previous, current
    if (previous_prefix, prefix) in {
        ("B", "B"),
        ("B", "O"),
        ("I", "B"),
        ("I", "O"),
        ("E", "E"),
        ("E", "I"),
        ("E", "O"),
    }:
        return True
    if previous_prefix not in ("O", ".") and previous_type != chunk_type:
        return True
    return previous_prefix in ("[", "]")


def chunk_start(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """conlleval's startOfChunk: does a chunk start at the current (prefix, type)?"""
    (previous_prefix, previous_type), (prefix, chunk_type) = previous, current
    if (previous_prefix, prefix) in {
        ("B", "B"),
        ("I", "B"),
        ("O", "B"),
        ("O", "I"),
        ("E", "E"),
        ("E", "I"),
        ("O", "E"),
    }:
        return True
    if prefix not in ("O", ".") and previous_type != chunk_type:
        return True
    return prefix in ("[", "]")


def read_chunks(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """The chunks (first token, last token, type) of one sentence's tags."""
    return chunks_of_parts([_split(tag, position) for position, tag in enumerate(tags)])


def write_chunks(chunks: Sequence[tuple[int, int, str]], length: int, scheme: str) -> list[str]:
    """The tags [length] of non-overlapping chunks, sorted by position, in ``scheme``
    ("iob1", "iob2" or "bioes")."""
    if scheme not in SCHEMES:
        raise LabelError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    tags = ["O"] * length
    previous_end: tuple[int, str] | None = None  # (last token, type) of the chunk before
    for first, last, chunk_type in chunks:
        if scheme == "bioes" and first == last:
            tags[first] = f"S-{chunk_type}"
            continue
        for position in range(first, last + 1):
            tags[position] = f"I-{chunk_type}"
        if scheme != "iob1" or previous_end == (first - 1, chunk_type):
            tags[first] = f"B-{chunk_type}"
        previous_end = (last, chunk_type)
        if scheme == "bioes":
            tags[last] = f"E-{chunk_type}"
    return tags


def convert(tags: Sequence[str], scheme: str) -> list[str]:
    """One sentence's tags rewritten in ``scheme``, chunk for chunk."""
    return write_chunks(read_chunks(tags), len(tags), scheme)


def missing_types_warning(keep: set[str] | None, labels: list[list[str]], where: str) -> str | None:
    """The warning that a type of ``keep`` (``--only-types``) has no chunk label among
    ``labels`` [sentences][tokens] read from ``where``, naming the types they have
    (label sets "A|B" count each member); None when every type occurs."""
    if not keep:
        return None
    present = {
        member.partition("-")[2]
        for sentence in labels
        for label in sentence
        for member in label.split(LABEL_SET_SEPARATOR)
    } - {""}
    missing = sorted(keep - present)
    if not missing:
        return None
    return (
        f"--only-types: {', '.join(missing)} {'does' if len(missing) == 1 else 'do'} not occur in {where}, "
        f"whose chunk types are {', '.join(sorted(present)) or 'none'}"
    )


def keep_types(labels: list[list[str]], keep: set[str] | None) -> list[list[str]]:
    """Labels [sentences][tokens] with every chunk label whose type is not in ``keep``
    replaced by O (``--only-types``, e.g. NP chunking); the unknown label "?" stays,
    and each member of a label set "A|B" is mapped.  ``keep`` None: unchanged."""
    if not keep:
        return labels

    def mapped(value: str) -> str:
        if value == UNKNOWN_LABEL:
            return value
        members = [label if label.partition("-")[2] in keep else "O" for label in value.split(LABEL_SET_SEPARATOR)]
        return LABEL_SET_SEPARATOR.join(dict.fromkeys(members))

    return [[mapped(label) for label in sentence] for sentence in labels]


def restrict_types(corpus, target: str, keep: set[str] | None):
    """A copy of the corpus whose column ``target`` has the chunk types outside ``keep``
    mapped to O (:func:`keep_types`); the corpus itself when ``keep`` is None."""
    if not keep:
        return corpus
    sentences = [
        dataclasses.replace(sentence, columns={**sentence.columns, target: labels})
        for sentence, labels in zip(corpus.sentences, keep_types(corpus.column(target), keep))
    ]
    return dataclasses.replace(corpus, sentences=sentences)
