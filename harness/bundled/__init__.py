"""Files the harness ships with its code: the experiment files and presets, the project's own data set,
the example OpenClaw workspace the "your own memory" walkthrough starts from, the example OpenClaw
installation of the "your agent's own questions" tutorial with its grades file, and the CI gate's example
files (`harness example NAME DIR` copies the examples out: harness.bundled.examples).

The repository keeps them where people look for them, `experiments/`, `datasets/king78/` and
`datasets/example-workspace/` at its top level; those folders are the source of truth.  This package
holds symbolic links to them (`experiments -> ../../experiments`, `king78 -> ../../datasets/king78`,
`example-workspace -> ../../datasets/example-workspace`, and so on for SOURCES), so pyproject.toml's package discovery (namespace
packages, which may hold a hyphen) and package-data put their files into the wheel as
`harness/bundled/experiments/`, `harness/bundled/king78/` and `harness/bundled/example-workspace/` (real
files there: building a wheel follows the links), and a checkout or an editable install reads the same
names through the links.  No setup.py is needed for this.  (A checkout
without symbolic links, git on Windows without them enabled, cannot build the wheel; the harness needs
POSIX anyway: `resource`, `fork`.)  The public data sets (CMRC 2018, LoCoMo, T2Ranking) are not shipped:
their licences and size keep them in a clone of the repository.

    >>> bundled_dir("experiments") / "presets"     # the presets, wherever the harness was installed from
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path, PurePosixPath

from harness.errors import HarnessError

# folder inside this package -> the repository folder it links to
SOURCES = {"experiments": "experiments", "king78": "datasets/king78",
           "example-workspace": "datasets/example-workspace",
           "example-openclaw-home": "datasets/example-openclaw-home",
           "example-openclaw-home-labels": "datasets/example-openclaw-home-labels",
           "ci": "examples/ci"}
REPOSITORY = Path(__file__).resolve().parents[2]  # a checkout or editable install: the repository's root


def bundled_dir(name: str) -> Path:
    """The folder of bundled files `name` (a key of SOURCES: "experiments", "king78", ...): inside the
    installed package when the harness came from a wheel, else (through the link) the repository's own
    folder."""
    if name not in SOURCES:
        raise KeyError(f"no bundled folder {name!r}; one of {sorted(SOURCES)}")
    # importlib.resources finds the package wherever it was installed; pip installs wheels unzipped,
    # so the Traversable is a real folder
    packaged = Path(str(resources.files(__name__))) / name
    if packaged.is_dir():
        return packaged
    raise HarnessError(f"the harness's bundled {name} are missing ({packaged} is not a folder); reinstall the "
                       "harness, or in a checkout restore the symbolic link to the repository's "
                       f"{SOURCES[name]}/")


def bundled_path(relative: str | Path) -> Path | None:
    """A repository-relative path (`experiments/round4.toml`, `datasets/king78/queries.jsonl`,
    `datasets/example-workspace/openclaw.json`) as the
    bundled copy of it, or None when it is not one of the bundled folders (a public data set, say)."""
    parts = PurePosixPath(Path(relative).as_posix()).parts
    for name, source in SOURCES.items():
        prefix = PurePosixPath(source).parts
        if parts[:len(prefix)] == prefix:
            return bundled_dir(name).joinpath(*parts[len(prefix):])
    return None


def project_path(path: str | Path) -> Path:
    """A relative data path is read from the working directory when it is there, else from the files the
    harness ships (experiments/ and datasets/king78/: bundled_path), else from the repository the
    harness runs from (a checkout holds the public data sets in datasets/).  A path found nowhere is
    returned as given, so that the error about it names what the user wrote."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    bundled = bundled_path(path)
    if bundled is not None and bundled.exists():
        return bundled
    in_repository = REPOSITORY / path
    return in_repository if in_repository.exists() else path
