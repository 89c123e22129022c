"""king78: the project's own 78-record corpus (datasets/king78/) and the four rounds' layouts.

Records (14 structured fields + search keywords), daily logs and queries are validated on load (errors
name file, line and field); `render_king78` writes one round's workspace with its provenance map.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from harness.errors import DataError
from harness.inputs.dataset import Provenance
from harness.inputs.layout import (
    DATASETS,
    QUERY_KINDS,
    Layout,
    LayoutWriter,
    Query,
    clusters_by_shared_documents,
    fresh_root,
    jsonl_objects,
    project_path,
)
from harness.registry import stage


def load_queries(path: Path) -> list[Query]:
    queries: list[Query] = []
    seen: set[str] = set()
    for lineno, obj in jsonl_objects(path):
        for key, typ in (("id", str), ("text", str), ("kind", str)):
            _require(obj, key, typ, path, lineno)
        if obj["kind"] not in QUERY_KINDS:
            raise DataError(path, lineno, "kind", f"must be one of {QUERY_KINDS}, got {obj['kind']!r}")
        if obj["id"] in seen:
            raise DataError(path, lineno, "id", f"duplicate query id {obj['id']!r}")
        seen.add(obj["id"])
        relevant = obj.get("relevant", [])
        if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
            raise DataError(path, lineno, "relevant", "must be a list of document ids")
        if obj["kind"] == "negative" and relevant:
            raise DataError(path, lineno, "relevant", "a negative query has no relevant documents")
        if obj["kind"] != "negative" and not relevant:
            raise DataError(path, lineno, "relevant", "needs at least one relevant document")
        joined = obj.get("joined_round")
        if obj["kind"] == "suite" and not isinstance(joined, int):
            raise DataError(path, lineno, "joined_round", "a suite query needs the round it joined (int)")
        extra = {k: v for k, v in obj.items() if k not in ("id", "text", "kind", "relevant", "joined_round")}
        queries.append(Query(obj["id"], obj["text"], {r: 1 for r in relevant}, obj["kind"], joined, extra))
    return queries


# ---------------------------------------------------------------------------------------------
# king78: records, daily logs, rendering of the four rounds
# ---------------------------------------------------------------------------------------------

RECORD_TYPES = ("文章", "灵感", "工具", "感悟")
TAG_CLASSES = ("topic", "technology", "scenario")
CAPTURE_DATES = tuple(f"2026-02-{d}" for d in range(15, 23))

# The 14 structured fields, in order, with their types; search_keywords is the separate 15th.
RECORD_FIELDS: tuple[tuple[str, type], ...] = (
    ("record_id", str),
    ("title", str),
    ("type", str),
    ("source_platform", str),
    ("link", str),
    ("author", str),
    ("captured_on", str),
    ("summary", str),
    ("facts", list),
    ("insights", list),
    ("thoughts", list),
    ("rating", int),
    ("actions", list),
    ("tags", dict),
)
KEYWORDS_FIELD = "search_keywords"
_RECORD_ID = re.compile(r"^rec[0-9A-Za-z]{6,20}$")


def _require(obj: dict, key: str, typ: type, path: Path, lineno: int) -> Any:
    if key not in obj:
        raise DataError(path, lineno, key, "missing")
    value = obj[key]
    if typ is int and isinstance(value, bool) or not isinstance(value, typ):
        raise DataError(path, lineno, key, f"must be {typ.__name__}, got {type(value).__name__}")
    return value


def _str_list(obj: dict, key: str, path: Path, lineno: int, *, min_len: int = 1) -> None:
    value = obj[key]
    if len(value) < min_len or not all(isinstance(v, str) and v.strip() for v in value):
        raise DataError(path, lineno, key, f"must be a list of at least {min_len} non-empty strings")


def load_records(path: Path | str) -> list[dict[str, Any]]:
    """Load and validate king78 records.jsonl; any defect raises DataError(file, line, field)."""
    path = Path(path)
    records: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for lineno, obj in jsonl_objects(path):
        for key, typ in RECORD_FIELDS:
            _require(obj, key, typ, path, lineno)
        _require(obj, KEYWORDS_FIELD, list, path, lineno)
        rid = obj["record_id"]
        if not _RECORD_ID.match(rid):
            raise DataError(path, lineno, "record_id", f"{rid!r} is not a record id like rec…")
        if rid in seen:
            raise DataError(path, lineno, "record_id", f"duplicate {rid!r} (first on line {seen[rid]})")
        seen[rid] = lineno
        if obj["type"] not in RECORD_TYPES:
            raise DataError(path, lineno, "type", f"must be one of {RECORD_TYPES}, got {obj['type']!r}")
        if obj["captured_on"] not in CAPTURE_DATES:
            raise DataError(path, lineno, "captured_on",
                            f"{obj['captured_on']!r} outside {CAPTURE_DATES[0]}..{CAPTURE_DATES[-1]}")
        if not 1 <= obj["rating"] <= 5:
            raise DataError(path, lineno, "rating", "must be 1..5")
        for key in ("title", "source_platform", "author", "summary"):
            if not obj[key].strip():
                raise DataError(path, lineno, key, "must not be empty")
        for key in ("facts", "insights", "thoughts", "actions", KEYWORDS_FIELD):
            _str_list(obj, key, path, lineno)
        tags = obj["tags"]
        for cls in TAG_CLASSES:
            if cls not in tags:
                raise DataError(path, lineno, f"tags.{cls}", "missing")
            if not isinstance(tags[cls], list) or not all(isinstance(t, str) for t in tags[cls]):
                raise DataError(path, lineno, f"tags.{cls}", "must be a list of strings")
        records.append(obj)
    return records


def record_body_length(record: dict[str, Any]) -> int:
    """Characters of prose in a record: summary, the three distillation layers and the actions."""
    parts = [record["summary"], *record["facts"], *record["insights"], *record["thoughts"], *record["actions"]]
    return sum(len(p) for p in parts)


LOG_KINDS = ("heartbeat", "note")


def load_daily_logs(path: Path | str, record_ids: set[str] | None = None) -> list[dict[str, Any]]:
    path = Path(path)
    entries = []
    for lineno, obj in jsonl_objects(path):
        for key, typ in (("date", str), ("time", str), ("kind", str), ("text", str), ("mentions", list)):
            _require(obj, key, typ, path, lineno)
        if obj["kind"] not in LOG_KINDS:
            raise DataError(path, lineno, "kind", f"must be one of {LOG_KINDS}")
        if obj["date"] not in CAPTURE_DATES:
            raise DataError(path, lineno, "date", f"{obj['date']!r} outside the capture days")
        if not re.fullmatch(r"[0-2]\d:[0-5]\d", obj["time"]):
            raise DataError(path, lineno, "time", f"{obj['time']!r} is not HH:MM")
        if record_ids is not None:
            for rid in obj["mentions"]:
                if rid not in record_ids:
                    raise DataError(path, lineno, "mentions", f"unknown record id {rid!r}")
        entries.append(obj)
    return entries


def render_record_lines(record: dict[str, Any], *, level: int = 1, keywords: bool = False,
                        tags: bool = False) -> list[str]:
    """One record as Markdown lines.  `level` is the heading level of its title (2 inside a combined file)."""
    h = "#" * level
    sub = "#" * (level + 1)
    stars = "★" * record["rating"] + "☆" * (5 - record["rating"])
    lines = [
        f"{h} {record['title']}",
        "",
        f"- 记录ID：{record['record_id']}",
        f"- 类型：{record['type']}｜来源：{record['source_platform']}｜作者：{record['author']}",
        f"- 捕获日期：{record['captured_on']}｜评级：{stars}",
    ]
    if record["link"]:
        lines.append(f"- 链接：{record['link']}")
    lines += ["", f"摘要：{record['summary']}", "", f"{sub} 📌 技术事实"]
    lines += [f"- {x}" for x in record["facts"]]
    lines += ["", f"{sub} 💡 启发提炼"] + [f"- {x}" for x in record["insights"]]
    lines += ["", f"{sub} 🔥 个人原创"] + [f"- {x}" for x in record["thoughts"]]
    lines += ["", f"{sub} 行动项"] + [f"- [ ] {x}" for x in record["actions"]]
    if keywords:
        lines += ["", f"{sub} 搜索关键词", "、".join(record[KEYWORDS_FIELD])]
    if tags:
        names = {"topic": "主题", "technology": "技术", "scenario": "场景"}
        lines += ["", f"{sub} 标签"]
        lines += [f"- {names[c]}：{'、'.join(record['tags'][c])}" for c in TAG_CLASSES if record["tags"][c]]
    return lines


def render_daily_log_lines(date: str, entries: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """A day's log as (line, mentioned record ids) pairs, in the style of memory/YYYY-MM-DD.md."""
    out: list[tuple[str, list[str]]] = [(f"# {date} 工作日志", []), ("", [])]
    for e in entries:
        tag = "HEARTBEAT" if e["kind"] == "heartbeat" else "NOTE"
        out.append((f"- {e['time']} [{tag}] {e['text']}", list(e["mentions"])))
    return out


def select_records(records: list[dict[str, Any]], which: Any) -> list[dict[str, Any]]:
    """`which`: "all", an int N (the N captured first, in file order by capture date), or a list of ids."""
    ordered = sorted(enumerate(records), key=lambda ir: (ir[1]["captured_on"], ir[0]))
    ordered = [r for _, r in ordered]
    if which == "all":
        return ordered
    if isinstance(which, int) and not isinstance(which, bool):
        if not 0 < which <= len(ordered):
            raise ValueError(f"layout.records = {which}: must be 1..{len(ordered)}")
        return ordered[:which]
    if isinstance(which, list):
        by_id = {r["record_id"]: r for r in ordered}
        missing = [w for w in which if w not in by_id]
        if missing:
            raise ValueError(f"layout.records names unknown record ids: {missing}")
        wanted = set(which)
        return [r for r in ordered if r["record_id"] in wanted]
    raise ValueError(f"layout.records must be 'all', an int or a list of ids, got {which!r}")


COMBINED_FILE = "memory/ai-knowledge-base.md"


def render_king78(data_dir: Path | str, *, daily_logs: bool, combined: bool, records: Any = "all",
                  keywords: bool = False, tags: bool = False, dest: Path | str | None = None) -> Layout:
    """Render the workspace one round sees into a fresh directory (never from hand-kept copies).

    Options are data (experiments/round*.toml), not code branches:
      daily_logs  include memory/YYYY-MM-DD.md logs (heartbeats plus notes that mention records)
      combined    all selected records in one file (True) or memory/{record_id}.md each (False)
      records     "all", N (the N captured first) or a list of record ids
      keywords    append each record's search keywords;  tags: append its three tag lines
    """
    data_dir = Path(data_dir)
    all_records = load_records(data_dir / "records.jsonl")
    chosen = select_records(all_records, records)
    root = fresh_root("king78-", dest)
    writer = LayoutWriter(root)
    if combined:
        for i, rec in enumerate(chosen):
            if i:
                writer.add_lines(COMBINED_FILE, [""])
            writer.add_lines(COMBINED_FILE, render_record_lines(rec, level=2, keywords=keywords, tags=tags),
                             [rec["record_id"]])
    else:
        for rec in chosen:
            writer.add_lines(f"memory/{rec['record_id']}.md",
                             render_record_lines(rec, level=1, keywords=keywords, tags=tags),
                             [rec["record_id"]])
    if daily_logs:
        ids = {r["record_id"] for r in all_records}
        by_day: dict[str, list[dict[str, Any]]] = {}
        for e in load_daily_logs(data_dir / "daily_logs.jsonl", ids):
            by_day.setdefault(e["date"], []).append(e)
        for day in sorted(by_day):
            path = f"memory/{day}.md"
            for line, mentions in render_daily_log_lines(day, sorted(by_day[day], key=lambda e: e["time"])):
                writer.add_lines(path, [line], mentions)
    description = {"dataset": "king78", "daily_logs": daily_logs, "combined": combined,
                   "records": records, "n_records": len(chosen), "keywords": keywords, "tags": tags}
    return writer.finish(description)


@DATASETS.register("king78")
@stage
class King78:
    """The project's own 78-record corpus (datasets/king78/).  A T-query and its paraphrases target the
    same record, so the record is the unit intervals and tests resample (layout.clusters_by_shared_documents)."""

    RESAMPLING_UNIT = "record"
    PROVENANCE = Provenance("the project's own text, under its licence", ("datasets/king78",),
                            ("datasets/king78/README.md",))

    path: str | Path = "datasets/king78"
    """the folder (records.jsonl, daily_logs.jsonl, queries.jsonl); relative: working directory, else project root"""

    def __post_init__(self) -> None:
        self.path = project_path(self.path)

    def files(self) -> list[Path]:
        return [self.path / name for name in ("records.jsonl", "daily_logs.jsonl", "queries.jsonl")]

    def queries(self) -> list[Query]:
        return clusters_by_shared_documents(load_queries(self.path / "queries.jsonl"))

    def records(self) -> list[dict[str, Any]]:
        return load_records(self.path / "records.jsonl")

    def render(self, dest: Path | str | None = None, **layout_options: Any) -> Layout:
        return render_king78(self.path, dest=dest, **layout_options)

    def check_layout(self, options: dict[str, Any]) -> None:
        """The [layout] options of a round: the ones render_king78 takes, daily_logs and combined given,
        records a selection that exists (TypeError or ValueError saying which, before anything renders)."""
        try:
            inspect.signature(render_king78).bind(self.path, **options)
        except TypeError as exc:
            raise TypeError(f"{exc} (king78's layout options: daily_logs, combined, records, keywords, tags; "
                            "see experiments/round1.toml)") from None
        select_records(load_records(Path(self.path) / "records.jsonl"), options.get("records", "all"))


def validate_king78(path: Path | str) -> dict[str, Any]:
    """Validate every file of datasets/king78 and return a few counts (used by `harness validate`)."""
    path = Path(path)
    records = load_records(path / "records.jsonl")
    ids = {r["record_id"] for r in records}
    logs = load_daily_logs(path / "daily_logs.jsonl", ids)
    queries = load_queries(path / "queries.jsonl")
    for q in queries:
        unknown = [r for r in q.relevant if r not in ids]
        if unknown:
            raise DataError(path / "queries.jsonl", None, "relevant", f"query {q.id}: unknown ids {unknown}")
    heartbeat = sum(e["kind"] == "heartbeat" for e in logs)
    lengths = [record_body_length(r) for r in records]
    return {
        "records": len(records),
        "log_lines": len(logs),
        "heartbeat_share": heartbeat / len(logs) if logs else 0.0,
        "queries": {k: sum(q.kind == k for q in queries) for k in QUERY_KINDS},
        "body_chars": {"min": min(lengths), "max": max(lengths), "mean": sum(lengths) / len(lengths)},
    }
