"""Any model's logits decoded under a tagging scheme or a grammar, without torch:
:func:`decode_logits`, and :class:`LogitDecoder`, whose scale and biases are fitted
on a labelled dev set.  See docs/logits.md."""

from fstcrf.logits.decode import DecodedLogits, decode_logits
from fstcrf.logits.fit import LogitDecoder

__all__ = ["DecodedLogits", "LogitDecoder", "decode_logits"]
