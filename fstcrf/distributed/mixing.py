"""Iterative parameter mixing (McDonald, Hall & Mann 2010) for the averaged
perceptron and SGD: each epoch, every shard runs one epoch of the online learner
on its own sentences from the mixed weights, and the driver mixes the shards'
weights, each weighted by its share of the sentences, summed in shard order.
The result depends on the shards, not on the workers that ran them.

An epoch of SGD restarts its 1/t step schedule at the shard's epoch (each shard
carries the whole prior once per epoch, 1/B_s of it per sentence), so mixing
approximates the single-process run; it does not reproduce it."""

from __future__ import annotations

import numpy as np

from fstcrf.learn import train
from fstcrf.learn.objective import TrainingSet
from fstcrf.distributed.objective import on_every_shard


def shard_epoch(
    problem: TrainingSet, weights: np.ndarray, algorithm: str, epoch: int, settings: dict
) -> tuple[np.ndarray, float]:
    """Worker: (the weights float [D] after one epoch of ``algorithm`` on the shard from
    ``weights``, that epoch's objective: mistakes or losses)."""
    seed = settings["seed"] + epoch
    if algorithm == "sgd":
        result = train.sgd(problem, settings["sigma"], 1, settings["learning_rate"], seed, initial=weights)
    else:
        result = train.averaged_perceptron(problem, 1, seed, initial=weights, **settings["params"])
    return result.weights, result.history[-1]["objective"]


def mix(
    client,
    problems: list,
    sizes: list[int],
    num_weights: int,
    algorithm: str,
    max_iter: int,
    settings: dict,
    evaluate: train.Evaluate | None = None,
    callback: train.Callback | None = None,
) -> train.TrainingResult:
    """``max_iter`` epochs of iterative parameter mixing of ``algorithm`` ("perceptron" or
    "sgd") over the shards' training sets ``problems`` of ``sizes`` sentences each.
    Records as :mod:`fstcrf.learn.train`'s (objective: the shards' mistakes or losses summed)."""
    monitor = train.Monitor(f"{algorithm}-mixing", evaluate, callback)
    shares = np.asarray(sizes, dtype=np.float64) / sum(sizes)
    weights = np.zeros(num_weights)
    with monitor.interruptible():
        for epoch in range(max_iter):
            results = on_every_shard(client, shard_epoch, problems, weights, algorithm, epoch, settings)
            weights = shares[0] * results[0][0]
            for share, (shard_weights, _) in zip(shares[1:], results[1:]):
                weights += share * shard_weights
            if monitor.end_iteration(weights, sum(objective for _, objective in results)):
                break
    return monitor.result(weights)
