"""The agent's own questions, mined from its sessions: every memory_search call becomes a query, with the
judgments its behaviour implies.

Queries
    normalised   Unicode NFKC, whitespace collapsed, surrounding quotes and end punctuation removed;
    de-duplicated  on the case-folded normal form: the same question asked ten times is one query with count
                 10, the sessions it was asked in and its first and last time; its text is the form the agent
                 sent most often, exactly as sent (the normal form only groups), and the query's note says how
                 many other written forms were merged into it;
    dropped      empty, too short (fewer than 2 Han characters and fewer than 3 Latin letters), no words (only
                 digits, punctuation, symbols) or a placeholder (test, hello, 测试, 你好 ...): counted by reason;
    language     zh (Han characters, no Latin letters), en (Latin letters, no Han), mixed (both), other;
    split        by time, at a session boundary: sessions in the order they started, the earliest whose
                 queries make up `tuning_share` of the distinct queries are for tuning, the later ones held
                 out, so a recommendation is checked on questions asked after the ones it was chosen on.  A
                 query asked in both parts belongs where it was first asked.
    cluster      the session it was first asked in: queries of one session are not independent draws
                 (one conversation, one topic), so intervals and tests resample sessions.

Implicit judgments (what the agent did; labelled "implicit" wherever they go, never merged with labels)
    read         a returned chunk the agent then opened with memory_get, or with the generic `read` tool on a
                 memory file, in the same turn (same path, overlapping lines): grade 1.  When one turn runs
                 several searches, a read credits the latest search before it whose results held that path
                 and range (the one it was made for), not every earlier search that also returned it;
    cited        a returned chunk whose path the turn's reply cites (with overlapping lines when it cites
                 lines): grade 1;
    reformulated a search followed in the same turn by a search with another query and no memory_get in
                 between: the agent was not satisfied, so its returned chunks that were never read or cited
                 get grade 0.
A chunk a search returned and the agent read later in the same turn, after a reformulated search that did
not return it, is a positive for the first search.  Across a query's occurrences a chunk read or cited once is a
positive; one only ever passed over is a 0.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable, Sequence

from harness.inputs.openclaw_sessions import ReadStats, SearchCall, Session

DEFAULT_TUNING_SHARE = 0.7
PLACEHOLDERS = frozenset({"test", "testing", "hello", "hi", "hey", "ok", "okay", "asdf", "foo", "bar", "null",
                          "none", "undefined", "query", "search", "memory", "测试", "你好", "嗯", "好的", "好",
                          "试试", "哈哈", "查询", "搜索"})
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
LETTER = re.compile(r"\w", re.UNICODE)
QUOTES = "\"'“”‘’「」『』《》`"
END_PUNCTUATION = "?？!！。.，,;；:：、…~～ "
DROP_REASONS = {
    "empty": "nothing left after normalisation",
    "too short": "fewer than 2 Han characters and fewer than 3 Latin letters",
    "no words": "only digits, punctuation or symbols",
    "placeholder": "a test or greeting word (test, hello, 测试, 你好 ...)",
}


def normalise(text: str) -> str:
    value = unicodedata.normalize("NFKC", text)
    value = " ".join(value.split())
    value = value.strip(QUOTES + " ").rstrip(END_PUNCTUATION).strip(QUOTES + " ")
    return value


def dedupe_key(normalised: str) -> str:
    return normalised.casefold()


def language(text: str) -> str:
    han, latin = len(HAN.findall(text)), len(LATIN.findall(text))
    if han and latin:
        return "mixed"
    if han:
        return "zh"
    if latin:
        return "en"
    return "other"


def drop_reason(normalised: str) -> str | None:
    if not normalised:
        return "empty"
    if dedupe_key(normalised) in PLACEHOLDERS:
        return "placeholder"
    han, latin = len(HAN.findall(normalised)), len(LATIN.findall(normalised))
    if not han and not latin and not any(c.isalpha() for c in normalised):
        return "no words"
    if han < 2 and latin < 3 and sum(c.isalpha() for c in normalised) < 3:
        return "too short"
    return None


@dataclass
class ImplicitLabel:
    path: str
    start: int
    end: int
    grade: int  # 1 positive, 0 not satisfied
    evidence: str  # "read", "cited", "read+cited", "reformulated"
    count: int = 1  # occurrences that gave it
    anchor: str | None = None  # the returned snippet's hash: the text the agent saw (harness.inputs.anchors)

    @property
    def doc_id(self) -> str:
        return f"{self.path}#L{self.start}-L{self.end}"


@dataclass
class MinedQuery:
    id: str
    text: str
    key: str
    language: str
    count: int
    sessions: list[str]
    first: datetime | None
    last: datetime | None
    split: str = "tuning"  # or "held-out"
    max_results: list[int] = field(default_factory=list)  # the maxResults values the agent asked for
    min_scores: list[float] = field(default_factory=list)
    implicit: list[ImplicitLabel] = field(default_factory=list)
    reformulated: int = 0  # occurrences followed by a reformulation without a read
    satisfied: int = 0  # occurrences followed by a read or a citation
    returned: int = 0  # occurrences whose results were recorded
    first_results: list = field(default_factory=list)  # what memory_search returned the first time (Returned)
    forms: int = 1  # written forms merged into it (the same after normalise(): width, spaces, quotes, end, case)

    @property
    def cluster(self) -> str:
        return self.sessions[0] if self.sessions else self.id


@dataclass
class Mining:
    queries: list[MinedQuery]
    calls: int  # memory_search calls read
    dropped: Counter  # reason -> calls
    dropped_examples: dict[str, list[str]]
    sessions: int
    sessions_with_searches: int
    gets: int
    cut: datetime | None  # the first held-out session's start (None: nothing held out)
    tuning_share: float
    stats: ReadStats
    formats: Counter  # transcript formats seen
    unavailable: int = 0  # calls the tool answered unavailable (timed out, disabled): no results recorded

    @property
    def duplicates(self) -> int:
        """Calls that repeated a query already counted."""
        return sum(q.count - 1 for q in self.queries)

    def by_language(self, split: str | None = None) -> dict[str, int]:
        counts = Counter(q.language for q in self.queries if split is None or q.split == split)
        return {lang: counts.get(lang, 0) for lang in ("zh", "en", "mixed", "other") if counts.get(lang) or lang != "other"}

    def split(self, name: str) -> list[MinedQuery]:
        return [q for q in self.queries if q.split == name]


def _occurrence_labels(call: SearchCall, session: Session, turn_searches: Sequence[SearchCall]
                       ) -> tuple[dict[tuple[str, int, int], set[str]], bool]:
    """The implicit labels one search call earns (chunk -> evidence), and whether it was reformulated."""
    labels: dict[tuple[str, int, int], set[str]] = {}
    if not call.results:
        return labels, False
    later_gets = [g for g in session.gets if g.turn == call.turn and g.order > call.order]
    cites = [c for c in session.citations if c.turn == call.turn]

    def made_for_this(get) -> bool:
        """The get's search: the latest search before it in the turn whose results it overlaps."""
        holders = [s for s in turn_searches if s.order < get.order and s.results and
                   any(get.overlaps(r.path, r.start, r.end) for r in s.results)]
        return bool(holders) and max(holders, key=lambda s: s.order) is call

    for r in call.results:
        key = (r.path, r.start, r.end)
        if any(g.overlaps(r.path, r.start, r.end) and made_for_this(g) for g in later_gets):
            labels.setdefault(key, set()).add("read")
        for c in cites:
            same = c.path.lstrip("./") == r.path.lstrip("./") or r.path.endswith("/" + c.path.lstrip("./"))
            if same and (c.start is None or (c.start <= r.end and r.start <= (c.end or c.start))):
                labels.setdefault(key, set()).add("cited")
    following = [s for s in turn_searches if s.order > call.order]
    reformulated = False
    if following:
        nxt = min(following, key=lambda s: s.order)
        gets_between = [g for g in later_gets if g.order < nxt.order]
        reformulated = dedupe_key(normalise(nxt.query)) != dedupe_key(normalise(call.query)) and not gets_between
    if reformulated:
        for r in call.results:
            labels.setdefault((r.path, r.start, r.end), set())  # passed over: a 0 unless read or cited
    return labels, reformulated


def mine(sessions: Iterable[Session], stats: ReadStats, *, tuning_share: float = DEFAULT_TUNING_SHARE) -> Mining:
    """Queries and implicit judgments from the sessions (streamed: only the extracted calls are kept)."""
    if not 0 < tuning_share <= 1:
        raise ValueError(f"tuning_share must be in (0, 1], got {tuning_share}")
    by_key: dict[str, MinedQuery] = {}
    forms: dict[str, Counter] = {}
    labels: dict[str, dict[tuple[str, int, int], dict[str, int]]] = {}
    anchors: dict[tuple[str, int, int], str] = {}  # chunk -> the snippet anchor first returned for it
    dropped: Counter = Counter()
    examples: dict[str, list[str]] = {}
    session_start: dict[str, datetime | None] = {}
    calls = gets = with_searches = unavailable = 0
    formats: Counter = Counter()
    for session in sessions:
        formats[session.release_format.split(" (")[0]] += 1
        start = session.started or min((c.time for c in session.searches if c.time), default=None)
        session_start[session.id] = start
        gets += len(session.gets)
        if session.searches:
            with_searches += 1
        by_turn: dict[int, list[SearchCall]] = {}
        for call in session.searches:
            by_turn.setdefault(call.turn, []).append(call)
        for call in session.searches:
            calls += 1
            text = normalise(call.query)
            reason = drop_reason(text)
            if reason:
                dropped[reason] += 1
                if len(examples.setdefault(reason, [])) < 5 and call.query.strip() not in examples[reason]:
                    examples[reason].append(call.query.strip())
                continue
            key = dedupe_key(text)
            q = by_key.get(key)
            if q is None:
                q = by_key[key] = MinedQuery("", text, key, language(text), 0, [], call.time, call.time)
                forms[key] = Counter()
                labels[key] = {}
            q.count += 1
            forms[key][call.query] += 1  # as the agent sent it: the replayed query is one the agent asked
            if session.id not in q.sessions:
                q.sessions.append(session.id)
            if call.time is not None:
                q.first = call.time if q.first is None or call.time < q.first else q.first
                q.last = call.time if q.last is None or call.time > q.last else q.last
            if call.max_results is not None and call.max_results not in q.max_results:
                q.max_results.append(call.max_results)
            if call.min_score is not None and call.min_score not in q.min_scores:
                q.min_scores.append(call.min_score)
            for r in call.results or []:
                if r.anchor:
                    anchors.setdefault((r.path, r.start, r.end), r.anchor)
            unavailable += call.unavailable
            if call.results is not None:
                q.returned += 1
                if q.returned == 1:
                    q.first_results = list(call.results)
            occurrence, reformulated = _occurrence_labels(call, session, by_turn[call.turn])
            q.reformulated += reformulated
            q.satisfied += any(occurrence.values())
            for chunk, evidence in occurrence.items():
                tally = labels[key].setdefault(chunk, {})
                for e in evidence or {"passed over"}:
                    tally[e] = tally.get(e, 0) + 1
    queries = list(by_key.values())
    for q in queries:
        q.text = max(forms[q.key].items(), key=lambda kv: (kv[1], -list(forms[q.key]).index(kv[0])))[0]
        q.forms = len(forms[q.key])
        q.sessions.sort(key=lambda s: (session_start.get(s) is None, session_start.get(s) or datetime.min, s))
        for (path, start, end), tally in sorted(labels[q.key].items()):
            positive = [e for e in ("read", "cited") if tally.get(e)]
            if positive:
                q.implicit.append(ImplicitLabel(path, start, end, 1, "+".join(positive),
                                                sum(tally.get(e, 0) for e in positive), anchors.get((path, start, end))))
            elif tally.get("passed over"):
                q.implicit.append(ImplicitLabel(path, start, end, 0, "reformulated", tally["passed over"],
                                                anchors.get((path, start, end))))
    # time order: when each was first asked (ties and missing times: the session order, then the text)
    queries.sort(key=lambda q: (q.first is None, q.first or datetime.min, q.key))
    cut = _split(queries, session_start, tuning_share)
    for i, q in enumerate(queries, start=1):
        q.id = f"q{i:04d}"
    return Mining(queries, calls, dropped, examples, len(session_start), with_searches, gets, cut, tuning_share, stats,
                  formats, unavailable)


def _split(queries: list[MinedQuery], session_start: dict[str, datetime | None], share: float) -> datetime | None:
    """Mark the later sessions' queries held out (module docstring); the cut is the first held-out session's
    start, None when everything is for tuning."""
    first_session = {q.key: q.cluster for q in queries}
    per_session = Counter(first_session.values())
    order = sorted(per_session, key=lambda s: (session_start.get(s) is None, session_start.get(s) or datetime.min, s))
    if share >= 1 or len(order) < 2:
        return None
    total, running, held = len(queries), 0, set()
    for i, s in enumerate(order):
        if running >= share * total:
            held = set(order[i:])
            break
        running += per_session[s]
    if not held:
        return None
    for q in queries:
        if q.cluster in held:
            q.split = "held-out"
    starts = [session_start.get(s) for s in held if session_start.get(s) is not None]
    return min(starts) if starts else None
