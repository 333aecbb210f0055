"""The spaCy pipeline component of an fstcrf model (single, composed, or under a
grammar) decoding the Docs of a pipeline, made by the factory "fstcrf"
(:mod:`fstcrf.spacy.factory`):

    nlp.add_pipe("fstcrf", config={"model": "chunker.model", "reads": {"pos": "tag_"}, "writes": "spans:chunks"})

Settings (see docs/spacy.md):

``model``
    the model file (``fstcrf train``, ``fstcrf compose``).  If it does not exist
    when the pipeline is built, the component waits for ``from_disk`` (``spacy.load``
    of a saved pipeline, whose folder holds its own copy of the model); using it
    before raises ModelFileError.
``reads``
    the token attribute of each input column (see :mod:`fstcrf.spacy.plan`):
    "text", "lower_", "norm_", "shape_", "tag_", "pos_", "lemma_", "dep_" or an
    extension "_.NAME"; word -> text and pos -> tag_ unless given
    (:data:`fstcrf.spacy.plan.DEFAULT_READS`).
``writes``
    "ents", "spans:KEY", "tag_" or "_.NAME", or a mapping from components to those;
    None: "ents" for an entity tagger, "spans:chunks" for another chunker, "tag_"
    otherwise (see :mod:`fstcrf.spacy.writing`).
``component``
    the component of a composed model that ``writes`` (a string) applies to: the
    column it predicts or its place; None: an entity tagger, else a chunker, else
    the top component.
``threads``
    the model's decoding threads (None: the model's own).
``probabilities``
    compute the exact probability of every span (default true).

``nlp.pipe`` hands the component batches of Docs (its ``batch_size``): each batch is
decoded by one call of the model.  ``to_disk`` writes the model into the
component's folder and ``from_disk`` reads it from there.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from spacy.pipeline import Pipe
from spacy.tokens import Doc
from spacy.util import minibatch

from fstcrf.errors import ModelFileError
from fstcrf.model.chain import ChainCRF, save_model
from fstcrf.model.compose import JointModel, load_any
from fstcrf.spacy.decoding import decode
from fstcrf.spacy.plan import Plan, plan, written_labels
from fstcrf.spacy.reading import read_sentences
from fstcrf.spacy.writing import register_extensions, write_outputs

#: The model file inside the component's folder of a saved pipeline.
MODEL_FILE = "model.fstcrf"


class FstcrfComponent(Pipe):
    """An fstcrf model in a spaCy pipeline (see the module doc for the settings).

    Attributes: ``name``, ``model_path`` (the ``model`` setting), ``model`` (the
    ChainCRF or JointModel, None until it is loaded) and ``plan`` (its
    :class:`~fstcrf.spacy.plan.Plan`, None likewise)."""

    def __init__(
        self,
        name: str,
        model: str,
        reads: Mapping[str, str] | None = None,
        writes: str | Mapping[str, str] | None = None,
        component: int | str | None = None,
        threads: int | None = None,
        probabilities: bool = True,
    ):
        self.name = name
        self.model_path = model
        self.reads = dict(reads or {})
        self.writes = dict(writes) if isinstance(writes, Mapping) else writes
        self.component = component
        self.threads = threads
        self.probabilities = probabilities
        self.model: ChainCRF | JointModel | None = None
        self.plan: Plan | None = None
        if os.path.exists(model):
            self.adopt(load_any(model))

    @property
    def where(self) -> str:
        """The component as error messages name it."""
        return f"the fstcrf component {self.name!r}"

    def adopt(self, model: ChainCRF | JointModel) -> None:
        """Use ``model``: plan its inputs and outputs under the settings (PipelineConfigError
        if they do not fit it) and register the extensions it writes."""
        planned = plan(model, self.reads, self.writes, self.component, self.where)
        register_extensions(planned.outputs, self.where)
        if self.threads is not None:
            model.threads = self.threads
        self.model, self.plan = model, planned

    @property
    def labels(self) -> tuple[str, ...]:
        """The labels the component writes: chunk types of its spans, labels of its tags."""
        if self.model is None or self.plan is None:
            return ()
        return written_labels(self.model, self.plan.outputs)

    # -- decoding ----------------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        """Decode one Doc (in place) and return it."""
        self.annotate([doc])
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Decode the Docs of ``stream`` in batches of ``batch_size``, one model call per
        batch, and yield them in order; a batch that fails goes to the component's
        error handler (``set_error_handler``), which raises by default."""
        error_handler = self.get_error_handler()
        for batch in minibatch(stream, size=batch_size):
            docs = list(batch)
            try:
                self.annotate(docs)
                yield from docs
            except Exception as error:
                error_handler(self.name, self, docs, error)

    def annotate(self, docs: Sequence[Doc]) -> None:
        """Decode the sentences of ``docs`` with one call of the model per kind of output
        and set the outputs on them."""
        if self.model is None or self.plan is None:
            raise ModelFileError(
                f"{self.where} has no model: {self.model_path} did not exist when the pipeline was built, "
                "and no saved pipeline was loaded into it (from_disk)"
            )
        sentences, places = read_sentences(docs, self.plan.inputs, self.where)
        decoded = decode(self.model, sentences, self.plan.outputs, self.probabilities)
        write_outputs(docs, places, decoded, self.plan.outputs)

    # -- serialization ---------------------------------------------------------
    def to_disk(self, path: str | os.PathLike, *, exclude: Sequence[str] = ()) -> None:
        """Write the model into the folder ``path`` (created if needed)."""
        if "model" in exclude:
            return
        if self.model is None:
            raise ModelFileError(f"{self.where} has no model to save: {self.model_path} did not exist")
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        if isinstance(self.model, JointModel):
            self.model.save(folder / MODEL_FILE)
        else:
            save_model(self.model, folder / MODEL_FILE)

    def from_disk(self, path: str | os.PathLike, *, exclude: Sequence[str] = ()) -> FstcrfComponent:
        """Use the model that :meth:`to_disk` wrote into the folder ``path``."""
        if "model" not in exclude:
            self.adopt(load_any(Path(path) / MODEL_FILE))
        return self

    def to_bytes(self, *, exclude: Sequence[str] = ()) -> bytes:
        """The model file's bytes (b"" with ``exclude=["model"]``)."""
        with tempfile.TemporaryDirectory(prefix="fstcrf-spacy-") as scratch:
            self.to_disk(scratch, exclude=exclude)
            written = Path(scratch) / MODEL_FILE
            return written.read_bytes() if written.exists() else b""

    def from_bytes(self, bytes_data: bytes, *, exclude: Sequence[str] = ()) -> FstcrfComponent:
        """Use the model whose file bytes :meth:`to_bytes` gave."""
        if "model" in exclude or not bytes_data:
            return self
        with tempfile.TemporaryDirectory(prefix="fstcrf-spacy-") as scratch:
            (Path(scratch) / MODEL_FILE).write_bytes(bytes_data)
            return self.from_disk(scratch)
