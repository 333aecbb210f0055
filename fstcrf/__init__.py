"""fstcrf: conditional random fields as weighted finite-state transducers.

The error classes are imported with the package.  The inference routines,
the topologies and the submodules (``fstcrf.engine.budget``, ``fstcrf.model``, ...)
are imported on first use (PEP 562), so that ``import fstcrf`` and the
command line start without numpy, scipy, pynini or the C kernel."""

from importlib import import_module as _import_module

from fstcrf import moved
from fstcrf.errors import (
    ArgumentTypeError,
    BudgetError,
    ConllFormatError,
    CompositionError,
    ConstraintError,
    EmptySequenceError,
    FstcrfError,
    GrammarError,
    InfeasibleError,
    LabelError,
    ModelFileError,
    OutputPathError,
    ScoreError,
    ShapeError,
    TemplateError,
    TopologyError,
)

#: The public names imported on first use, with the submodule that defines each.
_LAZY_NAMES = {
    **dict.fromkeys(
        (
            "ForwardBackward",
            "KBest",
            "Potentials",
            "Viterbi",
            "forward_backward",
            "kbest",
            "log_partition",
            "max_marginals",
            "sample",
            "viterbi",
        ),
        "engine.inference",
    ),
    **dict.fromkeys(("SpanViterbi", "span_viterbi"), "engine.span_paths"),
    **dict.fromkeys(
        ("Topology", "bioes", "first_order", "from_acceptor", "intersect", "iob2", "kth_order", "second_order"),
        "engine.topology",
    ),
    **dict.fromkeys(("Constraints", "Span"), "engine.constraints"),
    **dict.fromkeys(("DecodedLogits", "decode_logits"), "logits.decode"),
    "LogitDecoder": "logits.fit",
}

__all__ = [
    "ArgumentTypeError",
    "BudgetError",
    "ConllFormatError",
    "CompositionError",
    "ConstraintError",
    "EmptySequenceError",
    "FstcrfError",
    "GrammarError",
    "InfeasibleError",
    "LabelError",
    "ModelFileError",
    "OutputPathError",
    "ScoreError",
    "ShapeError",
    "TemplateError",
    "TopologyError",
    "ForwardBackward",
    "KBest",
    "Potentials",
    "SpanViterbi",
    "Viterbi",
    "forward_backward",
    "kbest",
    "log_partition",
    "max_marginals",
    "sample",
    "span_viterbi",
    "viterbi",
    "Topology",
    "bioes",
    "first_order",
    "from_acceptor",
    "intersect",
    "iob2",
    "kth_order",
    "second_order",
    "Constraints",
    "Span",
    "DecodedLogits",
    "LogitDecoder",
    "decode_logits",
]
__version__ = "0.2.0.dev0"

moved.install()


def __getattr__(name: str):
    """A public name of ``__all__`` or a submodule, imported on first access."""
    if name in _LAZY_NAMES:
        value = getattr(_import_module(f".{_LAZY_NAMES[name]}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        try:
            return _import_module(f".{name}", __name__)
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
