"""The factory "fstcrf", registered with spaCy.

fstcrf's package metadata names this module in the entry point group
``spacy_factories``, whose modules spaCy imports whenever it builds a pipeline:
``nlp.add_pipe("fstcrf", config=...)`` then works with no import of fstcrf.  The module
is light, so that a spaCy pipeline without the component loads nothing more of
fstcrf: the component's module is imported when the factory first runs.
"""

from __future__ import annotations

from spacy.language import Language

#: The factory's name: ``nlp.add_pipe(FACTORY, config=...)``.
FACTORY = "fstcrf"
#: The settings a config may leave out (see :mod:`fstcrf.spacy.component`); ``model`` is required.
DEFAULT_CONFIG: dict[str, object] = {
    "reads": {},
    "writes": None,
    "component": None,
    "threads": None,
    "probabilities": True,
}


@Language.factory(FACTORY, default_config=DEFAULT_CONFIG)
def make_component(
    nlp: Language,
    name: str,
    model: str,
    reads: dict[str, str],
    writes: str | dict[str, str] | None,
    component: int | str | None,
    threads: int | None,
    probabilities: bool,
):
    """The component spaCy builds for ``nlp.add_pipe("fstcrf", config=...)``: a
    :class:`~fstcrf.spacy.component.FstcrfComponent`."""
    from fstcrf.spacy.component import FstcrfComponent

    return FstcrfComponent(name, model, reads, writes, component, threads, probabilities)
