"""The tag dictionary (fstcrf.corpus.tag_dictionary) and a partial-label column read as
constraints (fstcrf.corpus.labels.partial_label_constraints)."""

import numpy as np
import pytest

from fstcrf.corpus.conll import Sentence
from fstcrf.corpus.labels import partial_label_constraints
from fstcrf.corpus.tag_dictionary import TagDictionary
from fstcrf.engine.constraints import Constraints, Span
from fstcrf.errors import (
    ArgumentTypeError,
    ConllFormatError,
    ConstraintError,
    FstcrfError,
    LabelError,
    ModelFileError,
    ShapeError,
)

LABELS = ("DT", "NN", "VB", "VBZ")


def corpus():
    return [
        Sentence({"word": ["the", "dog", "runs"], "pos": ["DT", "NN", "VBZ"]}),
        Sentence({"word": ["the", "runs", "dog"], "pos": ["DT", "NN", "?"]}),
        Sentence({"word": ["a", "dog", "run"], "pos": ["DT", "NN|VB", "VB"]}),
    ]


def test_words_seen_often_enough_keep_their_single_known_labels():
    dictionary = TagDictionary.of(corpus(), "pos", 2, "word")
    assert dictionary.words == {"the": {"DT"}, "runs": {"VBZ", "NN"}}
    assert TagDictionary.of(corpus(), "pos", 1, "word").words["dog"] == {"NN"}  # "?" and "NN|VB" do not count
    with pytest.raises(FstcrfError, match="at least 1"):
        TagDictionary.of(corpus(), "pos", 0, "word")


def test_the_dictionary_leaves_tokens_the_given_constraints_name_alone():
    dictionary = TagDictionary.of(corpus(), "pos", 2, "word")
    sentences = [Sentence({"word": ["the", "runs"]}), Sentence({"word": ["a", "b"]}), Sentence({"word": ["the"]})]
    given = [Constraints(fixed={0: "NN"}, spans=[Span(0, 1, "X")]), None, None]
    result = dictionary.constraints(sentences, given)
    assert result[0] == Constraints(fixed={0: "NN"}, allowed={1: {"VBZ", "NN"}}, spans=[Span(0, 1, "X")])
    assert result[1] is None
    assert result[2] == Constraints(allowed={0: {"DT"}})


def test_given_constraints_may_be_dict_forms_one_per_sentence():
    dictionary = TagDictionary.of(corpus(), "pos", 2, "word")
    sentences = [Sentence({"word": ["the", "runs"]}), Sentence({"word": ["a"]})]
    result = dictionary.constraints(sentences, [{"fixed": {"0": "NN"}}, None])
    assert result[0] == Constraints(fixed={0: "NN"}, allowed={1: {"VBZ", "NN"}})
    with pytest.raises(ConstraintError, match="^TagDictionary.constraints: sentence 1: fixed: a token index"):
        dictionary.constraints(sentences, [None, {"fixed": {"-1": "NN"}}])
    for given in ([None], [None] * 3):
        with pytest.raises(ShapeError, match=f"{len(given)} given constraints for 2 sentences"):
            dictionary.constraints(sentences, given)
    with pytest.raises(ArgumentTypeError, match="one Constraints"):
        dictionary.constraints(sentences, Constraints())


def test_a_missing_column_is_named():
    dictionary = TagDictionary.of(corpus(), "pos", 2, "word")
    with pytest.raises(ConllFormatError, match="TagDictionary.constraints: sentence 0 has no column 'word'"):
        dictionary.constraints([Sentence({"token": ["the"]})])
    for target, column in (("pos", "nosuch"), ("nosuch", "word")):
        with pytest.raises(ConllFormatError, match="TagDictionary.of: sentence 0 has no column 'nosuch'"):
            TagDictionary.of(corpus(), target, 1, column)


def test_the_dictionary_round_trips_through_a_payload():
    dictionary = TagDictionary.of(corpus(), "pos", 1, "word")
    header, arrays = dictionary.to_payload(LABELS)
    assert TagDictionary.from_payload(header, arrays, LABELS, "m") == dictionary
    broken = dict(arrays)
    broken["tag_dictionary.labels"] = np.zeros_like(arrays["tag_dictionary.labels"])
    with pytest.raises(ModelFileError, match="m: the model's tag dictionary does not fit"):
        TagDictionary.from_payload(header, broken, LABELS, "m")
    with pytest.raises(ModelFileError, match="incomplete"):
        TagDictionary.from_payload({"column": "word"}, arrays, LABELS, "m")


def test_a_partial_label_column_reads_as_constraints():
    assert partial_label_constraints(["?", "NN", "DT|VB", "?"]) == Constraints(
        fixed={1: "NN"}, allowed={2: {"DT", "VB"}}
    )
    assert partial_label_constraints(["?", "?"]) is None
    with pytest.raises(LabelError, match="empty member"):
        partial_label_constraints(["NN|"])
