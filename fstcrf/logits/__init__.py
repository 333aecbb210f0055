"""Any model's logits decoded under a tagging scheme or a grammar, without torch:
:func:`decode_logits`; :class:`LogitDecoder`, whose scale and biases are fitted on
a labelled dev set; and the Hugging Face adapter (:func:`decode_subwords`,
:func:`decode_pipeline_output`).  See docs/logits.md."""

from fstcrf.logits.decode import DecodedLogits, decode_logits
from fstcrf.logits.fit import LogitDecoder
from fstcrf.logits.huggingface import DecodedText, TextEntity, decode_pipeline_output, decode_subwords

__all__ = [
    "DecodedLogits",
    "DecodedText",
    "LogitDecoder",
    "TextEntity",
    "decode_logits",
    "decode_pipeline_output",
    "decode_subwords",
]
