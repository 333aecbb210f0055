"""Bad input to the torch layers: a typed fstcrf error before any kernel call."""

from tests.needs_torch import torch  # noqa: I001

import pytest

from fstcrf.errors import (
    ArgumentTypeError,
    EmptySequenceError,
    FstcrfError,
    LabelError,
    ScoreError,
    ShapeError,
    TopologyError,
)
from fstcrf.torch import CRF
from fstcrf.torch import compiled


@pytest.fixture
def no_kernel(monkeypatch):
    """Fail a test that reaches the kernel."""

    def refuse(*args, **kwargs):
        raise AssertionError("the kernel was called")

    for name in ("potentials",):
        monkeypatch.setattr(compiled, name, refuse)


LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def test_nan_emissions_name_the_step(no_kernel):
    crf = CRF.from_labels(LABELS, scheme="iob2", batch_first=True)
    emissions = torch.zeros(2, 3, 5)
    emissions[1, 2, 4] = float("nan")
    with pytest.raises(ScoreError, match="sequence 1 at step 2"):
        crf(emissions, torch.zeros(2, 3, dtype=torch.long))


@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_padding_may_hold_anything(engine):
    crf = CRF.from_labels(LABELS, scheme="iob2", batch_first=True, engine=engine)
    emissions = torch.zeros(2, 3, 5, requires_grad=True)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.bool)
    padded = torch.where(mask[..., None], emissions, float("nan"))
    llh = crf(padded, torch.zeros(2, 3, dtype=torch.long), mask)
    llh.backward()
    assert torch.isfinite(llh) and torch.all(torch.isfinite(emissions.grad))


def test_tags_outside_the_label_set(no_kernel):
    crf = CRF(4)
    with pytest.raises(LabelError, match=r"tag 4 of sequence 1 at step 0 is outside \[0, 4\)"):
        crf(torch.zeros(2, 2, 4), torch.tensor([[0, 4], [1, 1]]))


def test_gold_tags_the_scheme_rejects(no_kernel):
    crf = CRF.from_labels(LABELS, scheme="iob2", batch_first=True)
    tags = torch.tensor([[0, 1, 2], [0, 2, 2]])  # O I-PER after O
    with pytest.raises(LabelError, match="sequence 1 .*'I-PER' at position 1"):
        crf(torch.zeros(2, 3, 5), tags)


def test_gold_tags_ending_where_no_sequence_may_end(no_kernel):
    crf = CRF.from_labels(["O", "B-X", "I-X", "E-X", "S-X"], scheme="bioes", batch_first=True)
    with pytest.raises(LabelError, match="end in 'B-X'"):
        crf(torch.zeros(1, 2, 5), torch.tensor([[0, 1]]))


def test_a_mask_with_holes(no_kernel):
    crf = CRF(3, batch_first=True)
    mask = torch.tensor([[1, 0, 1]], dtype=torch.bool)
    with pytest.raises(ShapeError, match="sequence 0 turns on again at step 2"):
        crf.decode(torch.zeros(1, 3, 3), mask)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda crf: crf(torch.zeros(3, 2, 3).numpy(), torch.zeros(3, 2, dtype=torch.long)), ArgumentTypeError),
        (
            lambda crf: crf(torch.zeros(3, 2, 3, dtype=torch.long), torch.zeros(3, 2, dtype=torch.long)),
            ArgumentTypeError,
        ),
        (lambda crf: crf(torch.zeros(3, 2, 3), torch.zeros(3, 2)), ArgumentTypeError),
        (
            lambda crf: crf(torch.zeros(3, 2, 3), torch.zeros(3, 2, dtype=torch.long), torch.ones(3, 2)),
            ArgumentTypeError,
        ),
        (lambda crf: crf.decode(torch.zeros(0, 2, 3)), EmptySequenceError),
        (lambda crf: crf(torch.zeros(0, 0, 3), torch.zeros(0, 0, dtype=torch.long)), EmptySequenceError),
        (lambda crf: crf.kbest(torch.zeros(3, 2, 3), 0), ShapeError),
        (lambda crf: crf.sample(torch.zeros(3, 2, 3), 2, seed=-1), ArgumentTypeError),
        (lambda crf: crf.sample(torch.zeros(3, 2, 3), 1.5), ArgumentTypeError),
    ],
)
def test_bad_arguments(no_kernel, call, error):
    with pytest.raises(error):
        call(CRF(3))


def test_bad_layers():
    with pytest.raises(FstcrfError, match="invalid engine"):
        CRF(3, engine="gpu")
    with pytest.raises(TopologyError, match="unknown scheme"):
        CRF.from_labels(LABELS, scheme="iob3")
    with pytest.raises(LabelError, match="not a iob2 label"):
        CRF.from_labels(LABELS + ["E-PER"], scheme="iob2")
    with pytest.raises(ArgumentTypeError):
        CRF.from_labels("O B-PER")
    with pytest.raises(TopologyError, match="order"):
        CRF.from_labels(LABELS, order=0)
    with pytest.raises(ArgumentTypeError):
        CRF(2.5)


def test_kernel_engine_refuses_other_devices():
    crf = CRF(3, engine="kernel")
    with pytest.raises(FstcrfError, match="CPU tensors"):
        crf.decode(torch.zeros(2, 1, 3, device="meta"))
