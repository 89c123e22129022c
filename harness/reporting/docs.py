"""README.md and docs/ rendered from templates whose every measured figure reads a committed report.

    python -m harness.reporting.docs            # write README.md and docs/**.md (`make docs`)
    python -m harness.reporting.docs --check    # exit 1 naming every file that differs from its rendering
    python -m harness.reporting.docs --lint     # exit 1 naming every figure typed into a template

Sources are Jinja2 templates under docs/src/: docs/src/README.md.j2 -> README.md, any other
docs/src/PATH.md.j2 -> docs/PATH.md; files whose name starts with "_" (macros) are not rendered.  A figure
is an expression over a report under reports/, formatted at the precision it is printed with:

    {% set loc = report("locomo/locomo.json") %}            the parsed JSON (cached); .md: its text
    {{ ci(run_summary(loc, "openclaw-2026.02-turns"), "recall_any@10") }}   0.849 [0.830, 0.866]
    {{ f(x) }} {{ f(x, 2) }} {{ sf(d) }}                    0.849, 0.85, +0.014 (signed)
    {{ pct(share) }} {{ pct(share, 1) }}                    84%, 84.1%
    {{ p(row) }}  {{ pv(p, floor, monte_carlo) }}            a p-value with its floor (formatting.p_text)
    {{ n(count) }}  {{ frac(a, b) }}  {{ dur(seconds) }}     1,536  6/7  2 min 24 s

A number that is not a measurement (a configuration value such as minScore 0.35, a version, a seed's
published claim) is marked, visibly: {{ literal("0.35") }}, or a whole passage inside
{% filter literal %} ... {% endfilter %}.  `lint` fails on what looks like a figure anywhere else:
decimals with three or more fractional digits, bracketed intervals, percentages, "p = ..." values.
The command-line, stage and metric references are generated from the code (cli_reference,
stages_reference, module_doc), so a new command or stage is documented by re-rendering.
"""
from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from pathlib import Path
from typing import Any, Mapping

import jinja2

from harness.bundled import REPOSITORY
from harness.reporting.figures import (
    cell,
    ci,
    dci,
    dur,
    f,
    find,
    finite,
    frac,
    interval,
    literal,
    n,
    p,
    pct,
    pv,
    select,
    sf,
    values,
)
from harness.cli import app
from harness.catalog import describe
from harness.catalog import registries
from harness.studies.spec import studies_reference
from harness.config import PRESETS_DIR, load_toml
from harness.profiles import PROFILES, limit_message
from harness import __version__
from harness.evaluation.formatting import LEVEL
from harness.studies.query_diff import diff_files

TEMPLATES = "docs/src"
SUFFIX = ".j2"


# --- reading the reports ---------------------------------------------------------------------------------


class Reports:
    """The committed reports under ROOT/reports, each parsed once."""

    def __init__(self, root: Path):
        self.root = Path(root) / "reports"

    @functools.cache
    def bench(self, name: str) -> float:
        """The median (seconds) of a pytest-benchmark baseline under reports/bench/ (`make bench-baseline`)."""
        files = sorted(self.root.glob("bench/*/*_baseline.json"))
        if not files:
            raise FileNotFoundError("no benchmark baseline under reports/bench/")
        return find(self.load(files[-1].relative_to(self.root).as_posix())["benchmarks"], name=name)["stats"]["median"]

    def diff(self, base: str, now: str, allow: Any = ()) -> Any:
        """`harness diff` of two committed results.json (harness.studies.query_diff.diff_files); `allow`: the
        confounds the page declares the point (`--allow-confound`), as a reader's command must."""
        return diff_files(self.root / base, self.root / now, allow_confounds=allow)

    def load(self, relative: str) -> Any:
        path = self.root / relative
        if not path.is_file():
            raise FileNotFoundError(f"a template reads reports/{relative}, which does not exist")
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix == ".json" else text


def md_table(text: str, heading: str) -> str:
    """The first Markdown table under `## heading` of a report's .md text (for figures a JSON lacks)."""
    match = re.search(rf"^#+ {re.escape(heading)}\s*$", text, re.MULTILINE)
    if match is None:
        raise KeyError(f"no heading {heading!r} in the report")
    lines = text[match.end():].splitlines()
    table, started = [], False
    for line in lines:
        if line.startswith("|"):
            table.append(line)
            started = True
        elif started or line.startswith("#"):
            break
    if not table:
        raise KeyError(f"no table under {heading!r}")
    return "\n".join(table)


# --- references generated from the code ---------------------------------------------------------------


def _plain(text: str | None) -> str:
    """Help text as the terminal shows it: rich markup rendered ("\\[gate]" -> "[gate]")."""
    from rich.text import Text

    return Text.from_markup(text or "").plain.strip()


def _md(text: Any) -> str:
    """Plain text as Markdown shows it literally: <name> outside code spans escaped (a code host would
    drop it as an HTML tag)."""
    parts = str(text).split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;").replace(">", "&gt;") for i, part in enumerate(parts))


def _cell(text: Any) -> str:
    return _md(" ".join(str(text).split())).replace("|", "\\|")


def cli_commands() -> list[Any]:
    """(name, click command) of every `harness` command, in the order `harness --help` lists them."""
    import typer.main

    group = typer.main.get_command(app)
    return [(name, group.commands[name]) for name in group.list_commands(None)]  # type: ignore[attr-defined]


def cli_reference() -> str:
    """Markdown: every command with its usage, documentation and options, read from the typer app."""
    out = []
    for name, cmd in cli_commands():
        args = [prm for prm in cmd.params if prm.param_type_name == "argument"]
        usage = " ".join([f"harness {name}", "[OPTIONS]",
                          *(a.name.upper() if a.required else f"[{a.name.upper()}]" for a in args)])
        out += [f"## `harness {name}`", "", f"`{usage}`", "", _md(_plain(cmd.help)), ""]
        rows = []
        for prm in cmd.params:
            if prm.name == "help":
                continue
            if prm.param_type_name == "argument":
                what = prm.name.upper()
            else:
                what = ", ".join(f"`{o}`" for o in [*prm.opts, *prm.secondary_opts])
            default = "required" if prm.required else ("" if prm.default in (None, False, ()) else
                                                       f"`{prm.default}`")
            rows.append(f"| {what} | {_cell(_plain(getattr(prm, 'help', '')))} | {_cell(default)} |")
        if rows:
            out += ["| argument or option | what it does | default |", "|---|---|---|", *rows, ""]
    return "\n".join(out).rstrip() + "\n"


def builtin_stages() -> list[Any]:
    """Every implementation the harness registers itself (plugins installed beside it left out)."""
    return [i for i in describe() if i.module.startswith("harness.")]


def stages_reference() -> str:
    """Markdown: every registered stage, table by table in pipeline order, with its parameters."""
    by_table: dict[str, list[Any]] = {}
    for item in builtin_stages():
        by_table.setdefault(item.table, []).append(item)
    out = []
    for table, registry in registries().items():
        items = by_table.get(table, [])
        if not items:
            continue
        brackets = f"[[{table}]]" if table == "postprocess" else f"[{table}]"
        out += [f"## `{brackets}`: {registry.kind}", ""]
        for item in items:
            out += [f"### `{item.name}`", "", _md(item.doc.strip()) or "(undocumented)", "",
                    f"Module `{item.module}`; in a TOML file: `{brackets} name = \"{item.name}\"`.", ""]
            if item.parameters:
                out += ["| parameter | type | default | what it does |", "|---|---|---|---|"]
                for prm in item.parameters:
                    default = "required" if prm.required else f"`{prm.default!r}`"
                    out.append(f"| `{prm.name}` | `{_cell(prm.type)}` | {_cell(default)} | {_cell(prm.doc)} |")
                out.append("")
    return "\n".join(out).rstrip() + "\n"


def module_doc(module: str) -> str:
    """A module's docstring (the definitions a reference page quotes), as a text block."""
    import importlib

    doc = (importlib.import_module(module).__doc__ or "").strip("\n")
    return f"```text\n{doc}\n```\n"


def _studies_reference() -> str:
    return studies_reference()


def preset_descriptions() -> dict[str, str]:
    """{preset name: its description}, from the preset files the harness ships (experiments/presets/)."""
    return {path.stem: load_toml(path).get("description", "").strip() for path in sorted(PRESETS_DIR.glob("*.toml"))}


def memory_cap_message(stage: str, profile: str = "vps") -> str:
    """The error a run that breaks a profile's memory cap prints, as harness.profiles words it."""
    cap = PROFILES[profile].memory_cap_bytes
    return "error: " + limit_message(profile, stage, cap)


def source(relative: str, start: str = "", stop: str | None = None, root: Path = REPOSITORY) -> str:
    """A committed file's lines from the first that starts with `start` up to (not including) the next that
    starts with `stop`: code a page shows as it is, not retyped."""
    lines = (Path(root) / relative).read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    last = next((i for i in range(first + 1, len(lines)) if stop is not None and lines[i].startswith(stop)), len(lines))
    return "\n".join(lines[first:last]).rstrip() + "\n"


def make_targets(root: Path) -> list[tuple[str, str]]:
    """(target, description) of every documented Makefile target, as `make help` lists them."""
    text = (Path(root) / "Makefile").read_text(encoding="utf-8")
    return re.findall(r"^([a-zA-Z0-9_-]+):.*?## (.*)$", text, re.MULTILINE)


# --- rendering and checking ---------------------------------------------------------------------------


def environment(root: Path = REPOSITORY) -> jinja2.Environment:
    root = Path(root)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(root / TEMPLATES)), undefined=jinja2.StrictUndefined,
                             autoescape=False, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                             extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])
    reports = Reports(root)
    helpers = {"f": f, "sf": sf, "ci": ci, "dci": dci, "interval": interval, "pct": pct, "p": p, "pv": pv, "n": n,
               "frac": frac, "dur": dur, "literal": literal, "finite": finite}
    env.filters.update(helpers)
    env.globals.update(helpers)

    env.globals.update(level=pct(LEVEL), report=reports.load, bench=reports.bench, query_diff=reports.diff, md_table=md_table, find=find,
                       select=select, cell=cell, values=values,
                       cli_reference=cli_reference, stages_reference=stages_reference, module_doc=module_doc, source=lambda *a, **k: source(*a, root=root, **k), memory_cap_message=memory_cap_message,
                       preset_descriptions=preset_descriptions, studies_reference=_studies_reference,
                       make_targets=lambda: make_targets(root), version=__version__)
    return env


def outputs(root: Path = REPOSITORY) -> dict[str, Path]:
    """Template name (relative to docs/src) -> the file it renders to, relative to the repository."""
    src = Path(root) / TEMPLATES
    out = {}
    for path in sorted(src.rglob(f"*.md{SUFFIX}")):
        name = path.relative_to(src).as_posix()
        if any(part.startswith("_") for part in Path(name).parts):
            continue
        target = name[:-len(SUFFIX)]
        out[name] = Path(target) if target == "README.md" else Path("docs") / target
    return out


def render_all(root: Path = REPOSITORY) -> dict[Path, str]:
    """Every output file (relative path) -> its rendering from the templates and reports under `root`."""
    env = environment(root)
    return {target: env.get_template(name).render() for name, target in outputs(root).items()}


def generated_files(where: Path) -> list[Path]:
    """The files a rendering owns under `where`: README.md and every docs/**.md."""
    where = Path(where)
    return sorted([Path("README.md"), *(p.relative_to(where) for p in (where / "docs").rglob("*.md"))])


def check(rendered: Mapping[Path, str], where: Path = REPOSITORY) -> list[str]:
    """What differs between the rendering and the files under `where`: one line per file (a hand edit, a
    stale file, a Markdown file under docs/ that no template renders)."""
    where = Path(where)
    problems = []
    for target, text in rendered.items():
        path = where / target
        if not path.is_file():
            problems.append(f"{target}: missing (run make docs)")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{target}: differs from its rendering (edit docs/src/, then make docs)")
    problems += [f"{p}: no template renders it (move it to docs/src/{p.relative_to('docs')}{SUFFIX})"
                 for p in generated_files(where) if p not in rendered]
    return problems


FIGURE_PATTERNS = {
    "a decimal with 3+ fractional digits": re.compile(r"(?<![\w.])[+\-−]?\d+\.\d{3,}(?![\w.])"),
    "a bracketed interval": re.compile(r"\[\s*[+\-−]?\d[\d.,]*\s*,\s*[+\-−]?\d[\d.,]*\s*\]"),
    "a percentage": re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?%"),
    "a p-value": re.compile(r"\bp\s*(?:=|<|>|≤|≥)\s*\d"),
}


def figures_in(text: str) -> list[tuple[int, str, str]]:
    """(line offset, kind, match) of everything in `text` that looks like a measured figure."""
    found = [(m.start(), kind, m.group(0)) for kind, rx in FIGURE_PATTERNS.items() for m in rx.finditer(text)]
    return [(text.count("\n", 0, start), kind, match) for start, kind, match in sorted(found)]


def lint(source: str, name: str = "<template>") -> list[str]:
    """Figures typed into a template: "name:line: a percentage '84%'" for each, outside expressions and
    outside literal(...) / {% filter literal %} (string and number constants inside expressions count)."""
    env = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])
    problems = []
    tokens = [t for t in env.lex(source) if t[1] != "whitespace"]
    depth = 0  # inside {% filter literal %}
    for i, (line, kind, value) in enumerate(tokens):
        if kind == "block_begin":
            names = [v for _, k, v in tokens[i + 1:i + 3] if k == "name"]
            if names[:2] == ["filter", "literal"]:
                depth += 1
            elif names[:1] == ["endfilter"] and depth:
                depth -= 1
            continue
        if depth:
            continue
        if kind in ("data", "string", "float"):
            if kind != "data" and _inside_literal_call(tokens, i):
                continue
            problems += [f"{name}:{line + offset}: {what} {text!r} (an expression over a report, or literal(...) "
                         "if it is not a measurement)" for offset, what, text in figures_in(str(value))]
    return problems


def _inside_literal_call(tokens: list[tuple[int, str, str]], i: int) -> bool:
    """Token i is the argument of literal(...): `literal ( "0.35" )`."""
    return i >= 2 and tokens[i - 1][1:] == ("operator", "(") and tokens[i - 2][1:] == ("name", "literal")


def lint_all(root: Path = REPOSITORY) -> list[str]:
    src = Path(root) / TEMPLATES
    return [problem for path in sorted(src.rglob(f"*{SUFFIX}"))
            for problem in lint(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())]


def write(rendered: Mapping[Path, str], where: Path = REPOSITORY) -> list[Path]:
    written = []
    for target, text in rendered.items():
        path = Path(where) / target
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.reporting.docs", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a file differs")
    parser.add_argument("--lint", action="store_true", help="only look for figures typed into the templates")
    parser.add_argument("--quiet", action="store_true",
                        help="one line: how many pages changed (what a make target prints after its report)")
    args = parser.parse_args(argv)
    problems = lint_all()
    if args.lint or problems:
        print("\n".join(problems) or "no typed figures in docs/src/")
        return 1 if problems else 0
    rendered = render_all()
    if args.check:
        problems = check(rendered)
        print("\n".join(problems) or f"{len(rendered)} files up to date")
        return 1 if problems else 0
    written = write(rendered)
    if args.quiet:
        print(f"docs: {len(written)} of {len(rendered)} pages re-rendered from reports/"
              + (f" ({', '.join(str(t) for t in written)})" if written else ""))
    else:
        for target in written:
            print(f"wrote {target}")
    stale = [p for p in check(rendered) if "no template" in p]
    print("\n".join(stale))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
