"""docs/how-to/extend.md shows commands beside their outputs: here they run, with the example plugin
installed, and must print what the page shows; its conformance module must meet the runner's contract."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.conformance.runner import CONTRACT, load_module
from harness.errors import HarnessError
from tests.conftest import ROOT
from tests.test_plugins import plugin_path  # noqa: F401  (the example plugin installed into a folder of its own)

PAGE = ROOT / "docs" / "how-to" / "extend.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


def block_with(language: str, text: str) -> str:
    [found] = [b for b in blocks(language) if text in b]
    return found


def console_steps() -> list[tuple[str, str]]:
    """(command, the output the page shows under it) for every `$ ` line of the page's console blocks."""
    steps = []
    for block in blocks("console"):
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, _, output = chunk.partition("\n")
            steps.append((command, output))
    return steps


def test_the_page_shows_what_its_commands_print(plugin_path, tmp_path):  # noqa: F811
    (tmp_path / "passes.toml").write_text(block_with("toml", 'kind = "preset-passes"'), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(plugin_path), "HARNESS_CACHE_DIR": str(tmp_path / "cache"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    steps = console_steps()
    assert [c for c, _ in steps if c.startswith("harness study")], "the page runs no study"
    for command, shown in steps:
        if command.startswith("pip install"):  # the plugin_path fixture installed it
            assert shown == ""
            continue
        result = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], capture_output=True, text=True,
                                timeout=600, cwd=tmp_path, env=env)
        assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
        assert result.stdout == shown, command


def test_the_pages_conformance_module_meets_the_runners_contract(tmp_path, monkeypatch):
    (tmp_path / "qmd_top1.py").write_text(block_with("python", 'NAME = "qmd-top1"'), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = load_module("qmd_top1")
    assert all(hasattr(module, attr) for attr in CONTRACT) and callable(module.compare)


def test_a_module_without_the_contract_is_refused_in_one_line(tmp_path, monkeypatch):
    (tmp_path / "half_module.py").write_text('NAME = "half"\n', encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(HarnessError, match="^--module half_module: .* missing SYSTEMS, compare$"):
        load_module("half_module")


def test_conformance_refuses_an_unknown_module_before_installing_anything():
    result = subprocess.run([sys.executable, "-m", "harness.cli.conformance", "--module", "no_such_module"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "conformance: --module no_such_module: no module named 'no_such_module'\n"
