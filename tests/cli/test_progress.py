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
