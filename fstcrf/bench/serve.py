"""``fstcrf bench serve``: ``fstcrf serve`` under load against the service a
python-crfsuite user writes (:mod:`fstcrf.bench.crfsuite_service`), on the loopback
interface only.

Both servers run as processes of their own on CoNLL-2000 chunking: fstcrf's default
chunker (or ``--model``) and a CRFsuite model trained for as many iterations on the
same predicates (the bench's CRFsuite feature writer), both on uvicorn.  ``wrk``
(Debian's package wrk) loads each with requests of 1 sentence and of 20 (a
document), cycling through the test set's sentences (a Lua script sends each
connection's requests from a file of bodies), at each concurrency, for a fixed time
per run: the sides alternate within each configuration.  fstcrf's requests ask for
the labels alone (``"entity_probabilities": false``), the baseline's work.  Each run
gives requests/s, sentences/s, the latency's median, 99th percentile and maximum (as
wrk measures them: from a request's write to its answer), the errors (socket errors,
timeouts and answers other than 2xx), and the server's resident memory after it.
Before the load, each side's labels of the test set are scored against the gold
chunks, and ``fstcrf tag`` tags the test set's copies as one file (whole processes)
for its sentences per second.

With ``--soak-minutes M``, fstcrf's server is then loaded for M minutes at 80% of the
peak requests/s measured for the largest requests at the highest concurrency (each
connection pausing between requests: wrk's ``delay``), its resident memory sampled
every few seconds: errors, and memory against its value after the first minute."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from fstcrf.bench.harness import fstcrf_command
from fstcrf.bench.process import (
    bench_tag_file,
    copies_of,
    crfsuite_twin,
    resident_mib,
)
from fstcrf.errors import FstcrfError

#: The concurrencies and the sentences per request of the load (the defaults).
CONCURRENCIES = (1, 8, 64)
REQUEST_SENTENCES = (1, 20)

#: The sides, in the order of the first configuration (it alternates).
SIDES = ("fstcrf", "crfsuite")

#: Sentences per request of the answers scored before the load (fstcrf serve takes at most 1,000).
CHECK_SENTENCES = 500

#: Seconds over which a server must stay idle before a run starts (see ServerUnderLoad.wait_until_idle).
IDLE_SECONDS = 0.5

#: Seconds each side is loaded before a measured run, so that caches and pools are warm
#: (the run's own seconds when fewer).
WARM_UP_SECONDS = 2

#: The Lua script wrk runs: each thread reads the bodies (one JSON a line) and sends
#: them in turn, from its own starting line; each connection pauses DELAY ms between
#: requests; at the end, wrk's summary as one JSON line.
WRK_SCRIPT = """
local bodies = {}
local next_body = 1
local pause = 0
local thread_number = 0
local threads = {}

function setup(thread)
  thread_number = thread_number + 1
  thread:set("number", thread_number)
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
  pause = tonumber(args[2])
  next_body = (number * 7919) % #bodies + 1
end

function request()
  local body = bodies[next_body]
  next_body = next_body % #bodies + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end

function delay()
  return pause
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "connect": %d, "read": %d, "write": %d, "status": %d, '
    .. '"timeout": %d, "p50_us": %d, "p99_us": %d, "max_us": %d}\\n',
    summary.requests, summary.duration, errors.connect, errors.read, errors.write, errors.status,
    errors.timeout, latency:percentile(50), latency:percentile(99), latency.max))
end
"""


#: How a server started by the bench says where it listens (``fstcrf serve`` in its
#: log, the baseline on its output), having taken a free port itself: a port the
#: bench chose and then passed on could be taken by another process in between.
ANNOUNCED = re.compile(r" on (http://127\.0\.0\.1:\d+)/")


class ServerUnderLoad:
    """A server process on a free loopback port it takes itself, its output in a log file."""

    def __init__(self, name: str, command: list[str], live_path: str, log: Path):
        self.name, self.log_path = name, log
        with open(log, "wb") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        self.url = self._announced_url()
        self._wait_until_live(live_path)

    def _check_running(self) -> None:
        """FstcrfError with the end of the server's output if its process has exited."""
        if self.process.poll() is not None:
            raise FstcrfError(f"the {self.name} server exited:\n{self.log_path.read_text(errors='replace')[-2000:]}")

    def _announced_url(self, timeout: float = 120.0) -> str:
        """The URL the server's output names, once it has (it listens from then on)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = ANNOUNCED.search(self.log_path.read_text(errors="replace"))
            if found:
                return found.group(1)
            self._check_running()
            time.sleep(0.05)
        raise FstcrfError(f"the {self.name} server did not say where it listens within {timeout:g} s")

    def _wait_until_live(self, path: str, timeout: float = 120.0) -> None:
        import urllib.request

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_running()
            try:
                with urllib.request.urlopen(self.url + path, timeout=5):
                    return
            except OSError:
                time.sleep(0.1)
        raise FstcrfError(f"the {self.name} server did not answer {path} within {timeout:g} s")

    def post(self, path: str, body: dict) -> dict:
        """One request's JSON answer."""
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            self.url + path, json.dumps(body).encode("utf-8"), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=300) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as error:
            raise FstcrfError(f"{self.name} server: {path}: {error.code} {error.read()[:500]!r}") from None

    def resident_mib(self) -> float | None:
        return resident_mib(self.process.pid)

    def cpu_seconds(self) -> float:
        """The CPU seconds the process has used (user and system, from /proc)."""
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def wait_until_idle(self, timeout: float = 120.0) -> None:
        """Wait until the process uses less than a tenth of a CPU over IDLE_SECONDS: a
        server still answering the requests a finished run left in it would take the
        CPU from the next run."""
        deadline = time.monotonic() + timeout
        before = self.cpu_seconds()
        while time.monotonic() < deadline:
            time.sleep(IDLE_SECONDS)
            now = self.cpu_seconds()
            if now - before < 0.1 * IDLE_SECONDS:
                return
            before = now

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within 30 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)


def load(url: str, bodies: Path, script: Path, concurrency: int, seconds: float, pause_ms: float = 0.0) -> dict:
    """One wrk run: ``concurrency`` connections sending the bodies for ``seconds``;
    wrk's summary (requests, duration, errors, latency percentiles in µs)."""
    threads = min(2, concurrency)
    command = [
        "wrk",
        f"-t{threads}",
        f"-c{concurrency}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "60s",
        "-s",
        str(script),
        url,
        "--",
        str(bodies),
        repr(float(pause_ms)),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120, check=False)
    if done.returncode != 0:
        raise FstcrfError(f"wrk failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    summary["errors"] = sum(summary.pop(kind) for kind in ("connect", "read", "write", "status", "timeout"))
    return summary


def _figures(summary: dict, sentences: int) -> dict:
    """Requests/s, sentences/s, latencies in ms and errors of a wrk summary."""
    seconds = summary["duration_us"] / 1e6
    return {
        "requests_per_second": summary["requests"] / seconds,
        "sentences_per_second": summary["requests"] * sentences / seconds,
        "p50_ms": summary["p50_us"] / 1000,
        "p99_ms": summary["p99_us"] / 1000,
        "max_ms": summary["max_us"] / 1000,
        "errors": summary["errors"],
        "requests": summary["requests"],
    }


def request_bodies(sentences: list[dict], size: int, side: str, path: Path) -> Path:
    """A file of request bodies of ``size`` consecutive sentences each (one JSON a line),
    as ``side`` takes them."""
    lines = []
    for first in range(0, len(sentences) - size + 1, size):
        body: dict = {"sentences": sentences[first : first + size]}
        if side == "fstcrf":
            body["entity_probabilities"] = False
        lines.append(json.dumps(body))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _chunk_f1(gold: list[list[str]], predicted: list[list[str]]) -> float:
    from fstcrf.corpus.evaluate import score_chunks

    return score_chunks(gold, predicted).f1


def bench_serve(
    folder,
    model=None,
    iterations: int = 20,
    seconds: float = 10.0,
    threads: int = 2,
    soak_minutes: float = 0.0,
    progress: bool = True,
    copies: int = 5,
    concurrencies=CONCURRENCIES,
    request_sentences=REQUEST_SENTENCES,
    repeats: int = 3,
) -> dict:
    """Load ``fstcrf serve`` and the python-crfsuite service (see the module doc) on
    ``folder``/test.txt (CoNLL-2000), ``seconds`` per run, a run for each of
    ``request_sentences`` at each of ``concurrencies``, ``fstcrf tag`` timed ``repeats``
    times (its median); JSON-able data for :func:`format_serve`."""
    import tempfile

    from fstcrf.corpus.conll import read_conll
    from fstcrf.progress import Progress

    if shutil.which("wrk") is None:
        raise FstcrfError("bench serve loads the servers with wrk: apt-get install wrk")
    folder = Path(folder)
    test = read_conll(folder / "test.txt")
    sentences = [{"word": s["word"], "pos": s["pos"]} for s in test.sentences]
    runs_total = 2 * len(concurrencies) * len(request_sentences)
    with (
        tempfile.TemporaryDirectory(prefix="fstcrf-bench-serve-") as name,
        Progress(runs_total + 3, "bench serve", unit="step", enabled=progress) as bar,
    ):
        scratch = Path(name)
        model, _, spec, crfsuite_model = crfsuite_twin(folder, model, iterations, threads, scratch, "bench serve")
        bar.update()
        tagged = scratch / "copies.txt"
        copies_of(folder / "test.txt", copies, tagged)
        tag_file = bench_tag_file(model, tagged, threads, repeats=repeats, progress=False)
        walls = sorted(tag_file["sides"]["fstcrf"]["walls"])
        tag_rate = copies * len(test) / walls[len(walls) // 2]
        bar.update()
        script = scratch / "bodies.lua"
        script.write_text(WRK_SCRIPT, encoding="utf-8")
        commands = {
            "fstcrf": fstcrf_command(
                "serve", str(model), "--port", "0", "--threads", str(threads), "--tokenizer", "regex"
            ),
            "crfsuite": [sys.executable, "-m", "fstcrf.bench.crfsuite_service", str(spec), str(crfsuite_model)],
        }
        paths = {"fstcrf": "/v1/models/default/tag", "crfsuite": "/tag"}
        services: dict[str, ServerUnderLoad] = {}
        try:
            for side in SIDES:
                services[side] = ServerUnderLoad(side, commands[side], "/live", scratch / f"{side}.log")
            gold = [s["chunk"] for s in test.sentences]
            f1 = {}
            for side, service in services.items():
                labels = []
                for first in range(0, len(sentences), CHECK_SENTENCES):
                    body: dict = {"sentences": sentences[first : first + CHECK_SENTENCES]}
                    if side == "fstcrf":
                        body["entity_probabilities"] = False
                    labels += [result["labels"] for result in service.post(paths[side], body)["results"]]
                f1[side] = _chunk_f1(gold, labels)
            bar.update()
            runs: list[dict] = []
            files: dict[int, dict[str, Path]] = {}
            for size in request_sentences:
                bodies = files[size] = {
                    side: request_bodies(sentences, size, side, scratch / f"{side}-{size}.jsonl") for side in SIDES
                }
                for concurrency in concurrencies:
                    order = SIDES if len(runs) % 2 == 0 else SIDES[::-1]
                    row: dict = {"sentences": size, "concurrency": concurrency}
                    for side in order:
                        url = services[side].url + paths[side]
                        for service in services.values():
                            service.wait_until_idle()
                        load(url, bodies[side], script, concurrency, min(WARM_UP_SECONDS, seconds))
                        services[side].wait_until_idle()
                        row[side] = _figures(load(url, bodies[side], script, concurrency, seconds), size)
                        row[side]["rss_mib"] = services[side].resident_mib()
                        bar.update()
                    runs.append(row)
            soak = None
            if soak_minutes > 0:
                for service in services.values():
                    service.wait_until_idle()
                peak = max(runs, key=lambda row: (row["sentences"], row["concurrency"]))
                fstcrf_bodies = files[peak["sentences"]]["fstcrf"]
                soak = _soak(services["fstcrf"], paths["fstcrf"], fstcrf_bodies, script, peak, soak_minutes)
        finally:
            for service in services.values():
                service.stop()
    return {
        "kind": "serve",
        "model": str(model),
        "sentences": len(test),
        "tokens": sum(len(s) for s in test.sentences),
        "seconds": seconds,
        "threads": threads,
        "f1": f1,
        "tag_sentences_per_second": tag_rate,
        "tag_copies": copies,
        "runs": runs,
        "soak": soak,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }


#: Seconds between the soak's memory samples.
SOAK_SAMPLE_SECONDS = 5

#: Seconds of each of the soak's runs, after which its pause is set again.
SOAK_RUN_SECONDS = 30


def _soak(service: ServerUnderLoad, path: str, bodies: Path, script: Path, peak: dict, minutes: float) -> dict:
    """fstcrf's server loaded at 80% of ``peak`` (a run's row) for ``minutes``, by the
    row's connections each pausing between requests, in runs of SOAK_RUN_SECONDS after
    each of which the pause is set again from the rate the run reached (a connection's
    cycle is its answers' latency plus its pause, and the latency falls with the load);
    the figures of all the runs and the resident memory sampled along."""
    import threading

    concurrency, figures = peak["concurrency"], peak["fstcrf"]
    target = 0.8 * figures["requests_per_second"]
    pause_ms = max(0.0, 1000 * concurrency / target - figures["p50_ms"])
    samples: list[tuple[float, float | None]] = []
    finished = threading.Event()
    started = time.monotonic()

    def sample() -> None:
        while not finished.wait(SOAK_SAMPLE_SECONDS):
            samples.append((time.monotonic() - started, service.resident_mib()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    runs = []
    try:
        while (left := 60 * minutes - (time.monotonic() - started)) >= 1:
            summary = load(service.url + path, bodies, script, concurrency, min(SOAK_RUN_SECONDS, left), pause_ms)
            runs.append(summary)
            reached = summary["requests"] / (summary["duration_us"] / 1e6)
            if reached > 0:
                latency_ms = 1000 * concurrency / reached - pause_ms
                pause_ms = max(0.0, 1000 * concurrency / target - latency_ms)
    finally:
        finished.set()
        sampler.join()
    total = {
        "requests": sum(run["requests"] for run in runs),
        "duration_us": sum(run["duration_us"] for run in runs),
        "errors": sum(run["errors"] for run in runs),
        "p50_us": sorted(run["p50_us"] for run in runs)[len(runs) // 2],
        "p99_us": max(run["p99_us"] for run in runs),
        "max_us": max(run["max_us"] for run in runs),
    }
    later = [rss for at, rss in samples if at >= 60 and rss is not None]
    return {
        "minutes": minutes,
        "target_requests_per_second": target,
        "runs": len(runs),
        **_figures(total, peak["sentences"]),
        "rss_after_first_minute_mib": later[0] if later else None,
        "rss_max_after_first_minute_mib": max(later) if later else None,
        "rss_last_mib": samples[-1][1] if samples else None,
    }


def format_serve(result: dict) -> str:
    """The runs as a table, fstcrf against the python-crfsuite service, then the targets
    of issue 59 checked, ``fstcrf tag``'s rate and the soak."""
    lines = [
        f"fstcrf serve against a python-crfsuite service (Starlette + uvicorn, one Tagger.tag per sentence) "
        f"on the {result['sentences']:,} CoNLL-2000 test sentences; {result['model']}; wrk, "
        f"{result['seconds']:g} s per run, loopback; {result['cpus']} CPUs, load average "
        f"{result['load_average'][0]:.2f} at the end; `fstcrf tag` on {result['tag_copies']} copies of the "
        f"test set: {result['tag_sentences_per_second']:,.0f} sentences/s. Chunk F1 of each side's labels: "
        f"fstcrf {result['f1']['fstcrf']:.2f}, CRFsuite {result['f1']['crfsuite']:.2f}.",
        "",
        "| sentences/request | concurrency | side | requests/s | sentences/s | p50 ms | p99 ms | max ms "
        "| errors | RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["runs"]:
        for side in SIDES:
            figures = row[side]
            rss = "?" if figures["rss_mib"] is None else f"{figures['rss_mib']:.0f}"
            lines.append(
                f"| {row['sentences']} | {row['concurrency']} | {side} | {figures['requests_per_second']:,.0f} "
                f"| {figures['sentences_per_second']:,.0f} | {figures['p50_ms']:.2f} | {figures['p99_ms']:.2f} "
                f"| {figures['max_ms']:.1f} | {figures['errors']} | {rss} |"
            )
    lines += ["", *_targets(result)]
    soak = result["soak"]
    if soak is not None:
        first, peak, last = (
            soak["rss_after_first_minute_mib"],
            soak["rss_max_after_first_minute_mib"],
            soak["rss_last_mib"],
        )
        growth = "?" if not first or peak is None else f"{100 * (peak / first - 1):+.1f}%"
        steady = soak["errors"] == 0 and bool(first) and peak is not None and peak <= 1.1 * first
        lines += [
            "",
            f"Soak: {soak['minutes']:g} min ({soak['runs']} runs) at {soak['requests_per_second']:,.0f} "
            f"requests/s (target {soak['target_requests_per_second']:,.0f}, 80% of the peak), {soak['errors']} "
            f"errors, p99 at most {soak['p99_ms']:.1f} ms; RSS {_mib(first)} MiB after the first minute, at "
            f"most {_mib(peak)} after it ({growth}), {_mib(last)} at the end (target: 0 errors and within "
            f"10%: {'met' if steady else 'NOT met'}).",
        ]
    return "\n".join(lines)


def _mib(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f}"


def _targets(result: dict) -> list[str]:
    """Issue 59's targets, each with the figures it compares and whether it is met."""
    rows = {(row["sentences"], row["concurrency"]): row for row in result["runs"]}
    lines = []
    top = max(CONCURRENCIES)
    document = rows.get((20, top))
    if document is not None:
        ours, theirs = document["fstcrf"]["sentences_per_second"], document["crfsuite"]["sentences_per_second"]
        tag = result["tag_sentences_per_second"]
        ratio = f"{ours / theirs:.2f}x" if theirs else "infinitely many times"
        lines.append(
            f"20-sentence requests at concurrency {top}: {ours:,.0f} sentences/s = {ratio} the "
            f"baseline's (target >= 2x: {'met' if ours >= 2 * theirs else 'NOT met'}) and "
            f"{100 * ours / tag:.0f}% of `fstcrf tag`'s {tag:,.0f} (target >= 50%: "
            f"{'met' if ours >= 0.5 * tag else 'NOT met'})."
        )
    singles = [rows[1, c] for c in CONCURRENCIES if (1, c) in rows]
    faster = [row["fstcrf"]["requests_per_second"] >= row["crfsuite"]["requests_per_second"] for row in singles]
    lower = [row["fstcrf"]["p99_ms"] < row["crfsuite"]["p99_ms"] for row in singles]
    lines.append(
        "1-sentence requests: requests/s at least the baseline's at "
        f"{sum(faster)} of {len(singles)} concurrencies, a lower p99 at {sum(lower)} of {len(singles)} "
        f"(target: all: {'met' if all(faster) and all(lower) else 'NOT met'})."
    )
    return lines
