"""A grammar and per-sentence constraints that leave a sentence no label sequence
together: the InfeasibleError says the grammar takes part (naming its file), and
only when a grammar is there."""

from needs_pynini import pynini  # noqa: F401  (skips the module without pynini)

import numpy as np
import pytest

import fstcrf
from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.constraints import Constraints, Span
from fstcrf.errors import InfeasibleError
from fstcrf.grammar import SHIPPED_DIR, parse_grammar
from fstcrf.model import ChainCRF

IOB2 = str(SHIPPED_DIR / "iob2.fgr")


@pytest.fixture(scope="module")
def chunker():
    """A first-order chunker: any label may begin a sentence or follow any other."""
    return ChainCRF(template="chunking-extended", max_iter=5, threads=1).fit(
        read_conll(DATA_DIR / "demo_train.txt"), target="chunk"
    )


@pytest.fixture(scope="module")
def sentences():
    return [Sentence({"word": ["He", "said", "it"], "pos": ["PRP", "VBD", "PRP"]})]


def test_a_clash_with_the_grammar_names_it(chunker, sentences):
    begins_inside = [Constraints(fixed={0: "I-NP"})]
    assert chunker.predict(sentences, constraints=begins_inside)[0][0] == "I-NP"  # the grammar makes the clash
    with pytest.raises(InfeasibleError) as raised:
        chunker.predict(sentences, grammar="iob2", constraints=begins_inside)
    assert str(raised.value) == (
        f"ChainCRF.predict: sentence 0: its constraints leave no label sequence under the grammar {IOB2}; "
        "these clash with it: token 0 fixed to I-NP"
    )
    assert raised.value.clashing == ["token 0 fixed to I-NP"] and raised.value.sentence == 0


def test_a_grammar_given_as_text_is_said_to_take_part(chunker, sentences):
    grammar = parse_grammar("start = (O | [B-*] [I-*]*)* & !(.* B-VP I-NP .*) ;")
    clash = [Constraints(fixed={0: "B-VP", 1: "I-NP"})]  # each alone is allowed
    with pytest.raises(InfeasibleError, match=r"no label sequence under the grammar; these clash with it: token 0"):
        chunker.predict(sentences, grammar=grammar, constraints=clash)


def test_without_a_grammar_the_message_names_none(chunker, sentences):
    clash = [Constraints(fixed={0: "B-VP"}, spans=[Span(0, 1, "NP")])]
    with pytest.raises(InfeasibleError) as raised:
        chunker.predict(sentences, constraints=clash)
    assert "grammar" not in str(raised.value)
    assert "its constraints leave no label sequence; these clash: token 0 fixed to B-VP; span (0, 1, NP)" in str(
        raised.value
    )


def test_logit_decoding_says_its_grammar_takes_part_and_its_scheme_does_not():
    labels, begins_inside = ["O", "B-NP", "I-NP"], [Constraints(fixed={0: "I-NP"})]
    with pytest.raises(InfeasibleError, match=rf"under the grammar {IOB2}; these clash with it: token 0 fixed to I-NP"):
        fstcrf.decode_logits(np.zeros((3, 3)), labels, grammar="iob2", constraints=begins_inside)
    with pytest.raises(InfeasibleError, match=r"no label sequence; these clash: token 0 fixed to I-NP"):
        fstcrf.decode_logits(np.zeros((3, 3)), labels, scheme="iob2", constraints=begins_inside)
