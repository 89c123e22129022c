"""LoCoMo (Maharana et al., ACL 2024): ten long two-person conversations as the memory an agent would
have kept of them, and the 1,986 questions with the dialogue turns that hold their answers.

    [dataset]
    name = "locomo"
    path = "datasets/locomo/locomo10.json"    # sha256-checked (published.py)
    granularity = "turn"                      # or "session": a session is the document

Rendering (one workspace per conversation, see "Scopes" below): each session becomes one dated daily
file, memory/YYYY-MM-DD.md from `session_N_date_time`, as an agent that writes a daily memory log
would have stored it.  The date may be written as people write it (harness.inputs.conversation_dates):
LoCoMo's '1:56 pm on 8 May, 2023', ISO 8601, or Chinese ('下午3:10 2026年3月2日', '2026年3月2日'); an
unreadable one is a one-line error listing the accepted forms:

    # 2023-05-08 13:56 · Caroline and Melanie · session 1

    - [D1:1] Caroline: Hey Mel! Good to see you! How have you been?
    - [D1:5] Caroline: The transgender stories were so inspiring! ... [shares a photo of a dog ...]

  * every turn is one list item carrying its dia_id and speaker; a turn whose text holds line breaks
    continues on indented lines (its provenance span covers them all);
  * a shared image is shown by its BLIP caption, `[shares <caption>]` after the text: the caption is
    what the conversation's own agents saw of the image and the form LoCoMo's retrieval baselines
    index (task_eval/dpr_qa.py); the image URL and the crawler's search query are not shown;
  * two sessions on the same day stay apart: the first keeps memory/YYYY-MM-DD.md, each later one is
    memory/YYYY-MM-DD-sN.md (N = its session number).  OpenClaw's temporal decay dates only the plain
    name, so such a file would not decay; locomo10.json has no two sessions on one day (the data
    set's description counts them: `same_day_sessions`).

Provenance: granularity "turn" gives one span per turn (doc id = its dia_id, e.g. "D1:5"); "session"
gives one span over the whole file (doc id "session_N"), which is how several memory projects report
LoCoMo (session recall).  Heading lines belong to no turn.

Questions (`qa`): categories 1-4 are suite queries with their evidence as relevant documents and
`category` in their extra fields; category 5 (adversarial: the question presumes something the
conversation never says) are negative queries, the abstention set, their evidence kept in the extra
fields.  The category numbers as upstream's evaluation code uses them: 1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop, 5 adversarial (peers have published these names shuffled).

Evidence ids are normalised as datasets/locomo/SOURCE.md lists: several ids in one string are split on
[;\\s] ('D8:6; D9:17'), 'D:11:26' -> D11:26, 'D30:05' -> D30:5; ids absent from the conversation
(D10:19, D4:36) and empty ones ('D') are dropped.  A suite question left without evidence cannot be
scored and is skipped.  The description counts every case.

Scopes: dia_ids repeat across conversations and an agent's memory holds one conversation, so each
conversation is its own workspace.  `scopes()` yields one part per conversation; run_experiment
renders, indexes, searches and evaluates each part apart and concatenates the per-query rows (query
ids are "<sample_id>/qaNNN", NNN the question's index in the file).  Each part's `reference_time`
(its last session) is the `now` of temporal decay for its questions, unless the experiment sets
evaluation.now.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import Field

from harness.errors import DataError
from harness.inputs.conversation_dates import UnreadableDate, parse_when
from harness.inputs.dataset import Provenance, PublishedFileDataset
from harness.inputs.layout import (
    DATASETS,
    Layout,
    LayoutWriter,
    Query,
    fresh_root,
    project_path,
    read_json,
)
from harness.registry import stage

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
_LOOSE_DIA_ID = re.compile(r"D:?(\d+):(\d+)")  # also 'D:11:26'; int() drops the zero of 'D30:05'


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None = None  # BLIP caption of an image shared with the turn


@dataclass(frozen=True)
class Session:
    number: int
    when: datetime
    turns: tuple[Turn, ...]


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: list[Session]
    qa: list[dict[str, Any]]
    index: int = 0  # position in the file, for error messages

    def turn_ids(self) -> set[str]:
        return {t.dia_id for s in self.sessions for t in s.turns}


# ---------------------------------------------------------------------------------------------
# Reading locomo10.json
# ---------------------------------------------------------------------------------------------


def required_field(obj: Any, key: str, typ: type | tuple[type, ...], path: Path, where: str) -> Any:
    """obj[key] of the type(s) given, else a DataError naming the JSON path (a bool is never a number)."""
    if not isinstance(obj, dict) or key not in obj:
        raise DataError(path, None, f"{where}.{key}" if where else key, "missing")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, typ):
        names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise DataError(path, None, f"{where}.{key}" if where else key, f"must be {names}, got {type(value).__name__}")
    return value


def parse_session_time(raw: str, path: Path, where: str) -> datetime:
    """A session's date and time in any form people write (conversation_dates: LoCoMo's English, ISO
    8601, Chinese such as '下午3:10 2026年3月2日'); an unreadable one is a one-line DataError listing them."""
    try:
        return parse_when(raw)
    except UnreadableDate as exc:
        raise DataError(path, None, where, str(exc)) from None


def _turn(obj: Any, session: int, path: Path, where: str) -> Turn:
    dia_id = required_field(obj, "dia_id", str, path, where)
    match = _DIA_ID.fullmatch(dia_id)
    if not match or int(match[1]) != session:
        raise DataError(path, None, f"{where}.dia_id", f"{dia_id!r} is not a turn id of session {session} (D{session}:N)")
    caption = obj.get("blip_caption")
    return Turn(dia_id, required_field(obj, "speaker", str, path, where), required_field(obj, "text", str, path, where),
                caption.strip() if isinstance(caption, str) and caption.strip() else None)


def _conversation(sample: Any, index: int, path: Path) -> Conversation:
    where = f"[{index}]"
    sample_id = required_field(sample, "sample_id", str, path, where)
    conv = required_field(sample, "conversation", dict, path, where)
    cw = f"{where}.conversation"
    speakers = (required_field(conv, "speaker_a", str, path, cw), required_field(conv, "speaker_b", str, path, cw))
    sessions: list[Session] = []
    for key in sorted((k for k in conv if _SESSION_KEY.fullmatch(k)), key=lambda k: int(k.split("_")[1])):
        number = int(key.split("_")[1])
        turns_raw = required_field(conv, key, list, path, cw)
        when = parse_session_time(required_field(conv, f"{key}_date_time", str, path, cw), path, f"{cw}.{key}_date_time")
        turns = tuple(_turn(t, number, path, f"{cw}.{key}[{i}]") for i, t in enumerate(turns_raw))
        if turns:  # dated sessions without turns (conv-26 lists 35 dates for 19 sessions) hold nothing
            sessions.append(Session(number, when, turns))
    seen: set[str] = set()
    for s in sessions:
        for t in s.turns:
            if t.dia_id in seen:
                raise DataError(path, None, f"{cw}.session_{s.number}", f"duplicate turn id {t.dia_id!r}")
            seen.add(t.dia_id)
    qa = required_field(sample, "qa", list, path, where)
    for i, item in enumerate(qa):
        required_field(item, "question", str, path, f"{where}.qa[{i}]")
        required_field(item, "evidence", list, path, f"{where}.qa[{i}]")
        category = required_field(item, "category", int, path, f"{where}.qa[{i}]")
        if category not in CATEGORY_NAMES:
            raise DataError(path, None, f"{where}.qa[{i}].category", f"must be 1..5, got {category}")
    return Conversation(sample_id, speakers, sessions, qa, index)


def refuse_duplicate_ids(ids: list[str], path: Path, key: str) -> None:
    """A DataError naming the first duplicated ids (linear: Counter, not ids.count per id)."""
    from collections import Counter

    duplicates = sorted(i for i, n in Counter(ids).items() if n > 1)
    if duplicates:
        raise DataError(path, None, key, f"duplicate {key.replace('_', ' ')}s {duplicates[:5]}")


def load_locomo(path: Path | str) -> list[Conversation]:
    """The conversations of a locomo10.json-style file, validated (errors name the JSON path)."""
    path = Path(path)
    _, root = read_json(path, "LoCoMo JSON file")
    if not isinstance(root, list):
        raise DataError(path, None, None, "the top level must be a list of conversations")
    conversations = [_conversation(sample, i, path) for i, sample in enumerate(root)]
    refuse_duplicate_ids([c.sample_id for c in conversations], path, "sample_id")
    return conversations


# ---------------------------------------------------------------------------------------------
# Evidence ids
# ---------------------------------------------------------------------------------------------

EVIDENCE_CASES = ("items", "kept", "split", "reformatted", "dropped_absent", "dropped_empty", "dropped_unreadable")


def normalise_evidence(raw: Sequence[Any], turn_ids: set[str]) -> tuple[list[str], dict[str, int]]:
    """Evidence ids as turn ids of the conversation, in order, without repeats; and how many items there
    were, how many turn ids were kept, and how many items were split, reformatted or dropped (keys
    EVIDENCE_CASES)."""
    counts = dict.fromkeys(EVIDENCE_CASES, 0)
    counts["items"] = len(raw)
    out: list[str] = []
    for item in raw:
        parts = [p for p in re.split(r"[;\s]+", str(item).strip()) if p]
        if len(parts) > 1:
            counts["split"] += 1
        if not parts:
            counts["dropped_empty"] += 1
        for part in parts:
            match = _LOOSE_DIA_ID.fullmatch(part)
            if match is None:
                counts["dropped_empty" if not re.search(r"\d", part) else "dropped_unreadable"] += 1
                continue
            dia_id = f"D{int(match[1])}:{int(match[2])}"
            if dia_id != part:
                counts["reformatted"] += 1
            if dia_id not in turn_ids:
                counts["dropped_absent"] += 1
            elif dia_id not in out:
                out.append(dia_id)
    counts["kept"] = len(out)
    return out, counts


# ---------------------------------------------------------------------------------------------
# Rendering one conversation
# ---------------------------------------------------------------------------------------------


def session_paths(sessions: Sequence[Session]) -> dict[int, str]:
    """Session number -> memory/YYYY-MM-DD.md; later sessions of a day get -sN (N its number)."""
    out: dict[int, str] = {}
    taken: set[str] = set()
    for s in sorted(sessions, key=lambda s: (s.when, s.number)):
        day = s.when.strftime("%Y-%m-%d")
        path = f"memory/{day}.md"
        if path in taken:
            path = f"memory/{day}-s{s.number}.md"
        taken.add(path)
        out[s.number] = path
    return out


def turn_lines(turn: Turn) -> list[str]:
    """`- [D1:3] Caroline: text`; line breaks inside the text continue on indented lines."""
    lines = [ln.rstrip() for ln in turn.text.strip().split("\n")] or [""]
    if turn.caption:
        lines[-1] = f"{lines[-1]} [shares {turn.caption}]".lstrip()
    return [f"- [{turn.dia_id}] {turn.speaker}: {lines[0]}".rstrip()] + [f"  {ln}" if ln else "" for ln in lines[1:]]


def session_heading(session: Session, speakers: tuple[str, str]) -> str:
    return f"# {session.when:%Y-%m-%d %H:%M} · {speakers[0]} and {speakers[1]} · session {session.number}"


def session_doc_id(number: int) -> str:
    return f"session_{number}"


def render_conversation(conv: Conversation, granularity: str, description: dict[str, Any],
                        dest: Path | str | None = None) -> Layout:
    root = fresh_root(f"locomo-{conv.sample_id}-", dest)
    writer = LayoutWriter(root)
    paths = session_paths(conv.sessions)
    for session in conv.sessions:
        path = paths[session.number]
        heading = [session_heading(session, conv.speakers), ""]
        if granularity == "session":  # one span: the whole file is the document
            lines = heading + [line for turn in session.turns for line in turn_lines(turn)]
            writer.add_lines(path, lines, [session_doc_id(session.number)])
            continue
        writer.add_lines(path, heading)
        for turn in session.turns:
            writer.add_lines(path, turn_lines(turn), [turn.dia_id])
    return writer.finish(description)


# ---------------------------------------------------------------------------------------------
# Questions
# ---------------------------------------------------------------------------------------------


def question_id(sample_id: str, index: int) -> str:
    """The query id of a conversation's index-th question (its position in `qa`)."""
    return f"{sample_id}/qa{index:03d}"


@dataclass
class ConversationQueries:
    queries: list[Query]
    evidence: dict[str, int]  # EVIDENCE_CASES counts over the conversation's questions
    skipped: dict[str, list[str]]  # reason -> query ids


def conversation_queries(conv: Conversation, granularity: str) -> ConversationQueries:
    turn_ids = conv.turn_ids()
    session_of = {t.dia_id: s.number for s in conv.sessions for t in s.turns}
    when_of = {t.dia_id: s.when for s in conv.sessions for t in s.turns}
    asked = max(s.when for s in conv.sessions)  # the parts' reference_time
    totals = dict.fromkeys(EVIDENCE_CASES, 0)
    skipped: dict[str, list[str]] = {}
    queries: list[Query] = []
    for i, item in enumerate(conv.qa):
        qid = question_id(conv.sample_id, i)
        evidence, counts = normalise_evidence(item["evidence"], turn_ids)
        for key, n in counts.items():
            totals[key] += n
        category = item["category"]
        answer = item.get("adversarial_answer" if category == ADVERSARIAL else "answer", item.get("answer"))
        extra = {"category": category, "category_name": CATEGORY_NAMES[category], "conversation": conv.sample_id,
                 "answer": answer, "evidence": evidence}
        if evidence:  # how long before the question its newest evidence was said (what temporal decay reads)
            extra["evidence_age_days"] = (asked - max(when_of[e] for e in evidence)).days
        if not item["question"].strip():
            skipped.setdefault("empty_question", []).append(qid)
            continue
        if category == ADVERSARIAL:
            queries.append(Query(qid, item["question"], {}, "negative", None, extra, cluster=conv.sample_id))
            continue
        if not evidence:
            skipped.setdefault("no_evidence", []).append(qid)
            continue
        if granularity == "session":
            relevant = {session_doc_id(n): 1 for n in sorted({session_of[e] for e in evidence})}
        else:
            relevant = {e: 1 for e in evidence}
        queries.append(Query(qid, item["question"], relevant, "suite", None, extra, cluster=conv.sample_id))
    return ConversationQueries(queries, totals, skipped)


# ---------------------------------------------------------------------------------------------
# The data set
# ---------------------------------------------------------------------------------------------


@dataclass
class LoCoMoConversation:
    """One conversation: a workspace of its own and the questions asked about it."""

    conversation: Conversation
    granularity: str
    source: dict[str, Any] = field(default_factory=dict)

    def queries(self) -> list[Query]:
        return conversation_queries(self.conversation, self.granularity).queries

    @property
    def reference_time(self) -> datetime:
        """When the questions are asked: right after the conversation's last session (temporal decay ages
        the session files from here unless evaluation.now is set)."""
        return max(s.when for s in self.conversation.sessions)

    def render(self, dest: Path | str | None = None) -> Layout:
        conv = self.conversation
        description = {**self.source, "conversation": conv.sample_id, "granularity": self.granularity,
                       "sessions": len(conv.sessions), "turns": sum(len(s.turns) for s in conv.sessions)}
        return render_conversation(conv, self.granularity, description, dest)


@DATASETS.register("locomo")
@stage
class LoCoMo(PublishedFileDataset):
    """LoCoMo: 10 long conversations as dated memory files, questions with evidence turns (one workspace each).
    A conversation's questions are not independent draws: the conversation is the resampling unit."""

    RESAMPLING_UNIT = "conversation"
    # LoCoMo-zh is the same reader on mem1's translation (path = "datasets/locomo_zh/medium_locomo_zh.json")
    PROVENANCE = Provenance("CC BY-NC 4.0, non-commercial use only (LoCoMo; LoCoMo-zh, a translation of it, too)",
                            ("datasets/locomo", "datasets/locomo_zh"),
                            ("datasets/locomo/SOURCE.md", "datasets/locomo_zh/SOURCE.md"))

    # conversation data: recall_any@k / recall_all@k at the result cut-offs even when the experiment sets no
    # [evaluation] evidence_cutoffs (run_experiment), and the headline of its reports
    evidence_metrics = ("recall_any", "recall_all")

    path: str | Path = "datasets/locomo/locomo10.json"
    """the JSON file (a relative path is read from the working directory, else the project root)"""
    granularity: Literal["turn", "session"] = "turn"
    """the document a question's evidence names: the turn (dia_id) or its whole session"""
    conversations: list[str] | None = None
    """only these sample ids, in file order (all when unset)"""
    sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    """expected sha256 of the file (default: the published hash of locomo10.json)"""
    verify: bool = True
    """check the sha256 before reading (false: measure a modified copy without a check)"""

    def __post_init__(self) -> None:
        self.path = project_path(self.path)
        self._loaded: list[Conversation] | None = None
        self._checked: dict[str, Any] = {}

    def _load(self) -> list[Conversation]:
        if self._loaded is None:
            self._checked = self.check_file()
            conversations = load_locomo(self.path)
            if self.conversations is not None:
                known = {c.sample_id for c in conversations}
                unknown = [c for c in self.conversations if c not in known]
                if unknown:
                    raise DataError(self.path, None, "sample_id",
                                    f"dataset.conversations names unknown ids {unknown}; known: {sorted(known)}")
                conversations = [c for c in conversations if c.sample_id in self.conversations]
            self._loaded = conversations
        return self._loaded

    def scopes(self) -> list[tuple[str, LoCoMoConversation]]:
        conversations = self._load()  # checks the sha256 first
        source = {"dataset": "locomo", "path": str(self.path), **self._checked}
        return [(c.sample_id, LoCoMoConversation(c, self.granularity, source)) for c in conversations]

    def queries(self) -> list[Query]:
        return [q for c in self._load() for q in conversation_queries(c, self.granularity).queries]

    def render(self, dest: Path | str | None = None) -> Layout:
        raise TypeError("locomo is scoped: render each of scopes() (one workspace per conversation)")

    def describe(self) -> dict[str, Any]:
        """Counts of what was read, normalised and skipped (results.json "dataset")."""
        conversations = self._load()
        evidence = dict.fromkeys(EVIDENCE_CASES, 0)
        skipped: dict[str, list[str]] = {}
        queries: list[Query] = []
        for c in conversations:
            part = conversation_queries(c, self.granularity)
            queries += part.queries
            for key, n in part.evidence.items():
                evidence[key] += n
            for reason, ids in part.skipped.items():
                skipped.setdefault(reason, []).extend(ids)
        sessions = [s for c in conversations for s in c.sessions]
        same_day = sum(sum(p.endswith(f"-s{n}.md") for n, p in session_paths(c.sessions).items())
                       for c in conversations)
        by_category = {str(k): sum(q.extra["category"] == k for q in queries) for k in CATEGORY_NAMES}
        notes = [f"evidence ids: {evidence['items']} listed, {evidence['kept']} turn ids kept; "
                 f"{evidence['split']} strings split into several ids, {evidence['reformatted']} "
                 f"reformatted, {evidence['dropped_absent']} dropped as absent from their conversation, "
                 f"{evidence['dropped_empty'] + evidence['dropped_unreadable']} dropped as empty or unreadable"]
        notes += [f"skipped {len(ids)} question(s), {reason.replace('_', ' ')}: {', '.join(ids)}"
                  for reason, ids in skipped.items()]
        return {
            "dataset": "locomo", "path": str(self.path), **self._checked, "granularity": self.granularity,
            "conversations": len(conversations), "sessions": len(sessions),
            "turns": sum(len(s.turns) for s in sessions),
            "turns_with_image": sum(t.caption is not None for s in sessions for t in s.turns),
            "same_day_sessions": same_day,
            "questions": sum(len(c.qa) for c in conversations),
            "queries": {"suite": sum(q.kind == "suite" for q in queries),
                        "negative": sum(q.kind == "negative" for q in queries), "by_category": by_category},
            "category_names": {str(k): v for k, v in CATEGORY_NAMES.items()},
            "evidence": evidence, "skipped": skipped, "notes": notes,
        }
