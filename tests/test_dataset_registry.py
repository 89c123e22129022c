"""The data sets keep one contract (harness.inputs.dataset.Dataset) and the registry is complete: every
folder of datasets/ is read by a registered data set or is named in NOT_DATA_SETS with a reason, and every
registered data set's committed files exist and load."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.inputs.dataset import NOT_DATA_SETS, Dataset, Provenance, PublishedFileDataset
from harness.inputs.layout import DATASETS
from harness.inputs.published import PUBLISHED, file_sha256
from tests.conftest import ROOT

BUILT_IN = [name for name in DATASETS.names() if DATASETS.get(name).__module__.startswith("harness.")]


def _example(name: str):
    """The data set built from committed files: its defaults, or its PROVENANCE.example."""
    return DATASETS.create(name, DATASETS.get(name).PROVENANCE.example)


def test_every_folder_of_datasets_is_a_registered_data_set_or_says_why_not():
    read = {folder for name in BUILT_IN for folder in DATASETS.get(name).PROVENANCE.folders}
    folders = {f"datasets/{p.name}" for p in (ROOT / "datasets").iterdir() if p.is_dir()}
    unaccounted = sorted(folders - read - {f"datasets/{n}" for n in NOT_DATA_SETS})
    assert unaccounted == [], f"register a data set that reads them, or name them in NOT_DATA_SETS: {unaccounted}"
    assert not read & {f"datasets/{n}" for n in NOT_DATA_SETS}, "a folder both read and named as not a data set"
    assert all(reason.strip() for reason in NOT_DATA_SETS.values())
    assert {f"datasets/{n}" for n in NOT_DATA_SETS} <= folders, "NOT_DATA_SETS names a folder that is gone"


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_registered_data_set_keeps_the_contract_and_its_files_exist(name):
    cls = DATASETS.get(name)
    provenance = cls.PROVENANCE
    assert isinstance(provenance, Provenance) and provenance.licence.strip()
    for path in (*provenance.folders, *provenance.sources):
        assert (ROOT / path).exists(), f"{name}: {path} is gone"
    if not provenance.folders:
        return  # the user brings the files: nothing committed to load
    dataset = _example(name)
    assert isinstance(dataset, Dataset)
    missing = [str(p) for p in dataset.files() if not Path(p).is_file()]
    assert missing == [], f"{name}: files missing: {missing}"
    assert all(Path(p).resolve().is_relative_to(ROOT / "datasets") for p in dataset.files())
    queries = dataset.queries()
    assert queries and all(q.relevant or q.kind == "negative" for q in queries)


@pytest.mark.parametrize("name", [n for n in BUILT_IN if issubclass(DATASETS.get(n), PublishedFileDataset)])
def test_a_published_file_data_set_checks_its_file(name, tmp_path):
    """The shared base: a copy of a published file that differs from it is refused before it is read."""
    published = _example(name).files()[0]
    changed = tmp_path / published.name
    changed.write_bytes(published.read_bytes() + b"\n")
    options = {**DATASETS.get(name).PROVENANCE.example, "path": str(changed)}
    if published.name not in PUBLISHED:  # the project's own sample: checked against the sha256 given
        options["sha256"] = file_sha256(published)
    with pytest.raises(Exception, match="sha256 mismatch"):
        DATASETS.create(name, options).check_file()
    assert DATASETS.create(name, {**options, "verify": False}).check_file()["sha256_check"] == "off"


def test_every_published_file_is_committed_with_its_hash():
    for name, published in PUBLISHED.items():
        folder = ROOT / Path(published.source).parent
        assert file_sha256(folder / name) == published.sha256, name
