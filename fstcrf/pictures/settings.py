"""The defaults of the pictures, in a module without numpy, so that the command line's
help can show them without loading it."""

#: The most states a picture of an automaton may have unless the caller raises it.
DEFAULT_MAX_STATES = 200

#: The most states (one per token and state drawn) a lattice picture may have unless raised.
DEFAULT_MAX_NODES = 1000

#: A lattice picture leaves out states and arcs of lower posterior probability.
DEFAULT_THRESHOLD = 0.01

#: The document view flags chunks and tags of lower probability.
DEFAULT_LOW_CONFIDENCE = 0.5
