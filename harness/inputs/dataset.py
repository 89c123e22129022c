"""The contract every data set keeps, whichever files it reads: a name in the DATASETS registry
(harness.inputs.layout), where its files come from and under which licence (PROVENANCE), the files an
instance reads (files()), and what it loads: typed queries whose `relevant` documents are the qrels
(queries()), rendered into the layout a run indexes (render()).

    >>> dataset = DATASETS.create("t2ranking")
    >>> isinstance(dataset, Dataset), dataset.PROVENANCE.licence, dataset.files()
    >>> [(q.id, q.relevant) for q in dataset.queries()][:1]     # the qrels, grade > 0

The data sets read from one published file (CMRC 2018, LoCoMo, LoCoMo-zh, T2Ranking, a LongMemEval file)
share PublishedFileDataset: the file is `path`, checked against its published sha256 (or the one given)
before it is parsed (harness.inputs.published).  tests/test_dataset_registry.py holds the registry
complete: every folder of datasets/ is read by a registered data set or named in NOT_DATA_SETS with why.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from harness.inputs.layout import Layout, Query
from harness.inputs.published import check_sha256


@dataclass(frozen=True)
class Provenance:
    """Where a data set's files come from, and on what terms they may be used."""

    licence: str
    """the licence of the data, in words (a committed folder holds its full text where it is not ours)"""
    folders: tuple[str, ...] = ()
    """the committed folders under datasets/ it reads (none: the user brings the files)"""
    sources: tuple[str, ...] = ()
    """the files that say where the data comes from (SOURCE.md: repository, commit, hashes; or a data card)"""
    example: dict[str, Any] = field(default_factory=dict)
    """[dataset] parameters that read committed files, for a data set whose defaults read none"""


@runtime_checkable
class Dataset(Protocol):
    """A registered data set (an implementation of the `dataset` registry; the class decorated with
    @stage gives its typed parameters)."""

    PROVENANCE: ClassVar[Provenance]

    def files(self) -> list[Path]:
        """The files this instance reads (existing or not: a missing one is the loader's error)."""
        ...

    def queries(self) -> list[Query]:
        """The queries asked, each with its graded relevant documents (the qrels)."""
        ...

    def render(self, dest: Path | str | None = None, **options: Any) -> Layout:
        """The Markdown files a run indexes, with the provenance spans relevance is judged on."""
        ...


# The folders of datasets/ that no data set reads, and what they are instead.
NOT_DATA_SETS = {
    "example-openclaw-home": "an OpenClaw home (openclaw.json, agents/, memory): the input of `harness init "
                             "--openclaw-home`, which writes a `workspace` data set from it",
    "example-openclaw-home-labels": "grades of the example home's pooled queries, read by `harness judge --import`",
    "example-openclaw-home-scenario": "the memory and scripted sessions the conformance suite builds a real "
                                      "OpenClaw home from",
}


class PublishedFileDataset:
    """The shared part of the data sets read from one published file: the file is the field `path`, checked
    against the published sha256 of its upstream name (or the field `sha256`, unless `verify` is false)
    once, before it is parsed.  A base without fields, so that each data set keeps its own parameters'
    order and documentation."""

    # the subclass's fields `path`, `sha256` and `verify` (not declared here: pydantic would take them as fields)

    def files(self) -> list[Path]:
        return [Path(self.path)]

    def check_file(self) -> dict[str, Any]:
        """The file's sha256 and which check was made (harness.inputs.published.check_sha256), for the
        data set's description; a mismatch raises DataError naming the file."""
        return check_sha256(self.path, self.sha256, self.verify)
