"""Typed errors raised by fstcrf.

Every error caused by user input derives from :class:`FstcrfError` and from
:class:`ValueError`, so ``except ValueError`` keeps working for callers that do
not care which check failed.
"""

from collections.abc import Sequence
from typing import Any


class FstcrfError(ValueError):
    """Base class of every error fstcrf raises for bad input or bad files."""


class ShapeError(FstcrfError):
    """An array has the wrong shape, dtype or length."""


class ScoreError(FstcrfError):
    """A score is NaN or infinite where a finite number is required."""


class EmptySequenceError(FstcrfError):
    """A sentence has no tokens."""


class LabelError(FstcrfError):
    """A label, label index or state index is unknown or out of range."""

    #: Set by the checks that locate a bad label: its sentence and token index.
    sentence: int
    position: int


class LabelTypeError(LabelError, TypeError):
    """A label that is not a string; also a TypeError, as python-crfsuite raises."""


class TaggerLabelError(LabelError, RuntimeError):
    """A python-crfsuite Tagger was asked about a label its model lacks; also a
    RuntimeError, as python-crfsuite raises."""


class TaggerStateError(FstcrfError, RuntimeError):
    """A python-crfsuite Tagger was used with no model open (before ``open`` or after
    ``close``); also a RuntimeError, which python-crfsuite raises for some of these calls."""


class TopologyError(FstcrfError):
    """A topology or acceptor cannot be compiled (empty, non-acceptor, ...)."""


class InfeasibleError(FstcrfError):
    """No label sequence of the requested length is allowed by the topology, or none
    keeps to a sentence's constraints."""

    #: Set when a sentence's constraints exclude every path: its index in the batch,
    #: the descriptions of a small set of its constraints that clash, and the message
    #: without the method and sentence it names, for a caller that names them its own
    #: way (else None, none and "").
    sentence: int | None = None
    clashing: Sequence[str] = ()
    reason: str = ""
    #: Set when a grammar accepts no label sequence as long as some sentences: their
    #: indices in the batch (``reason`` then says what is wrong with each of them).
    sentences: Sequence[int] = ()


class ConstraintError(FstcrfError):
    """A sentence's constraints are malformed: a token past the sentence's end, a span
    whose last token precedes its first, a weight that is not a positive number."""


class ConstraintLabelError(ConstraintError, LabelError):
    """A sentence's constraints name a label or chunk type the model lacks, or spans
    of a model whose labels are not chunk labels."""


class ConllFormatError(FstcrfError):
    """A CoNLL file is malformed; the message names the file and the line."""


class TemplateError(FstcrfError):
    """A feature template is malformed."""


class MissingColumnError(ConllFormatError, TemplateError):
    """A sentence lacks a column a model, a template or a method reads; the message
    names the sentence, the column and the columns it has."""


class ResourceFileError(TemplateError):
    """A gazetteer, cluster or embedding file a template reads is missing, unreadable,
    malformed (the message names FILE:LINE) or empty, or a model's copy of one differs
    from the file a template names."""


class FeatureValueError(FstcrfError):
    """A token's features cannot be read: an unsupported type, a NaN or infinite
    value, a key that is not a string; the message names sentence and token."""


class FeatureTypeError(FeatureValueError, TypeError):
    """A token's features have the wrong type: a value that is not a string, number,
    bool or dict, list or set of them, a key that is not a string, a token that is
    neither a dict nor a list of names; also a TypeError, as python-crfsuite raises."""


class ModelFileError(FstcrfError):
    """A model file is truncated, corrupt, foreign or of an unsupported version."""


class GrammarError(FstcrfError):
    """A constraint grammar has a syntax error or denotes an unusable language."""


class CompositionError(FstcrfError):
    """Models cannot be composed (for example their interface labels differ)."""


class ArgumentTypeError(FstcrfError, TypeError):
    """An argument has the wrong type (a string where sentences are expected,
    an array where Potentials are expected, ...); also a TypeError."""


class BudgetError(FstcrfError):
    """Work whose size can explode (grammar compilation, k-th order states,
    k-best lists, sampling) would exceed its budget; the message gives the
    estimated size and the option that raises the budget."""

    #: Set by the budget checks: the limit passed (e.g. "max_work") and the message
    #: without how to raise it, for a caller whose budget is raised another way
    #: (else None and "").
    limit: str | None = None
    reason: str = ""


class OutputPathError(FstcrfError):
    """An output path cannot be written safely: a missing or unwritable folder,
    a folder, or the same file as an input."""


class FeedbackError(FstcrfError):
    """A feedback function raised, or returned something other than a finite
    gain in [0, 1]; the message names the sentence."""

    #: Set by bandit learning: the training result so far (a fstcrf.learn.train.TrainingResult).
    result: Any


class SchedulerError(FstcrfError):
    """A Dask scheduler cannot be reached or started (the message names its address)."""


class ShardError(FstcrfError):
    """A shard of a distributed corpus cannot be read, or its columns differ from the
    other shards' (the message names the worker and the file)."""


class CheckpointError(FstcrfError):
    """A training checkpoint is missing, unreadable or belongs to another run."""


class PenaltyError(FstcrfError):
    """A consistency penalty outside (0, 1], or tables that do not fit the labels."""


class FactorError(FstcrfError):
    """A non-local factor failed or returned a change in log score that is not finite."""


class AnnealingError(FstcrfError):
    """Settings of non-local decoding that cannot work (a bad schedule, a sampler the topology does not allow)."""


class PictureError(FstcrfError):
    """A picture cannot be drawn as asked: an automaton of more states than the limit
    (the message gives the count and the option that raises it), an output suffix
    that names no picture format, a sentence index outside the file."""


class MissingProgramError(FstcrfError):
    """A picture format needs an external program that is not installed (Graphviz's
    ``dot``); the message names the package that installs it."""


class HashCollisionError(FstcrfError):
    """No salt gave distinct keys to the fitted predicates (never seen with 64-bit hashes)."""


class UnknownLabelError(GrammarError, LabelError):
    """A grammar names a label, or a class matches no label, of the model."""


class MissingExtraError(FstcrfError, ImportError):
    """A feature needs an optional dependency that is not installed; the message names
    the extra that installs it (e.g. ``pip install 'fstcrf[grammars]'`` for pynini)."""


class PipelineConfigError(FstcrfError):
    """A pipeline component's settings do not fit its model: a column it reads that no
    token attribute is given for, an unknown attribute, component or output, or two
    outputs written to one place (the message names the component)."""


class TokenAttributeError(FstcrfError):
    """A token lacks an attribute a pipeline component reads: no earlier component set
    it, or the extension is not registered (the message names the attribute and the
    component)."""


class RequestError(FstcrfError):
    """A request to ``fstcrf serve`` that cannot be answered as sent: malformed, of a
    wrong type, naming an unknown model or column, or over a limit.  ``status`` is the
    HTTP status it is answered with (4xx), ``field`` the part of the request at fault
    (e.g. ``sentences[2].pos``), ``limit`` the limit it exceeds (None for none)."""

    def __init__(self, message: str, field: str | None = None, status: int = 422, limit: str | None = None):
        super().__init__(message)
        self.field = field
        self.status = status
        self.limit = limit


class ServerBusyError(FstcrfError):
    """``fstcrf serve`` cannot take a request now: its queue is full, the request waited
    past its timeout, or the server is draining (answered 503)."""
