"""The partner thread of the bandit learner's small minibatches (csrc/fstcrf_partner.c)
and the order its step is shared out in: a posted call's status comes back through
the wait, a second post or a wait with nothing posted is refused, the partner
blocks right after each call (it never spins) and is woken by the next post, a caller waiting for a slow
partner blocks too and sees Ctrl-C, a stopped one takes no more; no thread is left
after close(), an exception or in a forked child; the reorder by piece keeps each
group in its order and the layout's positions.  That the learner's weights are those
of one thread with the partner on is tested in test_bandit.py and
test_bandit_kernel.py (``inline_tokens`` 4096)."""

import os
import signal
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstcrf._kernel import ffi, lib
from fstcrf.engine import kernel
from fstcrf.engine.threads import left_running
from fstcrf.errors import FeedbackError, FstcrfError
from fstcrf.learn import bandit, thread_choice
from fstcrf.learn.feedback import CallableFeedback
from fstcrf.learn.settings import BanditSettings
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
    assert flag(partner) == lib.FB_PARTNER_IDLE


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


on_linux = pytest.mark.skipif(sys.platform != "linux", reason="reads a thread's state in /proc")


def thread_state(thread: threading.Thread) -> tuple[str, int]:
    """(the kernel's state letter of a thread: R running, S sleeping; its CPU clock ticks)."""
    with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[11]) + int(fields[12])


def wait_for_flag(partner, value, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while flag(partner) != value and time.monotonic() < deadline:
        time.sleep(0.001)
    assert flag(partner) == value


@on_linux
def test_the_partner_blocks_right_after_each_call_and_the_next_post_wakes_it(partner, gradient):
    for _ in range(3):
        post_step(partner, gradient)
        partner.wait()
        assert flag(partner) == lib.FB_PARTNER_IDLE
        time.sleep(0.05)  # its wake-up from the call's fc_wake at most: it spins never
        state, ticks = thread_state(partner._thread)
        time.sleep(0.3)
        assert state == "S" and thread_state(partner._thread) == ("S", ticks)  # blocked, using no CPU


class StuckPartner(kernel.bandit.Partner):
    """A partner whose thread never serves (FSTCRF_FAULT=partner does the same)."""

    def _serve(self):
        threading.Event().wait()


def test_a_call_the_partner_has_not_taken_is_made_by_the_caller(gradient):
    partner = StuckPartner()
    for _ in range(3):
        post_step(partner, gradient)
        assert partner.wait(timeout=0.0)
    other = kernel.bandit.GradientLayout(gradient._compact.num_predicates + 1, [np.zeros(0)] * 2)
    post_step(partner, gradient, other)
    with pytest.raises(RuntimeError, match="fb_step"):  # its status checked as the partner's would be
        partner.wait()
    assert partner.stop(timeout=0.1)  # it holds no call: the arrays are the caller's again
    assert partner._thread.is_alive() and partner._thread.name in left_running()  # never serving, left


def lopsided(monkeypatch):
    """A learner on two threads whose minibatches of 42,000 tokens go to the partner in two
    pieces of 21,000, the calling thread sleeping 50 ms instead of making its own (a call
    the partner has not taken by then it would make itself): it waits for the partner's."""
    monkeypatch.setattr(bandit, "_INLINE_TOKENS", 10**9)
    gradient = sampled_gradient(corpus_of(6, [21000, 1000, 20000]), 1, False, threads=2)
    shared = gradient.map

    def partner_alone(work, items, small=False):
        return shared(lambda item, partner=None: work(item, partner) if partner else time.sleep(0.05), items, small)

    monkeypatch.setattr(gradient, "map", partner_alone)
    return gradient, np.zeros(gradient.num_weights)


@pytest.mark.slow
def test_a_caller_waiting_for_the_partner_blocks(monkeypatch):
    gradient, theta = lopsided(monkeypatch)
    gradient.draw(theta, 0, 3, 1, 0)
    assert gradient._partner is not None
    started, cpu = time.monotonic(), time.thread_time()
    gradient.draw(theta, 0, 3, 400, 0)
    wall, cpu = time.monotonic() - started, time.thread_time() - cpu
    assert wall > 0.1 and cpu < 0.5 * wall, (wall, cpu)  # blocked in the kernel, not spinning
    gradient.close()


@pytest.mark.slow
def test_ctrl_c_ends_a_wait_for_the_partner_and_close_leaves_it_running(monkeypatch):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    gradient, theta = lopsided(monkeypatch)
    gradient.draw(theta, 0, 3, 1, 0)
    partner = gradient._partner
    left = left_running().count(partner._thread.name)  # other tests' stuck partners
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        gradient.draw(theta, 0, 3, 800, 0)  # the partner's piece takes most of a second
    assert flag(partner) in (lib.FB_PARTNER_RUNNING, lib.FB_PARTNER_WAITED)  # seen before the call ended
    started = time.monotonic()
    gradient.close()
    assert time.monotonic() - started < bandit.INTERRUPT_GRACE + 0.5
    stuck = partner._thread.is_alive()  # its call outlasted INTERRUPT_GRACE: left running
    assert gradient._partner is None and left_running().count(partner._thread.name) == left + stuck
    if stuck:
        with pytest.raises(FstcrfError, match="left a thread"):
            gradient.draw(theta, 0, 3, 1, 0)
    partner._thread.join(60)  # it stops once its call is made
    assert not partner._thread.is_alive() and left_running().count(partner._thread.name) == left


def test_a_stopped_partner_ends_its_thread_and_takes_no_more_calls(gradient):
    partner = kernel.bandit.Partner()
    post_step(partner, gradient)
    partner.wait()
    assert partner.stop()
    assert not partner._thread.is_alive()
    with pytest.raises(FstcrfError, match="stopped"):
        post_step(partner, gradient)


def learner_threads() -> list[str]:
    """The names of the bandit learners' threads alive in this process."""
    return [
        thread.name for thread in threading.enumerate() if thread.name.startswith(("fstcrf-partner", "fstcrf-bandit"))
    ]


@pytest.mark.parametrize("inline_tokens", [4096, 0], ids=["partner", "pool"])
def test_closing_the_learner_ends_its_threads(monkeypatch, inline_tokens):
    monkeypatch.setattr(bandit, "_INLINE_TOKENS", inline_tokens)
    before = learner_threads()
    gradient = sampled_gradient(corpus_of(2, [3, 4, 2]), 1, False, threads=2)
    theta = np.zeros(gradient.num_weights)
    gradient.draw(theta, 0, 3, 2, 0)
    assert (gradient._partner is not None) == (inline_tokens > 0) and len(learner_threads()) == len(before) + 1
    gradient.close()
    assert gradient._partner is None and gradient._pool is None and learner_threads() == before


def test_an_exception_in_training_ends_the_learners_threads():
    corpus = corpus_of(3, [3, 4, 2, 5, 1, 3, 2, 2])
    gradient = sampled_gradient(corpus, 1, False, threads=2)
    before = learner_threads()

    def feedback(sentence, labels):
        feedback.calls += 1
        if feedback.calls > 5:
            raise ValueError("the user's feedback failed")
        return 0.5

    feedback.calls = 0
    source = CallableFeedback(feedback, corpus.sentences, gradient.scorer.topology.labels)
    settings_ = BanditSettings(batch_size=2, max_iter=3, seed=1, draws=2)
    with pytest.raises(FeedbackError):
        bandit.learn(gradient, source, settings_, np.arange(len(corpus)))
    assert gradient._partner is None and learner_threads() == before


class Minibatches:
    """Stands for a SampledGradient: whether each minibatch run under a choice was
    shared out, timed by a clock whose minibatches cost ``one`` (wall, CPU) seconds
    per token on one thread and ``shared`` shared out."""

    def __init__(self, one=(1.0, 1.0), shared=(0.8, 1.0)):
        self.shared, self.runs, self.minibatches = True, [], [0, 0]
        self.costs, self.now = {False: one, True: shared}, np.zeros(2)

    def watch(self, choice):
        choice.clocks = lambda: tuple(self.now)
        return choice

    def run(self, choice, tokens=100, fails=False, cost=None):
        with choice.minibatch(self, tokens):
            self.runs.append(self.shared)
            self.now += tokens * np.array(self.costs[self.shared] if cost is None else cost)
            if fails:
                raise ValueError("the minibatch failed")
        assert self.shared  # shared out again after each


def measured(pairs):
    """A measurement's minibatches: the untimed first shared out, then pairs of one thread and shared out."""
    return [True] + [False, True] * pairs


def test_the_thread_choice_measures_alternately_and_doubles_the_gap_while_its_choice_stays(monkeypatch):
    monkeypatch.setattr(thread_choice, "EARLIEST_PAIRS", 2)
    monkeypatch.setattr(thread_choice, "FEWEST_PAIRS", 2)
    monkeypatch.setattr(thread_choice, "FIRST_GAP", 4)
    monkeypatch.setattr(thread_choice, "LONGEST_GAP", 8)
    gradient = Minibatches()  # shared out: 20% less wall time at the same CPU
    choice = gradient.watch(thread_choice.ThreadChoice())
    for _ in range(3 * 5 + 4 + 8 + 8):
        gradient.run(choice)
    # the pairs agree exactly: decided after the fewest; then 4 minibatches, 8, 8 (the longest)
    assert gradient.runs == measured(2) + [True] * 4 + measured(2) + [True] * 8 + measured(2) + [True] * 8
    assert gradient.minibatches == [gradient.runs.count(False), gradient.runs.count(True)]
    with pytest.raises(ValueError, match="failed"):
        gradient.run(choice, fails=True)
    assert gradient.shared


def test_a_measurement_that_ends_early_quadruples_the_gap(monkeypatch):
    monkeypatch.setattr(thread_choice, "FIRST_GAP", 4)
    monkeypatch.setattr(thread_choice, "LONGEST_GAP", 16)
    gradient = Minibatches(shared=(1.5, 1.5))  # shared out clearly costs more: ends after the earliest pairs
    choice = gradient.watch(thread_choice.ThreadChoice())
    early = measured(thread_choice.EARLIEST_PAIRS)
    for _ in range(3 * len(early) + 8 + 16):
        gradient.run(choice)
    # the first gap is half FIRST_GAP, quadrupled: 8, then 32 cut to the longest, 16
    assert gradient.runs == early + [False] * 8 + early + [False] * 16 + early
    assert not choice.shared


def test_the_thread_choice_goes_back_to_one_thread_when_sharing_out_stops_paying(monkeypatch):
    monkeypatch.setattr(thread_choice, "FIRST_GAP", 4)
    gradient = Minibatches(shared=(0.8, 1.0))
    choice = gradient.watch(thread_choice.ThreadChoice())
    for _ in range(17 + 4):
        gradient.run(choice)
    assert choice.shared and gradient.runs[-4:] == [True] * 4
    gradient.costs[True] = (1.2, 1.3)  # the machine got busy: clearly so after the earliest pairs
    for _ in range(7 + 4):
        gradient.run(choice)
    assert not choice.shared and gradient.runs[-11:] == measured(3) + [False] * 4


def test_the_thread_choice_ignores_a_minibatch_another_process_held_up():
    gradient = Minibatches(shared=(0.8, 1.0))
    choice = gradient.watch(thread_choice.ThreadChoice())
    for number in range(17):
        gradient.run(choice, cost=(30.0, 1.0) if number == 3 else None)  # a one-thread minibatch 30x its wall time
    assert choice.shared


def test_the_thread_choice_falls_back_to_one_thread_where_the_clocks_cannot_tell():
    gradient = Minibatches(one=(1.0, 0.0), shared=(0.5, 0.0))
    choice = gradient.watch(thread_choice.ThreadChoice())
    for _ in range(1 + 2 * thread_choice.MOST_PAIRS):
        gradient.run(choice)
        assert choice.place is not None or choice.wait > 0
    assert not choice.shared and choice.place is None


def pairs(wall, cpu, spread=0.0, n=8):
    """n (wall, CPU) ratios about the given ones, the middle half within +-spread."""
    offsets = np.linspace(-2 * spread, 2 * spread, n)
    return np.column_stack([wall + offsets, cpu + offsets[::-1]])


@pytest.mark.parametrize(
    "ratios, shared, last, chosen",
    [
        (pairs(0.8, 1.0), False, False, True),  # faster at the same CPU
        (pairs(0.8, 1.08), False, False, False),  # faster, 8% more CPU: not enough to start ...
        (pairs(0.8, 1.08), True, False, True),  # ... enough to go on
        (pairs(0.97, 1.0), False, False, False),  # 3% faster: not enough to start ...
        (pairs(0.97, 1.0), True, False, True),  # ... enough to go on
        (pairs(1.05, 0.9), True, False, False),  # slower
        (pairs(0.8, 1.2), True, False, False),  # 20% more CPU
        (pairs(0.8, 1.0, spread=0.3), False, False, None),  # too noisy to tell yet ...
        (pairs(0.8, 1.0, spread=0.3, n=32), False, True, True),  # ... so the medians decide at the last pair
        (pairs(0.8, 1.0, spread=0.3, n=32), False, False, None),
        (pairs(1.5, 1.0, spread=0.3), False, False, False),  # clearly slower despite the noise
        (pairs(1.0, 1.0, spread=0.3), False, False, False),  # not faster: one thread needs no proof
        (pairs(0.8, 1.0, n=7), False, False, None),  # too few pairs ...
        (pairs(0.8, 1.0, n=7), False, True, False),  # ... at the last: one thread
        (pairs(0.8, 1.3, spread=0.02, n=3), False, False, False),  # clearly more CPU after the earliest pairs
        (pairs(1.3, 1.0, spread=0.02, n=3), True, False, False),  # clearly slower likewise
        (pairs(0.8, 1.3, spread=0.3, n=3), False, False, None),  # beyond, but too noisy to tell yet
        (pairs(0.8, 1.3, n=2), False, False, None),  # fewer than the earliest
        (pairs(0.8, 1.07, spread=0.05, n=3), False, False, None),  # beyond, not clearly: more pairs
    ],
)
def test_the_verdict_shares_out_where_clearly_faster_at_at_most_a_tenth_more_cpu(ratios, shared, last, chosen):
    assert thread_choice.verdict(ratios, shared, last) == chosen


def test_a_learner_that_chose_one_thread_posts_nothing_to_its_partner(monkeypatch):
    monkeypatch.setattr(thread_choice, "verdict", lambda ratios, shared, last=False: False)  # at the first pair
    corpus = corpus_of(5, [3, 4, 2, 5, 1, 3, 2, 2])
    gradient = sampled_gradient(corpus, 1, False, threads=2)
    posted = []
    post = kernel.bandit.Partner.post

    def recorded(self, function, arguments, check, what):
        posted.append(what)
        post(self, function, arguments, check, what)

    monkeypatch.setattr(kernel.bandit.Partner, "post", recorded)
    feedback = CallableFeedback(lambda sentence, labels: 0.5, corpus.sentences, gradient.scorer.topology.labels)
    bandit.learn(gradient, feedback, BanditSettings(batch_size=4, max_iter=3, seed=1, draws=2), np.arange(len(corpus)))
    # the untimed first minibatch's and the first pair's shared one's, then none
    assert posted == ["fb_draw", "fb_index", "fb_gradient", "fb_step"] * 2
    assert gradient.minibatches == [4, 2]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_and_ends_a_partner_of_its_own():
    gradient = sampled_gradient(corpus_of(4, [3, 4, 2, 5, 3, 4]), 1, False, threads=2)
    theta = np.zeros(gradient.num_weights)
    gradient.draw(theta, 0, 3, 2, 0)
    parent = gradient._partner
    assert parent is not None
    child = os.fork()
    if child == 0:  # the parent's partner thread does not exist here
        code = 1
        try:
            gradient.draw(theta, 3, 6, 2, 0)
            fresh = gradient._partner is not parent and gradient._partner.pid == os.getpid()
            gradient.close()
            code = 0 if fresh and learner_threads() == [] else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.WEXITSTATUS(status) == 0
    gradient.draw(theta, 3, 6, 2, 1)  # the parent's partner works on
    assert gradient._partner is parent
    gradient.close()
    assert not parent._thread.is_alive()


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
