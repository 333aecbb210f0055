"""A Constraints stays as it was checked: its mappings cannot be changed after it is
built, and it hashes, pickles and copies by its checked values."""

import copy
import pickle

import pytest

from fstcrf import Constraints, Span

BUILT = Constraints(
    fixed={2: "B-NP"},
    allowed={0: ["O", "B-VP"]},
    spans=[Span(3, 4, "NP", weight=1.5)],
    forbidden=[Span(0, 1, "PP")],
    unbroken=[(1, 2)],
    scores={1: {"O": 0.5, "B-NP": -1.0}},
)


@pytest.mark.parametrize(
    "change",
    [
        lambda c: c.fixed.update({-1: "B-VP"}),
        lambda c: c.fixed.update({True: "B-VP"}),
        lambda c: c.allowed.update({5: {"O"}}),
        lambda c: c.scores.update({0: {"O": float("nan")}}),
        lambda c: c.fixed.clear(),
    ],
)
def test_the_checked_mappings_cannot_be_changed(change):
    for constraints in (BUILT, Constraints()):
        with pytest.raises(AttributeError):  # a read-only view has no update, clear
            change(constraints)
    with pytest.raises(AttributeError):
        BUILT.scores[1].update({"O": float("nan")})
    assert BUILT.fixed == {2: "B-NP"} and BUILT.scores == {1: {"B-NP": -1.0, "O": 0.5}}


def test_equal_constraints_hash_alike_and_survive_pickle_and_copy():
    reordered = Constraints(
        scores={1: {"B-NP": -1.0, "O": 0.5}},
        unbroken=[(1, 2)],
        forbidden=[Span(0, 1, "PP")],
        spans=[Span(3, 4, "NP", weight=1.5)],
        allowed={0: {"B-VP", "O"}},
        fixed={2: "B-NP"},
    )
    assert reordered == BUILT and hash(reordered) == hash(BUILT)
    assert len({BUILT, reordered, Constraints()}) == 2
    for again in (pickle.loads(pickle.dumps(BUILT)), copy.copy(BUILT), copy.deepcopy(BUILT)):
        assert again == BUILT and hash(again) == hash(BUILT)
    assert Constraints.from_dict(BUILT.to_dict()) == BUILT
