"""The MCE-F objective at a trained model's weights on a training file: r, the smoothed
counts, how many gold chunks decoding misses and how many false chunks it outputs, and
how the segments' misclassification measures d fall around the sigmoid's slope.

    python docs/experiments/mce_margins.py MODEL TRAIN [ALPHA]

The objective is the one ``ChainCRF(algorithm="mce-f").fit(TRAIN, init=MODEL)`` builds
(same features, labels and gold states); it is captured where fit hands it to the
optimiser, and no training step is taken.
"""
import sys

import numpy as np

from fstcrf import train as training
from fstcrf.corpus.conll import read_conll
from fstcrf.learn.mce import SegmentFScore
from fstcrf.model import ChainCRF, load_model

BINS = (-np.inf, -10, -3, -1, 0, 1, 3, np.inf)


class Captured(Exception):
    def __init__(self, objective):
        self.objective = objective


def captured_objective(model, corpus, alpha: float) -> SegmentFScore:
    optimise = training.lbfgs

    def capture(problem, *args, **kwargs):
        if isinstance(problem, SegmentFScore):
            raise Captured(problem)
        return optimise(problem, *args, **kwargs)

    training.lbfgs = capture
    try:
        ChainCRF(algorithm="mce-f", order=model.order, mce_alpha=alpha).fit(corpus, target=model.target_, init=model)
    except Captured as captured:
        return captured.objective
    finally:
        training.lbfgs = optimise
    raise RuntimeError("fit did not reach the F-score stage")


def main(model_path: str, train_path: str, alpha: float = 1.0) -> None:
    model = load_model(model_path)
    objective = captured_objective(model, read_conll(train_path, ",".join(model.columns_)), alpha)
    theta = model.weights_
    r, gradient = objective.loss_and_gradient(theta)
    tp, fn, fp = objective.last_counts
    blocks = [objective.block_spans(theta, first, last) for plan in objective._plans for first, last in plan]
    d = np.concatenate([block.d for block in blocks])
    gold = np.concatenate([block.gold for block in blocks])
    print(f"r {r:.6g}  smoothed TP {tp:.1f} FN {fn:.1f} FP {fp:.1f}  smoothed F {100 / (1 + r):.3f}")
    print(f"|grad r| {np.linalg.norm(gradient):.3g}  |theta|^2 {theta @ theta:.5g}")
    print(f"gold segments {gold.sum()}, missed by decoding (d > 0) {(d[gold] > 0).sum()}; "
          f"candidate false positives {(~gold).sum()}, output by decoding (d > 0) {(d[~gold] > 0).sum()}")
    for low, high in zip(BINS[:-1], BINS[1:]):
        inside = (d >= low) & (d < high)
        print(f"d in [{low}, {high}): gold {(inside & gold).sum()}, candidates {(inside & ~gold).sum()}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(float(x) for x in sys.argv[3:4]))
