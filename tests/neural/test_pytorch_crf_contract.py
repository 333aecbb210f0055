"""fstcrf.torch.CRF keeps pytorch-crf 0.7.2's contract: parameters, initialisation,
results, shapes, repr and error messages, checked side by side with torchcrf."""

from tests.needs_torch import torch  # noqa: I001

import os

import pytest

from fstcrf.errors import FstcrfError
from fstcrf.torch import CRF

try:
    import torchcrf
except ImportError:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("needs pytorch-crf (pip install 'fstcrf[bench-torch]')", allow_module_level=True)


def pair(num_tags: int, batch_first: bool, seed: int = 0):
    torch.manual_seed(seed)
    ours = CRF(num_tags, batch_first=batch_first)
    torch.manual_seed(seed)
    theirs = torchcrf.CRF(num_tags, batch_first=batch_first)
    return ours, theirs


def batch(seq_length: int, batch_size: int, num_tags: int, batch_first: bool, seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    emissions = torch.randn(seq_length, batch_size, num_tags, generator=generator)
    tags = torch.randint(0, num_tags, (seq_length, batch_size), generator=generator)
    lengths = torch.randint(1, seq_length + 1, (batch_size,), generator=generator)
    lengths[0] = seq_length
    mask = torch.arange(seq_length)[:, None] < lengths[None, :]
    if batch_first:
        return emissions.transpose(0, 1), tags.transpose(0, 1), mask.transpose(0, 1)
    return emissions, tags, mask


def test_parameters_and_their_initialisation_match():
    ours, theirs = pair(7, False, seed=3)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for name, value in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[name], value), name
    assert repr(ours) == repr(theirs) == "CRF(num_tags=7)"
    assert (ours.num_tags, ours.batch_first) == (theirs.num_tags, theirs.batch_first)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean", "token_mean"])
@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_log_likelihood_and_decode_match(batch_first, reduction, engine):
    ours, theirs = pair(5, batch_first)
    ours.engine = engine
    emissions, tags, mask = batch(9, 6, 5, batch_first)
    for given_mask in (mask, None, mask.to(torch.uint8)):
        expected = theirs(emissions, tags, given_mask, reduction=reduction)
        got = ours(emissions, tags, given_mask, reduction=reduction)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
        assert ours.decode(emissions, given_mask) == theirs.decode(emissions, given_mask)


@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_gradients_match(engine):
    ours, theirs = pair(4, False)
    ours.engine = engine
    emissions, tags, mask = batch(6, 3, 4, False)
    for layer in (ours, theirs):
        layer(emissions, tags, mask).backward()
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_an_empty_batch_matches(batch_first, engine):
    """B = 0: a log-likelihood of 0 (sum), [] (none), NaN (the means over nothing) and
    no paths, as pytorch-crf gives; the parameters get zero gradients."""
    ours, theirs = pair(4, batch_first)
    ours.engine = engine
    shape = (0, 5) if batch_first else (5, 0)
    emissions, tags = torch.randn(*shape, 4), torch.zeros(shape, dtype=torch.long)
    for mask in (None, torch.ones(shape, dtype=torch.bool), torch.ones(shape, dtype=torch.uint8)):
        for reduction in ("none", "sum", "mean", "token_mean"):
            expected = theirs(emissions, tags, mask, reduction=reduction)
            got = ours(emissions, tags, mask, reduction=reduction)
            assert got.shape == expected.shape and got.dtype == expected.dtype
            torch.testing.assert_close(got, expected, equal_nan=True)
        assert ours.decode(emissions, mask) == theirs.decode(emissions, mask) == []
    ours(emissions, tags).backward()
    assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in ours.parameters())


def penalised_gradients(layer, emissions, tags, mask) -> list[torch.Tensor]:
    """The parameters' gradients of llh + |d llh / d emissions|^2 (a gradient penalty)."""
    emissions = emissions.clone().requires_grad_(True)
    llh = layer(emissions, tags, mask)
    (gradient,) = torch.autograd.grad(llh, emissions, create_graph=True)
    layer.zero_grad()
    (llh + gradient.pow(2).sum()).backward()
    return [parameter.grad for parameter in layer.parameters()]


def test_a_gradient_penalty_matches_on_the_torch_engine():
    ours, theirs = pair(3, False)
    ours.engine = "torch"
    emissions, tags, mask = batch(4, 3, 3, False)
    expected = penalised_gradients(theirs.double(), emissions.double(), tags, mask)
    got = penalised_gradients(ours.double(), emissions.double(), tags, mask)
    for name, a, b in zip(("start", "end", "transitions"), got, expected):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=name)


@pytest.mark.parametrize("engine", ["auto", "kernel"])
def test_the_kernel_engine_refuses_a_second_derivative(engine):
    """Its log Z's gradient comes from the kernel: a graph over it would be silently
    constant, so a backward that builds one raises, naming the engine that can."""
    ours, _ = pair(3, False)
    ours.engine = engine
    emissions, tags, mask = batch(4, 3, 3, False)
    with pytest.raises(FstcrfError, match=r"differentiable once.*engine='torch'"):
        penalised_gradients(ours, emissions, tags, mask)


def test_the_same_training_code_runs_on_both():
    """A training step written for torchcrf, unchanged, trains fstcrf's layer alike."""
    results = []
    for module in (torchcrf, __import__("fstcrf.torch", fromlist=["CRF"])):
        torch.manual_seed(0)
        model = module.CRF(3, batch_first=True)
        optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
        emissions, tags, mask = batch(5, 4, 3, True)
        for _ in range(5):
            optimiser.zero_grad()
            loss = -model(emissions, tags, mask=mask, reduction="mean")
            loss.backward()
            optimiser.step()
        results.append((loss.item(), model.decode(emissions, mask=mask)))
    assert results[0][1] == results[1][1]
    assert results[0][0] == pytest.approx(results[1][0], abs=1e-5)


def messages(call) -> ValueError:
    with pytest.raises(ValueError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(
    "case",
    [
        "no tags",
        "negative tags",
        "2-d emissions",
        "last dimension",
        "tags shape",
        "mask shape",
        "first step off",
        "first step off (batch first)",
        "reduction",
        "decode mask shape",
    ],
)
def test_error_messages_match(case):
    emissions, tags, mask = batch(4, 3, 5, False)
    off = mask.clone()
    off[0, 1] = False

    def run(module):
        batch_first = case.endswith("(batch first)")
        layer = module.CRF(5, batch_first=batch_first)
        if case == "no tags":
            return module.CRF(0)
        if case == "negative tags":
            return module.CRF(-3)
        if case == "2-d emissions":
            return layer(emissions[0], tags, mask)
        if case == "last dimension":
            return layer(emissions[..., :4], tags, mask)
        if case == "tags shape":
            return layer(emissions, tags[:3], mask)
        if case == "mask shape":
            return layer(emissions, tags, mask[:, :2])
        if case.startswith("first step off"):
            return layer(emissions.transpose(0, 1), tags.T, off.T) if batch_first else layer(emissions, tags, off)
        if case == "reduction":
            return layer(emissions, tags, mask, reduction="average")
        return layer.decode(emissions, mask[:3])

    theirs = messages(lambda: run(torchcrf))
    ours = messages(lambda: run(__import__("fstcrf.torch", fromlist=["CRF"])))
    assert isinstance(ours, FstcrfError)
    assert str(ours) == str(theirs)
