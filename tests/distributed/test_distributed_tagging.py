"""Tagging on Dask writes what tagging in one process writes, in input order."""

from pathlib import Path

import pytest

from fstcrf.cli import main
from fstcrf.model import ChainCRF
from fstcrf.corpus.conll import read_conll

distributed = pytest.importorskip("distributed")

DATA = Path(__file__).resolve().parents[2] / "fstcrf" / "data"


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "demo.fcrf"
    ChainCRF(max_iter=10, threads=1).fit(read_conll(DATA / "demo_train.txt")).save(path)
    return path


@pytest.mark.slow
def test_cli_tags_files_on_dask_as_in_one_process(model_path, tmp_path):
    inputs = [str(DATA / "demo_test.txt"), str(DATA / "demo_train.txt")]
    alone, spread = tmp_path / "alone.txt", tmp_path / "spread.txt"
    assert main(["-q", "tag", str(model_path), *inputs, "-o", str(alone)]) == 0
    assert main(["-q", "tag", str(model_path), *inputs, "-o", str(spread), "--dask", "local:2"]) == 0
    assert spread.read_bytes() == alone.read_bytes()


@pytest.mark.slow
def test_many_byte_ranges_of_one_file_come_back_in_order(model_path, tmp_path):
    from fstcrf.distributed.tagging import tag_on_dask

    source = tmp_path / "words.txt"  # no gold column: it may be missing
    source.write_text(
        "".join(
            line.rsplit(" ", 1)[0] + "\n" if line.strip() else "\n"
            for line in (DATA / "demo_test.txt").read_text().splitlines()
        )
    )
    alone, spread = tmp_path / "alone.txt", tmp_path / "spread.txt"
    assert main(["-q", "tag", str(model_path), str(source), "-o", str(alone)]) == 0
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        assert (
            tag_on_dask(
                client, str(model_path), [str(source)], str(spread), ("word", "pos", "chunk"), ("chunk",), shards=13
            )
            == 13
        )
    assert spread.read_bytes() == alone.read_bytes()


def test_tagging_on_dask_refuses_what_it_does_not_do(model_path, capsys):
    assert main(["-q", "tag", str(model_path), str(DATA / "demo_test.txt"), "--dask", "local:1", "--nbest", "2"]) == 2
    assert "--nbest" in capsys.readouterr().err
