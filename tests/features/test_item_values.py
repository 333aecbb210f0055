"""The hashed values of a batch's template items, computed in C from the value store
(``fv_item_values``), against the value lists the plain Python path names
(:meth:`ItemValues.lists`, their escaped names hashed): on random sentences with
values that need escaping or read as boundary values, in batches and one sentence at
a time; and the predicate rows of the NER default's template on CoNLL-2003 against
the predicate names looked up one by one."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.engine import kernel
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.hashing import utf8_hashes
from fstcrf.features import seen_entities
from fstcrf.features.item_lists import ItemPlan, item_values
from fstcrf.features.occurrences import predicate_occurrences
from fstcrf.features.resources import Resources
from fstcrf.features.template import NER_RICH, parse_template
from fstcrf.features.token_table import TokenTable
from fstcrf.features.value_lists import ItemValues
from tests.strategies import oracle_settings

#: Words with the characters escaping reads, that read as boundary values (alone, or
#: their first nine characters), of several UTF-8 lengths, upper and lower case.
WORD = st.sampled_from(
    ["a", "Ab", "ab|", "_x", "a\\b", "__BOS-1__", "__EOS+1__z", "__BOS-x__", "Ünï", "1-2", "é€", "AB", "x y"]
)
SENTENCES = st.lists(st.lists(WORD, min_size=1, max_size=7), min_size=1, max_size=4)
TRANSFORM = st.sampled_from(["", "lower", "shape", "shape2", "longshape", "prefix2", "prefix9", "suffix1"])


@st.composite
def items(draw, files):
    """The text of one template item of a kind the kernel computes, or of one it hands back."""
    kind = draw(st.sampled_from(["single", "prefixes", "suffixes", "ngrams", "bag", "types", "seen", "gaz", "cluster"]))
    transform = draw(TRANSFORM)
    offset = draw(st.integers(-9, 9))
    low = draw(st.integers(-4, 3))
    high = low + draw(st.integers(0, 3))
    item = f"{transform}(word[{offset}])" if transform else f"word[{offset}]"
    column = f"{transform}(word)" if transform else "word"
    if kind == "single":
        return item
    if kind in ("prefixes", "suffixes", "ngrams"):
        return f"{kind}({item},{abs(low) + 1},{abs(low) + 1 + high - low})"
    if kind in ("bag", "types"):
        return f"{kind}({column},{low},{high})"
    if kind == "seen":
        return f"seen_lower({item})"
    if kind == "gaz":
        return f"gazetteer({item},{files['gazetteer']})"
    return f"cluster({item},{files['paths']},1,3)"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("items")
    gazetteer = folder / "gazetteer.txt"
    gazetteer.write_text("LOC\tab| _x\nAb\nPER\ta\\b\n", encoding="utf-8")
    paths = folder / "paths"
    paths.write_text("0110\ta\t5\n10\tAb\t3\n111\tab|\t1\n", encoding="utf-8")
    return {"gazetteer": str(gazetteer), "paths": str(paths)}


def _named(values: ItemValues, observation, salt: int) -> list[list[int]]:
    """Each token's value hashes of the plain path: its names hashed, sorted."""
    lists = values.lists(observation)
    hashes = utf8_hashes(lists.names, salt)[lists.codes]
    return [sorted(hashes[a:b].tolist()) for a, b in zip(lists.ptr[:-1].tolist(), lists.ptr[1:].tolist())]


def _computed(value_ptr, hashes, j: int) -> list[list[int]]:
    ptr = value_ptr[j].tolist()
    return [sorted(hashes[a:b].tolist()) for a, b in zip(ptr[:-1], ptr[1:])]


def _assert_named(texts, sentences, salt, draw_mask=None):
    """item_values of the items ``texts`` on ``sentences``, against the plain path; with
    ``draw_mask`` (a draw of hypothesis), some items masked at some tokens."""
    template = parse_template("\n".join(texts))
    observations = list(dict.fromkeys(o for predicate in template for o in predicate.observations))
    table = TokenTable([Sentence({"word": words}) for words in sentences])
    resources = Resources.load(template, {"word": sentences[0]})  # the first sentence's words seen
    values = ItemValues(table, resources)
    plan = ItemPlan(observations)
    only_at = None
    if draw_mask is not None:
        mask = np.array(draw_mask(st.lists(st.booleans(), min_size=table.num_tokens, max_size=table.num_tokens)))
        only_at = (mask.astype(np.uint8), set(draw_mask(st.lists(st.integers(0, len(observations) - 1), max_size=3))))
    value_ptr, hashes = item_values(table, plan, salt, values, only_at)
    for j, observation in enumerate(observations):
        expected = _named(values, observation, salt)
        if only_at is not None and j in only_at[1]:
            expected = [own if marked else [] for own, marked in zip(expected, only_at[0])]
        assert _computed(value_ptr, hashes, j) == expected, str(observation)
    if only_at is not None:
        return
    start = 0  # a sentence at a time: each sentence's values are those it had in the batch
    for words in sentences:
        one = TokenTable([Sentence({"word": words})])
        alone_ptr, alone = item_values(one, plan, salt, ItemValues(one, resources))
        for j in range(len(observations)):
            batch = _computed(value_ptr, hashes, j)[start : start + len(words)]
            assert _computed(alone_ptr, alone, j) == batch
        start += len(words)


@oracle_settings(100)
@given(data=st.data(), sentences=SENTENCES, salt=st.integers(0, 3), masked=st.booleans())
def test_item_values_are_the_hashes_of_the_named_value_lists(files, data, sentences, salt, masked):
    texts = data.draw(st.lists(items(files), min_size=1, max_size=5, unique=True))
    _assert_named(texts, sentences, salt, data.draw if masked else None)


@pytest.mark.parametrize(
    "line",
    [
        "types(prefix9(word),0,0)",  # a lone text that reads as a boundary value is escaped
        "types(prefix9(word),-1,-1)",  # "<" before the sentence
        "types(prefix9(word),1,1)",
        "types(prefix9(word),-1,1)",  # a joined one never is
        "types(word,-3,2)",
        "types(lower(word),0,2)",
        "bag(prefix9(word),-2,2)",
        "suffixes(word[-3],1,4)",
        "ngrams(prefix9(word[1]),2,3)",
        "seen_lower(prefix9(word[-2]))",
    ],
)
def test_values_that_escaping_changes_or_that_read_as_boundaries(line):
    words = ["__BOS-1__", "a|b", "__EOS+1__z", "x\\y", "__EOS+1__", "__BOS-x__", "|"]
    _assert_named([line], [words, words[::-1][:3], ["__BOS-12__"]], 5)


def _call(token_rows, items, spans=((0, 1),), offsets=(0, 1), capacity=8, rows=1):
    """fv_item_values on a store of one row (a single hash, a list of one hash, a text
    of one byte), token rows int64 [C, N] and items int64 [J, ITEM_FIELDS]."""
    single = np.array([[7]], dtype=np.uint64)
    list_span = np.array([spans], dtype=np.int64)
    text_span = np.array([[[0, 1]]], dtype=np.int64)
    tables = (single, list_span, np.array([9], dtype=np.uint64), text_span, np.frombuffer(b"X", dtype=np.uint8))
    value_ptr = np.empty((len(items), token_rows.shape[1] + 1), dtype=np.int64)
    hashes = np.empty(capacity, dtype=np.uint64)
    offsets = np.array(offsets, dtype=np.int64)
    items = np.array(items, dtype=np.int64)
    return kernel.item_values(offsets, token_rows, rows, *tables, items, None, 0, value_ptr, hashes), hashes


def test_the_kernel_refuses_rows_items_spans_and_offsets_out_of_range():
    kinds = kernel.ITEM_KINDS
    row = np.zeros((1, 1), dtype=np.int64)
    good = [kinds["list"], 0, 0, 0, 0, 0]
    needed, hashes = _call(row, [good])
    assert needed is None and hashes[0] == 9
    for token_rows, item, spans, offsets in [
        (np.ones((1, 1), dtype=np.int64), good, ((0, 1),), (0, 1)),  # a row the store lacks
        (-row - 1, good, ((0, 1),), (0, 1)),
        (row, good, ((0, 2),), (0, 1)),  # a span past the list hashes
        (row, good, ((1, 0),), (0, 1)),  # a reversed span
        (row, [kinds["list"], 1, 0, 0, 0, 0], ((0, 1),), (0, 1)),  # a column the rows lack
        (row, [kinds["list"], 0, 1, 0, 0, 0], ((0, 1),), (0, 1)),  # a table the store lacks
        (row, [kinds["single"], 0, 0, -1, 1, 0], ((0, 1),), (0, 1)),  # a single value over a window
        (row, [kinds["bag"], 0, 0, 1, 0, 0], ((0, 1),), (0, 1)),  # a reversed window
        (row, [9, 0, 0, 0, 0, 0], ((0, 1),), (0, 1)),  # no such kind
        (row, [kinds["single"], 0, 0, 0, 0, 1], ((0, 1),), (0, 1)),  # masked without a mask
        (row, [kinds["types"], 0, 0, 0, 1 << 41, 0], ((0, 1),), (0, 1)),  # an offset beyond reason
        (row, good, ((0, 1),), (0, 2)),  # offsets that do not cut the tokens
        (row, good, ((0, 1),), (1, 1)),
    ]:
        with pytest.raises(RuntimeError):
            _call(token_rows, [item], spans, offsets)


def test_the_kernel_says_how_much_room_the_values_need():
    rows = np.zeros((1, 3), dtype=np.int64)  # one sentence of three tokens
    bag = [kernel.ITEM_KINDS["bag"], 0, 0, -2, 2, 0]
    needed, _ = _call(rows, [bag], offsets=(0, 3), capacity=2)
    assert needed == 3 + 3 + 3  # the most each token's window holds
    assert _call(rows, [bag], offsets=(0, 3), capacity=9)[0] is None


@pytest.mark.slow
def test_the_ner_default_rows_on_conll2003_are_the_named_predicates(data_file):
    """The template of ``fstcrf train eng.train --target ner``, fitted on the first 1,500
    training sentences: every row of eng.testb, in one batch and one sentence at a time,
    holds exactly the known predicates its names (the plain path's value lists) give."""
    columns = "word,pos,chunk,ner"
    train = read_conll(data_file("conll2003/eng.train"), columns).sentences[:1500]
    test = [sentence for sentence in read_conll(data_file("conll2003/eng.testb"), columns).sentences if len(sentence)]
    extractor = FeatureExtractor(NER_RICH, target="ner").fit(train)
    batch = extractor.transform_rows(test)
    template = extractor.parsed_template()
    derived = seen_entities.at_extraction(template.columns, test, extractor.resources_.entities)
    values = ItemValues(TokenTable(test, derived), extractor.resources_)
    occurrences = [predicate_occurrences(values, predicate, template.budget) for predicate in template]
    expected = _rows_by_name(extractor, values, occurrences)
    assert batch.indptr.tolist() == expected[0].tolist()
    assert batch.indices.tolist() == expected[1].tolist()
    for b in range(0, 300):
        first, last = batch.indptr[values.table.offsets[b]], batch.indptr[values.table.offsets[b + 1]]
        alone = extractor.transform_rows([test[b]])
        assert alone.indices.tolist() == batch.indices[first:last].tolist()


def _rows_by_name(extractor, values, occurrences) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, indices): each token's predicate names, as the plain path makes them,
    looked up in ``vocabulary_``, ascending in each row."""
    num_tokens = values.table.num_tokens
    tokens, columns = [], []
    for predicate, occurrence in zip(extractor.parsed_template(), occurrences):
        sizes = np.ones(num_tokens, dtype=np.int64)
        for observation in predicate.observations if predicate.multi_valued else ():
            sizes *= values.lists(observation).counts
        column_of = np.array([extractor.vocabulary_.get(name, -1) for name in occurrence.names] + [-1])
        found = column_of[occurrence.predicate]
        tokens.append(np.repeat(np.arange(num_tokens), sizes)[found >= 0])
        columns.append(found[found >= 0])
    token, column = np.concatenate(tokens), np.concatenate(columns)
    order = np.lexsort((column, token))
    indptr = np.zeros(num_tokens + 1, dtype=np.int64)
    np.cumsum(np.bincount(token, minlength=num_tokens), out=indptr[1:])
    return indptr, column[order]
