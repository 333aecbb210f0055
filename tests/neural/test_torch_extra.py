"""fstcrf.torch beyond pytorch-crf's contract: without torch it stops at once with an
error naming the extra; structures of thousands of states hold every move; joint layers
refuse second derivatives on the kernel and take empty batches."""

import numpy as np
import pytest

from fstcrf.engine.topology import Topology, kth_order
from fstcrf.errors import FstcrfError, TopologyError
from fstcrf.extras import install_hint
from needs import refusal_without


@pytest.fixture
def torch():
    """torch, for the tests below the first (which must run without it)."""
    return pytest.importorskip("torch", reason=f"needs torch: {install_hint('torch')}")


def test_fstcrf_torch_without_torch_names_the_extra():
    assert "fstcrf.torch needs torch, which is not installed: pip install 'fstcrf[torch]'" in refusal_without(
        "torch", "fstcrf.torch"
    )


def test_the_step_table_holds_every_move_of_the_topology(torch):
    """3,080 states: the step table, filled in one pass over the edges, holds each edge's
    move and each start (its speed is measured where speed is, not here: 0.29 s for ten
    builds with a loop over the states, 0.01 s without)."""
    from fstcrf.torch import LabelStructure

    topology = kth_order([f"L{i}" for i in range(55)], 2)
    structure = LabelStructure(topology)
    S = topology.num_states
    assert np.array_equal(structure.step[topology.edge_src, topology.state_label[topology.edge_dst]], topology.edge_dst)
    starts = np.flatnonzero(topology.start)
    assert np.array_equal(structure.step[S, topology.state_label[starts]], starts)
    assert (structure.step >= 0).sum() == topology.num_edges + len(starts)


def test_a_structure_refuses_a_topology_not_deterministic_in_its_labels(torch):
    from fstcrf.torch import LabelStructure

    topology = Topology(["a", "b"], [0, 0, 1], [2, 2], [0, 1], [False, False, True], [True, True, False])
    with pytest.raises(TopologyError, match="not deterministic in its labels"):
        LabelStructure(topology)


def joint_layer(torch, engine: str):
    """A JointCRF of a 3-tag layer and an IOB2 layer that reads it."""
    from fstcrf.torch import CRF, JointCRF

    torch.manual_seed(0)
    return JointCRF([CRF(3), CRF.from_labels(["O", "B-X", "I-X"], scheme="iob2")], reads=[False, True], engine=engine)


def test_the_joint_kernel_engine_refuses_a_second_derivative(torch):
    joint = joint_layer(torch, "kernel")
    emissions = [torch.randn(4, 2, 3, requires_grad=True) for _ in range(2)]
    tags = [torch.zeros(4, 2, dtype=torch.long)] * 2
    with pytest.raises(FstcrfError, match=r"differentiable once.*JointCRF\(\.\.\., engine='torch'\)"):
        torch.autograd.grad(joint(emissions, tags), emissions, create_graph=True)


@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_a_joint_layer_takes_an_empty_batch(torch, engine):
    joint = joint_layer(torch, engine)
    emissions, tags = [torch.randn(5, 0, 3)] * 2, [torch.zeros(5, 0, dtype=torch.long)] * 2
    assert joint(emissions, tags).item() == 0
    assert joint.decode(emissions) == [[], []]
