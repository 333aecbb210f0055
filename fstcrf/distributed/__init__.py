"""Data-parallel training and tagging on Dask (``pip install "fstcrf[distributed]"``).

One concern per module; Dask is imported only inside them, when they run:

- :mod:`.cluster`: a client for a scheduler address or ``local:N``;
- :mod:`.shards`: a corpus cut into shards (files, byte ranges aligned to
  sentences, lists of files) and read on the workers;
- :mod:`.dictionary`: the counting passes (labels, predicates, supported
  features) reduced across the workers;
- :mod:`.objective`: the driver's :class:`~fstcrf.learn.train.Problem` that sums one
  gradient per shard in a fixed order and retries an evaluation a lost worker broke;
- :mod:`.checkpoint`: L-BFGS state saved every N iterations, for ``--resume``;
- :mod:`.fit`: the estimator's distributed ``fit``;
- :mod:`.tagging`: many files, or byte ranges of one, tagged in parallel and
  written in input order.

See docs/distributed.md for the design and the measured figures.
"""
