"""The public data files in datasets/ and the check that a loader reads the published bytes.

Each file is copied verbatim from its upstream repository (datasets/<name>/SOURCE.md gives the
repository, commit, path and licence).  A figure measured on a file that differs from the published one
is a figure about another data set, so loaders check the sha256 before parsing:

    [dataset]
    name = "squad"
    path = "datasets/cmrc2018/cmrc2018_dev.json"     # checked against the published sha256
    # sha256 = "..."   your own copy, changed on purpose: the hash of that copy
    # verify = false   no check at all (results.json records that the check was off)

A file is recognised by its upstream file name, wherever it lies, so a modified copy elsewhere
(~/data/cmrc2018_dev.json) fails too; a file with any other name is someone's own data and is only
checked when `sha256` is given.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import DataError


@dataclass(frozen=True)
class PublishedFile:
    name: str  # the upstream file name, as in datasets/<folder>/
    sha256: str
    source: str  # the SOURCE file that documents it (repository, commit, licence)


PUBLISHED: dict[str, PublishedFile] = {f.name: f for f in (
    PublishedFile("cmrc2018_dev.json", "e9ff74231f05c230c6fa88b84441ee334d97234cbb610991cd94b82db00c7f1f",
                  "datasets/cmrc2018/SOURCE.md"),
    PublishedFile("cmrc2018_trial.json", "f3fae95b57da8e03afb2b57467dd221417060ef4d82db13bf22fc88589f3a6f3",
                  "datasets/cmrc2018/SOURCE.md"),
    PublishedFile("locomo10.json", "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
                  "datasets/locomo/SOURCE.md"),
    PublishedFile("medium_locomo_zh.json", "05e1eb46d9a737b2b45c32bde817768eecc19cf605ebc8acffaf88f6a5607403",
                  "datasets/locomo_zh/SOURCE.md"),
    PublishedFile("t2rank_100.jsonl", "b9b3d820d3314f92eb1853ef5ba27bd07dbfe802422e96c68872a8d9bcb3b570",
                  "datasets/t2ranking_100/SOURCE.md"),
)}


def file_sha256(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256(path: Path | str, sha256: str | None = None, verify: bool = True) -> dict[str, Any]:
    """Check `path` against `sha256` (when given) or the published hash of its file name.  Returns the
    file's hash and which check was made ("published", "given", "off", or "none" for a file that is
    not a published one), for the data set's description.  A mismatch raises DataError naming the
    file, both hashes and the two ways to proceed.  A missing file is left to the loader's own error."""
    path = Path(path)
    if not path.is_file():
        return {"sha256": None, "sha256_check": None}
    actual = file_sha256(path)
    published = PUBLISHED.get(path.name)
    if not verify:
        return {"sha256": actual, "sha256_check": "off"}
    if sha256:
        expected, check = sha256.lower(), "given"
    elif published is not None:
        expected, check = published.sha256, "published"
    else:
        return {"sha256": actual, "sha256_check": "none"}
    if actual != expected:
        what = ("does not match the sha256 given in [dataset]" if check == "given"
                else f"is not the published {path.name} ({published.source})")
        raise DataError(path, None, None,
                        f"sha256 mismatch: the file {what}: expected {expected}, got {actual}. Restore the "
                        f"published file, or, to measure a modified copy on purpose, set sha256 = \"{actual}\" "
                        f"(or verify = false) in the experiment's [dataset] table")
    return {"sha256": actual, "sha256_check": check}
