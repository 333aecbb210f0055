"""The model: the estimator :class:`~fstcrf.model.chain.ChainCRF`
(:mod:`~fstcrf.model.chain`), its parameters (:mod:`~fstcrf.model.params`), the
steps of a fit (:mod:`~fstcrf.model.fitting`), its model file
(:mod:`~fstcrf.model.payload` over the container of :mod:`~fstcrf.model.file`),
composed models and joint decoding (:mod:`~fstcrf.model.compose`) and the dump
and info of a model (:mod:`~fstcrf.model.inspection`).

``from fstcrf.model import ChainCRF, load_model, save_model`` is the public
path, as it was when ``fstcrf.model`` was a module; each name is imported on
first use, so that importing a submodule stays light."""

from importlib import import_module

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


def __getattr__(name: str):
    if name in _NAMES:
        value = getattr(import_module(f"fstcrf.model.{_NAMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
