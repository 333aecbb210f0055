"""Data-parallel training on Dask: shards, the same optimum as one process on 1, 2
and 4 worker processes, a worker killed mid-training, and bad input."""

import os
import signal
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fstcrf.corpus.conll import read_conll
from fstcrf.distributed.shards import partition, read_shard
from fstcrf.errors import FstcrfError, SchedulerError, ShardError
from fstcrf.model import ChainCRF

distributed = pytest.importorskip("distributed")

DEMO = Path(__file__).resolve().parents[2] / "fstcrf" / "data" / "demo_train.txt"
ITERATIONS = 6


@pytest.fixture(scope="module")
def clients():
    """A function from a number of workers to a Client of a LocalCluster of that many
    single-threaded worker processes (started once per module)."""
    started = {}

    def client(workers: int):
        if workers not in started:
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
            )
            started[workers] = (cluster, distributed.Client(cluster))
        return started[workers][1]

    yield client
    for cluster, client in started.values():
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def single_process():
    return ChainCRF(max_iter=ITERATIONS, threads=1).fit(read_conll(DEMO))


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _fit(client, source, **options):
    from fstcrf.distributed.fit import fit_on_dask

    return fit_on_dask(ChainCRF(max_iter=ITERATIONS, threads=1), source, client, **options)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_same_objective_and_weights_as_one_process(clients, single_process, workers):
    model = _fit(clients(workers), str(DEMO))
    assert model.extractor_.predicate_names_ == single_process.extractor_.predicate_names_
    assert np.array_equal(model.features_.output, single_process.features_.output)
    assert model.n_iter_ == single_process.n_iter_ == ITERATIONS
    objectives = np.array([record["objective"] for record in model.history_])
    reference = np.array([record["objective"] for record in single_process.history_])
    assert np.max(np.abs(objectives - reference) / np.abs(reference)) < 1e-9
    assert _relative(model.weights_, single_process.weights_) < 1e-9
    assert model.traffic_.evaluations >= ITERATIONS and model.traffic_.retried == 0


@pytest.mark.slow
def test_estimator_with_a_client_trains_on_sentences_in_memory(clients, single_process, tmp_path):
    model = ChainCRF(max_iter=ITERATIONS, threads=1, client=clients(2)).fit(read_conll(DEMO))
    assert _relative(model.weights_, single_process.weights_) < 1e-9
    assert model.get_params()["client"] is clients(2)
    model.save(tmp_path / "model.fcrf")  # the client is a connection, not part of the model
    loaded = ChainCRF.load(tmp_path / "model.fcrf")
    assert loaded.client is None and np.array_equal(loaded.weights_, model.weights_)


@pytest.mark.slow
def test_a_worker_killed_mid_training_costs_a_retry_not_the_result(clients):
    client = clients(2)
    undisturbed = _fit(client, str(DEMO))
    pids = client.run(os.getpid)
    victim = pids[sorted(pids)[0]]
    timers = []

    def kill_during_the_next_iteration(record):
        if record["iteration"] == 2:
            timers.append(threading.Timer(0.02, os.kill, (victim, signal.SIGKILL)))
            timers[-1].start()

    from fstcrf.distributed.fit import fit_on_dask

    model = fit_on_dask(
        ChainCRF(max_iter=ITERATIONS, threads=1), str(DEMO), client, callback=kill_during_the_next_iteration
    )
    timers[0].join()
    client.wait_for_workers(2)
    assert victim not in client.run(os.getpid).values()
    assert model.n_iter_ == ITERATIONS
    assert np.array_equal(model.weights_, undisturbed.weights_)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=6), min_size=1, max_size=3),
    st.integers(1, 9),
    st.booleans(),
)
def test_shards_hold_every_sentence_once_in_order(tmp_path_factory, files, num_shards, extra_blank_lines):
    folder = tmp_path_factory.mktemp("shards")
    paths, expected = [], []
    for f, lengths in enumerate(files):
        blank = "\n \n" if extra_blank_lines else "\n"
        text = blank.join("".join(f"w{f}.{s}.{t} P B-NP\n" for t in range(n)) for s, n in enumerate(lengths))
        path = folder / f"part{f}.txt"
        path.write_text(text + blank)
        paths.append(str(path))
        expected += [sentence.columns for sentence in read_conll(path).sentences]
    shards = partition(paths, num_shards)
    assert 1 <= len(shards) <= num_shards
    found = [sentence.columns for shard in shards for sentence in read_shard(shard).sentences]
    assert found == expected


@pytest.mark.slow
def test_unreachable_scheduler_is_a_typed_error():
    from fstcrf.distributed.cluster import connect

    with pytest.raises(SchedulerError, match="tcp://127.0.0.1:9"):
        with connect("tcp://127.0.0.1:9", timeout=1):
            pass


def test_a_shard_the_worker_cannot_read_names_worker_and_file(clients, tmp_path):
    from fstcrf.distributed.dictionary import load_shard

    client = clients(2)
    path = tmp_path / "train.txt"
    path.write_bytes(DEMO.read_bytes())
    shard = partition(str(path), 2)[1]
    path.write_bytes(DEMO.read_bytes()[:100])  # the file changed after partitioning
    with pytest.raises(ShardError, match=rf"worker tcp://.*{path.name}"):
        client.submit(load_shard, shard, None, None, pure=False).result()
    path.write_bytes(DEMO.read_bytes().replace(b"\nthe ", b"\nth\xffe ", 1))
    with pytest.raises(ShardError, match=rf"worker tcp://.*{path.name}.*UTF-8"):
        client.submit(load_shard, partition(str(path), 1)[0], None, None, pure=False).result()


def test_a_shard_with_other_columns_is_refused_before_training(clients, tmp_path):
    three, four = tmp_path / "three.txt", tmp_path / "four.txt"
    three.write_text("He PRP B-NP\nran VBD B-VP\n\n")
    four.write_text("She PRP x B-NP\nsat VBD x B-VP\n\n")
    calls = []
    from fstcrf.distributed.fit import fit_on_dask

    with pytest.raises(ShardError, match=r"worker tcp://.*four\.txt.*4 fields.*three\.txt"):
        fit_on_dask(
            ChainCRF(max_iter=2, threads=1), [str(three), str(four)], clients(2), shards=2, callback=calls.append
        )
    assert calls == []


def test_value_lists_train_on_dask_to_the_single_process_weights(clients):
    from fstcrf.distributed.fit import fit_on_dask

    template = "bias\nword[0]\nngrams(word[0],2,3)\nbag(lower(word),-2,2)|pos[0]\n"
    model = fit_on_dask(ChainCRF(template=template, max_iter=ITERATIONS, threads=1), str(DEMO), clients(2), shards=2)
    reference = ChainCRF(template=template, max_iter=ITERATIONS, threads=1).fit(read_conll(DEMO))
    assert model.labels_ == reference.labels_
    assert model.extractor_.predicate_names_ == reference.extractor_.predicate_names_
    assert _relative(model.weights_, reference.weights_) < 1e-9


def test_a_label_seen_by_one_worker_only_is_a_label_of_the_model(clients, tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_bytes(DEMO.read_bytes())
    second.write_text("The DT B-NP\nrare JJ B-RARE\nword NN I-RARE\n\n")
    model = _fit(clients(2), [str(first), str(second)], shards=2)
    reference = ChainCRF(max_iter=ITERATIONS, threads=1).fit(read_conll(first).sentences + read_conll(second).sentences)
    assert "B-RARE" in model.labels_ and model.labels_ == reference.labels_
    assert _relative(model.weights_, reference.weights_) < 1e-9


@pytest.mark.parametrize("read_transitions", [True, False])
def test_a_model_reading_lower_labels_trains_to_the_single_process_optimum(clients, tmp_path, read_transitions):
    """A chunker reading the POS column, sharded so that the POS tag RARE is seen by
    the second worker only: its lower labels are the union over the shards."""
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_bytes(DEMO.read_bytes())
    second.write_text("The DT B-NP\nrare RARE I-NP\nword NN I-NP\n\n")
    options = {
        "template": "chunking-reads-pos",
        "reads": "pos",
        "read_transitions": read_transitions,
        "max_iter": ITERATIONS,
        "threads": 1,
    }
    from fstcrf.distributed.fit import fit_on_dask

    model = fit_on_dask(ChainCRF(**options), [str(first), str(second)], clients(2), shards=2)
    reference = ChainCRF(**options).fit(read_conll(first).sentences + read_conll(second).sentences)
    assert model.lower_labels_ == reference.lower_labels_ and "RARE" in model.lower_labels_
    assert len(model.weights_) == len(reference.weights_)
    assert _relative(model.weights_, reference.weights_) < 1e-9
    test = read_conll(DEMO).sentences[:20]
    assert model.predict(test) == reference.predict(test)
    with pytest.raises(ShardError, match=r"worker tcp://.*no column 'tag' of lower labels to read"):
        fit_on_dask(ChainCRF(**{**options, "reads": "tag", "template": "tag[0]"}), [str(first)], clients(2))


@pytest.mark.pynini
@pytest.mark.parametrize("algorithm", ["lbfgs", "perceptron"])
def test_training_under_a_grammar_reaches_the_single_process_result(clients, algorithm):
    options = {
        "grammar": "iob2",
        "algorithm": algorithm,
        "max_iter": ITERATIONS if algorithm == "lbfgs" else 1,
        "threads": 1,
    }
    shards = 2 if algorithm == "lbfgs" else 1  # one shard mixes to the single-process epoch
    from fstcrf.distributed.fit import fit_on_dask

    model = fit_on_dask(ChainCRF(**options), str(DEMO), clients(2), shards=shards)
    reference = ChainCRF(**options).fit(read_conll(DEMO))
    assert model.constraint_ is not None
    assert _relative(model.weights_, reference.weights_) < 1e-9
    test = read_conll(DEMO).sentences[:20]
    assert model.predict(test) == reference.predict(test)


@pytest.mark.slow
def test_cli_writes_no_model_when_a_shard_is_bad(tmp_path, capsys):
    from fstcrf.cli import main

    bad = tmp_path / "bad.txt"
    text = DEMO.read_text()
    bad.write_text(text + "\nextra column here too many\n\n")
    out = tmp_path / "model.fcrf"
    assert main(["-q", "train", str(bad), "--dask", "local:2", "--max-iter", "2", "-o", str(out)]) == 2
    assert "worker tcp://" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    "options, message",
    [
        (["--algorithm", "pa"], "not 'pa'"),
        (["--template", "LIST_TEMPLATE"], "(seen_lower) yet"),
        pytest.param(["--grammar", "no-such.grammar"], "no-such.grammar", marks=pytest.mark.pynini),
    ],
)
def test_cli_refuses_settings_before_starting_a_cluster(tmp_path, capsys, monkeypatch, options, message):
    from fstcrf.cli import main
    from fstcrf.distributed import cluster

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started for settings that cannot be trained")

    monkeypatch.setattr(cluster, "connect", no_cluster)
    out = tmp_path / "model.fcrf"
    template = tmp_path / "lists.txt"
    template.write_text("bias\nngrams(word[0],1,3)\nseen_lower(word[0])\n")
    options = [str(template) if option == "LIST_TEMPLATE" else option for option in options]
    assert main(["-q", "train", str(DEMO), "--dask", "local:2", *options, "-o", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("algorithm", ["perceptron", "sgd"])
def test_mixing_one_shard_for_one_epoch_is_the_single_process_epoch(clients, algorithm):
    single = ChainCRF(algorithm=algorithm, max_iter=1, threads=1).fit(read_conll(DEMO))
    from fstcrf.distributed.fit import fit_on_dask

    mixed = fit_on_dask(ChainCRF(algorithm=algorithm, max_iter=1, threads=1), str(DEMO), clients(2), shards=1)
    assert np.array_equal(mixed.weights_, single.weights_)


@pytest.mark.slow
def test_mixing_depends_on_the_shards_not_on_the_workers(clients):
    from fstcrf.distributed.fit import fit_on_dask

    two, four = (
        fit_on_dask(ChainCRF(algorithm="perceptron", max_iter=3, threads=1), str(DEMO), clients(n), shards=4)
        for n in (2, 4)
    )
    assert np.array_equal(two.weights_, four.weights_)
    assert [r["objective"] for r in two.history_] == [r["objective"] for r in four.history_]


def test_mixed_perceptron_learns_about_as_well_as_one_process(clients):
    from fstcrf.distributed.fit import fit_on_dask

    test = read_conll(DEMO.with_name("demo_test.txt"))
    single = ChainCRF(algorithm="perceptron", max_iter=5, threads=1).fit(read_conll(DEMO))
    mixed = fit_on_dask(ChainCRF(algorithm="perceptron", max_iter=5, threads=1), str(DEMO), clients(4), shards=4)
    assert mixed.score(test).f1 > single.score(test).f1 - 3.0


def test_the_shared_objects_sent_once_raise_no_large_graph_warning(clients):
    """The extractor and feature dictionary ride in the task graph (so that Dask can
    rebuild them); Dask's warning about a large graph would reach a user's terminal.
    The same object submitted plainly shows that the warning would come."""
    import warnings

    import dask
    from fstcrf.distributed.fit import _submit_value, _value

    big = np.zeros(300_000)  # 2.4 MB
    client = clients(2)
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1MB"}):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert _submit_value(client, big).result().shape == big.shape
        assert not [warning for warning in caught if "large graph" in str(warning.message)]
        with pytest.warns(UserWarning, match="large graph"):
            client.submit(_value, big, pure=False).result()


def test_a_warm_start_on_dask_reaches_the_single_process_result(clients, single_process, tmp_path):
    """init on Dask: the init model's dictionaries and weights, then the same L-BFGS
    iterations as ChainCRF.fit(init=...) in one process; a label init lacks is refused
    before training."""
    from fstcrf.distributed.fit import fit_on_dask
    from fstcrf.errors import LabelError

    model = fit_on_dask(ChainCRF(max_iter=3, threads=1), str(DEMO), clients(2), init=single_process)
    reference = ChainCRF(max_iter=3, threads=1).fit(read_conll(DEMO), init=single_process)
    assert model.extractor_ is single_process.extractor_ and model.features_ is single_process.features_
    objectives = np.array([record["objective"] for record in model.history_])
    expected = np.array([record["objective"] for record in reference.history_])
    assert len(objectives) == len(expected) and np.max(np.abs(objectives - expected) / np.abs(expected)) < 1e-9
    assert objectives[0] < single_process.history_[0]["objective"]  # it did start from init's weights
    assert _relative(model.weights_, reference.weights_) < 1e-9
    extra = tmp_path / "extra.txt"
    extra.write_text(DEMO.read_text() + "\nOdd NNP B-ODD\n\n")
    with pytest.raises(LabelError, match="B-ODD"):
        fit_on_dask(ChainCRF(max_iter=3, threads=1), str(extra), clients(2), init=single_process)
    with pytest.raises(FstcrfError, match="'lbfgs'"):
        fit_on_dask(ChainCRF(algorithm="perceptron", max_iter=1), str(DEMO), clients(2), init=single_process)


@pytest.mark.slow
def test_cli_warm_start_on_dask_writes_the_single_process_model(tmp_path):
    from fstcrf.cli import main
    from fstcrf.model import load_model

    start, local, dask = (tmp_path / name for name in ("start.model", "local.model", "dask.model"))
    assert main(["-q", "train", str(DEMO), "--max-iter", "3", "--threads", "1", "-o", str(start)]) == 0
    common = ["-q", "train", str(DEMO), "--init", str(start), "--max-iter", "2", "--threads", "1"]
    assert main([*common, "-o", str(local)]) == 0
    assert main([*common, "--dask", "local:2", "-o", str(dask)]) == 0
    assert _relative(load_model(dask).weights_, load_model(local).weights_) < 1e-9


def test_only_types_on_dask_is_the_single_process_np_chunker(clients, caplog):
    """only_types maps the other chunk types to O on the workers: the same labels and
    weights as one process trained on the restricted corpus; a type absent from the
    data is warned about."""
    from fstcrf.distributed.fit import fit_on_dask
    from fstcrf.corpus.schemes import restrict_types

    model = fit_on_dask(ChainCRF(max_iter=ITERATIONS, threads=1), str(DEMO), clients(2), only_types={"NP", "XYZ"})
    reference = ChainCRF(max_iter=ITERATIONS, threads=1).fit(restrict_types(read_conll(DEMO), "chunk", {"NP"}))
    assert list(model.labels_) == list(reference.labels_) == ["B-NP", "I-NP", "O"]
    assert _relative(model.weights_, reference.weights_) < 1e-9
    assert "XYZ does not occur" in caplog.text


def test_restrict_types_copies_and_keeps_unknown_and_label_sets():
    from fstcrf.corpus.conll import Corpus, Sentence
    from fstcrf.corpus.schemes import missing_types_warning, restrict_types

    corpus = Corpus(
        ("word", "chunk"), [Sentence({"word": ["a", "b", "c", "d"], "chunk": ["B-NP", "B-VP", "?", "B-VP|I-NP"]})]
    )
    restricted = restrict_types(corpus, "chunk", {"NP"})
    assert restricted.column("chunk") == [["B-NP", "O", "?", "O|I-NP"]]
    assert corpus.column("chunk") == [["B-NP", "B-VP", "?", "B-VP|I-NP"]]  # the input is not changed
    assert restrict_types(corpus, "chunk", None) is corpus
    assert (
        missing_types_warning({"NP", "PP"}, corpus.column("chunk"), "f.txt")
        == "--only-types: PP does not occur in f.txt, whose chunk types are NP, VP"
    )
    assert missing_types_warning({"NP"}, corpus.column("chunk"), "f.txt") is None


@pytest.mark.slow
def test_cli_only_types_on_dask_trains_an_np_chunker(tmp_path):
    from fstcrf.cli import main
    from fstcrf.model import load_model

    out = tmp_path / "np.model"
    assert (
        main(["-q", "train", str(DEMO), "--dask", "local:2", "--only-types", "NP", "--max-iter", "2", "-o", str(out)])
        == 0
    )
    assert list(load_model(out).labels_) == ["B-NP", "I-NP", "O"]


class _SchedulerThatDropsAWorker:
    """A client whose first scatter meets a worker the scheduler has already removed
    (the scheduler's KeyError naming the address), as when a worker is killed between
    listing the workers and sending them the weights."""

    def __init__(self):
        self.scatters = 0
        self.waited = 0

    def nthreads(self):
        return {"tcp://127.0.0.1:1": 1} if self.scatters else {"tcp://127.0.0.1:1": 1, "tcp://127.0.0.1:2": 1}

    def scatter(self, vector, workers, hash):
        self.scatters += 1
        if workers == ["tcp://127.0.0.1:2"]:
            raise KeyError("tcp://127.0.0.1:2")
        return vector

    def who_has(self, problems):
        return {}

    def submit(self, function, problem, vector, pure):
        return function(problem, vector)

    def gather(self, futures):
        return futures

    def wait_for_workers(self, count):
        self.waited += 1


def test_a_worker_dropped_by_the_scheduler_during_the_broadcast_is_retried():
    from fstcrf.distributed.objective import Traffic, on_every_shard

    client, traffic = _SchedulerThatDropsAWorker(), Traffic()
    shards = [SimpleNamespace(key="a", size=1), SimpleNamespace(key="b", size=2)]
    results = on_every_shard(
        client, lambda shard, vector: shard.size * vector.sum(), shards, np.ones(3), traffic=traffic
    )
    assert results == [3.0, 6.0]
    assert traffic.retried == 1 and client.waited == 1


@pytest.mark.parametrize(
    ("template", "named"),
    [
        ("bias\nword[0]\nseen_entity[0]", "seen_entity"),  # the training entities need the whole training set
        ("bias\nseen_lower(word[0])", "seen_lower"),
        ("ner-rich", "seen_entity, seen_lower"),
    ],
)
def test_templates_reading_the_training_data_are_refused_before_a_cluster(template, named):
    from fstcrf.distributed.fit import check_supported
    from fstcrf.errors import FstcrfError
    from fstcrf.model.chain import ChainCRF

    with pytest.raises(FstcrfError, match=f"training words \\({named}\\)"):
        check_supported(ChainCRF(template))
