"""fstcrf.torch.JointCRF against enumeration of the product space, gradcheck, and
its two engines (the kernel's factorised joint pass, the dense product in torch)."""

from tests.needs_torch import torch  # noqa: I001

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.errors import LabelError
from fstcrf.torch import CRF, JointCRF
from tests.neural.oracle import state_paths
from tests.strategies import oracle_settings

ENGINES = ("kernel", "torch")


def joint_layer(seed: int, reads: bool, compatible: bool) -> JointCRF:
    rng = np.random.default_rng(seed)
    pos = CRF(int(rng.integers(1, 4)), batch_first=True)
    ner = CRF.from_labels(["O", "B-X", "I-X"], scheme="iob2", batch_first=True)
    table = None
    if compatible:
        table = rng.random((pos.num_tags, 3)) < 0.7
        table[:, 0] = True  # O goes with every tag: no length is infeasible
    layer = JointCRF([pos, ner], reads=[False, reads], compatible=table)
    with torch.no_grad():
        for parameter in layer.parameters():
            parameter.copy_(torch.from_numpy(rng.normal(size=parameter.shape)))
    return layer.double()


def enumerate_joint(layer: JointCRF, emissions: list[np.ndarray]):
    """(tag tuples per layer, their scores) of one sequence, by brute force."""
    length = len(emissions[0])
    transitions = [t.detach().numpy() for t in layer.component_transitions()]
    ends = [[x.detach().numpy() for x in crf.edge_scores()[1:]] for crf in layer.layers]
    topologies = [crf.structure.topology for crf in layer.layers]
    edge_ids = [t.edge_ids for t in topologies]
    allowed = layer.space.allowed
    results = []
    for combination in itertools.product(*[state_paths(t, length) for t in topologies]):
        if allowed is not None:
            joint = layer.space.joint_state(np.stack([np.array(p) for p in combination], -1))
            if not allowed[joint].all():
                continue
        total = 0.0
        for k, (path, topology) in enumerate(zip(combination, topologies)):
            labels = topology.state_label[list(path)]
            total += ends[k][0][path[0]] + ends[k][1][path[-1]] + emissions[k][np.arange(length), labels].sum()
            for t in range(1, length):
                lower = combination[k - 1][t] if transitions[k].shape[0] > 1 else 0
                total += transitions[k][lower, edge_ids[k][path[t - 1], path[t]]]
        tags = tuple(
            tuple(int(x) for x in topology.state_label[list(path)]) for path, topology in zip(combination, topologies)
        )
        results.append((tags, total))
    return results


def instance(layer: JointCRF, rng):
    lengths = rng.integers(1, 4, size=int(rng.integers(1, 3)))
    lengths[0] = lengths.max()
    emissions = [rng.normal(size=(len(lengths), int(lengths.max()), crf.num_tags)) for crf in layer.layers]
    mask = np.arange(lengths.max())[None, :] < lengths[:, None]
    return [torch.from_numpy(e) for e in emissions], torch.from_numpy(mask), lengths


@pytest.mark.parametrize("engine", ENGINES)
@oracle_settings(30)
@given(seed=st.integers(0, 2**32 - 1), reads=st.booleans(), compatible=st.booleans())
def test_joint_inference_equals_enumeration(engine, seed, reads, compatible):
    layer = joint_layer(seed, reads, compatible)
    layer.engine = engine
    rng = np.random.default_rng(seed + 1)
    emissions, mask, lengths = instance(layer, rng)
    oracles = [enumerate_joint(layer, [e[b, :n].numpy() for e in emissions]) for b, n in enumerate(lengths)]
    log_z = [np.logaddexp.reduce([s for _, s in o]) for o in oracles]
    np.testing.assert_allclose(layer.log_partition(emissions, mask).detach().numpy(), log_z, atol=1e-9)
    gold = [o[int(rng.integers(len(o)))][0] for o in oracles]
    tags = [torch.tensor([list(g[k]) + [0] * (int(lengths.max()) - len(g[k])) for g in gold]) for k in range(2)]
    llh = layer(emissions, tags, mask, reduction="none").detach().numpy()
    expected = [dict(o)[g] - z for o, g, z in zip(oracles, gold, log_z)]
    np.testing.assert_allclose(llh, expected, atol=1e-9)
    best = [max(o, key=lambda pair: pair[1])[0] for o in oracles]
    decoded = layer.decode(emissions, mask)
    assert [[tuple(decoded[k][b]) for k in range(2)] for b in range(len(lengths))] == [list(b) for b in best]
    marginals = layer.marginals(emissions, mask)
    for b, (o, z) in enumerate(zip(oracles, log_z)):
        for k, crf in enumerate(layer.layers):
            expected_marginals = np.zeros((lengths[b], crf.num_tags))
            for tag_tuple, score in o:
                expected_marginals[np.arange(lengths[b]), list(tag_tuple[k])] += np.exp(score - z)
            np.testing.assert_allclose(marginals[k][b, : lengths[b]].numpy(), expected_marginals, atol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("reduction", ["none", "sum", "token_mean"])
def test_joint_gradcheck(engine, reduction):
    layer = joint_layer(3, reads=True, compatible=True)
    layer.engine = engine
    rng = np.random.default_rng(4)
    emissions, mask, lengths = instance(layer, rng)
    tags = [
        torch.from_numpy(np.stack([np.array(d + [0] * (mask.shape[1] - len(d))) for d in decoded]))
        for decoded in layer.decode(emissions, mask)
    ]
    names = [name for name, _ in layer.named_parameters()]
    inputs = [e.clone().requires_grad_(True) for e in emissions] + [
        p.detach().clone().requires_grad_(True) for p in layer.parameters()
    ]

    def function(pos_emissions, ner_emissions, *parameters):
        llh = torch.func.functional_call(
            layer,
            dict(zip(names, parameters)),
            ([pos_emissions, ner_emissions], tags),
            {"mask": mask, "reduction": reduction},
        )
        # weight sequences differently, so that the kernel's backward groups them
        return llh * torch.arange(1, len(llh) + 1, dtype=llh.dtype) if reduction == "none" else llh

    assert torch.autograd.gradcheck(function, inputs, eps=1e-6, atol=1e-6)


def test_engines_agree_on_a_larger_joint_batch():
    layer = joint_layer(8, reads=True, compatible=True)
    rng = np.random.default_rng(9)
    lengths = rng.integers(1, 25, size=6)
    emissions = [torch.from_numpy(rng.normal(size=(6, int(lengths.max()), crf.num_tags)) * 2) for crf in layer.layers]
    mask = torch.from_numpy(np.arange(lengths.max())[None, :] < lengths[:, None])
    results = {}
    for engine in ENGINES:
        layer.engine = engine
        layer.zero_grad()
        log_z = layer.log_partition(emissions, mask)
        log_z.sum().backward()
        results[engine] = (log_z.detach(), [p.grad.clone() for p in layer.parameters()], layer.decode(emissions, mask))
    torch.testing.assert_close(results["kernel"][0], results["torch"][0], rtol=0, atol=1e-6)
    for a, b in zip(results["kernel"][1], results["torch"][1]):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    assert results["kernel"][2] == results["torch"][2]


def test_incompatible_gold_tags_are_refused():
    pos = CRF(2, batch_first=True)
    ner = CRF(2, batch_first=True)
    layer = JointCRF([pos, ner], compatible=np.array([[True, False], [True, True]]))
    with pytest.raises(LabelError, match="sequence 0 at step 1"):
        layer([torch.zeros(1, 2, 2), torch.zeros(1, 2, 2)], [torch.tensor([[1, 0]]), torch.tensor([[1, 1]])])
