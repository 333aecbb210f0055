"""Non-local decoding with a fitted ChainCRF: documents of a corpus, the model's
stored consistency penalties, and annealing over the model's decoding lattice."""

from __future__ import annotations

from collections.abc import Sequence

from fstcrf.corpus.conll import Corpus, Sentence, as_sentences
from fstcrf.errors import FstcrfError
from fstcrf.corpus.labels import split_labels
from fstcrf.model.chain import ChainCRF
from fstcrf.document.annealing import Annealed, anneal
from fstcrf.document.consistency import ConsistencyFactor, ConsistencyPenalties, estimate_penalties
from fstcrf.document.documents import document_spans
from fstcrf.document.factors import DocumentFactor, LabelledDocument
from fstcrf.document.settings import DEFAULT_BLOCK_SIZE, DEFAULT_SWEEPS, DEFAULT_T_END, DEFAULT_T_START

#: Names of the non-local models the command line offers.
NONLOCAL_MODELS = ("consistency",)


def sentence_words(sentences: Sequence[Sentence]) -> list[list[str]]:
    """The words [T_b] of every sentence: the ``word`` column if present, else the first."""
    if not sentences:
        return []
    columns = sentences[0].column_names
    column = "word" if "word" in columns else columns[0]
    return [sentence[column] for sentence in sentences]


def labelled_documents(
    sentences: Sequence[Sentence], target: str, label_names: Sequence[str], source: str = "the corpus"
) -> list[LabelledDocument]:
    """The documents of gold-labelled sentences (labels outside ``label_names`` are
    an error naming the sentence)."""
    index = {label: i for i, label in enumerate(label_names)}
    words = sentence_words(sentences)
    documents = []
    for d, (first, last) in enumerate(document_spans(sentences, source)):
        labels = []
        for number in range(first, last):
            unknown = [label for label in sentences[number][target] if label not in index]
            if unknown:
                raise FstcrfError(
                    f"{source}: sentence {number + 1} has label {unknown[0]!r}, which is not "
                    f"among the labels {', '.join(label_names)}"
                )
            labels.append([index[label] for label in sentences[number][target]])
        documents.append(LabelledDocument(words[first:last], tuple(label_names), labels, d))
    return documents


def estimate_consistency(corpus: Corpus | Sequence[Sentence], target: str, scale: float = 1.0) -> ConsistencyPenalties:
    """Finkel et al.'s penalties estimated from a gold-labelled training corpus."""
    sentences = as_sentences(corpus, "estimate_consistency")
    labels = sorted({label for sentence in sentences for label in sentence[target]})
    return estimate_penalties(
        labelled_documents(sentences, target, labels, str(getattr(corpus, "path", None) or "the corpus")), scale
    )


def model_factors(model: ChainCRF, names: Sequence[str], scale: float | None = None) -> list[DocumentFactor]:
    """The factors named (from NONLOCAL_MODELS) with what the model stores for them."""
    factors: list[DocumentFactor] = []
    for name in names:
        if name not in NONLOCAL_MODELS:
            raise FstcrfError(f"unknown non-local model {name!r}; choose from {', '.join(NONLOCAL_MODELS)}")
        penalties = getattr(model, "consistency_", None)
        if penalties is None:
            raise FstcrfError(
                "the model stores no consistency penalties: train it with --consistency "
                "(or set model.consistency_ = fstcrf.document.estimate_consistency(...))"
            )
        factors.append(ConsistencyFactor(penalties if scale is None else penalties.with_scale(scale)))
    return factors


def decode_documents(
    model: ChainCRF,
    corpus: Corpus | Sequence[Sentence],
    factors: Sequence[DocumentFactor],
    sampler: str = "block",
    sweeps: int = DEFAULT_SWEEPS,
    t_start: float = DEFAULT_T_START,
    t_end: float = DEFAULT_T_END,
    block_size: int = DEFAULT_BLOCK_SIZE,
    seed: int = 0,
    progress: bool = False,
) -> tuple[list[list[str]], Annealed | None]:
    """(labels [B][T], the annealing record; None without sentences): the best labelling
    of every document under the product of ``model`` and ``factors`` found by annealing
    from Viterbi."""
    sentences = as_sentences(corpus, "decode_documents")
    if not sentences:
        return [], None
    encoded, pot, state_map = model.decoding_potentials(sentences)
    topology = model.topology_
    label_of_state = topology.state_label[state_map]
    source = str(getattr(corpus, "path", None) or "the input")
    result = anneal(
        pot,
        document_spans(sentences, source),
        sentence_words(sentences),
        topology.labels,
        label_of_state,
        factors,
        sampler,
        sweeps,
        t_start,
        t_end,
        block_size,
        seed,
        int(model.threads),
        progress=progress,
    )
    labels = split_labels(topology, state_map[result.best], encoded.offsets)
    return labels, result
