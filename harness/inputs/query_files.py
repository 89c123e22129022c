"""Queries files for your own memory (YAML or JSONL): what to ask and what should come back.

Queries files (YAML or JSONL), one query per item:
    id, text                       required strings
    kind                           suite (default) | paraphrase | negative
    path                           a file: any chunk of it is relevant     doc id = the display path
    path + lines: [start, end]     chunks overlapping those lines           doc id = path#Lstart-Lend
    contains: "substring"          chunks overlapping a line the substring  doc id = contains:<query id>
                                   occurs on (all of its lines when it spans several); add `path` to
                                   look in one file only.  Queries whose substrings occur on exactly
                                   the same lines share one doc id (the first one's), as two `path`
                                   targets of one file do
    note                           free text, kept with the query
    asked                          when the question was asked (an ISO date-time with its offset; mined
                                   queries carry it): a run with [evaluation] replay = "as-asked" ages
                                   dated memories as of then
    judged: [{path, lines, grade, by}, ...]   graded judgments of line ranges, the shape pooled labelling
                                   (`harness judge`) writes: grade 0-3 (0 = judged not relevant), `by` says
                                   whose judgment it is: explicit (a person, the default), implicit (mined
                                   from what the agent read) or llm; the [dataset]'s `judgments` option
                                   chooses which of them a run counts, never a mix.  A query with `judged`
                                   (even an empty list) needs no other target.
A negative query names no target.  Relevance is judged on line overlap, as for every data set here,
so a chunk that covers only part of a multi-line `contains` occurrence still counts.  Targets of
different queries may overlap (a file and a line range in it), so a chunk covering two of them is
not "mixed" in the king78 sense.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import DataError
from harness.inputs.anchors import parse_anchor
from harness.inputs.layout import QUERY_KINDS, jsonl_objects, read_utf8
from harness.text_files import MAX_BYTES, MAX_DEPTH, check_value, deepest_line, shown

if TYPE_CHECKING:
    import yaml

QUERY_FIELDS = ("id", "text", "kind", "path", "lines", "contains", "note", "cluster", "asked", "judged")
JUDGMENT_SOURCES = ("explicit", "implicit", "llm")  # who judged: a person, the agent's behaviour, an LLM
JUDGED_FIELDS = ("path", "lines", "grade", "by", "evidence", "anchor")
MAX_GRADE = 3

# A query is a question, not a document: longer texts are cut to this many characters (with a note).
# The lexical leg's time grows faster than the query's length (cjk-bigram: 0.1 s at 2,000 characters,
# 13 s at 32,000, 150 s at 260,000 here), and e5 reads only its first 512 tokens anyway.
MAX_QUERY_CHARS = 2000


@dataclass
class QuerySpec:
    """A query as written: its target is resolved against the indexed files later."""

    id: str
    text: str
    kind: str
    source: str  # the queries file
    line: int  # the line the query starts on
    path: str | None = None
    lines: tuple[int, int] | None = None
    contains: str | None = None
    note: str | None = None
    cluster: str | None = None  # queries that are not independent draws (one conversation, one topic)
    asked: str | None = None  # when it was asked (ISO date-time), for replay as asked
    field_lines: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the harness changed, for the user to read
    judged: list["JudgedSpan"] | None = None  # graded judgments (pooled labelling, mined sessions)

    def where(self, field_name: str) -> int:
        return self.field_lines.get(field_name, self.line)


@dataclass(frozen=True)
class JudgedSpan:
    """One graded judgment of lines start..end of a file, and whose it is."""

    path: str
    start: int
    end: int
    grade: int
    by: str = "explicit"
    evidence: str | None = None
    anchor: str | None = None  # the judged text's hash (harness.inputs.anchors): checked against today's file

    @property
    def doc_id(self) -> str:
        return f"{self.path}#L{self.start}-L{self.end}"


def _judged(value: Any, source: str, line: int) -> list[JudgedSpan]:
    if not isinstance(value, list):
        raise DataError(source, line, "judged", "must be a list of {path, lines: [start, end], grade, by}")
    out = []
    for i, item in enumerate(value):
        where = f"judged[{i}]"
        if not isinstance(item, dict):
            raise DataError(source, line, where, "must be a mapping {path, lines: [start, end], grade, by}")
        unknown = sorted(set(item) - set(JUDGED_FIELDS))
        if unknown:
            raise DataError(source, line, f"{where}.{unknown[0]}", f"unknown field; a judgment has {', '.join(JUDGED_FIELDS)}")
        path = check_display_path(item.get("path"), source, line, f"{where}.path")
        lines = item.get("lines")
        if (not isinstance(lines, list) or len(lines) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in lines) or not 1 <= lines[0] <= lines[1]):
            raise DataError(source, line, f"{where}.lines", f"must be [start, end] with 1 <= start <= end, got {lines!r}")
        grade = item.get("grade")
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
            raise DataError(source, line, f"{where}.grade", f"must be a whole number 0-{MAX_GRADE}, got {grade!r}")
        by = item.get("by", "explicit")
        if by not in JUDGMENT_SOURCES:
            raise DataError(source, line, f"{where}.by", f"must be one of {', '.join(JUDGMENT_SOURCES)}, got {by!r}")
        evidence = item.get("evidence")
        if evidence is not None and not isinstance(evidence, str):
            raise DataError(source, line, f"{where}.evidence", "must be a string")
        anchor = item.get("anchor")
        if anchor is not None:
            if not isinstance(anchor, str) or parse_anchor(anchor) is None:
                raise DataError(source, line, f"{where}.anchor", "must be \"<16 hex digits>:<characters>\" (what "
                                                                 "harness init and harness judge write)")
        out.append(JudgedSpan(path, lines[0], lines[1], grade, by, evidence, anchor))
    return out


def _asked(value: Any, source: str, line: int) -> str:
    """`asked`: an ISO-8601 date-time (YAML may have read it as a datetime already), kept as ISO text."""
    from datetime import date, datetime

    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value.strip())
            return value.strip()
        except ValueError:
            pass
    raise DataError(source, line, "asked", f"must be an ISO-8601 date-time such as 2026-03-02T09:15:00+08:00, got {shown(value)}")


def check_display_path(value: Any, source: str, line: int | None, field_name: str = "path") -> str:
    """A path in a queries file: relative, no `..`, as the index shows it (a leading ./ is dropped)."""
    if not isinstance(value, str) or not value.strip():
        raise DataError(source, line, field_name,
                        "must be a non-empty string (a display path such as memory/2026-03-01.md)")
    value = value.strip()
    if value.startswith("/") or value.startswith("~") or re.match(r"^[A-Za-z]:[\\/]", value) or value.startswith("\\"):
        raise DataError(source, line, field_name, f"{value!r} is absolute; name the file by its display path "
                                                  "relative to the workspace (files of an absolute extra path "
                                                  "are extra<N>/...)")
    if ".." in re.split(r"[\\/]", value):
        raise DataError(source, line, field_name, f"{value!r} contains '..'; only indexed files can be named, "
                                                  "by their display path inside the workspace")
    while value.startswith("./"):
        value = value[2:]
    return value


def _spec_from_fields(source: str, line: int, fields: dict[str, tuple[Any, int]]) -> QuerySpec:
    for key, (_, key_line) in fields.items():
        if key not in QUERY_FIELDS:
            raise DataError(source, key_line, key, f"unknown field; a query has {', '.join(QUERY_FIELDS)}")

    def required_str(key: str) -> str:
        if key not in fields:
            raise DataError(source, line, key, "missing")
        value, at = fields[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key == "id":
            raise DataError(source, at, key, f"must be a string; quote it: id: \"{value}\"")
        if not isinstance(value, str) or not value.strip():
            raise DataError(source, at, key, "must be a non-empty string")
        return value.strip() if key == "id" else value

    qid, text = required_str("id"), required_str("text")
    kind, kind_line = fields.get("kind", ("suite", line))
    if kind not in QUERY_KINDS:
        raise DataError(source, kind_line, "kind", f"must be one of {', '.join(QUERY_KINDS)}, got {shown(kind)}")
    spec = QuerySpec(qid, text, kind, source, line, field_lines={k: at for k, (_, at) in fields.items()})
    if len(text) > MAX_QUERY_CHARS:
        spec.text = text[:MAX_QUERY_CHARS]
        spec.notes.append(f"{source}:{spec.where('text')}: query {qid!r} is {len(text):,} characters long; only its "
                          f"first {MAX_QUERY_CHARS:,} are searched (the harness's query length cap)")
    if "note" in fields:
        note, at = fields["note"]
        if not isinstance(note, str):
            raise DataError(source, at, "note", "must be a string")
        spec.note = note
    if "cluster" in fields:
        value, at = fields["cluster"]
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise DataError(source, at, "cluster", "must be a non-empty string naming the query's group "
                                                   "(queries of one group are resampled together)")
        spec.cluster = str(value).strip()
    if "asked" in fields:
        value, at = fields["asked"]
        spec.asked = _asked(value, source, at)
    targets = [k for k in ("path", "lines", "contains") if k in fields]
    if "judged" in fields:
        value, at = fields["judged"]
        if targets:
            raise DataError(source, spec.where(targets[0]), targets[0],
                            "a query with `judged` names its targets there; give either judged or path/lines/contains")
        if kind == "negative":
            raise DataError(source, at, "judged", "a negative query names no target and has no judgments")
        spec.judged = _judged(value, source, at)
        return spec
    if kind == "negative":
        if targets:
            raise DataError(source, spec.where(targets[0]), targets[0],
                            "a negative query names no target: nothing in memory should answer it")
        return spec
    if not targets:
        raise DataError(source, line, "path", f"query {qid!r} needs a target: path, path + lines, or contains")
    if "path" in fields:
        spec.path = check_display_path(fields["path"][0], source, spec.where("path"))
    if "lines" in fields:
        value, at = fields["lines"]
        if "contains" in fields:
            raise DataError(source, at, "lines", "give either lines or contains, not both")
        if "path" not in fields:
            raise DataError(source, at, "lines", "lines need a path")
        if (not isinstance(value, list) or len(value) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise DataError(source, at, "lines", f"must be [start, end], two line numbers, got {value!r}")
        start, end = value
        if not 1 <= start <= end:
            raise DataError(source, at, "lines", f"need 1 <= start <= end, got [{start}, {end}]")
        spec.lines = (start, end)
    if "contains" in fields:
        value, at = fields["contains"]
        if not isinstance(value, str) or not value.strip():
            raise DataError(source, at, "contains", "must be a non-empty string")
        spec.contains = value
    return spec


def _check_node_graph(path: Path, root: yaml.Node) -> None:
    """Refuse aliases (a queries file has no use for them, and a few nested ones expand to billions of
    values: "billion laughs") and nesting past MAX_DEPTH, before anything is constructed."""
    import yaml

    seen: set[int] = set()
    stack: list[tuple[yaml.Node, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise DataError(path, node.start_mark.line + 1, None, "uses a YAML alias (*name); write the value out "
                                                                  "instead (a queries file has no aliases)")
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise DataError(path, node.start_mark.line + 1, None,
                            f"nested more than {MAX_DEPTH} levels deep; no queries file nests that deep")
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend(((key, depth + 1), (value, depth + 1)))


def _yaml_items(path: Path, text: str) -> list[tuple[int, dict[str, tuple[Any, int]]]]:
    import yaml  # here: a run whose queries are JSONL (king78, the public sets) never pays its import

    line = deepest_line(text)
    if line is not None:
        raise DataError(path, line, None, f"nested more than {MAX_DEPTH} levels deep; no queries file nests that deep")
    try:
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as exc:  # a character YAML does not allow (a NUL, a control character)
        raise DataError(path, None, None, f"invalid YAML: {exc}") from None
    try:
        try:
            try:
                root = loader.get_single_node()
            except RecursionError:
                raise DataError(path, None, None, f"nested too deeply to read; no queries file nests more than "
                                                  f"{MAX_DEPTH} levels") from None
            if root is not None:
                _check_node_graph(path, root)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "syntax error"
            if exc.context_mark is not None and "end of stream" in (exc.problem or ""):
                # something left open (a quote, a bracket) ran to the end of the file: point at where it opened
                mark = exc.context_mark
                problem = f"{(exc.context or 'something').removeprefix('while scanning ')} opened here is never closed"
            raise DataError(path, mark.line + 1 if mark else None, None, f"invalid YAML: {problem}") from None
        except yaml.YAMLError as exc:
            raise DataError(path, None, None, f"invalid YAML: {exc}") from None
        if root is None:
            return []
        if not isinstance(root, yaml.SequenceNode):
            raise DataError(path, root.start_mark.line + 1, None,
                            "must be a list of queries, each starting with '- id:'")
        items = []
        for node in root.value:
            at = node.start_mark.line + 1
            if not isinstance(node, yaml.MappingNode):
                raise DataError(path, at, None, "each query must be a mapping (id: ..., text: ...)")
            fields: dict[str, tuple[Any, int]] = {}
            for key_node, value_node in node.value:
                key_line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    raise DataError(path, key_line, None, "field names must be plain words")
                key = key_node.value
                if key in fields:
                    raise DataError(path, key_line, key, f"given twice (first on line {fields[key][1]})")
                try:
                    value = loader.construct_object(value_node, deep=True)
                except yaml.YAMLError as exc:
                    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
                    raise DataError(path, value_node.start_mark.line + 1, key, f"invalid value: {problem}") from None
                check_value(value, f"{path}:{value_node.start_mark.line + 1}", "queries file")
                fields[key] = (value, value_node.start_mark.line + 1)
            items.append((at, fields))
        return items
    finally:
        loader.dispose()


def load_query_specs(path: Path | str) -> list[QuerySpec]:
    """Parse and check a queries file (.yaml/.yml or .jsonl); errors name the file, line and field."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".jsonl"):
        raise DataError(path, None, None, "a queries file must be .yaml, .yml or .jsonl")
    text = read_utf8(path, missing="no such queries file", what="queries file", limit=MAX_BYTES)
    if suffix == ".jsonl":
        items = [(lineno, {k: (v, lineno) for k, v in obj.items()})
                 for lineno, obj in jsonl_objects(path, "queries file")]
    else:
        items = _yaml_items(path, text)
    if not items:
        raise DataError(path, None, None, "no queries yet: add some (uncomment the examples `harness init` wrote)")
    specs: list[QuerySpec] = []
    first_line: dict[str, int] = {}
    for line, fields in items:
        spec = _spec_from_fields(str(path), line, fields)
        if spec.id in first_line:
            raise DataError(path, spec.where("id"), "id",
                            f"duplicate query id {spec.id!r} (first on line {first_line[spec.id]})")
        first_line[spec.id] = spec.where("id")
        specs.append(spec)
    return specs
