"""The engine: label topologies, scored lattices (potentials) and exact
inference over them in the C kernel, joint inference over composed chains,
lattice export and budgets.  It knows no features, corpora or learners."""
