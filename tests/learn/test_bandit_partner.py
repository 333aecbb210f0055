"""The partner thread of the bandit learner's small minibatches (csrc/fstcrf_partner.c)
and the order its step is shared out in: a posted call's status comes back through
the wait, a second post or a wait with nothing posted is refused, a parked partner
is woken by the next post, a stopped one takes no more; the reorder by piece keeps
each group in its order and the layout's positions.  That the learner's weights are
those of one thread with the partner on is tested in test_bandit.py and
test_bandit_kernel.py (``inline_tokens`` 4096)."""

import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstcrf._kernel import ffi, lib
from fstcrf.engine import kernel
from fstcrf.errors import FstcrfError
from fstcrf.learn import bandit
from tests.learn.test_bandit_kernel import corpus_of, sampled_gradient


@pytest.fixture
def partner():
    partner = kernel.bandit.Partner()
    yield partner
    partner.stop()


@pytest.fixture(scope="module")
def gradient():
    return sampled_gradient(corpus_of(1, [3, 5, 2, 4]), 2, False)


def post_step(partner, gradient, layout=None):
    """Post an fb_step call over no predicates (which does nothing but check its layout)."""
    theta = np.zeros(gradient.num_weights)
    rule = kernel.StepRule("constant", 0.1, 0.9, 0.999, 1e-8)
    layout = gradient._compact if layout is None else layout
    kernel.bandit.step(gradient._training, layout, rule, (theta, None))((0, 0), partner=partner)


def flag(partner) -> int:
    return int(partner.struct.flag)


def test_a_posted_call_is_made_and_its_status_collected(partner, gradient):
    for _ in range(100):
        post_step(partner, gradient)
        partner.wait()
    assert flag(partner) in (lib.FB_PARTNER_IDLE, lib.FB_PARTNER_PARKED)


def test_a_failing_call_raises_at_the_wait_and_the_partner_goes_on(partner, gradient):
    other = kernel.bandit.GradientLayout(gradient._compact.num_predicates + 1, [np.zeros(0)] * 2)
    post_step(partner, gradient, other)
    with pytest.raises(RuntimeError, match="fb_step"):
        partner.wait()
    post_step(partner, gradient)
    partner.wait()


def test_a_second_post_and_a_wait_for_nothing_are_refused(partner, gradient):
    post_step(partner, gradient)
    with pytest.raises(FstcrfError, match="not collected"):
        post_step(partner, gradient)
    partner.wait()  # the first call is still collected
    with pytest.raises(RuntimeError, match="partner"):
        partner.wait()


def test_a_parked_partner_is_woken_by_the_next_post(partner, gradient):
    deadline = time.monotonic() + 10
    while flag(partner) != lib.FB_PARTNER_PARKED and time.monotonic() < deadline:
        time.sleep(0.01)
    assert flag(partner) == lib.FB_PARTNER_PARKED
    for _ in range(3):
        post_step(partner, gradient)
        partner.wait()
        while flag(partner) != lib.FB_PARTNER_PARKED and time.monotonic() < deadline:
            time.sleep(0.01)


def test_a_stopped_partner_ends_its_thread_and_takes_no_more_calls(gradient):
    partner = kernel.bandit.Partner()
    post_step(partner, gradient)
    partner.wait()
    partner.stop()
    assert not partner._thread.is_alive()
    with pytest.raises(FstcrfError, match="stopped"):
        post_step(partner, gradient)


def test_closing_the_learner_stops_its_partner(monkeypatch):
    gradient = sampled_gradient(corpus_of(2, [3, 4, 2]), 1, False, threads=2)
    theta = np.zeros(gradient.num_weights)
    paths, posteriors = gradient.draw(theta, 0, 3, 2, 0)
    partner = gradient._partner
    assert partner is not None and partner._thread.is_alive()
    gradient.close()
    assert gradient._partner is None and not partner._thread.is_alive()


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(1, 6), min_size=2, max_size=8), st.data())
def test_the_order_by_piece_puts_piece_zeros_own_first_and_keeps_each_group_in_order(seed, lengths, data):
    gradient = sampled_gradient(corpus_of(seed, lengths), 1, False)
    offsets = gradient.encoded.offsets
    cut = data.draw(st.integers(1, len(lengths) - 1))
    rows = np.array([0, offsets[cut], offsets[-1]], dtype=np.int64)
    layout = gradient._compact
    m, _ = kernel.bandit.index(gradient._training, layout, rows)
    order, pieces, at = layout.order[:m].copy(), layout.pieces_of[:m].copy(), layout.at.copy()
    alone = kernel.bandit.order_by_piece(layout)
    own = pieces == 1
    assert alone == own.sum()
    assert np.array_equal(layout.order[:m], np.concatenate([order[own], order[~own]]))
    assert np.array_equal(layout.pieces_of[:m], np.concatenate([pieces[own], pieces[~own]]))
    assert np.array_equal(layout.at, at)
    # each predicate of piece 0 alone is used by no token of piece 1, and the others are
    rows_of = gradient.encoded.rows().to_scipy()
    piece_one = set(rows_of[offsets[cut] :].indices.tolist())
    assert not piece_one & set(layout.order[:alone].tolist())
    assert set(layout.order[alone:m].tolist()) <= piece_one


def test_a_layout_made_after_a_draw_whose_gradient_never_comes_is_dropped():
    corpus = corpus_of(5, [3, 4, 2, 5, 1, 3])
    thetas = []
    for threads in (1, 2):
        gradient = sampled_gradient(corpus, 1, False, threads=threads)
        theta = np.random.default_rng(0).normal(size=gradient.num_weights)
        steps = bandit._Steps("adam", 0.1, gradient.scorer.features.num_features, gradient.num_weights)
        gradient.step_state = steps.features
        gradient.draw(theta, 0, 3, 2, 1)  # laid out on the partner, then left
        gradient.posteriors(theta, 1, 4)  # and another
        paths, posteriors = gradient.draw(theta, 3, 6, 2, 2)
        gradient.add_gradient(posteriors, paths, np.ones((2, 3)))
        gradient.step(3, 6, steps, theta)
        gradient.close()
        assert (gradient._compact.at == -1).all()
        thetas.append(theta)
    assert np.array_equal(thetas[0], thetas[1])


def test_the_flag_has_a_cache_line_of_its_own(partner):
    address = int(ffi.cast("uintptr_t", partner.struct))
    assert address % lib.FB_PARTNER_ALIGN == 0
    assert ffi.offsetof("fb_partner", "kind") == lib.FB_PARTNER_ALIGN
