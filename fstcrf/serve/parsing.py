"""A tag request's body, read and checked against the model it names and the server's
limits, into the sentences to tag and the decoding options.  Every fault is a
:class:`~fstcrf.errors.RequestError` naming the field at fault (and the limit, when
one is exceeded).

The body is a JSON object holding one input and any options:

- ``sentences``: a list of objects, one per sentence, each a list of strings per
  column the model reads (``{"word": [...], "pos": [...]}``); the columns the model
  predicts may be given too (gold labels, which the view compares);
- ``text``: a string, split into sentences and tokens by the server's tokenizer;
- ``conll``: CoNLL lines, one token a line, a blank line between sentences, with
  the model's columns in its training order (the predicted ones may be left out);
- ``constraints``: one object (or null) per sentence of the input, each a
  :class:`~fstcrf.engine.constraints.Constraints` in the form of its ``to_dict``, over
  the labels of the model's top chain (a composed model's last component);
- ``decode`` (``"viterbi"`` or ``"mbr"``; default: the model's own),
  ``entity_probabilities`` (default: where the model gives them), ``marginals``,
  ``nbest``, ``mbr_threshold``, ``mode`` and ``k`` (composed models), ``view`` (the
  answer holds the HTML of the document view), ``low_confidence`` (the view's
  threshold) and ``partial_labels`` (the sentences with constraints as partial-label
  training data)."""

from __future__ import annotations

import io
import json
import math
import sys
from dataclasses import dataclass

from fstcrf.corpus.conll import Sentence
from fstcrf.engine.constraints import Constraints, resolve
from fstcrf.errors import ConllFormatError, ConstraintError, RequestError
from fstcrf.model.compose import MODES
from fstcrf.model.decoders import default_decoding
from fstcrf.pictures.settings import DEFAULT_LOW_CONFIDENCE
from fstcrf.serve.registry import ServedModel
from fstcrf.serve.settings import Limits
from fstcrf.serve.tokenizer import Token, Tokenizer

#: The inputs a body may hold (exactly one of them).
INPUTS = ("sentences", "text", "conll")

#: The decodings a request may ask for.
DECODINGS = ("viterbi", "mbr")

#: How deep a body may nest lists and objects (a request needs 5: deeper is refused
#: before any field is read, so that no error message has to show a value that deep).
MAX_DEPTH = 32


@dataclass(frozen=True)
class DecodeOptions:
    """How a request's sentences are decoded and what the answer holds.

    Attributes:
        decode: "viterbi" or "mbr".
        entity_probabilities: each entity's exact probability.
        marginals: each predicted label's marginal probability.
        nbest: the n best label sequences with their probabilities (None: none).
        mbr_threshold: MBR's threshold (None: the one that maximises the expected
            F1 of the request's sentences).
        mode: a composed model's decoding ("joint", "cascade" or "kbest").
        k: the hypotheses mode "kbest" keeps.
        view: the HTML of the document view.
        low_confidence: the view flags chunks and tags of probability below it.
        partial_labels: the sentences with constraints as partial-label training data.
    """

    decode: str
    entity_probabilities: bool
    marginals: bool
    nbest: int | None
    mbr_threshold: float | None
    mode: str
    k: int
    view: bool
    low_confidence: float = DEFAULT_LOW_CONFIDENCE
    partial_labels: bool = False


@dataclass(frozen=True)
class TagRequest:
    """What a tag request asks: its sentences, the text it sent and its tokens' places
    in it (both None when it sent tokens), the options, and the constraints of each
    sentence (None: no sentence has any)."""

    sentences: list[Sentence]
    text: str | None
    places: list[list[Token]] | None
    options: DecodeOptions
    constraints: list[Constraints | None] | None = None

    @property
    def num_tokens(self) -> int:
        return sum(len(sentence) for sentence in self.sentences)


def json_body(body: bytes):
    """The JSON value of a request body; RequestError (400) when it is not UTF-8 or not JSON."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestError(f"the body is not UTF-8 text: {error.reason} at byte {error.start}", "body", 400) from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RequestError:
        raise
    except json.JSONDecodeError as error:
        raise RequestError(
            f"the body is not JSON: {error.msg} at line {error.lineno} column {error.colno}", "body", 400
        ) from None
    except RecursionError:
        raise RequestError("the body is not JSON this server reads: nested too deeply", "body", 400) from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise RequestError(
            f"the body is not JSON this server reads: a number of more than {sys.get_int_max_str_digits():,} digits",
            "body",
            400,
        ) from None
    if _nested_deeper(value, MAX_DEPTH):
        raise RequestError(f"the body nests lists and objects more than {MAX_DEPTH} deep", "body", 400)
    return value


def _nested_deeper(value, depth: int) -> bool:
    """Whether a JSON value nests lists and objects more than ``depth`` deep (``[]`` is 1 deep)."""
    level = [value]
    for _ in range(depth + 1):
        containers = [item for item in level if isinstance(item, (list, dict))]
        if not containers:
            return False
        level = [item for found in containers for item in (found.values() if isinstance(found, dict) else found)]
    return True


def _refuse_constant(name: str):
    raise RequestError(f"the body is not JSON: {name} is not a JSON number", "body", 400)


def parse_tag_request(body: bytes, model: ServedModel, limits: Limits, tokenizer: Tokenizer) -> TagRequest:
    """The :class:`TagRequest` of a body sent to ``model`` (see the module doc)."""
    value = json_body(body)
    if not isinstance(value, dict):
        raise RequestError(f"the body must be a JSON object, got {_json_type(value)}", "body")
    known = (*INPUTS, "constraints", *(field.name for field in DecodeOptions.__dataclass_fields__.values()))
    for key in value:
        if key not in known:
            raise RequestError(f"unknown field; a tag request takes {', '.join(known)}", key)
    given = [key for key in INPUTS if key in value]
    if len(given) != 1:
        raise RequestError(f"give exactly one of {', '.join(INPUTS)}; got {len(given)}", given[1] if given else "body")
    options = decode_options(value, model, limits)
    places = None
    if "sentences" in value:
        sentences = given_sentences(value["sentences"], model, limits)
    elif "text" in value:
        sentences, places = text_sentences(value["text"], model, limits, tokenizer)
    else:
        sentences = conll_sentences(value["conll"], model, limits)
    constraints = sentence_constraints(value.get("constraints"), sentences, model)
    return TagRequest(sentences, value.get("text"), places, options, constraints)


def sentence_constraints(value, sentences: list[Sentence], model: ServedModel) -> list[Constraints | None] | None:
    """The constraints of a body's ``constraints`` (one object in the form of
    ``Constraints.to_dict``, or null, per sentence), each checked against the labels of
    the model's top chain and its sentence's length; None when there are none."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise RequestError(
            f"expected a list with one constraints object (or null) per sentence, got {_json_type(value)}",
            "constraints",
        )
    if len(value) != len(sentences):
        raise RequestError(
            f"{len(value)} constraints for {len(sentences)} sentences; give one object (or null) per sentence",
            "constraints",
        )
    labels = model.chains()[-1].labels_
    given: list[Constraints | None] = []
    for b, (item, sentence) in enumerate(zip(value, sentences)):
        if item is None:
            given.append(None)
            continue
        if not isinstance(item, dict):
            raise RequestError(
                f"expected an object of constraints or null, got {_json_type(item)}", f"constraints[{b}]"
            )
        try:
            constraints = Constraints.from_dict(item)
            resolve(constraints, labels, len(sentence), b)
        except ConstraintError as error:
            raise RequestError(str(error), f"constraints[{b}]") from None
        given.append(constraints or None)
    return given if any(given) else None


def decode_options(value: dict, model: ServedModel, limits: Limits) -> DecodeOptions:
    """The options of a body, checked against what ``model`` decodes."""
    composed, two_stage = model.kind == "composed", model.kind == "two-stage"
    decode = _choice(value, "decode", DECODINGS, default_decoding(model.decoder))
    nbest = _count(value, "nbest", limits.max_nbest, "max_nbest")
    marginals = _flag(value, "marginals", False)
    view = _flag(value, "view", False)
    probabilities = _flag(value, "entity_probabilities", not two_stage)
    mode = _choice(value, "mode", MODES, "joint")
    k = _count(value, "k", limits.max_nbest, "max_nbest")
    threshold = value.get("mbr_threshold")
    low = value.get("low_confidence", DEFAULT_LOW_CONFIDENCE)
    refusals = {
        "decode": composed and decode == "mbr" and "a composed model decodes jointly; MBR applies to single models",
        "nbest": (composed or two_stage or decode == "mbr") and nbest is not None and _nbest_refusal(model, decode),
        "marginals": two_stage and marginals and "a two-stage tagger gives its labels alone",
        "entity_probabilities": two_stage and probabilities and "a two-stage tagger gives its labels alone",
        "view": two_stage and view and "the view shows probabilities, which a two-stage tagger does not give",
        "mode": not composed and "mode" in value and "mode applies to composed models",
        "k": (not composed or mode != "kbest") and "k" in value and 'k applies to composed models\' mode "kbest"',
        "mbr_threshold": decode != "mbr" and threshold is not None and 'mbr_threshold applies to decode "mbr"',
        "low_confidence": not view and "low_confidence" in value and "low_confidence applies to the view",
    }
    for field, refusal in refusals.items():
        if refusal:
            raise RequestError(str(refusal), field)
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold < 1
    ):
        raise RequestError(f"expected a number strictly between 0 and 1, got {_shown(threshold)}", "mbr_threshold")
    if isinstance(low, bool) or not isinstance(low, (int, float)) or not 0 <= low <= 1:
        raise RequestError(f"expected a number from 0 to 1, got {_shown(low)}", "low_confidence")
    return DecodeOptions(
        decode,
        probabilities or view,
        marginals or view,
        nbest,
        None if threshold is None else float(threshold),
        mode,
        5 if k is None else k,
        view,
        float(low),
        _flag(value, "partial_labels", False),
    )


def _nbest_refusal(model: ServedModel, decode: str) -> str:
    if decode == "mbr":
        return 'nbest ranks label sequences; decode "mbr" gives one'
    what = "a composed model" if model.kind == "composed" else "a two-stage tagger"
    return f"nbest applies to single models; this one is {what}"


def _flag(value: dict, key: str, default: bool) -> bool:
    flag = value.get(key, default)
    if not isinstance(flag, bool):
        raise RequestError(f"expected true or false, got {_shown(flag)}", key)
    return flag


def _choice(value: dict, key: str, choices: tuple[str, ...], default: str) -> str:
    choice = value.get(key, default)
    if choice not in choices or not isinstance(choice, str):
        raise RequestError(f"expected one of {', '.join(choices)}, got {_shown(choice)}", key)
    return choice


def _count(value: dict, key: str, limit: int, limit_name: str) -> int | None:
    count = value.get(key)
    if count is None:
        return None
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise RequestError(f"expected a positive integer, got {_shown(count)}", key)
    if count > limit:
        raise RequestError(f"at most {limit} (the server's {limit_name}), got {count}", key, limit=limit_name)
    return count


def given_sentences(value, model: ServedModel, limits: Limits) -> list[Sentence]:
    """The sentences of a body's ``sentences``, each an object of columns."""
    if not isinstance(value, list):
        raise RequestError(f"expected a list of sentences, got {_json_type(value)}", "sentences")
    _check_sentence_count(len(value), limits, "sentences")
    allowed = model.file_columns
    sentences = []
    for i, item in enumerate(value):
        where = f"sentences[{i}]"
        if not isinstance(item, dict):
            raise RequestError(f"expected an object of columns, got {_json_type(item)}", where)
        for name in item:
            if name not in allowed:
                raise RequestError(
                    f"unknown column; the model reads {', '.join(model.columns)}"
                    f" and predicts {', '.join(model.targets)}",
                    f"{where}.{name}",
                )
        missing = [name for name in model.columns if name not in item]
        if missing:
            raise RequestError(
                f"the model reads the column {missing[0]}, which this sentence lacks", f"{where}.{missing[0]}"
            )
        columns = {name: _tokens(item[name], f"{where}.{name}", limits) for name in allowed if name in item}
        lengths = {len(tokens) for tokens in columns.values()}
        if len(lengths) > 1:
            shown = ", ".join(f"{name} {len(tokens)}" for name, tokens in columns.items())
            raise RequestError(f"the columns differ in length: {shown}", where)
        sentences.append(Sentence(columns))
    return sentences


def _tokens(value, where: str, limits: Limits) -> list[str]:
    """A column of a sentence: a list of 1 to max_tokens non-empty strings."""
    if not isinstance(value, list):
        raise RequestError(f"expected a list of strings, got {_json_type(value)}", where)
    if not value:
        raise RequestError("a sentence has at least one token", where)
    if len(value) > limits.max_tokens:
        raise RequestError(
            f"{len(value)} tokens; a sentence may have at most {limits.max_tokens} (the server's max_tokens)",
            where,
            limit="max_tokens",
        )
    if all(type(token) is str and token for token in value) and _is_text("".join(value)):
        return value  # the usual case, checked in a few calls; else the fault is found below
    for t, token in enumerate(value):
        if not isinstance(token, str):
            raise RequestError(f"expected a string, got {_json_type(token)}", f"{where}[{t}]")
        if not token:
            raise RequestError("a token is a non-empty string", f"{where}[{t}]")
        _check_text(token, f"{where}[{t}]")
    return value


def _is_text(text: str) -> bool:
    """Whether ``text`` holds no lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_text(text: str, where: str) -> None:
    """RequestError when ``text`` holds a lone surrogate (JSON's "\\ud800"), which is no character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise RequestError(f"not Unicode text: a lone surrogate at character {error.start}", where) from None


def text_sentences(
    value, model: ServedModel, limits: Limits, tokenizer: Tokenizer
) -> tuple[list[Sentence], list[list[Token]]]:
    """The sentences of a body's ``text`` and their tokens' places in it."""
    if not isinstance(value, str):
        raise RequestError(f"expected a string, got {_json_type(value)}", "text")
    _check_text(value, "text")
    if len(model.columns) != 1:
        raise RequestError(
            f"the model reads the columns {', '.join(model.columns)}; text gives one column of "
            "tokens: send sentences with every column",
            "text",
        )
    places = tokenizer(value)
    _check_sentence_count(len(places), limits, "text")
    for i, tokens in enumerate(places):
        if len(tokens) > limits.max_tokens:
            raise RequestError(
                f"sentence {i} of the text has {len(tokens)} tokens; a sentence may have at most "
                f"{limits.max_tokens} (the server's max_tokens)",
                "text",
                limit="max_tokens",
            )
    (column,) = model.columns
    return [Sentence({column: [token.text for token in tokens]}) for tokens in places], places


def conll_sentences(value, model: ServedModel, limits: Limits) -> list[Sentence]:
    """The sentences of a body's ``conll`` lines."""
    from fstcrf.corpus.conll import iter_conll

    if not isinstance(value, str):
        raise RequestError(f"expected a string of CoNLL lines, got {_json_type(value)}", "conll")
    _check_text(value, "conll")
    predicted = [name for name in model.file_columns if name not in model.columns]
    try:
        (corpus,) = iter_conll(
            io.BytesIO(value.encode("utf-8")), model.file_columns, allow_missing=predicted, name="conll"
        )
    except ConllFormatError as error:
        raise RequestError(str(error), "conll") from None
    _check_sentence_count(len(corpus), limits, "conll")
    for i, sentence in enumerate(corpus.sentences):
        if len(sentence) > limits.max_tokens:
            raise RequestError(
                f"sentence {i} has {len(sentence)} tokens; a sentence may have at most {limits.max_tokens} "
                "(the server's max_tokens)",
                "conll",
                limit="max_tokens",
            )
    return corpus.sentences


def _check_sentence_count(count: int, limits: Limits, where: str) -> None:
    if count > limits.max_sentences:
        raise RequestError(
            f"{count} sentences; a request may have at most {limits.max_sentences} (the server's max_sentences)",
            where,
            limit="max_sentences",
        )


def _json_type(value) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return "a number" if math.isfinite(value) else "a number out of range"
    names: dict[type, str] = {str: "a string", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _shown(value) -> str:
    """A JSON value as the request gave it, shortened."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
