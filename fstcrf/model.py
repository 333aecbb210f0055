"""The estimator: a linear-chain CRF over CoNLL columns with Sha & Pereira's factored
features (see :mod:`fstcrf.features.encoding` for the features and the layout of ``weights_``).

The pieces live in their own modules: :mod:`fstcrf.corpus.labels` (gold columns,
partial labels, label paths), :mod:`fstcrf.features.encoding` (encoded sentences and
the feature dictionary), :mod:`fstcrf.learn.objective` (the scorer and the training
objective), :mod:`fstcrf.learn.train` (the algorithms) and :mod:`fstcrf.modelfile`
(model files; :func:`save_model` and :func:`load_model` are importable from
here too).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import numpy as np
import pynini

from fstcrf.learn import train
from fstcrf.corpus.conll import Corpus, Sentence, as_corpus, as_sentences
from fstcrf.document.consistency import ConsistencyPenalties
from fstcrf.features.encoding import (
    FEATURE_SETS,
    EncodedSentences,
    FactoredFeatures,
    TransitionWeights,
    build_features,
    drop_zero_features,
    token_classes,
)
from fstcrf.errors import (
    ArgumentTypeError,
    BudgetError,
    EmptySequenceError,
    FeedbackError,
    FstcrfError,
    InfeasibleError,
    ModelFileError,
    TemplateError,
)
from fstcrf.corpus.evaluate import ChunkScores, TagScores, check_single_labels, is_chunk_labels, score_labels
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import TEMPLATES, Template, check_reading_template, resolve_template
from fstcrf.grammar import Grammar, compile_grammar, constrain, load_grammar, restrict_to
from fstcrf.engine.inference import Potentials, blas_single_threaded, kbest, log_partition, sample
from fstcrf.corpus.labels import UNKNOWN_LABEL, chain_topology, gold_label_set, gold_states, parse_gold, split_labels
from fstcrf.modelfile import MODEL_KIND, header_field, read_container, write_container
from fstcrf.learn.settings import (
    DEFAULT_DRAWS,
    DEFAULT_LEARNING_RATE,
    DEFAULT_SIGMA,
    SGD_LEARNING_RATE,
    SIGMA_RANGE,
    WEIGHTINGS,
    BanditSettings,
    check_positive,
)
from fstcrf.learn.objective import Scorer, TrainingSet, seen_edges
from fstcrf.phases import phase

__all__ = ["ALGORITHMS", "BIAS", "TEMPLATES", "UNKNOWN_LABEL", "ChainCRF", "load_model", "save_model"]

ALGORITHMS = ("lbfgs", "perceptron", "ap", "sgd", "l2sgd", "pa", "arow", "mce-f", "bandit")
TRANSITION_SETS = ("all", "seen")
#: The name of the always-true predicate.
BIAS = "bias"

logger = logging.getLogger(__name__)


def _new_extractor(template, min_count: int):
    """The unfitted extractor of a resolved template."""
    if hasattr(template, "extractor"):
        return template.extractor(min_count)
    return FeatureExtractor(template, min_count)


#: The arguments of a learner that ChainCRF sets itself (the rest are algorithm_params).
_LEARNER_ARGUMENTS = frozenset(
    {
        "problem",
        "sigma",
        "c2",
        "l1",
        "max_iter",
        "tol",
        "evaluate",
        "callback",
        "initial",
        "name",
        "seed",
        "learning_rate",
        "frozen",
    }
)


def _learner(algorithm: str):
    """The training function of an algorithm of fstcrf.learn.train or fstcrf.learn.online."""
    if algorithm in ("pa", "arow", "l2sgd"):
        from fstcrf.learn import online

        return {"pa": online.passive_aggressive, "arow": online.arow, "l2sgd": online.l2sgd}[algorithm]
    return {
        "lbfgs": train.lbfgs,
        "mce-f": train.lbfgs,
        "perceptron": train.averaged_perceptron,
        "ap": train.averaged_perceptron,
        "sgd": train.sgd,
    }.get(algorithm)


_PARAMS = (
    "template",
    "order",
    "algorithm",
    "sigma",
    "c1",
    "max_iter",
    "features",
    "min_count",
    "min_freq",
    "transitions",
    "algorithm_params",
    "threads",
    "tol",
    "learning_rate",
    "seed",
    "grammar",
    "grammar_params",
    "reads",
    "read_transitions",
    "mce_c",
    "mce_iter",
    "mce_alpha",
    "mce_beta",
    "objective",
    "feedback",
    "draws",
    "baseline",
    "step",
    "clip",
    "batch_size",
    "feedback_flip",
    "feedback_noise",
    "weighting",
    "max_ratio",
    "client",
)


class ChainCRF:
    """A linear-chain CRF over CoNLL columns with Sha & Pereira's factored features.

    Args:
        template: a :class:`~fstcrf.features.template.Template`, template text, or a
            name: "sha-pereira" (Sha & Pereira's Table 1), "crfpp", ... (see
            ``TEMPLATES``), or "attributes": the tokens of column "attributes"
            are CRFsuite-style feature dicts (see :mod:`fstcrf.features.attributes`).
        order: 1 (states are labels) or 2 (states are tag pairs, which needs
            the outside tag "O" among the labels).
        algorithm: "lbfgs", "perceptron" (or "ap") or "sgd" (see :mod:`fstcrf.learn.train`),
            CRFsuite's "l2sgd", "pa" (passive-aggressive) or "arow" (see
            :mod:`fstcrf.learn.online`), or
            "mce-f": penalised log-likelihood by L-BFGS (``sigma``, ``max_iter``),
            then the smoothed segment F-score of Suzuki et al. 2006 from those
            weights (see :mod:`fstcrf.learn.mce`), with prior ||theta||^2 / (2 mce_c)
            for ``mce_iter`` L-BFGS iterations.  ``fit(init=model)`` skips the
            first stage.  Needs IOB2 chunk labels and full labels.
        sigma: standard deviation of the Gaussian prior on every weight
            (lbfgs, sgd), from 1e-100 to 1e100, or math.inf (no prior).  10
            (variance 100) is a mild prior.  CRFsuite's c2 is 1 / (2 sigma^2).
        c1: weight of an L1 penalty c1 * ||theta||_1 (algorithms "lbfgs" and
            "mce-f"'s first stage, by OWL-QN); with sigma it is an elastic net.
            Zero weights are dropped from the feature dictionary after training.
        max_iter: L-BFGS iterations or online epochs (bandit: epochs).
        features: "supported", "complete" or (order 2) "complete-tags" (see
            :mod:`fstcrf.features.encoding`); None (the default) is "supported", and
            "complete" for algorithm "bandit", which never sees gold labels.
        min_count: keep predicates true at this many training tokens or more.
        min_freq: CRFsuite's cut-off: keep the (predicate, output) pairs seen at
            more than this many training tokens (the pairs a "complete" set
            adds are kept).
        transitions: "all" (a weight for every edge of the topology) or
            "seen" (CRFsuite's default: only edges taken by the gold paths have
            a weight; the others score 0).
        algorithm_params: further settings of the algorithm, by name: lbfgs
            and mce-f (both of its stages): memory, epsilon, period, delta,
            linesearch, max_linesearch; ap:
            epsilon; pa: pa_type, c, error_sensitive, averaging, epsilon;
            arow: variance, gamma, epsilon; l2sgd: period, delta and the
            calibration_* settings (see :mod:`fstcrf.learn.train` and
            :mod:`fstcrf.learn.online`).
        threads: threads for the L-BFGS gradient, decoding and dev scoring (the
            online algorithms update one sentence at a time, in one thread).
        tol: L-BFGS stops when an iteration lowers the objective by less than
            this fraction of it.
        learning_rate: the initial SGD step size (None: 0.1); the bandit step
            size (None: :data:`fstcrf.learn.settings.DEFAULT_LEARNING_RATE`).
        seed: the shuffling seed of the online algorithms (bandit: also of
            the draws and the simulated feedback's noise).
        grammar: train and decode under a grammar (a shipped grammar name such
            as "iob2" or a grammar file): Z sums only over the label sequences
            it accepts, and predictions are always accepted by it.
        grammar_params: values for the grammar's parameters, e.g. {"X": "NP"}.
        reads: a column holding a lower tagger's labels (e.g. "pos") that this
            model reads at the same token only: the template may use it at
            offset 0 only, so that :func:`fstcrf.compose.compose` can decode
            the two models jointly (the predicates reading it are conjoined
            with the lower label).  Trained on the column as given (gold, or
            jackknifed predictions).
        read_transitions: with ``reads``, the transition weights depend on the
            lower label at the new token too, f(y_{t-1}, y_t, lower_t): a base
            weight per edge plus a deviation per (lower label, edge).
        mce_c: C of the F-score stage's prior (algorithm "mce-f"); the default 1e7 is the
            dev choice on CoNLL-2000 and CoNLL-2003, where 1e5 only shrinks the weights
            (docs/mce.md).
        mce_iter: L-BFGS iterations of the F-score stage (algorithm "mce-f"); on held-out
            CoNLL-2000 folds the gain peaks near the default 8 and is gone by 20.
        mce_alpha, mce_beta: the F-score stage's sigmoid 1 / (1 + exp(-alpha d - beta))
            of a segment's misclassification measure d (the paper's 1 and 0).
        objective, draws, baseline, step, clip, batch_size: algorithm "bandit"
            (learning from sampled outputs scored by feedback, see
            :mod:`fstcrf.learn.bandit`): the objective ("expected", "pairwise",
            "pairwise-independent", "cross-entropy"), draws per sentence, the
            baseline ("none", "mean", "loo"; None: the objective's default,
            see :class:`~fstcrf.learn.settings.BanditSettings`), the step rule
            ("constant", "adagrad", "adam"), the probability floor of
            cross-entropy and the sentences per update.
        feedback: algorithm "bandit": "f1" or "accuracy" (a simulated user
            scoring each draw against the ``target`` column; the learner never
            reads that column), a feedback object of :mod:`fstcrf.learn.feedback`,
            or a function ``feedback(sentence, labels) -> float`` in [0, 1].
        feedback_flip, feedback_noise: simulated feedback only: the gain is
            flipped to 1 - g with this probability and perturbed by Gaussian
            noise of this standard deviation (seeded by ``seed``).
        weighting, max_ratio: :meth:`fit_log` (learning from logged feedback):
            "self-normalised", "clipped" (importance ratios clipped at
            ``max_ratio``) or "ips".
        client: a ``dask.distributed.Client``: ``fit`` trains data-parallel on its
            workers (algorithm "lbfgs"; the corpus may also be a CoNLL file or a
            list of files, read by the workers; see :mod:`fstcrf.distributed`).

    The gold column may leave labels unknown, "?", or give the labels a token
    may take, "B-NP|I-NP" (training only): those positions are marginalised.

    Learned attributes: ``labels_`` (L labels), ``topology_``, ``extractor_``
    (the fitted FeatureExtractor), ``features_`` (the FactoredFeatures
    dictionary), ``weights_`` float [F + E], ``target_`` (the column
    trained on), ``columns_`` (the column names of the training file),
    ``n_iter_``, ``best_iteration_`` (whose weights were kept),
    ``interrupted_`` and ``history_`` (one record per iteration, see
    :mod:`fstcrf.learn.train`), ``constraint_`` (the compiled training grammar, a
    pynini acceptor over ``labels_``, or None), ``lower_labels_`` (the values
    of the ``reads`` column seen in training, or None), ``consistency_``
    (label-consistency penalties for non-local decoding, see
    :mod:`fstcrf.document`, or None; ``fit`` leaves it None).
    """

    def __init__(
        self,
        template: Template | str = "sha-pereira",
        order: int = 1,
        algorithm: str = "lbfgs",
        sigma: float = DEFAULT_SIGMA,
        c1: float = 0.0,
        max_iter: int = 100,
        features: str | None = None,
        min_count: int = 1,
        min_freq: float = 0.0,
        transitions: str = "all",
        algorithm_params: dict | None = None,
        threads: int = 2,
        tol: float = 1e-7,
        learning_rate: float | None = None,
        seed: int = 0,
        grammar: str | None = None,
        grammar_params: dict | None = None,
        reads: str | None = None,
        read_transitions: bool = True,
        mce_c: float = 1e7,
        mce_iter: int = 8,
        mce_alpha: float = 1.0,
        mce_beta: float = 0.0,
        objective: str = "expected",
        feedback="f1",
        draws: int = DEFAULT_DRAWS,
        baseline: str | None = None,
        step: str = "adam",
        clip: float = 0.0,
        batch_size: int = 16,
        feedback_flip: float = 0.0,
        feedback_noise: float = 0.0,
        weighting: str = "self-normalised",
        max_ratio: float = 10.0,
        client=None,
    ):
        self.template = template
        self.order = order
        self.algorithm = algorithm
        self.sigma = sigma
        self.c1 = c1
        self.max_iter = max_iter
        self.features = features
        self.min_count = min_count
        self.min_freq = min_freq
        self.transitions = transitions
        self.algorithm_params = algorithm_params
        self.threads = threads
        self.tol = tol
        self.learning_rate = learning_rate
        self.seed = seed
        self.grammar = grammar
        self.grammar_params = grammar_params
        self.reads = reads
        self.read_transitions = read_transitions
        self.mce_c = mce_c
        self.mce_iter = mce_iter
        self.mce_alpha = mce_alpha
        self.mce_beta = mce_beta
        self.objective = objective
        self.feedback = feedback
        self.draws = draws
        self.baseline = baseline
        self.step = step
        self.clip = clip
        self.batch_size = batch_size
        self.feedback_flip = feedback_flip
        self.feedback_noise = feedback_noise
        self.weighting = weighting
        self.max_ratio = max_ratio
        self.client = client

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments, by name (scikit-learn's protocol: ``clone`` works;
        no parameter is an estimator, so ``deep`` changes nothing)."""
        return {name: getattr(self, name) for name in _PARAMS}

    def set_params(self, **params) -> ChainCRF:
        """Set constructor arguments by name and return self (scikit-learn's protocol).
        They are checked when ``fit`` runs."""
        unknown = sorted(set(params) - set(_PARAMS))
        if unknown:
            raise FstcrfError(
                f"ChainCRF has no parameter {', '.join(map(repr, unknown))}; its parameters are {', '.join(_PARAMS)}"
            )
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def _check_params(self) -> None:
        if isinstance(self.order, bool) or self.order not in (1, 2):
            raise FstcrfError(f"order must be 1 or 2, got {self.order!r}")
        if self.algorithm not in ALGORITHMS:
            raise FstcrfError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {self.algorithm!r}")
        if self.features is not None and self.features not in FEATURE_SETS:
            raise FstcrfError(f"features must be one of {', '.join(FEATURE_SETS)} or None, got {self.features!r}")
        if self.algorithm == "bandit" and self.features not in (None, "complete"):
            raise FstcrfError(
                f"algorithm 'bandit' never sees gold labels, so it cannot choose the "
                f"{self.features!r} features they support; use features='complete' (or None)"
            )
        if self.features == "complete-tags" and self.order != 2:
            raise FstcrfError("features='complete-tags' needs order=2 (in order 1 states are tags: use 'complete')")
        check_positive("threads", self.threads, integer=True)
        check_positive("sigma", self.sigma, bounds=SIGMA_RANGE, infinite=True)
        check_positive("max_iter", self.max_iter, integer=True)
        check_positive("min_count", self.min_count, integer=True)
        check_positive("c1", self.c1, zero=True)
        check_positive("min_freq", self.min_freq, zero=True)
        if self.c1 > 0 and self.algorithm not in ("lbfgs", "mce-f"):
            raise FstcrfError(
                f"c1 (an L1 penalty) is trained by OWL-QN, with algorithm 'lbfgs' or "
                f"'mce-f'; algorithm {self.algorithm!r} has no L1 penalty"
            )
        if self.transitions not in TRANSITION_SETS:
            raise FstcrfError(f"transitions must be one of {', '.join(TRANSITION_SETS)}, got {self.transitions!r}")
        if self.transitions == "seen" and (self.algorithm == "bandit" or self.reads is not None):
            raise FstcrfError("transitions='seen' needs gold paths and a model that reads no lower labels")
        self._learner_params()
        check_positive("tol", self.tol)
        if self.learning_rate is not None:
            check_positive("learning_rate", self.learning_rate)
        # mce_c is the F-score stage's prior variance: sigma = sqrt(mce_c)
        check_positive("mce_c", self.mce_c, bounds=tuple(x**2 for x in SIGMA_RANGE), infinite=True)
        check_positive("mce_iter", self.mce_iter, integer=True)
        check_positive("mce_alpha", self.mce_alpha)
        if not isinstance(self.mce_beta, (int, float, np.floating)) or not np.isfinite(self.mce_beta):
            raise ArgumentTypeError(f"mce_beta must be a finite number, got {self.mce_beta!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise ArgumentTypeError(f"seed must be an integer, got {type(self.seed).__name__} {self.seed!r}")
        if not (self.reads is None or isinstance(self.reads, str)):
            raise ArgumentTypeError(f"reads must be a column name or None, got {type(self.reads).__name__}")
        if not (self.grammar_params is None or isinstance(self.grammar_params, dict)):
            raise ArgumentTypeError(f"grammar_params must be a dict or None, got {type(self.grammar_params).__name__}")
        if self.weighting not in WEIGHTINGS:
            raise FstcrfError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {self.weighting!r}")
        check_positive("max_ratio", self.max_ratio)
        if self.algorithm == "bandit":
            self._bandit_settings().check()
            if self.grammar is not None or self.reads is not None:
                raise FstcrfError(
                    "algorithm 'bandit' does not train under a grammar nor read a lower "
                    "tagger's labels yet; decode under a grammar instead"
                )

    def _learner_params(self) -> dict:
        """``algorithm_params`` checked against the learner's settings (FstcrfError names
        the unknown ones and those the algorithm takes)."""
        params = dict(self.algorithm_params or {})
        if self.algorithm_params is not None and not isinstance(self.algorithm_params, dict):
            raise ArgumentTypeError(
                f"algorithm_params must be a dict or None, got {type(self.algorithm_params).__name__}"
            )
        learner = _learner(self.algorithm)
        import inspect

        accepted = (
            []
            if learner is None
            else [
                name
                for name, parameter in inspect.signature(learner).parameters.items()
                if name not in _LEARNER_ARGUMENTS and parameter.kind is not inspect.Parameter.VAR_KEYWORD
            ]
        )
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise FstcrfError(
                f"algorithm {self.algorithm!r} has no setting {', '.join(map(repr, unknown))}; "
                f"its settings are {', '.join(accepted) or 'none'}"
            )
        return params

    @staticmethod
    def _dev_gold(dev, target: str) -> tuple[Corpus, list[list[str]]] | None:
        """(the dev corpus, its gold ``target`` column), checked before any training work
        (partial labels raise LabelError), and the selection metric logged; None
        without dev."""
        if dev is None:
            return None
        dev = as_corpus(dev, "ChainCRF.fit (dev)")
        gold = dev.column(target)
        check_single_labels(gold)
        logger.info("selecting on dev %s", "chunk F1" if is_chunk_labels(gold) else "token accuracy")
        return dev, gold

    def _dev_evaluator(
        self,
        dev_gold: tuple[Corpus, list[list[str]]] | None,
        extractor: FeatureExtractor,
        scorer: Scorer,
        lower_labels: Sequence[str] | None,
    ):
        """The dev scoring function of training (None without dev): weights -> scores of
        the predicted column against ``dev_gold`` (from :meth:`_dev_gold`): chunk F1
        for chunk labels, else accuracy."""
        if dev_gold is None:
            return None
        dev, gold = dev_gold
        encoded = EncodedSentences.from_corpus(extractor, dev, token_class=self._token_classes(dev, lower_labels))

        def evaluate(weights: np.ndarray) -> ChunkScores | TagScores:
            return score_labels(gold, split_labels(scorer.topology, scorer.paths(encoded, weights), encoded.offsets))

        return evaluate

    def _bandit_settings(self) -> BanditSettings:
        rate = DEFAULT_LEARNING_RATE if self.learning_rate is None else self.learning_rate
        return BanditSettings(
            self.objective,
            self.draws,
            self.baseline,
            self.step,
            rate,
            self.clip,
            self.batch_size,
            self.max_iter,
            self.seed,
        )

    def _bandit_feedback(self, corpus: Corpus, target: str):
        """The feedback source of algorithm "bandit" (its ``labels`` are the model's)."""
        from fstcrf.learn.feedback import CallableFeedback, simulated_feedback

        if hasattr(self.feedback, "gains") and hasattr(self.feedback, "labels"):
            return self.feedback
        labels = gold_label_set(corpus.column(target))
        if callable(self.feedback):
            return CallableFeedback(self.feedback, corpus.sentences, labels)
        return simulated_feedback(
            corpus.sentences, target, labels, self.feedback, self.feedback_flip, self.feedback_noise, self.seed
        )

    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise FstcrfError("this ChainCRF is not fitted; call fit or load_model first")

    def _transition_layout(
        self, num_edges: int, lower_labels: Sequence[str] | None, active: np.ndarray | None = None
    ) -> TransitionWeights:
        """How the transition weights are laid out, given the lower labels seen in
        training and the edges with a weight (None: all)."""
        reading = self.reads is not None and self.read_transitions
        return TransitionWeights(num_edges, len(lower_labels or ()) if reading else 0, active)

    def _token_classes(self, sentences: Sequence[Sentence], lower_labels: Sequence[str] | None) -> np.ndarray | None:
        """int32 [N]: the transition class of each token, the index of its ``reads`` value
        among lower_labels (len(lower_labels) for a value unseen in training); None when
        the transitions do not read a lower label."""
        if self.reads is None or not self.read_transitions:
            return None
        return token_classes(sentences, self.reads, lower_labels)

    def _encode(self, sentences: Sequence[Sentence]) -> EncodedSentences:
        """Sentences encoded by the fitted extractor, with their transition classes."""
        with phase("features"):
            return EncodedSentences.from_corpus(
                self.extractor_, sentences, token_class=self._token_classes(sentences, self.lower_labels_)
            )

    def _scorer(self) -> Scorer:
        return Scorer(
            self.features_,
            self.topology_,
            int(self.threads),
            self.constraint_,
            self._transition_layout(self.topology_.num_edges, self.lower_labels_, self.active_edges_),
        )

    def transition_scores(self, lower_labels: Sequence[str]) -> np.ndarray:
        """float [K, E]: the transition scores when the lower label at the new token is
        each of ``lower_labels`` (K of them); rows are equal when the transitions do
        not read a lower label."""
        self._check_fitted()
        F = self.features_.num_features
        table = self._scorer().transitions.scores(self.weights_[F:])
        classes = (
            self._token_classes([Sentence({self.reads: list(lower_labels)})], self.lower_labels_)
            if table.ndim == 2
            else np.zeros(len(lower_labels), dtype=np.int64)
        )
        return np.atleast_2d(table)[classes]

    # -- training ------------------------------------------------------------
    @blas_single_threaded()
    def fit(
        self,
        corpus: Corpus | Sequence[Sentence],
        target: str = "chunk",
        dev: Corpus | Sequence[Sentence] | None = None,
        callback: train.Callback | None = None,
        init: ChainCRF | None = None,
    ) -> ChainCRF:
        """Learn the labels of column ``target`` of ``corpus``.

        With ``dev`` the weights of the iteration with the best dev score are
        kept: chunk F1 for chunk labels, else token accuracy (see
        :func:`~fstcrf.corpus.evaluate.score_labels`).  ``callback(record)`` sees each iteration's record (see
        :mod:`fstcrf.learn.train`) and may return True to stop.  Ctrl-C stops
        training and keeps the best weights so far (``interrupted_`` is True).
        ``init``, a fitted model (algorithms "lbfgs" and "mce-f"), is the
        starting point: its template, order, feature dictionary and weights
        are used, and the gold labels must be among its labels.
        """
        if self.client is not None:
            from fstcrf.distributed.fit import fit_on_dask

            return fit_on_dask(self, corpus, self.client, target, dev, callback, init=init)
        self._check_params()
        corpus = as_corpus(corpus, "ChainCRF.fit")
        if not isinstance(target, str):
            raise ArgumentTypeError(f"target must be a column name, got {type(target).__name__} {target!r}")
        if len(corpus) == 0:
            raise EmptySequenceError("the training corpus has no sentences")
        template = self._template_of(init)
        if target in template.columns:
            raise TemplateError(
                f"the template reads column {target!r}, the column the model "
                "learns to predict; at tagging time that column is unknown"
            )
        if self.reads is not None:
            check_reading_template(template, self.reads, target, corpus.column_names)
        feedback = gold_labels = None
        if self.algorithm == "bandit":  # the learner reads labels from the feedback only
            feedback = self._bandit_feedback(corpus, target)
        else:
            gold_labels = corpus.column(target)
        dev_gold = self._dev_gold(dev, target)
        if init is not None:
            topology, extractor = init.topology_, init.extractor_
        else:
            labels = gold_label_set(gold_labels) if feedback is None else list(feedback.labels)
            if len(labels) == 1:
                logger.warning(
                    "every training label of column %r is %r: the model can only predict %r",
                    target,
                    labels[0],
                    labels[0],
                )
            topology = chain_topology(self.order, labels)
            extractor = _new_extractor(template, self.min_count)
        constraint = self._training_constraint(topology)
        lower_labels = (
            init.lower_labels_
            if init is not None
            else None
            if self.reads is None
            else sorted({value for values in corpus.column(self.reads) for value in values})
        )
        with phase("features"):
            encoded = EncodedSentences.from_corpus(
                extractor, corpus, fit=init is None, token_class=self._token_classes(corpus, lower_labels)
            )
        label_ids = states = allowed_labels = None
        if gold_labels is not None:
            label_ids, allowed_labels = parse_gold(topology, gold_labels)
            states = gold_states(topology, label_ids, encoded.offsets)
        if allowed_labels is not None and self.algorithm not in ("lbfgs", "sgd", "bandit"):
            raise FstcrfError(
                f"algorithm {self.algorithm!r} needs fully labelled training data; train "
                "partially labelled data with algorithm='lbfgs' or 'sgd'"
            )
        feature_set = self.features or ("complete" if self.algorithm == "bandit" else "supported")
        features = (
            init.features_
            if init is not None
            else build_features(
                encoded,
                label_ids if self.order == 1 else states,
                label_ids,
                topology,
                self.order,
                feature_set,
                extractor.column_of(BIAS),
                self.min_freq,
            )
        )
        active_edges = (
            init.active_edges_
            if init is not None
            else seen_edges(topology, states, encoded.offsets)
            if self.transitions == "seen"
            else None
        )
        scorer = Scorer(
            features,
            topology,
            int(self.threads),
            constraint,
            self._transition_layout(topology.num_edges, lower_labels, active_edges),
        )
        problem = TrainingSet(scorer, encoded, states, allowed_labels) if feedback is None else None
        evaluate = self._dev_evaluator(dev_gold, extractor, scorer, lower_labels)

        stopped_by = None
        if self.algorithm == "bandit":
            order = np.random.default_rng(self.seed).permutation(len(corpus))
            from fstcrf.learn import bandit

            sampled = bandit.SampledGradient(scorer, bandit.permuted(encoded, order))
            try:
                result = bandit.learn(sampled, feedback, self._bandit_settings(), order, evaluate, callback)
            except FeedbackError as error:  # keep what was learnt, then report the feedback's fault
                result, stopped_by = error.result, error
        elif self.algorithm in ("perceptron", "ap"):
            result = train.averaged_perceptron(
                problem, self.max_iter, self.seed, evaluate, callback, **self._learner_params()
            )
        elif self.algorithm == "sgd":
            result = train.sgd(
                problem,
                self.sigma,
                self.max_iter,
                SGD_LEARNING_RATE if self.learning_rate is None else self.learning_rate,
                self.seed,
                evaluate,
                callback,
            )
        elif self.algorithm == "l2sgd":
            result = _learner("l2sgd")(
                problem,
                c2=0.5 / self.sigma**2,
                max_iter=self.max_iter,
                seed=self.seed,
                evaluate=evaluate,
                callback=callback,
                **self._learner_params(),
            )
        elif self.algorithm in ("pa", "arow"):
            result = _learner(self.algorithm)(
                problem,
                max_iter=self.max_iter,
                seed=self.seed,
                evaluate=evaluate,
                callback=callback,
                **self._learner_params(),
            )
        else:
            initial = None if init is None else init.weights_
            stages = []
            if self.algorithm == "lbfgs" or init is None:
                stages.append(
                    train.lbfgs(
                        problem,
                        self.sigma,
                        self.max_iter,
                        self.tol,
                        evaluate,
                        callback,
                        initial,
                        l1=self.c1,
                        **self._learner_params(),
                    )
                )
                initial = stages[-1].weights
            if self.algorithm == "mce-f" and not (stages and stages[-1].interrupted):
                from fstcrf.learn.mce import SegmentFScore

                stages.append(
                    train.lbfgs(
                        SegmentFScore(scorer, encoded, states, self.mce_alpha, self.mce_beta),
                        float(np.sqrt(self.mce_c)),
                        self.mce_iter,
                        self.tol,
                        evaluate,
                        callback,
                        initial,
                        name="mce-f",
                        **self._learner_params(),
                    )
                )
            result = stages[-1]
            result.history = [record for stage in stages for record in stage.history]
        if self.c1 > 0:
            features, result.weights, used = drop_zero_features(features, result.weights)
            extractor = extractor.subset(used)
        self._set_fitted(
            topology,
            constraint,
            lower_labels,
            extractor,
            features,
            target,
            tuple(corpus.column_names),
            result,
            active_edges,
        )
        if stopped_by is not None:
            raise stopped_by
        return self

    def _template_of(self, init: ChainCRF | None, algorithms: tuple[str, ...] = ("lbfgs", "mce-f")):
        """The template to train with: init's (after checking that init, a warm start,
        is a fitted model this estimator's ``algorithms`` can continue), else this
        estimator's."""
        if init is None:
            return resolve_template(self.template, self.reads)
        if self.algorithm not in algorithms:
            raise FstcrfError(
                f"init (a warm start) works with algorithm {' or '.join(map(repr, algorithms))}, not {self.algorithm!r}"
            )
        init._check_fitted()
        if (init.order, init.reads, init.read_transitions) != (self.order, self.reads, self.read_transitions):
            raise FstcrfError(
                f"init is a model of order {init.order} reading {init.reads!r} "
                f"(read_transitions={init.read_transitions}); give this ChainCRF the same "
                f"order, reads and read_transitions (it has {self.order}, {self.reads!r}, "
                f"{self.read_transitions})"
            )
        return init.extractor_._template()

    def _training_constraint(self, topology) -> pynini.Fst | None:
        """The training grammar compiled over the topology's labels, or None."""
        if self.grammar is None:
            return None
        grammar = self.grammar if isinstance(self.grammar, Grammar) else load_grammar(self.grammar)
        return compile_grammar(grammar, topology.labels, params=self.grammar_params)

    def _set_fitted(
        self,
        topology,
        constraint,
        lower_labels,
        extractor,
        features,
        target: str,
        columns: tuple[str, ...],
        result: train.TrainingResult,
        active_edges: np.ndarray | None = None,
    ) -> None:
        self.labels_ = topology.labels
        self.topology_ = topology
        self.constraint_ = constraint
        self.lower_labels_ = lower_labels
        self.extractor_ = extractor
        self.features_ = features
        self.target_ = target
        self.columns_ = columns
        self.weights_ = result.weights
        self.n_iter_ = result.n_iter
        self.best_iteration_ = result.best_iteration
        self.interrupted_ = result.interrupted
        self.history_ = result.history
        self.active_edges_ = active_edges
        self.consistency_ = None

    @blas_single_threaded()
    def fit_log(
        self,
        log,
        target: str = "chunk",
        dev: Corpus | Sequence[Sentence] | None = None,
        callback: train.Callback | None = None,
        init: ChainCRF | None = None,
    ) -> ChainCRF:
        """Learn offline from logged bandit feedback ``log``, a
        :class:`~fstcrf.learn.counterfactual.FeedbackLog` (see that module):
        L-BFGS on its importance-weighted reward (``weighting``,
        ``max_ratio``) with the Gaussian prior ``sigma``, for ``max_iter``
        iterations.  ``init`` (typically the logging model) gives the template,
        labels, feature dictionary and starting weights; without it the labels
        are those shown in the log and the features the complete set.  The
        predicted column is named ``target``; with ``dev`` the iteration with
        the best dev score is kept."""
        from fstcrf.learn.bandit import SampledGradient
        from fstcrf.learn.counterfactual import FeedbackLog, LoggedObjective, shown_states

        self._check_params()
        if not isinstance(log, FeedbackLog):
            raise ArgumentTypeError(
                f"fit_log expects a FeedbackLog (read_feedback_log(path)), got {type(log).__name__}"
            )
        if self.grammar is not None or self.reads is not None:
            raise FstcrfError("learning from a log does not train under a grammar nor read a lower tagger's labels yet")
        columns = log.sentences[0].column_names
        dev_gold = self._dev_gold(dev, target)
        if init is not None:
            init._check_fitted()
            if init.reads is not None or init.constraint_ is not None:
                raise FstcrfError("init must be a model without a training grammar or a lower tagger")
            topology, extractor, features = init.topology_, init.extractor_, init.features_
        else:
            topology = chain_topology(self.order, gold_label_set(log.labels))
            extractor = _new_extractor(resolve_template(self.template), self.min_count)
        encoded = EncodedSentences.from_corpus(extractor, log.sentences, fit=init is None)
        if init is None:
            features = build_features(
                encoded, None, None, topology, self.order, self.features or "complete", extractor.column_of(BIAS)
            )
        scorer = Scorer(features, topology, int(self.threads))
        problem = LoggedObjective(
            SampledGradient(scorer, encoded),
            shown_states(topology, log, encoded.offsets),
            log.rewards,
            log.probabilities,
            self.weighting,
            self.max_ratio,
        )
        evaluate = self._dev_evaluator(dev_gold, extractor, scorer, None)
        result = train.lbfgs(
            problem,
            self.sigma,
            self.max_iter,
            self.tol,
            evaluate,
            callback,
            None if init is None else init.weights_,
            name=f"log-{self.weighting}",
        )
        self._set_fitted(topology, None, None, extractor, features, target, columns + (target,), result)
        return self

    # -- prediction ----------------------------------------------------------
    @blas_single_threaded()
    def predict(
        self,
        corpus: Corpus | Sequence[Sentence],
        grammar=None,
        params: dict | None = None,
        on_infeasible: str = "error",
    ) -> list[list[str]]:
        """The best label sequence of every sentence [B][T].

        With ``grammar`` (a :class:`~fstcrf.grammar.Grammar`, a grammar file or a
        shipped grammar name such as "iob2"; ``params`` sets its parameters)
        the best sequence among those the grammar accepts.  A sentence whose
        length no accepted sequence has raises InfeasibleError naming it, or,
        with ``on_infeasible="unconstrained"``, is tagged without the grammar
        (and a warning is logged)."""
        self._check_fitted()
        sentences = as_sentences(corpus, "ChainCRF.predict")
        if not sentences:
            return []
        if grammar is None:
            encoded = self._encode(sentences)
            with phase("decode"):
                return split_labels(self.topology_, self._scorer().paths(encoded, self.weights_), encoded.offsets)
        if on_infeasible not in ("error", "unconstrained"):
            raise FstcrfError(f"on_infeasible must be 'error' or 'unconstrained', got {on_infeasible!r}")
        if not isinstance(grammar, Grammar):
            grammar = load_grammar(grammar)
        constrained = self._scorer().decoding_topology(grammar, params)
        infeasible = [i for i, sentence in enumerate(sentences) if not constrained.is_feasible(len(sentence))]
        if infeasible and on_infeasible == "error":
            shown = ", ".join(f"{i} (length {len(sentences[i])})" for i in infeasible[:10])
            raise InfeasibleError(
                f"grammar {grammar.source} accepts no label sequence as long as sentence "
                f"{shown}{' ...' if len(infeasible) > 10 else ''}; fix the grammar, or tag "
                "those sentences without it (on_infeasible='unconstrained', "
                "CLI --on-infeasible unconstrained)"
            )
        result: list[list[str] | None] = [None] * len(sentences)
        feasible = sorted(set(range(len(sentences))) - set(infeasible))
        if feasible:
            encoded = self._encode([sentences[i] for i in feasible])
            paths = self._scorer().paths(encoded, self.weights_, grammar, params)
            for i, labels in zip(feasible, split_labels(self.topology_, paths, encoded.offsets)):
                result[i] = labels
        if infeasible:
            logger.warning(
                "grammar %s accepts no sequence as long as %d sentence(s); tagged them without it",
                grammar.source,
                len(infeasible),
            )
            for i, labels in zip(infeasible, self.predict([sentences[i] for i in infeasible])):
                result[i] = labels
        return result

    def potentials(self, corpus: Corpus | Sequence[Sentence]) -> Potentials:
        """The scores of a batch of sentences on ``topology_`` (for lattice export,
        k-best lists, sampling or marginals with :mod:`fstcrf.engine.inference`)."""
        self._check_fitted()
        encoded = self._encode(as_sentences(corpus, "ChainCRF.potentials"))
        return self._scorer().potentials(encoded, self.weights_, 0, encoded.num_sequences)

    def decoding_potentials(self, sentences: Sequence[Sentence]) -> tuple[EncodedSentences, Potentials, np.ndarray]:
        """(the encoded sentences, their potentials on the decoding topology -- the
        model's, or its restriction to the training grammar -- and int [S'] the model
        state of each decoding state) for sampling and k-best lists."""
        encoded = self._encode(sentences)
        scorer = self._scorer()
        pot = scorer.potentials(encoded, self.weights_, 0, encoded.num_sequences)
        if scorer.constrained is None:
            return encoded, pot, np.arange(self.topology_.num_states)
        restriction = restrict_to(pot, scorer.constrained)
        return encoded, restriction.potentials, restriction.state_map

    @blas_single_threaded()
    def sample(
        self, corpus: Corpus | Sequence[Sentence], num_samples: int = 1, seed: int = 0
    ) -> tuple[list[list[list[str]]], np.ndarray]:
        """(labels [K][B][T]: K label sequences per sentence drawn exactly from p(y | x),
        float [K, B] their log-probabilities); reproducible for a seed.  Models with
        a training grammar sample among the sequences it accepts."""
        self._check_fitted()
        sentences = as_sentences(corpus, "ChainCRF.sample")
        if not sentences:
            return [[] for _ in range(int(num_samples))], np.zeros((int(num_samples), 0))
        encoded, pot, state_map = self.decoding_potentials(sentences)
        paths = sample(pot, num_samples, seed, int(self.threads))
        log_p = pot.path_scores(paths) - log_partition(pot, int(self.threads))
        paths = state_map[paths]
        return [split_labels(self.topology_, path, encoded.offsets) for path in paths], log_p

    @blas_single_threaded()
    def kbest(self, corpus: Corpus | Sequence[Sentence], k: int) -> tuple[list[list[list[str]]], np.ndarray]:
        """(labels [B][r][T]: the r <= k best label sequences of each sentence, best
        first, float [B, k] their exact probabilities p(y | x), 0 past the r found).
        Models with a training grammar rank only the sequences it accepts."""
        self._check_fitted()
        sentences = as_sentences(corpus, "ChainCRF.kbest")
        if not sentences:
            return [], np.zeros((0, int(k)))
        _, pot, state_map = self.decoding_potentials(sentences)
        best = kbest(pot, k, int(self.threads))
        probabilities = np.exp(best.scores - log_partition(pot, int(self.threads))[:, None])
        labels = [
            [
                split_labels(self.topology_, state_map[states], np.array([0, len(states)]))[0]
                for _, states in best.sentence_paths(pot, b)
            ]
            for b in range(pot.num_sequences)
        ]
        return labels, probabilities

    def reading_emissions(self, sentences: Sequence[Sentence], lower_labels: Sequence[str]) -> np.ndarray:
        """float [N, K, S]: the emission scores of every state at every token when the
        ``reads`` column takes the k-th of ``lower_labels`` there (K of them)."""
        sentences = as_sentences(sentences, "ChainCRF.reading_emissions")
        return self._reading_block(self._reading_features(sentences, lower_labels), 0, len(sentences))

    def _reading_features(self, sentences: list[Sentence], lower_labels: Sequence[str]) -> tuple:
        """The features of :meth:`reading_emissions`, extracted once for
        :meth:`_reading_block`: the predicates that do not read the lower labels
        (EncodedSentences, N rows); those that do (N * K rows, token-major, over
        the M reading predicates); K; the feature dictionary of the M predicates
        and its weights float [F_M]."""
        self._check_fitted()
        if self.reads is None:
            raise FstcrfError("this model reads no lower tagger's labels (train it with reads=...)")
        base, by_value, predicates = self.extractor_.transform_reading(sentences, self.reads, lower_labels)
        lengths = np.array([len(sentence) for sentence in sentences], dtype=np.int64)
        K = len(lower_labels)
        dictionary, features = self._reading_dictionary(predicates)
        return (
            EncodedSentences(base, lengths),
            EncodedSentences(by_value, lengths * K),
            K,
            dictionary,
            self.weights_[features],
        )

    def _reading_dictionary(self, predicates: np.ndarray) -> tuple:
        """The feature dictionary of the reading predicates int [M], in that order (a
        token's rows then read neighbouring weights; every sum keeps its terms and
        their order), and the index int [F_M] of each of its features in the model's
        weights; kept for the latest ``predicates`` array the extractor gave."""
        from fstcrf.features.encoding import FactoredFeatures

        kept = getattr(self, "_reading_dictionary_kept", None)
        if kept is not None and kept[0] is predicates and kept[1] is self.features_:
            return kept[2:]
        ptr = self.features_.ptr
        counts = ptr[predicates + 1] - ptr[predicates]
        reading_ptr = np.zeros(len(predicates) + 1, dtype=np.int64)
        np.cumsum(counts, out=reading_ptr[1:])
        features = np.repeat(ptr[predicates] - reading_ptr[:-1], counts) + np.arange(reading_ptr[-1])
        dictionary = FactoredFeatures(
            self.features_.state_label, self.features_.num_labels, reading_ptr, self.features_.output[features]
        )
        self._reading_dictionary_kept = (predicates, self.features_, dictionary, features)
        return dictionary, features

    def _reading_block(self, features: tuple, first: int, last: int) -> np.ndarray:
        """float [n, K, S]: :meth:`reading_emissions` of sentences first..last-1 (n tokens)
        from their :meth:`_reading_features`."""
        common, by_value, K, dictionary, reading_weights = features
        shared = self.features_.emissions(common.tokens(first, last), self.weights_[: self.features_.num_features])
        scores = dictionary.emissions(by_value.tokens(first, last), reading_weights).reshape(len(shared), K, -1)
        scores += shared[:, None, :]  # [n, K, S]
        return scores

    @blas_single_threaded()
    def predict_marginals(
        self, corpus: Corpus | Sequence[Sentence], grammar=None, params: dict | None = None
    ) -> list[np.ndarray]:
        """float [T, L] per sentence: p(label at token t = l | sentence), columns in
        ``labels_`` order (state marginals summed over the states of each label);
        with ``grammar``, p(label | sentence, the labels are accepted by it)."""
        self._check_fitted()
        sentences = as_sentences(corpus, "ChainCRF.predict_marginals")
        if not sentences:
            return []
        if grammar is not None and not isinstance(grammar, (Grammar, pynini.Fst)):
            grammar = load_grammar(grammar)
        encoded = self._encode(sentences)
        state_marginals = self._scorer().marginals(encoded, self.weights_, grammar, params)
        by_label = np.zeros((self.topology_.num_states, self.topology_.num_labels))
        by_label[np.arange(self.topology_.num_states), self.topology_.state_label] = 1.0
        return np.split(state_marginals @ by_label, encoded.offsets[1:-1])

    def score(self, corpus: Corpus | Sequence[Sentence], target: str | None = None) -> ChunkScores | TagScores:
        """Scores of the predictions against column ``target`` (default: the column
        trained on): chunk scores for chunk labels, else token accuracy (see
        :func:`~fstcrf.corpus.evaluate.score_labels`)."""
        self._check_fitted()
        corpus = as_corpus(corpus, "ChainCRF.score")
        return score_labels(corpus.column(target or self.target_), self.predict(corpus))

    # -- files ---------------------------------------------------------------
    def to_payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The JSON-able description and the arrays of the fitted model (a model file's
        header and arrays, see :mod:`fstcrf.modelfile`)."""
        self._check_fitted()
        arrays = {
            "weights": self.weights_.astype("<f8"),
            "feature_ptr": self.features_.ptr.astype("<i8"),
            "feature_output": self.features_.output.astype("<i4"),
        }
        extractor, extractor_arrays = extractor_payload(self.extractor_)
        arrays.update({f"{EXTRACTOR_PREFIX}{name}": array for name, array in extractor_arrays.items()})
        if self.constraint_ is not None:
            arrays["constraint"] = np.frombuffer(self.constraint_.write_to_string(), dtype=np.uint8)
        if self.active_edges_ is not None:
            arrays["active_edges"] = self.active_edges_.astype(np.uint8)
        params = self.get_params()
        params["client"] = None  # a connection, not a property of the model
        if isinstance(params["template"], Template) or hasattr(params["template"], "extractor"):
            params["template"] = params["template"].text
        if isinstance(params["grammar"], Grammar):
            params["grammar"] = params["grammar"].source
        header = {
            "params": params,
            "target": self.target_,
            "columns": list(self.columns_),
            "topology": {
                "kind": self.topology_.name,
                "labels": list(self.topology_.labels),
                "num_states": self.topology_.num_states,
                "num_edges": self.topology_.num_edges,
            },
            "extractor": extractor,
            "lower_labels": self.lower_labels_,
            "consistency": None if self.consistency_ is None else self.consistency_.to_dict(),
            "training": {
                "n_iter": self.n_iter_,
                "best_iteration": self.best_iteration_,
                "interrupted": self.interrupted_,
                "history": self.history_,
            },
        }
        return header, arrays

    @classmethod
    def from_payload(cls, header: dict, arrays: dict[str, np.ndarray], where: str) -> ChainCRF:
        """A fitted model from :meth:`to_payload`'s output (``where`` names the file in
        errors); ModelFileError if it is inconsistent."""
        for name, dtype in (("weights", "float64"), ("feature_ptr", "int64"), ("feature_output", "int32")):
            if name not in arrays or arrays[name].dtype != dtype:
                raise ModelFileError(f"{where}: the model file lacks a valid {name!r} array")
        params = dict(header_field(header, "params", dict, where))
        defaults = cls().get_params()
        for name in LATER_PARAMS:  # a file written before the option existed: its default
            params.setdefault(name, defaults[name])
        params.setdefault("read_transitions", False)  # written before transitions could read labels
        expected = list(defaults)
        if set(params) != set(expected):
            raise ModelFileError(
                f"{where}: the model parameters are {', '.join(sorted(params))}; expected {', '.join(expected)}"
            )
        model = cls(**params)
        described = header_field(header, "topology", dict, where)
        labels = header_field(described, "labels", list, where)
        training = header_field(header, "training", dict, where)
        try:
            model._check_params()
            topology = chain_topology(model.order, labels)
            extractor = extractor_from_payload(header.get("extractor"), arrays)
            num_labels = topology.num_labels if model.order == 2 else 0
            state_label = topology.state_label if num_labels else np.arange(topology.num_states)
            features = FactoredFeatures(state_label, num_labels, arrays["feature_ptr"], arrays["feature_output"])
            constraint = None
            if "constraint" in arrays:
                constraint = pynini.Fst.read_from_string(arrays["constraint"].tobytes())
                constrain(topology, constraint)
        except BudgetError:
            raise  # the file may be fine: the user's budget is too small for it
        except (FstcrfError, pynini.FstIOError) as error:
            raise ModelFileError(f"{where}: the model file is inconsistent: {error}") from None
        if (topology.name, topology.num_states, topology.num_edges) != (
            described.get("kind"),
            described.get("num_states"),
            described.get("num_edges"),
        ):
            raise ModelFileError(
                f"{where}: the model's {described.get('kind')} topology does not rebuild to the stored state space"
            )
        num_predicates = extractor.num_predicates
        if features.num_predicates != num_predicates:
            raise ModelFileError(
                f"{where}: the feature dictionary has {features.num_predicates} "
                f"predicates but the extractor {num_predicates}"
            )
        lower_labels = header.get("lower_labels")
        active_edges = None
        if "active_edges" in arrays:
            if arrays["active_edges"].shape != (topology.num_edges,) or arrays["active_edges"].max(initial=0) > 1:
                raise ModelFileError(f"{where}: the model's active edges do not fit its {topology.num_edges} edges")
            active_edges = arrays["active_edges"].astype(bool)
        layout = model._transition_layout(
            topology.num_edges, lower_labels if isinstance(lower_labels, list) else None, active_edges
        )
        if len(arrays["weights"]) != features.num_features + layout.size:
            raise ModelFileError(
                f"{where}: {len(arrays['weights'])} weights for "
                f"{features.num_features} features and {layout.size} transition weights"
            )
        model.labels_ = topology.labels
        model.topology_ = topology
        model.constraint_ = constraint
        model.extractor_ = extractor
        model.features_ = features
        model.target_ = header_field(header, "target", str, where)
        columns = header_field(header, "columns", list, where)
        if not all(isinstance(name, str) for name in columns) or model.target_ not in columns:
            raise ModelFileError(f"{where}: the model's column names {columns!r} are invalid")
        model.columns_ = tuple(columns)
        model.lower_labels_ = header.get("lower_labels")
        if (model.reads is None) != (model.lower_labels_ is None) or not (
            model.lower_labels_ is None or all(isinstance(label, str) for label in model.lower_labels_)
        ):
            raise ModelFileError(
                f"{where}: the model's lower labels {model.lower_labels_!r} do not fit reads={model.reads!r}"
            )
        model.weights_ = arrays["weights"]
        model.active_edges_ = active_edges
        model.n_iter_ = header_field(training, "n_iter", int, where)
        model.best_iteration_ = header_field(training, "best_iteration", int, where)
        model.interrupted_ = header_field(training, "interrupted", bool, where)
        model.history_ = [current_record(record) for record in header_field(training, "history", list, where)]
        consistency = header.get("consistency")
        model.consistency_ = None if consistency is None else ConsistencyPenalties.from_dict(consistency, where)
        return model

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model to ``path`` atomically (see :func:`save_model`)."""
        save_model(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> ChainCRF:
        """Read a model written by :meth:`save` (see :func:`load_model`)."""
        return load_model(path)


#: The arrays of the feature extractor are stored under names with this prefix.
EXTRACTOR_PREFIX = "extractor."
#: ChainCRF parameters added after the first model files: a file without one was
#: written before the option existed and loads with its default (grammars, reading
#: models, F-score training, distributed training, L1 and CRFsuite's settings).
LATER_PARAMS = (
    "grammar",
    "grammar_params",
    "reads",
    "mce_c",
    "mce_iter",
    "mce_alpha",
    "mce_beta",
    "client",
    "c1",
    "min_freq",
    "transitions",
    "algorithm_params",
)


def extractor_payload(extractor) -> tuple[dict, dict[str, np.ndarray]]:
    """The header data and the arrays (named without EXTRACTOR_PREFIX) of a fitted extractor."""
    if isinstance(extractor, FeatureExtractor):
        return extractor.to_payload()
    return extractor.to_dict(), {}


def extractor_from_payload(data, arrays: dict[str, np.ndarray]):
    """The fitted feature extractor a model file describes: template predicates (the
    data in the header and the arrays named with EXTRACTOR_PREFIX; version 1 files
    keep the names in the header), or (``"kind": "attributes"``) CRFsuite-style
    attributes of token dicts."""
    if isinstance(data, dict) and data.get("kind") == "attributes":
        from fstcrf.features.attributes import AttributeExtractor

        return AttributeExtractor.from_dict(data)
    if isinstance(data, dict) and "predicates" in data:
        return FeatureExtractor.from_dict(data)
    own = {name[len(EXTRACTOR_PREFIX) :]: array for name, array in arrays.items() if name.startswith(EXTRACTOR_PREFIX)}
    return FeatureExtractor.from_payload(data, own)


def current_record(record):
    """An iteration record with the keys written now: files written before dev
    scores named their metric hold the dev chunk F1 as "dev_f1"."""
    if not isinstance(record, dict) or "dev_f1" not in record:
        return record
    renamed = {key: value for key, value in record.items() if key != "dev_f1"}
    score = record["dev_f1"]
    return {**renamed, "dev_score": score, "dev_metric": None if score is None else "F1"}


def save_model(model: ChainCRF, path: str | os.PathLike) -> None:
    """Write a fitted model to one self-describing file (layout in :mod:`fstcrf.modelfile`)."""
    header, arrays = model.to_payload()
    write_container(path, MODEL_KIND, header, arrays)


def load_model(path: str | os.PathLike) -> ChainCRF:
    """Read a model written by :func:`save_model`.

    Raises ModelFileError if the file cannot be read, is not an fstcrf model,
    is truncated or corrupt, or has a format version this fstcrf does not read.
    """
    header, arrays = read_container(path)
    if header["format"] != MODEL_KIND:
        raise ModelFileError(
            f"{os.fspath(path)}: this is a joint model (from fstcrf compose); load it with fstcrf.load_joint"
        )
    return ChainCRF.from_payload(header, arrays, os.fspath(path))
