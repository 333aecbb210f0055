"""The joint-training experiments: CoNLL-2000 POS x chunk on a slice, and the seminar
transfer task with the NER labels latent on hand-made announcements."""

from __future__ import annotations

import json

import pytest

from fstcrf.experiments import joint_training, latent_transfer, transfer
from seminar_data import announcement_documents, newswire_ner


@pytest.mark.slow
def test_the_conll2000_experiment_scores_three_systems_per_size(data_dir, tmp_path, capsys):
    out = tmp_path / "curve.json"
    code = joint_training.main(
        ["--data", str(data_dir), "--sizes", "60", "--dev-sentences", "30", "--test-sentences", "40"]
        + ["--max-iter", "2", "--json", str(out)]
    )
    assert code == 0
    result = json.loads(out.read_text())["60"]
    assert result["sentences"] == 60 and result["joint_iterations"] == 2
    for side in ("cascade", "joint_decoding", "joint_training"):
        assert 0 < result[side]["chunk_f1"] <= 100 and 0 < result[side]["pos_accuracy"] <= 100
    assert 0 <= result["joint_training"]["p_vs_cascade"] <= 1
    assert "| 60 |" in capsys.readouterr().out


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    return announcement_documents(tmp_path_factory.mktemp("seminars"))


@pytest.fixture(scope="module")
def ner():
    return newswire_ner()


def test_the_latent_transfer_split_trains_without_the_ner_labels(ner, documents, monkeypatch):
    reading = transfer.with_ner(documents, ner)
    assert all("ner" not in sentence.column_names for sentence in latent_transfer.without_ner(reading))
    seen = []
    original = latent_transfer.compose

    def recording(models, **options):
        joint = original(models, **options)
        fit = joint.fit

        def spy(corpus, *args, **kwargs):
            seen.append([sentence.column_names for sentence in corpus])
            return fit(corpus, *args, **kwargs)

        joint.fit = spy
        return joint

    monkeypatch.setattr(latent_transfer, "compose", recording)
    result = latent_transfer.run_split(ner, reading, transfer.Split("tiny", (0, 1, 2), (3,)), 1.0, 2, threads=1)
    assert set(result.f1) == {"cascade", "joint", "joint training"}
    assert seen and all("ner" not in names for names in seen[0])
    assert all(0 <= value <= 100 for scores in result.f1.values() for value in scores.values())
