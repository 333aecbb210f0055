"""fstcrf tag --nbest, --marginals, --separator and --columns (what CRFsuite and CRF++ users expect)."""

import itertools

import numpy as np
import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.model import ChainCRF
from fstcrf.corpus.synthetic import DATA_DIR

TRAIN = str(DATA_DIR / "demo_train.txt")
TEST = str(DATA_DIR / "demo_test.txt")


@pytest.fixture
def model_path(demo_chunker):
    return demo_chunker


@pytest.fixture(scope="module")
def short_file(tmp_path_factory):
    """The first three tokens of the test file's first two sentences, as a CoNLL file."""
    corpus = read_conll(TEST)
    path = tmp_path_factory.mktemp("tag_options") / "short.txt"
    lines = []
    for sentence in corpus.sentences[:2]:
        lines += [" ".join(fields) for fields in zip(*(values[:3] for values in sentence.columns.values()))]
        lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


def iob2_valid(labels: list[str]) -> bool:
    """True if every I-X follows B-X or I-X."""
    return all(
        not label.startswith("I-") or previous[2:] == label[2:] and previous != "O"
        for previous, label in zip(["O"] + labels, labels)
    )


def brute_force(model, sentence, accepted=lambda labels: True) -> list[tuple[float, list[str]]]:
    """Every label sequence of a sentence that ``accepted`` keeps, with its probability
    among those, most probable first."""
    pot = model.potentials([sentence])
    topology = pot.topology
    paths = [np.array(states) for states in itertools.product(range(topology.num_states), repeat=len(sentence))]
    scores = np.array(
        [
            pot.score(states)[0] if accepted([topology.labels[topology.state_label[s]] for s in states]) else -np.inf
            for states in paths
        ]
    )
    log_z = np.logaddexp.reduce(scores)
    ranked = sorted(
        (
            (float(np.exp(score - log_z)), [topology.labels[topology.state_label[s]] for s in states])
            for score, states in zip(scores, paths)
            if np.isfinite(score)
        ),
        key=lambda pair: -pair[0],
    )
    return ranked


def test_nbest_probabilities_are_exact_and_rank_one_is_the_best(model_path, short_file, tmp_path):
    k = 4
    out = tmp_path / "nbest.txt"
    assert main(["-q", "tag", str(model_path), str(short_file), "--nbest", str(k), "-o", str(out)]) == 0
    names = ["word", "pos", "chunk"] + [f"label{r}" for r in range(k)] + [f"prob{r}" for r in range(k)]
    tagged = read_conll(out, columns=names)
    best = tmp_path / "best.txt"
    assert main(["-q", "tag", str(model_path), str(short_file), "-o", str(best)]) == 0
    predicted = read_conll(best, columns="word,pos,chunk,predicted").column("predicted")
    model = ChainCRF.load(model_path)
    for sentence, one_best in zip(tagged.sentences, predicted):
        probabilities = [float(sentence[f"prob{r}"][0]) for r in range(k)]
        assert all(len(set(sentence[f"prob{r}"])) == 1 for r in range(k))
        assert probabilities == sorted(probabilities, reverse=True)
        assert sum(probabilities) <= 1 + 1e-5
        assert sentence["label0"] == one_best
        expected = brute_force(model, Sentence({"word": sentence["word"], "pos": sentence["pos"]}))
        assert probabilities == pytest.approx([p for p, _ in expected[:k]], rel=1e-5)
        assert [sentence[f"label{r}"] for r in range(k)] == [labels for _, labels in expected[:k]]


@pytest.mark.pynini
def test_nbest_of_a_model_trained_under_a_grammar_ranks_only_accepted_sequences(short_file, tmp_path):
    path = tmp_path / "iob2.model"
    assert main(["-q", "train", TRAIN, "-o", str(path), "--max-iter", "3", "--grammar", "iob2"]) == 0
    k = 5
    out = tmp_path / "nbest.txt"
    assert main(["-q", "tag", str(path), str(short_file), "--nbest", str(k), "-o", str(out)]) == 0
    names = ["word", "pos", "chunk"] + [f"label{r}" for r in range(k)] + [f"prob{r}" for r in range(k)]
    model = ChainCRF.load(path)
    for sentence in read_conll(out, columns=names).sentences:
        expected = brute_force(model, Sentence({"word": sentence["word"], "pos": sentence["pos"]}), iob2_valid)
        assert [sentence[f"label{r}"] for r in range(k)] == [labels for _, labels in expected[:k]]
        assert [float(sentence[f"prob{r}"][0]) for r in range(k)] == pytest.approx(
            [p for p, _ in expected[:k]], rel=1e-5
        )


def test_nbest_marks_ranks_beyond_the_sequences_of_a_sentence(model_path, tmp_path):
    one_token = tmp_path / "one.txt"
    one_token.write_text("the DT\n\n")
    model = ChainCRF.load(model_path)
    k = len(model.labels_) + 2
    out = tmp_path / "nbest.txt"
    assert main(["-q", "tag", str(model_path), str(one_token), "--nbest", str(k), "-o", str(out)]) == 0
    fields = out.read_text().split()
    labels, probabilities = fields[2 : 2 + k], [float(value) for value in fields[2 + k :]]
    assert labels[-2:] == ["_", "_"] and "_" not in labels[:-2]
    assert probabilities[-2:] == [0.0, 0.0]
    assert sum(probabilities) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.pynini
def test_nbest_is_refused_with_a_grammar_or_a_sample_and_needs_k_of_one_or_more(model_path, capsys):
    for extra in (["--grammar", "iob2"], ["--sample", "2"]):
        assert main(["-q", "tag", str(model_path), TEST, "--nbest", "2", *extra]) == 2
        error = capsys.readouterr().err
        assert "--nbest" in error and error.count("\n") == 1 and "Traceback" not in error
    with pytest.raises(SystemExit):
        main(["-q", "tag", str(model_path), TEST, "--nbest", "0"])
    assert "--nbest" in capsys.readouterr().err


def test_marginals_column_holds_the_predicted_labels_marginal(model_path, tmp_path):
    out = tmp_path / "marginals.txt"
    assert main(["-q", "tag", str(model_path), TEST, "--marginals", "-o", str(out)]) == 0
    tagged = read_conll(out, columns="word,pos,chunk,predicted,marginal")
    model = ChainCRF.load(model_path)
    marginals = model.predict_marginals(read_conll(TEST))
    index = {label: number for number, label in enumerate(model.labels_)}
    for sentence, table in zip(tagged.sentences, marginals):
        values = [float(value) for value in sentence["marginal"]]
        assert all(0.0 <= value <= 1.0 for value in values)
        assert all(len(text.partition(".")[2]) == 4 for text in sentence["marginal"])
        expected = [table[t, index[label]] for t, label in enumerate(sentence["predicted"])]
        assert values == pytest.approx(expected, abs=5e-5)


def test_tab_separated_tokens_with_spaces_round_trip(model_path, tmp_path):
    source = tmp_path / "tabs.txt"
    source.write_text("New York\tNNP\tB-NP\ncity\tNN\tI-NP\n\nthe\tDT\tB-NP\n\n")
    out = tmp_path / "tagged.txt"
    assert main(["-q", "tag", str(model_path), str(source), "--separator", "\\t", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].split("\t")[:3] == ["New York", "NNP", "B-NP"] and len(lines[0].split("\t")) == 4
    tagged = read_conll(out, columns="word,pos,chunk,predicted", separator="\t")
    assert tagged.column("word") == [["New York", "city"], ["the"]]


def test_columns_names_another_layout_and_a_missing_column_is_an_error(model_path, tmp_path, capsys):
    corpus = read_conll(TEST)
    reordered = tmp_path / "reordered.txt"
    reordered.write_text(
        "".join(
            "".join(f"{pos} {word}\n" for word, pos in zip(s["word"], s["pos"])) + "\n" for s in corpus.sentences[:20]
        )
    )
    out, expected = tmp_path / "tagged.txt", tmp_path / "expected.txt"
    assert main(["-q", "tag", str(model_path), str(reordered), "--columns", "pos,word", "-o", str(out)]) == 0
    assert main(["-q", "tag", str(model_path), TEST, "-o", str(expected)]) == 0
    predicted = read_conll(out, columns="pos,word,predicted").column("predicted")
    assert predicted == read_conll(expected, columns="word,pos,chunk,predicted").column("predicted")[:20]
    assert main(["-q", "tag", str(model_path), str(reordered), "--columns", "pos,token"]) == 2
    error = capsys.readouterr().err
    assert "--columns pos,token does not name word" in error and error.count("\n") == 1
