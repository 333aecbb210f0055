"""The two-stage tagger: majority columns against hand-made documents and a direct
enumeration of their definitions, the jackknife's held-out tagging, fit/predict,
the one-file model with its penalties and decoding settings, non-local decoding
against decode_documents, and Ctrl-C."""

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fstcrf.model.compose
from fstcrf.corpus.conll import Sentence, as_corpus
from fstcrf.document.casing import CASING_COLUMNS
from fstcrf.document.consistency import ConsistencyFactor
from fstcrf.document.decode import decode_documents, estimate_consistency
from fstcrf.document.two_stage import (
    LABEL_COLUMNS,
    MAJORITY_COLUMNS,
    SECOND_STAGE_COLUMNS,
    TwoStageTagger,
    load_two_stage,
    majority_columns,
    second_stage_template,
)
from fstcrf.errors import ArgumentTypeError, FstcrfError, ModelFileError, ShapeError
from fstcrf.model import load_model
from fstcrf.model.compose import jackknife, load_any, load_joint
from fstcrf.model.file import MODEL_KIND, TWO_STAGE_KIND, file_kind, read_container, write_container
from fstcrf.model import ChainCRF
from fstcrf.corpus.schemes import read_chunks


def _sentence(words, start=False):
    return Sentence({"word": list(words)}, docstart_lines=("-DOCSTART- O",) if start else ())


def _column(sentences, name):
    return [sentence[name] for sentence in sentences]


def test_token_majority_leaves_out_the_token_itself_and_counts_per_document_and_corpus():
    sentences = [
        _sentence(["Paris", "is", "big"], start=True),
        _sentence(["Paris", "Hilton"]),
        _sentence(["Paris", "again"], start=True),
    ]
    labels = [["B-LOC", "O", "O"], ["B-PER", "I-PER"], ["B-LOC", "O"]]
    extended = majority_columns(sentences, labels, [(0, 2), (2, 3)])
    # document 1: the other "Paris" is PER for the first and LOC for the second
    assert _column(extended, "token_doc")[:2] == [["PER", "none", "none"], ["LOC", "none"]]
    # document 2 has one "Paris": no other occurrence
    assert _column(extended, "token_doc")[2] == ["none", "none"]
    # corpus: the first Paris sees PER and LOC (a tie: alphabetical), the PER one sees LOC twice
    assert _column(extended, "token_corpus") == [["LOC", "none", "none"], ["LOC", "none"], ["LOC", "none"]]


def test_ties_prefer_an_entity_type_over_outside_then_the_alphabet():
    sentences = [
        _sentence(["May"], start=True),
        _sentence(["May"]),
        _sentence(["May"]),
        _sentence(["May"]),
        _sentence(["May"]),
    ]
    labels = [["O"], ["O"], ["B-PER"], ["B-MISC"], ["B-MISC"]]
    extended = majority_columns(sentences, labels, [(0, 5)])
    # the O tokens see O, PER, MISC, MISC; the PER one O, O, MISC, MISC (a tie: the entity
    # type wins); the MISC ones O, O, PER, MISC
    assert _column(extended, "token_doc") == [["MISC"], ["MISC"], ["MISC"], ["O"], ["O"]]
    tie = majority_columns(
        [_sentence(["a"]), _sentence(["a"]), _sentence(["a"])], [["B-PER"], ["B-ORG"], ["B-LOC"]], [(0, 3)]
    )
    assert _column(tie, "token_doc") == [["LOC"], ["LOC"], ["ORG"]]


def test_entity_and_superentity_majorities():
    sentences = [
        _sentence(["Bank", "of", "England", "said"], start=True),
        _sentence(["England", "won"]),
        _sentence(["England", "lost"]),
        _sentence(["in", "England"], start=True),
        _sentence(["Bank", "of", "England"]),
    ]
    labels = [
        ["B-ORG", "I-ORG", "I-ORG", "O"],
        ["B-LOC", "O"],
        ["B-ORG", "O"],
        ["O", "B-LOC"],
        ["B-ORG", "I-ORG", "I-ORG"],
    ]
    extended = majority_columns(sentences, labels, [(0, 3), (3, 5)])
    entity_doc = _column(extended, "entity_doc")
    assert entity_doc[0] == ["none"] * 4  # no other "Bank of England" in document 1
    assert entity_doc[1] == ["ORG", "none"]  # the other "England" entity of document 1
    assert entity_doc[2] == ["LOC", "none"]
    assert entity_doc[3] == ["none", "none"]  # "England" is inside an entity only, in document 2
    entity_corpus = _column(extended, "entity_corpus")
    assert entity_corpus[0] == ["ORG", "ORG", "ORG", "none"]
    assert entity_corpus[1] == ["LOC", "none"]  # LOC 1 (document 2), ORG 1: tie, alphabetical
    assert entity_corpus[3] == ["none", "LOC"]  # the others: LOC 1, ORG 1
    super_doc = _column(extended, "superentity_doc")
    assert super_doc[1] == ["ORG", "none"]  # "England" is part of "Bank of England" (ORG)
    assert super_doc[0] == ["none"] * 4  # nothing contains the whole name
    assert super_doc[3] == ["none", "ORG"]
    super_corpus = _column(extended, "superentity_corpus")
    assert super_corpus[2] == ["ORG", "none"]  # two ORG superentities in the corpus
    assert _column(extended, "token_doc")[3] == ["none", "ORG"]  # the "England" of "Bank of England"


@st.composite
def _documents(draw):
    vocabulary = ["a", "b", "c", "d"]
    types = ["PER", "LOC", "O"]
    sentences, labels = [], []
    for _ in range(draw(st.integers(1, 6))):
        length = draw(st.integers(1, 5))
        words = draw(st.lists(st.sampled_from(vocabulary), min_size=length, max_size=length))
        tags, previous = [], "O"
        for _ in range(length):
            tag_type = draw(st.sampled_from(types))
            inside = tag_type != "O" and previous == tag_type and draw(st.booleans())
            tags.append("O" if tag_type == "O" else ("I-" if inside else "B-") + tag_type)
            previous = tag_type
        sentences.append(_sentence(words))
        labels.append(tags)
    cuts = sorted(set(draw(st.lists(st.integers(1, len(sentences) - 1), max_size=3)))) if len(sentences) > 1 else []
    bounds = [0] + cuts + [len(sentences)]
    return sentences, labels, list(zip(bounds[:-1], bounds[1:]))


def _naive_majority(votes):
    if not votes:
        return "none"
    counts = Counter(votes)
    best = max(counts.values())
    winners = sorted(label for label, count in counts.items() if count == best)
    entity_winners = [label for label in winners if label != "O"]
    return (entity_winners or winners)[0]


def _naive_columns(sentences, labels, group, fold=lambda word: word):
    """Each token's token, entity and superentity majorities, from pairwise comparison with
    every token and entity of ``group`` (the sentence indices of its document or of the
    corpus), the words compared after ``fold``."""
    token_types = {}
    entities = []  # (sentence, first, last, type, words)
    for index in group:
        for first, last, entity_type in read_chunks(labels[index]):
            words = sentences[index]["word"][first : last + 1]
            entities.append((index, first, last, entity_type, tuple(fold(word) for word in words)))
        for position in range(len(sentences[index])):
            token_types[index, position] = "O"
    for index, first, last, entity_type, _ in entities:
        for position in range(first, last + 1):
            token_types[index, position] = entity_type
    columns = {}
    for index in group:
        words = sentences[index]["word"]
        token = [
            _naive_majority(
                [
                    token_types[other]
                    for other in token_types
                    if other != (index, position)
                    and fold(sentences[other[0]]["word"][other[1]]) == fold(words[position])
                ]
            )
            for position in range(len(words))
        ]
        entity, superentity = ["none"] * len(words), ["none"] * len(words)
        for own in entities:
            if own[0] != index:
                continue
            same = [other[3] for other in entities if other[4] == own[4] and other[:3] != own[:3]]
            containing = [
                other[3]
                for other in entities
                if len(other[4]) > len(own[4])
                and any(other[4][start : start + len(own[4])] == own[4] for start in range(len(other[4])))
            ]
            for position in range(own[1], own[2] + 1):
                entity[position] = _naive_majority(same)
                superentity[position] = _naive_majority(containing)
        columns[index] = (token, entity, superentity)
    return columns


@settings(max_examples=150, deadline=None)
@given(_documents())
def test_majority_columns_match_a_pairwise_enumeration(case):
    sentences, labels, spans = case
    extended = majority_columns(sentences, labels, spans)
    corpus = _naive_columns(sentences, labels, range(len(sentences)))
    corpus_lower = _naive_columns(sentences, labels, range(len(sentences)), str.lower)
    for first, last in spans:
        document = _naive_columns(sentences, labels, range(first, last))
        document_lower = _naive_columns(sentences, labels, range(first, last), str.lower)
        for index in range(first, last):
            got = extended[index]
            assert (got["token_doc"], got["entity_doc"], got["superentity_doc"]) == document[index]
            assert (got["token_corpus"], got["entity_corpus"], got["superentity_corpus"]) == corpus[index]
            assert (got["token_doc_lower"], got["entity_doc_lower"]) == document_lower[index][:2]
            assert (got["token_corpus_lower"], got["entity_corpus_lower"]) == corpus_lower[index][:2]
            assert got["first_stage"] == labels[index]
            assert got["word"] == sentences[index]["word"]
            assert set(got.column_names) == {"word", *LABEL_COLUMNS}


def test_lower_cased_majorities_join_a_headline_to_its_text():
    sentences = [
        _sentence(["JAPAN", "WIN"], start=True),
        _sentence(["Japan", "beat", "Syria"]),
        _sentence(["Japan", "won"]),
        _sentence(["JAPAN"], start=True),
    ]
    labels = [["O", "O"], ["B-LOC", "O", "B-LOC"], ["B-LOC", "O"], ["B-ORG"]]
    extended = majority_columns(sentences, labels, [(0, 3), (3, 4)])
    # case-sensitive, the headline's JAPAN has no other occurrence in its document
    assert _column(extended, "token_doc")[0] == ["none", "none"]
    assert _column(extended, "token_doc_lower")[0] == ["LOC", "none"]
    # the corpus: JAPAN (O), Japan (LOC), Japan (LOC), JAPAN (ORG), each leaving out itself
    assert _column(extended, "token_corpus_lower")[0][0] == "LOC"
    assert _column(extended, "token_corpus_lower")[3] == ["LOC"]
    assert _column(extended, "entity_doc_lower")[1] == ["LOC", "none", "none"]
    assert _column(extended, "entity_corpus_lower")[3] == ["LOC"]
    assert _column(extended, "entity_doc_lower")[3] == ["none"]
    assert _column(extended, "first_stage") == labels


def test_majority_columns_checks_its_input():
    sentences = [_sentence(["a", "b"]), _sentence(["c"])]
    with pytest.raises(ShapeError, match="2 sentences but 1"):
        majority_columns(sentences, [["O", "O"]], [(0, 2)])
    with pytest.raises(ShapeError, match="sentence 1 has 1 tokens but 2 labels"):
        majority_columns(sentences, [["O", "O"], ["O", "O"]], [(0, 2)])
    with pytest.raises(FstcrfError, match="cover"):
        majority_columns(sentences, [["O", "O"], ["O"]], [(0, 1)])
    with pytest.raises(FstcrfError, match="no column 'token'"):
        majority_columns(sentences, [["O", "O"], ["O"]], [(0, 2)], word_column="token")


def _toy_corpus(count):
    """Sentences "<name> <verb>" where the name's type is fixed per name."""
    names = [("Anna Berg", "PER"), ("Bert", "PER"), ("Oslo", "LOC"), ("New Rome", "LOC"), ("Acme", "ORG")]
    verbs = ["runs", "sleeps", "grows"]
    sentences = []
    for index in range(count):
        name, name_type = names[index % len(names)]
        words = name.split()
        tags = [f"B-{name_type}"] + [f"I-{name_type}"] * (len(words) - 1)
        sentences.append(
            Sentence(
                {"word": words + [verbs[index % len(verbs)]], "ner": tags + ["O"]},
                docstart_lines=("-DOCSTART- O",) if index % 4 == 0 else (),
            )
        )
    return sentences


class _Spy(ChainCRF):
    """A ChainCRF recording the sentences each instance trains on and tags."""

    trained_on: list = []
    tagged_by: dict = {}

    def fit(self, corpus, target="chunk", **kwargs):
        seen = {id(sentence) for sentence in corpus}
        type(self).trained_on.append(seen)
        self._seen = seen
        return super().fit(corpus, target=target, **kwargs)

    def predict(self, corpus, **kwargs):
        for sentence in corpus:
            type(self).tagged_by[id(sentence)] = self._seen
        return super().predict(corpus, **kwargs)


def test_the_jackknife_never_tags_a_sentence_with_a_model_that_saw_it(monkeypatch):
    monkeypatch.setattr(fstcrf.model.compose, "ChainCRF", _Spy)
    _Spy.trained_on, _Spy.tagged_by = [], {}
    sentences = _toy_corpus(20)
    first = ChainCRF(template="bias\nword[0]\n", max_iter=5, threads=1)
    TwoStageTagger(first, folds=4, progress=False).fit(sentences, target="ner")
    assert len(_Spy.trained_on) == 4
    assert set(_Spy.tagged_by) == {id(sentence) for sentence in sentences}
    for sentence in sentences:
        assert id(sentence) not in _Spy.tagged_by[id(sentence)]
    # the folds together see every sentence, each fold model all but a quarter of them
    assert all(len(seen) == 15 for seen in _Spy.trained_on)


@pytest.mark.pynini
def test_fit_and_predict_end_to_end():
    train = _toy_corpus(30)
    first = ChainCRF(template="bias\nword[0]\nword[-1]\n", grammar="iob2", max_iter=20, threads=1)
    tagger = TwoStageTagger(first, folds=3, progress=False)
    assert tagger.fit(train, target="ner") is tagger
    assert set(MAJORITY_COLUMNS) <= set(tagger.second_.extractor_.template.columns)
    assert tagger.first_.get_params()["template"] == first.template
    test = [
        Sentence({"word": ["New", "Rome", "grows"]}, docstart_lines=("-DOCSTART- O",)),
        Sentence({"word": ["Anna", "Berg", "sleeps"]}),
        Sentence({"word": ["Acme", "runs"]}),
    ]
    first_labels, labels = tagger.predict_stages(test)
    assert first_labels == tagger.first_.predict(test)
    assert labels == tagger.predict(test)
    assert labels == [["B-LOC", "I-LOC", "O"], ["B-PER", "I-PER", "O"], ["B-ORG", "O"]]


def test_the_second_stage_template_adds_the_majority_predicates():
    template = second_stage_template("bias\nword[0]\n")
    names = [predicate.name for predicate in template]
    assert names[:2] == ["bias", "word[0]"]
    # every added column but entity_corpus_lower, which did not pay on eng.testa, and
    # the casing columns, which only ner-rich's second stage reads
    unread = {"entity_corpus_lower", *CASING_COLUMNS}
    assert set(template.columns) == {"word", *SECOND_STAGE_COLUMNS} - unread
    assert set(CASING_COLUMNS) <= set(second_stage_template("ner-rich").columns)
    assert not set(CASING_COLUMNS) & set(second_stage_template("ner-pos-rich").columns)
    assert second_stage_template("ner-rich").source.endswith("ner_second_stage_casing.txt")


def test_a_second_stage_reading_only_the_six_majorities_saves_loads_and_tags(tmp_path):
    """A second stage of before the caseless and casing columns (the six majority
    lines only) still trains, loads and tags: the other columns are computed and unread."""
    train = _toy_corpus(30)
    first = ChainCRF(template="bias\nword[0]\nword[-1]\n", max_iter=20, threads=1)
    lines = "".join(f"{name}[0]\n" for name in MAJORITY_COLUMNS)
    second = ChainCRF(template="bias\nword[0]\nword[-1]\n" + lines, max_iter=20, threads=1)
    tagger = TwoStageTagger(first, second, folds=3, progress=False).fit(train, target="ner")
    assert set(tagger.second_.extractor_.template.columns) == {"word", *MAJORITY_COLUMNS}
    path = tmp_path / "six.model"
    tagger.save(path)
    loaded = load_two_stage(path)
    assert loaded.predict(train) == tagger.predict(train)


def test_the_tagger_checks_its_settings():
    with pytest.raises(ArgumentTypeError, match="first must be a ChainCRF"):
        TwoStageTagger("crf").fit(_toy_corpus(4), target="ner")
    with pytest.raises(FstcrfError, match="not fitted"):
        TwoStageTagger(ChainCRF()).predict(_toy_corpus(4))


@pytest.mark.pynini
def test_a_two_stage_tagger_saves_and_loads_as_one_file(tmp_path):
    train = _toy_corpus(30)
    first = ChainCRF(template="bias\nword[0]\nword[-1]\n", grammar="iob2", max_iter=20, threads=1)
    tagger = TwoStageTagger(first, folds=3, progress=False).fit(train, target="ner")
    path = tmp_path / "two.model"
    tagger.save(path)
    loaded = load_two_stage(path)
    assert TwoStageTagger.load(path).target_ == loaded.target_ == "ner"
    assert (loaded.folds, loaded.word_column) == (3, "word")
    for stage in ("first_", "second_"):
        np.testing.assert_array_equal(getattr(loaded, stage).weights_, getattr(tagger, stage).weights_)
        assert getattr(loaded, stage).extractor_.template.text == getattr(tagger, stage).extractor_.template.text
    test = _toy_corpus(7)[2:] + [Sentence({"word": ["Bert", "grows", "Oslo"]})]
    assert loaded.predict_stages(test) == tagger.predict_stages(test)
    # a refit from the loaded settings trains the same stages
    refit = TwoStageTagger(loaded.first, loaded.second, folds=loaded.folds, progress=False).fit(train, target="ner")
    np.testing.assert_array_equal(refit.second_.weights_, tagger.second_.weights_)


def test_two_stage_files_and_other_model_files_are_told_apart(tmp_path):
    train = _toy_corpus(12)
    first = ChainCRF(template="bias\nword[0]\n", max_iter=5, threads=1)
    tagger = TwoStageTagger(first, folds=2, progress=False).fit(train, target="ner")
    two_stage, single = tmp_path / "two.model", tmp_path / "one.model"
    tagger.save(two_stage)
    tagger.first_.save(single)
    with pytest.raises(ModelFileError, match="two-stage tagger.*not a single model"):
        load_model(two_stage)
    with pytest.raises(ModelFileError, match="two-stage tagger.*not a composition"):
        load_joint(two_stage)
    with pytest.raises(ModelFileError, match="two-stage tagger.*not a model or a composition"):
        load_any(two_stage)
    with pytest.raises(ModelFileError, match="single model.*not a two-stage tagger"):
        load_two_stage(single)
    assert (file_kind(two_stage), file_kind(single)) == (TWO_STAGE_KIND, MODEL_KIND)
    (tmp_path / "text.model").write_text("not a model")
    assert file_kind(tmp_path / "text.model") is file_kind(tmp_path / "missing.model") is None
    with pytest.raises(FstcrfError, match="not fitted"):
        TwoStageTagger(first).save(tmp_path / "unfitted.model")
    assert not (tmp_path / "unfitted.model").exists()
    # a corrupt file is refused before either stage is read
    raw = bytearray(two_stage.read_bytes())
    raw[-40] ^= 1
    (tmp_path / "bad.model").write_bytes(bytes(raw))
    with pytest.raises(ModelFileError, match="corrupt"):
        load_two_stage(tmp_path / "bad.model")


def _rewritten(path, tmp_path, **changes):
    """A copy of a two-stage file with header fields changed (None: removed)."""
    header, arrays = read_container(path)
    header = {key: value for key, value in header.items() if key not in ("format", "arrays")}
    for key, value in changes.items():
        if value is None:
            header.pop(key, None)
        else:
            header[key] = value
    copy = tmp_path / "rewritten.model"
    write_container(copy, TWO_STAGE_KIND, header, arrays)
    return copy


@pytest.fixture(scope="module")
def with_penalties(tmp_path_factory):
    """A fitted tagger carrying penalties at scale 0.5 and blocks of 3, and its file."""
    first = ChainCRF(template="bias\nword[0]\n", max_iter=5, threads=1)
    tagger = TwoStageTagger(first, folds=2, progress=False, consistency_scale=0.5, block_size=3)
    tagger.fit(_toy_corpus(16), target="ner")
    path = tmp_path_factory.mktemp("two_stage") / "with-penalties.model"
    tagger.save(path)
    return tagger, path


def test_the_penalties_and_the_block_size_persist_and_predict_nonlocal_uses_them(with_penalties):
    tagger, path = with_penalties
    assert tagger.second_.consistency_ == estimate_consistency(_toy_corpus(16), "ner", 0.5)
    loaded = load_two_stage(path)
    assert (loaded.consistency_scale, loaded.block_size) == (0.5, 3)
    assert loaded.second_.consistency_ == tagger.second_.consistency_
    test = _toy_corpus(9)
    extended = loaded.with_majorities(as_corpus(test, "test"), loaded.first_.predict(test), "test")
    factors = [ConsistencyFactor(tagger.second_.consistency_)]
    expected = decode_documents(loaded.second_, extended, factors, "block", 5, block_size=3, seed=2)[0]
    assert loaded.predict_nonlocal(test, sweeps=5, seed=2)[0] == expected
    loaded.threads = 2
    assert (loaded.first_.threads, loaded.second_.threads, loaded.threads) == (2, 2, 2)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"block_size": "4"}, "lacks a valid 'block_size'"),
        ({"block_size": -1}, "block size -1 is negative"),
        ({"consistency_scale": -0.5}, "consistency scale -0.5 is not a finite number"),
        ({"consistency_scale": True}, "consistency scale True is not a finite number"),
        ({"target": "chunk"}, "the first stage predicts 'ner', but the tagger's target is 'chunk'"),
    ],
)
def test_a_mismatched_two_stage_file_is_a_model_file_error(with_penalties, tmp_path, changes, message):
    with pytest.raises(ModelFileError, match=message):
        load_two_stage(_rewritten(with_penalties[1], tmp_path, **changes))


def test_a_stored_scale_without_penalties_or_a_second_stage_without_majorities_is_refused(tmp_path):
    first = ChainCRF(template="bias\nword[0]\n", max_iter=3, threads=1)
    plain = TwoStageTagger(first, folds=2, progress=False).fit(_toy_corpus(12), target="ner")
    plain.save(tmp_path / "plain.model")
    with pytest.raises(ModelFileError, match="stores a consistency scale but its second stage holds no"):
        load_two_stage(_rewritten(tmp_path / "plain.model", tmp_path, consistency_scale=1.0))
    with pytest.raises(FstcrfError, match="stores no consistency penalties"):
        load_two_stage(tmp_path / "plain.model").predict_nonlocal(_toy_corpus(3))
    # both stages the first one: the second reads no majority column
    header, arrays = read_container(tmp_path / "plain.model")
    stages = header["stages"]
    swapped = {f"second.{key[6:]}": array for key, array in arrays.items() if key.startswith("first.")}
    swapped.update({key: array for key, array in arrays.items() if key.startswith("first.")})
    rest = {key: value for key, value in header.items() if key not in ("format", "arrays", "stages")}
    write_container(
        tmp_path / "same.model",
        TWO_STAGE_KIND,
        {**rest, "stages": {"first": stages["first"], "second": stages["first"]}},
        swapped,
    )
    with pytest.raises(ModelFileError, match="not trained on the majority columns"):
        load_two_stage(tmp_path / "same.model")


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"consistency_scale": -1.0}, "consistency_scale must be None or a finite"),
        ({"block_size": 2.5}, "block_size must be an integer"),
    ],
)
def test_the_decoding_settings_are_checked(settings, message):
    with pytest.raises(FstcrfError, match=message):
        TwoStageTagger(ChainCRF(template="bias\nword[0]\n", max_iter=2), folds=2, progress=False, **settings).fit(
            _toy_corpus(6), target="ner"
        )


def test_ctrl_c_stops_the_jackknife_and_the_first_stage(monkeypatch):
    fit = ChainCRF.fit

    def interrupted(self, *args, **kwargs):
        """Training stopped by Ctrl-C: the model keeps its weights so far."""
        fit(self, *args, **kwargs)
        self.interrupted_ = True
        return self

    monkeypatch.setattr(ChainCRF, "fit", interrupted)
    first = ChainCRF(template="bias\nword[0]\n", max_iter=2, threads=1)
    with pytest.raises(KeyboardInterrupt):
        jackknife(as_corpus(_toy_corpus(8), "test"), first, "ner", folds=2)
    tagger = TwoStageTagger(first, folds=2, progress=False)
    with pytest.raises(KeyboardInterrupt):
        tagger.fit(_toy_corpus(8), target="ner")
    assert tagger.first_.interrupted_ and not hasattr(tagger, "second_")
