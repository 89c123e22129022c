"""lcm_grep (SPEC.md section 7): search the raw messages and the summaries of one conversation.

    lcm_grep(store, pattern, mode="regex" | "full_text", scope="both" | "messages" | "summaries",
             limit=50, sort="recency" | "relevance" | "hybrid", now=...)

regex      Python `re` with re.ASCII (JavaScript's RegExp without flags: case-sensitive, ASCII \\d \\w
           \\b), the first match anywhere in the text; rows newest first; stops at `limit` hits or after
           10,000 rows scanned.  A pattern longer than 500 characters or with a nested quantifier
           (`(a+)+`) returns nothing, as does one that does not compile.
full_text  not CJK: each whitespace token quoted ("..." phrases kept), implicit AND, FTS5 porter
           unicode61, ordered by `sort`: recency = newest first; relevance = bm25; hybrid = bm25 /
           (1 + age_hours x 0.001), age against `now` (upstream: the wall clock).  An FTS error falls
           back to LIKE.
           CJK query (any character of cjk.LOSSLESS_CLAW_CJK_SEGMENT), messages: LIKE, every
           whitespace-separated term (lower-cased, edge punctuation stripped) must occur verbatim, so an
           unspaced Chinese question is one term; newest first.
           CJK query, summaries: every CJK segment of >= 3 characters -> OR of its overlapping
           4-character chunks (a segment of <= 4 characters is itself) on the trigram table, segments
           ANDed, Latin tokens as LIKE filters; when a segment is shorter than 3 characters or the
           trigram query finds nothing: LIKE with each segment's 2-character chunks ORed, segments ANDed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import apsw

from harness.stages.cjk import LOSSLESS_CLAW_CJK_SEGMENT
from harness.stages.lossless.estimate import estimate_tokens
from harness.stages.lossless.store import LosslessStore

Mode = Literal["regex", "full_text"]
Scope = Literal["both", "messages", "summaries"]
Sort = Literal["recency", "relevance", "hybrid"]

DEFAULT_LIMIT = 50
MAX_ROW_SCAN = 10_000
MAX_PATTERN_CHARS = 500
NESTED_QUANTIFIER = re.compile(r"(\+|\*|\?)\)(\+|\*|\?|\{\d)")
AGE_DECAY_RATE = 0.001  # hybrid sort: bm25 / (1 + age_hours x this)
LATIN_TOKEN = re.compile(r"[a-zA-Z0-9][\w./-]*", re.ASCII)
# stripped from both ends of a LIKE term ("(example)" -> example); % and _ stay (they are escaped)
EDGE_PUNCTUATION = "()[]{}<>\"'`,.;:!?，。！？；：、（）【】《》「」『』“”‘’"
SNIPPET_RADIUS = 40  # LIKE hits: characters kept either side of the first matched term
SNIPPET_HEAD = 80  # LIKE hits without a located term: the first characters
TOOL_SNIPPET_CHARS = 200  # the tool shows each snippet on one line, at most this long
MESSAGE_TIME = "m.created_at"
SUMMARY_TIME = "COALESCE(s.latest_at, s.created_at)"


@dataclass(frozen=True)
class GrepHit:
    kind: Literal["message", "summary"]
    ident: int | str  # message id or summary id
    snippet: str
    created_at: str
    rank: float = 0.0


@dataclass
class GrepResult:
    messages: list[GrepHit] = field(default_factory=list)
    summaries: list[GrepHit] = field(default_factory=list)
    routes: dict[str, str] = field(default_factory=dict)  # scope -> which path answered

    @property
    def total(self) -> int:
        return len(self.messages) + len(self.summaries)


# --- query building -------------------------------------------------------------------------------------

def contains_cjk(text: str) -> bool:
    return LOSSLESS_CLAW_CJK_SEGMENT.search(text) is not None


def sanitize_fts5_query(raw: str) -> str:
    """Each whitespace token as a quoted FTS5 string, user-quoted phrases kept whole, joined by spaces
    (FTS5's implicit AND); nothing to search -> '""' (matches nothing)."""
    parts: list[str] = []
    last = 0
    for match in re.finditer(r'"([^"]+)"', raw):
        parts += [f'"{t.replace(chr(34), "")}"' for t in raw[last:match.start()].split()]
        phrase = match[1].replace('"', "").strip()
        if phrase:
            parts.append(f'"{phrase}"')
        last = match.end()
    parts += [f'"{t.replace(chr(34), "")}"' for t in raw[last:].split()]
    return " ".join(parts) if parts else '""'


def like_terms(query: str) -> list[str]:
    """The LIKE plan's terms: quoted phrases whole, other whitespace tokens; lower-cased, edge
    punctuation stripped, empty ones dropped, repeats removed (order kept)."""
    raw: list[str] = []
    last = 0
    for match in re.finditer(r'"([^"]+)"', query):
        raw += query[last:match.start()].split()
        raw.append(match[1])
        last = match.end()
    raw += query[last:].split()
    out: list[str] = []
    for term in raw:
        term = term.strip().strip(EDGE_PUNCTUATION).lower()
        if term and term not in out:
            out.append(term)
    return out


def escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def fallback_snippet(content: str, terms: list[str]) -> str:
    """A window around the earliest matched term, '...' where it was cut; the head without a match."""
    lower = content.lower()
    found = [i for i in (lower.find(t) for t in terms) if i >= 0]
    if not found:
        return content if len(content) <= SNIPPET_HEAD else content[:SNIPPET_HEAD - 3] + "..."
    at = min(found)
    term_len = max(len(t) for t in terms if lower.find(t) == at)
    start, end = max(0, at - SNIPPET_RADIUS), min(len(content), at + term_len + SNIPPET_RADIUS)
    return ("..." if start > 0 else "") + content[start:end] + ("..." if end < len(content) else "")


def cjk_chunks(segment: str, size: int) -> list[str]:
    """Overlapping `size`-character chunks, repeats dropped: 端到端测试结果, 4 -> 端到端测 到端测试 端测试结 测试结果."""
    out: list[str] = []
    for i in range(len(segment) - size + 1):
        if segment[i:i + size] not in out:
            out.append(segment[i:i + size])
    return out


def trigram_expression(query: str) -> str | None:
    """The summaries_fts_cjk MATCH of a CJK query, or None when a segment is shorter than 3 characters."""
    segments = LOSSLESS_CLAW_CJK_SEGMENT.findall(query)
    if not segments or any(len(s) < 3 for s in segments):
        return None
    groups = []
    for segment in segments:
        terms = [segment] if len(segment) <= 4 else cjk_chunks(segment, 4)
        groups.append("(" + " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) + ")")
    return " AND ".join(groups)


def latin_tokens(query: str) -> list[str]:
    return list(dict.fromkeys(t.lower() for t in LATIN_TOKEN.findall(query)))


def order_by(sort: Sort, time_expr: str, ident_expr: str) -> str:
    """buildFtsOrderBy, plus the row id as the last key so equal times order the same way every run."""
    if sort == "relevance":
        return f"rank ASC, {time_expr} DESC, {ident_expr} DESC"
    if sort == "hybrid":
        age_hours = f"((julianday(:now) - julianday({time_expr})) * 24)"
        return f"(rank / (1 + {age_hours} * {AGE_DECAY_RATE})) ASC, {time_expr} DESC, {ident_expr} DESC"
    return f"{time_expr} DESC, {ident_expr} DESC"


# --- the searches ----------------------------------------------------------------------------------------

def compile_pattern(pattern: str) -> re.Pattern[str] | None:
    if len(pattern) > MAX_PATTERN_CHARS or NESTED_QUANTIFIER.search(pattern):
        return None
    try:
        return re.compile(pattern, re.ASCII)
    except re.error:
        return None


def _regex(rows, pattern: str, kind: str, limit: int) -> list[GrepHit]:
    compiled = compile_pattern(pattern)
    if compiled is None:
        return []
    hits: list[GrepHit] = []
    for scanned, (ident, content, created) in enumerate(rows):
        if len(hits) >= limit or scanned >= MAX_ROW_SCAN:
            break
        match = compiled.search(content)
        if match:
            hits.append(GrepHit(kind, ident, match[0], created))
    return hits


def search_messages(store: LosslessStore, query: str, mode: Mode, limit: int, sort: Sort, now: str,
                    routes: dict[str, str]) -> list[GrepHit]:
    conn = store.conn
    if mode == "regex":
        routes["messages"] = "regex"
        rows = conn.execute("SELECT message_id, content, created_at FROM messages m "
                            f"ORDER BY {order_by('recency', MESSAGE_TIME, 'm.message_id')}")
        return _regex(rows, query, "message", limit)
    if not contains_cjk(query):
        try:
            rows = conn.execute(
                "SELECT m.message_id, snippet(messages_fts, 0, '', '', '...', 32), m.created_at, rank "
                "FROM messages_fts JOIN messages m ON m.message_id = messages_fts.rowid "
                f"WHERE messages_fts MATCH :q ORDER BY {order_by(sort, MESSAGE_TIME, 'm.message_id')} LIMIT :limit",
                {"q": sanitize_fts5_query(query), "limit": limit, "now": now}).fetchall()
            routes["messages"] = "fts5"
            return [GrepHit("message", i, s, c, r) for i, s, c, r in rows]
        except apsw.SQLError:
            pass  # upstream falls back to LIKE on any FTS error
    routes["messages"] = "like-cjk" if contains_cjk(query) else "like"
    terms = like_terms(query)
    if not terms:
        return []
    where = " AND ".join("LOWER(content) LIKE ? ESCAPE '\\'" for _ in terms)
    rows = conn.execute(f"SELECT message_id, content, created_at FROM messages m WHERE {where} "
                        f"ORDER BY {order_by('recency', MESSAGE_TIME, 'm.message_id')} LIMIT ?",
                        (*[f"%{escape_like(t)}%" for t in terms], limit)).fetchall()
    return [GrepHit("message", i, fallback_snippet(c, terms), t) for i, c, t in rows
            if all(term in c.lower() for term in terms)]


def search_summaries(store: LosslessStore, query: str, mode: Mode, limit: int, sort: Sort, now: str,
                     routes: dict[str, str]) -> list[GrepHit]:
    conn = store.conn
    if mode == "regex":
        routes["summaries"] = "regex"
        rows = conn.execute(f"SELECT summary_id, content, {SUMMARY_TIME} FROM summaries s "
                            f"ORDER BY {order_by('recency', SUMMARY_TIME, 's.summary_id')}")
        return _regex(rows, query, "summary", limit)
    if contains_cjk(query):
        return _cjk_summaries(store, query, limit, sort, now, routes)
    try:
        rows = conn.execute(
            f"SELECT s.summary_id, snippet(summaries_fts, 1, '', '', '...', 32), {SUMMARY_TIME}, rank "
            "FROM summaries_fts JOIN summaries s ON s.summary_id = summaries_fts.summary_id "
            f"WHERE summaries_fts MATCH :q ORDER BY {order_by(sort, SUMMARY_TIME, 's.summary_id')} LIMIT :limit",
            {"q": sanitize_fts5_query(query), "limit": limit, "now": now}).fetchall()
        routes["summaries"] = "fts5"
        return [GrepHit("summary", i, s, c, r) for i, s, c, r in rows]
    except apsw.SQLError:
        routes["summaries"] = "like"
        terms = like_terms(query)
        return _like_summaries(conn, [[t] for t in terms], terms, limit)


def _cjk_summaries(store: LosslessStore, query: str, limit: int, sort: Sort, now: str,
                   routes: dict[str, str]) -> list[GrepHit]:
    conn = store.conn
    latin = latin_tokens(query)
    expression = trigram_expression(query)
    if expression is not None:
        like = "".join(" AND LOWER(s.content) LIKE ? ESCAPE '\\'" for _ in latin)
        rows = conn.execute(
            f"SELECT f.summary_id, snippet(summaries_fts_cjk, 1, '', '', '...', 32), {SUMMARY_TIME}, rank "
            "FROM summaries_fts_cjk f JOIN summaries s ON s.summary_id = f.summary_id "
            f"WHERE summaries_fts_cjk MATCH ?{like} "
            f"ORDER BY {order_by(sort, SUMMARY_TIME, 's.summary_id').replace(':now', '?')} LIMIT ?",
            (expression, *[f"%{escape_like(t)}%" for t in latin], *([now] if sort == "hybrid" else []), limit),
        ).fetchall()
        if rows:
            routes["summaries"] = "trigram"
            return [GrepHit("summary", i, s, c, r) for i, s, c, r in rows]
    routes["summaries"] = "like-cjk"
    groups = []
    for segment in LOSSLESS_CLAW_CJK_SEGMENT.findall(query):
        groups.append([segment] if len(segment) <= 2 else cjk_chunks(segment, 2))
    groups += [[t] for t in latin]
    snippet_terms = list(dict.fromkeys(t for g in groups for t in g))
    return _like_summaries(conn, groups, snippet_terms, limit)


def _like_summaries(conn: apsw.Connection, groups: list[list[str]], snippet_terms: list[str],
                    limit: int) -> list[GrepHit]:
    """Summaries where every group has a term occurring in the text (terms of a group ORed)."""
    if not groups:
        return []
    where = " AND ".join("(" + " OR ".join("LOWER(s.content) LIKE ? ESCAPE '\\'" for _ in g) + ")" for g in groups)
    args = [f"%{escape_like(t.lower())}%" for g in groups for t in g]
    rows = conn.execute(f"SELECT s.summary_id, s.content, {SUMMARY_TIME} FROM summaries s WHERE {where} "
                        f"ORDER BY {order_by('recency', SUMMARY_TIME, 's.summary_id')} LIMIT ?",
                        (*args, limit)).fetchall()
    return [GrepHit("summary", i, fallback_snippet(c, snippet_terms), t) for i, c, t in rows]


def lcm_grep(store: LosslessStore, pattern: str, mode: Mode = "regex", scope: Scope = "both",
             limit: int = DEFAULT_LIMIT, sort: Sort = "recency", now: str | None = None) -> GrepResult:
    """Search the conversation's messages and/or summaries (the tool trims the pattern first)."""
    pattern = pattern.strip()
    now = now or max((m.created_at for m in store.messages.values()), default="1970-01-01T00:00:00")
    result = GrepResult()
    if scope in ("both", "messages"):
        result.messages = search_messages(store, pattern, mode, limit, sort, now, result.routes)
    if scope in ("both", "summaries"):
        result.summaries = search_summaries(store, pattern, mode, limit, sort, now, result.routes)
    return result


# --- what the agent reads ---------------------------------------------------------------------------------

def _one_line(snippet: str) -> str:
    line = snippet.replace("\n", " ").strip()
    return line if len(line) <= TOOL_SNIPPET_CHARS else line[:TOOL_SNIPPET_CHARS - 3] + "..."


def tool_text(store: LosslessStore, pattern: str, mode: str, scope: str, result: GrepResult) -> str:
    """The tool's reply as the agent reads it: a header, then one line per hit, `- [msg#ID] (role,
    time): snippet` / `- [sum_ID] (kind, time): snippet` (snippets on one line, at most 200 characters)."""
    lines = ["## LCM Grep Results", f"**Pattern:** `{pattern.strip()}`", f"**Mode:** {mode} | **Scope:** {scope}",
             f"**Total matches:** {result.total}", ""]
    if result.messages:
        lines += ["### Messages", ""]
        for hit in result.messages:
            role = store.messages[int(hit.ident)].role
            lines.append(f"- [msg#{hit.ident}] ({role}, {_stamp(hit.created_at)}): {_one_line(hit.snippet)}")
        lines.append("")
    if result.summaries:
        lines += ["### Summaries", ""]
        for hit in result.summaries:
            kind = store.summaries[str(hit.ident)].kind
            lines.append(f"- [{hit.ident}] ({kind}, {_stamp(hit.created_at)}): {_one_line(hit.snippet)}")
        lines.append("")
    if result.total == 0:
        lines.append("No matches found.")
    return "\n".join(lines)


def _stamp(created_at: str) -> str:
    """`YYYY-MM-DD HH:mm UTC` (formatTimestamp)."""
    return created_at[:10] + " " + created_at[11:16] + " UTC"


def tool_tokens(store: LosslessStore, pattern: str, mode: str, scope: str, result: GrepResult) -> int:
    return estimate_tokens(tool_text(store, pattern, mode, scope, result))
