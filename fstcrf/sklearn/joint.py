"""``JointCRF``: fstcrf.sklearn CRFs composed into one joint decoder.

A chain of CRFs, lowest first, where each CRF above the first was made with
``reads=KEY``: the key of the token dicts that holds the label of the CRF
below it (a chunker reading part-of-speech tags, an NER tagger reading
chunks).  Decoding searches the cross product of their label sets for the
tuple of label sequences with the best summed score (Sutton & McCallum 2005;
:mod:`fstcrf.model.compose`), so a chunker's evidence can correct the tagger below
it instead of inheriting its 1-best errors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, clone

from fstcrf.features.attributes import COLUMN
from fstcrf.model.compose import MODES, JointModel, compose
from fstcrf.corpus.conll import Sentence
from fstcrf.errors import ArgumentTypeError, CompositionError, FstcrfError, ShapeError
from fstcrf.pycrfsuite.items import item_list
from fstcrf.sklearn.estimator import CRF, by_sequence, as_sequences


class JointCRF(BaseEstimator):
    """Several :class:`~fstcrf.sklearn.CRF` decoded jointly.

    - crfs: the CRFs, lowest first; CRF k > 0 has ``reads`` set to the key
      of the token dicts that holds CRF k-1's label.  Fitted CRFs may be
      used at once (predict without fit); ``fit`` trains clones.
    - compatibility: None, or per adjacent pair None, a pynini transducer
      from lower to upper labels, or a bool array [L_lower, L_upper] of the
      label pairs allowed at one token (see :func:`fstcrf.model.compose.compose`).
    - scales: positive weights of the CRFs' scores (default all 1).
    - mode: "joint" (exact Viterbi over the product), "cascade" (1-best of
      each CRF feeds the next) or "kbest" (cascade keeping the ``k`` best
      partial tuples).
    - threads: decoding threads.
    - folds: None (CRF k > 0 learns from the gold labels of CRF k-1), or an
      integer >= 2: it learns from CRF k-1's held-out predictions, each of
      ``folds`` consecutive parts of X tagged by a clone trained on the
      others (as ``fstcrf jackknife``), so it trains on the kind of lower
      labels it meets at test time.

    Learned by ``fit``: ``crfs_`` (the fitted clones).  ``predict`` returns
    one object array [B] of label lists per CRF, lowest first.
    """

    def __init__(
        self,
        crfs: Sequence[CRF],
        compatibility=None,
        scales=None,
        mode: str = "joint",
        k: int = 5,
        threads: int = 2,
        folds: int | None = None,
    ):
        self.crfs = crfs
        self.compatibility = compatibility
        self.scales = scales
        self.mode = mode
        self.k = k
        self.threads = threads
        self.folds = folds

    def _check_crfs(self) -> list[CRF]:
        crfs = list(self.crfs) if isinstance(self.crfs, (list, tuple)) else None
        if crfs is None or len(crfs) < 2 or not all(isinstance(crf, CRF) for crf in crfs):
            raise ArgumentTypeError(
                f"crfs must be a list of two or more fstcrf.sklearn.CRF, lowest first, got {self.crfs!r:.80}"
            )
        if self.mode not in MODES:
            raise FstcrfError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        return crfs

    def fit(self, X, ys) -> JointCRF:
        """Train a clone of each CRF on X and its labels: ``ys`` holds one list of
        label sequences per CRF, lowest first.  CRF k > 0 learns with CRF k-1's
        labels (gold, or held-out predictions with ``folds``) set in each token
        dict's key ``reads``."""
        crfs = self._check_crfs()
        ys = as_sequences(ys, "ys")
        if len(ys) != len(crfs):
            raise ShapeError(f"ys must hold one list of label sequences per CRF ({len(crfs)}), got {len(ys)}")
        X = as_sequences(X, "X")
        if self.folds is not None and (
            isinstance(self.folds, bool) or not isinstance(self.folds, int) or not 2 <= self.folds <= len(X)
        ):
            raise FstcrfError(
                f"folds must be None or an integer from 2 to the number of sequences ({len(X)}), got {self.folds!r}"
            )
        fitted, inputs = [], []
        for level, (crf, y) in enumerate(zip(crfs, ys)):
            reads = crf.reads
            if level and reads is not None:
                lower = as_sequences(ys[level - 1], f"ys[{level - 1}]")
                if len(lower) != len(X):
                    raise ShapeError(f"X has {len(X)} sequences but ys[{level - 1}] has {len(lower)}")
                if self.folds is not None:
                    lower = _held_out(crfs[level - 1], inputs[level - 1], lower, self.folds)
                X_level = [
                    _with_labels(item_list(xseq, f"X[{number}]"), labels, reads, number)
                    for number, (xseq, labels) in enumerate(zip(X, lower))
                ]
            else:
                X_level = X
            inputs.append(X_level)
            fitted.append(clone(crf).fit(X_level, y))
        _joint_model(fitted, self)  # a chain that does not fit together fails here
        self.crfs_ = fitted
        return self

    def _model(self) -> JointModel:
        """The composition of the fitted CRFs (of fit, else the CRFs given)."""
        return _joint_model(self.__dict__.get("crfs_") or self._check_crfs(), self)

    def _sentences(self, X, model: JointModel) -> tuple[list[Sentence], list[int]]:
        """The nonempty sequences of X as Sentences of token dicts without the keys
        the CRFs read, and the length of every sequence."""
        keys = {crf.reads for crf in model.components if crf.reads is not None}
        sequences = [item_list(xseq, f"X[{number}]") for number, xseq in enumerate(as_sequences(X, "X"))]
        sentences = [
            Sentence(
                {
                    COLUMN: [
                        {key: value for key, value in token.items() if key not in keys}
                        if isinstance(token, dict) and not keys.isdisjoint(token)
                        else token
                        for token in tokens
                    ]
                }
            )
            for tokens in sequences
            if tokens
        ]
        return sentences, [len(tokens) for tokens in sequences]

    def predict(self, X) -> list[np.ndarray]:
        """Per CRF, lowest first, an object array [B] of label lists [T]: the labels
        of every sequence of X decoded by ``mode``.  Keys the CRFs read are
        ignored in X's dicts (their labels are what is decoded)."""
        self._check_crfs()
        model = self._model()
        sentences, lengths = self._sentences(X, model)
        per_crf = model.predict(sentences, self.mode, self.k) if sentences else [[] for _ in model.components]
        return [by_sequence(labels, lengths, []) for labels in per_crf]

    def predict_single(self, xseq) -> list[list[str]]:
        """Per CRF, the label sequence [T] of one sequence of token dicts."""
        return [list(labels[0]) for labels in self.predict([xseq])]

    def predict_marginals(self, X) -> list[np.ndarray]:
        """Per CRF, an object array [B] of lists [T] of dicts label -> p(label at the
        token | sequence) under the joint model."""
        model = self._model()
        sentences, lengths = self._sentences(X, model)
        per_crf = model.predict_marginals(sentences) if sentences else [[] for _ in model.components]
        return [
            by_sequence(
                [[dict(zip(crf.labels_, row.tolist())) for row in marginals] for marginals in sentences_marginals],
                lengths,
                [],
            )
            for crf, sentences_marginals in zip(model.components, per_crf)
        ]


def _held_out(crf: CRF, X: list, y: list, folds: int) -> list:
    """Label sequences [B] of X, each of ``folds`` consecutive parts predicted by a
    clone of ``crf`` trained on the other parts."""
    cuts = np.linspace(0, len(X), folds + 1).round().astype(int).tolist()
    predicted = []
    for first, last in zip(cuts[:-1], cuts[1:]):
        fold = clone(crf).fit(X[:first] + X[last:], y[:first] + y[last:])
        predicted += [list(labels) for labels in fold.predict(X[first:last])]
    return predicted


def _with_labels(tokens: list, labels, reads: str, number: int) -> list:
    """Copies of a sequence's token dicts with ``reads`` set to its labels."""
    labels = list(labels)
    if len(labels) != len(tokens):
        raise ShapeError(
            f"sentence {number}: X has {len(tokens)} tokens but the labels read as {reads!r} have {len(labels)}"
        )
    for position, token in enumerate(tokens):
        if not isinstance(token, dict):
            raise ArgumentTypeError(
                f"sentence {number}, token {position}: a CRF reading {reads!r} needs token "
                f"dicts, got {type(token).__name__}"
            )
    return [{**token, reads: label} for token, label in zip(tokens, labels)]


def _joint_model(crfs: list[CRF], joint: JointCRF) -> JointModel:
    """The JointModel of fitted CRFs; a chain that does not fit raises CompositionError."""
    models = []
    for level, crf in enumerate(crfs):
        model = crf.chain_model()
        if model is None:
            raise FstcrfError(f"CRF {level} of the chain is not fitted; call JointCRF.fit, or fit each CRF")
        if level == 0 and model.reads is not None:
            raise CompositionError(
                f"the lowest CRF reads the key {model.reads!r}, which no CRF below it "
                "predicts; put the CRF that predicts it first"
            )
        if level and model.reads is None:
            raise CompositionError(
                f"CRF {level} reads no lower labels; make it with reads=KEY, the key of "
                f"the token dicts holding CRF {level - 1}'s label"
            )
        models.append(model)
    return compose(models, joint.compatibility, joint.threads, joint.scales)
