"""The default template of ``fstcrf train`` by target and columns, and its sigma."""

import pytest

from fstcrf.cli import main
from fstcrf.features.defaults import (
    TEMPLATE_FEATURE_SETS,
    TEMPLATE_SIGMAS,
    default_template,
    template_feature_set,
    template_sigma,
)
from fstcrf.errors import TemplateError
from fstcrf.features.seen_entities import COLUMN
from fstcrf.model import TEMPLATES, load_model
from fstcrf.model.inspection import info_text


@pytest.mark.parametrize(
    "target, columns, expected",
    [
        ("chunk", ("word", "pos", "chunk"), "chunking-extended"),
        ("pos", ("word", "pos"), "pos"),
        ("ner", ("word", "pos", "chunk", "ner"), "ner-rich"),
        ("ner", ("word", "pos", "ner"), "ner-pos-rich"),
        ("ner", ("word", "ner"), "words-rich"),
        ("label", ("word", "pos", "chunk", "label"), "ner"),
        ("label", ("word", "pos", "label"), "ner-pos"),
        ("chunk", ("word", "chunk"), "words"),
        ("label", ("word", "label"), "words"),
    ],
)
def test_the_default_follows_the_target_and_the_columns(target, columns, expected):
    assert default_template(target, columns) == expected
    assert expected in TEMPLATES
    # the file's columns, and the column derived from the target's labels
    assert set(TEMPLATES[expected].columns) - {COLUMN} <= set(columns) - {target}


def test_files_without_a_word_column_need_a_template():
    with pytest.raises(TemplateError, match="--template"):
        default_template("ner", ("token", "ner"))


def test_train_without_template_uses_the_default_of_its_columns(tmp_path, caplog):
    train = tmp_path / "train.txt"
    train.write_text("John NNP B-NP B-PER\nruns VBZ B-VP O\n\nMary NNP B-NP B-PER\nsleeps VBZ B-VP O\n\n")
    model_path = tmp_path / "ner.model"
    with caplog.at_level("INFO", logger="fstcrf"):
        assert (
            main(
                [
                    "train",
                    str(train),
                    "--columns",
                    "word,pos,chunk,ner",
                    "--target",
                    "ner",
                    "--max-iter",
                    "2",
                    "-o",
                    str(model_path),
                ]
            )
            == 0
        )
    assert "template ner-rich, the default for target ner" in caplog.text
    model = load_model(model_path)
    assert model.extractor_.parsed_template().text == TEMPLATES["ner-rich"].text
    assert model.sigma == TEMPLATE_SIGMAS["ner-rich"]
    assert model.features == "complete-if-fits"
    assert "feature set       complete-if-fits (complete)" in info_text(model, str(model_path))
    # every (predicate, label) pair of the bias-free predicates, 3 labels: B-PER, O and the unseen start
    num_labels = len(model.topology_.labels)
    assert model.features_.num_features == model.extractor_.num_predicates * num_labels


def test_the_rich_templates_nest_and_carry_their_sigma():
    lines = {name: set(TEMPLATES[name].text.splitlines()) for name in ("ner-rich", "ner-pos-rich", "words-rich")}
    assert lines["words-rich"] < lines["ner-pos-rich"] < lines["ner-rich"]
    assert not any("chunk[" in line for line in lines["ner-pos-rich"])
    assert set(TEMPLATES["words-rich"].columns) == {"word", COLUMN}  # and the derived column
    for name, sigma in TEMPLATE_SIGMAS.items():
        assert template_sigma(name, 10.0) == sigma
    assert template_sigma("ner", 10.0) == 10.0
    assert template_sigma(TEMPLATES["ner-rich"], 7.0) == 7.0  # a Template object: the default


def test_the_rich_ner_templates_train_the_complete_set_with_lbfgs_only():
    assert set(TEMPLATE_FEATURE_SETS) == {"ner-rich", "ner-pos-rich", "words-rich"}
    assert set(TEMPLATE_FEATURE_SETS.values()) == {"complete-if-fits"}
    assert template_feature_set("ner-rich", "lbfgs") == "complete-if-fits"
    assert template_feature_set("ner-rich", "ap") is None  # other learners keep their default
    assert template_feature_set("ner", "lbfgs") is None
    assert template_feature_set(TEMPLATES["ner-rich"], "lbfgs") is None  # a Template object


def test_the_complete_set_if_it_fits_falls_back_to_the_supported_one(monkeypatch, caplog):
    import fstcrf.features.encoding as encoding
    from fstcrf.engine.topology import first_order

    topology = first_order(["B-PER", "I-PER", "O"])
    assert encoding.feature_set_to_build("complete-if-fits", 1000, topology, 1) == "complete"
    assert encoding.feature_set_to_build("supported", 10**9, topology, 1) == "supported"
    monkeypatch.setattr(encoding, "MAX_FEATURES", 2999)
    with caplog.at_level("WARNING", logger="fstcrf"):
        assert encoding.feature_set_to_build("complete-if-fits", 1000, topology, 1) == "supported"
    assert "3,000 features, more than 2,999" in caplog.text


@pytest.mark.parametrize("order", [1, 2])
def test_the_complete_set_if_it_fits_builds_the_complete_or_the_supported_dictionary(order, monkeypatch):
    import fstcrf.features.encoding as encoding
    from tests.corpora import chunk_corpus, training_set

    corpus = chunk_corpus(3, 12)

    def dictionary(feature_set):
        features = training_set(corpus, order, feature_set).scorer.features
        return features.ptr.tolist(), features.output.tolist()

    assert dictionary("complete-if-fits") == dictionary("complete")
    monkeypatch.setattr(encoding, "MAX_FEATURES", 10)
    assert dictionary("complete-if-fits") == dictionary("supported")


def test_a_default_ner_training_whose_complete_set_would_not_fit_trains_the_supported_one(
    tmp_path, monkeypatch, caplog
):
    import fstcrf.features.encoding as encoding

    train = tmp_path / "train.txt"
    train.write_text("John NNP B-NP B-PER\nruns VBZ B-VP O\n\nMary NNP B-NP B-PER\nsleeps VBZ B-VP O\n\n")
    monkeypatch.setattr(encoding, "MAX_FEATURES", 10)
    model_path = tmp_path / "ner.model"
    argv = ["train", str(train), "--columns", "word,pos,chunk,ner", "--target", "ner", "--max-iter", "2"]
    with caplog.at_level("WARNING", logger="fstcrf"):
        assert main([*argv, "-o", str(model_path)]) == 0
    assert "training the supported ones" in caplog.text
    model = load_model(model_path)
    assert model.features_.num_features < model.features_.num_predicates * model.features_.num_states
    assert "feature set       complete-if-fits (supported)" in info_text(model, str(model_path))
