"""MCE-F optimised by batch QuickProp (Fahlman 1988), the optimiser the paper names, instead
of L-BFGS: no line search, so it steps through the kinks of the objective.  Prints the
objective and the dev F1 after every iteration.

    python docs/experiments/mce_quickprop.py MODEL TRAIN DEV C ITERATIONS [FIRST_STEP]

Starts from MODEL's weights.  The first step is FIRST_STEP (default 1) along the negative
gradient, in weight-space length; then each weight takes Fahlman's secant step
delta * g / (g_previous - g), at most MAX_GROWTH times its previous step, plus a gradient
step of the first step's rate where the gradient kept its sign; a whole step longer than
MAX_LENGTH first steps is shortened to that length (without it the secant steps blow up at
the objective's kinks within a few iterations).
"""
import sys

import numpy as np

from fstcrf.corpus.conll import read_conll
from fstcrf.model import load_model
from mce_margins import captured_objective      # run from docs/experiments (or with it on PYTHONPATH)

MAX_GROWTH = 1.75
MAX_LENGTH = 4.0


def main(model_path: str, train_path: str, dev_path: str, c: float, iterations: int, first_step: float = 1.0):
    model = load_model(model_path)
    columns = ",".join(model.columns_)
    objective = captured_objective(model, read_conll(train_path, columns), 1.0)
    dev = read_conll(dev_path, columns)

    def value_and_gradient(theta):
        r, gradient = objective.loss_and_gradient(theta)
        return r + theta @ theta / (2 * c), gradient + theta / c

    def dev_f1(theta):
        model.weights_ = theta
        return model.score(dev).f1

    theta = model.weights_.copy()
    value, gradient = value_and_gradient(theta)
    rate = first_step / np.linalg.norm(gradient)
    print(f"0 {value:.6g} {dev_f1(theta):.2f}", flush=True)
    step = -rate * gradient
    for iteration in range(1, iterations + 1):
        theta = theta + step
        previous = gradient
        value, gradient = value_and_gradient(theta)
        print(f"{iteration} {value:.6g} {dev_f1(theta):.2f} |step| {np.linalg.norm(step):.3g}", flush=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = gradient / (previous - gradient)
        factor = np.clip(np.nan_to_num(factor, nan=0.0, posinf=MAX_GROWTH, neginf=-MAX_GROWTH),
                         -MAX_GROWTH, MAX_GROWTH)
        step = factor * step - rate * gradient * (gradient * previous > 0)
        step *= min(1.0, MAX_LENGTH * first_step / max(np.linalg.norm(step), 1e-300))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]),
         *(float(x) for x in sys.argv[6:7]))
