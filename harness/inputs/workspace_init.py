"""`harness init`: an experiment TOML for an OpenClaw workspace (a preset overridden by its
openclaw.json) and a queries template whose commented examples come from the user's own files."""
from __future__ import annotations

import json
import os
import re
from datetime import date
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from harness.errors import DataError, OutputExistsError
from harness.inputs.openclaw_config import find_openclaw_config, read_openclaw_config
from harness.inputs.openclaw_home import locate
from harness.inputs.query_files import load_query_specs
from harness.inputs.workspace_files import Discovery, discover_files, readable_texts
from harness.inputs.workspace_targets import resolve_targets, target_warnings
from harness.stages.chunkers import split_lines
from harness.toml_files import preset_path

DEFAULT_INIT_PRESET = "openclaw-2026.08"


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # a JSON string is a TOML basic string, once DEL (which JSON leaves raw and TOML forbids) is escaped
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_lines(table: dict[str, Any]) -> list[str]:
    return [f"{key} = {toml_value(value)}" for key, value in table.items()]


def workspace_slug(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_.-]+", "-", name).strip("-.") or "workspace"


def _comment(text: str) -> str:
    return "\n".join(f"# {line}" if line else "#" for line in text.splitlines())


def _heading_text(line: str) -> str:
    return line.lstrip("#").strip()


def _section(lines: list[str]) -> tuple[int, int, str] | None:
    """The first heading below the top one with the lines under it (at most 8): (start, end, heading)."""
    for i, line in enumerate(lines):
        if i and re.match(r"^#{1,6}\s+\S", line):
            end = i
            for j in range(i + 1, min(len(lines), i + 8)):
                if not lines[j].strip() or re.match(r"^#{1,6}\s", lines[j]):
                    break
                end = j
            if end > i:
                return i + 1, end + 1, _heading_text(line)
    return None


def _phrase(lines: list[str]) -> str | None:
    """A short phrase from the longest line in UTF-8 bytes (likely content rather than a heartbeat),
    for a `contains` example: up to the first punctuation, at most 3 words or 12 CJK characters."""
    best = max(lines, key=lambda l: len(l.encode("utf-8")), default="")
    content = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?", "", best).strip()
    # a daily log's entry prefix (`09:00 [NOTE] ...`): a clock time and a tag say nothing to search for
    content = re.sub(r"^\d{1,2}:\d{2}(?::\d{2})?\s+(?:\[[^\]\s]{1,24}\]\s*)?", "", content).strip()
    content = re.split(r"[，。；：、！？,;:!?（(「『\[]", content, maxsplit=1)[0].strip()
    if re.match(r"[A-Za-z0-9]", content):
        content = " ".join(content.split()[:3])
    else:
        content = content[:12].strip()
    return content or None


def _yaml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


DATED = re.compile(r"(?:^|/)memory/(?:.+/)?(\d{4}-\d{2}-\d{2})\.md$")  # a daily log, and its day


def queries_template(discovery: Discovery, texts: dict[str, str]) -> str:
    """A YAML queries file whose only content is comments: three examples built from the user's own
    files (a path, a path + lines, a contains), a negative one, and the list of indexed files."""
    displays = discovery.displays
    # the dated examples come from the newest daily log: the one a user most likely asks about, and the one
    # temporal decay ages least as of the evaluation day (workspace_date), so an example lost at decay shows
    # what decay does to the user's own recent memory, not which log the template happened to pick
    dated = sorted((d for d in displays if DATED.search(d)), key=lambda d: (DATED.search(d).group(1), d),
                   reverse=True)
    whole = dated[0] if dated else displays[0]
    whole_lines = split_lines(texts[whole])
    whole_text = next((_heading_text(l) for l in whole_lines if l.startswith("#")), PurePosixPath(whole).stem)
    section = next(((d, s) for d in displays if (s := _section(split_lines(texts[d]))) is not None), None)
    phrase_file = next((d for d in dated + displays if section is None or d != section[0]), displays[0])
    phrase = _phrase(split_lines(texts[phrase_file]))

    examples = [f"- id: q01\n  text: {_yaml_str(whole_text)}   # rewrite as the question you would ask\n"
                f"  path: {_yaml_str(whole)}"]
    if section is not None:
        display, (start, end, heading) = section
        examples.append(f"- id: q02\n  text: {_yaml_str(heading)}\n  path: {_yaml_str(display)}\n"
                        f"  lines: [{start}, {end}]")
    if phrase:
        examples.append(f"- id: q03\n  text: {_yaml_str(phrase)}\n  contains: {_yaml_str(phrase)}\n"
                        f"  path: {_yaml_str(phrase_file)}   "
                        "# optional: look in this file only")
    examples.append("- id: q04\n  kind: negative   # nothing in memory answers it: ideally nothing is returned\n"
                    "  text: \"a question your memory cannot answer\"")
    header = f"""Queries for the OpenClaw workspace {discovery.workspace} (written by `harness init`).

Each query: id, text, optional kind (suite | paraphrase | negative), and what it should find:
  path: FILE                    any chunk of that file counts as found
  path: FILE + lines: [A, B]    a chunk overlapping lines A..B counts
  contains: "TEXT"              a chunk covering a line where TEXT occurs counts (exact, case-sensitive;
                                add path: FILE to look in one file only)
Paths are display paths, as listed at the end of this file: relative, no '..', never absolute.
A negative query names no target.

Uncomment the examples below (they are built from your own files), rewrite their text as the
questions you would really ask your agent, and add your own.  Then: harness run <experiment TOML>."""
    listing = displays[:200] + ([f"... and {len(displays) - 200} more"] if len(displays) > 200 else [])
    parts = [_comment(header), "", *(_comment(e) + "\n#" for e in examples), "",
             _comment(f"Indexed files ({len(displays)}):\n" + "\n".join(f"  {d}" for d in listing))]
    if discovery.skipped:
        parts += ["#", _comment("Skipped (not indexed):\n" + "\n".join(f"  {s.path}: {s.reason}"
                                                                     for s in discovery.skipped))]
    return "\n".join(parts) + "\n"


OPENAI_BASE_URL = "https://api.openai.com/v1"


def embedder_hint(embedding: dict[str, str]) -> list[str]:
    """Commented [embedder] lines for the provider openclaw.json names, when the harness can reach it
    (an OpenAI-compatible /embeddings endpoint); the key is named by an environment variable only."""
    provider = embedding.get("provider")
    base_url = embedding.get("base_url") or (OPENAI_BASE_URL if provider == "openai" else None)
    if provider not in ("openai", "openai-compatible") and not embedding.get("base_url"):
        return []
    if base_url is None or "model" not in embedding:
        return []
    key_env = "OPENAI_API_KEY" if provider == "openai" else "EMBEDDINGS_API_KEY"
    return ["", "# openclaw.json embeds with this provider; to evaluate with it instead of the local model,",
            f"# uncomment (and export {key_env}; the key is never written to a file):",
            "# [embedder]", '# name = "openai-compatible"', f"# base_url = {toml_value(base_url)}",
            f"# model = {toml_value(embedding['model'])}", f"# api_key_env = {toml_value(key_env)}"]


class InitResult(NamedTuple):
    experiment: Path
    queries: Path
    config: Path | None  # the openclaw.json that was read, if any
    files: int  # how many files would be indexed
    notes: list[str]  # openclaw.json settings not evaluated, and skipped paths
    kept: list[str] = []  # what init left alone or backed up (an edited queries file, a replaced experiment)
    now: date | None = None  # the evaluation date written (temporal decay's reference day)
    now_reason: str = ""  # why that day



def workspace_date(displays: list[str], today: date | None = None) -> tuple[date, str]:
    """The day a workspace is evaluated as of when no --now is given: the day after its newest daily log
    (memory/YYYY-MM-DD.md) when that is before today, else today.  An evaluation dated today ages a workspace
    whose logs stopped months ago (an example, a copy) until temporal decay loses its dated answers; dated as
    of its last log, the figures say what search gave while the memory was in use."""
    from datetime import timedelta

    today = today or date.today()
    days = []
    for display in displays:
        m = DATED.search(display)
        if m:
            try:
                days.append((date.fromisoformat(m.group(1)), display))
            except ValueError:
                continue
    if not days:
        return today, "today (no dated daily log, memory/YYYY-MM-DD.md, to date it by)"
    newest, display = max(days)
    after = newest + timedelta(days=1)
    if after >= today:
        return today, f"today (the newest daily log, {display}, is from {newest.isoformat()})"
    return after, (f"the day after the newest daily log, {display} ({(today - after).days} days before today); "
                   "--now today evaluates as of today, as OpenClaw searches now")


TEMPLATE_BESIDE = "queries.template.yaml"  # where a fresh template goes when queries.yaml is the user's


def backup_path(path: Path) -> Path:
    """<name>.bak, or <name>.bak2, <name>.bak3 ... when earlier backups exist (none is ever overwritten)."""
    candidate = path.with_name(path.name + ".bak")
    n = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak{n}")
        n += 1
    return candidate


def write_keeping(path: Path, text: str) -> Path | None:
    """Write `text` to `path`; a file there with other content is first copied to a backup (returned)."""
    backup = None
    if path.exists():
        old = path.read_bytes()
        if old == text.encode("utf-8"):
            return None
        backup = backup_path(path)
        backup.write_bytes(old)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return backup


def state_folder_hint(folder: Path) -> str | None:
    """What to say when `harness init` is given OpenClaw's state folder (~/.openclaw: openclaw.json, agents/,
    memory/<agent>.sqlite, workspace/) or the home folder holding it, where a workspace belongs: the
    installation's own command, and the workspace inside it."""
    state = folder / ".openclaw" if (folder / ".openclaw").is_dir() and not (folder / "openclaw.json").exists() \
        else folder
    marks = [(state / "agents").is_dir(), (state / "openclaw.json").is_file(), (state / "workspace").is_dir(),
             any((state / "memory").glob("*.sqlite")) if (state / "memory").is_dir() else False]
    if not (marks[0] or (marks[1] and any(marks[2:]))):
        return None
    try:
        workspace: Path | None = locate(state).workspace
    except (DataError, OSError, ValueError):
        workspace = state / "workspace" if marks[2] else None
    inside = f", or `harness init {workspace}` for the workspace alone" if workspace is not None and \
        workspace.is_dir() else ""
    return (f"this is OpenClaw's state folder ({state}), not a workspace: no MEMORY.md or memory/*.md here; "
            f"`harness init --openclaw-home {state}` reads the installation (its workspace, index and sessions)"
            + inside)


def init_workspace(workspace: Path | str, out_dir: Path | str, *, config: Path | str | None = None,
                   queries: Path | str | None = None, preset: str = DEFAULT_INIT_PRESET, agent: str | None = None,
                   force: bool = False, now: date | None = None) -> InitResult:
    """Write <out_dir>/experiment.toml (the preset, with the workspace's openclaw.json read at every run)
    and <out_dir>/queries.yaml (a template of commented examples from the user's own files).

    Without `config`, openclaw.json is looked for in the workspace, then beside it.  With `queries`
    (an existing queries file) no template is written: the experiment uses that file, which is checked
    against the workspace now.  An existing experiment.toml is replaced only with `force`, and then kept
    as experiment.toml.bak; a queries file is never replaced, `force` or not: when queries.yaml is there
    and differs from the fresh template (the user's questions and labels), it is kept and used, and the
    fresh template goes beside it (queries.template.yaml).  `now`: the day temporal decay ages dated memory
    files from (default: workspace_date(), the day after the newest daily log when that is before today)."""
    preset_path(preset)  # an unknown preset fails first, before anything is read or written
    workspace = Path(os.path.abspath(Path(workspace).expanduser()))
    out_dir = Path(os.path.abspath(Path(out_dir).expanduser()))
    config_path = Path(os.path.abspath(Path(config).expanduser())) if config else find_openclaw_config(workspace)
    settings = read_openclaw_config(config_path, agent=agent) if config_path else None
    found = discover_files(workspace, settings.extra_paths if settings else ())
    if not found.files:
        raise DataError(workspace, None, None, state_folder_hint(workspace) or
                        "no memory files found: expected MEMORY.md, memory.md or memory/**/*.md")
    # a file that is not UTF-8 is left out of the template and named; a run stops on it unless told to skip
    discovery, texts = readable_texts(found, "skip")
    undecodable = [s for s in discovery.skipped if s not in found.skipped]
    discovery.skipped = list(found.skipped)
    if settings:
        settings.experiment_tables(preset)  # a setting the preset cannot take fails now (e.g. weights with qmd)

    experiment_path = out_dir / "experiment.toml"
    warnings: list[str] = []
    if queries is not None:
        queries_path = Path(os.path.abspath(Path(queries).expanduser()))
        specs = load_query_specs(queries_path)
        resolve_targets(specs, texts, discovery)  # fail now, not at the first run
        warnings = target_warnings(specs, texts) + [n for s in specs for n in s.notes]
    else:
        queries_path = out_dir / "queries.yaml"
    if experiment_path.exists() and not force:
        raise OutputExistsError(f"{experiment_path} already exists; pass --force to replace it (it is kept as "
                                f"{experiment_path.name}.bak; your queries file is never replaced)")
    dataset = {"name": "workspace", "path": str(workspace), "queries": str(queries_path)}
    if config_path:
        dataset["config"] = str(config_path)
        dataset["follow_config"] = True  # openclaw.json's settings are read at every run
    if agent:
        dataset["agent"] = agent
    notes = list(settings.notes if settings else []) + [f"skipped {s.path}: {s.reason}" for s in discovery.skipped]
    notes += [f"{s.path} is {s.reason.split(';')[0]}: `harness run` stops on it; fix it, or set errors = \"skip\" "
              "in [dataset] to leave it out with a warning" for s in undecodable] + warnings

    if now is None:
        now, now_reason = workspace_date(discovery.displays)
    else:
        now_reason = "given (--now)"
    source = f"the memory-search settings of {config_path}" if config_path else "no openclaw.json (preset defaults)"
    lines = [
        "# Written by `harness init`: the preset's stages, overridden by openclaw.json where it sets a value.",
        "# openclaw.json is read at every run and sweep, so editing it and rerunning is followed; a table you add",
        "# here (e.g. [search] max_results = 8) or a --set wins over it, and the run says so.",
        f"name = {toml_value(workspace_slug(workspace.name))}",
        f"description = {toml_value(f'OpenClaw workspace {workspace} with {source}.')}",
        f"preset = {toml_value(preset)}",
        "",
        "[dataset]",
        *_toml_lines(dataset),
        *(['# errors = "skip"   # uncomment to leave out the files that are not UTF-8 (listed at the end)']
          if undecodable else []),
        "",
        "# targets of different queries may overlap (a file and lines inside it): no 'mixed top-1' marks",
        "[evaluation]",
        "report_purity = false",
        "# temporal decay ages dated memory files (memory/YYYY-MM-DD.md) from this date (OpenClaw uses the",
        "# moment of each search); change it to evaluate as of another day.",
        f"# init: {now_reason}",
        f"now = {toml_value(now.isoformat())}",
    ]
    if settings is not None and settings.values:
        lines += ["", "# openclaw.json sets now (read again at every run):"]
        lines += [f"#   {path} = {json.dumps(value, ensure_ascii=False)}" for path, value in settings.values.values()]
        release = settings.release_notes(preset)
        if release:
            lines += [f"# What the release {preset} models does with them:", *(f"#   {n}" for n in release)]
    if settings is not None:
        lines += embedder_hint(settings.embedding)
    if notes:
        lines += ["", "# Not evaluated:", *(f"#   {n}" for n in notes)]
    out_dir.mkdir(parents=True, exist_ok=True)
    kept: list[str] = []
    backup = write_keeping(experiment_path, "\n".join(lines) + "\n")
    if backup is not None:
        kept.append(f"the previous {experiment_path.name} is kept as {backup}")
    if queries is None:
        template = queries_template(discovery, texts)
        if not queries_path.exists():
            queries_path.write_text(template, encoding="utf-8")
        elif queries_path.read_text(encoding="utf-8") != template:
            beside = queries_path.with_name(TEMPLATE_BESIDE)
            old_template = write_keeping(beside, template)
            kept.append(f"your {queries_path} is kept as it is (never replaced); a fresh template with the files "
                        f"indexed now is in {beside}" + (f" (the one before it: {old_template})" if old_template else ""))
    return InitResult(experiment_path, queries_path, config_path, len(discovery.files), notes, kept, now, now_reason)
