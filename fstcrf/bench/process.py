"""Whole-process benchmarks against CRFsuite: what a user's command costs, from
process start to exit, with the split of each side's time into its phases.

Each side runs as its own fresh process, one after the other in one run (the
order alternates across repeats):

- fstcrf: ``python -m fstcrf.cli tag MODEL INPUT -o OUT`` (or ``train``), with
  FSTCRF_PHASES set, so its phases appear once fstcrf times them
  (:mod:`fstcrf.phases`);
- CRFsuite: ``python -m fstcrf.bench.crfsuite crfsuite-tag ...`` (or
  ``crfsuite-train``), the script a python-crfsuite user writes
  (:mod:`fstcrf.bench.crfsuite`), with the same predicates.

Both sides start from compiled bytecode, as ``pip install`` leaves a package:
:func:`~fstcrf.bench.harness.compile_bytecode` compiles fstcrf's modules first, so that a run under
PYTHONDONTWRITEBYTECODE=1 (set on some machines) does not recompile them at
every start.  Wall seconds run from the spawn of a process to its reaping; CPU seconds come
from ``os.wait4``; peak resident memory from the process's own phase report
(VmHWM: ``ru_maxrss`` would include the benchmark's own memory at the fork).

The same module times ``fstcrf tag MODEL -`` fed gigabytes on standard input
(:func:`bench_stream_process`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from fstcrf.bench.crfsuite import template_spec, token_attributes
from fstcrf.bench.harness import best_time, compile_bytecode, fstcrf_command
from fstcrf.phases import PHASES_VARIABLE

if TYPE_CHECKING:
    from pathlib import Path

# ---------------------------------------------------------------------------
# The benchmark: both sides as fresh processes


def run_process(command: list[str], scratch, name: str) -> dict:
    """Run ``command`` as a fresh process with FSTCRF_PHASES set; its wall and CPU
    seconds, phases (the JSON it wrote, else {}), peak RSS in MiB (from them, else
    None) and standard output."""
    import subprocess
    import time

    from fstcrf.errors import FstcrfError

    phases_path, out_path, err_path = (scratch / f"{name}.{suffix}" for suffix in ("phases.json", "out", "err"))
    phases_path.unlink(missing_ok=True)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=out, stderr=err, env={**os.environ, PHASES_VARIABLE: str(phases_path)}
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        tail = err_path.read_text(errors="replace")[-2000:]
        raise FstcrfError(f"{' '.join(command)} exited with status {process.returncode}:\n{tail}")
    phases = json.loads(phases_path.read_text()) if phases_path.exists() else {}
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "phases": phases,
        "peak_rss_mib": phases.get("process", {}).get("peak_rss_mib"),
        "stdout": out_path.read_text(),
    }


def _check_counts(**counts: int) -> None:
    """Each count must be a positive integer (a typed fstcrf error naming it otherwise)."""
    from fstcrf.learn.settings import check_positive

    for name, value in counts.items():
        check_positive(name, value, integer=True)


def crfsuite_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "fstcrf.bench.crfsuite", *arguments]


def write_spec(path, template, columns, target: str) -> None:
    path.write_text(json.dumps({"columns": list(columns), "target": target, "predicates": template_spec(template)}))


def _template_name(template) -> str:
    """The shipped name of a template (see fstcrf.model.TEMPLATES), else "own template"."""
    from fstcrf.features.template import TEMPLATES

    return next((name for name, shipped in TEMPLATES.items() if shipped == template), "own template")


def _side_summary(runs: list[dict]) -> dict:
    """The fastest run's figures and standard output, every run's wall seconds and the
    largest peak RSS (None if a run did not report it)."""
    best = min(runs, key=lambda run: run["wall"])
    peaks = [r["peak_rss_mib"] for r in runs]
    return {
        "wall": best["wall"],
        "cpu": best["cpu"],
        "phases": best["phases"],
        "walls": [r["wall"] for r in runs],
        "peak_rss_mib": None if None in peaks else max(peaks),
        "stdout": best["stdout"],
    }


def _side_by_side(commands: dict[str, list[str]], scratch, repeats: int, bar) -> dict:
    """Run each side's command ``repeats`` times, alternating which goes first, and a
    bare interpreter before each pair, all from compiled bytecode; per side the
    summary of its runs, and whether fstcrf's bytecode was compiled."""
    compiled = compile_bytecode()
    runs: dict[str, list[dict]] = {side: [] for side in commands}
    bare = []
    names = list(commands)
    for repeat in range(repeats):
        bare.append(run_process([sys.executable, "-c", "pass"], scratch, "bare")["wall"])
        for side in names if repeat % 2 == 0 else names[::-1]:
            runs[side].append(run_process(commands[side], scratch, side))
            bar.update()
    return {
        "sides": {side: _side_summary(side_runs) for side, side_runs in runs.items()},
        "interpreter_wall": min(bare),
        "bytecode_compiled": compiled,
    }


def copies_of(path, copies: int, target) -> int:
    """Write ``copies`` copies of a CoNLL file to ``target`` (sentences kept apart);
    returns the tokens written."""
    text = path.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
    target.write_text(text * copies, encoding="utf-8")
    return copies * sum(1 for line in text.splitlines() if line.strip() and not line.startswith("-DOCSTART-"))


def token_lines(lines: Iterable[bytes]) -> int:
    """How many of the CoNLL ``lines`` are tokens: neither blank nor -DOCSTART-."""
    return sum(1 for line in lines if line.strip() and not line.startswith(b"-DOCSTART-"))


def _chunk_f1(output_path) -> float:
    """conlleval F1 of a tagged file's last column against the column before it."""
    from fstcrf.corpus.conll import read_conll
    from fstcrf.corpus.evaluate import score_chunks

    corpus = read_conll(output_path)
    gold, predicted = corpus.column_names[-2:]
    return score_chunks(corpus.column(gold), corpus.column(predicted)).f1


def train_chunker(folder, iterations: int, threads: int, scratch) -> Path:
    """Train the default chunker on folder/train.txt in a process of its own; its model path."""
    model = scratch / "fstcrf.model"
    run_process(
        fstcrf_command(
            "-q",
            "train",
            str(folder / "train.txt"),
            "--max-iter",
            str(iterations),
            "--threads",
            str(threads),
            "-o",
            str(model),
        ),
        scratch,
        "fstcrf-train",
    )
    return model


def crfsuite_twin(folder, model, iterations: int, threads: int, scratch, what: str) -> tuple:
    """(the fstcrf model file ``model``, trained on ``folder``/train.txt with the default
    settings for ``iterations`` when it is None; the model loaded; the spec of its
    predicates, columns and target; a first-order CRFsuite model trained on the same
    file for as many iterations with the same predicates and prior), in ``scratch``;
    ``what`` names the benchmark in the error for a model without a template."""
    from fstcrf.errors import FstcrfError
    from fstcrf.features.extractor import FeatureExtractor
    from fstcrf.model.chain import load_model

    if model is None:
        model = train_chunker(folder, iterations, threads, scratch)
    fitted = load_model(model)
    if not isinstance(fitted.extractor_, FeatureExtractor):
        raise FstcrfError(f"{model}: {what} needs a model with a predicate template; this one reads token attributes")
    spec = scratch / "spec.json"
    write_spec(spec, fitted.extractor_.template, fitted.columns_, fitted.target_)
    crfsuite_model = scratch / "crfsuite.model"
    run_process(
        crfsuite_command(
            "crfsuite-train",
            str(spec),
            str(folder / "train.txt"),
            str(crfsuite_model),
            str(iterations),
            repr(1.0 / (2.0 * fitted.sigma**2)),
        ),
        scratch,
        "crfsuite-train",
    )
    return model, fitted, spec, crfsuite_model


def bench_tag_process(
    folder,
    copies: int = 10,
    model=None,
    threads: int = 2,
    repeats: int = 1,
    progress: bool = True,
    train_iterations: int = 20,
) -> dict:
    """Whole-process tagging of ``copies`` copies of ``folder``/test.txt as one file:
    ``fstcrf tag`` against a python-crfsuite script, each in fresh processes.

    ``model`` is an fstcrf model file; by default one is trained with fstcrf's
    default settings for ``train_iterations`` L-BFGS iterations (tagging time
    does not depend on the count).  CRFsuite gets a first-order model trained
    for ``train_iterations`` on ``folder``/train.txt with the fstcrf model's
    predicates, columns and prior.  Returns JSON-able data for
    :func:`format_process`; "ratio" is CRFsuite's whole-process wall time over
    fstcrf's (the speed-up), "floor" the steps of tagging alone
    (:func:`tagging_floor`)."""
    import tempfile
    from pathlib import Path

    from fstcrf.progress import Progress

    _check_counts(copies=copies, threads=threads, repeats=repeats, train_iterations=train_iterations)
    folder = Path(folder)
    with (
        tempfile.TemporaryDirectory(prefix="fstcrf-bench-tag-") as name,
        Progress(2 * repeats + 2, "bench tag", unit="process", enabled=progress) as bar,
    ):
        scratch = Path(name)
        tagged = scratch / "input.txt"
        tokens = copies_of(folder / "test.txt", copies, tagged)
        model, fitted, spec, crfsuite_model = crfsuite_twin(
            folder, model, train_iterations, threads, scratch, "bench tag --vs crfsuite"
        )
        bar.update(2)
        outputs = {side: scratch / f"{side}.tagged" for side in ("fstcrf", "crfsuite")}
        commands = {
            "fstcrf": fstcrf_command(
                "tag", str(model), str(tagged), "-o", str(outputs["fstcrf"]), "--threads", str(threads)
            ),
            "crfsuite": crfsuite_command(
                "crfsuite-tag", str(spec), str(crfsuite_model), str(tagged), str(outputs["crfsuite"])
            ),
        }
        result = _side_by_side(commands, scratch, repeats, bar)
        for side, path in outputs.items():
            result["sides"][side]["f1"] = _chunk_f1(path)
            del result["sides"][side]["stdout"]
        floor = tagging_floor(fitted, tagged, threads)
    sides = result["sides"]
    return {
        "kind": "tag",
        "floor": floor,
        "tokens": tokens,
        "copies": copies,
        "model": str(model),
        "order": int(fitted.order),
        "template": _template_name(fitted.extractor_.template),
        "weights": int(len(fitted.weights_)),
        "threads": threads,
        "repeats": repeats,
        "train_iterations": train_iterations,
        "ratio": sides["crfsuite"]["wall"] / sides["fstcrf"]["wall"],
        **result,
        "load_average": os.getloadavg(),
    }


def bench_tag_file(model, test_path, threads: int = 2, repeats: int = 3, progress: bool = True) -> dict:
    """Whole-process tagging of the CoNLL file ``test_path`` with the model file ``model``:
    ``fstcrf tag`` alone in ``repeats`` fresh processes (bytecode compiled first, as pip
    install leaves it), each run's wall seconds, the fastest's CPU seconds and phases,
    and the tokens (the file's lines that are neither blank nor -DOCSTART-)."""
    import tempfile
    from pathlib import Path

    from fstcrf.progress import Progress

    _check_counts(threads=threads, repeats=repeats)
    with open(test_path, "rb") as stream:
        tokens = token_lines(stream)
    with (
        tempfile.TemporaryDirectory(prefix="fstcrf-bench-tag-") as name,
        Progress(repeats, "bench tag", unit="process", enabled=progress) as bar,
    ):
        tagged = Path(name) / "tagged.txt"
        command = fstcrf_command("tag", str(model), str(test_path), "-o", str(tagged), "--threads", str(threads))
        result = _side_by_side({"fstcrf": command}, Path(name), repeats, bar)
    del result["sides"]["fstcrf"]["stdout"]
    return {
        "kind": "tag-file",
        "model": str(model),
        "test": str(test_path),
        "tokens": tokens,
        "threads": threads,
        "repeats": repeats,
        **result,
        "load_average": os.getloadavg(),
    }


def format_tag_file(result: dict) -> str:
    """The runs of a :func:`bench_tag_file`: wall seconds and tokens per second of each,
    then the fastest run's phases."""
    side, tokens = result["sides"]["fstcrf"], result["tokens"]
    walls = sorted(side["walls"])
    median = walls[len(walls) // 2] if len(walls) % 2 else (walls[len(walls) // 2 - 1] + walls[len(walls) // 2]) / 2
    split = _phase_split(side)
    return "\n".join(
        [
            f"Tagging {result['test']} ({tokens:,} tokens) with {result['model']}: `fstcrf tag` alone, "
            f"{result['repeats']} fresh processes on {result['threads']} threads, load average "
            f"{result['load_average'][0]:.2f}.",
            "",
            f"whole process: {walls[0]:.2f} / {median:.2f} / {walls[-1]:.2f} s (fastest / median / slowest) = "
            f"**{tokens / median:,.0f} tokens/s** at the median ({tokens / walls[-1]:,.0f}-{tokens / walls[0]:,.0f}); "
            f"CPU {side['cpu']:.2f} s in the fastest run.",
            "",
            "Phases of the fastest run (wall s): "
            + ", ".join(f"{name} {seconds:.2f}" for name, seconds in split.items())
            + f". A bare interpreter takes {result['interpreter_wall']:.2f} s.",
        ]
    )


def tagging_floor(model, path, threads: int, repeats: int = 3) -> dict[str, float]:
    """Wall seconds (best of ``repeats``) of each step of tagging the CoNLL file ``path``
    with a loaded single model, alone and in this process: "copy" reads the file's bytes
    and writes as many (the floor of any tagger), "read" scans them into batches of
    sentences in C, "features" extracts the batches' predicates (each batch's
    lookups in two threads), "decode" scores and Viterbi-decodes them on ``threads``
    threads (the kernel alone), "features | decode" does both as ``fstcrf tag`` does,
    the next batch's features extracted in a thread beside this batch's decoding
    (fstcrf.cli.pipeline), "write" writes the tagged lines in C."""
    import gc
    import tempfile

    from fstcrf.cli.pipeline import overlapped
    from fstcrf.cli.tag import TAG_BATCH_TOKENS
    from fstcrf.corpus.scanned import iter_scanned, tagged_lines

    def copy() -> None:
        with open(path, "rb") as source, tempfile.TemporaryFile() as target:
            while block := source.read(1 << 22):
                target.write(block)

    def read() -> list:
        columns = ",".join(model.columns_)
        return list(iter_scanned(path, columns, allow_missing=(model.target_,), batch_tokens=TAG_BATCH_TOKENS))

    model.threads = threads
    thresholds = gc.get_threshold()
    gc.set_threshold(20_000, *thresholds[1:])  # as fstcrf tag's pipeline
    try:
        batches = read()
        encoded = [model.encode(batch.sentences) for batch in batches]
        scorer = model.scorer()
        labels = [model.predict(batch.sentences) for batch in batches]
        return {
            "copy": best_time(copy, repeats),
            "read": best_time(read, repeats),
            "features": best_time(lambda: [model.encode(batch.sentences) for batch in batches], repeats),
            "decode": best_time(lambda: [scorer.paths(sentences, model.weights_) for sentences in encoded], repeats),
            "features | decode": best_time(
                lambda: overlapped(
                    batches,
                    lambda sentences: scorer.paths(sentences, model.weights_),
                    lambda batch, paths: None,
                    lambda batch: model.encode(batch.sentences),
                ),
                repeats,
            ),
            "write": best_time(lambda: [tagged_lines(b, [tags], "-") for b, tags in zip(batches, labels)], repeats),
        }
    finally:
        gc.set_threshold(*thresholds)


def bench_train_process(
    folder, iterations: int = 50, threads: int = 2, repeats: int = 1, progress: bool = True
) -> dict:
    """Whole-process training on ``folder``/train.txt for ``iterations`` L-BFGS
    iterations: ``fstcrf train`` with its default settings against a
    python-crfsuite script with the same predicates (fstcrf's default template
    for the chunk column), columns and L2 prior (c2 = 1 / (2 sigma^2)), each in
    fresh processes.  Both models are scored on test.txt.  Returns JSON-able
    data for :func:`format_process`; "ratio" is fstcrf's whole-process wall
    time over CRFsuite's."""
    import tempfile
    from pathlib import Path

    import pycrfsuite

    from fstcrf.learn.settings import DEFAULT_SIGMA
    from fstcrf.corpus.conll import read_conll
    from fstcrf.features.defaults import default_template
    from fstcrf.errors import FstcrfError
    from fstcrf.corpus.evaluate import score_chunks
    from fstcrf.features.template import TEMPLATES
    from fstcrf.model.chain import load_model
    from fstcrf.progress import Progress

    _check_counts(iterations=iterations, threads=threads, repeats=repeats)
    folder = Path(folder)
    test = read_conll(folder / "test.txt")
    template_name = default_template("chunk", test.column_names)
    template = TEMPLATES[template_name]
    with (
        tempfile.TemporaryDirectory(prefix="fstcrf-bench-train-") as name,
        Progress(2 * repeats, "bench train", unit="process", enabled=progress) as bar,
    ):
        scratch = Path(name)
        spec = scratch / "spec.json"
        write_spec(spec, template, test.column_names, "chunk")
        models = {side: scratch / f"{side}.model" for side in ("fstcrf", "crfsuite")}
        commands = {
            "fstcrf": fstcrf_command(
                "train",
                str(folder / "train.txt"),
                "--max-iter",
                str(iterations),
                "--threads",
                str(threads),
                "-o",
                str(models["fstcrf"]),
            ),
            "crfsuite": crfsuite_command(
                "crfsuite-train",
                str(spec),
                str(folder / "train.txt"),
                str(models["crfsuite"]),
                str(iterations),
                repr(1.0 / (2.0 * DEFAULT_SIGMA**2)),
            ),
        }
        result = _side_by_side(commands, scratch, repeats, bar)
        fitted = load_model(models["fstcrf"])
        if fitted.extractor_.template != template or fitted.sigma != DEFAULT_SIGMA:
            raise FstcrfError(
                f"fstcrf train's defaults are not what the CRFsuite side was given ({template_name}, "
                f"sigma {DEFAULT_SIGMA:g}): its model has sigma {fitted.sigma:g} and the template\n"
                f"{fitted.extractor_.template.text}"
            )
        sides = result["sides"]
        sides["fstcrf"].update(
            iterations=int(fitted.n_iter_), weights=int(len(fitted.weights_)), f1=fitted.score(test).f1
        )
        del sides["fstcrf"]["stdout"]
        sides["crfsuite"].update(json.loads(sides["crfsuite"].pop("stdout")))
        tagger = pycrfsuite.Tagger()
        tagger.open(str(models["crfsuite"]))
        predicates = template_spec(template)
        predicted = [tagger.tag(token_attributes(predicates, sentence.columns)) for sentence in test]
    sides["crfsuite"]["f1"] = score_chunks(test.column("chunk"), predicted).f1
    return {
        "kind": "train",
        "iterations": iterations,
        "threads": threads,
        "repeats": repeats,
        "template": template_name,
        "sigma": DEFAULT_SIGMA,
        "ratio": sides["fstcrf"]["wall"] / sides["crfsuite"]["wall"],
        **result,
        "load_average": os.getloadavg(),
    }


def bench_compose_process(joint_path, test_path, threads: int = 2, repeats: int = 3, progress: bool = True) -> dict:
    """Whole-process decoding of ``test_path`` by a composed model: ``fstcrf tag JOINT
    TEST --mode cascade`` against ``--mode joint``, each in fresh processes.  Returns
    JSON-able data for :func:`format_process`; "ratio" is the joint process's wall
    time over the cascade's."""
    import tempfile
    from pathlib import Path

    from fstcrf.model.compose import load_joint
    from fstcrf.corpus.conll import read_conll
    from fstcrf.progress import Progress

    _check_counts(threads=threads, repeats=repeats)
    joint = load_joint(joint_path)
    tokens = read_conll(test_path, joint.components[0].columns_, allow_missing=joint.targets).num_tokens
    with (
        tempfile.TemporaryDirectory(prefix="fstcrf-bench-compose-") as name,
        Progress(2 * repeats, "bench compose (whole process)", unit="process", enabled=progress) as bar,
    ):
        scratch = Path(name)
        commands = {
            mode: fstcrf_command(
                "tag",
                str(joint_path),
                str(test_path),
                "--mode",
                mode,
                "--threads",
                str(threads),
                "-o",
                str(scratch / f"{mode}.tagged"),
            )
            for mode in ("cascade", "joint")
        }
        result = _side_by_side(commands, scratch, repeats, bar)
    sides = result["sides"]
    for figures in sides.values():
        del figures["stdout"]
    return {
        "kind": "compose",
        "model": str(joint_path),
        "test": str(test_path),
        "tokens": tokens,
        "joint_states": int(joint.space.num_states),
        "threads": threads,
        "repeats": repeats,
        "ratio": sides["joint"]["wall"] / sides["cascade"]["wall"],
        **result,
        "load_average": os.getloadavg(),
    }


def feed_until(stream, text: bytes, total_bytes: int, written: list[int]) -> None:
    """Write copies of ``text`` (whole sentences) to ``stream`` until ``total_bytes``
    are written, the last copy cut after the last sentence that fits, then close it;
    written[0] counts the bytes written so far.  A closed pipe ends it."""
    try:
        while written[0] < total_bytes:
            room = total_bytes - written[0]
            piece = text if len(text) <= room else text[: text.rfind(b"\n\n", 0, room) + 2]
            if len(piece) < 2:
                break
            stream.write(piece)
            written[0] += len(piece)
    except BrokenPipeError:
        pass
    finally:
        try:
            stream.close()
        except BrokenPipeError:
            pass


def resident_mib(pid: int) -> float | None:
    """The resident memory of process ``pid`` now, in MiB (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def bench_stream_process(
    folder, gigabytes: float = 5.0, model=None, threads: int = 2, progress: bool = True, train_iterations: int = 20
) -> dict:
    """``fstcrf tag MODEL -`` fed ``gigabytes`` GB (10^9 bytes) of copies of
    ``folder``/test.txt on standard input, its output read and counted as it comes:
    tokens per second, the time to the first output, peak resident memory, and the
    resident memory sampled every second (constant when tagging streams).

    ``model`` is an fstcrf model file; by default one is trained with fstcrf's
    defaults for ``train_iterations`` iterations.  Returns JSON-able data for
    :func:`format_stream`."""
    import subprocess
    import tempfile
    import threading
    import time
    from pathlib import Path

    from fstcrf.errors import FstcrfError
    from fstcrf.progress import Progress
    from fstcrf.learn.settings import check_positive

    check_positive("gigabytes", gigabytes)
    _check_counts(threads=threads, train_iterations=train_iterations)
    folder = Path(folder)
    text = ((folder / "test.txt").read_text(encoding="utf-8").rstrip("\n") + "\n\n").encode("utf-8")

    total = int(gigabytes * 1e9)
    with tempfile.TemporaryDirectory(prefix="fstcrf-bench-stream-") as name:
        scratch = Path(name)
        if model is None:
            model = train_chunker(folder, train_iterations, threads, scratch)
        phases_path = scratch / "stream.phases.json"
        err_path = scratch / "stream.err"
        with open(err_path, "wb") as err, Progress(total, "bench stream", unit="B", enabled=progress) as bar:
            started = time.perf_counter()
            process = subprocess.Popen(
                fstcrf_command("-q", "tag", str(model), "-", "--threads", str(threads)),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env={**os.environ, PHASES_VARIABLE: str(phases_path)},
            )
            fed = [0]
            feeder = threading.Thread(target=feed_until, args=(process.stdin, text, total, fed), daemon=True)
            feeder.start()
            first_output, output_bytes, samples = None, 0, []
            next_sample = started
            while True:
                block = process.stdout.read1(1 << 20)
                if not block:
                    break
                now = time.perf_counter()
                if first_output is None:
                    first_output = now - started
                output_bytes += len(block)
                bar.update(fed[0] - bar.done)
                if now >= next_sample:
                    samples.append((now - started, output_bytes, resident_mib(process.pid)))
                    next_sample = now + 1.0
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - started
            feeder.join()
        if os.waitstatus_to_exitcode(status) != 0:
            raise FstcrfError(
                f"fstcrf tag - exited with status {os.waitstatus_to_exitcode(status)}:\n"
                f"{err_path.read_text(errors='replace')[-2000:]}"
            )
        phases = json.loads(phases_path.read_text()) if phases_path.exists() else {}
    copies, rest = divmod(fed[0], len(text))
    resident = [mib for _, _, mib in samples if mib is not None]
    return {
        "kind": "stream",
        "model": str(model),
        "threads": threads,
        "input_bytes": fed[0],
        "tokens": copies * token_lines(text.splitlines()) + token_lines(text[:rest].splitlines()),
        "output_bytes": output_bytes,
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "first_output": first_output,
        "peak_rss_mib": phases.get("process", {}).get("peak_rss_mib"),
        "resident_mib": {
            "first": resident[0] if resident else None,
            "max": max(resident, default=None),
            "last": resident[-1] if resident else None,
            "samples": len(resident),
        },
        "phases": {key: value for key, value in phases.items() if key != "process"},
        "load_average": os.getloadavg(),
    }


def format_stream(result: dict) -> str:
    """A markdown table of a :func:`bench_stream_process` result."""
    resident = result["resident_mib"]
    peak = "-" if result["peak_rss_mib"] is None else f"{result['peak_rss_mib']:,.0f}"

    def mib(value):
        return "-" if value is None else f"{value:,.0f}"

    lines = [
        f"`fstcrf tag {result['model']} -` on {result['threads']} threads, fed "
        f"{result['input_bytes'] / 1e9:g} GB ({result['tokens']:,} tokens) of copies of test.txt on standard "
        f"input; load average {result['load_average'][0]:.2f} at the end.",
        "",
        "| wall s | CPU s | tokens/s | MB/s in | first output s | peak RSS MiB | RSS MiB first / max / last sample |",
        "|---|---|---|---|---|---|---|",
        f"| {result['wall']:.1f} | {result['cpu']:.1f} | {result['tokens'] / result['wall']:,.0f} | "
        f"{result['input_bytes'] / 1e6 / result['wall']:.1f} | {result['first_output']:.2f} | {peak} | "
        f"{mib(resident['first'])} / {mib(resident['max'])} / {mib(resident['last'])} "
        f"({resident['samples']} samples, one a second) |",
    ]
    if result["phases"]:
        lines += [
            "",
            "Phases (s): "
            + ", ".join(
                f"{name} {seconds:.1f}"
                for name, seconds in result["phases"].items()
                if isinstance(seconds, (int, float))
            ),
        ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The report

#: Phase columns in the order a process runs them; others follow in the order met.
PHASE_ORDER = ("start", "load", "read", "features", "decode", "train", "write")


def _phase_split(side: dict) -> dict[str, float]:
    """Wall seconds per phase of a side's fastest run: "start" (process start to the
    first phase), each phase, "other" (in no phase after the first) and "exit" (from
    the report at exit to the process's reaping); {} if the process timed none."""
    phases = dict(side["phases"])
    process = phases.pop("process", None)
    if process is None:
        return {}
    return {"start": process["start"], **phases, "other": process["outside"], "exit": side["wall"] - process["elapsed"]}


def format_process(result: dict) -> str:
    """A markdown table of a :func:`bench_tag_process`, :func:`bench_train_process` or
    :func:`bench_compose_process` result: per side the whole process and the split of its time into phases."""
    sides = result["sides"]
    splits = {side: _phase_split(figures) for side, figures in sides.items()}
    met = [name for split in splits.values() for name in split if name not in ("other", "exit")]
    names = [name for name in PHASE_ORDER if name in met]
    names += [name for name in dict.fromkeys(met) if name not in names] + ["other", "exit"]
    if result["kind"] == "compose":
        title = (
            f"Decoding {result['test']} ({result['tokens']:,} tokens) with the composed model "
            f"{result['model']} ({result['joint_states']:,} joint states): `fstcrf tag --mode cascade` "
            f"against `--mode joint`, on {result['threads']} threads"
        )
        extra_header, extra = (
            "tok/s",
            {side: f"{result['tokens'] / figures['wall']:,.0f}" for side, figures in sides.items()},
        )
        slow, fast = "joint", "cascade"
    elif result["kind"] == "tag":
        title = (
            f"Tagging {result['tokens']:,} tokens ({result['copies']} copies of test.txt in one file), "
            f"model {result['model']} (order {result['order']}, {result['template']}, "
            f"{result['weights']:,} weights), fstcrf on {result['threads']} threads"
        )
        extra_header, extra = "test F1", {side: f"{figures['f1']:.2f}" for side, figures in sides.items()}
        slow, fast = "crfsuite", "fstcrf"
    else:
        title = (
            f"Training {result['iterations']} L-BFGS iterations on train.txt ({result['template']}, "
            f"sigma {result['sigma']:g}), fstcrf on {result['threads']} threads"
        )
        extra_header = "iterations run | test F1"
        extra = {side: f"{figures['iterations']} | {figures['f1']:.2f}" for side, figures in sides.items()}
        slow, fast = "fstcrf", "crfsuite"
    lines = [
        title + f"; best of {result['repeats']}, load average {result['load_average'][0]:.2f}.",
        "",
        "| side | whole process s | CPU s | peak RSS MiB | " + " | ".join(names) + f" | {extra_header} |",
        "|---" * (4 + len(names) + extra_header.count("|") + 1) + "|",
    ]
    for side, figures in sides.items():
        split = splits[side]
        cells = [f"{split[name]:.2f}" if name in split else "-" for name in names]
        peak = "-" if figures["peak_rss_mib"] is None else f"{figures['peak_rss_mib']:,.0f}"
        lines.append(
            f"| {side} | {figures['wall']:.2f} | {figures['cpu']:.2f} | {peak} | "
            + " | ".join(cells)
            + f" | {extra[side]} |"
        )
    if "floor" in result:
        floor, tokens = result["floor"], result["tokens"]
        lines += [
            "",
            "Each step alone in one process (wall s, best of 3; tokens/s): "
            + ", ".join(f"{name} {seconds:.3f} ({tokens / seconds:,.0f})" for name, seconds in floor.items())
            + f"; fstcrf's whole process {tokens / sides['fstcrf']['wall']:,.0f} tokens/s.",
        ]
    lines += [
        "",
        f"{slow} / {fast}: whole process **{result['ratio']:.2f}x**, "
        f"CPU {sides[slow]['cpu'] / sides[fast]['cpu']:.2f}x. "
        f'A bare interpreter (python -c pass) takes {result["interpreter_wall"]:.2f} s; "start" is process '
        "start to the first phase (interpreter, imports, arguments). Phases in seconds of wall time. "
        + (
            "fstcrf's modules were compiled to bytecode first, as pip install leaves them."
            if result.get("bytecode_compiled")
            else "fstcrf's modules could not be compiled to bytecode first (a read-only folder?): each start "
            "may have compiled them."
        ),
    ]
    return "\n".join(lines)
