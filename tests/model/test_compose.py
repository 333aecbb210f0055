"""Composed models: reading models, joint / cascade / k-best decoding, files, errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fstcrf import cli
from fstcrf.model.compatibility import compatibility_pairs
from fstcrf.model.compose import JointModel, compose, load_any, load_joint
from fstcrf.corpus.conll import Corpus, Sentence, read_conll
from fstcrf.features.encoding import EncodedSentences
from fstcrf.errors import CompositionError, FstcrfError, InfeasibleError, ModelFileError, TemplateError
from fstcrf.engine.inference import viterbi
from fstcrf.engine.joint import joint_kbest, joint_sample, joint_viterbi
from fstcrf.model import ChainCRF, load_model
from fstcrf.corpus.synthetic import DATA_DIR

try:  # the tests that need pynini are marked pynini: the CI leg without it skips them
    import pynini
except ImportError:
    pynini = None

TRAIN = DATA_DIR / "demo_train.txt"
TEST = DATA_DIR / "demo_test.txt"


@pytest.fixture(scope="module")
def train():
    return read_conll(TRAIN)


@pytest.fixture(scope="module")
def test_corpus():
    return read_conll(TEST)


@pytest.fixture(scope="module")
def pos_model(train):
    return ChainCRF(template="pos", max_iter=15).fit(train, target="pos")


@pytest.fixture(scope="module")
def chunk_model(train):
    return ChainCRF(template="chunking-reads-pos", reads="pos", max_iter=15).fit(train, target="chunk")


@pytest.fixture(scope="module")
def joint(pos_model, chunk_model):
    return compose([pos_model, chunk_model])


def _short(corpus: Corpus, max_length: int, count: int) -> list[Sentence]:
    return [s for s in corpus.sentences if len(s) <= max_length][:count]


def _path_score(model: ChainCRF, sentence: Sentence, labels: list[str], lower: list[str] | None) -> float:
    """A component's score of one label sequence, reading ``lower`` as its lower labels."""
    if lower is not None:
        sentence = Sentence({**sentence.columns, model.reads: lower})
    pot = model.potentials([sentence])
    index = {label: i for i, label in enumerate(model.labels_)}
    return float(pot.score(np.array([index[label] for label in labels]))[0])


def _joint_score(joint: JointModel, sentence: Sentence, tuple_labels: list[list[str]]) -> float:
    lowers = [None] + tuple_labels[:-1]
    return sum(
        _path_score(model, sentence, labels, lower)
        for model, labels, lower in zip(joint.components, tuple_labels, lowers)
    )


def test_reading_emissions_match_the_given_column(chunk_model, test_corpus):
    sentences = test_corpus.sentences[:40]
    by_label = chunk_model.reading_emissions(sentences, chunk_model.lower_labels_)
    given = chunk_model.potentials(sentences).emissions
    index = {label: i for i, label in enumerate(chunk_model.lower_labels_)}
    gold = np.array([index[tag] for s in sentences for tag in s.columns["pos"]])
    np.testing.assert_allclose(by_label[np.arange(len(gold)), gold], given, rtol=0, atol=1e-12)


def test_reading_emissions_are_exactly_the_sums_under_each_substituted_label(chunk_model, test_corpus):
    """Bit for bit: the predicates that do not read the lower labels summed in column
    order, plus those that do summed in column order, with the column set to each label."""
    sentences = test_corpus.sentences[:30]
    labels = chunk_model.lower_labels_ + ["never-seen"]
    by_label = chunk_model.reading_emissions(sentences, labels)
    extractor, features = chunk_model.extractor_, chunk_model.features_
    reads = np.array(["pos[0]" in name.partition("=")[0] for name in extractor.predicate_names_])
    lengths = [len(s) for s in sentences]
    theta = chunk_model.weights_[: features.num_features]

    def scores(matrix):
        encoded = EncodedSentences(matrix, lengths)
        return features.emissions(encoded.tokens(0, len(lengths)), theta)

    for k, label in enumerate(labels):
        matrix = extractor.transform([Sentence({**s.columns, "pos": [label] * len(s)}) for s in sentences])
        split = [matrix.multiply(np.where(reads == part, 1.0, 0.0)[None, :]).tocsr() for part in (False, True)]
        for part in split:
            part.eliminate_zeros()
        expected = scores(split[0]) + scores(split[1])
        np.testing.assert_array_equal(by_label[:, k, :], expected)


def test_joint_decoding_maximises_the_summed_score_by_brute_force(joint, test_corpus):
    """On short sentences, enumerate every (POS, chunk) pair of label sequences."""
    pos_model, chunk_model = joint.components
    for sentence in _short(test_corpus, 2, 3):
        predicted = [labels[0] for labels in joint.predict([sentence])]
        best = _joint_score(joint, sentence, predicted)
        T = len(sentence)
        for tags in itertools.product(pos_model.labels_, repeat=T):
            chunk_pot = chunk_model.potentials([Sentence({**sentence.columns, "pos": list(tags)})])
            upper = viterbi(chunk_pot).scores[0]  # the best chunking for these tags
            total = _path_score(pos_model, sentence, list(tags), None) + upper
            assert total <= best + 1e-9


def test_joint_beats_or_ties_the_cascades_on_score(joint, test_corpus):
    sentences = test_corpus.sentences[:60]
    decoded = {mode: joint.predict(sentences, mode=mode, k=3) for mode in ("joint", "cascade", "kbest")}
    for b, sentence in enumerate(sentences):
        scores = {
            mode: _joint_score(joint, sentence, [labels[b] for labels in result]) for mode, result in decoded.items()
        }
        assert scores["joint"] >= scores["kbest"] - 1e-9
        assert scores["kbest"] >= scores["cascade"] - 1e-9


def _bits(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


def _assert_one_per_call_is_the_batch(model: JointModel, sentences: list[Sentence]) -> None:
    """Each sentence alone gives the batch's joint scores, best joint path score and
    labels of every mode, bit for bit."""
    decoded = {mode: model.predict(sentences, mode=mode, k=3) for mode in ("joint", "cascade", "kbest")}
    jp = model.potentials(sentences)
    best = joint_viterbi(jp).scores
    for b, sentence in enumerate(sentences):
        one = model.potentials([sentence])
        assert _bits(one.emissions) == _bits(jp.emissions[jp.sentence(b)])
        assert _bits(joint_viterbi(one).scores) == _bits(best[b : b + 1])
        for mode, labels in decoded.items():
            alone = model.predict([sentence], mode=mode, k=3)
            assert [component[0] for component in alone] == [component[b] for component in labels], mode


@pytest.mark.parametrize("loaded", [False, True], ids=["in memory", "loaded"])
def test_one_sentence_per_call_gives_the_batch_results_bit_for_bit(joint, test_corpus, tmp_path, loaded):
    """A loaded model keeps its transition tables between calls; one in memory does not."""
    model = joint
    if loaded:
        joint.save(tmp_path / "joint.model")
        model = load_joint(tmp_path / "joint.model")
    _assert_one_per_call_is_the_batch(model, test_corpus.sentences[:60])


@pytest.mark.slow
def test_one_sentence_per_call_on_every_conll2000_test_sentence(data_file, tmp_path):
    train = read_conll(data_file("conll2000/train.txt")).sentences[:2000]
    test = read_conll(data_file("conll2000/test.txt")).sentences
    pos = ChainCRF(template="pos", max_iter=10).fit(train, target="pos")
    chunk = ChainCRF(template="chunking-reads-pos", reads="pos", max_iter=10).fit(train, target="chunk")
    compose([pos, chunk]).save(tmp_path / "joint.model")
    _assert_one_per_call_is_the_batch(load_joint(tmp_path / "joint.model"), test)


def test_cascade_is_the_pipeline_of_single_models(joint, test_corpus):
    pos_model, chunk_model = joint.components
    sentences = test_corpus.sentences[:80]
    tags, chunks = joint.predict(sentences, mode="cascade")
    assert tags == pos_model.predict(sentences)
    piped = [Sentence({**s.columns, "pos": t}) for s, t in zip(sentences, tags)]
    assert chunks == chunk_model.predict(piped)
    assert joint.predict(sentences, mode="kbest", k=1) == [tags, chunks]


def test_a_long_kbest_list_reaches_the_joint_optimum(joint, test_corpus):
    sentences = _short(test_corpus, 4, 10)
    assert joint.predict(sentences, mode="kbest", k=400) == joint.predict(sentences, mode="joint")


def test_threads_and_blocks_do_not_change_results(joint, test_corpus, monkeypatch):
    import fstcrf.model.compose as compose_module

    reference = joint.predict(test_corpus, mode="joint")
    monkeypatch.setattr(compose_module, "BLOCK_CELLS", 2000)
    monkeypatch.setattr(compose_module, "FEATURE_TOKENS", 150)
    joint.threads = 1
    try:
        assert joint.predict(test_corpus, mode="joint") == reference
    finally:
        joint.threads = 2


def test_three_model_chain(train, test_corpus, pos_model, chunk_model):
    """A third model reading the chunk labels; joint >= cascade on summed score."""
    rows = [
        Sentence({**s.columns, "np": ["NP" if c.endswith("NP") else "-" for c in s.columns["chunk"]]})
        for s in train.sentences
    ]
    corpus = Corpus(("word", "pos", "chunk", "np"), rows)
    top = ChainCRF(template="bias\nword[0]\nchunk[0]\nchunk[0]|word[-1]", reads="chunk", max_iter=10).fit(
        corpus, target="np"
    )
    joint = compose([pos_model, chunk_model, top])
    assert joint.space.num_states == np.prod([m.topology_.num_states for m in joint.components])
    sentences = test_corpus.sentences[:30]
    decoded = {mode: joint.predict(sentences, mode=mode) for mode in ("joint", "cascade")}
    for b, sentence in enumerate(sentences):
        scores = {
            mode: _joint_score(joint, sentence, [labels[b] for labels in result]) for mode, result in decoded.items()
        }
        assert scores["joint"] >= scores["cascade"] - 1e-9


def _relation(lower: list[str], upper: list[str], pairs) -> pynini.Fst:
    """A one-state transducer relating the given (lower, upper) label pairs."""
    inputs, outputs = pynini.SymbolTable(), pynini.SymbolTable()
    inputs.add_symbol("<eps>")
    outputs.add_symbol("<eps>")
    for label in lower:
        inputs.add_symbol(label)
    for label in upper:
        outputs.add_symbol(label)
    fst = pynini.Fst()
    state = fst.add_state()
    fst.set_start(state)
    fst.set_final(state)
    one = pynini.Weight.one(fst.weight_type())
    for a, b in pairs:
        fst.add_arc(state, pynini.Arc(inputs.find(a), outputs.find(b), one, state))
    fst.set_input_symbols(inputs)
    fst.set_output_symbols(outputs)
    return fst


@pytest.mark.pynini
def test_compatibility_relation_restricts_every_mode(pos_model, chunk_model, test_corpus):
    # noun tags may not be outside a chunk; everything else is free
    pairs = [(t, c) for t in pos_model.labels_ for c in chunk_model.labels_ if not (t.startswith("NN") and c == "O")]
    relation = _relation(pos_model.labels_, chunk_model.labels_, pairs)
    table = compatibility_pairs(pos_model.labels_, chunk_model.labels_, relation)
    assert table.sum() == len(pairs)
    joint = compose([pos_model, chunk_model], [relation])
    for mode in ("joint", "cascade", "kbest"):
        tags, chunks = joint.predict(test_corpus.sentences[:100], mode=mode)
        for sentence_tags, sentence_chunks in zip(tags, chunks):
            assert not any(t.startswith("NN") and c == "O" for t, c in zip(sentence_tags, sentence_chunks))


@pytest.fixture(scope="module")
def order2_chunker(train):
    return ChainCRF(template="chunking-reads-pos", reads="pos", order=2, max_iter=5).fit(train, target="chunk")


def test_dense_joint_search_over_a_second_order_component(pos_model, order2_chunker, test_corpus):
    """k-best and sampling run on the dense product, whose states are named from
    k-th order state names (which hold spaces)."""
    joint = compose([pos_model, order2_chunker])
    pot = joint.potentials(_short(test_corpus, 6, 3))
    best = joint_kbest(pot, 3)
    assert np.allclose(best.scores[:, 0], joint_viterbi(pot).scores)
    assert joint_sample(pot, 2, seed=0).shape == (2, pot.num_tokens)


@pytest.mark.pynini
def test_a_cascade_the_relation_leaves_without_a_path_is_a_clear_error(pos_model, order2_chunker, test_corpus):
    """An order-2 chunker cannot start with I-X; a relation that lets the POS tag
    predicted first admit only I-X chunks leaves the cascade no path, while joint
    decoding picks another tag there."""
    chunker = order2_chunker
    sentence = test_corpus.sentences[0]
    first_tag = pos_model.predict([sentence])[0][0]
    pairs = [(t, c) for t in pos_model.labels_ for c in chunker.labels_ if t != first_tag or c.startswith("I-")]
    joint = compose([pos_model, chunker], [_relation(pos_model.labels_, chunker.labels_, pairs)])
    with pytest.raises(InfeasibleError, match="mode 'joint'"):
        joint.predict([sentence], mode="cascade")
    tags, chunks = joint.predict([sentence], mode="joint")
    assert tags[0][0] != first_tag and not chunks[0][0].startswith("I-")


def test_joint_files_round_trip(joint, test_corpus, tmp_path):
    path = tmp_path / "joint.model"
    joint.save(path)
    loaded = load_joint(path)
    assert isinstance(load_any(path), JointModel)
    sentences = test_corpus.sentences[:50]
    assert loaded.predict(sentences) == joint.predict(sentences)
    with pytest.raises(ModelFileError, match="joint model"):
        load_model(path)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ModelFileError, match="checksum"):
        load_joint(path)


def test_chain_errors(train, pos_model, chunk_model):
    with pytest.raises(CompositionError, match="reads 'pos'"):
        compose([chunk_model, pos_model])
    plain = ChainCRF(template="bias\nword[0]", max_iter=3).fit(train, target="chunk")
    with pytest.raises(CompositionError, match="--reads pos"):
        compose([pos_model, plain])
    with pytest.raises(CompositionError, match="at least two"):
        compose([pos_model])
    # a chunker trained on a tag the POS model never produces
    odd = [
        Sentence({**s.columns, "pos": ["ODD" if t == "DT" else t for t in s.columns["pos"]]}) for s in train.sentences
    ]
    reader = ChainCRF(template="bias\npos[0]", reads="pos", max_iter=3).fit(
        Corpus(train.column_names, odd), target="chunk"
    )
    with pytest.raises(CompositionError, match="never produces: ODD"):
        compose([pos_model, reader])


def test_reading_templates_are_checked(train):
    with pytest.raises(TemplateError, match="offset 0 only"):
        ChainCRF(template="bias\npos[-1]", reads="pos").fit(train, target="chunk")
    with pytest.raises(TemplateError, match="never uses it"):
        ChainCRF(template="bias\nword[0]", reads="pos").fit(train, target="chunk")
    with pytest.raises(TemplateError, match="lacks"):
        ChainCRF(template="bias\nner[0]", reads="ner").fit(train, target="chunk")
    with pytest.raises(TemplateError, match="predict"):
        ChainCRF(template="bias\nchunk[-1]").fit(train, target="chunk")


def test_unknown_mode_is_refused(joint, test_corpus):
    with pytest.raises(FstcrfError, match="mode must be"):
        joint.predict(test_corpus.sentences[:2], mode="beam")
    with pytest.raises(FstcrfError, match="k must be"):
        joint.predict(test_corpus.sentences[:2], mode="kbest", k=0)


def test_command_line(tmp_path, capsys):
    pos_path, chunk_path, joint_path = (str(tmp_path / name) for name in ("p.model", "c.model", "j.model"))
    assert (
        cli.main(["-q", "train", str(TRAIN), "--target", "pos", "--template", "pos", "--max-iter", "8", "-o", pos_path])
        == 0
    )
    assert (
        cli.main(
            [
                "-q",
                "train",
                str(TRAIN),
                "--reads",
                "pos",
                "--template",
                "chunking-reads-pos",
                "--max-iter",
                "8",
                "-o",
                chunk_path,
            ]
        )
        == 0
    )
    assert cli.main(["-q", "compose", pos_path, chunk_path, "-o", joint_path]) == 0
    words = tmp_path / "words.txt"
    words.write_text(
        "".join(
            line.split(" ")[0] + "\n" if line.strip() else "\n" for line in TEST.read_text().splitlines(keepends=True)
        )
    )
    capsys.readouterr()
    assert cli.main(["-q", "tag", joint_path, str(words)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert all(len(row) == 3 for row in rows)  # word, predicted POS, predicted chunk
    assert cli.main(["-q", "eval", joint_path, str(TEST), "--mode", "cascade"]) == 0
    out = capsys.readouterr().out
    assert "== pos (cascade decoding)" in out and "== chunk (cascade decoding)" in out
    assert cli.main(["-q", "compose", chunk_path, pos_path, "-o", joint_path]) == 2
    assert "put the model predicting it first" in capsys.readouterr().err


def test_jackknife_replaces_the_column_with_held_out_predictions(train):
    from fstcrf.model.compose import jackknife

    small = Corpus(train.column_names, train.sentences[:120])
    template_model = ChainCRF(template="bias\nword[0]\nsuffix2(word[0])", max_iter=5)
    result = jackknife(small, template_model, "pos", folds=3)
    assert result.column("word") == small.column("word")
    assert result.column("chunk") == small.column("chunk")
    # the first fold is tagged by a model trained on the other two
    rest = Corpus(small.column_names, small.sentences[40:])
    expected = ChainCRF(**template_model.get_params()).fit(rest, target="pos").predict(small.sentences[:40])
    assert result.column("pos")[:40] == expected
    with pytest.raises(FstcrfError, match="folds"):
        jackknife(small, template_model, "pos", folds=1)


def test_jackknife_command(tmp_path):
    out = tmp_path / "jk.txt"
    assert (
        cli.main(
            [
                "-q",
                "jackknife",
                str(TRAIN),
                "--target",
                "pos",
                "--template",
                "pos",
                "--folds",
                "2",
                "--max-iter",
                "3",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    written = read_conll(out)
    original = read_conll(TRAIN)
    assert written.column("word") == original.column("word")
    assert written.column("pos") != original.column("pos")  # 3 iterations cannot copy the tags


def test_joint_marginals_match_brute_force(joint, test_corpus):
    """p(tag, chunk label at t) by enumerating both label sequences of 2-token sentences."""
    pos_model, chunk_model = joint.components
    for sentence in _short(test_corpus, 2, 2):
        tag_marginals, chunk_marginals = (m[0] for m in joint.predict_marginals([sentence]))
        T = len(sentence)
        tag_table = np.zeros((T, len(pos_model.labels_)))
        chunk_table = np.zeros((T, len(chunk_model.labels_)))
        weights = []
        for tags in itertools.product(range(len(pos_model.labels_)), repeat=T):
            names = [pos_model.labels_[t] for t in tags]
            lower = _path_score(pos_model, sentence, names, None)
            chunk_pot = chunk_model.potentials([Sentence({**sentence.columns, "pos": names})])
            for chunks in itertools.product(range(len(chunk_model.labels_)), repeat=T):
                score = lower + float(chunk_pot.score(np.array(chunks))[0])
                weights.append((score, tags, chunks))
        top = max(score for score, _, _ in weights)
        total = 0.0
        for score, tags, chunks in weights:
            w = np.exp(score - top)
            total += w
            tag_table[np.arange(T), tags] += w
            chunk_table[np.arange(T), chunks] += w
        np.testing.assert_allclose(tag_marginals, tag_table / total, atol=1e-9)
        np.testing.assert_allclose(chunk_marginals, chunk_table / total, atol=1e-9)


def test_scales_weigh_the_components(pos_model, chunk_model, test_corpus, tmp_path):
    sentences = test_corpus.sentences[:40]
    scaled = compose([pos_model, chunk_model], scales=[1.0, 1e-6])
    # a negligible chunker leaves the POS model's own best tags
    assert scaled.predict(sentences)[0] == pos_model.predict(sentences)
    doubled = compose([pos_model, chunk_model], scales=[2.0, 2.0])
    assert doubled.predict(sentences) == compose([pos_model, chunk_model]).predict(sentences)
    path = tmp_path / "scaled.model"
    scaled.save(path)
    assert load_joint(path).scales == [1.0, 1e-6]
    for bad in ([1.0], [1.0, 0.0], [1.0, float("nan")], ["a", 1]):
        with pytest.raises(CompositionError, match="scales"):
            compose([pos_model, chunk_model], scales=bad)


@pytest.mark.pynini
def test_command_line_compatibility_and_scales(tmp_path, pos_model, chunk_model, capsys):
    pos_path, chunk_path, joint_path = (str(tmp_path / name) for name in ("p.model", "c.model", "j.model"))
    pos_model.save(pos_path)
    chunk_model.save(chunk_path)
    pairs = [(t, c) for t in pos_model.labels_ for c in chunk_model.labels_ if not (t == "DT" and c == "O")]
    relation_path = str(tmp_path / "compat.fst")
    _relation(pos_model.labels_, chunk_model.labels_, pairs).write(relation_path)
    assert (
        cli.main(
            [
                "-q",
                "compose",
                pos_path,
                chunk_path,
                "--compat",
                f"1={relation_path}",
                "--scales",
                "1,0.5",
                "-o",
                joint_path,
            ]
        )
        == 0
    )
    joint = load_joint(joint_path)
    assert joint.scales == [1.0, 0.5] and joint.compatibility[0].sum() == len(pairs)
    capsys.readouterr()
    assert cli.main(["-q", "tag", joint_path, str(TEST), "--mode", "kbest", "--k", "3"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert not any(row[-2] == "DT" and row[-1] == "O" for row in rows)
    for bad in (["--compat", "0=x.fst"], ["--compat", f"1={tmp_path / 'missing.fst'}"], ["--scales", "1,a"]):
        assert cli.main(["-q", "compose", pos_path, chunk_path, *bad, "-o", joint_path]) == 2


def test_a_cascade_with_a_huge_k_is_refused_before_decoding(joint, test_corpus):
    from fstcrf.errors import BudgetError

    sentence = [Sentence({name: values[:1] for name, values in test_corpus.sentences[0].columns.items()})]
    with pytest.raises(BudgetError, match="--max-work"):
        joint.predict(sentence, mode="kbest", k=100000)
    assert len(joint.predict(sentence, mode="kbest", k=3)[0][0]) == 1


@pytest.mark.pynini
def test_a_relation_that_is_no_fst_gets_one_line_naming_it(tmp_path, pos_model, chunk_model, capfd):
    pos_path, chunk_path = str(tmp_path / "pos.model"), str(tmp_path / "chunk.model")
    pos_model.save(pos_path)
    chunk_model.save(chunk_path)
    (tmp_path / "text.fst").write_text("not an FST\n")
    for relation, reason in (("text.fst", "it does not begin as one"), ("missing.fst", "No such file")):
        status = cli.main(
            ["compose", pos_path, chunk_path, "--compat", f"1={tmp_path / relation}", "-o", str(tmp_path / "j.model")]
        )
        errors = capfd.readouterr().err.strip().splitlines()
        assert status == 2 and len(errors) == 1 and relation in errors[0] and reason in errors[0], errors
