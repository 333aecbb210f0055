"""Half-precision emissions (float16, bfloat16, as under torch.autocast) are scored
in the dtype they promote to with the layer's parameters, float32, as pytorch-crf
scores them: a long sequence's log-likelihood is as close to float64's as
pytorch-crf's, on both engines (before, log Z was rounded to half precision: off
by up to 6 at 400 steps)."""

from tests.needs_torch import torch  # noqa: I001

import copy
import os

import pytest

from fstcrf.torch import CRF

try:
    import torchcrf
except ImportError:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("needs pytorch-crf (pip install 'fstcrf[bench-torch]')", allow_module_level=True)

NUM_TAGS = 9


def layers(engine: str):
    """(fstcrf's layer, pytorch-crf's, pytorch-crf's in float64), with equal parameters."""
    torch.manual_seed(1)
    ours = CRF(NUM_TAGS, engine=engine)
    torch.manual_seed(1)
    theirs = torchcrf.CRF(NUM_TAGS)
    return ours, theirs, copy.deepcopy(theirs).double()


def half_batch(steps: int, dtype: torch.dtype):
    generator = torch.Generator().manual_seed(0)
    emissions = (torch.randn(steps, 3, NUM_TAGS, generator=generator) * 3).to(dtype)
    tags = torch.randint(NUM_TAGS, (steps, 3), generator=generator)
    mask = torch.ones(steps, 3, dtype=torch.bool)
    mask[steps // 2 :, 1] = False
    return emissions, tags, mask


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_half_emissions_score_as_pytorch_crf_and_float64(engine, dtype):
    ours, theirs, exact = layers(engine)
    emissions, tags, mask = half_batch(400, dtype)
    expected = exact(emissions.double(), tags, mask, reduction="none")
    got = ours(emissions, tags, mask, reduction="none")
    theirs_got = theirs(emissions, tags, mask, reduction="none")
    assert got.dtype == theirs_got.dtype == torch.float32
    float32_error = 2e-6 * expected.abs()  # what float32 sums of 400 steps keep: ~4e-3 at |llh| = 2,000
    assert torch.all((theirs_got.double() - expected).abs() < float32_error)
    assert torch.all((got.double() - expected).abs() < float32_error)
    ours(emissions, tags, mask).backward()
    exact(emissions.double(), tags, mask).backward()
    for (name, a), (_, b) in zip(ours.named_parameters(), exact.named_parameters()):
        torch.testing.assert_close(a.grad.double(), b.grad, rtol=0, atol=1e-3, msg=name)  # pytorch-crf: 8e-3


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_half_emissions_decode_and_infer_in_float32(engine, dtype):
    ours, theirs, _ = layers(engine)
    emissions, _, mask = half_batch(12, dtype)
    assert ours.decode(emissions, mask) == theirs.decode(emissions, mask)
    assert ours.log_partition(emissions, mask).dtype == torch.float32
    assert ours.marginals(emissions, mask).dtype == torch.float32
    assert ours.kbest(emissions, 2, mask)[1].dtype == torch.float32


@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_a_half_precision_layer_scores_in_its_own_dtype(engine):
    """Parameters and emissions both bfloat16: bfloat16 throughout, as in pytorch-crf."""
    ours, theirs, _ = layers(engine)
    emissions, tags, mask = half_batch(5, torch.bfloat16)
    got = ours.to(torch.bfloat16)(emissions, tags, mask, reduction="none")
    expected = theirs.to(torch.bfloat16)(emissions, tags, mask, reduction="none")
    assert got.dtype == expected.dtype == torch.bfloat16
    torch.testing.assert_close(got, expected, rtol=0.02, atol=0.5)
