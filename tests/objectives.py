"""Smooth objectives for the optimiser tests: a positive definite quadratic and
logistic regression on random points (both with ``num_weights``,
``num_sequences`` and ``loss_and_gradient``, as training problems have)."""

import numpy as np
from scipy.special import expit


class Quadratic:
    """0.5 (theta - c)' A (theta - c) with A symmetric positive definite, D = len(c)."""

    def __init__(self, seed: int, num_weights: int):
        rng = np.random.default_rng(seed)
        factor = rng.normal(size=(num_weights, num_weights))
        self.matrix = factor @ factor.T + 0.1 * np.eye(num_weights)
        self.centre = rng.normal(0.0, 2.0, num_weights)
        self.num_weights, self.num_sequences = num_weights, 1

    def loss_and_gradient(self, theta):
        residual = theta - self.centre
        gradient = self.matrix @ residual
        return 0.5 * float(residual @ gradient), gradient


class DiagonalQuadratic:
    """0.5 sum_i a_i (theta_i - c_i)^2 over D weights, a fresh gradient per call (as a
    training set's), no other [D] array made: for measuring the memory of a learner."""

    def __init__(self, size: int, seed: int):
        rng = np.random.default_rng(seed)
        self.num_weights = size
        self.scales, self.centre = rng.uniform(0.5, 4.0, size), rng.normal(0.0, 1.0, size)

    def loss_and_gradient(self, theta):
        gradient = np.subtract(theta, self.centre)
        loss = 0.0
        for start in range(0, len(gradient), 4096):  # no [D] temporary
            piece = gradient[start : start + 4096]
            loss += 0.5 * float(piece @ (self.scales[start : start + 4096] * piece))
        gradient *= self.scales
        return loss, gradient


class Logistic:
    """Logistic regression's negative log-likelihood on N random points with noisy labels."""

    def __init__(self, seed: int, num_weights: int, num_points: int = 40):
        rng = np.random.default_rng(seed)
        self.points = rng.normal(size=(num_points, num_weights))
        truth = rng.normal(0.0, 2.0, num_weights)
        positive = rng.random(num_points) < 1.0 / (1.0 + np.exp(-self.points @ truth))
        self.signs = np.where(positive, 1.0, -1.0)
        self.num_weights, self.num_sequences = num_weights, num_points

    def loss_and_gradient(self, theta):
        margins = self.signs * (self.points @ theta)
        loss = float(np.logaddexp(0.0, -margins).sum())
        return loss, self.points.T @ (-self.signs * expit(-margins))  # 1 / (1 + e^m), no overflow
