"""fstcrf.phases: exclusive per-phase seconds, and the JSON file written at exit."""

import json
import os
import subprocess
import sys
import time

import pytest

from fstcrf.phases import PHASES_VARIABLE, PhaseTimer, phase, process_age


class Clock:
    """A clock that moves only when told to."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def timer_with_clocks(age: float = 0.5):
    wall, cpu = Clock(), Clock()
    return PhaseTimer(wall=wall, cpu=cpu, age=lambda: age), wall, cpu


def test_phases_accumulate_over_calls_and_nested_time_goes_to_the_inner_phase():
    timer, wall, cpu = timer_with_clocks()
    wall.now = 1.0  # 1 s before the first phase
    cpu.now = 0.25
    with timer.phase("read"):
        wall.now += 2.0
        cpu.now += 1.0
        with timer.phase("features"):
            wall.now += 3.0
            cpu.now += 0.5
        wall.now += 0.5  # back in read
    wall.now += 7.0  # in no phase
    with timer.phase("features"):
        wall.now += 4.0
        cpu.now += 2.0
    report = timer.report()
    assert report["read"] == pytest.approx(2.5)
    assert report["features"] == pytest.approx(7.0)
    process = report["process"]
    assert process["cpu_by_phase"] == pytest.approx({"read": 1.0, "features": 2.5})
    assert process["calls"] == {"read": 1, "features": 2}
    assert process["start"] == pytest.approx(0.5 + 1.0)  # age at creation + time to the first phase
    assert process["start_cpu"] == pytest.approx(0.25)
    assert process["outside"] == pytest.approx(7.0)
    assert process["elapsed"] == pytest.approx(0.5 + 17.5)
    assert process["cpu"] == pytest.approx(3.75)
    # the figures add up to the process's elapsed time
    assert process["start"] + report["read"] + report["features"] + process["outside"] == pytest.approx(
        process["elapsed"]
    )


def test_a_phase_left_by_an_exception_is_closed_and_charged():
    timer, wall, _ = timer_with_clocks()
    with pytest.raises(KeyError):
        with timer.phase("load"):
            wall.now += 1.5
            raise KeyError("x")
    wall.now += 1.0
    with timer.phase("decode"):
        wall.now += 0.25
    report = timer.report()
    assert report["load"] == pytest.approx(1.5) and report["decode"] == pytest.approx(0.25)
    assert report["process"]["outside"] == pytest.approx(1.0)


def test_a_report_without_phases_counts_everything_as_start():
    timer, wall, _ = timer_with_clocks(age=0.2)
    wall.now = 3.0
    report = timer.report()
    assert set(report) == {"process"}
    assert report["process"]["start"] == pytest.approx(3.2) == report["process"]["elapsed"]


def test_disabled_phases_are_one_shared_context():
    # this test process does not set FSTCRF_PHASES
    assert phase("read") is phase("decode")
    with phase("read"):
        pass


def test_process_age_grows_with_the_process():
    first = process_age()
    time.sleep(0.05)
    assert 0.0 < first < process_age()


def test_peak_resident_memory_sees_a_large_allocation():
    # in a fresh process, whose peak is its current size (this one's may lie far above it)
    code = (
        "from fstcrf.phases import peak_resident_mib\n"
        "before = peak_resident_mib()\n"
        "block = bytearray(64 * 2 ** 20)\n"
        "block[::4096] = b'x' * len(block[::4096])\n"  # touch every page
        "print(before, peak_resident_mib())\n"
    )
    before, after = map(
        float, subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    )
    assert after >= before + 60


def run_child(code: str, tmp_path, report: str = "phases.json"):
    """Run python code with FSTCRF_PHASES set; its report and the parent's wall seconds."""
    path = tmp_path / report
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, PHASES_VARIABLE: str(path)})
    wall = time.perf_counter() - started
    return json.loads(path.read_text()), wall


def test_an_enabled_process_writes_its_phases_at_exit(tmp_path):
    code = "\n".join(
        [
            "import os, time",
            "from fstcrf.phases import phase",
            "assert 'FSTCRF_PHASES' not in os.environ    # not passed on to child processes",
            "with phase('read'):",
            "    time.sleep(0.1)",
            "    with phase('decode'):",
            "        end = time.process_time() + 0.2",
            "        while time.process_time() < end:",
            "            pass",
            "with phase('read'):",
            "    time.sleep(0.1)",
        ]
    )
    report, wall = run_child(code, tmp_path)
    process = report["process"]
    assert process["calls"] == {"read": 2, "decode": 1}
    assert 0.2 <= report["read"] < 0.2 + 0.5  # the sleeps, not the busy loop
    assert report["decode"] >= 0.2 and process["cpu_by_phase"]["decode"] >= 0.2
    assert process["cpu_by_phase"]["read"] < 0.1
    # start-up is measured from the process's start (10 ms ticks), so everything fits in the parent's wall time
    assert 0.0 < process["start"] <= process["elapsed"] <= wall + 0.02
    assert process["elapsed"] >= process["start"] + report["read"] + report["decode"] - 0.02
    assert 0.0 < process["start_cpu"] <= process["cpu"]


def test_a_child_reports_its_own_peak_memory_not_its_parents(tmp_path):
    held = bytearray(200 * 2**20)
    held[::4096] = b"x" * len(held[::4096])  # this process now holds 200 MiB more
    report, _ = run_child("import fstcrf.phases", tmp_path)
    assert 5 < report["process"]["peak_rss_mib"] < 150
    del held


def test_a_process_that_times_nothing_still_reports_its_start(tmp_path):
    report, wall = run_child("import fstcrf.phases", tmp_path)
    assert set(report) == {"process"}
    assert 0.0 < report["process"]["elapsed"] <= wall + 0.02
