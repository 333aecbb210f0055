"""The factored feature layout, the training objective and model files."""

import json
import os
import random
import struct
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.engine import kernel
from fstcrf.features import encoding
from fstcrf.learn import objective
from fstcrf.corpus.conll import Corpus, Sentence, write_conll
from fstcrf.features.encoding import EncodedSentences, FactoredFeatures
from fstcrf.errors import FstcrfError, LabelError, ModelFileError, ShapeError
from fstcrf.features.template import CRFPP_CHUNKING
from fstcrf.corpus.labels import gold_label_set
from fstcrf.model import ChainCRF, load_model, save_model
from fstcrf.model.file import FORMAT_VERSION, MAGIC, MODEL_KIND, checksum, write_container
from oracles import check_finite_differences
from corpora import READING_TEMPLATE, TEMPLATE, chunk_corpus, random_corpus, reading_training_set, training_set


def dense_weights(features: FactoredFeatures, theta: np.ndarray) -> np.ndarray:
    """float [P, S + L]: the feature weights as a predicate-by-output table."""
    table = np.zeros((features.num_predicates, features.num_states + features.num_labels))
    predicate = np.repeat(np.arange(features.num_predicates), np.diff(features.ptr))
    table[predicate, features.output] = theta
    return table


def csr(encoded: EncodedSentences) -> scipy.sparse.csr_matrix:
    return encoded.rows().to_scipy()


CONFIGURATIONS = [(1, "supported"), (1, "complete"), (2, "supported"), (2, "complete"), (2, "complete-tags")]


# -- the feature layout ------------------------------------------------------------


@pytest.mark.parametrize("order,feature_set", CONFIGURATIONS)
def test_feature_loops_match_sparse_algebra(order, feature_set):
    problem = training_set(random_corpus(1, 30), order, feature_set)
    features, encoded = problem.scorer.features, problem.encoded
    S, L = features.num_states, features.num_labels
    rng = np.random.default_rng(0)
    theta = rng.normal(size=features.num_features)
    X = csr(encoded)
    scores = X @ dense_weights(features, theta)  # [N, S + L]
    expected = scores[:, :S] + (scores[:, S + features.state_label] if L else 0.0)
    tokens = encoded.tokens(0, encoded.num_sequences)
    np.testing.assert_allclose(features.emissions(tokens, theta, 0.5), 0.5 * expected, atol=1e-12)
    marginals = rng.random((encoded.num_tokens, S))
    by_output = (
        np.hstack([marginals, marginals @ (np.arange(L)[None, :] == features.state_label[:, None])]) if L else marginals
    )
    counts = X.T @ by_output  # [P, S + L]
    predicate = np.repeat(np.arange(features.num_predicates), np.diff(features.ptr))
    out = np.ones(features.num_features)
    features.accumulate(tokens, marginals, out, 2.0)
    np.testing.assert_allclose(out, 1.0 + 2.0 * counts[predicate, features.output], atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CONFIGURATIONS), st.integers(0, 2**32 - 1))
def test_counts_in_a_compact_layout_are_the_dense_ones_bit_for_bit(configuration, seed):
    """A thread's counts kept for the predicates its tokens use (ff_accumulate_at), then
    added to the gradient (ff_add_rows_at): the same numbers as a dense buffer added
    whole, and a layout missing a used predicate is refused before anything is written."""
    order, feature_set = configuration
    problem = training_set(random_corpus(seed % 7, 30), order, feature_set)
    features, encoded = problem.scorer.features, problem.encoded
    dictionary = features.kernel_dictionary
    rng = np.random.default_rng(seed)
    first = int(rng.integers(0, encoded.num_sequences))
    rows = encoded.token_rows(first, encoded.num_sequences)
    tokens = encoded.tokens(first, encoded.num_sequences)
    marginals = rng.random((rows.stop - rows.start, features.num_states))
    used = np.zeros(features.num_predicates, dtype=bool)
    used[encoded.indices[encoded.indptr[rows.start] : encoded.indptr[rows.stop]]] = True
    at, size = dictionary.compact_layout(used)
    assert size == int(np.diff(features.ptr)[used].sum())
    dense = np.zeros(features.num_features)
    dictionary.accumulate(tokens, marginals, 0.5, dense)
    compact = np.zeros(size)
    dictionary.accumulate(tokens, marginals, 0.5, compact, at)
    gradient = rng.normal(size=features.num_features)
    expected = gradient + dense
    dictionary.add_compact(at, compact, gradient)
    assert np.array_equal(gradient, expected)
    if used.any():
        missing = at.copy()
        missing[np.flatnonzero(used)[-1]] = -1
        untouched = np.full(size, 7.0)
        with pytest.raises(RuntimeError, match="ff_accumulate_at"):
            dictionary.accumulate(tokens, marginals, 0.5, untouched, missing)
        assert np.all(untouched == 7.0)
        with pytest.raises(ShapeError):
            dictionary.add_compact(at, compact[:-1], gradient)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CONFIGURATIONS), st.integers(0, 2**32 - 1))
def test_direct_predicates_write_the_dense_counts_in_place(configuration, seed):
    """A layout whose DIRECT predicates (those one thread alone uses) write straight into
    the [F] counts, the others into the compact buffer: together the dense counts, bit
    for bit, and a DIRECT predicate with no [F] counts to write to is refused unwritten."""
    order, feature_set = configuration
    problem = training_set(random_corpus(seed % 7, 30), order, feature_set)
    features, encoded = problem.scorer.features, problem.encoded
    dictionary = features.kernel_dictionary
    rng = np.random.default_rng(seed)
    tokens = encoded.tokens(0, encoded.num_sequences)
    marginals = rng.random((encoded.num_tokens, features.num_states))
    used = np.zeros(features.num_predicates, dtype=bool)
    used[encoded.indices] = True
    alone = rng.random(features.num_predicates) < 0.5
    at, size = dictionary.compact_layout(used, direct=alone)
    assert np.all(at[used & alone] == kernel.DIRECT)
    assert size == int(np.diff(features.ptr)[used & ~alone].sum())
    dense = np.zeros(features.num_features)
    dictionary.accumulate(tokens, marginals, 0.5, dense)
    compact, direct = np.zeros(size), np.zeros(features.num_features)
    dictionary.accumulate(tokens, marginals, 0.5, compact, at, direct)
    dictionary.add_compact(at, compact, direct)
    assert np.array_equal(direct, dense)
    if (used & alone).any():
        untouched = np.full(size, 7.0)
        with pytest.raises(RuntimeError, match="ff_accumulate_at"):
            dictionary.accumulate(tokens, marginals, 0.5, untouched, at)
        assert np.all(untouched == 7.0)


def test_binary_rows_keep_no_values_and_give_them_back():
    problem = training_set(random_corpus(1, 20), 1, "supported")
    encoded = problem.encoded
    assert encoded.values is None
    rows = encoded.rows()
    assert np.array_equal(rows.data, np.ones(encoded.indices.shape)) and rows.shape == (
        encoded.num_tokens,
        encoded.num_predicates,
    )
    weighted = EncodedSentences(rows.with_entries(np.zeros(0, int), np.zeros(0, int), np.zeros(0)), encoded.lengths)
    assert weighted.values is None
    halved = EncodedSentences(rows._replace(data=rows.data * 0.5), encoded.lengths)
    assert np.array_equal(halved.values, np.full(encoded.indices.shape, 0.5))


@pytest.mark.parametrize("order,feature_set", CONFIGURATIONS)
def test_feature_sets(order, feature_set):
    corpus = random_corpus(2, 30)
    problem = training_set(corpus, order, feature_set)
    features = problem.scorer.features
    S, L, P = features.num_states, features.num_labels, features.num_predicates
    bias = problem.encoded.indices[problem.encoded.indptr[0]]  # the bias is the first predicate
    table = dense_weights(features, np.ones(features.num_features)) > 0
    # supported pairs: the predicate is on at a token whose gold state (or its label) is the output
    X = csr(problem.encoded)
    gold = np.zeros((problem.encoded.num_tokens, S + L), dtype=bool)
    gold[np.arange(len(problem.states)), problem.states] = True
    if L:
        gold[np.arange(len(problem.states)), S + features.state_label[problem.states]] = True
    supported = (X.T @ gold.astype(float)) > 0
    if L:
        supported[bias, S:] = False
    assert L == (problem.scorer.topology.num_labels if order == 2 else 0)
    if feature_set == "supported":
        np.testing.assert_array_equal(table, supported)
    else:
        if feature_set == "complete":
            assert table[:, :S].all()
        else:
            np.testing.assert_array_equal(table[:, :S], supported[:, :S])
        assert table[:, S:].sum() == (P - 1) * L and not table[bias, S:].any()
        assert features.num_features == table.sum()


def test_complete_feature_sets_too_large_are_refused(monkeypatch):
    monkeypatch.setattr(encoding, "MAX_FEATURES", 100)
    with pytest.raises(FstcrfError, match="use features='supported'"):
        training_set(random_corpus(3, 30), 1, "complete")
    with pytest.raises(FstcrfError, match="use features='complete-tags' or 'supported'"):
        training_set(random_corpus(3, 30), 2, "complete")
    with pytest.raises(FstcrfError, match="complete-tags feature set .* use features='supported'"):
        training_set(random_corpus(3, 30), 2, "complete-tags")


def test_gold_labels_the_topology_forbids():
    def sentence(chunks):
        return Sentence({"word": ["w"] * len(chunks), "pos": ["P"] * len(chunks), "chunk": chunks})

    corpus = Corpus(("word", "pos", "chunk"), [sentence(["B-NP", "I-NP"]), sentence(["O", "I-NP", "O"])])
    with pytest.raises(LabelError, match=r"sentence 1 \(O I-NP O\) is not allowed by the second-order"):
        ChainCRF(TEMPLATE, order=2).fit(corpus)
    assert ChainCRF(TEMPLATE, order=1, max_iter=2).fit(corpus).labels_ == ("B-NP", "I-NP", "O")


def test_second_order_needs_the_outside_tag():
    corpus = chunk_corpus(0, 5)
    for sentence in corpus:
        sentence.columns["chunk"] = [tag.replace("O", "B-X") for tag in sentence["chunk"]]
    with pytest.raises(LabelError, match="outside tag 'O'"):
        ChainCRF(TEMPLATE, order=2).fit(corpus)


# -- the objective -----------------------------------------------------------------


@pytest.mark.parametrize("order,feature_set", CONFIGURATIONS)
def test_gradient_matches_finite_differences(order, feature_set):
    problem = training_set(random_corpus(5, 12), order, feature_set)
    theta = np.random.default_rng(order).normal(0, 0.5, problem.num_weights)
    check_finite_differences(
        problem.loss_and_gradient, theta, problem.scorer.features.num_features, seed=order, num_coordinates=6
    )


@pytest.mark.parametrize("order", [1, 2])
def test_loss_is_the_negative_log_likelihood(order):
    problem = training_set(random_corpus(6, 8), order, "supported")
    theta = np.random.default_rng(7).normal(size=problem.num_weights)
    loss, _ = problem.loss_and_gradient(theta)
    pot = problem.scorer.potentials(problem.encoded, theta, 0, problem.num_sequences)
    from fstcrf.engine.inference import log_partition

    expected = float(np.sum(log_partition(pot)) - np.sum(pot.score(problem.states)))
    assert loss == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("order,reading", [(1, False), (2, False), (2, True)])
def test_sentence_gradients_sum_to_the_full_gradient(order, reading):
    """Also with transitions that read a lower label (reading_training_set, below)."""
    corpus = random_corpus(8, 15)
    problem = reading_training_set(corpus, order) if reading else training_set(corpus, order, "supported")
    theta = np.random.default_rng(9).normal(size=problem.num_weights)
    loss, gradient = problem.loss_and_gradient(theta)
    total, summed = 0.0, np.zeros(problem.num_weights)
    for index in range(problem.num_sequences):
        total += problem.add_gradient(theta / 4, 4.0, index, summed, -1.0)
    assert total == pytest.approx(loss, rel=1e-10)
    np.testing.assert_allclose(-summed, gradient, atol=1e-9)


@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_threads_do_not_change_the_objective(configuration, threads):
    """One thread against several, whose blocks after the first write the predicates
    they alone use straight into the gradient and buffer the shared ones."""
    order, feature_set = configuration
    corpus = random_corpus(10, 40)
    one = training_set(corpus, order, feature_set, threads=1)
    two = training_set(corpus, order, feature_set, threads=threads)
    layouts = [block.layout for block in two._driver.blocks[1:]]
    assert layouts and all(layout is not None and (layout == kernel.DIRECT).any() for layout in layouts)
    theta = np.random.default_rng(11).normal(size=one.num_weights)
    (loss_one, gradient_one), (loss_two, gradient_two) = one.loss_and_gradient(theta), two.loss_and_gradient(theta)
    assert loss_one == pytest.approx(loss_two, rel=1e-12)
    np.testing.assert_allclose(gradient_one, gradient_two, atol=1e-10)


@pytest.mark.pynini
@pytest.mark.parametrize(
    "order,constrained,partial", [(1, False, False), (2, False, True), (1, True, True), (2, True, False)]
)
def test_sentence_groups_do_not_change_the_objective(monkeypatch, order, constrained, partial):
    """The C gradient scores, runs forward-backward and counts features group by group;
    groups of one sentence give the same objective as one group of all, also with a
    training constraint and with partially labelled sentences among full ones."""
    from fstcrf.grammar import compile_grammar, load_grammar

    corpus = random_corpus(12, 30)
    if partial:
        rng = random.Random(5)
        for sentence in corpus.sentences[::3]:
            sentence.columns["chunk"] = ["?" if rng.random() < 0.5 else label for label in sentence.columns["chunk"]]
    labels = gold_label_set(corpus.column("chunk"))
    constraint = compile_grammar(load_grammar("iob2"), labels) if constrained else None
    whole = training_set(corpus, order, "supported", constraint=constraint)
    assert whole.partial.any() == partial
    theta = np.random.default_rng(13).normal(size=whole.num_weights)
    expected = whole.loss_and_gradient(theta)
    monkeypatch.setattr(objective, "GROUP_TOKENS", 1)  # one sentence per group
    grouped = training_set(corpus, order, "supported", constraint=constraint)
    loss, gradient = grouped.loss_and_gradient(theta)
    assert loss == pytest.approx(expected[0], rel=1e-12)
    np.testing.assert_allclose(gradient, expected[1], atol=1e-10)


# -- the estimator -----------------------------------------------------------------


def test_parameters_are_checked_at_fit():
    corpus = chunk_corpus(0, 5)
    for bad in [
        dict(order=3),
        dict(algorithm="newton"),
        dict(features="all"),
        dict(threads=0),
        dict(sigma=-1.0),
        dict(max_iter=0),
        dict(features="complete-tags", order=1),
    ]:
        with pytest.raises(FstcrfError):
            ChainCRF(TEMPLATE, **bad).fit(corpus)
    with pytest.raises(FstcrfError, match="not fitted"):
        ChainCRF().predict(corpus)


def test_templates_by_name_text_and_object():
    corpus = chunk_corpus(0, 10)
    names = [
        ChainCRF(template, max_iter=2).fit(corpus).extractor_.to_dict()["template"]
        for template in ("crfpp", CRFPP_CHUNKING, CRFPP_CHUNKING.text)
    ]
    assert names[0] == names[1] == names[2]


def test_label_marginals():
    corpus, test = chunk_corpus(0, 40), chunk_corpus(1, 10)
    for order in (1, 2):
        model = ChainCRF(TEMPLATE, order=order, max_iter=50).fit(corpus)
        marginals = model.predict_marginals(test)
        assert [m.shape for m in marginals] == [(len(s), len(model.labels_)) for s in test]
        for sentence, predicted in zip(marginals, model.predict(test)):
            np.testing.assert_allclose(sentence.sum(axis=1), 1.0, atol=1e-12)
            assert [model.labels_[i] for i in sentence.argmax(axis=1)] == predicted
    assert model.predict([]) == [] and model.predict_marginals([]) == []


# -- model files -------------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted():
    return ChainCRF(TEMPLATE, order=2, max_iter=15).fit(chunk_corpus(0, 30))


@pytest.fixture
def saved(fitted, tmp_path):
    path = tmp_path / "chunker.model"
    fitted.save(path)
    return path


def _repack(raw: bytes, edit) -> bytes:
    """The file with its JSON header edited by ``edit`` and a fresh digest."""
    _, version, header_size, data_size = struct.unpack_from("<16sIQQ", raw)
    header = json.loads(raw[36 : 36 + header_size])
    edit(header)
    text = json.dumps(header).encode()
    text += b" " * (-(36 + len(text)) % 8)
    body = struct.pack("<16sIQQ", MAGIC, version, len(text), data_size) + text + raw[36 + header_size : -32]
    return body + checksum(body)


def test_round_trip(fitted, saved):
    test = chunk_corpus(5, 10)
    loaded = ChainCRF.load(saved)
    assert loaded.predict(test) == fitted.predict(test)
    for a, b in zip(loaded.predict_marginals(test), fitted.predict_marginals(test)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(loaded.weights_, fitted.weights_)
    assert loaded.labels_ == fitted.labels_ and loaded.history_ == fitted.history_
    assert loaded.get_params() == fitted.get_params()
    assert (loaded.n_iter_, loaded.best_iteration_, loaded.interrupted_, loaded.target_) == (
        fitted.n_iter_,
        fitted.best_iteration_,
        fitted.interrupted_,
        fitted.target_,
    )
    assert [f for f in os.listdir(saved.parent) if f != saved.name] == []


@pytest.mark.slow
def test_fresh_process_gives_identical_predictions(fitted, saved, tmp_path):
    test = chunk_corpus(6, 10)
    write_conll(test, tmp_path / "test.txt")
    script = (
        "import json, sys\n"
        "from fstcrf.corpus.conll import read_conll\n"
        "from fstcrf.model import load_model\n"
        "model = load_model(sys.argv[1])\n"
        "corpus = read_conll(sys.argv[2])\n"
        "print(json.dumps([model.predict(corpus), "
        "[m.tolist() for m in model.predict_marginals(corpus)]]))\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", script, str(saved), str(tmp_path / "test.txt")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    labels, marginals = json.loads(output)
    assert labels == fitted.predict(test)
    assert marginals == [m.tolist() for m in fitted.predict_marginals(test)]


def test_saving_replaces_atomically(fitted, saved):
    before = saved.read_bytes()
    save_model(fitted, saved)
    assert saved.read_bytes() == before
    assert sorted(os.listdir(saved.parent)) == [saved.name]
    with pytest.raises(FstcrfError, match="not fitted"):
        ChainCRF().save(saved.parent / "unfitted.model")
    assert sorted(os.listdir(saved.parent)) == [saved.name]


def test_truncated_files(saved):
    raw = saved.read_bytes()
    for size in [0, 1, 10, 16, 20, 35, 36, 37, 100, len(raw) // 2, len(raw) - 33, len(raw) - 32, len(raw) - 1]:
        saved.write_bytes(raw[:size])
        with pytest.raises(ModelFileError, match="truncated|not an fstcrf model"):
            load_model(saved)


def test_flipped_bytes(saved):
    raw = saved.read_bytes()
    rng = np.random.default_rng(0)
    positions = sorted(
        {0, 15, 16, 20, 28, 36, 40, len(raw) // 2, len(raw) - 40, len(raw) - 1, *rng.integers(0, len(raw), 20).tolist()}
    )
    for position in positions:
        corrupt = bytearray(raw)
        corrupt[position] ^= 0x10
        saved.write_bytes(bytes(corrupt))
        with pytest.raises(ModelFileError):
            load_model(saved)


def test_foreign_and_missing_files(tmp_path):
    foreign = tmp_path / "foreign.bin"
    foreign.write_bytes(np.random.default_rng(1).bytes(5000))
    with pytest.raises(ModelFileError, match="not an fstcrf model"):
        load_model(foreign)
    foreign.write_text("word pos chunk\n")
    with pytest.raises(ModelFileError, match="not an fstcrf model"):
        load_model(foreign)
    with pytest.raises(ModelFileError, match="cannot read"):
        load_model(tmp_path / "missing.model")
    with pytest.raises(ModelFileError, match="cannot read"):
        load_model(tmp_path)


def test_future_version(saved):
    raw = bytearray(saved.read_bytes())
    raw[16:20] = struct.pack("<I", FORMAT_VERSION + 1)
    saved.write_bytes(bytes(raw))
    with pytest.raises(ModelFileError, match=f"version {FORMAT_VERSION + 1} is not supported.*newer fstcrf"):
        load_model(saved)


def test_intact_file_with_inconsistent_contents(saved):
    raw = saved.read_bytes()
    edits = [
        lambda h: h.update(format="something-else"),
        lambda h: h["arrays"]["weights"].update(shape=[3]),
        lambda h: h["arrays"]["feature_ptr"].update(offset=10**9),
        lambda h: h["arrays"]["weights"].update(dtype="<f4"),
        lambda h: h["topology"].update(labels=["O", "B-NP"]),
        lambda h: h["params"].update(order=3),
        lambda h: h["params"].pop("sigma"),
        lambda h: h["extractor"].update(predicates=["bias"]),
        lambda h: h["training"].update(n_iter="many"),
    ]
    for edit in edits:
        saved.write_bytes(_repack(raw, edit))
        with pytest.raises(ModelFileError):
            load_model(saved)
    saved.write_bytes(_repack(raw, lambda h: None))
    assert load_model(saved).labels_


# -- transitions that read a lower tagger's label ------------------------------------


@pytest.mark.pynini
@pytest.mark.parametrize(
    "order,constrained,partial", [(1, False, False), (2, False, False), (1, True, True), (2, False, True)]
)
def test_reading_transitions_gradient_matches_finite_differences(order, constrained, partial):
    from fstcrf.grammar import compile_grammar, load_grammar

    corpus = random_corpus(61, 14)
    if partial:
        for sentence in corpus.sentences[::3]:
            sentence.columns["chunk"][0] = "?"
    labels = gold_label_set(corpus.column("chunk"))
    constraint = compile_grammar(load_grammar("iob2"), labels) if constrained else None
    problem = reading_training_set(corpus, order, constraint)
    layout = problem.scorer.transitions
    assert (
        layout.num_lower_labels == 3
        and problem.num_weights == problem.scorer.features.num_features + 4 * layout.num_edges
    )
    theta = np.random.default_rng(order).normal(0, 0.5, problem.num_weights)
    check_finite_differences(
        problem.loss_and_gradient, theta, problem.scorer.features.num_features, seed=order, num_coordinates=12
    )
    # the loss is the negative log-likelihood of the gold paths (full labels)
    if not partial and not constrained:
        pot = problem.scorer.potentials(problem.encoded, theta, 0, problem.num_sequences)
        from fstcrf.engine.inference import log_partition

        loss, _ = problem.loss_and_gradient(theta)
        assert loss == pytest.approx(float(np.sum(log_partition(pot)) - np.sum(pot.score(problem.states))), rel=1e-10)


def test_reading_transitions_are_learned_saved_and_composed(tmp_path):
    """Transitions that read the pos label: the model learns a deviation per pos label,
    saves and reloads it, scores an unseen pos label by the base row, and a model
    trained without them keeps one row per edge."""
    corpus = chunk_corpus(63, 40)
    model = ChainCRF(READING_TEMPLATE, reads="pos", max_iter=20).fit(corpus)
    plain = ChainCRF(READING_TEMPLATE, reads="pos", read_transitions=False, max_iter=20).fit(corpus)
    E = model.topology_.num_edges
    assert len(model.weights_) == model.features_.num_features + E * (1 + len(model.lower_labels_))
    assert len(plain.weights_) == plain.features_.num_features + E
    table = model.transition_scores(model.lower_labels_ + ["UNSEEN"])
    base = model.weights_[model.features_.num_features :][:E]
    np.testing.assert_allclose(table[-1], base)
    assert not np.allclose(table[0], table[1])
    assert np.ptp(plain.transition_scores(plain.lower_labels_), axis=0).max() == 0.0
    model.save(tmp_path / "m.model")
    again = load_model(tmp_path / "m.model")
    assert again.read_transitions and again.predict(corpus) == model.predict(corpus)


def test_files_from_before_reading_transitions_and_f_score_training_load(tmp_path):
    """A reading model written before read_transitions, mce_c and mce_iter existed
    (its transitions read no label) loads with that meaning."""
    corpus = chunk_corpus(65, 20)
    model = ChainCRF(READING_TEMPLATE, reads="pos", read_transitions=False, max_iter=5).fit(corpus)
    header, arrays = model.to_payload()
    for name in ("read_transitions", "mce_c", "mce_iter"):
        del header["params"][name]
    write_container(tmp_path / "old.model", MODEL_KIND, header, arrays)
    old = load_model(tmp_path / "old.model")
    assert old.read_transitions is False and old.predict(corpus) == model.predict(corpus)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 999), max_size=200), st.booleans())
def test_key_counts_by_table_or_by_sorting_equal_numpy_unique(keys, by_sorting):
    keys = np.array(keys, dtype=np.int64)
    bound = encoding.COUNT_TABLE_KEYS + 1 if by_sorting else 1000
    distinct, counts = encoding.key_counts(keys, bound)
    expected = np.unique(keys, return_counts=True)
    np.testing.assert_array_equal(distinct, expected[0])
    np.testing.assert_array_equal(counts, expected[1])


@pytest.mark.parametrize("reverse", [False, True])
def test_complete_rows_are_read_as_vectors_only_when_outputs_ascend(reverse):
    """A predicate with a feature for every output is read as a contiguous row when the
    outputs of every predicate ascend; with one predicate's outputs reversed the general
    loop runs.  Both give the sparse algebra's scores and counts, with real values."""
    rng = np.random.default_rng(1)
    S, L, P = 4, 2, 5
    state_label = np.array([0, 1, 0, 1], dtype=np.int32)
    full = np.arange(S + L, dtype=np.int32)
    rows = [
        full[::-1] if reverse else full,
        np.array([1, 4], dtype=np.int32),
        full,
        np.array([0], dtype=np.int32),
        full,
    ]
    ptr = np.concatenate([[0], np.cumsum([len(row) for row in rows])])
    features = FactoredFeatures(state_label, L, ptr, np.concatenate(rows))
    assert features.kernel_dictionary.outputs_ascending == (not reverse)
    X = scipy.sparse.random(12, P, density=0.6, random_state=3, format="csr") * 3.0
    encoded = EncodedSentences(X, [5, 7])
    theta = rng.normal(size=features.num_features)
    scores = X @ dense_weights(features, theta)
    tokens = encoded.tokens(0, 2)
    np.testing.assert_allclose(
        features.emissions(tokens, theta), scores[:, :S] + scores[:, S + state_label], atol=1e-12
    )
    marginals = rng.random((12, S))
    by_output = np.hstack([marginals, marginals @ (np.arange(L)[None, :] == state_label[:, None])])
    counts = X.T @ by_output
    out = np.zeros(features.num_features)
    features.accumulate(tokens, marginals, out, 0.5)
    predicate = np.repeat(np.arange(P), np.diff(ptr))
    np.testing.assert_allclose(out, 0.5 * counts[predicate, features.output], atol=1e-12)
