"""Ctrl-C while the dev set is scored: the iteration being scored is neither recorded
nor counted, so that the count of iterations and the training record agree."""

from types import SimpleNamespace

import numpy as np

from fstcrf.learn.train import Monitor


def test_an_interrupt_while_scoring_counts_only_the_recorded_iterations():
    def evaluate(theta):
        if theta[0] == 3:
            raise KeyboardInterrupt
        return SimpleNamespace(primary=float(theta[0]), metric="f1")

    monitor = Monitor("lbfgs", evaluate, None)
    with monitor.interruptible():
        for iteration in range(1, 6):
            monitor.end_iteration(np.full(2, float(iteration)), 1.0 / iteration)
    result = monitor.result(np.zeros(2))
    assert result.interrupted
    assert result.n_iter == len(result.history) == 2 and [r["iteration"] for r in result.history] == [1, 2]
    assert result.best_iteration == 2 and result.weights.tolist() == [2.0, 2.0]
