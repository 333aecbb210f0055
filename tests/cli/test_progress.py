"""The progress bar reports slow work as seconds per unit, never "0 it/s"."""

import io

from fstcrf.progress import Progress, _rate


def test_rates_read_sensibly_for_fast_and_slow_work():
    assert _rate(12345.6, "tok") == "12,346 tok/s"
    assert _rate(0.05, "step") == "20.0 s/step"
    assert _rate(0.0, "step") == "- step/s"


def test_a_slow_step_is_reported_in_seconds_per_step():
    stream = io.StringIO()
    bar = Progress(4, "bench compose", unit="step", stream=stream, interval=0.0)
    bar._started -= 10.0  # the first step took ten seconds
    bar.update()
    line = stream.getvalue()
    assert "1/4 step" in line and " s/step" in line and "0 step/s" not in line


class _Clock:
    """A perf_counter that the test moves."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_lines_come_at_a_steady_interval_to_the_end(monkeypatch):
    """Updates every second for 23 seconds, a 5-second interval: a line at the first
    update, then one per interval, and one at the end with the final count."""
    clock = _Clock()
    monkeypatch.setattr("fstcrf.progress.time.perf_counter", clock)
    stream = io.StringIO()
    with Progress(None, "tagging", unit="tokens", stream=stream) as bar:
        for _ in range(23):
            clock.now += 1.0
            bar.update(10)
        clock.now += 0.5
    lines = stream.getvalue().splitlines()
    assert [line.split()[1] for line in lines] == ["10", "50", "100", "150", "200", "230"]


def test_late_updates_keep_the_cadence_and_a_finished_total_is_drawn_once(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr("fstcrf.progress.time.perf_counter", clock)
    stream = io.StringIO()
    with Progress(3, "training", unit="step", stream=stream) as bar:
        for seconds in (1.0, 11.0, 2.0):  # the second update comes after two intervals
            clock.now += seconds
            bar.update()
    lines = stream.getvalue().splitlines()
    assert [line.split("] ")[1].split()[0] for line in lines] == ["1/3", "2/3", "3/3"]
