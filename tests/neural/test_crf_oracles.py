"""fstcrf.torch.CRF against brute-force enumeration, gradcheck, and its two engines
against each other: log Z, log-likelihoods, marginals, Viterbi, k-best, samples."""

from tests.needs_torch import torch  # noqa: I001  (skips the module without torch)

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from fstcrf.torch import CRF
from tests.neural.oracle import Enumeration
from tests.strategies import oracle_settings

ENGINES = ("kernel", "torch")
KINDS = ("full", "iob2", "bioes", "order2", "iob2-order2", "iob1")


def layer(kind: str, rng: np.random.Generator, engine: str | None = None) -> CRF:
    """A layer of the given kind with random scores (labels in a random order), running
    on ``engine`` when one is given."""
    if kind == "full":
        crf = CRF(int(rng.integers(1, 5)), batch_first=True)
    else:
        labels = {
            "iob2": ["O", "B-A", "I-A", "B-B", "I-B"],
            "iob1": ["O", "B-A", "I-A"],
            "bioes": ["O", "B-A", "I-A", "E-A", "S-A"],
            "order2": ["x", "y", "z"][: int(rng.integers(1, 4))],
            "iob2-order2": ["O", "B-A", "I-A"],
        }[kind]
        labels = [labels[i] for i in rng.permutation(len(labels))]
        scheme = {"order2": None, "iob2-order2": "iob2"}.get(kind, kind)
        order = 2 if kind.endswith("order2") else 1
        crf = CRF.from_labels(labels, scheme=scheme, order=order, batch_first=True)
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.copy_(torch.from_numpy(rng.normal(size=parameter.shape)))
    if engine is not None:
        crf.engine = engine
    return crf.double()


def state_scores(crf: CRF) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    transitions, start, final = crf.edge_scores()
    return tuple(x.detach().numpy() for x in (transitions, start, final))


def instance(crf: CRF, rng: np.random.Generator, max_length: int = 4):
    """(emissions [B, T, L], mask [B, T], enumerations per sequence, gold tags [B, T])."""
    lengths = rng.integers(1, max_length + 1, size=int(rng.integers(1, 4)))
    emissions = rng.normal(scale=2.0, size=(len(lengths), int(lengths.max()), crf.num_tags))
    mask = np.arange(lengths.max())[None, :] < lengths[:, None]
    transitions, start, final = state_scores(crf)
    oracles = [
        Enumeration(crf.structure.topology, emissions[b, :n], transitions, start, final) for b, n in enumerate(lengths)
    ]
    tags = np.zeros(mask.shape, dtype=np.int64)
    for b, oracle in enumerate(oracles):
        tags[b, : lengths[b]] = oracle.tags[int(rng.integers(len(oracle.tags)))]
    return torch.from_numpy(emissions), torch.from_numpy(mask), oracles, torch.from_numpy(tags)


@pytest.mark.parametrize("engine", ENGINES)
@oracle_settings(60)
@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**32 - 1))
def test_inference_equals_enumeration(engine, kind, seed):
    rng = np.random.default_rng(seed)
    crf = layer(kind, rng, engine)
    emissions, mask, oracles, tags = instance(crf, rng)
    log_z = crf.log_partition(emissions, mask).detach().numpy()
    np.testing.assert_allclose(log_z, [o.log_z for o in oracles], rtol=0, atol=1e-9)
    llh = crf(emissions, tags, mask, reduction="none").detach().numpy()
    expected = [o.score_of(tags[b, : len(o.tags[0])].tolist()) - o.log_z for b, o in enumerate(oracles)]
    np.testing.assert_allclose(llh, expected, rtol=0, atol=1e-9)
    marginals = crf.marginals(emissions, mask).numpy()
    for b, oracle in enumerate(oracles):
        n = len(oracle.tags[0])
        np.testing.assert_allclose(marginals[b, :n], oracle.marginals(crf.num_tags), atol=1e-9)
        assert np.all(marginals[b, n:] == 0)
    assert crf.decode(emissions, mask) == [list(o.best()) for o in oracles]
    k = 3
    paths, scores = crf.kbest(emissions, k, mask)
    for b, oracle in enumerate(oracles):
        ranked = oracle.ranked(k)
        np.testing.assert_allclose(scores[b, : len(ranked)].numpy(), [s for s, _ in ranked], atol=1e-9)
        assert torch.all(torch.isinf(scores[b, len(ranked) :]))
        n = len(oracle.tags[0])
        for r, (_, expected_tags) in enumerate(ranked):
            assert tuple(paths[r, b, :n].tolist()) == expected_tags
            assert torch.all(paths[r, b, n:] == -1)
        assert torch.all(paths[len(ranked) :, b] == -1)


@pytest.mark.parametrize("engine", ENGINES)
@oracle_settings(25)
@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**32 - 1))
def test_gradient_is_observed_minus_expected(engine, kind, seed):
    """d llh / d emission[t, l] = [gold tag at t is l] - p(tag l at t)."""
    rng = np.random.default_rng(seed)
    crf = layer(kind, rng, engine)
    emissions, mask, oracles, tags = instance(crf, rng)
    emissions.requires_grad_(True)
    crf(emissions, tags, mask).backward()
    for b, oracle in enumerate(oracles):
        n = len(oracle.tags[0])
        observed = np.eye(crf.num_tags)[tags[b, :n].numpy()]
        np.testing.assert_allclose(emissions.grad[b, :n].numpy(), observed - oracle.marginals(crf.num_tags), atol=1e-9)
        assert torch.all(emissions.grad[b, n:] == 0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean", "token_mean"])
def test_gradcheck(engine, kind, reduction):
    rng = np.random.default_rng(7)
    crf = layer(kind, rng, engine)
    emissions, mask, _, tags = instance(crf, rng, max_length=5)
    names = [name for name, _ in crf.named_parameters()]
    inputs = [emissions.clone().requires_grad_(True)] + [
        p.detach().clone().requires_grad_(True) for p in crf.parameters()
    ]

    def function(emissions, *parameters):
        return torch.func.functional_call(
            crf, dict(zip(names, parameters)), (emissions, tags), {"mask": mask, "reduction": reduction}
        )

    assert torch.autograd.gradcheck(function, inputs, eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_engines_agree_on_a_larger_batch(kind):
    rng = np.random.default_rng(11)
    crf = layer(kind, rng)
    lengths = rng.integers(1, 31, size=8)
    emissions = torch.from_numpy(rng.normal(scale=3.0, size=(8, int(lengths.max()), crf.num_tags)))
    mask = torch.from_numpy(np.arange(lengths.max())[None, :] < lengths[:, None])
    tags = torch.from_numpy(
        np.stack([np.pad(decoded, (0, int(lengths.max()) - len(decoded))) for decoded in crf.decode(emissions, mask)])
    )
    results = {}
    for engine in ENGINES:
        crf.engine = engine
        crf.zero_grad()
        em = emissions.clone().requires_grad_(True)
        llh = crf(em, tags, mask, reduction="none")
        llh.sum().backward()
        results[engine] = {
            "llh": llh.detach(),
            "grad": [em.grad] + [p.grad.clone() for p in crf.parameters()],
            "marginals": crf.marginals(emissions, mask),
            "decode": crf.decode(emissions, mask),
            "kbest": crf.kbest(emissions, 4, mask),
        }
    kernel, plain = results["kernel"], results["torch"]
    torch.testing.assert_close(kernel["llh"], plain["llh"], rtol=0, atol=1e-6)
    for a, b in zip(kernel["grad"], plain["grad"]):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    torch.testing.assert_close(kernel["marginals"], plain["marginals"], rtol=0, atol=1e-6)
    assert kernel["decode"] == plain["decode"]
    torch.testing.assert_close(kernel["kbest"][1], plain["kbest"][1], rtol=0, atol=1e-6)
    assert torch.equal(kernel["kbest"][0], plain["kbest"][0])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["full", "bioes", "iob2-order2"])
def test_samples_follow_the_distribution(engine, kind):
    """Chi-square of 20,000 draws of each sequence against the enumerated probabilities."""
    rng = np.random.default_rng(3)
    crf = layer(kind, rng, engine)
    emissions, mask, oracles, _ = instance(crf, rng, max_length=3)
    draws = crf.sample(emissions, 20000, mask, seed=5)
    assert draws.shape == (20000, *mask.shape)
    for b, oracle in enumerate(oracles):
        n = len(oracle.tags[0])
        assert torch.all(draws[:, b, n:] == -1)
        index = {tags: i for i, tags in enumerate(oracle.tags)}
        counts = np.zeros(len(oracle.tags))
        for row in draws[:, b, :n].tolist():
            counts[index[tuple(row)]] += 1  # a KeyError is a draw the topology forbids
        expected = oracle.probabilities * len(draws)
        keep = expected >= 5
        observed = np.append(counts[keep], counts[~keep].sum())
        wanted = np.append(expected[keep], expected[~keep].sum())
        if wanted[-1] == 0:
            observed, wanted = observed[:-1], wanted[:-1]
        if len(wanted) > 1:
            assert stats.chisquare(observed, wanted).pvalue > 1e-3


def test_samples_are_reproducible_for_a_seed():
    crf = layer("iob2", np.random.default_rng(1))
    emissions, mask, _, _ = instance(crf, np.random.default_rng(2))
    for engine in ENGINES:
        crf.engine = engine
        assert torch.equal(crf.sample(emissions, 50, mask, seed=9), crf.sample(emissions, 50, mask, seed=9))
