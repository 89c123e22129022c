"""What a transcript is reduced to, entry by entry: the memory_search and memory_get calls with what they
returned, the memory files a reply cited (Session, SearchCall, GetCall, Citation), the counts of what was
read (ReadStats), and SessionBuilder, which turns one transcript's stream of entries into a Session.  The
formats and how the files and databases are read: harness.inputs.openclaw_sessions, which re-exports these."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterator

from harness.inputs.anchors import anchor_of

SEARCH = "memory_search"
GET = "memory_get"
READ = "read"  # the generic file tool (pi-coding-agent's read {path, offset?, limit?}): a memory file read so counts
WRAPPER = "tool_call"  # 2026.9's compact tool surface
# A cited memory file in an assistant's reply: path/to/file.md, optionally #L3 or #L3-L7.  Found run by run
# (cited_paths), in linear time: the single pattern ((?:[\w.-]+/)*[\w.-]+\.md) backtracks quadratically over
# a long unbroken token without ".md" (a pasted key, a base64 blob), which stalled `init --openclaw-home`.
PATH_RUN = re.compile(r"[\w.\-一-鿿]+(?:/[\w.\-一-鿿]+)*")
LINES_AFTER = re.compile(r"#L(\d+)(?:-L(\d+))?")
MAX_BAD_LINES_LISTED = 20


def cited_paths(text: str) -> Iterator[tuple[str, int | None, int | None]]:
    """(path, first line, last line) of each `name.md` / `folder/name.md` (with #Ln or #Ln-Lm) in a reply: in each
    run of path characters (names joined by single slashes), the longest prefix that ends in ".md" after a name."""
    for run in PATH_RUN.finditer(text):
        value, at = run.group(), run.start()
        k = len(value)
        while True:
            k = value.rfind(".md", 0, k + 2)  # the last ".md" ending at or before the previous candidate's end
            if k <= 0:
                break
            if value[k - 1] != "/":
                break
            k -= 1
        if k <= 0:
            continue
        end = at + k + 3
        lines = LINES_AFTER.match(text, end)
        first = int(lines[1]) if lines else None
        yield value[:k + 3], first, (int(lines[2]) if lines and lines[2] else first)


@dataclass(frozen=True)
class Returned:
    path: str
    start: int
    end: int
    score: float | None
    anchor: str | None = None  # the returned snippet's hash (harness.inputs.anchors), never its text


@dataclass
class SearchCall:
    session: str
    turn: int  # index of the user message it answers, within the session
    order: int  # position among the turn's tool calls
    call_id: str
    query: str
    max_results: int | None
    min_score: float | None
    time: datetime | None
    results: list[Returned] | None = None  # None: no result seen (the call failed or the transcript ends)
    unavailable: bool = False  # the tool answered disabled / unavailable
    # the search ran out of its time and answered with what it had (2026.9.6: timedOut / partial, keyword-only):
    # what the agent saw, so mined as such, but not the release's full answer to compare a replay with
    partial: bool = False
    other_sources: int = 0  # results from session transcripts (2026.9's corpus=sessions), not memory files


@dataclass
class GetCall:
    session: str
    turn: int
    order: int
    path: str
    start: int | None  # from
    lines: int | None
    time: datetime | None
    tool: str = GET  # memory_get, or read (the generic file tool on a memory path)

    def overlaps(self, path: str, start: int, end: int) -> bool:
        if self.path.lstrip("./") != path.lstrip("./"):
            return False
        first = self.start or 1
        last = first + self.lines - 1 if self.lines else None
        return first <= end and (last is None or start <= last)


@dataclass
class Citation:
    turn: int
    path: str
    start: int | None
    end: int | None


@dataclass
class Session:
    id: str
    source: str  # file, or database + session id
    started: datetime | None
    searches: list[SearchCall] = field(default_factory=list)
    gets: list[GetCall] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    turns: int = 0
    release_format: str = ""  # which release's transcript format
    entries: int = 0  # transcript entries read (JSON objects): which of two copies is complete
    archived: bool = False  # read from a pruned session's archive (<id>.jsonl.deleted.<time>[.zst])


@dataclass
class ReadStats:
    files: int = 0
    sessions: int = 0
    entries: int = 0
    bad_lines: int = 0
    bad_where: list[str] = field(default_factory=list)  # "file:line: why", the first MAX_BAD_LINES_LISTED
    not_transcripts: list[str] = field(default_factory=list)  # files without a session header
    other_harness: int = 0  # sessions of other agent harnesses in the agent database (ignored)
    other_agents: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    archives_read: int = 0  # pruned sessions read from their archives
    archives_unreadable: list[str] = field(default_factory=list)  # "file: why"
    both_copies: dict[str, int] = field(default_factory=dict)  # sessions in a JSONL and the database -> which read

    def bad(self, where: str, why: str) -> None:
        self.bad_lines += 1
        if len(self.bad_where) < MAX_BAD_LINES_LISTED:
            self.bad_where.append(f"{where}: {why}")

    def notes(self) -> list[str]:
        out = []
        if self.bad_lines:
            more = f" (and {self.bad_lines - len(self.bad_where)} more)" if self.bad_lines > len(self.bad_where) else ""
            out.append(f"{self.bad_lines} transcript line(s) skipped as not JSON: " + "; ".join(self.bad_where) + more)
        if self.not_transcripts:
            out.append(f"{len(self.not_transcripts)} file(s) in the sessions folder are not OpenClaw transcripts "
                       f"(no session header), ignored: {', '.join(self.not_transcripts[:5])}")
        if self.other_harness:
            out.append(f"{self.other_harness} session(s) of other agent harnesses (ACP) in the agent database, ignored")
        if self.archives_read:
            out.append(f"{self.archives_read} pruned session(s) read from session maintenance's archives "
                       "(sessions/<id>.jsonl.deleted.<time>[.zst])")
        if self.archives_unreadable:
            out.append(f"{len(self.archives_unreadable)} pruned session archive(s) could not be read, their searches "
                       "are not mined: " + "; ".join(self.archives_unreadable[:5]))
        if self.both_copies:
            total = sum(self.both_copies.values())
            which = ", ".join(f"{n} from {w}" for w, n in sorted(self.both_copies.items()))
            out.append(f"{total} session(s) are both in a JSONL transcript and in the agent database; the complete "
                       f"copy (more entries; the database's on a tie, as the release reads it) was read: {which}")
        ignored = {a: n for a, n in self.other_agents.items() if n}
        if ignored:
            out.append("sessions of other agents ignored: " + ", ".join(f"{a} ({n})" for a, n in ignored.items()))
        return out


def memory_path(path: Any, cwd: str | None) -> str | None:
    """A read tool's path as a memory file's workspace-relative path (MEMORY.md, memory.md, USER.md,
    memory/...: 2026.9.6's isMemoryPath), or None for any other file.  An absolute path counts when it lies in
    the session's cwd (the workspace)."""
    if not isinstance(path, str) or not path.strip():
        return None
    value = path.strip().replace("\\", "/")
    if value.startswith("/"):
        if not cwd or not value.startswith(cwd + "/"):
            return None
        value = value[len(cwd) + 1:]
    while value.startswith("./"):
        value = value[2:]
    if value in ("MEMORY.md", "memory.md", "USER.md") or value.startswith("memory/") and value.endswith(".md"):
        return value
    return None


MAX_MILLIS = 253402300799999  # 9999-12-31T23:59:59.999Z: the last instant a datetime holds


def _time(value: Any) -> datetime | None:
    """An entry's time, always zoned: epoch milliseconds, or ISO 8601 text (one without a zone is local time, as
    JavaScript's Date reads it); anything else (not finite, out of range, not a date) is None, as a missing time."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if not (0 < value <= MAX_MILLIS):  # also NaN
            return None
        return datetime.fromtimestamp(value / 1000.0, tz=timezone.utc)
    if isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        if when.tzinfo is None:
            try:
                when = when.astimezone()  # the machine's zone, as Date.parse takes a date-time without an offset
            except (OverflowError, OSError, ValueError):  # year 1 or 9999 shifted past the range
                return None
        return when
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _tool_name(name: Any) -> str:
    return name.split(":")[-1] if isinstance(name, str) else ""


MAX_COUNT = 2**31 - 1  # a line number or a result count past this is no real one


def _number(value: Any) -> float | None:
    """A finite number as written, else None (booleans, NaN, Infinity, numbers past any line or count)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return float(value) if abs(value) <= MAX_COUNT else None


def _payload(message: dict[str, Any]) -> dict[str, Any] | None:
    """A memory tool's JSON answer from a toolResult: its details, else its text (unwrapping tool_call)."""
    details = message.get("details")
    for candidate in (details, details.get("result", {}).get("details") if isinstance(details, dict) and
                      isinstance(details.get("result"), dict) else None):
        if isinstance(candidate, dict) and ("results" in candidate or "path" in candidate):
            return candidate
    return _json_payload(_text(message.get("content")))


def _json_payload(text: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("result"), dict) and "tool" in doc:
        return _json_payload(_text(doc["result"].get("content")))
    return doc if isinstance(doc, dict) else None


class SessionBuilder:
    """The state of one transcript while its entries stream by."""

    def __init__(self, session_id: str, source: str, release_format: str):
        self.session = Session(session_id, source, None, release_format=release_format)
        self.turn = -1
        self.order = 0
        self.pending: dict[str, tuple[str, Any]] = {}  # tool call id -> (tool, call object)
        self.cwd: str | None = None  # the header's cwd (the workspace): absolute read paths relative to it

    def header(self, entry: dict[str, Any]) -> None:
        if isinstance(entry.get("id"), str) and entry["id"]:
            self.session.id = entry["id"]
        self.session.started = _time(entry.get("timestamp"))
        self.session.entries += 1
        if isinstance(entry.get("cwd"), str) and entry["cwd"]:
            self.cwd = entry["cwd"].rstrip("/")
        version = entry.get("version")
        if isinstance(version, int):
            self.session.release_format += f" (transcript version {version})"

    def entry(self, entry: dict[str, Any]) -> None:
        self.session.entries += 1
        if entry.get("type") != "message" or not isinstance(entry.get("message"), dict):
            return
        message = entry["message"]
        role = message.get("role")
        when = _time(message.get("timestamp")) or _time(entry.get("timestamp"))
        if self.session.started is None:
            self.session.started = when
        if role == "user":
            self.turn += 1
            self.order = 0
            self.session.turns += 1
        elif role == "assistant":
            self._assistant(message, when)
        elif role == "toolResult":
            self._tool_result(message)

    def _assistant(self, message: dict[str, Any], when: datetime | None) -> None:
        turn = max(self.turn, 0)
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "toolCall":
                name, args = _tool_name(part.get("name")), part.get("arguments")
                if name == WRAPPER and isinstance(args, dict):
                    name, args = _tool_name(args.get("id") or args.get("name")), args.get("args")
                if not isinstance(args, dict) or name not in (SEARCH, GET, READ):
                    continue
                if name == READ:
                    path = memory_path(args.get("path"), self.cwd)
                    if path is None:
                        continue  # a read of another file: not a memory judgment
                    start, lines = _number(args.get("offset")), _number(args.get("limit"))
                    self.session.gets.append(GetCall(self.session.id, turn, self.order, path,
                                                     int(start) if start is not None else None,
                                                     int(lines) if lines is not None else None, when, READ))
                    self.order += 1
                    continue
                call_id = str(part.get("id", ""))
                if name == SEARCH and isinstance(args.get("query"), str):
                    max_results, min_score = _number(args.get("maxResults")), _number(args.get("minScore"))
                    call = SearchCall(self.session.id, turn, self.order, call_id, args["query"],
                                      int(max_results) if max_results is not None else None, min_score, when)
                    self.session.searches.append(call)
                    self.pending[call_id] = (SEARCH, call)
                elif name == GET and isinstance(args.get("path"), str):
                    start, lines = _number(args.get("from")), _number(args.get("lines"))
                    call = GetCall(self.session.id, turn, self.order, args["path"],
                                   int(start) if start is not None else None, int(lines) if lines is not None else None,
                                   when)
                    self.session.gets.append(call)
                    self.pending[call_id] = (GET, call)
                self.order += 1
            elif part.get("type") == "text" and isinstance(part.get("text"), str):
                for cited, start, end in cited_paths(part["text"]):
                    self.session.citations.append(Citation(turn, cited, start, end))

    def _tool_result(self, message: dict[str, Any]) -> None:
        call_id = str(message.get("toolCallId", ""))
        kind, call = self.pending.pop(call_id, (None, None))
        if kind != SEARCH:
            return
        payload = _payload(message)
        if payload is None:
            return
        if payload.get("disabled") or payload.get("unavailable"):
            call.unavailable = True  # timed out, no provider, paused: its empty list is not what memory holds
            return
        rows = payload.get("results")
        if not isinstance(rows, list):
            return
        call.partial = bool(payload.get("timedOut") or payload.get("partial"))
        kept = []
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("path"), str):
                continue
            if row.get("source") not in (None, "memory"):
                call.other_sources += 1
                continue
            start, end = _number(row.get("startLine")), _number(row.get("endLine"))
            if start is None or end is None:
                continue
            snippet = row.get("snippet")
            kept.append(Returned(row["path"], int(start), int(end), _number(row.get("score")),
                                 anchor_of(snippet) if isinstance(snippet, str) else None))
        call.results = kept
