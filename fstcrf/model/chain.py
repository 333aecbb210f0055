"""The estimator: a linear-chain CRF over CoNLL columns with Sha & Pereira's factored
features (see :mod:`fstcrf.features.encoding` for the features and the layout of ``weights_``).

The pieces live in their own modules: :mod:`fstcrf.model.params`, :mod:`fstcrf.model.fitting`,
:mod:`fstcrf.model.payload` and :mod:`fstcrf.model.file` (model files), :mod:`fstcrf.model.reading`
(scores under every lower label), :mod:`fstcrf.corpus.labels`, :mod:`fstcrf.features.encoding`,
:mod:`fstcrf.learn.objective` and :mod:`fstcrf.learn.train` (the algorithms)."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import cast

import numpy as np

from fstcrf.corpus.conll import Corpus, Sentence, as_corpus, as_sentences
from fstcrf.corpus.evaluate import ChunkScores, TagScores, score_labels
from fstcrf.corpus.labels import UNKNOWN_LABEL, label_states, split_labels
from fstcrf.corpus.schemes import write_chunks
from fstcrf.engine.acceptor import Acceptor, is_fst
from fstcrf.engine.constrained import constrain
from fstcrf.engine.constraints import SentenceRules, resolve_batch
from fstcrf.engine.inference import (
    Potentials,
    forward_backward,
    kbest,
    log_partition,
    sample,
    viterbi,
)
from fstcrf.engine.threads import blas_single_threaded
from fstcrf.engine.mbr import StreamThreshold, labelled_paths, mbr_decode, writing_scheme
from fstcrf.engine.tempering import likelihood_temperature, tempered
from fstcrf.engine.spans import Entity, decoded_entities, entity_probabilities, state_labels
from fstcrf.errors import FstcrfError, LabelError
from fstcrf.features.encoding import EncodedSentences
from fstcrf.features.template import TEMPLATES, Template
from fstcrf.grammar import Grammar, load_grammar, restrict, restrict_to
from fstcrf.learn import train
from fstcrf.learn.objective import Scorer
from fstcrf.learn.settings import DEFAULT_DRAWS, DEFAULT_SIGMA
from fstcrf.model.file import MODEL_KIND, read_kind, write_container
from fstcrf.model.grammar_decoding import check_on_infeasible, predict_under_grammar
from fstcrf.model.fitting import (
    BIAS,
    FittedState,
    check_fitted,
    fit_corpus,
    fit_log,
    fitted_scorer,
    token_classes,
)
from fstcrf.model.params import ALGORITHMS, param_names
from fstcrf.model.payload import fitted_from_payload, params_from_payload, to_payload
from fstcrf.model.reading import reading_block, reading_features
from fstcrf.model.recent import recent_potentials
from fstcrf.model.tagging import tagging_plan
from fstcrf.phases import phase

__all__ = ["ALGORITHMS", "BIAS", "TEMPLATES", "UNKNOWN_LABEL", "ChainCRF", "load_model", "save_model"]

logger = logging.getLogger(__name__)


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
        features: "supported", "complete", (order 2) "complete-tags" or
            "complete-if-fits" ("complete" unless it would pass MAX_FEATURES,
            then "supported"; see :mod:`fstcrf.features.encoding`); None (the
            default) is "supported", and "complete" for algorithm "bandit",
            which never sees gold labels.
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
            offset 0 only, so that :func:`fstcrf.model.compose.compose` can decode
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
    :class:`~fstcrf.engine.acceptor.Acceptor` over ``labels_``, or None), ``lower_labels_`` (the values
    of the ``reads`` column seen in training, or None), ``consistency_``
    (label-consistency penalties for non-local decoding, see
    :mod:`fstcrf.document`, or None; ``fit`` leaves it None), ``decoding_`` (the
    decoding ``fstcrf tag`` and ``eval`` use without --decode: "viterbi", which
    ``fit`` leaves, or "mbr", which ``fstcrf train`` records for the rich NER
    templates; ``predict`` is Viterbi's and ``predict_mbr`` MBR's either way),
    ``mbr_temperature_`` (the temperature MBR decoding uses when none is given: 1.0,
    which ``fit`` leaves, or what ``fstcrf train`` records for the rich NER templates
    or ``fstcrf calibrate --output`` fits).
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
        return {name: getattr(self, name) for name in param_names(type(self))}

    def set_params(self, **params) -> ChainCRF:
        """Set constructor arguments by name and return self (scikit-learn's protocol).
        They are checked when ``fit`` runs."""
        names = param_names(type(self))
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise FstcrfError(
                f"ChainCRF has no parameter {', '.join(map(repr, unknown))}; its parameters are {', '.join(names)}"
            )
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def encode(self, sentences: Sequence[Sentence]) -> EncodedSentences:
        """Sentences encoded by the fitted extractor, with their transition classes."""
        with phase("features"):
            return EncodedSentences.from_corpus(
                self.extractor_, sentences, token_class=token_classes(self, sentences, self.lower_labels_)
            )

    def scorer(self) -> Scorer:
        """The Scorer of the fitted weights: features, topology, threads, training constraint, transition layout."""
        return fitted_scorer(self)

    def transition_scores(self, lower_labels: Sequence[str], weights: np.ndarray | None = None) -> np.ndarray:
        """float [K, E]: the transition scores when the lower label at the new token is
        each of ``lower_labels`` (K of them), under ``weights`` [F + T] (default the
        fitted ``weights_``); rows are equal when the transitions do not read a lower
        label."""
        check_fitted(self)
        weights = self.weights_ if weights is None else weights
        table = self.scorer().transitions.scores(weights[self.features_.num_features :])
        return np.atleast_2d(table)[self.transition_classes(lower_labels)]

    def transition_classes(self, lower_labels: Sequence[str]) -> np.ndarray:
        """int [K]: the row of the transition score table (``scorer().transitions``)
        each of ``lower_labels`` selects: its index among the lower labels seen in
        training (the last row for an unseen one); all 0 when the transitions do not
        read a lower label."""
        check_fitted(self)
        classes = (
            None
            if self.reads is None
            else token_classes(self, [Sentence({self.reads: list(lower_labels)})], self.lower_labels_)
        )
        return np.zeros(len(lower_labels), dtype=np.int64) if classes is None else classes

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
        state, stopped_by = fit_corpus(self, corpus, target, dev, callback, init)
        self.set_fitted_state(state)
        if stopped_by is not None:
            raise stopped_by
        return self

    def set_fitted_state(self, state: FittedState) -> ChainCRF:
        """Adopt what a fit learnt (from :mod:`fstcrf.model.fitting`, the Dask driver or
        a model file) as the fitted attributes; returns self."""
        self.labels_ = state.topology.labels
        self.topology_ = state.topology
        self.constraint_ = state.constraint
        self.lower_labels_ = state.lower_labels
        self.extractor_ = state.extractor
        self.features_ = state.features
        self.target_ = state.target
        self.columns_ = state.columns
        self.weights_ = state.weights
        self.n_iter_ = state.n_iter
        self.best_iteration_ = state.best_iteration
        self.interrupted_ = state.interrupted
        self.history_ = state.history
        self.active_edges_ = state.active_edges
        self.consistency_ = state.consistency
        self.decoding_ = state.decoding
        self.mbr_temperature_ = state.mbr_temperature
        self.tag_dictionary_ = state.tag_dictionary
        if state.traffic is not None:
            self.traffic_ = state.traffic
        return self

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
        return self.set_fitted_state(fit_log(self, log, target, dev, callback, init))

    # -- prediction ----------------------------------------------------------
    @blas_single_threaded()
    def decode(self, encoded: EncodedSentences, constraints=None) -> list[list[str]]:
        """The best label sequence [B][T] of sentences already encoded with :meth:`encode`
        (what :meth:`predict` gives them without a grammar): for a caller that encodes
        the next batch while this one is decoded."""
        check_fitted(self)
        rules = self.constraint_rules(encoded.lengths, constraints, "ChainCRF.decode")
        with phase("decode"):
            if rules is not None:
                return self.best_labels(self.encoded_potentials(encoded, rules)[0])
            small = tagging_plan(self).encoded_labels(encoded)  # a small batch: one kernel call
            if small is not None:
                return small
            return split_labels(self.topology_, self.scorer().paths(encoded, self.weights_), encoded.offsets)

    @blas_single_threaded()
    def predict(
        self,
        corpus: Corpus | Sequence[Sentence],
        grammar=None,
        params: dict | None = None,
        on_infeasible: str = "error",
        constraints=None,
    ) -> list[list[str]]:
        """The best label sequence of every sentence [B][T].

        With ``grammar`` (a :class:`~fstcrf.grammar.Grammar`, a grammar file or a
        shipped grammar name such as "iob2"; ``params`` sets its parameters)
        the best sequence among those the grammar accepts.  A sentence whose
        length no accepted sequence has raises InfeasibleError naming it, or,
        with ``on_infeasible="unconstrained"``, is tagged without the grammar
        (and a warning is logged), keeping to its constraints.  ``constraints``: a
        :class:`~fstcrf.engine.constraints.Constraints` (or None) per sentence, which
        the sequence keeps to (InfeasibleError naming the rules that clash when none
        can); the same keyword on every decoding method."""
        check_fitted(self)
        check_on_infeasible(on_infeasible)
        sentences = as_sentences(corpus, "ChainCRF.predict")
        rules = self.constraint_rules([len(sentence) for sentence in sentences], constraints, "ChainCRF.predict")
        if not sentences:
            return []
        if grammar is not None:
            return predict_under_grammar(self, sentences, grammar, params, on_infeasible, rules)
        if rules is not None:
            return self.best_labels(self.span_potentials(sentences, rules=rules))
        small = tagging_plan(self).labels(sentences)  # a small batch: its columns to labels in one kernel call
        return self.decode(self.encode(sentences)) if small is None else small

    def potentials(self, corpus: Corpus | Sequence[Sentence]) -> Potentials:
        """The scores of a batch of sentences on ``topology_`` (for lattice export,
        k-best lists, sampling or marginals with :mod:`fstcrf.engine.inference`)."""
        check_fitted(self)
        encoded = self.encode(as_sentences(corpus, "ChainCRF.potentials"))
        return self.scorer().potentials(encoded, self.weights_, 0, encoded.num_sequences, threads=int(self.threads))

    def decoding_potentials(
        self, sentences: Sequence[Sentence], rules: Sequence[SentenceRules | None] | None = None
    ) -> tuple[EncodedSentences, Potentials, np.ndarray]:
        """(the encoded sentences, their potentials on the decoding topology -- the
        model's, or its restriction to the training grammar, under the sentences'
        ``rules`` (from :meth:`constraint_rules`) when given -- and int [S'] the model
        state of each decoding state) for sampling and k-best lists."""
        encoded = self.encode(sentences)
        return (encoded, *self.encoded_potentials(encoded, rules))

    def encoded_potentials(
        self, encoded: EncodedSentences, rules: Sequence[SentenceRules | None] | None = None, temperature: float = 1.0
    ) -> tuple[Potentials, np.ndarray]:
        """:meth:`decoding_potentials` of sentences already encoded with :meth:`encode`:
        (their potentials on the decoding topology, the model's scores tempered by
        ``temperature`` before the rules apply, int [S'] the model state of each
        decoding state)."""
        scorer = self.scorer()
        pot = scorer.potentials(encoded, self.weights_, 0, encoded.num_sequences, threads=int(self.threads))
        state_map = np.arange(self.topology_.num_states)
        if scorer.constrained is not None:
            restriction = restrict_to(pot, scorer.constrained)
            pot, state_map = restriction.potentials, restriction.state_map
        pot = tempered(pot, temperature)
        if rules is None:
            return pot, state_map
        lattice = constrain(pot, rules, threads=int(self.threads))
        return lattice.potentials, state_map[lattice.state_map]

    def constraint_rules(
        self, lengths: Sequence[int] | np.ndarray, constraints, what: str
    ) -> list[SentenceRules | None] | None:
        """The rules of ``constraints`` (a Constraints, its dict form or None per sentence
        of ``lengths``) over the model's labels, checked before any work; None when
        there are none."""
        return resolve_batch(constraints, lengths, self.labels_, what)

    def best_labels(self, pot: Potentials) -> list[list[str]]:
        """The labels [B][T] of the best path of each sentence of ``pot``, read off its states."""
        return split_labels(pot.topology, viterbi(pot, int(self.threads)).paths, pot.offsets)

    @blas_single_threaded()
    def sample(
        self, corpus: Corpus | Sequence[Sentence], num_samples: int = 1, seed: int = 0, constraints=None
    ) -> tuple[list[list[list[str]]], np.ndarray]:
        """(labels [K][B][T]: K label sequences per sentence drawn exactly from p(y | x),
        float [K, B] their log-probabilities); reproducible for a seed.  Models with
        a training grammar sample among the sequences it accepts."""
        check_fitted(self)
        sentences = as_sentences(corpus, "ChainCRF.sample")
        rules = self.constraint_rules([len(sentence) for sentence in sentences], constraints, "ChainCRF.sample")
        if not sentences:
            return [[] for _ in range(int(num_samples))], np.zeros((int(num_samples), 0))
        encoded, pot, state_map = self.decoding_potentials(sentences, rules)
        paths = sample(pot, num_samples, seed, int(self.threads))
        log_p = pot.path_scores(paths) - log_partition(pot, int(self.threads))
        paths = state_map[paths]
        return [split_labels(self.topology_, path, encoded.offsets) for path in paths], log_p

    @blas_single_threaded()
    def kbest(
        self, corpus: Corpus | Sequence[Sentence], k: int, constraints=None
    ) -> tuple[list[list[list[str]]], np.ndarray]:
        """(labels [B][r][T]: the r <= k best label sequences of each sentence, best
        first, float [B, k] their exact probabilities p(y | x), 0 past the r found).
        Models with a training grammar rank only the sequences it accepts."""
        check_fitted(self)
        sentences = as_sentences(corpus, "ChainCRF.kbest")
        rules = self.constraint_rules([len(sentence) for sentence in sentences], constraints, "ChainCRF.kbest")
        if not sentences:
            return [], np.zeros((0, int(k)))
        _, pot, state_map = self.decoding_potentials(sentences, rules)
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

    @blas_single_threaded()
    def predict_spans(
        self,
        corpus: Corpus | Sequence[Sentence],
        grammar=None,
        params: dict | None = None,
        temperature: float = 1.0,
        constraints=None,
    ) -> list[list[Entity]]:
        """The entities (chunks) of each sentence's best label sequence, as ``predict``
        decodes it, each an :class:`~fstcrf.engine.spans.Entity` (first, last
        inclusive, type, probability) holding the exact probability that the
        output has this chunk, under ``grammar`` when it is given; ``temperature``
        (see :meth:`fit_temperature`) tempers the distribution, not the output."""
        check_fitted(self)
        sentences = as_sentences(corpus, "ChainCRF.predict_spans")
        rules = self.constraint_rules([len(sentence) for sentence in sentences], constraints, "ChainCRF.predict_spans")
        if not sentences:
            return []
        if grammar is None and rules is None and temperature == 1.0:
            small = tagging_plan(self).entities(sentences)  # a small batch: one kernel call, then the chunks'
            if small is not None:
                return small
        pot = self.span_potentials(sentences, grammar, params, rules, temperature)
        return decoded_entities(pot, state_labels(pot.topology), viterbi(pot, int(self.threads)).paths)

    @blas_single_threaded()
    def predict_mbr(
        self,
        corpus: Corpus | Sequence[Sentence],
        threshold: float | None = None,
        grammar=None,
        params: dict | None = None,
        temperature: float | None = None,
        stream: StreamThreshold | None = None,
        constraints=None,
    ) -> list[list[str]]:
        """The label sequences [B][T] whose chunks maximise the model's expected chunk F1
        over the batch (minimum Bayes risk decoding, see :mod:`fstcrf.engine.mbr`), or
        with ``threshold`` the sum of (probability - threshold) of each sentence's
        chunks; O outside them, in the model's label scheme, under ``grammar`` when it
        is given, the distribution tempered by ``temperature`` (default: the model's
        ``mbr_temperature_``).  The chunks chosen are counted in ``stream`` (a
        :class:`~fstcrf.engine.mbr.StreamThreshold`) when it is given.  Needs chunk labels."""
        check_fitted(self)
        sentences = as_sentences(corpus, "ChainCRF.predict_mbr")
        rules = self.constraint_rules([len(sentence) for sentence in sentences], constraints, "ChainCRF.predict_mbr")
        if not sentences:
            return []
        temperature = self.mbr_temperature_ if temperature is None else temperature
        pot = self.span_potentials(sentences, grammar, params, rules, temperature)
        return self._mbr_labels(pot, threshold, stream, rules is not None)

    @blas_single_threaded()
    def decode_mbr(
        self,
        encoded: EncodedSentences,
        threshold: float | None = None,
        temperature: float | None = None,
        stream: StreamThreshold | None = None,
        constraints=None,
    ) -> list[list[str]]:
        """:meth:`predict_mbr` (without a grammar) of sentences already encoded with
        :meth:`encode`: for a caller that encodes the next batch while this one is
        decoded; the chunks chosen are added to ``stream`` when it is given."""
        check_fitted(self)
        rules = self.constraint_rules(encoded.lengths, constraints, "ChainCRF.decode_mbr")
        if not encoded.num_sequences:
            return []
        temperature = self.mbr_temperature_ if temperature is None else temperature
        pot = self.encoded_potentials(encoded, rules, temperature)[0]
        return self._mbr_labels(pot, threshold, stream, rules is not None)

    def _mbr_labels(
        self,
        pot: Potentials,
        threshold: float | None,
        stream: StreamThreshold | None = None,
        constrained: bool = False,
    ) -> list[list[str]]:
        """The MBR label sequences [B][T] of the sentences of ``pot`` (tempered already,
        see :meth:`predict_mbr`), counted in ``stream`` when it is given; for
        ``constrained`` potentials, a sentence whose chunks the constraints cannot hold
        gets its best labels."""
        labels = state_labels(pot.topology)
        scheme = writing_scheme(self.labels_)
        with phase("decode"):
            decoded = mbr_decode(pot, labels, threshold, threads=int(self.threads))
            written = [
                write_chunks([entity[:3] for entity in chunks], int(length), scheme)
                for chunks, length in zip(decoded.chunks, pot.lengths)
            ]
            paths = labelled_paths(pot, labels, written, int(self.threads), best_instead=constrained)
            if constrained:  # the lattice holds them, or its best path stands in
                written = split_labels(pot.topology, paths, pot.offsets)
        if stream is not None:
            stream.add(decoded)
        # a sentence at a time (a server, a pipeline) would log a line per call: that is DEBUG
        level = logging.INFO if pot.num_sequences > 1 else logging.DEBUG
        logger.log(level, "MBR decoding of %d sentences: %s", pot.num_sequences, decoded)  # formatted when logged
        return written

    @blas_single_threaded()
    def fit_temperature(self, corpus: Corpus | Sequence[Sentence], target: str | None = None) -> float:
        """The temperature T that maximises the likelihood of the label sequences of
        column ``target`` (default: the one trained on) of held-out ``corpus`` under
        p(y | x)^(1/T) (temperature scaling): T > 1 when the model is overconfident.
        Pass it to :meth:`predict_spans` / :meth:`span_probabilities`."""
        check_fitted(self)
        corpus = as_corpus(corpus, "ChainCRF.fit_temperature")
        if not len(corpus):
            raise FstcrfError("fit_temperature needs at least one labelled sentence")
        pot = self.span_potentials(corpus.sentences)
        index = {label: i for i, label in enumerate(pot.topology.labels)}
        column = target or self.target_
        if column not in corpus.column_names:
            raise FstcrfError(
                f"fit_temperature reads the labels of column {column!r}, which the corpus lacks "
                f"(columns: {', '.join(corpus.column_names)})"
            )
        labels = [label for sentence in corpus for label in sentence[column]]
        unknown = sorted(set(labels) - set(index))
        if unknown:
            raise LabelError(f"column {column!r} holds labels the model lacks: {', '.join(unknown[:5])}")
        gold = label_states(pot.topology, np.array([index[label] for label in labels]), pot.offsets)
        return likelihood_temperature([(pot, gold)], int(self.threads))

    @blas_single_threaded()
    def span_probabilities(
        self,
        corpus: Corpus | Sequence[Sentence],
        spans: Sequence[Sequence[tuple[int, int, str]]],
        grammar=None,
        params: dict | None = None,
        temperature: float = 1.0,
        constraints=None,
    ) -> list[np.ndarray]:
        """float [len(spans[b])] per sentence b: the exact probability that the output
        has a chunk of the given type over tokens first..last (inclusive), for any
        candidate spans (first, last, type), under ``grammar`` when it is given and
        at ``temperature`` (see :meth:`fit_temperature`)."""
        check_fitted(self)
        sentences = as_sentences(corpus, "ChainCRF.span_probabilities")
        lengths = [len(sentence) for sentence in sentences]
        rules = self.constraint_rules(lengths, constraints, "ChainCRF.span_probabilities")
        if not sentences:
            return []
        pot = self.span_potentials(sentences, grammar, params, rules, temperature)
        return entity_probabilities(pot, state_labels(pot.topology), spans)

    def span_potentials(
        self,
        sentences: Sequence[Sentence],
        grammar=None,
        params: dict | None = None,
        rules: Sequence[SentenceRules | None] | None = None,
        temperature: float = 1.0,
    ) -> Potentials:
        """The potentials entity probabilities are computed on: the decoding topology,
        restricted to ``grammar`` when it is given, the model's scores tempered by
        ``temperature``, then under ``rules`` (from :meth:`constraint_rules`) when given:
        a rule's weight stays its log-odds bonus at any temperature."""
        pot = recent_potentials(self, sentences)  # a small batch's, from the last call on it
        if grammar is not None:
            if not (isinstance(grammar, (Grammar, Acceptor)) or is_fst(grammar)):
                grammar = load_grammar(grammar)
            pot = restrict(pot, grammar, params=params).potentials
        pot = tempered(pot, temperature)
        return pot if rules is None else constrain(pot, rules, threads=int(self.threads)).potentials

    def reading_emissions(self, sentences: Sequence[Sentence], lower_labels: Sequence[str]) -> np.ndarray:
        """float [N, K, S]: the emission scores of every state at every token when the
        ``reads`` column takes the k-th of ``lower_labels`` there (K of them)."""
        sentences = as_sentences(sentences, "ChainCRF.reading_emissions")
        check_fitted(self)
        if self.reads is None:
            raise FstcrfError("this model reads no lower tagger's labels (train it with reads=...)")
        features = reading_features(self.extractor_, self.reads, self.features_, sentences, lower_labels)
        return reading_block(self.features_, features, 0, len(sentences), self.weights_)

    @blas_single_threaded()
    def predict_marginals(
        self, corpus: Corpus | Sequence[Sentence], grammar=None, params: dict | None = None, constraints=None
    ) -> list[np.ndarray]:
        """float [T, L] per sentence: p(label at token t = l | sentence), columns in
        ``labels_`` order (state marginals summed over the states of each label);
        with ``grammar``, p(label | sentence, the labels are accepted by it), and
        likewise under ``constraints``."""
        check_fitted(self)
        sentences = as_sentences(corpus, "ChainCRF.predict_marginals")
        lengths = [len(sentence) for sentence in sentences]
        rules = self.constraint_rules(lengths, constraints, "ChainCRF.predict_marginals")
        if not sentences:
            return []
        if rules is not None:
            pot = self.span_potentials(sentences, grammar, params, rules)
            node = cast(np.ndarray, forward_backward(pot, edge_counts=False, threads=int(self.threads)).node_marginals)
            by_state = np.zeros((pot.topology.num_states, self.topology_.num_labels))
            by_state[np.arange(pot.topology.num_states), pot.topology.state_label] = 1.0
            return np.split(node @ by_state, pot.offsets[1:-1])
        if grammar is not None and not (isinstance(grammar, (Grammar, Acceptor)) or is_fst(grammar)):
            grammar = load_grammar(grammar)
        encoded = self.encode(sentences)
        state_marginals = self.scorer().marginals(encoded, self.weights_, grammar, params)
        by_label = np.zeros((self.topology_.num_states, self.topology_.num_labels))
        by_label[np.arange(self.topology_.num_states), self.topology_.state_label] = 1.0
        return np.split(state_marginals @ by_label, encoded.offsets[1:-1])

    def score(self, corpus: Corpus | Sequence[Sentence], target: str | None = None) -> ChunkScores | TagScores:
        """Scores of the predictions against column ``target`` (default: the column
        trained on): chunk scores for chunk labels, else token accuracy (see
        :func:`~fstcrf.corpus.evaluate.score_labels`)."""
        check_fitted(self)
        corpus = as_corpus(corpus, "ChainCRF.score")
        return score_labels(corpus.column(target or self.target_), self.predict(corpus))

    # -- files ---------------------------------------------------------------
    def to_payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The JSON-able description and the arrays of the fitted model (a model file's
        header and arrays, see :mod:`fstcrf.model.payload`)."""
        return to_payload(self)

    @classmethod
    def from_payload(cls, header: dict, arrays: dict[str, np.ndarray], where: str) -> ChainCRF:
        """A fitted model from :meth:`to_payload`'s output (``where`` names the file in
        errors); ModelFileError if it is inconsistent."""
        model = cls(**params_from_payload(header, where, cls().get_params()))
        return model.set_fitted_state(fitted_from_payload(model, header, arrays, where))

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model to ``path`` atomically (see :func:`save_model`)."""
        save_model(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> ChainCRF:
        """Read a model written by :meth:`save` (see :func:`load_model`)."""
        return load_model(path)


def save_model(model: ChainCRF, path: str | os.PathLike) -> None:
    """Write a fitted model to one self-describing file (layout in :mod:`fstcrf.model.file`)."""
    header, arrays = model.to_payload()
    write_container(path, MODEL_KIND, header, arrays)


def load_model(path: str | os.PathLike) -> ChainCRF:
    """Read a model written by :func:`save_model`.

    Raises ModelFileError if the file cannot be read, is not an fstcrf model,
    is truncated or corrupt, or has a format version this fstcrf does not read.
    """
    header, arrays = read_kind(path, (MODEL_KIND,), "a single model")
    return ChainCRF.from_payload(header, arrays, os.fspath(path))
