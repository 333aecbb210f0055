"""``CRF``: sklearn_crfsuite.CRF's interface over :class:`fstcrf.model.ChainCRF`.

X is a list of sequences, each a list of token feature dicts as
python-crfsuite takes them (see :mod:`fstcrf.features.attributes`); y a list of label
sequences of the same lengths.  Each pair becomes
``Sentence({"attributes": xseq, "label": yseq})`` and a ChainCRF with
``template="attributes"`` learns column "label".  A CRF with ``reads="pos"``
takes a lower tagger's label from each token dict's key "pos" into a column of
its own (``Sentence({"attributes": dicts without "pos", "pos": labels,
...})``), so that :class:`~fstcrf.sklearn.JointCRF` can vary it.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable, Sequence

import numpy as np
from sklearn.base import BaseEstimator

from fstcrf.features.attributes import COLUMN, check_sentences
from fstcrf.corpus.conll import Sentence
from fstcrf.errors import ArgumentTypeError, EmptySequenceError, FstcrfError, LabelError, ShapeError
from fstcrf.files import check_output_path
from fstcrf.model.chain import ChainCRF, load_model
from fstcrf.model.inspection import model_features
from fstcrf.model.tagging import tagging_plan
from fstcrf.pycrfsuite.items import TARGET, item_list, item_sentence, label_list
from fstcrf.pycrfsuite.params import algorithm_name, chain_crf, parameters, parse_value
from fstcrf.pycrfsuite.tagger import Tagger

#: The CRF parameters that are CRFsuite's, with CRFsuite's names (python-crfsuite's Trainer
#: takes these; sklearn-crfsuite passes them on).
CRFSUITE_NAMES = {
    "min_freq": "feature.minfreq",
    "all_possible_states": "feature.possible_states",
    "all_possible_transitions": "feature.possible_transitions",
    "c1": "c1",
    "c2": "c2",
    "max_iterations": "max_iterations",
    "num_memories": "num_memories",
    "epsilon": "epsilon",
    "period": "period",
    "delta": "delta",
    "linesearch": "linesearch",
    "max_linesearch": "max_linesearch",
    "calibration_eta": "calibration.eta",
    "calibration_rate": "calibration.rate",
    "calibration_samples": "calibration.samples",
    "calibration_candidates": "calibration.candidates",
    "calibration_max_trials": "calibration.max_trials",
    "pa_type": "type",
    "c": "c",
    "error_sensitive": "error_sensitive",
    "averaging": "averaging",
    "variance": "variance",
    "gamma": "gamma",
}
#: The CRF parameter of each CRFsuite name.
SKLEARN_NAMES = {crfsuite: name for name, crfsuite in CRFSUITE_NAMES.items()}


def as_sequences(data, name: str) -> list:
    """The sequences of ``data``, a list or any other iterable of them (a generator is
    read once); ArgumentTypeError for a string, a dict or anything not iterable."""
    if isinstance(data, (str, bytes, dict)) or not isinstance(data, Iterable):
        raise ArgumentTypeError(f"{name} must be a list (or another iterable) of sequences, got {type(data).__name__}")
    return list(data)


def training_sentences(X, y, x_name: str = "X", y_name: str = "y", reads: str | None = None) -> list[Sentence]:
    """One Sentence per (xseq, yseq) pair, with columns "attributes" and "label" (and
    with ``reads``, the lower labels taken out of the dicts); ragged or empty
    sequences and bad labels raise errors naming the sentence."""
    X, y = as_sequences(X, x_name), as_sequences(y, y_name)
    if len(X) != len(y):
        raise ShapeError(f"{x_name} has {len(X)} sequences but {y_name} has {len(y)}")
    sentences = []
    for number, (xseq, yseq) in enumerate(zip(X, y)):
        tokens = item_list(xseq, f"{x_name}[{number}]")
        labels = label_list(yseq, f"{y_name}, sentence {number}", training=True)
        if not tokens:
            raise EmptySequenceError(f"sentence {number} of {x_name} has no tokens")
        if len(tokens) != len(labels):
            raise ShapeError(
                f"sentence {number}, token {min(len(tokens), len(labels))}: {x_name} has "
                f"{len(tokens)} tokens but {y_name} has {len(labels)} labels"
            )
        sentences.append(item_sentence(tokens, f"{x_name}, sentence {number}", reads, labels))
    return sentences


class CRF(BaseEstimator):
    """A linear-chain CRF with sklearn_crfsuite.CRF's parameters, methods and
    learned attributes, trained and decoded by fstcrf.

    CRFsuite's parameters (None: CRFsuite's default; numbers or their text, read
    as python-crfsuite's ``Trainer.set`` reads them) and what they set in
    :class:`~fstcrf.model.ChainCRF`:

    - algorithm: "lbfgs" (default), "l2sgd", "ap", "pa" or "arow".
    - c1 (lbfgs, default 0): the L1 weight, ChainCRF's c1 (OWL-QN).
    - c2 (lbfgs, l2sgd; default 1): the L2 weight c2 ||w||^2, ChainCRF's
      sigma = sqrt(1 / (2 c2)) (c2 = 0: no prior).
    - max_iterations: lbfgs: until convergence (0 too, as in CRFsuite); l2sgd:
      1000; ap, pa, arow: 100.
    - min_freq (default 0): keep state features seen more than this often.
    - all_possible_states (default False): every (attribute, label) pair
      gets a weight (ChainCRF's features="complete").
    - all_possible_transitions (default False): every label pair gets a
      weight; otherwise only pairs seen in training (transitions="seen").
    - num_memories, epsilon, period, delta, linesearch, max_linesearch,
      calibration_eta, calibration_rate, calibration_samples,
      calibration_candidates, calibration_max_trials, pa_type, c,
      error_sensitive, averaging, variance, gamma: the algorithm's settings
      (ChainCRF's ``algorithm_params``; num_memories is "memory").  A
      setting the algorithm does not take raises FstcrfError, as CRFsuite does.
    - verbose: print one line per iteration.
    - model_filename: fit writes the model there (fstcrf's model format),
      once training has succeeded; an unfitted CRF whose model_filename
      exists reads it when first used.
    - keep_tempfiles, trainer_cls: sklearn_crfsuite's temporary files and
      pycrfsuite trainer class; fstcrf has neither, so anything but the
      defaults raises FstcrfError.

    fstcrf's extras: order (1, or 2: states are label pairs), grammar (train
    and decode under a grammar, e.g. "iob2"), grammar_params, threads, and
    reads: the key of the token dicts that holds a lower tagger's label
    (e.g. "pos"), read as the attribute "pos:NN" and, with the transitions,
    so that :class:`~fstcrf.sklearn.JointCRF` can decode this CRF jointly
    with the lower one; its transitions are then all possible ones.
    """

    def __init__(
        self,
        algorithm=None,
        min_freq=None,
        all_possible_states=None,
        all_possible_transitions=None,
        c1=None,
        c2=None,
        max_iterations=None,
        num_memories=None,
        epsilon=None,
        period=None,
        delta=None,
        linesearch=None,
        max_linesearch=None,
        calibration_eta=None,
        calibration_rate=None,
        calibration_samples=None,
        calibration_candidates=None,
        calibration_max_trials=None,
        pa_type=None,
        c=None,
        error_sensitive=None,
        averaging=None,
        variance=None,
        gamma=None,
        verbose=False,
        model_filename=None,
        keep_tempfiles=False,
        trainer_cls=None,
        order=1,
        grammar=None,
        grammar_params=None,
        threads=2,
        reads=None,
    ):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls
        self.order = order
        self.grammar = grammar
        self.grammar_params = grammar_params
        self.threads = threads
        self.reads = reads

    # -- parameters ----------------------------------------------------------
    def chain_crf(self) -> ChainCRF:
        """The unfitted ChainCRF these parameters describe
        (:func:`fstcrf.pycrfsuite.params.chain_crf`); a parameter that does not apply
        (to the algorithm, or to fstcrf) raises FstcrfError."""
        algorithm = algorithm_name("lbfgs" if self.algorithm is None else self.algorithm)
        if self.trainer_cls is not None:
            raise FstcrfError(
                "trainer_cls is a pycrfsuite.Trainer class; fstcrf trains without pycrfsuite, "
                "so leave it None (use verbose=True for a line per iteration)"
            )
        if self.keep_tempfiles:
            raise FstcrfError(
                "keep_tempfiles does not apply: fstcrf keeps the model in memory and writes "
                "no temporary files (give model_filename to write the model)"
            )
        settings = parameters(algorithm)
        given = {name: getattr(self, name) for name in CRFSUITE_NAMES if getattr(self, name) is not None}
        foreign = [name for name in given if CRFSUITE_NAMES[name] not in settings]
        if foreign:
            raise FstcrfError(
                f"algorithm {algorithm!r} takes no {', '.join(foreign)} (its settings are "
                f"{', '.join(SKLEARN_NAMES[name] for name in settings)}); CRFsuite rejects them too"
            )
        self._check_reads()
        values = {  # read as python-crfsuite's Trainer.set reads them: "0.1" is 0.1
            CRFSUITE_NAMES[name]: parse_value(settings[CRFSUITE_NAMES[name]], value, name)
            for name, value in given.items()
        }
        if self.reads is not None:
            values["feature.possible_transitions"] = True
        return chain_crf(
            algorithm,
            values,
            SKLEARN_NAMES,
            threads=self.threads,
            order=self.order,
            grammar=self.grammar,
            grammar_params=self.grammar_params,
            reads=self.reads,
        )

    def _check_reads(self) -> None:
        if self.reads is None:
            return
        if not isinstance(self.reads, str) or not self.reads or self.reads in (COLUMN, TARGET):
            raise FstcrfError(
                f"reads must be the key of the token dicts that holds a lower tagger's label "
                f"(a non-empty string other than {COLUMN!r} and {TARGET!r}), got {self.reads!r}"
            )
        if self.all_possible_transitions is False:
            raise FstcrfError(
                "a CRF that reads a lower tagger's labels weighs every transition under each "
                "lower label; leave all_possible_transitions None or set it True"
            )

    # -- training ------------------------------------------------------------
    def fit(self, X, y, X_dev=None, y_dev=None) -> CRF:
        """Train on X (sequences of token dicts) and y (label sequences); with X_dev
        and y_dev, the iteration with the best dev score is kept.  Nothing is
        written to model_filename unless training succeeds."""
        if (X_dev is None) != (y_dev is None):
            raise FstcrfError("pass both X_dev and y_dev to use held-out data")
        model = self.chain_crf()
        if self.model_filename is not None:
            check_output_path(self.model_filename)
        train = training_sentences(X, y, reads=self.reads)
        dev = None
        if X_dev is not None:
            dev = training_sentences(X_dev, y_dev, "X_dev", "y_dev", reads=self.reads)
            check_sentences(dev)  # bad dev values raise before training
            known = {label for sentence in train for label in sentence[TARGET]}
            for number, sentence in enumerate(dev):
                for position, label in enumerate(sentence[TARGET]):
                    if label not in known:
                        raise LabelError(
                            f"y_dev sentence {number}, token {position}: the label {label!r} never occurs in y"
                        )
        model.fit(train, target=TARGET, dev=dev, callback=_print_iteration if self.verbose else None)
        if self.model_filename is not None:
            model.save(self.model_filename)
        self.__dict__["crf_"] = model
        self.__dict__.pop("_info", None)
        return self

    # -- the fitted model ----------------------------------------------------
    def chain_model(self) -> ChainCRF | None:
        """The fitted ChainCRF, read from model_filename when not fitted; None if neither."""
        if "crf_" not in self.__dict__ and self.model_filename is not None:
            if os.path.isfile(self.model_filename):
                self.__dict__["crf_"] = load_model(self.model_filename)
        return self.__dict__.get("crf_")

    def _fitted(self) -> ChainCRF:
        model = self.chain_model()
        if model is None:
            raise FstcrfError("this CRF is not fitted; call fit first (or give model_filename of a saved model)")
        return model

    def _sentences(self, X) -> tuple[list[Sentence], list[int]]:
        """The nonempty sequences of X as Sentences, and the length of every sequence."""
        sequences = [item_list(xseq, f"X[{number}]") for number, xseq in enumerate(as_sequences(X, "X"))]
        reads = self._fitted().reads
        sentences = [item_sentence(tokens, f"X, sentence {number}", reads) for number, tokens in enumerate(sequences)]
        lengths = [len(tokens) for tokens in sequences]
        if 0 in lengths:  # errors then name the sentences by their place in X
            check_sentences(sentences)
        return [sentence for sentence in sentences if len(sentence)], lengths

    def predict(self, X) -> np.ndarray:
        """The best label sequence of each sequence of X: an object array [B] of lists [T]."""
        model = self._fitted()
        sentences, lengths = self._sentences(X)
        return by_sequence(model.predict(sentences), lengths, [])

    def predict_single(self, xseq) -> list[str]:
        """The best label sequence [T] of one sequence of token dicts (``predict`` of
        ``[xseq]`` without its object array)."""
        model = self._fitted()
        tokens = item_list(xseq, "X[0]")  # named as predict names it
        if not tokens:
            return []
        labels = tagging_plan(model).item_labels(tokens)  # the items as they are, as Tagger.tag's
        return labels if labels is not None else model.predict([item_sentence(tokens, "X, sentence 0", model.reads)])[0]

    def predict_marginals(self, X) -> np.ndarray:
        """Per sequence of X, per token, a dict label -> p(label at the token | sequence):
        an object array [B] of lists [T] of dicts."""
        model = self._fitted()
        sentences, lengths = self._sentences(X)
        labels = list(model.labels_)
        rows = [
            [dict(zip(labels, token.tolist())) for token in marginals]
            for marginals in model.predict_marginals(sentences)
        ]
        return by_sequence(rows, lengths, [])

    def predict_marginals_single(self, xseq) -> list[dict]:
        """predict_marginals of one sequence: a list [T] of dicts label -> probability."""
        return list(self.predict_marginals([xseq])[0])

    def score(self, X, y) -> float:
        """Token accuracy of the predictions on X against y (flat_accuracy_score)."""
        from fstcrf.sklearn.metrics import flat_accuracy_score

        return flat_accuracy_score(y, self.predict(X))

    # -- learned attributes (None when not fitted, as in sklearn_crfsuite) ---
    @property
    def crf_(self) -> ChainCRF | None:
        """The fitted ChainCRF, or None before fit."""
        return self.chain_model()

    @property
    def training_log_(self) -> list | None:
        """The records of the training iterations (``ChainCRF.history_``), or None before fit."""
        model = self.chain_model()
        return None if model is None else model.history_

    @property
    def tagger_(self) -> Tagger | None:
        """python-crfsuite's Tagger over the fitted model (``labels()``, ``tag(xseq)``,
        ``set(xseq)``, ``probability(yseq)``, ``marginal(y, pos)``, ``info()``; see
        :class:`fstcrf.pycrfsuite.Tagger`), or None before fit."""
        model = self.chain_model()
        if model is None:
            return None
        cached = self.__dict__.get("_tagger")
        if cached is None or cached[0] is not model:
            cached = (model, Tagger.of_model(model))
            self.__dict__["_tagger"] = cached
        return cached[1]

    @property
    def classes_(self) -> list[str] | None:
        """The labels [L]."""
        model = self.chain_model()
        return None if model is None else list(model.labels_)

    @property
    def size_(self) -> int | None:
        """The size of the fitted model, in bytes (its pickled ChainCRF)."""
        model = self.chain_model()
        return None if model is None else len(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))

    @property
    def num_attributes_(self) -> int | None:
        """How many attributes have a nonzero state-feature weight."""
        info = self._info_of()
        return None if info is None else len(info[0])

    @property
    def attributes_(self) -> list[str] | None:
        """The attributes with a nonzero state-feature weight [num_attributes_]."""
        info = self._info_of()
        return None if info is None else list(info[0])

    @property
    def state_features_(self) -> dict | None:
        """{(attribute, label): weight} over the nonzero weights (order 2: the label
        of a pair state is its name, "previous current")."""
        info = self._info_of()
        return None if info is None else dict(info[1])

    @property
    def transition_features_(self) -> dict | None:
        """{(label from, label to): weight} over the nonzero weights (order 2: pair states).
        A CRF that reads lower labels adds lower_transition_features_ to them."""
        info = self._info_of()
        return None if info is None else dict(info[2])

    @property
    def lower_transition_features_(self) -> dict | None:
        """{(lower label, from, to): weight} over the nonzero weights of a CRF made with
        ``reads``: added to transition_features_[(from, to)] when the token entered
        has that lower label (a lower label unseen in training adds nothing); empty
        for other CRFs."""
        info = self._info_of()
        return None if info is None else dict(info[3])

    def _info_of(self):
        """(attributes, state features, transition features, lower-label transition
        features) of the fitted model (see model_features), or None."""
        model = self.chain_model()
        if model is None:
            return None
        cached = self.__dict__.get("_info")
        if cached is not None and cached[0] is model:
            return cached[1]
        info = model_features(model)
        self.__dict__["_info"] = (model, info)
        return info

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_info", None)
        state.pop("_tagger", None)
        return state


def by_sequence(results: Sequence, lengths: Sequence[int], empty) -> np.ndarray:
    """The results of the nonempty sequences, ``empty`` for the others, in the array
    sklearn-crfsuite returns, ``np.array(lists, dtype=object)``: an object array [B]
    of lists, or [B, T] when every sequence has T items."""
    produced = iter(results)
    return np.array([list(next(produced)) if length else list(empty) for length in lengths], dtype=object)


def _print_iteration(record: dict) -> None:
    dev = "" if record["dev_score"] is None else f" dev {record['dev_metric']}={record['dev_score']:.2f}"
    norm = "" if record["gradient_norm"] is None else f" gradient_norm={record['gradient_norm']:.4g}"
    print(f"Iter {record['iteration']:<4} time={record['seconds']:.2f} loss={record['objective']:.2f}{norm}{dev}")
