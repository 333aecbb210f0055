"""Composition under a joint grammar: exact inference under a per-token (factorised)
and a non-local (constrained product) grammar against brute-force enumeration of
the label tuples the grammar accepts; joint models of taggers that read nothing
from each other, their files, and bad input."""

from needs_pynini import pynini  # noqa: F401  (skips the module without pynini)

import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy import stats

from fstcrf import errors
from fstcrf.corpus.conll import Corpus, Sentence, read_conll
from fstcrf.corpus.schemes import restrict_types
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine import budget, joint
from fstcrf.engine.bounded import as_arrays
from fstcrf.engine.topology import first_order, iob2
from fstcrf.grammar import accepts, load_grammar, parse_grammar
from fstcrf.grammar.compiler import compile_grammar
from fstcrf.model import ChainCRF
from fstcrf.model.compatibility import joint_constraint
from fstcrf.model.compose import JointModel, compose, load_any
from fstcrf.model.inspection import info_text
from strategies import oracle_settings

#: Small component topologies over IOB labels (the joint grammars read hyphens and B-/I-).
TOPOLOGIES = {
    "first-order A": lambda: first_order(["O", "B-A", "I-A"]),
    "iob2 B": lambda: iob2(["B"]),
    "first-order C": lambda: first_order(["O", "B-C"]),
}
#: (grammar, number of components, per token?)
GRAMMARS = [("no_overlap", 2, True), ("no_overlap", 3, True), ("nest", 2, False)]


def grammar_space(names, grammar, factorise=True):
    components = [TOPOLOGIES[name]() for name in names]
    labels = joint.tuple_labels([t.labels for t in components])
    acceptor = as_arrays(compile_grammar(load_grammar(grammar), labels))
    return joint.JointSpace(components, constraint=acceptor, factorise=factorise), acceptor


def random_potentials(space, seed, lengths):
    """Components that read the lower component's state (emissions and transitions)."""
    rng = np.random.default_rng(seed)
    N = int(np.sum(lengths))
    emissions = [rng.normal(size=(N, space.sizes[0]))]
    emissions += [rng.normal(size=(N, space.sizes[k - 1], space.sizes[k])) for k in range(1, len(space.sizes))]
    transitions = [rng.normal(size=space.transition_shape(k)) for k in range(len(space.sizes))]
    return joint.JointPotentials(
        space,
        joint.joint_emissions(space, emissions),
        lengths,
        transitions,
        rng.normal(size=space.num_states),
        rng.normal(size=space.num_states),
    )


def enumerate_accepted(jp, acceptor, sentence):
    """(joint state paths [M, T], their scores [M]) of every joint state sequence of
    one sentence that the components allow and the grammar accepts."""
    product = jp.to_product()
    rows = jp.sentence(sentence)
    start, final = (np.where(np.isfinite(v), v, 0.0) for v in (product.start, product.final))
    one = type(product)(product.topology, product.emissions[rows], None, product.transitions, start, final)
    paths, scores = [], []
    for path in itertools.product(range(jp.space.num_states), repeat=rows.stop - rows.start):
        score = float(one.score(np.array(path))[0])
        labels = [jp.space.labels[jp.space.state_tuple[p]] for p in path]
        if np.isfinite(score) and accepts(acceptor, labels):
            paths.append(path)
            scores.append(score)
    return np.array(paths), np.array(scores)


@oracle_settings(40)
@given(
    data=st.data(),
    grammar=st.sampled_from(GRAMMARS),
    seed=st.integers(0, 10_000),
    factorise=st.booleans(),
)
def test_joint_grammar_inference_equals_brute_force(data, grammar, seed, factorise):
    name, count, per_token = grammar
    choices = sorted(TOPOLOGIES) if per_token else ["first-order A", "iob2 B"]  # nest reads B- and I- labels
    names = data.draw(st.lists(st.sampled_from(choices), min_size=count, max_size=count))
    lengths = data.draw(st.lists(st.integers(1, 3 if count == 2 else 2), min_size=1, max_size=2))
    try:
        space, acceptor = grammar_space(names, name, factorise)
        jp = random_potentials(space, seed, lengths)
    except (errors.InfeasibleError, errors.CompositionError):
        return  # no accepted sequence of such a length: enumeration finds none either
    assert space.decoder.startswith("factorised" if per_token and factorise else "product, ")
    assert (space.constraint is None) == (per_token and factorise)
    best = joint.joint_viterbi(jp)
    log_z, marginals = joint.joint_forward_backward(jp)
    top = joint.joint_kbest(jp, 4)
    for b in range(jp.num_sequences):
        rows = jp.sentence(b)
        paths, scores = enumerate_accepted(jp, acceptor, b)
        assert len(scores)
        np.testing.assert_allclose(best.scores[b], scores.max(), rtol=1e-9, atol=1e-9)
        assert tuple(best.paths[rows]) in {tuple(p) for p in paths[scores == scores.max()]}
        np.testing.assert_allclose(log_z[b], np.logaddexp.reduce(scores), rtol=1e-9, atol=1e-9)
        weights = np.exp(scores - np.logaddexp.reduce(scores))
        expected = np.zeros((len(paths[0]), space.num_states))
        for path, weight in zip(paths, weights):
            expected[np.arange(len(path)), path] += weight
        np.testing.assert_allclose(marginals[rows], expected, atol=1e-9)
        ranked = np.sort(scores)[::-1][:4]
        np.testing.assert_allclose(top.scores[b, : len(ranked)], ranked, rtol=1e-9, atol=1e-9)
        assert top.found[b] == len(ranked)
        for r in range(top.found[b]):
            assert tuple(top.paths[r, rows]) in {tuple(p) for p in paths}


@pytest.mark.parametrize("grammar, count", [("no_overlap", 2), ("nest", 2)])
def test_joint_grammar_samples_follow_the_enumerated_distribution(grammar, count):
    space, acceptor = grammar_space(["first-order A", "iob2 B"][:count], grammar)
    jp = random_potentials(space, 5, [3])
    paths, scores = enumerate_accepted(jp, acceptor, 0)
    probabilities = np.exp(scores - np.logaddexp.reduce(scores))
    draws = joint.joint_sample(jp, 20_000, seed=1)
    index = {tuple(path): i for i, path in enumerate(paths)}
    observed = np.bincount([index[tuple(draw)] for draw in draws], minlength=len(paths))
    kept = probabilities * len(draws) >= 5  # pool the rare cells
    expected = np.append(probabilities[kept], probabilities[~kept].sum()) * len(draws)
    counts = np.append(observed[kept], observed[~kept].sum())
    if expected[-1] == 0:
        expected, counts = expected[:-1], counts[:-1]
    statistic = float(np.sum((counts - expected) ** 2 / expected))
    assert stats.chi2.sf(statistic, len(expected) - 1) > 1e-4


@oracle_settings(25)
@given(seed=st.integers(0, 10_000), lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4))
def test_factorised_and_product_decoders_agree_under_a_per_token_grammar(seed, lengths):
    factorised, _ = grammar_space(["first-order A", "iob2 B"], "no_overlap")
    product, _ = grammar_space(["first-order A", "iob2 B"], "no_overlap", factorise=False)
    assert factorised.decoder == "factorised" and product.decoder.startswith("product, ")
    one = random_potentials(factorised, seed, lengths)
    other = joint.JointPotentials(
        product,
        one.emissions,
        one.lengths,
        one.transitions,
        np.where(np.isfinite(one.start), one.start, 0),
        np.where(np.isfinite(one.final), one.final, 0),
    )
    np.testing.assert_allclose(joint.joint_viterbi(one).scores, joint.joint_viterbi(other).scores, rtol=1e-9)
    first, second = joint.joint_posteriors(one), joint.joint_posteriors(other)
    np.testing.assert_allclose(first.log_z, second.log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(first.node_marginals, second.node_marginals, atol=1e-9)
    for a, b in zip(first.edge_counts, second.edge_counts):
        np.testing.assert_allclose(a, b, atol=1e-9)


# -- joint models of taggers that read nothing from each other ----------------------------

TRAIN = DATA_DIR / "demo_train.txt"
TEST = DATA_DIR / "demo_test.txt"


@pytest.fixture(scope="module")
def train():
    return read_conll(TRAIN)


@pytest.fixture(scope="module")
def test_sentences():
    return [s for s in read_conll(TEST).sentences if len(s) <= 25][:30]


@pytest.fixture(scope="module")
def np_model(train):
    return ChainCRF(template="bias\nword[0]\npos[0]\npos[-1]", max_iter=15).fit(
        restrict_types(train, "chunk", {"NP"}), target="chunk"
    )


@pytest.fixture(scope="module")
def vp_model(train):
    return ChainCRF(template="bias\nword[0]\npos[0]\npos[1]", max_iter=15).fit(
        restrict_types(train, "chunk", {"VP"}), target="chunk"
    )


@pytest.fixture(scope="module")
def chunk_model(train):
    return ChainCRF(template="bias\nword[0]\npos[0]", max_iter=15, grammar="iob2").fit(train, target="chunk")


def test_independent_taggers_under_no_overlap(np_model, vp_model, test_sentences, tmp_path):
    composed = compose([np_model, vp_model], joint="no_overlap")
    assert composed.space.decoder == "factorised" and composed.grammar == "no_overlap"
    nps, vps = composed.predict(test_sentences)
    for a, b in zip(nps, vps):
        assert all(x == "O" or y == "O" for x, y in zip(a, b))
    # the factorised search equals the brute force over accepted tuples on a short sentence
    jp = composed.potentials([Sentence({name: column[:3] for name, column in test_sentences[0].columns.items()})])
    _, scores = enumerate_accepted(jp, composed.constraint, 0)
    np.testing.assert_allclose(joint.joint_viterbi(jp).scores[0], scores.max(), rtol=1e-9)
    path = tmp_path / "joint.model"
    composed.save(path)
    loaded = load_any(path)
    assert isinstance(loaded, JointModel) and loaded.grammar == "no_overlap"
    assert loaded.predict(test_sentences) == [nps, vps]
    assert "joint grammar: no_overlap" in info_text(loaded) and "decoder: factorised" in info_text(loaded)


def test_a_non_local_grammar_over_a_grammar_trained_component(chunk_model, np_model, test_sentences, tmp_path):
    composed = compose([chunk_model, np_model], joint="nest")
    assert composed.space.decoder.startswith("product, ")
    assert composed.topologies[0] is not chunk_model.topology_  # decoded under its training grammar
    chunks, nps = composed.predict(test_sentences)
    nest = compile_grammar(load_grammar("nest"), composed.space.labels)
    iob2_fst = compile_grammar(load_grammar("iob2"), chunk_model.labels_)
    for lower, upper in zip(chunks, nps):
        assert accepts(nest, [f"{a}/{b}" for a, b in zip(lower, upper)])
        assert accepts(iob2_fst, lower)
    marginals = composed.predict_marginals(test_sentences[:5])
    for per_sentence in marginals:
        for m in per_sentence:
            np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-9)
    path = tmp_path / "nest.model"
    composed.save(path)
    loaded = load_any(path)
    assert loaded.predict(test_sentences) == [chunks, nps]
    assert "decoder: product, " in info_text(loaded)
    with pytest.raises(errors.CompositionError, match="mode 'joint'"):
        composed.predict(test_sentences, mode="cascade")


def test_bad_joint_grammars(np_model, vp_model, chunk_model, train, test_sentences):
    with pytest.raises(errors.UnknownLabelError, match=r"model 1 \(chunk\) has no label B-XX"):
        compose([np_model, vp_model], joint=parse_grammar('start = ("O/O" | "O/B-XX")* ;'))
    with pytest.raises(errors.UnknownLabelError, match=r"model 0 \(chunk\) has no label I-Q\*"):
        compose([np_model, vp_model], joint=parse_grammar("start = [I-Q*/*]* ;"))
    with pytest.raises(errors.UnknownLabelError, match=r"model 1 \(chunk\) has no label I-Z\{T\}"):
        compose([np_model, vp_model], joint=parse_grammar("x = any T: [O/B-{T}] [O/I-Z{T}]* ; start = x* ;"))
    reader = ChainCRF(template="bias\npos[0]", reads="pos", max_iter=3).fit(train, target="chunk")
    with pytest.raises(errors.CompositionError, match="never produces"):
        compose([np_model, reader], joint="no_overlap")
    with budget.limits(max_states=30):  # 21 joint states, and the grammar's states on top
        with pytest.raises(errors.BudgetError, match="under the joint constraint"):
            compose([chunk_model, np_model], joint="nest")
    with pytest.raises(errors.CompositionError, match="no label sequence that the components can produce"):
        compose([chunk_model, np_model], joint=parse_grammar('start = "I-NP/O"+ ;'))  # iob2 never starts with I-
    per_token = compose([chunk_model, np_model], joint=parse_grammar('start = "I-NP/O"* ;'))
    with pytest.raises(errors.InfeasibleError):
        per_token.predict(test_sentences[:2])
    slashed = [
        Sentence({**s.columns, "chunk": [t.replace("-", "/") if t != "O" else t for t in s.columns["chunk"]]})
        for s in train.sentences[:40]
    ]
    odd = ChainCRF(template="bias\nword[0]", max_iter=3).fit(Corpus(train.column_names, slashed), target="chunk")
    with pytest.raises(errors.LabelError, match=r"model 1 \(chunk\) has the label 'B/"):
        compose([np_model, odd], joint="no_overlap")
    with pytest.raises(errors.CompositionError, match="first model of a chain reads 'pos'"):
        compose([reader, np_model], joint="no_overlap")
    with pytest.raises(errors.CompositionError, match="--joint"):
        compose([np_model, vp_model])


def test_joint_constraint_is_over_the_tuple_labels(np_model, vp_model):
    acceptor = joint_constraint([np_model, vp_model], "no_overlap")
    labels = joint.tuple_labels([np_model.labels_, vp_model.labels_])
    assert [acceptor.symbols[key] for key in range(1, len(labels) + 1)] == list(labels)
    assert joint.is_per_token(acceptor)


def test_a_grammar_trained_reader_composes_and_keeps_to_its_grammar(train, test_sentences):
    pos = ChainCRF(template="pos", max_iter=10).fit(train, target="pos")
    reader = ChainCRF(template="chunking-reads-pos", reads="pos", max_iter=10, grammar="iob2").fit(
        train, target="chunk"
    )
    composed = compose([pos, reader])
    valid = compile_grammar(load_grammar("iob2"), reader.labels_)
    for mode in ("joint", "cascade", "kbest"):
        _, chunks = composed.predict(test_sentences, mode=mode, k=3)
        assert all(accepts(valid, labels) for labels in chunks)
    best = joint.joint_viterbi(composed.potentials(test_sentences[:3]))
    top = joint.joint_kbest(composed.potentials(test_sentences[:3]), 2)
    np.testing.assert_allclose(top.scores[:, 0], best.scores, rtol=1e-9)
