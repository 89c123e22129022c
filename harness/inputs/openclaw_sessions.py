"""An OpenClaw agent's session transcripts, streamed: the memory_search and memory_get calls the agent made,
what they returned, and which memory files its replies cited.  Nothing else of a transcript is kept: not
the user's messages, not the replies' text, not the snippets or file text the tools returned (of a snippet only
its hash, the anchor of an implicit judgment: harness.inputs.anchors).

Formats, read from the releases' own code:

    2026.2.22   agents/<agentId>/sessions/<sessionId>.jsonl: one JSON entry per line, written by pi-coding-agent's
                SessionManager (@mariozechner/pi-coding-agent 0.54 dist/core/session-manager.js `_persist`,
                appendFileSync(JSON.stringify(entry) + "\\n")): a header {"type": "session", "version": 3, "id",
                "timestamp", "cwd"}, then entries {type, id, parentId, timestamp (ISO)}; type "message" carries
                message {role: "user" | "assistant" | "toolResult", content, timestamp (ms)} (pi-ai types:
                assistant content parts {type: "toolCall", id, name, arguments}, toolResult {toolCallId,
                toolName, content [{type: "text", text}], details, isError}).
    2026.8.1,   the agent database agents/<agentId>/agent/openclaw-agent.sqlite, table transcript_events
    2026.9.6    (session_id, seq, event_json): each row one entry of the same shape (header "version": 4 in
                2026.9.6); 2026.9.6 stores large events zstd-compressed instead (event_zstd, with
                event_utf8_bytes; event_json NULL), dist/state/openclaw-state-read.worker.js
                prepareTranscriptPayload.  session_windows.agent_harness_id / acp_owned mark sessions of other
                agent harnesses (ACP), which are not the agent's own.

The tools (2026.2.22 dist/pi-embedded-*.js createMemorySearchTool / createMemoryGetTool; the memory-core
extension in 2026.8.1 and 2026.9.6): memory_search {query, maxResults?, minScore?} returns JSON {results:
[{path, startLine, endLine, score, snippet, source, citation?}], provider, model, mode, disabled?, error?};
memory_get {path, from?, lines?} returns {path, text}.  2026.9.6's compact tool surface calls them through
`tool_call {id: "memory_search", args}`, its toolResult's text {tool: {name}, result: {content, details}}.

Pruned sessions: session maintenance (2026.8.1's default prunes sessions older than 30 days) renames a
transcript to `<sessionId>.jsonl.deleted.<time>`, zstd-compressed with a `.zst` suffix when the runtime can
(2026.8.1 dist/artifacts-*.js encodeSessionArchiveContent, one zstd frame of the JSONL).  They are read like
any transcript (decompressed as a stream) and counted apart; an archive that cannot be read is counted and
named, never skipped in silence.

One session in two copies (a JSONL file beside the agent database of 2026.8.1 and later, e.g. left from an
upgrade or written while the database copy was being kept): the release reads the database, and doctor's
migration imports a JSONL only when the database lacks it; the harness reads the complete copy (the one with
more transcript entries; on a tie the database's) and says for how many sessions it chose which.

A line (or row) that is not a JSON object is skipped and counted with its file and line; a file that is
not an OpenClaw transcript (no session header: another tool's JSONL in the folder) is ignored and counted.
Files are read line by line, never whole.
"""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Iterator

from harness.errors import DataError
from harness.inputs.openclaw_session_entries import (  # noqa: F401  (re-exported: the readers' importers read them here)
    ReadStats,
    SearchCall,
    Session,
    SessionBuilder,
    cited_paths,
)


def _open_transcript(path: Path):
    """A transcript file as binary lines: plain, or a zstd archive (`.zst`) decompressed as a stream."""
    if path.name.endswith(".zst"):
        import io

        import zstandard

        raw = open(path, "rb")
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
        except Exception:
            raw.close()
            raise
        return io.BufferedReader(reader)
    return open(path, "rb")


SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
LONE_SURROGATE = "a string holds a lone surrogate escape (\\ud800-\\udfff), which is no character"


def _encodable(obj: Any) -> bool:
    """Whether every string of a parsed entry can be written as UTF-8 (a lone surrogate escape cannot)."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lines(path: Path, stats: ReadStats) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open_transcript(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            stats.bytes += len(raw)
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                stats.bad(f"{path}:{lineno}", f"invalid JSON ({getattr(exc, 'msg', exc)})")
                continue
            if not isinstance(obj, dict):
                stats.bad(f"{path}:{lineno}", "not a JSON object")
                continue
            if SURROGATE_ESCAPE.search(raw) and not _encodable(obj):
                stats.bad(f"{path}:{lineno}", LONE_SURROGATE)
                continue
            stats.entries += 1
            yield lineno, obj


def archive_session_id(path: Path) -> str:
    """The session id of an archive name `<id>.jsonl.deleted.<time>[.zst]`."""
    return path.name.split(".jsonl.", 1)[0]


def read_jsonl_session(path: Path, stats: ReadStats) -> Session | None:
    """One JSONL transcript file (plain, or a pruned session's archive); None when it is not an OpenClaw
    transcript."""
    builder: SessionBuilder | None = None
    stats.files += 1
    for _, entry in _lines(path, stats):
        if builder is None:
            if entry.get("type") != "session":
                stats.not_transcripts.append(path.name)
                return None
            builder = SessionBuilder(archive_session_id(path), str(path), "JSONL")
            builder.header(entry)
            continue
        builder.entry(entry)
    if builder is None:
        return None
    stats.sessions += 1
    builder.session.release_format = jsonl_format(builder.session.release_format)
    return builder.session


def jsonl_format(label: str) -> str:
    """A JSONL transcript's release shape, from its header's version (CURRENT_SESSION_VERSION in the releases'
    session manager): 3 is what OpenClaw 2026.2.22 and 2026.8.1 write, 4 what 2026.9.6 writes; another
    version is named as it is."""
    match = re.search(r"transcript version (\d+)", label)
    version = int(match[1]) if match else None
    shape = {3: "2026.2.22 JSONL", 4: "2026.9.6 JSONL"}.get(version, "JSONL" if version is None else
                                                            "JSONL of an unknown release")
    return shape + (f" (transcript version {version})" if version is not None else "")


def read_database_sessions(path: Path, stats: ReadStats) -> Iterator[Session]:
    """The sessions in an agent database's transcript_events (2026.8.1 on), one at a time."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(transcript_events)")}
    except sqlite3.DatabaseError as exc:
        raise DataError(path, None, None, f"cannot read the agent database: {exc}") from None
    if not columns:
        return
    for needed in ("session_id", "seq", "event_json"):
        if needed not in columns:
            raise DataError(path, None, f"transcript_events.{needed}",
                            "unknown transcript schema: the column is missing (known: OpenClaw 2026.8.1 and 2026.9.6)")
    compressed = "event_zstd" in columns
    skip: set[str] = set()
    window_columns = {row[1] for row in conn.execute("PRAGMA table_info(session_windows)")}
    if {"agent_harness_id", "acp_owned"} <= window_columns:
        for sid, harness, acp in conn.execute("SELECT session_id, agent_harness_id, acp_owned FROM session_windows"):
            if acp or (harness not in (None, "", "openclaw")):
                skip.add(sid)
        stats.other_harness += len(skip)
    select = "session_id, seq, event_json" + (", event_zstd, event_utf8_bytes" if compressed else "")
    decompressor = None
    builder: SessionBuilder | None = None
    fmt = "2026.9.6 agent database" if compressed else "2026.8.1 agent database"
    try:
        for row in conn.execute(f"SELECT {select} FROM transcript_events ORDER BY session_id, seq"):
            sid, seq, text = row[0], row[1], row[2]
            if sid in skip:
                continue
            if builder is None or builder.session.source != f"{path}#{sid}":
                if builder is not None:
                    stats.sessions += 1
                    yield builder.session
                builder = SessionBuilder(sid, f"{path}#{sid}", fmt)
            where = f"{path}: transcript_events session {sid} seq {seq}"
            if text is None and compressed and row[3] is not None:
                if decompressor is None:
                    import zstandard

                    decompressor = zstandard.ZstdDecompressor()
                try:
                    text = decompressor.decompress(row[3], max_output_size=int(row[4] or 0) or 4 * 1024 * 1024)
                except Exception as exc:  # zstandard.ZstdError: a damaged row
                    stats.bad(where, f"cannot decompress ({exc})")
                    continue
            stats.bytes += len(text or b"")
            try:
                entry = json.loads(text)
            except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as exc:
                stats.bad(where, f"invalid JSON ({getattr(exc, 'msg', exc)})")
                continue
            if not isinstance(entry, dict):
                stats.bad(where, "not a JSON object")
                continue
            if SURROGATE_ESCAPE.search(text if isinstance(text, bytes) else text.encode("utf-8", "replace")) \
                    and not _encodable(entry):
                stats.bad(where, LONE_SURROGATE)
                continue
            stats.entries += 1
            if entry.get("type") == "session":
                builder.header(entry)
            else:
                builder.entry(entry)
    except sqlite3.DatabaseError as exc:
        raise DataError(path, None, "transcript_events", f"cannot read the transcripts: {exc}") from None
    finally:
        conn.close()
    if builder is not None:
        stats.sessions += 1
        yield builder.session


def read_sessions(files: Iterable[Path], agent_db: Path | None, stats: ReadStats,
                  archives: Iterable[Path] = ()) -> Iterator[Session]:
    """Every session of the agent: the JSONL transcripts and those of the agent database, a session in both
    read from its complete copy (module docstring); then the pruned sessions' archives not among them."""
    jsonl: dict[str, Session] = {}
    seen: set[str] = set()
    for path in files:
        session = read_jsonl_session(path, stats)
        if session is None:
            continue
        if agent_db is None:
            seen.add(session.id)
            yield session
        else:
            jsonl.setdefault(session.id, session)
    if agent_db is not None:
        for session in read_database_sessions(agent_db, stats):
            copy = jsonl.pop(session.id, None)
            if copy is not None:
                chosen = copy if copy.entries > session.entries else session
                which = "the JSONL (the database copy is shorter)" if chosen is copy else "the database"
                stats.both_copies[which] = stats.both_copies.get(which, 0) + 1
                stats.sessions -= 1  # one session, read twice
                session = chosen
            seen.add(session.id)
            yield session
        for session in jsonl.values():
            seen.add(session.id)
            yield session
    for path in archives:
        sid = archive_session_id(path)
        if sid in seen:
            continue
        try:
            session = read_jsonl_session(path, stats)
        except Exception as exc:  # a damaged archive (zstandard.ZstdError, OSError): counted and named
            stats.archives_unreadable.append(f"{path.name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
            continue
        if session is None:
            continue
        session.archived = True
        stats.archives_read += 1
        seen.add(session.id)
        yield session
