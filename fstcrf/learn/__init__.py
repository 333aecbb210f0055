"""Learners turn data into weights: the training objective over encoded
sentences, L-BFGS and OWL-QN, the perceptron and SGD, CRFsuite's online
learners, MCE-F, and learning from bandit and logged feedback, with their
settings."""
