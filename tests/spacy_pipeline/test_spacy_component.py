"""The spaCy component "fstcrf" on blank pipelines and Docs built from CoNLL files: its
spans, tags and probabilities against the models' own decoding, batching, saved
pipelines, composed and grammar-constrained models, and bad settings and Docs."""

from needs_spacy import spacy

import re

import pytest
from hypothesis import given, strategies as st
from spacy.tokens import Doc, Token

from fstcrf.corpus.conll import Corpus, Sentence, read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.spans import path_chunks
from fstcrf.errors import ModelFileError, PipelineConfigError, TokenAttributeError
from fstcrf.model import ChainCRF
from fstcrf.model.compose import compose
from fstcrf.spacy.component import MODEL_FILE, FstcrfComponent
from fstcrf.spacy.factory import FACTORY
from fstcrf.spacy.plan import input_columns

from strategies import oracle_settings

TEMPLATE = "bias\nword[0]\nword[-1]\npos[0]\npos[-1]|pos[0]\n"


@pytest.fixture(scope="module")
def corpora():
    return read_conll(DATA_DIR / "demo_train.txt"), read_conll(DATA_DIR / "demo_test.txt")


@pytest.fixture(scope="module")
def models(corpora, tmp_path_factory):
    """Model files trained on the demo corpus: a chunker, a part-of-speech tagger, a
    chunker reading part-of-speech labels, their composition, and an entity tagger
    (the chunks as column "ner")."""
    train, _ = corpora
    folder = tmp_path_factory.mktemp("spacy-models")
    ner = Corpus(
        ("word", "pos", "ner"), [Sentence({"word": s["word"], "pos": s["pos"], "ner": s["chunk"]}) for s in train]
    )
    fitted = {
        "chunk": ChainCRF(template=TEMPLATE, max_iter=15).fit(train, target="chunk"),
        "pos": ChainCRF(template="pos", max_iter=15).fit(train, target="pos"),
        "reads-pos": ChainCRF(template="chunking-reads-pos", reads="pos", max_iter=15).fit(train, target="chunk"),
        "ner": ChainCRF(template=TEMPLATE, max_iter=10).fit(ner, target="ner"),
    }
    fitted["joint"] = compose([fitted["pos"], fitted["reads-pos"]])
    paths = {}
    for name, model in fitted.items():
        paths[name] = str(folder / f"{name}.model")
        model.save(paths[name])
    return fitted, paths


def tagged_docs(nlp, sentences, tags: bool = True) -> list[Doc]:
    """One Doc per sentence, with its part-of-speech column as tag_ when ``tags``."""
    return [Doc(nlp.vocab, words=s["word"], tags=s["pos"] if tags else None) for s in sentences]


def chunks_of(spans) -> list[tuple[int, int, str]]:
    return [(span.start, span.end - 1, span.label_) for span in spans]


def test_spans_are_the_models_chunks_with_their_probabilities(models, corpora):
    fitted, paths = models
    sentences = corpora[1].sentences
    nlp = spacy.blank("en")
    component = nlp.add_pipe(FACTORY, config={"model": paths["chunk"]})
    assert component.plan.inputs == {"word": "text", "pos": "tag_"}
    assert [output.target for output in component.plan.outputs] == ["spans:chunks"]
    assert component.labels == ("ADVP", "NP", "PP", "VP")
    docs = list(nlp.pipe(tagged_docs(nlp, sentences)))
    expected = fitted["chunk"].predict_spans(sentences)
    labels = fitted["chunk"].predict(sentences)
    assert sum(len(entities) for entities in expected) > 300
    for doc, entities, sentence_labels in zip(docs, expected, labels):
        group = doc.spans["chunks"]
        assert chunks_of(group) == [(e.first, e.last, e.type) for e in entities] == path_chunks(sentence_labels)
        assert [span._.probability for span in group] == [e.probability for e in entities]
        assert group.attrs["scores"].tolist() == [e.probability for e in entities]


@oracle_settings(15)
@given(data=st.data())
def test_each_sentence_of_a_doc_is_decoded_apart(models, corpora, data):
    """Sentences joined into Docs at random, with sentence boundaries: each Doc's spans
    are its sentences' chunks, shifted by their offsets.  A Doc without boundaries is
    one sentence."""
    fitted, paths = models
    sentences = corpora[1].sentences[: data.draw(st.integers(1, 12))]
    sizes = []
    while sum(sizes) < len(sentences):
        sizes.append(data.draw(st.integers(1, len(sentences) - sum(sizes))))
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"model": paths["chunk"], "probabilities": data.draw(st.booleans())})
    docs, first = [], 0
    for size in sizes:
        part = sentences[first : first + size]
        first += size
        docs.append(
            Doc(
                nlp.vocab,
                words=[word for s in part for word in s["word"]],
                tags=[tag for s in part for tag in s["pos"]],
                sent_starts=[position == 0 for s in part for position in range(len(s))],
            )
        )
    whole = Doc(nlp.vocab, words=sentences[0]["word"], tags=sentences[0]["pos"])
    docs = list(nlp.pipe(docs + [whole], batch_size=data.draw(st.integers(1, 5))))
    labels, first = fitted["chunk"].predict(sentences), 0
    for doc, size in zip(docs, sizes):
        expected, offset = [], 0
        for sentence_labels in labels[first : first + size]:
            expected += [(a + offset, b + offset, kind) for a, b, kind in path_chunks(sentence_labels)]
            offset += len(sentence_labels)
        first += size
        assert chunks_of(doc.spans["chunks"]) == expected
    assert chunks_of(docs[-1].spans["chunks"]) == path_chunks(labels[0])


def test_one_model_call_per_batch_of_docs(models, corpora, monkeypatch):
    fitted, paths = models
    sentences = corpora[1].sentences[:120]
    nlp = spacy.blank("en")
    component = nlp.add_pipe(FACTORY, config={"model": paths["chunk"], "threads": 2})
    assert component.model.threads == 2
    calls = []
    decode = component.model.predict_spans
    monkeypatch.setattr(component.model, "predict_spans", lambda batch: calls.append(len(batch)) or decode(batch))
    batched = [chunks_of(doc.spans["chunks"]) for doc in nlp.pipe(tagged_docs(nlp, sentences), batch_size=50)]
    assert calls == [50, 50, 20]
    one = [chunks_of(nlp(doc).spans["chunks"]) for doc in tagged_docs(nlp, sentences[:3])]
    assert calls[3:] == [1, 1, 1] and one == batched[:3]


def test_an_entity_tagger_writes_doc_ents(models, corpora):
    fitted, paths = models
    sentences = corpora[1].sentences[:30]
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"model": paths["ner"]})
    expected = fitted["ner"].predict_spans(sentences)
    for doc, entities in zip(nlp.pipe(tagged_docs(nlp, sentences)), expected):
        assert chunks_of(doc.ents) == [(e.first, e.last, e.type) for e in entities]
        assert [span._.probability for span in doc.ents] == [e.probability for e in entities]
        assert "chunks" not in doc.spans


def test_a_model_reading_the_training_entities_reads_words_alone(corpora, tmp_path):
    """seen_entity is derived from the words by the model, not read from the tokens."""
    train, test = corpora
    ner = [Sentence({"word": s["word"], "ner": s["chunk"]}) for s in train]
    model = ChainCRF(template="word[0]\nseen_entity[0]\nseen_entity[-1]|word[0]\n", max_iter=10)
    model.fit(ner, target="ner")
    path = tmp_path / "seen.model"
    model.save(path)
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"model": str(path), "reads": {"word": "text"}})
    sentences = [Sentence({"word": s["word"]}) for s in test.sentences[:20]]
    assert input_columns(model) == ("word",)
    for sentence, entities in zip(sentences, model.predict_spans(sentences)):
        doc = nlp(" ".join(sentence["word"]))
        assert [token.text for token in doc] == sentence["word"]
        assert chunks_of(doc.ents) == [(e.first, e.last, e.type) for e in entities]


def test_tags_and_token_extensions(models, corpora):
    fitted, paths = models
    sentences = corpora[1].sentences[:40]
    nlp = spacy.blank("en")
    tagger = nlp.add_pipe(FACTORY, name="pos", config={"model": paths["pos"]})
    assert tagger.plan.inputs == {"word": "text"} and tagger.plan.outputs[0].target == "tag_"
    nlp.add_pipe(FACTORY, name="iob", config={"model": paths["chunk"], "writes": "_.iob"})
    docs = list(nlp.pipe(tagged_docs(nlp, sentences, tags=False)))
    tags = fitted["pos"].predict(sentences)
    reread = [Sentence({"word": s["word"], "pos": t}) for s, t in zip(sentences, tags)]
    assert [[token.tag_ for token in doc] for doc in docs] == tags
    assert [[token._.iob for token in doc] for doc in docs] == fitted["chunk"].predict(reread)


@pytest.mark.parametrize(
    "name, config",
    [
        ("chunk", {}),
        ("chunk", {"probabilities": False}),
        ("ner", {"writes": "ents"}),
        ("pos", {}),
        ("joint", {"writes": {"pos": "tag_", "1": "spans:chunks"}}),
    ],
)
def test_docs_without_tokens_come_back_with_empty_outputs(models, corpora, name, config):
    _, paths = models
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"model": paths[name], **config})
    empty = [Doc(nlp.vocab, words=[]), nlp.make_doc("")]
    one = tagged_docs(nlp, corpora[1].sentences[:1])
    for docs in (empty, [empty[0], *one]):  # a batch of empty Docs alone, and beside another
        done = list(nlp.pipe(docs))
        assert [len(doc) for doc in done] == [len(doc) for doc in docs]
        assert all(not doc.spans.get("chunks", []) and not doc.ents for doc in done if not len(doc))
    assert len(nlp("")) == 0


def test_a_composed_model_decodes_jointly(models, corpora):
    fitted, paths = models
    joint = fitted["joint"]
    sentences = corpora[1].sentences[:60]
    assert input_columns(joint) == ("word",)
    nlp = spacy.blank("en")
    component = nlp.add_pipe(FACTORY, config={"model": paths["joint"], "writes": {"pos": "tag_", "1": "spans:chunks"}})
    assert component.labels == tuple(sorted(set(fitted["pos"].labels_) | {"ADVP", "NP", "PP", "VP"}))
    docs = list(nlp.pipe(tagged_docs(nlp, sentences, tags=False)))
    tags, chunk_labels = joint.predict(sentences)
    chunks = [path_chunks(labels) for labels in chunk_labels]
    probabilities = joint.span_probabilities(sentences, chunks, component=1)
    assert [[token.tag_ for token in doc] for doc in docs] == tags
    for doc, expected, values in zip(docs, chunks, probabilities):
        assert chunks_of(doc.spans["chunks"]) == expected
        assert [span._.probability for span in doc.spans["chunks"]] == values.tolist()
    default = spacy.blank("en").add_pipe(FACTORY, config={"model": paths["joint"]})
    assert [(output.component, output.target) for output in default.plan.outputs] == [(1, "spans:chunks")]


@pytest.mark.pynini
def test_a_model_under_a_joint_grammar(corpora, tmp_path):
    """An NP chunker and a VP chunker composed under no_overlap: the component writes
    the joint decoding, whose chunks never overlap."""
    train, test = corpora
    chunkers = []
    for kind in ("NP", "VP"):
        only = [s.with_column("chunk", [c if c.endswith("-" + kind) else "O" for c in s["chunk"]]) for s in train]
        chunkers.append(ChainCRF(template=TEMPLATE, max_iter=10).fit(only, target="chunk"))
    joint = compose(chunkers, joint="no_overlap")
    path = tmp_path / "joint.model"
    joint.save(path)
    sentences = test.sentences[:80]
    nlp = spacy.blank("en")
    with pytest.raises(PipelineConfigError, match="components 0, 1 all predict column 'chunk'; name one by its place"):
        nlp.add_pipe(FACTORY, name="ambiguous", config={"model": str(path), "writes": {"chunk": "spans:np"}})
    nlp.add_pipe(FACTORY, config={"model": str(path), "writes": {"0": "spans:np", "1": "spans:vp"}})
    docs = list(nlp.pipe(tagged_docs(nlp, sentences)))
    np_labels, vp_labels = joint.predict(sentences)
    for doc, np_tags, vp_tags in zip(docs, np_labels, vp_labels):
        assert chunks_of(doc.spans["np"]) == path_chunks(np_tags)
        assert chunks_of(doc.spans["vp"]) == path_chunks(vp_tags)
        covered = [{t for span in doc.spans[key] for t in range(span.start, span.end)} for key in ("np", "vp")]
        assert not covered[0] & covered[1]
    assert sum(len(doc.spans["vp"]) for doc in docs) > 50


@pytest.mark.pynini
def test_a_model_trained_under_a_grammar(corpora, tmp_path):
    """A chunker trained under "at least one ADVP chunk" (on the demo sentences that have
    one; most test sentences have none): the component decodes under the grammar the
    model file holds."""
    train, test = corpora
    model = ChainCRF(template=TEMPLATE, max_iter=10, grammar="at_least_one", grammar_params={"X": "ADVP"})
    model.fit([s for s in train if "B-ADVP" in s["chunk"]], target="chunk")
    model.save(tmp_path / "advp.model")
    sentences = test.sentences[:40]
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"model": str(tmp_path / "advp.model")})
    docs = list(nlp.pipe(tagged_docs(nlp, sentences)))
    expected = model.predict_spans(sentences)
    assert [chunks_of(doc.spans["chunks"]) for doc in docs] == [[e[:3] for e in found] for found in expected]
    assert all(any(span.label_ == "ADVP" for span in doc.spans["chunks"]) for doc in docs)
    assert sum(s["chunk"].count("B-ADVP") for s in sentences) < len(sentences) / 2


def test_a_saved_pipeline_carries_its_model(models, corpora, tmp_path):
    fitted, paths = models
    sentences = corpora[1].sentences[:50]
    copy = tmp_path / "chunk.model"
    copy.write_bytes(open(paths["chunk"], "rb").read())
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, name="chunker", config={"model": str(copy), "writes": "spans:np"})
    expected = [chunks_of(doc.spans["np"]) for doc in nlp.pipe(tagged_docs(nlp, sentences))]
    nlp.to_disk(tmp_path / "pipeline")
    assert (tmp_path / "pipeline" / "chunker" / MODEL_FILE).is_file()
    copy.unlink()
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("chunker").model_path == str(copy)
    assert [chunks_of(doc.spans["np"]) for doc in loaded.pipe(tagged_docs(loaded, sentences))] == expected
    restored = FstcrfComponent("again", str(copy), writes="spans:np")
    assert restored.model is None and restored.labels == ()
    with pytest.raises(ModelFileError, match="'again' has no model"):
        restored(tagged_docs(loaded, sentences[:1])[0])
    with pytest.raises(ModelFileError, match="no model to save"):
        restored.to_bytes()
    restored.from_bytes(loaded.get_pipe("chunker").to_bytes())
    assert [chunks_of(restored(doc).spans["np"]) for doc in tagged_docs(loaded, sentences)] == expected


def test_docs_lacking_an_attribute_the_model_reads(models, corpora):
    _, paths = models
    sentence = corpora[1].sentences[0]
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, name="chunker", config={"model": paths["chunk"]})
    untagged = Doc(nlp.vocab, words=sentence["word"])
    with pytest.raises(
        TokenAttributeError, match=r"'chunker' reads column 'pos' from the token attribute tag_.*a tagger"
    ):
        nlp(untagged)
    partly = Doc(nlp.vocab, words=sentence["word"], tags=sentence["pos"])
    partly[2].tag_ = ""
    with pytest.raises(TokenAttributeError, match=f"token 2 \\({sentence['word'][2]!r}\\)"):
        nlp(partly)
    other = spacy.blank("en")
    other.add_pipe(FACTORY, name="reader", config={"model": paths["chunk"], "reads": {"pos": "_.gold_pos"}})
    with pytest.raises(TokenAttributeError, match=r"'reader' reads the token extension _.gold_pos, which is not reg"):
        other(Doc(other.vocab, words=sentence["word"]))
    Token.set_extension("gold_pos", default=None)
    try:
        doc = Doc(other.vocab, words=sentence["word"])
        with pytest.raises(TokenAttributeError, match=r"_.gold_pos, which token 0 .* lacks \(empty\)"):
            other(doc)
        for token, tag in zip(doc, sentence["pos"]):
            token._.gold_pos = tag
        tagged = Doc(nlp.vocab, words=sentence["word"], tags=sentence["pos"])
        assert chunks_of(other(doc).spans["chunks"]) == chunks_of(nlp(tagged).spans["chunks"])
    finally:
        Token.remove_extension("gold_pos")


def test_an_error_goes_to_the_pipelines_error_handler(models, corpora):
    _, paths = models
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, name="chunker", config={"model": paths["chunk"]})
    caught = []
    nlp.set_error_handler(lambda name, component, docs, error: caught.append((name, len(docs), type(error))))
    sentences = corpora[1].sentences[:4]
    docs = tagged_docs(nlp, sentences[:2]) + tagged_docs(nlp, sentences[2:], tags=False)
    assert len(list(nlp.pipe(docs, batch_size=2))) == 2
    assert caught == [("chunker", 2, TokenAttributeError)]


@pytest.mark.parametrize(
    "config, message",
    [
        ({"reads": {"pos": "tag"}}, "column 'pos' is read from 'tag', which is not a token attribute"),
        ({"writes": "entities"}, "writes 'entities', which is not one of"),
        ({"writes": "spans:"}, "writes 'spans:', which is not one of"),
        ({"component": "ner"}, "no component of the model predicts column 'ner'; its components are 0 (chunk)"),
        ({"component": 3}, "the model has no component 3"),
        (
            {"writes": {"chunk": "ents", "0": "tag_"}, "component": 0},
            "writes maps components to outputs, so component=0",
        ),
        ({"writes": {"chunk": "tag_", "0": "tag_"}}, "two components write tag_"),
        ({"writes": {}}, "writes maps no component"),
    ],
)
def test_settings_that_do_not_fit_the_model(models, config, message):
    _, paths = models
    nlp = spacy.blank("en")
    with pytest.raises(PipelineConfigError, match=re.escape(f"the fstcrf component 'bad': {message}")):
        nlp.add_pipe(FACTORY, name="bad", config={"model": paths["chunk"], **config})


def test_outputs_a_component_cannot_write(models, corpora, tmp_path):
    fitted, paths = models
    nlp = spacy.blank("en")
    with pytest.raises(PipelineConfigError, match=r"writes 'ents' from component 0 \(pos\), whose labels .* not chunk"):
        nlp.add_pipe(FACTORY, config={"model": paths["pos"], "writes": "ents"})
    Token.set_extension("computed", getter=lambda token: "x")
    try:
        with pytest.raises(PipelineConfigError, match="token extension computed, which is registered with a getter"):
            nlp.add_pipe(FACTORY, name="c", config={"model": paths["chunk"], "writes": "_.computed"})
    finally:
        Token.remove_extension("computed")
    lemma_model = ChainCRF(template="bias\nlemma[0]\n", max_iter=3).fit(
        [Sentence({"lemma": s["word"], "chunk": s["chunk"]}) for s in corpora[0].sentences[:50]], target="chunk"
    )
    lemma_model.save(tmp_path / "lemma.model")
    with pytest.raises(PipelineConfigError, match=r"reads the column\(s\) lemma, which reads does not map"):
        nlp.add_pipe(FACTORY, name="l", config={"model": str(tmp_path / "lemma.model")})
    component = nlp.add_pipe(
        FACTORY, name="l2", config={"model": str(tmp_path / "lemma.model"), "reads": {"lemma": "lower_"}}
    )
    assert component.plan.inputs == {"lemma": "lower_"}
