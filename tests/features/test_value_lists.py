"""Value lists in templates (prefixes, suffixes, ngrams, bag, types, gazetteer,
cluster, embedding, seen_lower): the C cross product against a plain Python
reference, the budget, the user files and their copies in a model."""

import itertools
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.errors import BudgetError, ModelFileError, ResourceFileError, TemplateError
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import escape_value, parse_template, transform_function
from tests.strategies import oracle_settings

# -- a reference extractor: token by token, names as strings ------------------


def _shape(value):
    classes = ["X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c for c in value]
    return "".join(c for i, c in enumerate(classes) if i == 0 or classes[i - 1] != c)


def _read_gazetteer(path):
    entries = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                category, _, words = line.rstrip("\n").rpartition("\t")
                entries.append((words.split(), category))
    return entries


class Boundary(str):
    """A boundary value, which names keep as it is (never escaped)."""


def _reference_values(observation, words, position, seen):
    """The values (unescaped) of a value-list item, or of a single item, at one token."""
    transform = transform_function(observation.transform) if observation.transform else (lambda value: value)
    kind = observation.kind
    if kind == "bag":
        window = range(observation.low, observation.high + 1)
        return list({transform(words[position + o]) for o in window if 0 <= position + o < len(words)})
    if kind == "types":
        shape = transform if observation.transform else _shape
        marks = [
            "<" if position + o < 0 else ">" if position + o >= len(words) else shape(words[position + o])
            for o in range(observation.low, observation.high + 1)
        ]
        return [" ".join(marks)]
    target = position + observation.offset
    if not 0 <= target < len(words):
        if kind == "embedding":
            return []
        return [Boundary(f"__BOS-{-target}__" if target < 0 else f"__EOS+{target - len(words) + 1}__")]
    value = transform(words[target])
    if kind is None:
        return [value]
    if kind == "prefixes":
        return [value[:n] for n in range(observation.low, observation.high + 1) if n <= len(value)]
    if kind == "suffixes":
        return [value[len(value) - n :] for n in range(observation.low, observation.high + 1) if n <= len(value)]
    if kind == "ngrams":
        marked = "<" + value + ">"
        lengths = range(observation.low, observation.high + 1)
        return list({marked[i : i + n] for n in lengths for i in range(len(marked) - n + 1)})
    if kind == "seen_lower":
        return ["seen" if value.lower() in seen else "unseen"]
    if kind == "cluster":
        paths = dict(line.split("\t")[1::-1] for line in open(observation.path, encoding="utf-8") if line.strip())
        return [] if value not in paths else list({paths[value][:n] for n in observation.lengths})
    if kind == "gazetteer":
        marks = set()
        transformed = [transform(word) for word in words]
        for tokens, category in _read_gazetteer(observation.path):
            tokens = [transform(token) for token in tokens]
            for start in range(len(words) - len(tokens) + 1):
                if start <= target < start + len(tokens) and transformed[start : start + len(tokens)] == tokens:
                    mark = "B" if target == start else "I"
                    marks |= {mark, f"{mark}-{category}"} if category else {mark}
        return list(marks)
    raise AssertionError(kind)


def reference_rows(template, sentences, seen):
    """Per token of the sentences, {predicate name: value}."""
    rows = []
    for sentence in sentences:
        for position in range(len(sentence)):
            row = {}
            for predicate in template:
                if not predicate.observations:
                    row["bias"] = 1.0
                    continue
                lists = [
                    [
                        value if isinstance(value, Boundary) else escape_value(value)
                        for value in _reference_values(o, sentence.columns[o.column], position, seen)
                    ]
                    for o in predicate.observations
                ]
                for combination in itertools.product(*lists):
                    row[f"{predicate.name}={'|'.join(combination)}"] = 1.0
            rows.append(row)
    return rows


def _matrix_rows(extractor, matrix):
    names = extractor.predicate_names_
    return [
        {names[c]: v for c, v in zip(matrix.indices[a:b].tolist(), matrix.data[a:b].tolist())}
        for a, b in zip(matrix.indptr[:-1].tolist(), matrix.indptr[1:].tolist())
    ]


# -- random instances ------------------------------------------------------------

WORDS = st.text(alphabet="aAbB1|\\-_x", min_size=1, max_size=7)
SENTENCES = st.lists(st.lists(WORDS, min_size=1, max_size=6), min_size=1, max_size=5)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lists")
    gazetteer = folder / "gazetteer.txt"
    gazetteer.write_text("LOC\ta b\nA\nPER\tb|\n1 1 1\n", encoding="utf-8")
    paths = folder / "paths"
    paths.write_text("0110\ta\t5\n10\tA\t3\n111\tb|\t1\n", encoding="utf-8")
    return {"gazetteer": str(gazetteer), "paths": str(paths)}


def _item(draw, files):
    kind = draw(st.sampled_from(["single", "prefixes", "suffixes", "ngrams", "bag", "types", "seen", "gaz", "cluster"]))
    transform = draw(st.sampled_from(["", "lower", "shape"]))
    offset = draw(st.integers(-2, 2))
    low = draw(st.integers(1, 3))
    high = low + draw(st.integers(0, 2))
    column = f"{transform}(word)" if transform else "word"
    item = f"{transform}(word[{offset}])" if transform else f"word[{offset}]"
    if kind == "single":
        return item
    if kind in ("prefixes", "suffixes", "ngrams"):
        return f"{kind}({item},{low},{high})"
    if kind in ("bag", "types"):
        return f"{kind}({column},{-low},{high - 1})"
    if kind == "seen":
        return f"seen_lower({item})"
    if kind == "gaz":
        return f"gazetteer({item},{files['gazetteer']})"
    return f"cluster({item},{files['paths']},1,3)"


@st.composite
def templates(draw, files):
    lines = {"bias"}
    for _ in range(draw(st.integers(1, 4))):
        items = list(dict.fromkeys(_item(draw, files) for _ in range(draw(st.integers(1, 2)))))
        lines.add("|".join(items))
    return "\n".join(sorted(lines))


@oracle_settings(60)
@given(data=st.data(), train=SENTENCES, test=SENTENCES)
def test_value_lists_equal_a_python_reference(files, data, train, test):
    """The C cross product of value lists (transform) and the fitted matrix
    (fit_transform) give each token exactly the predicates a token-by-token
    Python reference names, on random tokens with values that need escaping."""
    template = parse_template(data.draw(templates(files)))
    train_sentences = [Sentence({"word": words}) for words in train]
    test_sentences = [Sentence({"word": words}) for words in test]
    seen = {word for words in train for word in words if word == word.lower()}
    extractor = FeatureExtractor(template)
    fitted = extractor.fit_transform_rows(train_sentences)
    expected_train = reference_rows(template, train_sentences, seen)
    assert set(extractor.predicate_names_) == {name for row in expected_train for name in row}
    assert _matrix_rows(extractor, fitted) == expected_train
    assert _matrix_rows(extractor, extractor.transform_rows(train_sentences)) == expected_train
    known = set(extractor.predicate_names_)
    expected_test = [
        {name: value for name, value in row.items() if name in known}
        for row in reference_rows(template, test_sentences, seen)
    ]
    matrix = extractor.transform_rows(test_sentences)
    assert _matrix_rows(extractor, matrix) == expected_test
    for a, b in zip(matrix.indptr[:-1], matrix.indptr[1:]):
        assert list(matrix.indices[a:b]) == sorted(matrix.indices[a:b])


def test_embedding_values_are_the_vectors(tmp_path):
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("2 3\nthe 0.5 0 -2\ncat 1 2 3\n", encoding="utf-8")
    extractor = FeatureExtractor(f"bias\nembedding(word[0],{vectors})\nembedding(word[-1],{vectors})")
    sentences = [Sentence({"word": ["the", "cat", "dog"]})]
    rows = _matrix_rows(extractor, extractor.fit_transform_rows(sentences))
    assert rows[0] == {"bias": 1.0, f"embedding(word[0],{vectors})=0": 0.5, f"embedding(word[0],{vectors})=2": -2.0}
    assert rows[1][f"embedding(word[-1],{vectors})=2"] == -2.0 and rows[1][f"embedding(word[0],{vectors})=1"] == 2.0
    assert rows[2] == {"bias": 1.0, f"embedding(word[-1],{vectors})=0": 1.0} | {
        f"embedding(word[-1],{vectors})={k}": float(k + 1) for k in range(3)
    }
    assert _matrix_rows(extractor, extractor.transform_rows(sentences)) == rows


def test_shape_schemes():
    assert transform_function("shape")("McDonald's") == "XxXx'x"
    assert transform_function("longshape")("Mc1-") == "Xxd-"
    # two characters kept at each end, the distinct classes of the middle sorted
    assert transform_function("shape2")("McDonald's") == "XxXx'x"
    assert transform_function("shape2")("Washington") == "Xxxxx"
    assert transform_function("shape2")("1,234.5") == "d,d.d"
    assert transform_function("shape2")("Ab1") == "Xxd"


def _classes(value):
    return ["X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c for c in value]


@oracle_settings(300)
@given(st.text(st.characters(codec="utf-8") | st.sampled_from("aA1-_|\\\n\udcff\u0130\u01c5"), max_size=12))
def test_shape_schemes_against_the_character_classes(value):
    """The translate tables of shape, longshape and shape2 against the classes taken
    character by character (surrogates, title case and line breaks included)."""
    classes = _classes(value)
    assert transform_function("shape")(value) == _shape(value)
    assert transform_function("longshape")(value) == "".join(classes)
    middle = "".join(sorted(set(classes[2:-2])))
    expected = "".join(classes) if len(value) <= 4 else "".join(classes[:2]) + middle + "".join(classes[-2:])
    assert transform_function("shape2")(value) == expected


# -- a model keeps copies of the files ------------------------------------------


def test_a_fitted_extractor_keeps_copies_of_its_files(tmp_path):
    gazetteer = tmp_path / "places.txt"
    gazetteer.write_text("LOC\tNew York\n", encoding="utf-8")
    template = f"gazetteer(word[0],{gazetteer})\nseen_lower(word[0])"
    sentences = [Sentence({"word": ["in", "New", "York", "In"]})]
    extractor = FeatureExtractor(template).fit(sentences)
    before = _matrix_rows(extractor, extractor.transform_rows(sentences))
    data, arrays = extractor.to_payload()
    gazetteer.write_text("LOC\tIn\n", encoding="utf-8")  # the file changes after training
    loaded = FeatureExtractor.from_payload(data, arrays)
    os.remove(gazetteer)
    assert _matrix_rows(loaded, loaded.transform_rows(sentences)) == before
    assert f"gazetteer(word[0],{gazetteer})=I-LOC" in before[2]
    assert before[3]["seen_lower(word[0])=seen"] == 1.0  # "in" was seen lower-cased
    arrays.pop("resource.0")
    with pytest.raises(ModelFileError, match="copies"):
        FeatureExtractor.from_payload(data, arrays)


def test_a_model_file_keeps_the_files(tmp_path):
    from fstcrf.model import ChainCRF

    clusters = tmp_path / "paths"
    clusters.write_text("01\tthe\t3\n11\tcat\t2\n", encoding="utf-8")
    sentences = [Sentence({"word": ["the", "cat"], "tag": ["D", "N"]})] * 3
    model = ChainCRF(template=f"bias\ncluster(word[0],{clusters},1,2)", max_iter=5).fit(sentences, target="tag")
    model.save(tmp_path / "model.fstcrf")
    os.remove(clusters)
    loaded = ChainCRF.load(tmp_path / "model.fstcrf")
    assert loaded.predict(sentences) == model.predict(sentences)


# -- bad input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ngrams(word[0],0,3)", "lengths start at 1"),
        ("prefixes(word[0],-1,3)", "lengths start at 1"),
        ("suffixes(word[0],4,2)", "reversed"),
        ("bag(word,2,-2)", "reversed"),
        ("bag(word,-600,600)", "beyond the template budget of 1024.*'budget N'"),
        ("prefixes(word[0],1,40)|bag(word,-20,20)", "up to 1,640 values.*'budget N'"),
        ("bag(word[0],-1,1)", "without an offset"),
        ("ngrams(word[0],1)", "expected ngrams\\(item,shortest,longest\\)"),
        ("cluster(word[0],paths,0)", "not a positive integer"),
        ("cluster(word[0],paths,2,2)", "repeat"),
        ("embedding(word[0],v.txt)|word[0]", "stands alone"),
        ("ngrams(value(word[0]),1,2)", "not 'value"),
        ("budget 0", "budget N"),
    ],
)
def test_bad_lines_are_template_errors(line, message):
    with pytest.raises(TemplateError, match=message):
        parse_template(f"bias\n{line}", "t.txt")


def test_a_budget_line_raises_the_limit():
    template = parse_template("budget 2000\nbag(word,-600,600)")
    assert template.budget == 2000 and template.text.startswith("budget 2000\n")
    assert parse_template(template.text) == template


def test_a_line_exploding_on_the_data_is_refused_before_training():
    sentences = [Sentence({"word": ["a", "abcdefgh"]})]
    with pytest.raises(BudgetError, match=r"sentence 1, token 2: line 2 .* 19 predicates .* budget of 8 .*'budget N'"):
        FeatureExtractor("budget 8\nngrams(word[0],1,2)").fit(sentences)


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        ("gazetteer", "", "holds no entries"),
        ("gazetteer", "LOC\tNew York\n\tYork\n", ":2: expected an entry"),
        ("cluster", "0101\tthe\t3\n01x\tcat\t1\n", ":2: expected a Brown cluster line"),
        ("cluster", "0101\tthe\n", ":1: expected a Brown cluster line"),
        ("cluster", "01\tthe\t3\n10\tthe\t1\n", ":2: the word 'the' repeats line 1"),
        ("embedding", "the 1 2\ncat 1\n", ":2: 'cat' has 1 numbers; expected 2"),
        ("embedding", "2 3\nthe 1 2 3\ncat 1 2\n", ":3: 'cat' has 2 numbers; expected 3 \\(as the header says\\)"),
        ("embedding", "the 1 x\n", ":1: .* not a number"),
        ("embedding", "the 1 nan\n", ":1: .* NaN"),
        ("embedding", "3 1\nthe 1\n", ":1: the header declares 3 vectors; the file holds 1"),
        ("embedding", "\n\n", "holds no vectors"),
    ],
)
def test_bad_files_are_refused_at_fit(tmp_path, kind, text, message):
    path = tmp_path / "file.txt"
    path.write_text(text, encoding="utf-8")
    arguments = f"{path},2" if kind == "cluster" else str(path)
    with pytest.raises(ResourceFileError, match=message):
        FeatureExtractor(f"{kind}(word[0],{arguments})").fit([Sentence({"word": ["the"]})])


def test_missing_and_unreadable_files_are_refused(tmp_path):
    sentences = [Sentence({"word": ["the"]})]
    with pytest.raises(ResourceFileError, match="<string>:2: the gazetteer file .*none.txt' does not exist"):
        FeatureExtractor(f"bias\ngazetteer(word[0],{tmp_path / 'none.txt'})").fit(sentences)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"LOC\tK\xf6ln\n")
    with pytest.raises(ResourceFileError, match=":1: expected UTF-8"):
        FeatureExtractor(f"gazetteer(word[0],{binary})").fit(sentences)


def test_a_resource_error_is_a_template_error():
    assert issubclass(ResourceFileError, TemplateError)


def test_the_command_line_refuses_a_bad_file_before_training(tmp_path, capsys):
    from fstcrf.cli import main
    from fstcrf.corpus.synthetic import DATA_DIR

    template = tmp_path / "template.txt"
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("the 1 2\ncat 1 2 3\n", encoding="utf-8")
    template.write_text(f"bias\nword[0]\nembedding(word[0],{vectors})\n", encoding="utf-8")
    output = tmp_path / "model.fstcrf"
    arguments = ["train", str(DATA_DIR / "demo_train.txt"), "--template", str(template), "-o", str(output), "-q"]
    assert main(arguments) == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and len(error.strip().splitlines()) == 1
    assert f"{vectors}:2: 'cat' has 3 numbers; expected 2" in error
    assert not output.exists()


def test_reading_a_lower_column_varies_single_items_only():
    sentences = [Sentence({"word": ["The", "cat"], "pos": ["DT", "NN"]})]
    with pytest.raises(TemplateError, match=r"value lists \(bag\(pos,-1,1\)\)"):
        FeatureExtractor("pos[0]\nbag(pos,-1,1)").fit(sentences).transform_reading(sentences, "pos", ["DT", "NN"])
    extractor = FeatureExtractor("pos[0]|word[0]\nngrams(word[0],1,2)").fit(sentences)
    base, reading, met = extractor.transform_reading(sentences, "pos", ["DT", "NN"])
    full = extractor.transform_rows(sentences).to_scipy().toarray()
    rebuilt = base.to_scipy().toarray()
    for token, value in enumerate([0, 1]):  # each token's own label
        row = reading.to_scipy().toarray()[token * 2 + value]
        rebuilt[token, met] += row
    assert (rebuilt == full).all()


def test_the_kernel_refuses_lists_out_of_range():
    """ff_list_rows checks its items, value pointers and buffers before writing."""
    import numpy as np

    from fstcrf.engine.kernel.features import list_rows

    slots = np.zeros(2 * 16, dtype=np.uint64)
    value_ptr = np.array([[0, 2, 3]], dtype=np.int64)  # one item, two tokens
    hashes = np.array([1, 2, 3], dtype=np.uint64)
    seeds = np.array([7], dtype=np.uint64)
    line = (np.array([0, 1], dtype=np.int32), np.array([0], dtype=np.int32))
    indptr, indices = np.empty(3, dtype=np.int64), np.empty(3, dtype=np.int32)
    list_rows(value_ptr, hashes, seeds, *line, slots, 2, indptr, indices)
    assert indptr.tolist() == [0, 0, 0]  # an empty table knows no key
    bad_cases = [
        (value_ptr, hashes, seeds, np.array([0, 1], dtype=np.int32), np.array([1], dtype=np.int32), 2),  # item 1
        (np.array([[0, 2, 4]], dtype=np.int64), hashes, seeds, *line, 2),  # beyond the hashes
        (np.array([[0, 2, 1]], dtype=np.int64), hashes, seeds, *line, 2),  # decreasing
        (value_ptr, hashes, seeds, *line, 1),  # a token has 2 keys, scratch for 1
    ]
    for value_ptr_case, hashes_case, seeds_case, item_ptr, items, scratch in bad_cases:
        with pytest.raises(RuntimeError, match="ff_list_rows"):
            list_rows(value_ptr_case, hashes_case, seeds_case, item_ptr, items, slots, scratch, indptr, indices)


# -- the cache of per-value lists across batches --------------------------------


def _lists_as_strings(lists):
    return [
        [lists.names[code] for code in lists.codes[lists.ptr[t] : lists.ptr[t + 1]]] for t in range(len(lists.ptr) - 1)
    ]


@oracle_settings(80)
@given(
    batches=st.lists(
        st.lists(st.text(alphabet="ab|\\xY", min_size=0, max_size=5), min_size=1, max_size=6), min_size=1, max_size=4
    ),
    line=st.sampled_from(["ngrams(word[0],1,3)", "prefixes(word[0],1,2)", "suffixes(word[0],2,4)"]),
    limit=st.integers(0, 30),
)
def test_the_list_cache_gives_what_computing_anew_gives(batches, line, limit):
    import numpy as np

    from fstcrf.features.value_lists import ListCache, by_value, per_value

    observation = parse_template(line).predicates[0].observations[0]
    function = per_value(observation, None)
    cache = ListCache(function, limit=limit)  # small limits empty it between batches
    for words in batches:
        values = list(dict.fromkeys(words))
        codes = np.array([values.index(word) for word in words], dtype=np.int64)
        cached = cache.value_lists(codes, values)
        assert _lists_as_strings(cached) == _lists_as_strings(by_value(codes, values, function))
        assert len(cached.names) == len(set(cached.names))
    assert len(cache.names) <= limit + sum(len(function(word)) for word in set(words))  # bounded
