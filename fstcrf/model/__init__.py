"""The model: the estimator :class:`~fstcrf.model.chain.ChainCRF`
(:mod:`~fstcrf.model.chain`), its parameters (:mod:`~fstcrf.model.params`), the
steps of a fit (:mod:`~fstcrf.model.fitting`), its model file
(:mod:`~fstcrf.model.payload` over the container of :mod:`~fstcrf.model.file`),
composed models and joint decoding (:mod:`~fstcrf.model.compose`) and the dump
and info of a model (:mod:`~fstcrf.model.inspection`).

``from fstcrf.model import ChainCRF, load_model, save_model`` is the public
path, as it was when ``fstcrf.model`` was a module; each name is imported on
first use, so that importing a submodule stays light."""

from fstcrf.moved import lazy_names

#: The public names and the former module's names, with the submodule that defines each.
_NAMES = {
    **dict.fromkeys(("ChainCRF", "load_model", "save_model", "TEMPLATES", "UNKNOWN_LABEL"), "chain"),
    **dict.fromkeys(("ALGORITHMS", "TRANSITION_SETS"), "params"),
    "BIAS": "fitting",
    **dict.fromkeys(
        ("EXTRACTOR_PREFIX", "LATER_PARAMS", "extractor_payload", "extractor_from_payload", "current_record"),
        "payload",
    ),
}

__all__ = ["ALGORITHMS", "BIAS", "TEMPLATES", "UNKNOWN_LABEL", "ChainCRF", "load_model", "save_model"]

__getattr__, __dir__ = lazy_names(__name__, _NAMES)
