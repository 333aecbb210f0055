"""One sentence read and tagged in one C call (``TaggingPlan.direct_labels``, what
``Tagger.tag`` and ``CRF.predict_single`` run on lists of dicts and name lists) against
the steps run one by one on its Sentence (``TaggingPlan.paths``) and the batch path:
the same labels and best scores bit for bit, on random items; and on hostile items
(wrong types, huge strings and numbers, NaN, subclasses, items that change the list
while it is read) the same typed errors as the batch path, and no crash."""

import math
import numbers
import sys
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.model.tagging import tagging_plan
from fstcrf.pycrfsuite import Tagger
from fstcrf.pycrfsuite.items import item_list, item_sentence
from fstcrf.sklearn import CRF

from strategies import oracle_settings

LABELS = ["A", "B", "C"]
WORDS = ["the", "cat", "sat", "on", "mat", "Paris", "unseen", "w:x"]
NAMES = st.sampled_from([f"WORD_{word}" for word in WORDS] + ["SUF_at", "CAPITALIZATION", "HAS_NUM", "new", ""])
VALUES = st.one_of(
    st.sampled_from(WORDS),
    st.booleans(),
    st.floats(-3, 3, allow_nan=False),
    st.integers(-5, 5),
    st.sampled_from([math.nan, math.inf, -math.inf, 10**400, None, b"cat", b"\xff", ("a",)]),
    st.dictionaries(st.sampled_from(["-1", "+1"]), st.sampled_from(WORDS), max_size=2),
    st.lists(st.sampled_from(WORDS), max_size=2),
)
DICTS = st.dictionaries(st.sampled_from(["word", "suffix", "title", "length", "w"]), VALUES, max_size=4)
ITEMS = st.one_of(
    st.lists(NAMES, max_size=6),
    st.lists(NAMES, max_size=4).map(tuple),
    DICTS,
    st.sets(NAMES, max_size=3),
    st.sampled_from(["the", 5, None, b"cat", ["WORD_the", 5], ["WORD_the", b"SUF_he"]]),
)


def _training():
    X, y = [], []
    for number in range(80):
        words = [WORDS[(number * 7 + k * 3) % 6] for k in range(1 + number % 6)]
        if number % 2:
            X.append(
                [[f"WORD_{word}", f"SUF_{word[-2:]}", *(["CAPITALIZATION"] * word[0].isupper())] for word in words]
            )
        else:
            X.append(
                [{"word": word, "title": word.istitle(), "length": len(word), "w": {"-1": word}} for word in words]
            )
        y.append([LABELS[(len(word) + k) % 3] for k, word in enumerate(words)])
    return X, y


@pytest.fixture(scope="module")
def crf():
    return CRF(c2=0.1, max_iterations=30, all_possible_transitions=True).fit(*_training())


def _outcome(run):
    """("labels", what ``run()`` returns) or ("error", its exception's type and message)."""
    try:
        return ("labels", run())
    except Exception as error:  # noqa: BLE001 -- the errors themselves are compared
        return ("error", type(error), str(error))


def _batch_outcome(model, xseq):
    return _outcome(lambda: model.predict([item_sentence(item_list(xseq, "xseq"), "xseq")])[0])


@oracle_settings(100)
@given(xseq=st.lists(ITEMS, min_size=1, max_size=8))
def test_one_call_gives_the_steps_labels_scores_and_errors(crf, xseq):
    model = crf.crf_
    plan = tagging_plan(model)
    expected = _batch_outcome(model, xseq)
    assert _outcome(lambda: Tagger.of_model(model).tag(xseq)) == expected
    assert _outcome(lambda: crf.predict_single(xseq)) == expected
    tokens = item_list(xseq, "xseq")
    direct = _outcome(lambda: plan.direct_labels(tokens))
    assert direct in (expected, ("labels", None))  # None: left to the other steps
    if expected[0] == "labels":
        _, scores = plan.paths([item_sentence(tokens, "xseq")])  # the steps one by one
        score = scores.tobytes()
        direct = plan.direct_labels(tokens)
        assert (direct is not None) == all(type(token) in (dict, list, tuple) for token in tokens)
        if direct is not None:
            assert plan.buffers.kept.score[:1].tobytes() == score
        _, item_score = plan.item_paths(tokens)
        assert item_score.tobytes() == score


class _ClearsTheList(numbers.Real):
    """A number whose reading (the Python fallback's float()) empties ``tokens``."""

    def __init__(self, tokens):
        self.tokens = tokens

    def __float__(self):
        self.tokens.clear()
        return 1.0

    # the rest of numbers.Real, never called
    __abs__ = __add__ = __ceil__ = __eq__ = __floor__ = __floordiv__ = __le__ = __lt__ = __mod__ = None
    __mul__ = __neg__ = __pos__ = __pow__ = __radd__ = __rfloordiv__ = __rmod__ = __rmul__ = None
    __round__ = __rpow__ = __rtruediv__ = __truediv__ = __trunc__ = None
    __hash__ = object.__hash__


def test_hostile_items_raise_the_batch_paths_errors_and_never_crash(crf):
    model = crf.crf_
    huge = "x" * 10_000_000
    cases = [
        ["the"],
        [{"word": "the"}, "the"],
        [{"word": "the"}, None],
        [["WORD_the"], 5],
        [{"word": math.nan}],
        [{"word": -math.inf}],
        [{"length": 10**400}],
        [{"word": None}],
        [{1: "the"}],
        [{b"word": "the"}, {b"\xff": "x"}],
        [{"word": huge}, [huge, "WORD_the"], {huge: 1.0}],
        [["WORD_the", None]],
        [["WORD_the", b"\xff"]],
        [type("Names", (list,), {})(["WORD_the"]), type("Token", (dict,), {})(word="the")],
        [[type("Name", (str,), {})("WORD_the")], {"word": type("Word", (str,), {})("the")}],
        [{"word": {"-1": {"x": [b"\xff"]}}}],
    ]
    for xseq in cases:
        expected = _batch_outcome(model, xseq)
        assert _outcome(lambda: Tagger.of_model(model).tag(xseq)) == expected, xseq
        assert _outcome(lambda: crf.predict_single(xseq)) == expected, xseq
    ways = [
        lambda xseq: model.predict([item_sentence(item_list(xseq, "xseq"), "xseq")])[0],
        lambda xseq: Tagger.of_model(model).tag(xseq),
        crf.predict_single,
    ]  # a generator of names is read once, as a list
    outcomes = [_outcome(lambda: way([(name for name in ["WORD_the", "SUF_he"]), ["WORD_cat"]])) for way in ways]
    assert outcomes[0] == outcomes[1] == outcomes[2] and outcomes[0][0] == "labels"
    assert _batch_outcome(model, cases[4])[1].__name__ == "FeatureValueError"
    # the fallback's Python code empties the list while the C call reads it: left to the other steps
    plan = tagging_plan(model)
    tokens = [["WORD_the"], {"length": None}, ["WORD_cat"]] * 3
    tokens[1]["length"] = _ClearsTheList(tokens)
    assert plan.direct_labels(tokens) is None
    assert tokens == []


def test_threads_sharing_a_tagger_each_get_their_own_sentences_labels(crf):
    X, _ = _training()
    tagger = Tagger.of_model(crf.crf_)
    expected = [tagger.tag(xseq) for xseq in X]
    got: dict[int, list] = {}

    def tag_all(number):
        got[number] = [tagger.tag(xseq) for xseq in (X if number % 2 else X[::-1]) for _ in range(5)]

    threads = [threading.Thread(target=tag_all, args=(number,)) for number in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two steps of a call
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    for number in range(4):
        order = expected if number % 2 else expected[::-1]
        assert got[number] == [labels for labels in order for _ in range(5)]


def test_a_tagger_over_a_model_in_memory_follows_its_fits_and_one_over_a_file_keeps_its_own(tmp_path):
    """``Tagger.of_model`` tags with what the model is now (fitted again in place, it
    tags as the new fit); a tagger that opened a file keeps the model it read."""
    X, y = _training()
    crf = CRF(max_iterations=30).fit(X, y)
    model = crf.crf_
    path = str(tmp_path / "model.fstcrf")
    model.save(path)
    shared, owned = Tagger.of_model(model), Tagger()
    owned.open(path)
    before = [owned.tag(xseq) for xseq in X]
    assert [shared.tag(xseq) for xseq in X] == before
    tokens = [{"word": word} for word in WORDS]
    model.fit([item_sentence(tokens, "refit", labels=["C"] * len(WORDS))] * 3, target="label")
    assert shared.tag([{"word": "cat"}, {"word": "sat"}]) == ["C", "C"]
    assert [owned.tag(xseq) for xseq in X] == before
