"""fstcrf.bench.process and fstcrf.bench.crfsuite: the CRFsuite side builds exactly fstcrf's predicates, and both
whole-process benchmarks run end to end on small data (no timing is asserted)."""

import json
import os
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fstcrf
from fstcrf.bench import crfsuite, harness, process
from fstcrf.bench.crfsuite import read_sentences, template_spec, token_attributes
from fstcrf.bench.process import format_process
from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import parse_template
from fstcrf.model import TEMPLATES
from fstcrf.corpus.synthetic import DATA_DIR

pycrfsuite = pytest.importorskip("pycrfsuite")


def extractor_names(template, sentences) -> list[list[str]]:
    """Per token of ``sentences``, the sorted names of the predicates FeatureExtractor finds true."""
    extractor = FeatureExtractor(template)
    matrix = extractor.fit_transform(sentences)
    names = extractor.predicate_names_
    return [
        sorted(names[j] for j in matrix.indices[matrix.indptr[r] : matrix.indptr[r + 1]])
        for r in range(matrix.shape[0])
    ]


def builder_names(template, sentences) -> list[list[str]]:
    spec = template_spec(template)
    return [sorted(token) for sentence in sentences for token in token_attributes(spec, sentence.columns)]


@pytest.mark.parametrize("name", ["sha-pereira", "crfpp", "pos", "chunking-extended"])
def test_the_attributes_are_the_extractors_predicates_on_the_demo_data(name):
    sentences = read_conll(DATA_DIR / "demo_test.txt").sentences[:40]
    template = TEMPLATES[name]
    built = builder_names(template, sentences)
    assert built == extractor_names(template, sentences)
    assert all(len(token) == len(template) for token in built)  # one predicate per template line


VALUES = st.one_of(
    st.text(alphabet="ab|\\_-+BOSE12XÉé.", min_size=1, max_size=7),
    st.sampled_from(["__BOS-1__", "__EOS+2__", "\\__BOS-1__", "__BOS-__", "__EOS+x__", "__BOS-²__", "|", "\\", "\\|"]),
)
ITEMS = st.builds(
    lambda column, offset, transform: f"{transform}({column}[{offset}])" if transform else f"{column}[{offset}]",
    st.sampled_from(["word", "pos"]),
    st.integers(-3, 3),
    st.sampled_from([None, "lower", "shape", "prefix1", "prefix3", "suffix2"]),
)


@st.composite
def templates(draw):
    lines = ["bias"] if draw(st.booleans()) else []
    lines += [
        "|".join(items)
        for items in draw(st.lists(st.lists(ITEMS, min_size=1, max_size=3, unique=True), min_size=1, max_size=5))
    ]
    return parse_template("\n".join(dict.fromkeys(lines)))


@st.composite
def sentences(draw):
    result = []
    for length in draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)):
        words = draw(st.lists(VALUES, min_size=length, max_size=length))
        tags = draw(st.lists(VALUES, min_size=length, max_size=length))
        result.append(Sentence({"word": words, "pos": tags}))
    return result


@settings(max_examples=30, deadline=None)
@given(templates(), sentences())
def test_the_attributes_match_the_extractor_on_escapes_boundaries_and_transforms(template, corpus):
    assert builder_names(template, corpus) == extractor_names(template, corpus)


def test_the_crfsuite_reader_reads_the_sentences_read_conll_reads(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("-DOCSTART- -X- O\n\nA DT B-NP extra\nb NN I-NP extra\n\n\n-DOCSTART- -X- O\nc VB B-VP extra\n")
    assert read_sentences(str(path), ["word", "pos", "chunk"]) == [
        {"word": ["A", "b"], "pos": ["DT", "NN"], "chunk": ["B-NP", "I-NP"]},
        {"word": ["c"], "pos": ["VB"], "chunk": ["B-VP"]},
    ]
    demo = DATA_DIR / "demo_test.txt"
    assert read_sentences(str(demo), ["word", "pos", "chunk"]) == [s.columns for s in read_conll(demo)]


def test_the_crfsuite_processes_train_and_tag_with_the_extractors_attributes(tmp_path):
    """What the CRFsuite tagging process writes is what pycrfsuite gives for the
    attributes FeatureExtractor names (the way fstcrf.bench feeds CRFsuite)."""
    train = read_conll(DATA_DIR / "demo_train.txt")[:200]
    test = read_conll(DATA_DIR / "demo_test.txt")[:30]
    for name, corpus in (("train.txt", train), ("test.txt", test)):
        (tmp_path / name).write_text(
            "".join(" ".join(fields) + "\n" for s in corpus for fields in [*zip(*s.columns.values()), ()])
        )
    template = TEMPLATES["sha-pereira"]
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps({"columns": ["word", "pos", "chunk"], "target": "chunk", "predicates": template_spec(template)})
    )
    model = tmp_path / "m.crfsuite"
    trained = crfsuite.crfsuite_train(str(spec), str(tmp_path / "train.txt"), str(model), 4, 0.005)
    assert trained["iterations"] == 4 and trained["features"] > 100
    output = tmp_path / "out.txt"
    crfsuite.crfsuite_tag(str(spec), str(model), str(tmp_path / "test.txt"), str(output))
    tagged = read_conll(output, "word,pos,chunk,predicted")
    assert [s.columns["word"] for s in tagged] == test.column("word")

    extractor = FeatureExtractor(template).fit(train)
    matrix = extractor.transform(test)
    names = extractor.predicate_names_
    tagger = pycrfsuite.Tagger()
    tagger.open(str(model))
    row, expected = 0, []
    for sentence in test:
        rows = range(row, row + len(sentence))
        expected.append(
            tagger.tag([[names[j] for j in matrix.indices[matrix.indptr[r] : matrix.indptr[r + 1]]] for r in rows])
        )
        row += len(sentence)
    assert tagged.column("predicted") == expected


def side(wall, phases=None, **extra):
    return {
        "wall": wall,
        "cpu": wall / 2,
        "peak_rss_mib": 100.0 if phases else None,
        "phases": phases or {},
        "walls": [wall],
        **extra,
    }


def test_the_report_shows_the_phases_a_side_timed_and_dashes_for_the_other():
    crfsuite_phases = {
        "load": 0.5,
        "read": 1.0,
        "features": 4.0,
        "decode": 2.0,
        "write": 0.25,
        "process": {
            "start": 0.2,
            "elapsed": 8.0,
            "outside": 0.05,
            "cpu": 7.0,
            "start_cpu": 0.1,
            "cpu_by_phase": {},
            "calls": {},
        },
    }
    result = {
        "kind": "tag",
        "tokens": 1000,
        "copies": 10,
        "model": "m.model",
        "order": 1,
        "template": "sha-pereira",
        "weights": 10,
        "threads": 2,
        "repeats": 1,
        "ratio": 8.1 / 2.0,
        "interpreter_wall": 0.05,
        "load_average": (1.0, 1.0, 1.0),
        "sides": {"fstcrf": side(2.0, f1=90.0), "crfsuite": side(8.1, crfsuite_phases, f1=89.0)},
    }
    table = format_process(result)
    assert (
        "| side | whole process s | CPU s | peak RSS MiB | start | load | read | features | decode | write | "
        "other | exit | test F1 |" in table
    )
    assert "| fstcrf | 2.00 | 1.00 | - | - | - | - | - | - | - | - | - | 90.00 |" in table
    assert "| crfsuite | 8.10 | 4.05 | 100 | 0.20 | 0.50 | 1.00 | 4.00 | 2.00 | 0.25 | 0.05 | 0.10 | 89.00 |" in table
    assert "crfsuite / fstcrf: whole process **4.05x**" in table
    assert "could not be compiled to bytecode first" in table
    assert "compiled to bytecode first, as pip install" in format_process({**result, "bytecode_compiled": True})


def test_the_bytecode_of_every_module_is_compiled_before_timing(monkeypatch):
    import compileall

    compiled = []
    monkeypatch.setattr(compileall, "compile_dir", lambda folder, quiet: compiled.append(folder) or True)
    assert harness.compile_bytecode()
    assert compiled == [os.path.dirname(os.path.abspath(fstcrf.__file__))]  # the whole package


@pytest.fixture
def demo_folder(tmp_path):
    """A CoNLL-2000-like folder (train.txt, test.txt) holding the package's demo data."""
    shutil.copy(DATA_DIR / "demo_train.txt", tmp_path / "train.txt")
    shutil.copy(DATA_DIR / "demo_test.txt", tmp_path / "test.txt")
    return tmp_path


@pytest.mark.slow
def test_bench_tag_process_runs_both_sides_end_to_end(demo_folder):
    result = process.bench_tag_process(demo_folder, copies=2, repeats=2, progress=False, train_iterations=3)
    assert result["tokens"] == 2 * read_conll(demo_folder / "test.txt").num_tokens
    assert result["template"] == "chunking-extended" and result["order"] == 1  # fstcrf train's defaults
    for figures in result["sides"].values():
        assert len(figures["walls"]) == 2 and figures["wall"] == min(figures["walls"])
        assert 0 < figures["cpu"] and 50 < figures["f1"] <= 100
    # each side's own peak memory, not the benchmark's (which holds the model it loaded)
    assert 10 < result["sides"]["crfsuite"]["peak_rss_mib"] < 200
    crfsuite = result["sides"]["crfsuite"]["phases"]
    assert {"load", "read", "features", "decode", "write", "process"} <= set(crfsuite)
    assert result["ratio"] == result["sides"]["crfsuite"]["wall"] / result["sides"]["fstcrf"]["wall"]
    assert list(result["floor"]) == ["copy", "read", "features", "decode", "features | decode", "write"]
    assert all(0 < seconds < result["sides"]["fstcrf"]["wall"] for seconds in result["floor"].values())
    table = format_process(json.loads(json.dumps(result)))
    assert "| crfsuite |" in table and "Each step alone in one process" in table


@pytest.mark.slow
def test_bench_train_process_trains_both_sides_for_the_same_iterations(demo_folder):
    result = process.bench_train_process(demo_folder, iterations=4, progress=False)
    fstcrf, crfsuite = result["sides"]["fstcrf"], result["sides"]["crfsuite"]
    assert fstcrf["iterations"] == crfsuite["iterations"] == 4
    assert result["template"] == "chunking-extended" and result["sigma"] == 10
    assert {"read", "features", "train", "process"} <= set(crfsuite["phases"])
    assert abs(fstcrf["f1"] - crfsuite["f1"]) < 5  # the same model, optimised by two implementations
    assert "| fstcrf |" in format_process(json.loads(json.dumps(result)))


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_counts_must_be_whole_numbers_of_at_least_one(tmp_path, bad):
    from fstcrf.errors import FstcrfError

    with pytest.raises(FstcrfError, match="copies must be a positive (finite )?integer"):
        process.bench_tag_process(tmp_path, copies=bad, progress=False)
    with pytest.raises(FstcrfError, match="repeats must be a positive (finite )?integer"):
        process.bench_train_process(tmp_path, repeats=bad, progress=False)


@pytest.mark.slow
def test_bench_compose_process_times_cascade_and_joint_tagging_processes(tmp_path):
    from fstcrf.model.compose import compose
    from fstcrf.model import ChainCRF

    train = read_conll(DATA_DIR / "demo_train.txt")
    pos = ChainCRF(template="pos", max_iter=3).fit(train, target="pos")
    chunk = ChainCRF(template="chunking-reads-pos", reads="pos", max_iter=3).fit(train, target="chunk")
    joint_path = tmp_path / "joint.model"
    compose([pos, chunk]).save(joint_path)
    result = process.bench_compose_process(joint_path, DATA_DIR / "demo_test.txt", threads=1, repeats=2, progress=False)
    assert result["tokens"] == read_conll(DATA_DIR / "demo_test.txt").num_tokens
    assert result["joint_states"] == len(pos.labels_) * len(chunk.labels_)
    for figures in result["sides"].values():
        assert len(figures["walls"]) == 2 and {"load", "read", "decode", "write"} <= set(figures["phases"])
    assert result["ratio"] == result["sides"]["joint"]["wall"] / result["sides"]["cascade"]["wall"]
    table = format_process(json.loads(json.dumps(result)))
    assert "| joint |" in table and "joint / cascade: whole process" in table


@pytest.mark.slow
def test_bench_stream_process_feeds_whole_sentences_and_reads_every_tagged_token(demo_folder):
    text = (demo_folder / "test.txt").read_bytes()
    budget = int(2.5 * len(text))  # two copies and the sentences of a third that fit
    result = process.bench_stream_process(demo_folder, gigabytes=budget / 1e9, progress=False, train_iterations=2)
    fed = text.rstrip(b"\n") + b"\n\n"
    assert 2 * len(fed) < result["input_bytes"] <= budget
    assert result["tokens"] == 2 * read_conll(demo_folder / "test.txt").num_tokens + len(
        [line for line in fed[: result["input_bytes"] - 2 * len(fed)].splitlines() if line.strip()]
    )
    # the output has one more column: more bytes than the input actually fed, whose
    # last copy stopped at a sentence boundary (else tag would have failed)
    assert result["output_bytes"] > 2 * len(fed)
    assert 0 < result["first_output"] <= result["wall"] and result["peak_rss_mib"] > 10
    assert result["resident_mib"]["samples"] >= 1
    # the main thread waits for the features thread (which waits for the reader) and decodes
    assert {"features", "decode", "write"} <= set(result["phases"]) and "read" not in result["phases"]
    assert "tokens/s" in process.format_stream(json.loads(json.dumps(result)))


def test_the_feeder_stops_at_the_last_whole_sentence_that_fits():
    import io

    class Sink(io.BytesIO):
        def close(self):
            self.kept = self.getvalue()
            super().close()

    text = b"a B\nb C\n\nc D\n\n"
    for budget, expected in [
        (len(text), text),
        (len(text) + 9, text + b"a B\nb C\n\n"),
        (5, b""),
        (2 * len(text) - 1, text + b"a B\nb C\n\n"),
    ]:
        sink, fed = Sink(), [0]
        process.feed_until(sink, text, budget, fed)
        assert sink.kept == expected and fed[0] == len(expected)


def test_bench_features_times_the_ner_template_beside_conll2003(demo_folder, capsys):
    from fstcrf.bench.features import NER_TEMPLATE, TEMPLATE_NAMES, bench_features
    from fstcrf.cli import main

    english = demo_folder / "conll2003"
    english.mkdir()
    for source, target in (("train.txt", "eng.train"), ("test.txt", "eng.testa")):
        lines = (demo_folder / source).read_text().splitlines()
        # a fourth column (the chunk tag again) stands for the entity labels
        (english / target).write_text("".join(f"{line} {line.split()[-1]}\n" if line else "\n" for line in lines))
    rows = bench_features(demo_folder, copies=2, repeats=2, conll2003=english)
    assert [row["input"] for row in rows] == [*TEMPLATE_NAMES, f"{NER_TEMPLATE} (eng.testa)"]
    assert rows[-1]["tokens"] == 2 * read_conll(demo_folder / "test.txt").num_tokens
    assert rows[-1]["per_token"] > rows[0]["per_token"]  # value lists: n-grams, bags
    assert main(["bench", "features", "--data", str(demo_folder), "--copies", "1", "--repeats", "1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed[-1]["input"] == f"{NER_TEMPLATE} (eng.testa)"


def test_bench_features_times_each_template_and_the_tutorial_dicts(demo_folder, capsys):
    from fstcrf.bench.features import TEMPLATE_NAMES, bench_features
    from fstcrf.cli import main

    (demo_folder / "conll2002").mkdir()
    shutil.copy(demo_folder / "train.txt", demo_folder / "conll2002" / "esp.train")
    shutil.copy(demo_folder / "test.txt", demo_folder / "conll2002" / "esp.testb")
    rows = bench_features(demo_folder, copies=2, repeats=2, conll2002=demo_folder / "conll2002")
    test_tokens = read_conll(demo_folder / "test.txt").num_tokens
    assert [row["input"] for row in rows] == [*TEMPLATE_NAMES, "sklearn tutorial dicts"]
    assert [row["tokens"] for row in rows] == [2 * test_tokens] * 3 + [test_tokens]
    for row in rows:
        assert row["tokens_per_second"] == row["tokens"] / row["seconds"] and 1 < row["per_token"] < 40
    assert main(["bench", "features", "--data", str(demo_folder), "--copies", "1", "--repeats", "1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [row["tokens"] for row in printed] == [test_tokens] * 4
