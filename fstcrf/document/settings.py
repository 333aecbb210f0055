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
#: (option, argparse destination, default) of the command line's non-local options.
NONLOCAL_OPTIONS = (
    ("--sampler", "sampler", "block"),
    ("--sweeps", "sweeps", DEFAULT_SWEEPS),
    ("--t-start", "t_start", DEFAULT_T_START),
    ("--t-end", "t_end", DEFAULT_T_END),
    ("--block-size", "block_size", DEFAULT_BLOCK_SIZE),
    ("--consistency-scale", "consistency_scale", None),
)
