"""Constraints of one sentence: labels fixed or allowed at tokens, chunks required or
forbidden, ranges kept whole, and log-score bonuses; hard, or weighted (soft).

A :class:`Constraints` names labels and chunk types as strings and tokens by their
0-based index (spans and ranges include their ``last`` token).  Its kinds:

    fixed      {token: label}              the label at the token
    allowed    {token: {labels}}           one of these labels at the token
    spans      [Span(first, last, type)]   the output holds exactly this chunk
    forbidden  [Span(first, last, type)]   the output does not hold exactly this chunk
    unbroken   [(first, last)]             no chunk boundary between first and last
    scores     {token: {label: bonus}}     a log-score added to paths with the label there

A chunk is read off the labels as conlleval reads them (IOB1, IOB2, BIOES;
:mod:`fstcrf.engine.chunks`): it begins at a label that is not O and does not
continue the one before it, and runs while the next label continues it.  A range
(first, last) is unbroken when every label from first + 1 to last continues the
chunk of the one before it, or both are O.

A span or a range with a ``weight`` is soft: a span in ``spans`` adds the weight to
every path that holds it, one in ``forbidden`` subtracts it, and a range subtracts
it for every chunk boundary inside it.  No weight (or ``math.inf``) makes the rule
hard.  A weight or a bonus is at most MAX_WEIGHT in size: there a rule is hard in
effect to about 1e-10 (its paths' probabilities are exp(-1e6) of the others', and
the scores added to the weight keep the precision of float64 near 1e6); a larger
one would swamp the model's own scores in floating point.  :func:`resolve` checks a
sentence's constraints against a model's labels and the sentence's length and turns
them into :class:`SentenceRules` over label indices, which
:mod:`fstcrf.engine.constrained` compiles into the lattice.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from fstcrf.engine.chunks import continues, parse_chunk_label
from fstcrf.errors import ArgumentTypeError, ConstraintError, ConstraintLabelError

KINDS = ("fixed", "allowed", "spans", "forbidden", "unbroken", "scores")
#: The largest weight of a soft rule, and the largest bonus in size (see the module doc).
MAX_WEIGHT = 1e6
#: The largest token index (past any sentence; larger ones are refused as they are).
MAX_TOKEN = 2**62


class Span(NamedTuple):
    """Tokens ``first`` .. ``last`` (inclusive, 0-based) as one chunk of type ``type``
    (e.g. "NP", not "B-NP"); ``weight`` None is a hard rule, a positive number a soft one."""

    first: int
    last: int
    type: str
    weight: float | None = None


class TokenRange(NamedTuple):
    """Tokens ``first`` .. ``last`` (inclusive) with no chunk boundary inside; ``weight``
    None is a hard rule, a positive number the log-score lost per boundary."""

    first: int
    last: int
    weight: float | None = None


def _token(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= value < MAX_TOKEN:
        raise ConstraintError(f"{what}: a token index is an integer from 0 to 2**62, got {_shown(value)}")
    return int(value)


def _label(value, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConstraintError(f"{what}: a label is a non-empty string, got {_shown(value)}")
    return value


def _weight(value, what: str) -> float | None:
    """None for a hard rule (None or inf), else a positive float of at most MAX_WEIGHT."""
    if value is None:
        return None
    refusal = f"{what}: a weight is a positive number of at most {MAX_WEIGHT:g} or None (a hard rule)"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConstraintError(f"{refusal}, got {_shown(value)}")
    if value == math.inf:
        return None
    if not 0 < value <= MAX_WEIGHT:  # NaN fails it too
        raise ConstraintError(f"{refusal}, got {_shown(value)}")
    return float(value)


def _shown(value) -> str:
    """A value as an error shows it: its repr, shortened; a large integer by its size."""
    if isinstance(value, (int, np.integer)) and abs(value) >= MAX_TOKEN:
        return f"an integer of {int(value).bit_length()} bits"
    try:
        text = repr(value)
    except RecursionError:
        return f"a {type(value).__name__} nested too deeply to show"
    return text if len(text) <= 60 else text[:57] + "..."


def _span(value, what: str) -> Span:
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(Span._fields))
        if unknown or not {"first", "last", "type"} <= set(value):
            raise ConstraintError(f"{what}: a span has the keys first, last, type and weight, got {sorted(value)}")
        value = Span(**value)
    if not isinstance(value, tuple) or len(value) not in (3, 4):
        raise ConstraintError(f"{what}: a span is Span(first, last, type, weight=None), got {_shown(value)}")
    first, last, chunk_type, *rest = value
    span = Span(_token(first, what), _token(last, what), _label(chunk_type, what), _weight(_given(rest), what))
    if span.last < span.first:
        raise ConstraintError(f"{what}: span ({span.first}, {span.last}) ends before it begins")
    return span


def _given(rest: list):
    """The optional last field of a tuple (a weight), None when absent."""
    return rest[0] if rest else None


def _range(value, what: str) -> TokenRange:
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(TokenRange._fields))
        if unknown or not {"first", "last"} <= set(value):
            raise ConstraintError(f"{what}: a range has the keys first, last and weight, got {sorted(value)}")
        value = TokenRange(**value)
    if not isinstance(value, tuple) or len(value) not in (2, 3):
        raise ConstraintError(f"{what}: a range is (first, last) or (first, last, weight), got {_shown(value)}")
    first, last, *rest = value
    kept = TokenRange(_token(first, what), _token(last, what), _weight(_given(rest), what))
    if kept.last < kept.first:
        raise ConstraintError(f"{what}: range ({kept.first}, {kept.last}) ends before it begins")
    return kept


def _mapping(value, what: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise ConstraintError(f"{what} must be a dict keyed by token index, got {type(value).__name__}")
    return value


def _sequence(value, what: str) -> Sequence:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (Sequence, set, frozenset)):
        raise ConstraintError(f"{what} must be a list, got {type(value).__name__}")
    return list(value)


def _label_set(value, what: str) -> frozenset[str]:
    if type(value) is frozenset and value and all(type(label) is str and label for label in value):
        return value  # already a set of labels (a tag dictionary's)
    if isinstance(value, (str, Mapping)) or not isinstance(value, Collection):
        raise ConstraintError(f"{what}: the allowed labels are a set or list of labels, got {_shown(value)}")
    labels = frozenset(_label(label, what) for label in value)
    if not labels:
        raise ConstraintError(f"{what}: an empty set of allowed labels allows nothing")
    return labels


def _bonus(value, what: str) -> float:
    refusal = f"{what}: a score is a number from {-MAX_WEIGHT:g} to {MAX_WEIGHT:g}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConstraintError(f"{refusal}, got {_shown(value)}")
    if not -MAX_WEIGHT <= value <= MAX_WEIGHT:  # NaN fails it too
        raise ConstraintError(f"{refusal}, got {_shown(value)} (fix labels with fixed=, forbid them with allowed=)")
    return float(value)


@dataclass(frozen=True)
class Constraints:
    """The constraints of one sentence (see the module doc for the kinds); checked and
    normalised when built (the mappings become read-only views: they stay as checked),
    checked against a model's labels and the sentence's length by :func:`resolve`.
    ``Constraints.from_dict(c.to_dict()) == c``, and the dict is JSON's (string token
    keys are read back)."""

    fixed: Mapping[int, str] = field(default_factory=dict)
    allowed: Mapping[int, Collection[str]] = field(default_factory=dict)
    spans: Sequence[Span] = ()
    forbidden: Sequence[Span] = ()
    unbroken: Sequence[TokenRange] = ()  # (first, last) or (first, last, weight) tuples are read as ranges
    scores: Mapping[int, Mapping[str, float]] = field(default_factory=dict)

    def __post_init__(self):
        fixed = {
            _token(token, "fixed"): _label(label, f"fixed[{token}]")
            for token, label in _mapping(self.fixed, "fixed").items()
        }
        allowed = {
            _token(token, "allowed"): _label_set(labels, f"allowed[{token}]")
            for token, labels in _mapping(self.allowed, "allowed").items()
        }
        scores = {
            _token(token, "scores"): {
                _label(label, f"scores[{token}]"): _bonus(bonus, f"scores[{token}][{label!r}]")
                for label, bonus in _mapping(bonuses, f"scores[{token}]").items()
            }
            for token, bonuses in _mapping(self.scores, "scores").items()
        }
        read_only = {token: MappingProxyType(dict(sorted(bonuses.items()))) for token, bonuses in scores.items()}
        for name, value in (("fixed", fixed), ("allowed", allowed), ("scores", read_only)):
            object.__setattr__(self, name, MappingProxyType(dict(sorted(value.items()))))
        for name in ("spans", "forbidden"):
            spans = tuple(_span(span, f"{name}[{i}]") for i, span in enumerate(_sequence(getattr(self, name), name)))
            object.__setattr__(self, name, spans)
        ranges = tuple(_range(item, f"unbroken[{i}]") for i, item in enumerate(_sequence(self.unbroken, "unbroken")))
        object.__setattr__(self, "unbroken", ranges)

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in KINDS)

    # the mappings are read-only views (what was checked cannot change after), which
    # neither hash nor pickle: these do both by the checked values
    def __hash__(self) -> int:
        scores = tuple((token, tuple(bonuses.items())) for token, bonuses in self.scores.items())
        return hash(
            (tuple(self.fixed.items()), tuple(self.allowed.items()), self.spans, self.forbidden, self.unbroken, scores)
        )

    def __reduce__(self):
        return (type(self).from_dict, (self.to_dict(),))

    # -- JSON ----------------------------------------------------------------
    def to_dict(self) -> dict:
        """A JSON-able dict of the non-empty kinds: token keys as strings, allowed sets as
        sorted lists, spans and ranges as dicts (with "weight" when soft)."""

        def entry(item) -> dict:
            kept = item._asdict()
            if kept["weight"] is None:
                del kept["weight"]
            return kept

        data = {
            "fixed": {str(token): label for token, label in self.fixed.items()},
            "allowed": {str(token): sorted(labels) for token, labels in self.allowed.items()},
            "spans": [entry(span) for span in self.spans],
            "forbidden": [entry(span) for span in self.forbidden],
            "unbroken": [entry(item) for item in self.unbroken],
            "scores": {str(token): dict(bonuses) for token, bonuses in self.scores.items()},
        }
        return {name: value for name, value in data.items() if value}

    @classmethod
    def from_dict(cls, data) -> Constraints:
        """The constraints :meth:`to_dict` describes (token keys may be strings of digits);
        ConstraintError for anything else."""
        if not isinstance(data, Mapping):
            raise ConstraintError(f"constraints must be a dict, got {type(data).__name__}")
        unknown = sorted(set(data) - set(KINDS))
        if unknown:
            raise ConstraintError(f"unknown kinds of constraint {unknown}; the kinds are {', '.join(KINDS)}")

        def tokens(name: str) -> dict:
            return {_token_key(key, name): value for key, value in _mapping(data.get(name, {}), name).items()}

        return cls(
            fixed=tokens("fixed"),
            allowed=tokens("allowed"),
            spans=data.get("spans", ()),
            forbidden=data.get("forbidden", ()),
            unbroken=data.get("unbroken", ()),
            scores=tokens("scores"),
        )

    # -- the hard rules one by one (to name those that clash) ------------------
    def hard_rules(self) -> list[tuple[str, object]]:
        """(kind, key) of every hard rule: a token of fixed or allowed, a span of spans or
        forbidden without a weight, an unbroken range without one."""
        rules: list[tuple[str, object]] = [("fixed", token) for token in self.fixed]
        rules += [("allowed", token) for token in self.allowed]
        for name in ("spans", "forbidden", "unbroken"):
            rules += [(name, item) for item in getattr(self, name) if item.weight is None]
        return rules

    def only(self, rules: Collection[tuple[str, object]]) -> Constraints:
        """These hard rules (from :meth:`hard_rules`) alone."""
        kept = set(rules)
        return Constraints(
            fixed={token: label for token, label in self.fixed.items() if ("fixed", token) in kept},
            allowed={token: labels for token, labels in self.allowed.items() if ("allowed", token) in kept},
            spans=[span for span in self.spans if ("spans", span) in kept],
            forbidden=[span for span in self.forbidden if ("forbidden", span) in kept],
            unbroken=[item for item in self.unbroken if ("unbroken", item) in kept],
        )

    def describe(self, rule: tuple[str, object]) -> str:
        """One hard rule in words, e.g. "span (2, 4, NP)" or "token 3 fixed to B-NP"."""
        kind, key = rule
        if kind == "fixed":
            return f"token {key} fixed to {self.fixed[key]}"  # type: ignore[index]
        if kind == "allowed":
            return f"token {key} one of {', '.join(sorted(self.allowed[key]))}"  # type: ignore[index]
        item = key
        if kind == "unbroken":
            return f"tokens {item[0]}..{item[1]} unbroken"  # type: ignore[index]
        return f"{'forbidden span' if kind == 'forbidden' else 'span'} ({item[0]}, {item[1]}, {item[2]})"  # type: ignore[index]


def _token_key(key, name: str) -> int:
    """A token index given as a key: an int, or its decimal digits (JSON's keys)."""
    if isinstance(key, str) and key.isascii() and key.isdigit():  # not "²", which int() refuses
        if key != "0" and key.startswith("0"):  # "01" and "1" would be one token twice
            raise ConstraintError(f"{name}: a token key is written without leading zeros, got {_shown(key)}")
        if len(key) > len(str(MAX_TOKEN)):  # int() of thousands of digits is refused, or slow
            raise ConstraintError(f"{name}: a token index is an integer from 0 to 2**62, got {len(key)} digits")
        key = int(key)
    return _token(key, name)


def as_constraints(value, what: str) -> Constraints | None:
    """A Constraints, None, or the dict form of one (:meth:`Constraints.from_dict`)."""
    if value is None or isinstance(value, Constraints):
        return value
    if isinstance(value, Mapping):
        return Constraints.from_dict(value)
    raise ArgumentTypeError(f"{what} must be a Constraints, its dict form or None, got {type(value).__name__}")


# -- the rules over label indices ------------------------------------------------


@dataclass(frozen=True)
class ChunkLabels:
    """Labels read as chunks: ``types`` the chunk types; ``label_type`` int [L] each
    label's type index, -1 for O; ``continuing`` bool [L, L] whether label b continues
    the chunk of label a (row a, column b)."""

    types: tuple[str, ...]
    label_type: np.ndarray
    continuing: np.ndarray


@lru_cache(maxsize=64)
def label_index(labels: tuple[str, ...]) -> dict[str, int]:
    """{label: its index}."""
    return {label: i for i, label in enumerate(labels)}


@lru_cache(maxsize=64)
def chunk_labels(labels: tuple[str, ...]) -> ChunkLabels | None:
    """The chunk reading of ``labels``; None when one of them is not O or B-, I-, E-, S-X."""
    parts = [parse_chunk_label(label) for label in labels]
    if any(part is None for part in parts):
        return None
    known = [part for part in parts if part is not None]
    types = tuple(sorted({chunk_type for prefix, chunk_type in known if prefix != "O"}))
    index = {chunk_type: i for i, chunk_type in enumerate(types)}
    label_type = np.array([-1 if prefix == "O" else index[chunk_type] for prefix, chunk_type in known])
    continuing = np.array([[continues(a, b) for b in known] for a in known], dtype=bool).reshape(len(known), -1)
    return ChunkLabels(types, label_type, continuing)


@dataclass(frozen=True)
class SentenceRules:
    """One sentence's constraints over label indices (from :func:`resolve`).

    ``label_scores`` float [T, L]: added to each label at each token (-inf: not
    allowed); ``required`` (first, last, type index) of the hard spans; ``weighted``
    {(first, last, type index): score added to a path holding that chunk} (-inf:
    forbidden); ``unbroken`` (first, last, loss per boundary, inf when hard);
    ``chunks`` the chunk reading of the labels (None without chunk labels); and what
    they came from, to name clashing rules: ``source``, ``labels``, ``sentence``
    and ``what`` (the caller)."""

    label_scores: np.ndarray
    required: tuple[tuple[int, int, int], ...]
    weighted: Mapping[tuple[int, int, int], float]
    unbroken: tuple[tuple[int, int, float], ...]
    chunks: ChunkLabels | None
    source: Constraints
    labels: tuple[str, ...]
    sentence: int
    what: str = ""

    @property
    def where(self) -> str:
        """The sentence as errors name it, e.g. "ChainCRF.predict: sentence 3"."""
        return f"{self.what}: sentence {self.sentence}" if self.what else f"sentence {self.sentence}"

    @property
    def length(self) -> int:
        return len(self.label_scores)

    @property
    def has_token_scores(self) -> bool:
        return bool(np.any(self.label_scores))


def resolve(
    constraints: Constraints, labels: Sequence[str], length: int, sentence: int = 0, what: str = ""
) -> SentenceRules:
    """``constraints`` of sentence number ``sentence`` (``length`` tokens) over the
    label indices of ``labels``: ConstraintError for a token past the sentence,
    ConstraintLabelError for a label or type the labels lack (``what`` names the caller)."""
    labels = tuple(labels)
    where = f"{what}: sentence {sentence}" if what else f"sentence {sentence}"
    index = label_index(labels)

    def token(value: int, what: str) -> int:
        if value >= length:
            has = "no tokens" if not length else "1 token (0)" if length == 1 else f"{length} tokens (0..{length - 1})"
            raise ConstraintError(f"{where}: {what} names token {value}, but the sentence has {has}")
        return value

    def label(value: str, what: str) -> int:
        if value not in index:
            shown = ", ".join(labels[:30]) + (" ..." if len(labels) > 30 else "")
            raise ConstraintLabelError(f"{where}: {what} names the label {value!r}, which the model lacks ({shown})")
        return index[value]

    scores = np.zeros((length, len(labels)))
    for t, value in constraints.fixed.items():
        fixed = label(value, f"fixed[{t}]")
        scores[token(t, "fixed"), np.arange(len(labels)) != fixed] = -np.inf
    if constraints.allowed:  # one assignment for every token's set: a tag dictionary names most tokens
        rows = np.fromiter((token(t, "allowed") for t in constraints.allowed), dtype=np.int64)
        sizes = np.fromiter(map(len, constraints.allowed.values()), dtype=np.int64)
        chosen = [label(value, f"allowed[{t}]") for t, values in constraints.allowed.items() for value in values]
        kept = np.zeros(scores.shape, dtype=bool)
        kept[np.repeat(rows, sizes), chosen] = True
        scores[rows] = np.where(kept[rows], scores[rows], -np.inf)
    for t, bonuses in constraints.scores.items():
        for value, bonus in bonuses.items():
            scores[token(t, "scores"), label(value, f"scores[{t}]")] += bonus
    chunks = chunk_labels(labels)
    type_index = {} if chunks is None else {chunk_type: i for i, chunk_type in enumerate(chunks.types)}

    def span(item: Span, what: str) -> tuple[int, int, int]:
        token(item.last, what)
        if chunks is None:
            raise ConstraintLabelError(
                f"{where}: {what} asks for chunks, but the model's labels are not chunk labels "
                "(O and B-, I-, E-, S- followed by a type)"
            )
        if item.type not in type_index:
            raise ConstraintLabelError(
                f"{where}: {what} names the chunk type {item.type!r}, which the model lacks "
                f"({', '.join(chunks.types)}); a span names a type (NP), not a label (B-NP)"
            )
        return item.first, item.last, type_index[item.type]

    required: dict[tuple[int, int, int], None] = {}  # (a dict: a span given twice is one rule)
    weighted: dict[tuple[int, int, int], float] = {}
    for i, item in enumerate(constraints.spans):
        key = span(item, f"spans[{i}]")
        if item.weight is None:
            required[key] = None
        else:
            weighted[key] = weighted.get(key, 0.0) + item.weight
    if required:  # a required span's tokens carry its type (at token 0 that begins it)
        assert chunks is not None
        covered = np.zeros((len(chunks.types), length + 1), dtype=np.int64)  # difference arrays per type
        for first, last, kind in required:
            covered[kind, first] += 1
            covered[kind, last + 1] -= 1
        for kind in {kind for _, _, kind in required}:
            scores[np.ix_(np.cumsum(covered[kind])[:length] > 0, chunks.label_type != kind)] = -np.inf
    for i, item in enumerate(constraints.forbidden):
        key = span(item, f"forbidden[{i}]")
        weighted[key] = weighted.get(key, 0.0) - (math.inf if item.weight is None else item.weight)
    unbroken = []
    for i, stretch in enumerate(constraints.unbroken):
        token(stretch.last, f"unbroken[{i}]")
        if chunks is None:
            raise ConstraintLabelError(
                f"{where}: unbroken[{i}] asks for chunks, but the model's labels are not chunk labels"
            )
        unbroken.append((stretch.first, stretch.last, math.inf if stretch.weight is None else stretch.weight))
    return SentenceRules(
        scores, tuple(required), weighted, tuple(unbroken), chunks, constraints, labels, sentence, what
    )


def resolve_batch(
    constraints, lengths: Sequence[int] | np.ndarray, labels: Sequence[str], what: str
) -> list[SentenceRules | None] | None:
    """The rules of a batch's constraints (one Constraints, its dict form or None per
    sentence, as ``constraints`` lists them; None: no constraints), checked before any
    work; None when no sentence has any."""
    if constraints is None:
        return None
    given = per_sentence(constraints, what)
    if len(given) != len(lengths):
        raise ConstraintError(f"{what}: {len(given)} constraints for {len(lengths)} sentences; give one per sentence")
    rules = [
        resolve(own, labels, int(length), b, what) if own else None
        for b, (own, length) in enumerate(zip(given, lengths))
    ]
    return rules if any(rule is not None for rule in rules) else None


def per_sentence(constraints, what: str) -> list[Constraints | None]:
    """``constraints`` (a list of one Constraints, its dict form or None per sentence)
    with each dict form read as a Constraints: ArgumentTypeError naming ``what`` for
    anything but such a list, and a malformed dict form's ConstraintError "``what``:
    sentence b: ...", as :func:`resolve` names the sentence."""
    if isinstance(constraints, (Constraints, Mapping, str)) or not isinstance(constraints, Sequence):
        raise ArgumentTypeError(
            f"{what}: constraints must be a list with one Constraints (or None) per sentence, "
            f"got {type(constraints).__name__}"
        )
    read = []
    for b, value in enumerate(constraints):
        try:
            read.append(as_constraints(value, f"{what}: constraints[{b}]"))
        except ConstraintError as error:
            raise type(error)(f"{what}: sentence {b}: {error}") from None
    return read
