"""Features: the template language (:mod:`~fstcrf.features.template`), the
extraction of predicates from tokens with the hashed dictionary
(:mod:`~fstcrf.features.extractor`), CRFsuite-style token attributes, the
encoding of sentences as predicate rows and Sha & Pereira's factored features.

The names of the former module ``fstcrf.features`` are importable from here
for one release (the extractor's loaded on first use); code in fstcrf imports
them from the module that defines them."""

from importlib import import_module

#: The former module's public names, with the submodule that now defines each.
_MOVED_NAMES = {
    **dict.fromkeys(
        (
            "CHUNKING_EXTENDED",
            "CHUNKING_READS_POS",
            "CRFPP_CHUNKING",
            "MAX_ITEMS",
            "MAX_OFFSET",
            "MAX_PREDICATE_TEMPLATES",
            "NER",
            "NER_POS",
            "Observation",
            "POS_TAGGING",
            "PredicateTemplate",
            "SHA_PEREIRA_CHUNKING",
            "TEMPLATES",
            "Template",
            "VALUE",
            "WORDS",
            "check_reading_template",
            "escape_value",
            "load_template",
            "parse_template",
            "resolve_template",
            "shipped_template",
            "transform_function",
        ),
        "template",
    ),
    **dict.fromkeys(("FEW_PREDICATES", "FEW_PREDICATES_SHARE", "FeatureExtractor"), "extractor"),
    **dict.fromkeys(("HashedDictionary", "SALT_TRIES"), "dictionary"),
    # pickles written by fstcrf 0.1 name the dictionary class by its private name
    "_HashedDictionary": "dictionary",
}


def __getattr__(name: str):
    if name in _MOVED_NAMES:
        module = import_module(f"fstcrf.features.{_MOVED_NAMES[name]}")
        return getattr(module, "HashedDictionary" if name == "_HashedDictionary" else name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
