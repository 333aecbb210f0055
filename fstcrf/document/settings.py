"""Settings of non-local decoding shared by the library and the command line
(kept free of heavy imports, so the command line's parser stays fast to build)."""

#: The samplers :func:`fstcrf.document.annealing.anneal` offers.
SAMPLERS = ("block", "gibbs")
#: Sweeps over each document, and the linear schedule's first and last temperatures.
DEFAULT_SWEEPS = 20
DEFAULT_T_START = 1.0
DEFAULT_T_END = 0.05
#: Tokens per block of the block sampler (0: whole sentences).
DEFAULT_BLOCK_SIZE = 0
#: What ``fstcrf train --consistency`` trains (--document-method): the local model with
#: the penalties, the two-stage tagger, or the two-stage tagger whose second stage is
#: decoded under the penalties (chosen on eng.testa: docs/benchmark-history.md,
#: "Document-level NER on the rich local model").
DOCUMENT_METHODS = ("consistency", "two-stage", "both")
DEFAULT_DOCUMENT_METHOD = "both"
#: Folds of the two-stage tagger's jackknife on the command line.
DEFAULT_JACKKNIFE_FOLDS = 5
#: The dev-chosen settings of the two-stage tagger's consistency decoding: the penalty
#: scale, and tokens per block of the block sampler.
TWO_STAGE_CONSISTENCY_SCALE = 0.25
TWO_STAGE_BLOCK_SIZE = 4
#: (option, argparse destination, default) of the command line's non-local options.
NONLOCAL_OPTIONS = (
    ("--sampler", "sampler", "block"),
    ("--sweeps", "sweeps", DEFAULT_SWEEPS),
    ("--t-start", "t_start", DEFAULT_T_START),
    ("--t-end", "t_end", DEFAULT_T_END),
    ("--block-size", "block_size", None),
    ("--consistency-scale", "consistency_scale", None),
)
