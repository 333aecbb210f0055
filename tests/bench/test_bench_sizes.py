"""The size options that let the documentation's benchmark commands run small in CI
(docs/development.md, "# CI:") reach the functions they size, and leave the full
run as it was without them."""

from importlib.util import find_spec

import pytest

from fstcrf.bench import consistency, corrections, defaults, kernel, neural, serve, transfer
from fstcrf.cli import bench as cli_bench
from fstcrf.cli import build_parser
from fstcrf.errors import FstcrfError
from fstcrf.experiments import calibration


def _called(monkeypatch, module, name: str, *words: str) -> dict:
    """The keyword arguments (and positional ones, by number) with which ``fstcrf bench
    WORDS`` calls ``module.name``."""
    seen: dict = {}

    def record(*args, **kwargs):
        seen.update(enumerate(args))
        seen.update(kwargs)
        return []

    monkeypatch.setattr(module, name, record)
    args = build_parser().parse_args(["bench", *words])
    for measurement in cli_bench.TARGETS[args.what]:
        measurement.measure(args)
    return seen


@pytest.fixture
def data(tmp_path):
    for corpus in ("conll2000", "conll2002", "conll2003", "seminars"):
        (tmp_path / corpus).mkdir()
    for name in ("train.txt", "test.txt"):
        (tmp_path / "conll2000" / name).write_text("")
    return str(tmp_path)


def test_kernel_seconds_size_the_reference_runs(monkeypatch):
    assert _called(monkeypatch, kernel, "bench_kernel", "kernel")["reference_seconds"] == 1.0
    assert _called(monkeypatch, kernel, "bench_kernel", "kernel", "--seconds", "0.01")["reference_seconds"] == 0.01


def test_iterations_size_the_models_the_benchmarks_train(monkeypatch, data):
    full = _called(monkeypatch, defaults, "bench_defaults", "defaults", "--data", data)
    assert (full["max_iter"], full["default_max_iter"]) == (60, None)
    small = _called(monkeypatch, defaults, "bench_defaults", "defaults", "--data", data, "--iterations", "2")
    assert (small["max_iter"], small["default_max_iter"]) == (2, 2)
    assert "max_iter" not in _called(monkeypatch, consistency, "bench_nonlocal", "nonlocal", "--data", data)
    small = _called(
        monkeypatch,
        consistency,
        "bench_nonlocal",
        "nonlocal",
        "--data",
        data,
        "--iterations",
        "3",
        "--curve-sweeps",
        "2",
    )
    assert (small["max_iter"], small["curve_sweeps"]) == (3, 2)
    assert _called(monkeypatch, transfer, "bench_transfer", "transfer", "--data", data)["max_iter"] is None
    assert (
        _called(monkeypatch, transfer, "bench_transfer", "transfer", "--data", data, "--iterations", "3")["max_iter"]
        == 3
    )
    full = _called(monkeypatch, corrections, "bench_corrections", "corrections", "--data", data)
    assert (full[5], full[6]) == (None, None)
    small = ("--iterations", "3", "--sentences", "50")
    assert _called(monkeypatch, corrections, "bench_corrections", "corrections", "--data", data, *small)[6] == 50
    assert (
        _called(monkeypatch, corrections, "bench_corrections", "corrections", "--data", data, "--iterations", "3")[5]
        == 3
    )


def test_nonlocal_gives_its_sizes_to_each_language(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(consistency, "bench_language", lambda *args, **kwargs: seen.append(kwargs))
    consistency.bench_nonlocal(tmp_path, ["eng"], tmp_path, max_iter=3, curve_sweeps=2)
    consistency.bench_nonlocal(tmp_path, ["eng"], tmp_path)
    assert [(k["max_iter"], k["curve_sweeps"]) for k in seen] == [(3, 2), (consistency.LOCAL_SETTINGS["max_iter"], 50)]


def test_calibration_takes_a_number_of_iterations(monkeypatch, tmp_path):
    class Measured(Exception):
        pass

    def measure(*args):
        raise Measured(args)

    names = ("eng.train", "eng.testa", "eng.testb")
    monkeypatch.setattr(calibration, "read_conll2003", lambda folder: dict.fromkeys(names))
    monkeypatch.setattr(calibration, "measure", measure)
    with pytest.raises(Measured) as measured:
        calibration.main(["--data", str(tmp_path), "--max-iter", "3"])
    assert measured.value.args[0][-1] == 3


@pytest.mark.skipif(
    not (find_spec("torchcrf") and find_spec("torch_struct")),
    reason="needs pytorch-crf and torch-struct: pip install 'fstcrf[bench-torch]'",
)
def test_torch_sizes_choose_tag_counts_tools_seconds_and_threads(monkeypatch):
    full = _called(monkeypatch, neural, "bench_torch", "torch")
    assert (full[0], full["tools"], full["round_seconds"], full["threads"]) == ((9, 45), list(neural.TOOLS), 1.0, 2)
    small = ("--tag-counts", "9", "--tools", "fstcrf,pytorch-crf", "--seconds", "0.01", "--threads", "1")
    small = _called(monkeypatch, neural, "bench_torch", "torch", *small)
    assert (small[0], small["tools"], small["round_seconds"], small["threads"]) == (
        (9,),
        ["fstcrf", "pytorch-crf"],
        0.01,
        1,
    )
    with pytest.raises(FstcrfError, match="must name fstcrf"):
        _called(monkeypatch, neural, "bench_torch", "torch", "--tools", "pytorch-crf")


@pytest.mark.skipif(
    not all(find_spec(module) for module in ("starlette", "uvicorn", "prometheus_client", "pycrfsuite")),
    reason="needs the extras serve and bench: pip install 'fstcrf[serve,bench]'",
)
def test_serve_sizes_choose_the_runs_of_load_and_of_fstcrf_tag(monkeypatch, data):
    full = _called(monkeypatch, serve, "bench_serve", "serve", "--data", data)
    assert (full["concurrencies"], full["request_sentences"], full["repeats"]) == ((1, 8, 64), (1, 20), 3)
    small = ("--concurrencies", "1", "--request-sentences", "1", "--repeats", "1")
    small = _called(monkeypatch, serve, "bench_serve", "serve", "--data", data, *small)
    assert (small["concurrencies"], small["request_sentences"], small["repeats"]) == ((1,), (1,), 1)


def test_the_nonlocal_cache_keeps_a_model_per_corpus(monkeypatch, tmp_path):
    """A local model trained on 300-sentence stand-ins (a documentation run) is never
    taken for the one trained on the whole corpus: the cache key holds the sentences."""
    from fstcrf.corpus.conll import read_conll
    from fstcrf.document import decode

    trained = []

    class Recorded:
        def __init__(self, *args, **kwargs):
            pass

        def fit(self, train, **kwargs):
            trained.append(len(train))
            return self

        def save(self, path):
            path.write_text("a model")

    monkeypatch.setattr(consistency, "ChainCRF", Recorded)
    monkeypatch.setattr(decode, "estimate_consistency", lambda corpus, column: None)
    (tmp_path / "small.txt").write_text("Paris B-LOC\n\n")
    (tmp_path / "large.txt").write_text("Paris B-LOC\n\nRome B-LOC\nsays O\n\n")
    small, large = (read_conll(tmp_path / name, columns="word,ner") for name in ("small.txt", "large.txt"))
    cache = tmp_path / "cache"
    paths = [consistency._local_model("eng", train, small, cache, 1, 3) for train in (small, large, small)]
    assert trained == [1, 2] and paths[0] == paths[2] != paths[1]
