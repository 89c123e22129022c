"""The public data sets live in datasets/ (a fresh clone needs nothing else) and loaders read exactly the
published bytes (issue 15, deliverable 1)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness.config import load_experiment, load_toml
from harness.errors import DataError
from harness.inputs.layout import DATASETS, project_path
from harness.inputs.published import PUBLISHED, check_sha256, file_sha256

from .conftest import ROOT

PUBLIC_FOLDERS = ("cmrc2018", "locomo", "locomo_zh", "t2ranking_100")
LICENCE_FILES = {"cmrc2018": ["LICENCE"], "locomo": ["LICENSE.txt"],
                 "locomo_zh": ["LICENSE-mem1-Apache-2.0", "LICENSE-LoCoMo-CC-BY-NC-4.0.txt"],
                 "t2ranking_100": ["LICENSE.RAG-Retrieval.txt", "README.T2Ranking.md"]}


# --- the files and their SOURCE ----------------------------------------------------------------

@pytest.mark.parametrize("published", PUBLISHED.values(), ids=lambda p: p.name)
def test_each_published_file_is_in_datasets_with_its_hash_in_its_source(published):
    source = ROOT / published.source
    path = source.parent / published.name
    assert path.is_file(), f"{path} missing: datasets/ must hold every public file a target reads"
    assert file_sha256(path) == published.sha256
    text = source.read_text(encoding="utf-8")
    assert f"| {published.name} |" in text and published.sha256 in text, f"{source} must list {published.name}"


@pytest.mark.parametrize("folder", PUBLIC_FOLDERS)
def test_each_public_folder_has_its_licence_and_a_source(folder):
    root = ROOT / "datasets" / folder
    for name in ["SOURCE.md", *LICENCE_FILES[folder]]:
        assert (root / name).is_file(), f"{root / name} missing"
    source = (root / "SOURCE.md").read_text(encoding="utf-8")
    for needle in ("upstream repository", "commit", "licence", "sha256", "Counts"):
        assert needle in source, f"{root}/SOURCE.md says nothing about {needle}"


# --- the sha256 check ---------------------------------------------------------------------------

@pytest.fixture()
def modified_locomo(tmp_path) -> Path:
    """A copy of locomo10.json, under its upstream name, with one character changed."""
    path = tmp_path / "locomo10.json"
    shutil.copyfile(ROOT / "datasets/locomo/locomo10.json", path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("Caroline", "Karoline", 1), encoding="utf-8")
    return path


def test_a_modified_copy_fails_with_file_both_hashes_and_the_way_out(modified_locomo):
    actual = file_sha256(modified_locomo)
    dataset = DATASETS.create("locomo", path=str(modified_locomo))
    with pytest.raises(DataError) as err:
        dataset.queries()
    message = str(err.value)
    assert err.value.path == str(modified_locomo)
    assert PUBLISHED["locomo10.json"].sha256 in message and actual in message
    assert "datasets/locomo/SOURCE.md" in message
    assert f'sha256 = "{actual}"' in message and "verify = false" in message


def test_a_modified_copy_runs_when_the_user_says_so(modified_locomo):
    actual = file_sha256(modified_locomo)
    given = DATASETS.create("locomo", path=str(modified_locomo), sha256=actual)
    assert len(given.queries()) == 1982 and given.describe()["sha256_check"] == "given"
    off = DATASETS.create("locomo", path=str(modified_locomo), verify=False)
    assert off.describe()["sha256_check"] == "off" and off.describe()["sha256"] == actual
    with pytest.raises(DataError, match="does not match the sha256 given"):
        DATASETS.create("locomo", path=str(modified_locomo), sha256="0" * 64).queries()


def test_published_files_pass_and_other_files_are_not_checked(tmp_path):
    assert check_sha256(ROOT / "datasets/cmrc2018/cmrc2018_dev.json")["sha256_check"] == "published"
    own = tmp_path / "my_questions.json"
    own.write_text("{}", encoding="utf-8")
    assert check_sha256(own) == {"sha256": file_sha256(own), "sha256_check": "none"}
    assert check_sha256(tmp_path / "absent.json") == {"sha256": None, "sha256_check": None}


# --- nothing reads outside the clone ------------------------------------------------------------

def makefile_commands() -> dict[str, list[str]]:
    """Target -> its recipe lines, with $(VAR) references expanded from the Makefile's own variables."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    text = text.replace("\\\n", " ")
    variables = dict(re.findall(r"^([A-Z_]+)\s*[:?]?=\s*(.*)$", text, flags=re.M))
    targets: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        match = re.match(r"^([a-zA-Z0-9_-]+):", line)
        if match:
            current = targets.setdefault(match[1], [])
        elif line.startswith("\t") and current is not None:
            command = line.strip()
            for _ in range(6):  # nested references ($(BENCH) holds $(BIN); $(TREC_LOCOMO) four deep)
                command = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m[1], m[0]), command)
                # the one make function used: $(if $(filter A,B),X,Y) (ROUNDS_DIR, ABLATION_DIR)
                command = re.sub(r"\$\(if \$\(filter ([^,()]+),([^,()]+)\),([^,()]*),([^,()]*)\)",
                                 lambda m: m[3] if m[1] == m[2] else m[4], command)
            current.append(command)
    return targets


# a path argument: absolute or ../ (what must not occur), or under one of the clone's input folders
PATH_TOKEN = re.compile(r"(?<![\w$(/:.])((?:\.\./|/)[^\s'\"]+|(?:experiments|datasets|tests)/[^\s'\"]*)")


def experiment_files_of(command: str) -> list[Path]:
    """The experiment files a command reads: its own arguments, and the runs of a matrix or benchmark."""
    out = []
    for token in PATH_TOKEN.findall(command):
        path = ROOT / token
        if path.suffix == ".toml" and path.is_file():
            out.append(path)
            spec = load_toml(path)
            out += [ROOT / run["experiment"] for run in spec.get("runs", []) if "experiment" in run]
            if isinstance(spec.get("experiment"), str):  # a lossless spec's Markdown-memory runs
                out.append(ROOT / spec["experiment"])
    return out


def is_experiment(path: Path) -> bool:
    """An experiment file (its declared kind; a file of the harness's own tests may declare none), not a
    study file of another kind (a grid, matrix, benchmark, scale, ...)."""
    return load_toml(path).get("kind", "experiment") == "experiment"


def test_no_make_target_or_experiment_reads_outside_the_clone():
    commands = makefile_commands()
    assert {"tokenizers", "chunkers", "sweep", "locomo"} <= set(commands)
    assert PATH_TOKEN.findall("harness run ../elsewhere/x.toml --out /tmp/o experiments/a.toml "
                              "--benchmark-storage=file://reports/bench") == ["../elsewhere/x.toml", "/tmp/o",
                                                                              "experiments/a.toml"]
    experiments = {ROOT / f"experiments/round{r}.toml" for r in range(1, 5)}  # `harness ablation` reads these
    for path in (ROOT / "experiments").glob("*.toml"):
        assert "../" not in path.read_text(encoding="utf-8"), f"{path} names a path outside the clone"
        experiments |= set(experiment_files_of(str(path.relative_to(ROOT))))  # itself, and what a spec runs
    for target, lines in commands.items():
        for command in lines:
            for token in PATH_TOKEN.findall(command):
                assert not token.startswith(("../", "/")), f"make {target}: {token} lies outside the clone"
                assert (ROOT / token.rstrip("/")).exists(), f"make {target} reads {token}, which the clone does not hold"
            experiments |= set(experiment_files_of(command))
    for path in sorted(experiments):
        if not is_experiment(path):
            continue  # a grid or a matrix/benchmark spec: its experiments are in the set already
        config = load_experiment(path)
        name, given = (config.dataset.name, config.dataset.params) if config.dataset else ("king78", {})
        params = {p.name: p.default for p in DATASETS.parameters(name)}
        data_path = given.get("path", params.get("path"))
        if data_path is None:
            continue
        resolved = project_path(data_path).resolve()
        assert resolved.is_relative_to(ROOT.resolve()), f"{path}: [dataset] path {data_path} lies outside the clone"
        assert resolved.exists(), f"{path}: [dataset] path {data_path} is not in the clone"


def test_no_code_test_or_doc_reads_shared_data():
    pattern = re.compile(r"shared/data")  # the old home of the public data sets
    offenders = []
    for path in [*ROOT.glob("harness/**/*.py"), *ROOT.glob("tests/*.py"), *ROOT.glob("experiments/**/*.toml"),
                 ROOT / "Makefile", ROOT / "README.md"]:
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in pattern.finditer(text)]
    assert not offenders, offenders
