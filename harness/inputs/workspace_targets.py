"""A queries file's targets (a file, its lines, a substring, pooled judgments) resolved on a workspace's
indexed files: each query's relevant doc ids and the provenance spans that define them."""
from __future__ import annotations

import difflib
from typing import Sequence

from harness.errors import DataError
from harness.inputs.anchors import reanchor
from harness.inputs.layout import Query, Span
from harness.inputs.query_files import QuerySpec
from harness.inputs.workspace_files import Discovery
from harness.stages.chunkers import split_lines

def line_count(text: str) -> int:
    return max(1, len(split_lines(text)))


def occurrence_lines(text: str, needle: str) -> list[tuple[int, int]]:
    """(first line, last line) of every occurrence of `needle`, overlapping ones included."""
    out, start = [], text.find(needle)
    while start != -1:
        first = text.count("\n", 0, start) + 1
        out.append((first, first + needle.count("\n", 0, max(0, len(needle) - 1))))
        start = text.find(needle, start + 1)
    return out


def skipped_folders(discovery: Discovery) -> str:
    """The skipped folders and links (memory/ a symbolic link, a folder that cannot be listed), for an
    error about a target that was not found: "" when nothing was skipped."""
    parts = [f"{s.path} ({s.reason})" for s in discovery.skipped
             if "symbolic link" in s.reason or "cannot be read" in s.reason]
    return f"; not searched, because skipped: {', '.join(parts[:5])}" if parts else ""


def _unknown_path_error(spec: QuerySpec, discovery: Discovery) -> DataError:
    path = spec.path or ""
    hint = ""
    skipped = {s.path: s.reason for s in discovery.skipped}
    on_disk = discovery.workspace / path
    under = next((p for p in skipped if path.startswith(p.rstrip("/") + "/")), None)
    if path in skipped:
        hint = f" (it was skipped: {skipped[path]})"
    elif under is not None:  # memory/ itself a link: every file under it is skipped with it
        hint = f" (it is under {under}, which was skipped: {skipped[under]}; OpenClaw does not follow it either)"
    elif on_disk.exists():
        hint = " (it exists but is not indexed: OpenClaw indexes MEMORY.md, memory.md, memory/**/*.md and extraPaths)"
    else:
        close = difflib.get_close_matches(path, discovery.displays, n=3)
        if close:
            hint = f"; did you mean {', '.join(close)}?"
    return DataError(spec.source, spec.where("path"), "path", f"{path!r} is not an indexed file{hint}")


def resolve_targets(specs: Sequence[QuerySpec], texts: dict[str, str], discovery: Discovery, *,
                    judgments: str = "explicit", notes: list[str] | None = None) -> tuple[list[Query], list[Span]]:
    """Queries with their relevant doc ids, and the provenance spans that define those doc ids.  Queries
    with `judged` entries count only those `by` the chosen source (`judgments`); one without any is left
    out, and so is a judgment of a file or lines no longer indexed: each named in `notes`."""
    queries: list[Query] = []
    spans: dict[tuple[str, int, int, str], None] = {}  # ordered, without repeats
    occurrences: dict[tuple[str | None, str], tuple[tuple[str, int, int], ...]] = {}
    # `contains` targets found on exactly the same lines are one document, as two `path` targets of one
    # file are: thousands of queries about one line cost one document, not one each (linear memory)
    contains_docs: dict[tuple[tuple[str, int, int], ...], str] = {}
    ordered = sorted(texts)
    unjudged: list[str] = []
    for spec in specs:
        if spec.judged is not None:
            query = _judged_query(spec, texts, judgments, spans, notes)
            if query is None:
                unjudged.append(spec.id)
            else:
                queries.append(query)
            continue
        relevant: dict[str, int] = {}
        if spec.path is not None and spec.path not in texts:
            raise _unknown_path_error(spec, discovery)
        if spec.contains is not None:
            key = (spec.path, spec.contains)
            if key not in occurrences:
                searched = [spec.path] if spec.path is not None else ordered
                occurrences[key] = tuple((display, first, last) for display in searched
                                         for first, last in occurrence_lines(texts[display], spec.contains))
            found = occurrences[key]
            if not found:
                scope = spec.path if spec.path is not None else "any indexed file"
                raise DataError(spec.source, spec.where("contains"), "contains",
                                f"{spec.contains!r} does not occur in {scope} (matching is exact and case-sensitive)"
                                + skipped_folders(discovery))
            doc_id = contains_docs.setdefault(found, f"contains:{spec.id}")
            for display, first, last in found:
                spans[(display, first, last, doc_id)] = None
            relevant[doc_id] = 1
        elif spec.lines is not None:
            start, end = spec.lines
            n = line_count(texts[spec.path])
            if end > n:
                raise DataError(spec.source, spec.where("lines"), "lines",
                                f"{spec.path} has {n} lines; [{start}, {end}] goes past its end")
            doc_id = f"{spec.path}#L{start}-L{end}"
            spans[(spec.path, start, end, doc_id)] = None
            relevant[doc_id] = 1
        elif spec.path is not None:
            spans[(spec.path, 1, line_count(texts[spec.path]), spec.path)] = None
            relevant[spec.path] = 1
        target = {k: v for k, v in (("path", spec.path), ("lines", list(spec.lines) if spec.lines else None),
                                    ("contains", spec.contains)) if v is not None}
        extra = {"target": target, "source": f"{spec.source}:{spec.line}"}
        if spec.note:
            extra["note"] = spec.note
        if spec.asked:
            extra["asked"] = spec.asked
        queries.append(Query(spec.id, spec.text, relevant, spec.kind, None, extra, cluster=spec.cluster))
    if unjudged and notes is not None:
        shown = ", ".join(unjudged[:10]) + (f" and {len(unjudged) - 10} more" if len(unjudged) > 10 else "")
        what = "no implicit positive (the agent read or cited nothing they returned)" if judgments == "implicit" \
            else f"no {judgments} judgments yet"
        notes.append(f"{len(unjudged)} queries have {what} and are not evaluated ({shown})"
                     + ("; `harness judge` labels them" if judgments != "implicit" else ""))
    return queries, [Span(*key) for key in spans]


def _judged_query(spec: QuerySpec, texts: dict[str, str], judgments: str,
                  spans: dict[tuple[str, int, int, str], None], notes: list[str] | None) -> Query | None:
    """A pooled (or mined) query: its judgments of the chosen source as graded doc ids; all judged 0 by a
    person or an LLM makes it a negative query (nothing judged answers it).  None: no judgment to count."""
    chosen = [j for j in spec.judged or [] if j.by == judgments]
    kept = []
    for j in chosen:
        if j.anchor is not None and j.path in texts:
            from dataclasses import replace


            moved = reanchor(texts[j.path], j.start, j.end, j.anchor)
            if moved is None:
                if notes is not None:
                    notes.append(f"{spec.source}:{spec.line}: query {spec.id!r}: the {j.by} judgment of {j.path} "
                                 f"lines {j.start}-{j.end} is dropped: the file changed since it was judged and the "
                                 "judged text is no longer in it (anchor)")
                continue
            if moved != (j.start, j.end):
                if notes is not None:
                    notes.append(f"{spec.source}:{spec.line}: query {spec.id!r}: the {j.by} judgment of {j.path} "
                                 f"lines {j.start}-{j.end} is re-anchored to lines {moved[0]}-{moved[1]}, where the "
                                 "judged text is now")
                j = replace(j, start=moved[0], end=moved[1])
        if j.path not in texts or j.end > texts[j.path].count("\n") + 1:  # OpenClaw numbers the line after a final newline
            if notes is not None:
                notes.append(f"{spec.source}:{spec.line}: query {spec.id!r}: the {j.by} judgment of {j.path} lines "
                             f"{j.start}-{j.end} is left out: " + ("the file is not indexed now" if j.path not in texts
                                                                   else "the file is shorter now"))
            continue
        kept.append(j)
    if not kept:
        return None
    judged: dict[str, int] = {}
    for j in kept:
        judged[j.doc_id] = max(judged.get(j.doc_id, 0), j.grade)
        spans[(j.path, j.start, j.end, j.doc_id)] = None
    relevant = {doc: grade for doc, grade in judged.items() if grade > 0}
    kind = spec.kind
    extra: dict[str, Any] = {"target": {"judged": len(judged), "by": judgments}, "source": f"{spec.source}:{spec.line}",
                             "judged": judged, "judgment_source": judgments}
    if spec.note:
        extra["note"] = spec.note
    if spec.asked:
        extra["asked"] = spec.asked
    if not relevant:
        if judgments == "implicit":
            return None  # the agent passed over these chunks: that says nothing of what would answer it
        kind = "negative"
        extra["all_judged_not_relevant"] = True
    return Query(spec.id, spec.text, relevant, kind, None, extra, cluster=spec.cluster)



def target_warnings(specs: Sequence[QuerySpec], texts: dict[str, str]) -> list[str]:
    """Queries whose target holds only whitespace: nothing there can answer them (a blank chunk that
    happens to rank first would pass by accident)."""
    out = []
    for spec in specs:
        if spec.path is None or spec.path not in texts:
            continue
        lines = split_lines(texts[spec.path])
        target = lines[spec.lines[0] - 1:spec.lines[1]] if spec.lines else lines
        if not "".join(target).strip():
            where = f"lines {spec.lines[0]}-{spec.lines[1]} of " if spec.lines else ""
            out.append(f"{spec.source}:{spec.where('path')}: query {spec.id!r} targets {where}{spec.path}, which "
                       "holds only whitespace: there is nothing there to find, so a pass would be an accident")
    return out



def target_problem(spec: QuerySpec, texts: dict[str, str]) -> str | None:
    """Why a query's own target cannot be found in these files (None: it can): a path not among them, a
    substring that does not occur, lines past the end."""
    if spec.path is not None and spec.path not in texts:
        return "its target is not among the files as of then"
    if spec.contains is not None:
        searched = [spec.path] if spec.path is not None else list(texts)
        if not any(spec.contains in texts[p] for p in searched):
            return "its target is not among the files as of then"
    if spec.lines is not None and spec.path is not None and spec.lines[1] > line_count(texts[spec.path]):
        return "its target is not among the files as of then"
    return None
