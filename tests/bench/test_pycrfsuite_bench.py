"""fstcrf bench pycrfsuite on the first sentences of CoNLL-2000: both workflows run with
both tools, NLTK's fstcrf side on fstcrf's Tagger, the scores are conlleval's."""

import pytest

from fstcrf.bench.pycrfsuite import PHASES, bench_pycrfsuite, format_pycrfsuite

from needs import import_or_skip

import_or_skip("pycrfsuite", "needs python-crfsuite: pip install 'fstcrf[bench]'")
import_or_skip("nltk", "needs nltk: pip install 'fstcrf[test]'")


@pytest.mark.slow
def test_both_workflows_run_with_both_tools(data_file):
    folder = data_file("conll2000/train.txt").parent
    result = bench_pycrfsuite(folder, iterations=5, limit=150)
    tutorial, nltk = result["workflows"]["python-crfsuite"], result["workflows"]["nltk"]
    assert [tools["iterations"] for tools in tutorial["tools"].values()] == [5, 5]
    assert nltk["tools"]["fstcrf"]["tagger"] == "fstcrf.pycrfsuite.tagger"
    assert nltk["tools"]["python-crfsuite"]["tagger"].startswith("pycrfsuite")
    assert set(tutorial["ratios"]) == set(PHASES) and set(nltk["ratios"]) == {"train_seconds", "tag_seconds"}
    for workflow in (tutorial, nltk):
        scores = [tools["f1"] for tools in workflow["tools"].values()]
        assert all(0 < f1 <= 100 for f1 in scores)
        assert workflow["f1_difference"] == pytest.approx(scores[1] - scores[0])
    table = format_pycrfsuite(result)
    assert "first 150 sentences" in table and table.count("conlleval F1") == 2
