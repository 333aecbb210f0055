"""The transfer experiment: splits, the composed NER x seminar model against brute
force and the dense cross product, the analysis helpers and the bench's JSON."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from fstcrf.model.compose import compose
from fstcrf.corpus.conll import Sentence
from fstcrf.errors import FstcrfError
from fstcrf.engine.inference import viterbi
from fstcrf.model import ChainCRF
from fstcrf.bench import transfer as bench_transfer
from fstcrf.experiments import transfer
from seminar_data import NEWSWIRE, announcement_documents, newswire_ner


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    return announcement_documents(tmp_path_factory.mktemp("seminars"))


@pytest.fixture(scope="module")
def ner():
    return newswire_ner()


@pytest.fixture(scope="module")
def reading_documents(ner, documents):
    return transfer.with_ner(documents, ner)


@pytest.fixture(scope="module")
def reader(reading_documents):
    return transfer.train_seminar(reading_documents, reads_ner=True, threads=1)


def _score(model: ChainCRF, sentence: Sentence, labels) -> float:
    index = {label: i for i, label in enumerate(model.labels_)}
    return float(model.potentials([sentence]).score(np.array([index[label] for label in labels]))[0])


@pytest.mark.parametrize("ner_scale", [1.0, 0.2])  # at 0.2 the NER labels of 5 sentences change
def test_joint_decoding_maximises_the_summed_score_by_enumeration(ner, reader, documents, ner_scale):
    """Every NER label sequence of sentences of up to 3 tokens, each with its best
    field labels (chain Viterbi of the reading model given those NER labels)."""
    joint = compose([ner, reader], threads=1, scales=[ner_scale, 1.0])
    short = [sentence for document in documents for sentence in document if len(sentence) <= 3]
    assert len(short) >= 4
    ner_labels, field_labels = joint.predict(short, mode="joint")
    for sentence, ner_best, field_best in zip(short, ner_labels, field_labels):
        every = list(itertools.product(ner.labels_, repeat=len(sentence)))
        index = {label: i for i, label in enumerate(ner.labels_)}
        lower = ner.potentials([sentence]).path_scores(np.array([[index[tag] for tag in tags] for tags in every]))
        upper = viterbi(reader.potentials([sentence.with_column("ner", list(tags)) for tags in every]))
        totals = ner_scale * lower[:, 0] + upper.scores  # [every NER sequence]
        best = int(np.argmax(totals))
        fields = np.array(reader.topology_.labels)[reader.topology_.state_label[upper.paths]].tolist()
        found = ner_scale * _score(ner, sentence, ner_best) + _score(
            reader, sentence.with_column("ner", ner_best), field_best
        )
        assert found == pytest.approx(totals[best], abs=1e-8)
        assert np.sum(totals > totals[best] - 1e-9) == 1  # a unique optimum
        assert (ner_best, field_best) == (list(every[best]), fields[best * len(sentence) : (best + 1) * len(sentence)])


def test_joint_decoding_equals_viterbi_over_the_dense_cross_product(ner, reader, documents):
    joint = compose([ner, reader], threads=1, scales=[0.5, 1.0])
    sentences = [sentence for document in documents for sentence in document]
    jp = joint.potentials(sentences)
    dense = viterbi(jp.to_product())
    states = joint.space.component_states(dense.paths)
    offsets = np.cumsum([0] + [len(sentence) for sentence in sentences])
    expected = [
        [
            np.array(model.topology_.labels)[model.topology_.state_label[states[first:last, k]]].tolist()
            for first, last in zip(offsets[:-1], offsets[1:])
        ]
        for k, model in enumerate(joint.components)
    ]
    assert joint.predict(sentences, mode="joint") == expected
    decoded = transfer.decode_joint(joint, documents, "joint")
    assert [tags for document in decoded.fields for tags in document] == expected[1]
    assert [tags for document in decoded.ner for tags in document] == expected[0]


def test_the_cascade_reads_the_ner_models_one_best(ner, reader, documents, reading_documents):
    decoded = transfer.decode_joint(compose([ner, reader], threads=1), documents, "cascade")
    assert decoded.ner == transfer.column(reading_documents, "ner")
    assert decoded.fields == [
        [reader.predict([sentence])[0] for sentence in document] for document in reading_documents
    ]


def test_ner_samples_repeat_each_document_with_drawn_labels(ner, documents):
    copies = transfer.with_ner_samples(documents, ner, 3, seed=1)
    assert len(copies) == 3 * len(documents)
    assert copies == transfer.with_ner_samples(documents, ner, 3, seed=1)
    for k in range(3):
        block = copies[k * len(documents) : (k + 1) * len(documents)]
        assert transfer.column(block, "word") == transfer.column(documents, "word")
        assert transfer.column(block, "field") == transfer.column(documents, "field")
    drawn = {tag for document in copies for sentence in document for tag in sentence["ner"]}
    assert drawn <= set(ner.labels_) and len(drawn) > 1


def test_timed_decodings_keep_the_labels_of_each_mode(ner, reader, documents):
    joint = compose([ner, reader], threads=1, scales=[0.5, 1.0])
    timed = transfer.timed_decodings(joint, documents)
    for mode in ("cascade", "joint"):
        assert timed[mode].fields == transfer.decode_joint(joint, documents, mode).fields
        assert timed[mode].seconds > 0


def _write_conll2003(folder: Path, extra: str = "") -> None:
    """Tiny eng.train / testa / testb files (IOB1 NER tags, as CoNLL-2003 has)."""
    lines = [
        f"{word} NNP I-NP {tag}"
        for words, tags in NEWSWIRE
        for word, tag in zip(words.split(), tags.replace("B-", "I-").split())
    ]
    text = "-DOCSTART- -X- O O\n\n" + "\n".join(lines) + "\n" + extra
    for name in ("eng.train", "eng.testa", "eng.testb"):
        (folder / name).write_text(text)


def test_the_ner_model_is_cached_by_its_data(tmp_path, monkeypatch):
    monkeypatch.setitem(transfer.NER_SETTINGS, "max_iter", 10)
    data, cache = tmp_path / "conll2003", tmp_path / "cache"
    data.mkdir()
    _write_conll2003(data)
    first = transfer.ner_model(data, cache, threads=1)
    again = transfer.ner_model(data, cache, threads=1)
    assert (first.cached, again.cached) == (False, True)
    np.testing.assert_array_equal(first.model.weights_, again.model.weights_)
    assert (again.dev_f1, again.test_f1) == (first.dev_f1, first.test_f1)
    assert set(first.model.labels_) == {"B-PER", "I-PER", "B-ORG", "B-LOC", "I-LOC", "O"}  # read as IOB2
    _write_conll2003(data, extra="\nIntel NNP I-NP I-ORG\n")
    assert not transfer.ner_model(data, cache, threads=1).cached
    assert len(list(cache.glob("*.model"))) == 2


def test_a_missing_conll_file_is_named(tmp_path):
    with pytest.raises(FstcrfError, match="eng.train"):
        transfer.ner_model(tmp_path, tmp_path / "cache")


def test_run_split_scores_the_three_systems(ner, reading_documents):
    split = transfer.Split("tiny", (0, 1, 2), (3,))
    result = transfer.run_split(ner, reading_documents, split, threads=1)
    assert set(result.dev_f1) == set(transfer.NER_SCALES) and result.ner_scale in transfer.NER_SCALES
    assert set(result.f1) == set(result.token_f1) == set(transfer.SYSTEMS)
    for system in transfer.SYSTEMS:
        assert set(result.f1[system]) == set(transfer.SCORE_FIELDS)
        assert all(0 <= value <= 100 for value in result.f1[system].values())
    assert result.headers.header_totals == {"speaker:": 1, "host:": 1, "dates:": 1, "time:": 1, "place:": 1}
    assert 0 <= result.mcnemar_p <= 1


def test_random_splits_are_seeded_halves_that_cover_every_document():
    splits = transfer.random_splits(485, 10, seed=3)
    assert splits == transfer.random_splits(485, 10, seed=3)
    assert splits[:4] == transfer.random_splits(485, 4, seed=3)
    assert splits != transfer.random_splits(485, 10, seed=4)
    assert len({split.train for split in splits}) == 10
    for split in splits:
        assert (len(split.train), len(split.test)) == (242, 243)
        assert sorted(split.train + split.test) == list(range(485))


def test_the_dev_side_cuts_the_training_side_only():
    split = transfer.random_splits(485, 1)[0]
    side = transfer.dev_side(split)
    assert sorted(side.train + side.test) == sorted(split.train)
    assert len(side.test) == round(0.25 * len(split.train))
    assert side == transfer.dev_side(split)


def test_the_upstream_split_follows_the_folders():
    paths = [Path("data/training/0.txt"), Path("data/test/1.txt"), Path("data/training/2.txt")]
    assert transfer.upstream_split(paths) == transfer.Split("upstream", (0, 2), (1,))


def test_header_counts_on_a_hand_made_case():
    words = [[["Host:", "Bob", "Green"], ["Who:", "Ann"], ["talk", "by", "Ann"]]]
    gold = [[["O", "O", "O"], ["O", "B-speaker"], ["O", "O", "B-speaker"]]]
    cascade = [[["B-PER", "I-PER", "I-PER"], ["O", "B-PER"], ["O", "O", "B-ORG"]]]
    joint = [[["O", "B-PER", "I-PER"], ["O", "B-PER"], ["O", "O", "B-PER"]]]
    counts = transfer.header_counts(words, gold, cascade, joint)
    assert counts.tokens == 2
    assert counts.entity == {"cascade": 1}
    assert counts.by_word["cascade"] == {"host:": 1} and not counts.by_word["joint"]
    assert (counts.changed, counts.changed_in_field) == (3, 1)
    doubled = counts.add(counts)
    assert (doubled.tokens, doubled.entity["cascade"], doubled.changed) == (4, 2, 6)


def _result(name: str, joint_speaker: float, scale: float = 1.0) -> transfer.SplitResult:
    f1 = {system: {field: 80.0 for field in transfer.SCORE_FIELDS} for system in transfer.SYSTEMS}
    f1["joint"]["speaker"] = joint_speaker
    return transfer.SplitResult(name, f1, f1, 1.0, {"cascade": 1.0, "joint": 2.0}, scale, {}, transfer.HeaderCounts())


def test_paired_tests_count_wins_and_losses():
    results = [_result("a", 82.0), _result("b", 83.0), _result("c", 79.0), _result("d", 84.0)]
    tests = transfer.paired_tests(results, "joint", "cascade")
    speaker = tests["speaker"]
    assert (speaker.wins, speaker.losses) == (3, 1)
    assert speaker.mean_difference == pytest.approx(2.0)
    assert speaker.sign_p == pytest.approx(0.625)
    assert 0 < speaker.t_p < 1
    assert tests["location"].wins == tests["location"].losses == 0
    assert tests["location"].t_p == tests["location"].sign_p == 1.0


def test_transfer_json_has_the_issues_shape():
    results = bench_transfer.TransferResults(
        ner=transfer.NerModel(None, 90.0, 85.0, cached=True),
        splits=[_result("a", 82.0), _result("b", 84.0)],
        upstream=_result("upstream", 81.0),
        seed=0,
        seconds=1.0,
    )
    payload = bench_transfer.transfer_json(results)
    assert json.loads(json.dumps(payload)) == payload
    assert set(payload) == {"speaker", "location", "stime", "etime", "overall"}
    for field, row in payload.items():
        assert set(row) == {"none", "cascade", "joint"}
        assert all(isinstance(value, float) for value in row.values())
    assert payload["speaker"]["joint"] == pytest.approx(83.0)
    assert payload["overall"]["cascade"] == pytest.approx(80.0)
    text = bench_transfer.format_transfer(results)
    assert "speaker" in text and "joint" in text and "p" in text


@pytest.mark.slow
def test_the_splits_cover_the_485_announcements(data_dir):
    folder = data_dir / "seminars"
    if not folder.is_dir():
        pytest.fail(f"{folder} is missing")
    documents, paths = transfer.seminar_documents(folder)
    assert len(documents) == 485
    upstream = transfer.upstream_split(paths)
    assert (len(upstream.train), len(upstream.test)) == (301, 184)
    for split in transfer.random_splits(len(documents), 10):
        assert sorted(split.train + split.test) == list(range(485))
