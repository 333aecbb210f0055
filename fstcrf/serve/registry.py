"""The models a server serves, by name: each one loaded from its file with the file's
checksum, and reloaded when the file changes.

A reload loads a changed file into a new :class:`ServedModel` and puts it in its
name's place; what was handed out before keeps the old one, so requests in flight
finish on the model they started with.  A file that does not load leaves the old
model in place and its error in :attr:`Registry.errors` until a later reload loads
it."""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from pathlib import Path

from fstcrf.engine.constraints import chunk_labels
from fstcrf.errors import FstcrfError, RequestError
from fstcrf.model.decoders import (
    file_columns,
    input_columns,
    is_composed,
    is_two_stage,
    load_decoder,
    model_components,
)

LOG = logging.getLogger("fstcrf")

#: Bytes of a model file hashed at a time.
HASH_BLOCK = 1 << 20


def file_checksum(path: str) -> str:
    """ "sha256:" and the hex SHA-256 digest of a file's bytes (what ``sha256sum`` prints)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while block := stream.read(HASH_BLOCK):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


@dataclass(frozen=True)
class ServedModel:
    """A model file loaded under a name.

    Attributes:
        name: the name the API calls it by.
        path: its file.
        decoder: the ChainCRF, JointModel or TwoStageTagger it holds.
        checksum: :func:`file_checksum` of the bytes it was loaded from.
        generation: 0 at start, one more at each reload of this name.
    """

    name: str
    path: str
    decoder: Any
    checksum: str
    generation: int

    @cached_property
    def kind(self) -> str:
        """ "composed", "two-stage" or "single"."""
        if is_composed(self.decoder):
            return "composed"
        return "two-stage" if is_two_stage(self.decoder) else "single"

    @cached_property
    def targets(self) -> tuple[str, ...]:
        """The columns it predicts, lowest component first (one for a single model)."""
        if is_two_stage(self.decoder):
            return (self.decoder.target_,)
        return tuple(component.target_ for component in model_components(self.decoder))

    @cached_property
    def columns(self) -> tuple[str, ...]:
        """The columns a request's sentences must have: those the model reads."""
        return input_columns(self.decoder)

    @cached_property
    def file_columns(self) -> tuple[str, ...]:
        """Every column of its training files, in order (CoNLL lines are read with them;
        the predicted ones may be missing)."""
        return file_columns(self.decoder)[0]

    def chains(self) -> list:
        """Its chains, each predicting one column: a composed model's components, a
        two-stage tagger's second stage, or the model itself."""
        if is_two_stage(self.decoder):
            return [self.decoder.second_]
        return model_components(self.decoder)

    def describe(self) -> dict:
        """What ``GET /v1/models`` says of it."""
        chains = self.chains()
        chunks = chunk_labels(tuple(chains[-1].labels_))  # the types constraints' spans name
        return {
            "name": self.name,
            "kind": self.kind,
            "labels": list(chains[-1].labels_),
            "chunk_types": list(chunks.types) if chunks is not None else [],
            "columns": list(self.columns),
            "predicts": list(self.targets),
            "components": [{"column": chain.target_, "labels": list(chain.labels_)} for chain in chains],
            "file": Path(self.path).name,
            "checksum": self.checksum,
            "generation": self.generation,
        }


def load_served(name: str, path: str, generation: int, threads: int | None) -> ServedModel:
    """The model file ``path`` loaded under ``name``, decoding on ``threads`` threads
    (None: as stored); FstcrfError when it does not load, or changes while it loads."""
    before = file_checksum(path)
    decoder = load_decoder(path)
    if file_checksum(path) != before:
        raise FstcrfError(f"{path} changed while it was loaded; reload again once it is written")
    if threads is not None:
        decoder.threads = threads
    return ServedModel(name, path, decoder, before, generation)


class Registry:
    """The served models by name (see the module doc)."""

    def __init__(self, paths: dict[str, str], threads: int | None = None):
        self.paths = dict(paths)
        self.threads = threads
        self.models: dict[str, ServedModel] = {}
        #: The error of the last reload of each name whose file did not load.
        self.errors: dict[str, str] = {}
        self.reloading = threading.Lock()

    def load(self) -> None:
        """Load every model; FstcrfError naming the file that does not load."""
        for name, path in self.paths.items():
            try:
                self.models[name] = load_served(name, path, 0, self.threads)
            except OSError as error:
                raise FstcrfError(f"model {name}: {path}: {error.strerror or error}") from None
            except FstcrfError as error:
                raise FstcrfError(f"model {name}: {error}") from None

    def get(self, name: str) -> ServedModel:
        """The model served as ``name``; RequestError (404) naming the field when none is."""
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(sorted(self.models))
            raise RequestError(f"no model is served as {name!r}; the models are {known}", "name", 404) from None

    def reload(self) -> dict[str, str]:
        """Reload each model whose file changed; what happened to each name
        ("unchanged", "reloaded" or the error that kept the old model).  One reload
        runs at a time; a second waits for the first."""
        with self.reloading:
            outcome = {}
            for name, path in self.paths.items():
                old = self.models[name]
                try:
                    if file_checksum(path) == old.checksum:
                        self.errors.pop(name, None)
                        outcome[name] = "unchanged"
                        continue
                    self.models[name] = load_served(name, path, old.generation + 1, self.threads)
                except (OSError, FstcrfError) as error:
                    message = f"{path}: {error.strerror or error}" if isinstance(error, OSError) else str(error)
                    self.errors[name] = message
                    outcome[name] = f"kept the old model: {message}"
                    LOG.error("reload of model %s failed, the old model serves on: %s", name, message)
                    continue
                self.errors.pop(name, None)
                outcome[name] = "reloaded"
                LOG.info("reloaded model %s from %s (%s)", name, path, self.models[name].checksum)
            return outcome
