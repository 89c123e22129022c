"""knowledge-update: dated agent logs in which a later note supersedes an earlier one
(datasets/knowledge-update/, Chinese and English, written by this project).

Each note of notes.jsonl ({id, date, time, text}) becomes a line `- HH:MM text` of memory/YYYY-MM-DD.md,
its id the line's provenance.  A question of queries.jsonl names the current note as `relevant` and the
note it superseded as `stale` (an "update" question), or has no stale note (a "stable" question: an old
fact never changed, asked while later notes talk about the same topic), so that temporal decay is
weighed on what it costs as well as on what it buys.  A query carries `stale` (record ids) and
`evidence_age_days` (the current note's age at [evaluation] now, `now` here) in its extra fields;
harness.evaluation.knowledge_update scores current_above_stale@k and stale_in_top@k from them.
"""
from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any, Literal

from harness.errors import DataError
from harness.inputs.dataset import Provenance
from harness.inputs.layout import (
    DATASETS,
    Layout,
    LayoutWriter,
    Query,
    fresh_root,
    jsonl_objects,
    project_path,
)
from harness.registry import stage

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^\d{2}:\d{2}$")


def load_notes(path: Path) -> list[dict[str, Any]]:
    out, seen = [], set()
    for lineno, obj in jsonl_objects(path):
        for key, pattern in (("id", None), ("date", _DATE), ("time", _TIME), ("text", None)):
            value = obj.get(key)
            if not isinstance(value, str) or not value.strip() or (pattern is not None and not pattern.match(value)):
                raise DataError(path, lineno, key, "must be a non-empty string" + (f" like {pattern.pattern}"
                                                                                     if pattern is not None else ""))
        if obj["id"] in seen:
            raise DataError(path, lineno, "id", f"duplicate note id {obj['id']!r}")
        try:
            date.fromisoformat(obj["date"])
        except ValueError:
            raise DataError(path, lineno, "date", f"{obj['date']!r} is not a calendar date") from None
        seen.add(obj["id"])
        out.append(obj)
    return out


def load_update_queries(path: Path, notes: dict[str, dict[str, Any]], now: date) -> list[Query]:
    out, seen = [], set()
    for lineno, obj in jsonl_objects(path):
        for key in ("id", "text", "lang", "type"):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                raise DataError(path, lineno, key, "must be a non-empty string")
        if obj["type"] not in ("update", "stable"):
            raise DataError(path, lineno, "type", f"must be 'update' or 'stable', got {obj['type']!r}")
        for key in ("relevant", "stale"):
            ids = obj.get(key)
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise DataError(path, lineno, key, "must be a list of note ids")
            unknown = [i for i in ids if i not in notes]
            if unknown:
                raise DataError(path, lineno, key, f"names unknown note ids {unknown}")
        if not obj["relevant"]:
            raise DataError(path, lineno, "relevant", "needs the current note")
        if (obj["type"] == "update") != bool(obj["stale"]):
            raise DataError(path, lineno, "stale", "an update question names its stale note, a stable one none")
        if obj["id"] in seen:
            raise DataError(path, lineno, "id", f"duplicate query id {obj['id']!r}")
        seen.add(obj["id"])
        newest = max(date.fromisoformat(notes[i]["date"]) for i in obj["relevant"])
        extra = {"stale": list(obj["stale"]), "lang": obj["lang"], "type": obj["type"],
                 "evidence_age_days": (now - newest).days}
        out.append(Query(obj["id"], obj["text"], {i: 1 for i in obj["relevant"]}, "suite", None, extra))
    return out


@DATASETS.register("knowledge-update")
@stage
class KnowledgeUpdate:
    """Dated logs with superseded facts (datasets/knowledge-update/): memory/YYYY-MM-DD.md, one line a
    note; questions whose relevant note is the current fact and whose stale note is marked.  Each
    question is its own resampling unit."""

    RESAMPLING_UNIT = "query"
    PROVENANCE = Provenance("the project's own text, under its licence", ("datasets/knowledge-update",),
                            ("datasets/knowledge-update/README.md",))

    path: str | Path = "datasets/knowledge-update"
    """the folder (notes.jsonl, queries.jsonl)"""
    lang: Literal["all", "zh", "en"] = "all"
    """which questions are asked: all, the Chinese ones or the English ones (the memory is the same)"""
    now: str = "2026-07-01"
    """the date questions are asked (the ages in evidence_age_days; set [evaluation] now the same)"""
    types: Literal["all", "update", "stable"] = "all"
    """update questions (a stale note exists), stable ones (an old fact never superseded), or both"""

    def __post_init__(self) -> None:
        self.path = project_path(self.path)
        try:
            self._now = date.fromisoformat(self.now)
        except ValueError:
            raise DataError(Path(self.path), None, "now", f"{self.now!r} is not a date like 2026-07-01") from None

    def files(self) -> list[Path]:
        return [Path(self.path) / "notes.jsonl", Path(self.path) / "queries.jsonl"]

    def notes(self) -> list[dict[str, Any]]:
        return load_notes(Path(self.path) / "notes.jsonl")

    def queries(self) -> list[Query]:
        notes = {n["id"]: n for n in self.notes()}
        queries = load_update_queries(Path(self.path) / "queries.jsonl", notes, self._now)
        return [q for q in queries if (self.lang == "all" or q.extra["lang"] == self.lang)
                and (self.types == "all" or q.extra["type"] == self.types)]

    def render(self, dest: Path | str | None = None) -> Layout:
        writer = LayoutWriter(fresh_root("knowledge-update-", dest))
        by_day: dict[str, list[dict[str, Any]]] = {}
        for note in self.notes():
            by_day.setdefault(note["date"], []).append(note)
        for day in sorted(by_day):
            path = f"memory/{day}.md"
            writer.add_lines(path, [f"# {day}", ""])
            for note in sorted(by_day[day], key=lambda n: (n["time"], n["id"])):
                writer.add_lines(path, [f"- {note['time']} {note['text']}"], [note["id"]])
        return writer.finish({"dataset": "knowledge-update", "n_notes": sum(map(len, by_day.values())),
                              "files": len(by_day)})
