"""fstcrf bench mce on toy corpora laid out like CoNLL-2000 and CoNLL-2003 (IOB1 NER)."""

import json

from fstcrf.cli import main
from fstcrf.corpus.conll import Corpus, Sentence, write_conll
from fstcrf.corpus.schemes import convert
from corpora import chunk_corpus


def toy_data(folder):
    """conll2000/{train,test}.txt and conll2003/eng.{train,testa,testb} of toy sentences; the
    NER column is the chunk column in IOB1, so the bench must convert it."""
    (folder / "conll2000").mkdir()
    (folder / "conll2003").mkdir()
    write_conll(chunk_corpus(1, 60), folder / "conll2000" / "train.txt")
    write_conll(chunk_corpus(2, 20), folder / "conll2000" / "test.txt")
    for seed, name in ((3, "eng.train"), (4, "eng.testa"), (5, "eng.testb")):
        corpus = chunk_corpus(seed, 40)
        sentences = [Sentence({**s.columns, "ner": convert(s.columns["chunk"], "iob1")}) for s in corpus.sentences]
        write_conll(Corpus(("word", "pos", "chunk", "ner"), sentences), folder / "conll2003" / name)


def test_bench_mce_prints_map_and_mce_f_test_scores(tmp_path, capsys):
    toy_data(tmp_path)
    assert main(["-q", "bench", "mce", "--data", str(tmp_path), "--json", "--map-iter", "4", "--mce-iter", "3"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert set(results) == {"chunking", "ner"}
    assert results["chunking"]["map_sigma"] in (1.0, 10.0) and results["ner"]["map_sigma"] == 3.0
    for result in results.values():
        assert 0.0 <= result["map"] <= 100.0 and 0.0 <= result["mce_f"] <= 100.0
        assert result["mce_c"] in (1e6, 1e7) and 0 <= result["mce_iterations"] <= 3
        curves = result["dev_curves"]
        best_dev = max(point[2] for curve in curves.values() for point in curve)
        chosen = dict((point[0], point[2]) for point in curves[f"{result['mce_c']:g}"])
        assert chosen[result["mce_iterations"]] == best_dev
        assert all(curve[0][2] == result["dev_map"] for curve in curves.values())  # iteration 0 is MAP
        if result["mce_iterations"] == 0:
            assert result["mce_f"] == result["map"]


def test_bench_mce_rejects_unknown_tasks(tmp_path, capsys):
    toy_data(tmp_path)
    assert main(["-q", "bench", "mce", "--data", str(tmp_path), "--tasks", "pos"]) != 0
    assert "--tasks takes chunking, ner, got 'pos'" in capsys.readouterr().err
