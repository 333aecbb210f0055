"""Tag requests decoded by the model they name, and each one's answer as JSON data.

The requests of a batch share a model and options; their sentences are decoded in one
call to the same decoders ``fstcrf tag`` uses (:mod:`fstcrf.model.decoders`), and each
request gets its own sentences' results back.  Where the output of a sentence depends
on the others decoded with it, each request is decoded alone, so that an answer never
depends on the batch: a two-stage tagger's majorities are over a request's sentences,
and MBR without a threshold maximises the expected F1 of a request's sentences.

Each sentence's result holds ``labels`` (the predicted labels of the model's top
chain: a composed model's last component) and ``entities`` (their chunks, each
``{"first", "last", "type"}`` with ``"probability"`` when it is asked for; none for
labels that are not chunk labels), and as asked ``marginals`` (each label's marginal
probability) and ``nbest`` (``{"labels", "probability"}`` best first).  A composed
model's result also holds ``components``: per component, lowest first, its
``column`` and the same fields.  For a request that sent text, each entity has its
characters ``start`` and ``end`` (exclusive) and their ``text``, and the result its
``tokens`` (``{"text", "start", "end"}``).

A request's constraints (one per sentence, on the top chain's labels) hold in every
decoding and probability; a sentence they leave no label sequence is the request's
fault, naming ``constraints[i]``.  With ``partial_labels`` the answer holds the
sentences with constraints as partial-label training data
(:mod:`fstcrf.serve.training_data`).

Where each sentence is decoded on its own, a batch is decoded in slices, each sized to
take about SLICE_SECONDS at the pace of the slice before (of the last batch of the same
model and options: :class:`Paces`; FIRST_SLICE_TOKENS tokens before any).  Between
slices a request whose client stopped waiting (its timeout passed, or the server
stopped) is dropped, so that it holds the decoder about SLICE_SECONDS longer at most,
not for the rest of its work."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.engine.chunks import chunks_of_parts
from fstcrf.engine.constrained import Starts
from fstcrf.engine.constraints import resolve
from fstcrf.engine.spans import Entity, chunk_parts
from fstcrf.errors import BudgetError, InfeasibleError, RequestError
from fstcrf.model.decoders import (
    joint_predicted_entities,
    predicted_entities,
    predicted_marginals,
)
from fstcrf.pictures.html import view_fragment
from fstcrf.pictures.lattice import words
from fstcrf.pictures.tagged import Layer, TaggedSentence, TagLayer, chunk_layer, chunk_types, has_chunk_labels
from fstcrf.serve.parsing import DecodeOptions, TagRequest
from fstcrf.serve.registry import ServedModel
from fstcrf.serve.training_data import partial_label_data

#: The tokens of a slice while the pace of its model and options is not known yet.
FIRST_SLICE_TOKENS = 512
#: About how long a slice takes to decode, in seconds.
SLICE_SECONDS = 0.2
#: The most paces kept (a client choosing new options for every request cannot grow them).
MOST_PACES = 1000


class Paces:
    """The decoding pace (seconds per token) of the last slice of each model and options
    (a key such as (name, generation, options)), which sizes their next slice."""

    def __init__(self) -> None:
        self.seconds_per_token: dict = {}

    def slice_tokens(self, key) -> float:
        """The tokens of a slice of about SLICE_SECONDS for ``key``."""
        pace = self.seconds_per_token.get(key)
        return FIRST_SLICE_TOKENS if pace is None else SLICE_SECONDS / pace

    def record(self, key, seconds: float, tokens: int) -> None:
        """A slice of ``tokens`` for ``key`` took ``seconds``."""
        if key not in self.seconds_per_token and len(self.seconds_per_token) >= MOST_PACES:
            self.seconds_per_token.clear()
        self.seconds_per_token[key] = max(seconds, 1e-9) / max(tokens, 1)


@dataclass(frozen=True)
class ChainOutput:
    """What one chain predicts for a run of B sentences.

    Attributes:
        column: the column it predicts.
        labels: the predicted labels [B][T].
        entities: their entities [B][...] (chunk labels; probabilities NaN when not
            asked for), or None for labels that are not chunk labels.
        marginals: float [T] per sentence, each predicted label's marginal, or None.
        nbest: per sentence the n best (labels [T], probability), or None.
    """

    column: str
    labels: list[list[str]]
    entities: list[list[Entity]] | None
    marginals: list[np.ndarray] | None = None
    nbest: list[list[tuple[list[str], float]]] | None = None


def answer_batch(
    model: ServedModel,
    options: DecodeOptions,
    requests: Sequence[TagRequest],
    abandoned: Sequence[threading.Event] | None = None,
    paces: Paces | None = None,
) -> list[dict | None]:
    """The answer of each request (``{"results": [...]}``, and ``"html"`` with the
    option ``view``), all decoded by ``model`` with ``options``; None for a request
    whose event in ``abandoned`` is set (its client stopped waiting: its decoding
    stops at the next slice).  ``paces``: those of the batches before (default
    none)."""
    alone = model.kind == "two-stage" or (options.decode == "mbr" and options.mbr_threshold is None)
    if alone and len(requests) > 1:
        return [
            answer
            for r, request in enumerate(requests)
            for answer in answer_batch(
                model, options, [request], None if abandoned is None else abandoned[r : r + 1], paces
            )
        ]
    answers: list[dict | None] = []
    outputs = _request_outputs(model, options, requests, abandoned, paces or Paces(), sliced=not alone)
    for request, part in zip(requests, outputs):
        if part is None:
            answers.append(None)
            continue
        answer: dict = {"results": [_result(part, b, request) for b in range(len(request.sentences))]}
        if options.view:
            answer["html"] = view_fragment(
                _view_sentences(part, request.sentences), chunk_types(model.decoder), options.low_confidence
            )
        if options.partial_labels:
            lower = {output.column: output.labels for output in part[:-1]}
            answer["partial_labels"] = partial_label_data(model, request, part[-1].labels, lower)
        answers.append(answer)
    return answers


def _request_outputs(
    model: ServedModel,
    options: DecodeOptions,
    requests: Sequence[TagRequest],
    abandoned: Sequence[threading.Event] | None,
    paces: Paces,
    sliced: bool,
) -> list[list[ChainOutput] | None]:
    """Each request's outputs (one per chain, lowest first), None for a request
    abandoned; its sentences decoded in slices (see the module doc), or all at once
    unless ``sliced``."""
    pending = [(r, b) for r, request in enumerate(requests) for b in range(len(request.sentences))]
    slices: list[list[list[ChainOutput]]] = [[] for _ in requests]  # per request, its slices' outputs
    pace_key = (model.name, model.generation, options)
    budget = paces.slice_tokens(pace_key) if sliced else math.inf
    position = 0
    while position < len(pending):
        taken: list[tuple[int, int]] = []
        tokens = 0
        while position < len(pending):
            r, b = pending[position]
            length = len(requests[r].sentences[b])
            if taken and tokens + length > budget:
                break
            position += 1
            if abandoned is None or not abandoned[r].is_set():
                taken.append((r, b))
                tokens += length
        if not taken:
            break
        started = time.perf_counter()
        parts, done = [taken], []  # the sentences (request, sentence) decoded together, and their outputs
        while parts:
            part = parts.pop(0)
            try:
                outputs = decoded(
                    model, options, [requests[r].sentences[b] for r, b in part], _slice_constraints(requests, part)
                )
            except (InfeasibleError, BudgetError) as error:
                if isinstance(error, BudgetError) and len(part) > 1:
                    # each sentence alone, so that whether one keeps to the work budget
                    # does not depend on the sentences sliced with it
                    parts[:0] = [[sentence] for sentence in part]
                    continue
                if len(requests) > 1:
                    raise  # the batcher decodes each request alone, and names the sentence of the one at fault
                raise _refusal(error, requests[0], part, model.chains()[-1].labels_) from None
            done.append((part, outputs))
        if sliced:
            paces.record(pace_key, time.perf_counter() - started, tokens)
            budget = paces.slice_tokens(pace_key)
        for part, outputs in done:
            first = 0
            for r, run in groupby(r for r, _ in part):
                count = len(list(run))
                slices[r].append([_slice(output, first, first + count) for output in outputs])
                first += count
    return [
        None if abandoned is not None and abandoned[r].is_set() else _joined(request_slices)
        for r, request_slices in enumerate(slices)
    ]


def _slice_constraints(requests: Sequence[TagRequest], taken: list[tuple[int, int]]) -> list | None:
    """The constraints of the sentences ``taken`` (request, sentence), one each (None:
    none has any)."""
    if all(requests[r].constraints is None for r, _ in taken):
        return None
    return [_constraints_of(requests[r], b) for r, b in taken]


def _constraints_of(request: TagRequest, b: int):
    """The constraints of sentence b of ``request`` (None: none)."""
    return None if request.constraints is None else request.constraints[b]


def _refusal(
    error: InfeasibleError | BudgetError, request: TagRequest, taken: list[tuple[int, int]], labels: Sequence[str]
) -> RequestError:
    """A model's refusal of one request's sentences ``taken`` as the request's fault,
    naming the sentence whose constraints clash where the error knows it; a budget
    passed, as the server's (whose budget its client cannot raise), naming the sentence
    whose constraints track the most chunks at once (over the top chain's ``labels``)."""
    field = "sentences" if request.constraints is None else "constraints"
    if isinstance(error, InfeasibleError) and error.sentence is not None:
        sentence = taken[error.sentence][1]
        return RequestError(f"sentence {sentence}: {error.reason}", f"constraints[{sentence}]")
    if isinstance(error, BudgetError) and error.limit is not None:
        heaviest = _most_tracked(request, taken, labels)
        named = "" if heaviest is None else f"sentence {heaviest}: "
        field = field if heaviest is None else f"constraints[{heaviest}]"
        message = f"{named}{error.reason}; the request is too large for this server's budget"
        return RequestError(message, field, limit=error.limit)
    return RequestError(str(error), field)


def _most_tracked(request: TagRequest, taken: list[tuple[int, int]], labels: Sequence[str]) -> int | None:
    """The sentence of ``request`` among ``taken`` whose constraints track the most
    chunk starts at once (weighted or forbidden spans: the flags that size its
    constrained lattice), None when none tracks any."""
    counts = {}
    for _, b in taken:
        given = _constraints_of(request, b)
        if given is not None:
            counts[b] = Starts.of(resolve(given, labels, len(request.sentences[b]), b)).count
    sentence = max(counts, key=lambda b: counts[b], default=None)
    return sentence if sentence is not None and counts[sentence] > 0 else None


def _joined(request_slices: list[list[ChainOutput]]) -> list[ChainOutput]:
    """A request's outputs from those of its slices (each one per chain)."""
    if len(request_slices) == 1:
        return request_slices[0]
    return [
        ChainOutput(
            outputs[0].column,
            [labels for output in outputs for labels in output.labels],
            _concatenated([output.entities for output in outputs]),
            _concatenated([output.marginals for output in outputs]),
            _concatenated([output.nbest for output in outputs]),
        )
        for outputs in zip(*request_slices)
    ]


def _concatenated(parts: list) -> list | None:
    """The lists ``parts`` one after another, None where they are None."""
    return None if parts[0] is None else [item for part in parts for item in part]


def decoded(
    model: ServedModel, options: DecodeOptions, sentences: list[Sentence], constraints: list | None = None
) -> list[ChainOutput]:
    """Each chain's output for ``sentences`` (lowest first), as ``options`` ask, under the
    ``constraints`` of each sentence on the top chain's labels (None: none)."""
    if model.kind == "composed":
        return _joint_outputs(model.decoder, options, sentences, constraints)
    if model.kind == "two-stage":
        tagger = model.decoder
        if options.decode == "mbr":
            labels = tagger.predict_mbr(sentences, options.mbr_threshold, constraints=constraints)
        else:
            labels = tagger.predict(sentences, constraints=constraints)
        return [_without_probabilities(tagger.second_, labels)]
    return [_chain_output(model.decoder, options, sentences, constraints)]


def _chain_output(chain, options: DecodeOptions, sentences: list[Sentence], constraints: list | None) -> ChainOutput:
    """A single model's output."""
    nbest = None
    if options.nbest is not None:
        ranked, probabilities = chain.kbest(sentences, options.nbest, constraints=constraints)  # [B][r][T], [B, n]
        nbest = [
            [(labels, float(p)) for labels, p in zip(sentence_ranked, row)]
            for sentence_ranked, row in zip(ranked, probabilities)
        ]
        labels = [sentence_ranked[0] for sentence_ranked in ranked]
    elif options.decode == "mbr":
        labels = chain.predict_mbr(sentences, options.mbr_threshold, constraints=constraints)
    else:
        labels = chain.predict(sentences, constraints=constraints)
    output = _without_probabilities(chain, labels)
    entities = output.entities
    if entities is not None and options.entity_probabilities:
        entities = predicted_entities(chain, sentences, labels, constraints=constraints)
    marginals = None
    if options.marginals:
        table = chain.predict_marginals(sentences, constraints=constraints)
        marginals = predicted_marginals(chain.labels_, table, labels)
    return ChainOutput(chain.target_, labels, entities, marginals, nbest)


def _joint_outputs(
    joint, options: DecodeOptions, sentences: list[Sentence], constraints: list | None
) -> list[ChainOutput]:
    """Each component's output under a composed model (``constraints`` on its last component)."""
    given = None if constraints is None else {len(joint.components) - 1: constraints}
    labels = joint.predict(sentences, mode=options.mode, k=options.k, constraints=given)  # [N][B][T]
    outputs = [_without_probabilities(chain, chain_labels) for chain, chain_labels in zip(joint.components, labels)]
    if options.entity_probabilities:
        for k, entities in joint_predicted_entities(joint, sentences, labels, given).items():
            outputs[k] = ChainOutput(outputs[k].column, labels[k], entities)
    if options.marginals:
        marginals = joint.predict_marginals(sentences, constraints=given)  # [N][B] [T, L_k]
        outputs = [
            ChainOutput(
                output.column,
                output.labels,
                output.entities,
                predicted_marginals(chain.labels_, marginals[k], output.labels),
            )
            for k, (chain, output) in enumerate(zip(joint.components, outputs))
        ]
    return outputs


def _without_probabilities(chain, labels: list[list[str]]) -> ChainOutput:
    """A chain's labels, and their entities (probabilities NaN) if they are chunk labels."""
    if not has_chunk_labels(chain.labels_):
        return ChainOutput(chain.target_, labels, None)
    parts = {label: chunk_parts(label) for label in chain.labels_}  # each label parsed once, not per token
    entities = [
        [Entity(*chunk, float("nan")) for chunk in chunks_of_parts([parts[label] for label in sentence])]
        for sentence in labels
    ]
    return ChainOutput(chain.target_, labels, entities)


def _slice(output: ChainOutput, first: int, last: int) -> ChainOutput:
    """The output of sentences first..last-1."""

    def part(values):
        return None if values is None else values[first:last]

    return ChainOutput(
        output.column,
        output.labels[first:last],
        part(output.entities),
        part(output.marginals),
        part(output.nbest),
    )


def _result(outputs: list[ChainOutput], b: int, request: TagRequest) -> dict:
    """The result of sentence b: the top chain's fields, and a composed model's components."""
    places = None if request.places is None else request.places[b]
    result = _chain_fields(outputs[-1], b, request.text, places)
    if len(outputs) > 1:
        result["components"] = [
            {"column": output.column, **_chain_fields(output, b, request.text, places)} for output in outputs
        ]
    if places is not None:
        result["tokens"] = [{"text": token.text, "start": token.start, "end": token.end} for token in places]
    return result


def _chain_fields(output: ChainOutput, b: int, text: str | None, places) -> dict:
    """One chain's fields in the result of sentence b."""
    fields: dict = {"labels": output.labels[b], "entities": []}
    for entity in [] if output.entities is None else output.entities[b]:
        found: dict = {"first": entity.first, "last": entity.last, "type": entity.type}
        if not np.isnan(entity.probability):
            found["probability"] = entity.probability
        if places is not None and text is not None:
            start, end = places[entity.first].start, places[entity.last].end
            found.update(start=start, end=end, text=text[start:end])
        fields["entities"].append(found)
    if output.marginals is not None:
        fields["marginals"] = output.marginals[b].tolist()
    if output.nbest is not None:
        fields["nbest"] = [{"labels": labels, "probability": p} for labels, p in output.nbest[b]]
    return fields


def _view_sentences(outputs: list[ChainOutput], sentences: list[Sentence]) -> list[TaggedSentence]:
    """The document view's sentences: a layer per chain, chunks where it has chunk
    labels, each beside the gold labels a sentence gives."""
    tagged = []
    for b, sentence in enumerate(sentences):
        layers: list[Layer] = []
        for output in outputs:
            gold = sentence.columns.get(output.column)
            if output.entities is not None:
                layers.append(chunk_layer(output.column, output.entities[b], gold))
            else:
                assert output.marginals is not None  # the view asks for them (parsing.decode_options)
                layers.append(TagLayer(output.column, tuple(output.labels[b]), output.marginals[b], _tuple(gold)))
        tagged.append(TaggedSentence(b, words(sentence), sentence.document_start, tuple(layers)))
    return tagged


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)
