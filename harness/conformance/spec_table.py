"""The table of SPEC.md behaviours per preset (spec_table.toml next to this file): load it, check it
against the presets, render it.

    python -m harness.conformance.spec_table            # the table as Markdown
    python -m harness.conformance.spec_table --check    # exit 1 with the problems, if any

Checks (problems()): every status is known and every preset named exists; a preset never uses a stage
whose behaviour is `missing` for it; every `deviates` names a phrase (`mentions`) that the preset's
description contains, so the deviation is written where users read it; the OpenClaw presets each have a
row for every openclaw.* behaviour.
"""
from __future__ import annotations

import argparse
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from harness.config import PRESETS_DIR, load_toml, preset_path
from harness.errors import ConfigError

TABLE_PATH = Path(__file__).with_name("spec_table.toml")
STATUSES = ("implemented", "deviates", "missing", "not-applicable")
STAGE_TABLES = ("chunker", "tokenizer", "lexical", "embedder", "vector", "fusion", "expansion", "reranker")
NO_STAGE = "none"  # a behaviour no stage of the harness could carry (e.g. lancedb-pro's scopes)
ROW_KEYS = {"id", "spec", "stage"}


@dataclass(frozen=True)
class Row:
    behaviour: str  # e.g. "openclaw.chunk.overlap_cap"
    spec: str
    stage: str  # a stage table or "postprocess:<name>"
    preset: str
    status: str
    note: str = ""
    mentions: str = ""


def load(path: Path | str = TABLE_PATH) -> list[Row]:
    with open(path, "rb") as fh:
        doc = tomllib.load(fh)
    rows = []
    for b in doc.get("behaviour", []):
        missing = ROW_KEYS - set(b)
        if missing:
            raise ConfigError(f"{path}: behaviour {b.get('id', '?')!r} lacks {sorted(missing)}")
        for preset, cell in b.items():
            if preset in ROW_KEYS:
                continue
            if not isinstance(cell, dict) or "status" not in cell:
                raise ConfigError(f"{path}: {b['id']} / {preset}: expected {{status = ..., note = ...}}")
            rows.append(Row(b["id"], b["spec"], b["stage"], preset, cell["status"], cell.get("note", ""),
                            cell.get("mentions", "")))
    return rows


def uses_stage(preset_cfg: dict[str, Any], stage: str) -> bool:
    """Whether a preset's tables use `stage` ("chunker", "postprocess:mmr", ...)."""
    if stage == NO_STAGE:
        return False
    if stage.startswith("postprocess:"):
        name = stage.split(":", 1)[1]
        return any(p.get("name") == name for p in preset_cfg.get("postprocess", []))
    return stage in preset_cfg


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def problems(rows: Sequence[Row] | None = None, presets_dir: Path = PRESETS_DIR) -> list[str]:
    rows = load() if rows is None else rows
    out: list[str] = []
    known = {p.stem for p in presets_dir.glob("*.toml")}
    configs: dict[str, dict[str, Any]] = {}
    for r in rows:
        where = f"{r.behaviour} / {r.preset}"
        if r.status not in STATUSES:
            out.append(f"{where}: status {r.status!r} is not one of {', '.join(STATUSES)}")
        if r.stage not in (*STAGE_TABLES, NO_STAGE) and not r.stage.startswith("postprocess:"):
            out.append(f"{where}: stage {r.stage!r} is neither a stage table, postprocess:<name> nor {NO_STAGE!r}")
        if r.preset not in known:
            out.append(f"{where}: no preset {r.preset!r} in {presets_dir}")
            continue
        preset_tables = configs.setdefault(r.preset, load_toml(preset_path(r.preset)) if presets_dir == PRESETS_DIR
                                 else load_toml(presets_dir / f"{r.preset}.toml"))
        if r.status == "missing" and uses_stage(preset_tables, r.stage):
            out.append(f"{where}: the preset uses {r.stage}, whose SPEC behaviour is marked missing")
        if r.status == "deviates":
            if not r.mentions:
                out.append(f"{where}: a deviation needs `mentions`, the phrase of the description that states it")
            elif _words(r.mentions) not in _words(preset_tables.get("description", "")):
                out.append(f"{where}: the description does not say {r.mentions!r}")
    openclaw_ids = {r.behaviour for r in rows if r.behaviour.startswith("openclaw.")}
    for preset in sorted(p for p in known if p.startswith("openclaw-")):
        have = {r.behaviour for r in rows if r.preset == preset}
        lacking = sorted(openclaw_ids - have)
        if lacking:
            out.append(f"{preset}: no row for {', '.join(lacking)}")
    return out


def markdown(rows: Sequence[Row] | None = None) -> list[str]:
    """One table per preset: behaviour, status, note."""
    rows = load() if rows is None else rows
    out: list[str] = []
    for preset in sorted({r.preset for r in rows}):
        out += ["", f"#### {preset}", "", "| SPEC.md | behaviour | status | how |", "|---|---|---|---|"]
        for r in (r for r in rows if r.preset == preset):
            cell = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
            out.append(f"| {cell(r.spec)} | `{r.behaviour}` ({r.stage}) | {r.status} | {cell(r.note)} |")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.conformance.spec_table", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="check the table against the presets")
    args = ap.parse_args(argv)
    if args.check:
        found = problems()
        for p in found:
            print(p, file=sys.stderr)
        return 1 if found else 0
    print("\n".join(markdown()).lstrip("\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
