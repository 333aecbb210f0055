"""CRF layers under user grammars (compiled with pynini): exact against enumeration,
and decoding never leaves the grammar's language."""

from tests.needs_torch import torch  # noqa: I001

import numpy as np
import pytest

from fstcrf.grammar import accepts, compile_grammar, parse_grammar
from fstcrf.torch import CRF
from tests.neural.oracle import Enumeration

pytestmark = pytest.mark.pynini

LABELS = ["O", "B-A", "I-A", "B-B", "I-B"]
ONE_CHUNK = "start = O* (any T: B-{T} I-{T}*) O* ;"


def random_scores(crf: CRF, seed: int) -> CRF:
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.copy_(torch.from_numpy(rng.normal(size=parameter.shape)))
    return crf.double()


@pytest.mark.parametrize("engine", ["kernel", "torch"])
@pytest.mark.parametrize("grammar, order", [(ONE_CHUNK, 1), (ONE_CHUNK, 2), ("iob2", 2)])
def test_grammar_layers_equal_enumeration(engine, grammar, order):
    crf = random_scores(CRF.from_labels(LABELS, grammar=grammar, order=order, batch_first=True, engine=engine), 4)
    rng = np.random.default_rng(5)
    emissions = torch.from_numpy(rng.normal(size=(2, 4, 5)))
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.bool)
    transitions, start, final = (x.detach().numpy() for x in crf.edge_scores())
    oracles = [
        Enumeration(crf.structure.topology, emissions[b, :n].numpy(), transitions, start, final)
        for b, n in enumerate([4, 3])
    ]
    np.testing.assert_allclose(
        crf.log_partition(emissions, mask).detach().numpy(), [o.log_z for o in oracles], atol=1e-9
    )
    assert crf.decode(emissions, mask) == [list(o.best()) for o in oracles]
    if grammar == ONE_CHUNK:
        assert all(sum(LABELS[t].startswith("B-") for t in tags) == 1 for o in oracles for tags in o.tags)


@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_decoding_never_leaves_the_grammar(engine):
    crf = CRF.from_labels(LABELS, grammar=ONE_CHUNK, batch_first=True, engine=engine)
    emissions = torch.randn(64, 12, 5, generator=torch.Generator().manual_seed(0)) * 5
    mask = torch.arange(12)[None, :] < torch.randint(1, 13, (64,), generator=torch.Generator().manual_seed(1))[:, None]
    mask[:, 0] = True
    decoded = crf.decode(emissions, mask)
    paths, scores = crf.kbest(emissions, 3, mask)
    samples = crf.sample(emissions, 4, mask, seed=2)
    language = compile_grammar(parse_grammar(ONE_CHUNK), LABELS)
    candidates = [[LABELS[t] for t in tags] for tags in decoded]
    for sequences in (paths, samples):
        for row in sequences.reshape(-1, 12).tolist():
            tags = [t for t in row if t >= 0]
            if tags:
                candidates.append([LABELS[t] for t in tags])
    assert len(candidates) > 64 and all(accepts(language, tags) for tags in candidates)


def test_gold_tags_outside_the_grammar_are_refused():
    from fstcrf.errors import LabelError

    crf = CRF.from_labels(LABELS, grammar=ONE_CHUNK, batch_first=True)
    with pytest.raises(LabelError, match="not allowed"):
        crf(torch.zeros(1, 4, 5), torch.tensor([[1, 0, 3, 0]]))


@pytest.mark.parametrize("engine", ["kernel", "torch"])
def test_a_length_the_grammar_allows_no_tags_of_is_refused_by_both_engines(engine):
    from fstcrf.errors import InfeasibleError

    crf = CRF.from_labels(LABELS, grammar="start = .* B-A . ;", batch_first=True, engine=engine)
    emissions, tags = torch.randn(2, 3, 5), torch.tensor([[0, 1, 2], [1, 2, 0]])
    mask = torch.tensor([[True, True, True], [True, False, False]])  # the second is one step long
    calls = {
        "decode": lambda: crf.decode(emissions, mask),
        "log_partition": lambda: crf.log_partition(emissions, mask),
        "marginals": lambda: crf.marginals(emissions, mask),
        "kbest": lambda: crf.kbest(emissions, 2, mask),
        "forward": lambda: crf(emissions, tags, mask),
    }
    for name, call in calls.items():
        with pytest.raises(InfeasibleError, match=r"no label sequence of length 1 \(sentences 1\)"):
            call()
    assert len(crf.decode(emissions)) == 2  # three steps each: fine
