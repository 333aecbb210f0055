"""A small batch tagged in one kernel call (fstcrf/model/tagging.py) gives the batch
path's best paths and scores bit for bit, on the model's graph, on a training
grammar's restriction, with transitions that read a lower column and with a
template of value lists (read from the value store by ft_tag_lists); the best
score is the best of every label sequence (brute force); what the plan does not
take falls back to the batch path and its errors."""

import itertools
import threading

import numpy as np
import pytest

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.labels import label_states
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine import kernel
from fstcrf.engine.inference import viterbi
from fstcrf.engine.spans import ChunkEdges, decoded_entities, kernel_structs, state_labels
from fstcrf.errors import FstcrfError, LabelError
from fstcrf.features.hashing import value_store
from fstcrf.grammar import restrict_to
from fstcrf.model import ChainCRF
from fstcrf.model.chain import load_model, save_model
from fstcrf.model.tagging import tagging_plan

TRAIN = read_conll(DATA_DIR / "demo_train.txt")
TEST = read_conll(DATA_DIR / "demo_test.txt").sentences[:60]

#: Every kind of item the value store computes, and single values beside them.
LIST_TEMPLATE = """bias
word[0]
lower(word[-1])|lower(word[0])
prefix3(word[0])
suffixes(lower(word[0]),1,4)
ngrams(word[0],1,6)
bag(lower(word),-2,2)
types(word,-1,1)
seen_lower(word[0])
seen_lower(word[0])|shape(word[0])
shape(word[0])|pos[0]
pos[-1]|pos[0]
"""

MODELS = {
    "order 1": dict(max_iter=8),
    "value lists": dict(max_iter=8, template=LIST_TEMPLATE),
    "order 2": dict(max_iter=8, order=2),
    "grammar": dict(max_iter=8, grammar="iob2"),
    "reads pos": dict(template="chunking-reads-pos", reads="pos", max_iter=8),
}


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(name, marks=[pytest.mark.pynini] if "grammar" in MODELS[name] else []) for name in sorted(MODELS)
    ],
)
def model(request, tmp_path_factory):
    """Each kind of model, loaded from its file (read-only weights: transition
    scores made once) and, for order 1, as fitted (writable: made at each call)."""
    fitted = ChainCRF(**MODELS[request.param]).fit(TRAIN, target="chunk")
    path = tmp_path_factory.mktemp("models") / "model.crf"
    save_model(fitted, path)
    return load_model(path) if request.param != "order 1" else fitted


def _batch_best(model, sentences):
    """The batch path's best states [N] and scores [B]: potentials, the training
    grammar's restriction, Viterbi."""
    pot = model.potentials(sentences)
    constrained = model.scorer().constrained
    if constrained is None:
        best = viterbi(pot)
        return best.paths, best.scores
    restriction = restrict_to(pot, constrained)
    best = viterbi(restriction.potentials)
    return restriction.state_map[best.paths], best.scores


def _bits(array) -> bytes:
    return np.ascontiguousarray(array).tobytes()


def test_one_kernel_call_gives_the_batch_paths_and_scores_bit_for_bit(model):
    plan = tagging_plan(model)
    assert plan.window is not None or plan.lists is not None  # the template's rows are looked up in C
    for sentence in TEST:
        states, scores = _batch_best(model, [sentence])
        path, score = plan.paths([sentence])
        assert _bits(path) == _bits(states.astype(np.int32)) and _bits(score) == _bits(scores)
        path, score = plan.encoded_paths(model.encode([sentence]))  # rows given
        assert _bits(path) == _bits(states.astype(np.int32)) and _bits(score) == _bits(scores)
        pot = plan.potentials([sentence])  # the emissions of the one call (a model's own topology)
        assert (pot is None) == (model.scorer().constrained is not None or model.reads is not None)
        if pot is not None:
            assert _bits(pot.emissions) == _bits(model.potentials([sentence]).emissions)
    states, scores = _batch_best(model, TEST[:7])  # several sentences in one call
    path, score = plan.paths(TEST[:7])
    assert _bits(path) == _bits(states.astype(np.int32)) and _bits(score) == _bits(scores)
    assert [model.predict([sentence])[0] for sentence in TEST] == model.predict(TEST)
    assert model.decode(model.encode(TEST[:3])) == model.predict(TEST[:3])


def test_a_small_batch_s_entities_are_the_batch_path_s_bit_for_bit(model):
    """The chunks of the one call's path and their probabilities, found in C from the
    emissions it left (fc_path_chunks), against the batch path's decoded_entities;
    a model whose transitions read a lower column or whose topology is restricted
    goes the batch path's way."""
    plan = tagging_plan(model)
    pot = model.span_potentials(TEST)
    expected = decoded_entities(pot, state_labels(pot.topology), viterbi(pot).paths)
    assert sum(map(len, expected)) > 50
    taken = plan.entities(TEST[:1]) is not None
    assert taken == (model.scorer().constrained is None and model.reads is None)
    assert [model.predict_spans([sentence])[0] for sentence in TEST] == expected
    for first in range(0, 12, 4):  # several sentences in one call
        assert model.predict_spans(TEST[first : first + 4]) == expected[first : first + 4]


def test_a_sentence_too_wide_for_the_linear_domain_gets_its_entities_from_the_log_domain():
    """Weights scaled up 400-fold: the linear tables lose the sentences, and the one
    call's entities are the log domain's, as the batch path gives them."""
    model = ChainCRF(max_iter=8).fit(TRAIN, target="chunk")
    model.weights_ *= 400.0
    pot = model.span_potentials(TEST[:8])
    edges = ChunkEdges.of(pot.topology, state_labels(pot.topology))
    one_span = tuple(np.zeros(1, dtype) for dtype in (np.int32, np.int64, np.int64, np.int32))
    _, exact = kernel.chunk_probabilities(*kernel_structs(pot), edges.reading, one_span)
    assert not exact.any()  # every sentence lost by the linear tables
    expected = decoded_entities(pot, state_labels(pot.topology), viterbi(pot).paths)
    assert [model.predict_spans([sentence])[0] for sentence in TEST[:8]] == expected
    assert model.predict_spans(TEST[:3]) == expected[:3]


def _accepted(labels) -> bool:
    previous = "O"
    for label in labels:
        if label.startswith("I-") and previous[2:] != label[2:]:
            return False
        previous = label
    return True


def test_the_best_score_is_the_best_of_every_label_sequence(model):
    """Brute force on sentences of 1 to 3 tokens: every label sequence the topology
    (and the training grammar) has a path for, scored by the potentials."""
    topology = model.topology_
    plan = tagging_plan(model)
    sizes = ((0, 1), (1, 2), (2, 3), (3, 3))
    shorts = [Sentence({name: values[:size] for name, values in TEST[i].columns.items()}) for i, size in sizes]
    for sentence in shorts:
        pot = model.potentials([sentence])
        best = -np.inf
        for labels in itertools.product(range(len(model.labels_)), repeat=len(sentence)):
            if model.grammar is not None and not _accepted([model.labels_[k] for k in labels]):
                continue
            try:
                states = label_states(topology, np.array(labels), np.array([0, len(labels)]))
            except LabelError:  # a sequence the topology has no path for
                continue
            best = max(best, float(pot.score(states)[0]))
        path, score = plan.paths([sentence])
        assert score[0] == pytest.approx(best, rel=1e-12, abs=1e-12)
        assert float(pot.score(path)[0]) == pytest.approx(score[0], rel=1e-12, abs=1e-12)


def test_threads_tag_at_the_same_time_with_their_own_buffers(model):
    expected = model.predict(TEST)
    results: dict[int, list] = {}

    def tag_all(k):
        results[k] = [model.predict([sentence])[0] for sentence in TEST]

    threads = [threading.Thread(target=tag_all, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[k] == expected for k in range(3))


def test_what_the_plan_does_not_take_goes_the_batch_path_way(model):
    plan = tagging_plan(model)
    no_pos = Sentence({"word": ["a", "b"]})
    assert plan.paths([no_pos]) is None
    with pytest.raises(FstcrfError, match="pos"):
        model.predict([no_pos])
    number = Sentence({"word": ["a", 3], "pos": ["DT", "NN"]})
    assert plan.paths([number]) is None
    with pytest.raises(FstcrfError):
        model.predict([number])
    empty = Sentence({"word": [], "pos": []})
    assert plan.paths([empty]) is None
    with pytest.raises(FstcrfError, match="empty"):
        model.predict([empty])
    assert plan.paths(TEST * 100) is None  # not a small batch


def test_weights_changed_in_place_are_those_searched_under():
    """A fitted model's writable weights (transitions reading a lower column: scores
    made of a copy of them)."""
    model = ChainCRF(template="chunking-reads-pos", reads="pos", max_iter=5).fit(TRAIN, target="chunk")
    plan = tagging_plan(model)
    before = [plan.paths([sentence])[1][0] for sentence in TEST[:10]]
    num_features = model.features_.num_features
    model.weights_[num_features:] = -model.weights_[num_features:]  # the transitions turned around
    model.weights_[:num_features] *= 0.5
    assert tagging_plan(model) is plan
    for sentence, score in zip(TEST[:10], before):
        states, scores = _batch_best(model, [sentence])
        path, changed = plan.paths([sentence])
        assert _bits(path) == _bits(states.astype(np.int32)) and _bits(changed) == _bits(scores)
        assert changed[0] != score


def test_values_that_escaping_changes_or_that_hold_a_newline_are_hashed_as_the_batch_hashes_them(model):
    """A sentence's columns are hashed from their joined text unless a value needs
    escaping or holds the newline that joins them; either way as the batch path."""
    plan = tagging_plan(model)
    odd = ["a|b", "back\\slash", "_x", "__BOS-1__", "new\nline", "", "é€\U0001f600"]
    for b, sentence in enumerate(TEST[:8]):
        words = list(sentence["word"])
        words[b % len(words)] = odd[b % len(odd)]
        changed = sentence.with_column("word", words)
        states, scores = _batch_best(model, [changed])
        path, score = plan.paths([changed])
        assert _bits(path) == _bits(states.astype(np.int32)) and _bits(score) == _bits(scores)


def test_value_lists_longer_than_the_buffers_first_room_make_them_grow():
    """ft_tag_lists says what room it needs (FV_SHORT) and is called again on larger
    buffers: 120 words of 40 characters (hundreds of n-grams each: more values than
    the first room, and a line crossing them with a bag gives a token more keys than
    the first room), then a sentence longer than the first buffers, each after a
    short sentence, as the batch path tags them."""
    crossing = LIST_TEMPLATE + "bag(lower(word),-2,2)|ngrams(word[0],1,6)\n"
    model = ChainCRF(template=crossing, max_iter=3).fit(TRAIN[:200], target="chunk")
    plan = tagging_plan(model)
    assert plan.lists is not None
    short = TEST[0]
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
    words = [letters[k % 40 :] + letters[: k % 40] + str(k) for k in range(120)]
    long_words = Sentence({"word": words, "pos": ["NN"] * 120})
    long_sentence = Sentence({name: list(values) * 40 for name, values in TEST[1].columns.items()})
    sizes = []
    for sentence in (short, long_words, short, long_sentence):
        states, scores = _batch_best(model, [sentence])
        path, score = plan.paths([sentence])
        assert _bits(path) == _bits(states.astype(np.int32)) and _bits(score) == _bits(scores)
        sizes.append(plan.buffers.lists.sizes)  # (tokens, items, hashes, keys, entries)
    assert sizes[1][:2] == sizes[0][:2] and sizes[1][2] > sizes[0][2] and sizes[1][3] > sizes[0][3]
    assert sizes[3][0] > sizes[2][0]


def test_the_own_value_columns_kept_across_calls_give_the_batch_rows():
    """The lines that read a word's own value alone have their known columns kept per
    value store row across calls (ft_tag_lists, ff_list_rows_kept): sentences tagged
    again from kept columns, and after the store started afresh (its rows numbered
    anew), as the batch path tags them."""
    model = ChainCRF(template=LIST_TEMPLATE, max_iter=3).fit(TRAIN[:200], target="chunk")
    plan = tagging_plan(model)
    assert plan.lists.grouped[0] > 0
    sentences = TEST[:20]
    expected = [_batch_best(model, [sentence]) for sentence in sentences]
    for _ in range(2):
        for sentence, (states, scores) in zip(sentences, expected):
            path, score = plan.paths([sentence])
            assert _bits(path) == _bits(states.astype(np.int32)) and _bits(score) == _bits(scores)
    room = plan.buffers.lists
    used, generation = room.struct.kept.used, room.generation
    assert used > 0
    value_store(plan.lists.salt).clear()
    for sentence, (states, scores) in reversed(list(zip(sentences, expected))):
        path, score = plan.paths([sentence])
        assert _bits(path) == _bits(states.astype(np.int32)) and _bits(score) == _bits(scores)
    assert plan.buffers.lists.generation == generation + 1 and plan.buffers.lists.struct.kept.used > 0
