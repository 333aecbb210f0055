"""fstcrf dump and fstcrf info: the largest weights really are the largest, --label
filters, and info's numbers are the model's."""

import os
import re

import numpy as np
import pytest

from fstcrf import cli
from fstcrf.model.compose import load_any
from fstcrf.errors import FstcrfError
from fstcrf.model.inspection import dump_text, info_text, state_weights, transition_weights
from fstcrf.model import load_model
from fstcrf.corpus.synthetic import DATA_DIR

TRAIN = DATA_DIR / "demo_train.txt"


@pytest.fixture(params=["demo_chunker", "demo_order2_chunker"], ids=["order1", "order2"])
def model_path(request):
    return str(request.getfixturevalue(request.param))


def run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    status = cli.main(["-q", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def sections(text: str) -> dict[str, list[list[str]]]:
    """The weight tables of a dump, by title ("state features positive", ...): rows of
    cells split on two or more spaces, header row dropped."""
    tables, title = {}, None
    for line in text.splitlines():
        if not line.startswith(" "):
            heading = re.match(r"(.+): the \d+ largest (\w+) of", line)
            title = heading and f"{heading[1]} {heading[2]}"
            if title:
                tables[title] = []
        elif title:
            tables[title].append(re.split(r"\s{2,}", line.strip()))
    return {name: rows[1:] for name, rows in tables.items()}


def info_fields(text: str) -> dict[str, str]:
    """The (field, value) lines of an info text, by field."""
    pairs = [re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in text.splitlines()]
    return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}


def test_dump_lists_the_largest_state_and_transition_weights(model_path, capsys):
    model = load_model(model_path)
    status, out, _ = run(capsys, "dump", model_path, "--top", "7")
    assert status == 0
    assert out.startswith(f"labels ({len(model.labels_)}): {' '.join(model.labels_)}\n")
    assert f"topology: {model.topology_.name}, {model.topology_.num_states} states" in out
    assert "\n  pos[-1]|pos[0]\n" in out  # the template
    tables = sections(out)
    F = model.features_.num_features
    state = np.sort(model.weights_[:F])
    assert [float(row[-1]) for row in tables["state features positive"]] == pytest.approx(state[::-1][:7], abs=1e-6)
    assert [float(row[-1]) for row in tables["state features negative"]] == pytest.approx(state[:7], abs=1e-6)
    edges = np.sort(model.weights_[F:])
    assert [float(row[-1]) for row in tables["transitions positive"]] == pytest.approx(edges[::-1][:7], abs=1e-6)
    # each listed transition names its states and carries that edge's weight
    topology = model.topology_
    by_names = {
        (topology.state_names[s], topology.state_names[d]): model.weights_[F + e]
        for e, (s, d) in enumerate(zip(topology.edge_src, topology.edge_dst))
    }
    for source, target, weight in tables["transitions positive"] + tables["transitions negative"]:
        assert by_names[source, target] == pytest.approx(float(weight), abs=1e-6)


def test_state_weights_pair_each_weight_with_its_predicate_and_output(model_path):
    model = load_model(model_path)
    weights = state_weights(model)
    features = model.features_
    f = int(np.argmax(np.abs(model.weights_[: features.num_features])))
    predicate = int(np.searchsorted(features.ptr, f, side="right") - 1)
    assert weights.keys[f][0] == model.extractor_.predicate_names_[predicate]
    assert weights.values[f] == model.weights_[f]
    assert len(transition_weights(model).values) == model.topology_.num_edges


def test_label_keeps_only_that_label(model_path, capsys):
    model = load_model(model_path)
    status, out, _ = run(capsys, "dump", model_path, "--label", "B-PP", "--top", "50")
    assert status == 0
    topology = model.topology_
    label_of = {name: model.labels_[topology.state_label[s]] for s, name in enumerate(topology.state_names)}
    label_of.update({label: label for label in model.labels_})
    tables = sections(out)
    outputs = [row[1] for name in ("state features positive", "state features negative") for row in tables[name]]
    assert outputs and {label_of[output] for output in outputs} == {"B-PP"}
    edges = [row[:2] for name in ("transitions positive", "transitions negative") for row in tables[name]]
    assert edges and all("B-PP" in (label_of[a], label_of[b]) for a, b in edges)
    kept = state_weights(model, "B-PP")
    assert 0 < len(kept.values) < model.features_.num_features
    with pytest.raises(FstcrfError, match="no label 'X'"):
        dump_text(model, label="X")


def test_info_gives_the_models_numbers(model_path, capsys):
    model = load_model(model_path)
    status, out, _ = run(capsys, "info", model_path)
    assert status == 0
    fields = info_fields(out)
    assert out.startswith(f"file size: {os.path.getsize(model_path)} bytes\n")
    assert fields["labels"] == str(len(model.labels_))
    assert fields["states"] == str(model.topology_.num_states)
    assert fields["edges"] == str(model.topology_.num_edges)
    assert fields["predicates"] == str(len(model.extractor_.predicate_names_))
    assert fields["features"] == str(model.features_.num_features)
    assert fields["weights"] == str(len(model.weights_))
    assert fields["non-zero weights"] == str(np.count_nonzero(model.weights_))
    assert fields["order"] == str(model.order) and fields["algorithm"] == "lbfgs"
    assert fields["template"] == "chunking-extended" and fields["max_iter"] == "5"
    assert fields["iterations"] == str(model.n_iter_) == "5"
    assert fields["kept iteration"] == str(model.best_iteration_)
    assert float(fields["final objective"]) == pytest.approx(model.history_[-1]["objective"], rel=1e-5)
    assert fields["interrupted"] == "no" and fields["best dev score"] == "none"


def test_info_of_a_custom_template_and_a_dev_set(tmp_path):
    from fstcrf.corpus.conll import read_conll
    from fstcrf.model import ChainCRF

    corpus = read_conll(TRAIN)
    model = ChainCRF(template="bias\nword[0]\npos[0]", max_iter=3).fit(corpus[:150], dev=corpus[150:200])
    fields = info_fields(info_text(model))
    assert fields["template"] == "custom" and "file size" not in fields
    best = max(record["dev_score"] for record in model.history_)
    assert fields["best dev score"].startswith(f"{best:.2f} F1")


@pytest.fixture
def joint_path(demo_joint):
    return str(demo_joint)


def test_info_of_a_composition_lists_its_components(joint_path, capsys):
    joint = load_any(joint_path)
    status, out, _ = run(capsys, "info", joint_path)
    assert status == 0
    assert "composition of 2 models, lowest first: pos -> chunk" in out
    assert "component 0 (scale 1)" in out and "component 1 (scale 1" in out
    weights = [line.split()[-1] for line in out.splitlines() if line.strip().startswith("weights ")]
    assert weights == [str(len(component.weights_)) for component in joint.components]
    assert "  reads             pos" in out


def test_dump_of_a_composition_or_a_non_model_is_a_one_line_error(joint_path, tmp_path, capsys):
    status, out, err = run(capsys, "dump", joint_path)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "component" in err and "Traceback" not in err
    text = tmp_path / "notes.txt"
    text.write_text("not a model\n")
    for command in ("dump", "info"):
        status, out, err = run(capsys, command, str(text))
        assert status == 2 and err.count("\n") == 1 and "not an fstcrf model file" in err


def test_dump_reads_the_transitions_that_depend_on_lower_labels(tmp_path):
    from fstcrf.corpus.conll import read_conll
    from fstcrf.model import ChainCRF

    corpus = read_conll(TRAIN)[:120]
    model = ChainCRF(template="bias\nword[0]\npos[0]", reads="pos", max_iter=3).fit(corpus)
    weights = transition_weights(model)
    E = model.topology_.num_edges
    assert (
        len(weights.values) == E * (1 + len(model.lower_labels_)) == len(model.weights_) - model.features_.num_features
    )
    assert {key[2] for key in weights.keys} == {"*", *model.lower_labels_}
    assert "  from" in dump_text(model) and "lower" in dump_text(model, top=1)
