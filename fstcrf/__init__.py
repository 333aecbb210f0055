"""fstcrf: conditional random fields as weighted finite-state transducers."""
from .errors import (ArgumentTypeError, BudgetError, ConllFormatError, CompositionError,
                     EmptySequenceError, FstcrfError, GrammarError, InfeasibleError, LabelError,
                     ModelFileError, OutputPathError, ScoreError, ShapeError, TemplateError,
                     TopologyError)
from .inference import (ForwardBackward, KBest, Potentials, SpanViterbi, Viterbi, forward_backward,
                        kbest, log_partition, max_marginals, sample, span_viterbi, viterbi)
from .topology import (Topology, bioes, first_order, from_acceptor, intersect, iob2, kth_order,
                       second_order)

__all__ = [
    "ArgumentTypeError", "BudgetError", "ConllFormatError", "CompositionError", "EmptySequenceError",
    "FstcrfError", "GrammarError", "InfeasibleError", "LabelError", "ModelFileError", "OutputPathError",
    "ScoreError", "ShapeError", "TemplateError", "TopologyError", "ForwardBackward", "KBest", "Potentials", "SpanViterbi", "Viterbi", "forward_backward",
    "kbest", "log_partition", "max_marginals", "sample", "span_viterbi", "viterbi", "Topology", "bioes",
    "first_order", "from_acceptor", "intersect", "iob2", "kth_order", "second_order",
]
__version__ = "0.1.0"
