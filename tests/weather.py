"""python-crfsuite's example instance, shared by the tests of fstcrf.pycrfsuite and of
sklearn's ``tagger_``: weighted, string and unicode attributes."""

from __future__ import annotations


def weather() -> tuple[list[dict], list[str]]:
    """(xseq, yseq): ten items and their labels."""
    xseq = [
        {"walk": 1, "shop": 0.5},
        {"walk": 1},
        {"walk": 1, "clean": 0.5},
        {"shop": 0.5, "clean": 0.5},
        {"walk": 0.5, "clean": 1},
        {"clean": 1, "shop": 0.1},
        {"walk": 1, "shop": 0.5},
        {},
        {"clean": 1},
        {"солнце": "не светит".encode(), "clean": 1},
    ]
    return xseq, ["sunny"] * 3 + ["rainy"] * 3 + ["sunny"] * 2 + ["rainy"] * 2
