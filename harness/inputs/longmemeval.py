"""LongMemEval (Wu et al., ICLR 2025; MIT): 500 questions about a user's long chat history with an
assistant, each with its own haystack of timestamped sessions, read from the user's own copy of
longmemeval_s.json, longmemeval_m.json or longmemeval_oracle.json (the data is not redistributed here;
README: "LongMemEval from your copy").

    [dataset]
    name = "longmemeval"
    path = "/data/longmemeval/longmemeval_s.json"   # your copy
    granularity = "session"        # or "turn": the document a question's evidence names
    assistant_turns = false        # true: index the assistant's turns too
    # question_types = ["multi-session"]   limit = 50   questions = ["e47becba"]   (subsets, file order)

The file (LongMemEval's README, "Dataset Format"): a JSON list of questions {question_id, question_type,
question, answer, question_date, haystack_session_ids, haystack_dates, haystack_sessions,
answer_session_ids}; a session is a list of turns {role: "user" | "assistant", content, has_answer?},
has_answer true on the turns that hold the evidence.

Protocol, as LongMemEval's own retrieval code runs it (src/retrieval/run_retrieval.py, eval_utils.py):
  * one haystack per question: each question is its own workspace (`scopes()`, as LoCoMo's
    conversations), searched as of its question_date (the `now` of temporal decay);
  * user turns only, as the official scripts index (`assistant_turns = true` adds the assistant's);
  * session granularity: a document per session (id: its haystack_session_id), relevant when it is one
    of answer_session_ids and one of its indexed turns has has_answer (upstream renames an answer session
    whose user turns hold no evidence "noans", i.e. not relevant);  turn granularity: a document per
    indexed turn (id "<session id>_<n>", n its 1-based position in the session counting both roles, as
    upstream numbers them), relevant when has_answer is true in an answer session;
  * the 30 questions whose id ends in "_abs" (abstention: the history does not hold the answer) are the
    abstention set (negative queries); upstream leaves them out of its retrieval figures, and so does the
    suite here;
  * the headline is recall_all@k (all evidence documents in the top k: LongMemEval's
    print_retrieval_metrics.py reports it), beside recall_any@k and ndcg_any@k (LongMemEval's nDCG,
    evidence.ndcg_any).  "k" counts returned chunks: with the `record` chunker (one chunk per turn) at
    turn granularity, or `file` (one chunk per session file) at session granularity, a chunk is one
    corpus item as in upstream's flat index; other chunkers measure the preset as it ships.
  * a question whose indexed turns hold no evidence (single-session-assistant questions when only user
    turns are indexed) cannot be scored: it is skipped and counted, as upstream's run_retrieval.py does
    since commit b60a5b7 ("no target turns from the user side"; before it, such a question was averaged
    in with recall_any 0 and recall_all 1, every one of no documents being found).

Rendering: each session is a dated file memory/YYYY-MM-DD.md from haystack_dates ("2023/05/20 (Sat)
02:21"; any form of harness.inputs.conversation_dates), a later session of the same day
memory/YYYY-MM-DD-sN.md (N its position in the haystack), headed "# 2023-05-20 02:21", one list item per
indexed turn, "- user: ..." (a turn's line breaks continue on indented lines).  Session ids are never
written into the memory: upstream's evidence sessions are named "answer_...", which would give the
answer away.

Memory: the file is parsed whole (json); longmemeval_m.json (~2.7 GB) needs several times that in RAM.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

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
from harness.inputs.locomo import refuse_duplicate_ids, required_field, session_paths
from harness.registry import stage
from harness.text_files import shown

ROLES = ("user", "assistant")
ABSTENTION_SUFFIX = "_abs"
HEADLINE = ("recall_all", "recall_any", "ndcg_any")  # LongMemEval's printer leads with recall_all


@dataclass(frozen=True)
class LMETurn:
    number: int  # 1-based position in its session, both roles counted (upstream's turn ids)
    role: str
    content: str
    has_answer: bool


@dataclass(frozen=True)
class LMESession:
    session_id: str
    number: int  # 1-based position in the haystack (session_paths names a same-day file -sN by it)
    when: datetime
    turns: tuple[LMETurn, ...]


@dataclass
class LMEQuestion:
    question_id: str
    question_type: str
    question: str
    answer: Any
    question_date: datetime
    sessions: list[LMESession]
    answer_session_ids: list[str]
    index: int = 0  # position in the file

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith(ABSTENTION_SUFFIX)


def _when(raw: Any, path: Path, where: str) -> datetime:
    try:
        return parse_when(raw)
    except UnreadableDate as exc:
        raise DataError(path, None, where, str(exc)) from None


def _question(item: Any, index: int, path: Path) -> LMEQuestion:
    where = f"[{index}]"
    qid = required_field(item, "question_id", str, path, where)
    ids = required_field(item, "haystack_session_ids", list, path, where)
    dates = required_field(item, "haystack_dates", list, path, where)
    sessions_raw = required_field(item, "haystack_sessions", list, path, where)
    if not len(ids) == len(dates) == len(sessions_raw):
        raise DataError(path, None, f"{where}.haystack_sessions", f"{len(ids)} session ids, {len(dates)} dates and "
                        f"{len(sessions_raw)} sessions: the three lists must have the same length")
    sessions, seen = [], set()
    for s, (sid, date, turns_raw) in enumerate(zip(ids, dates, sessions_raw)):
        sw = f"{where}.haystack_sessions[{s}]"
        if not isinstance(sid, str):
            raise DataError(path, None, f"{where}.haystack_session_ids[{s}]", "must be a string")
        if sid in seen:
            raise DataError(path, None, f"{where}.haystack_session_ids[{s}]", f"duplicate session id {sid!r}")
        seen.add(sid)
        if not isinstance(turns_raw, list):
            raise DataError(path, None, sw, "must be a list of turns")
        turns = []
        for t, turn in enumerate(turns_raw):
            tw = f"{sw}[{t}]"
            role = required_field(turn, "role", str, path, tw)
            if role not in ROLES:
                raise DataError(path, None, f"{tw}.role", f"must be 'user' or 'assistant', got {role!r}")
            has_answer = turn.get("has_answer", False)
            if not isinstance(has_answer, bool):
                raise DataError(path, None, f"{tw}.has_answer", f"must be true or false, got {has_answer!r}")
            turns.append(LMETurn(t + 1, role, required_field(turn, "content", str, path, tw), has_answer))
        sessions.append(LMESession(sid, s + 1, _when(date, path, f"{where}.haystack_dates[{s}]"), tuple(turns)))
    answers = required_field(item, "answer_session_ids", list, path, where)
    if not all(isinstance(a, str) for a in answers):
        raise DataError(path, None, f"{where}.answer_session_ids", "must be a list of session ids")
    for a, answer in enumerate(answers):  # else the question would read as one upstream skips (no evidence indexed)
        if answer not in seen:
            raise DataError(path, None, f"{where}.answer_session_ids[{a}]",
                            f"{shown(answer)} names no session of the question's haystack_session_ids; the file is "
                            "damaged or edited (every evidence session is in its question's haystack)")
    return LMEQuestion(qid, required_field(item, "question_type", str, path, where),
                       required_field(item, "question", str, path, where),
                       required_field(item, "answer", (str, int, float, list), path, where),
                       _when(required_field(item, "question_date", str, path, where), path, f"{where}.question_date"),
                       sessions, answers, index)


def load_longmemeval(path: Path | str) -> list[LMEQuestion]:
    """The questions of a LongMemEval JSON file, validated (errors name the JSON path)."""
    path = Path(path)
    _, root = read_json(path, "LongMemEval JSON file (longmemeval_s.json, _m or _oracle: your copy)")
    if not isinstance(root, list):
        raise DataError(path, None, None, "the top level must be a list of questions")
    questions = [_question(item, i, path) for i, item in enumerate(root)]
    refuse_duplicate_ids([q.question_id for q in questions], path, "question_id")
    return questions


# ---------------------------------------------------------------------------------------------
# One question's haystack
# ---------------------------------------------------------------------------------------------


def indexed_turns(session: LMESession, assistant_turns: bool) -> list[LMETurn]:
    return [t for t in session.turns if t.role == "user" or assistant_turns]


def turn_doc_id(session: LMESession, turn: LMETurn) -> str:
    return f"{session.session_id}_{turn.number}"


def _turn_lines(turn: LMETurn) -> list[str]:
    lines = [ln.rstrip() for ln in turn.content.strip().split("\n")] or [""]
    return [f"- {turn.role}: {lines[0]}".rstrip()] + [f"  {ln}" if ln else "" for ln in lines[1:]]


def relevant_documents(question: LMEQuestion, granularity: str, assistant_turns: bool) -> dict[str, int]:
    answers = set(question.answer_session_ids)
    out: dict[str, int] = {}
    for s in question.sessions:
        if s.session_id not in answers:
            continue
        evidence = [t for t in indexed_turns(s, assistant_turns) if t.has_answer]
        if granularity == "session":
            if evidence:
                out[s.session_id] = 1
        else:
            out.update({turn_doc_id(s, t): 1 for t in evidence})
    return out


@dataclass
class LongMemEvalHaystack:
    """One question: its haystack as a workspace of dated session files, and the question."""

    question: LMEQuestion
    granularity: str
    assistant_turns: bool
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def reference_time(self) -> datetime:
        """When the question is asked (its question_date): the `now` of temporal decay."""
        return self.question.question_date

    def queries(self) -> list[Query]:
        q = self.question
        extra = {"category": q.question_type, "question_type": q.question_type, "answer": q.answer,
                 "question_date": q.question_date.isoformat(), "answer_session_ids": list(q.answer_session_ids)}
        if q.abstention:
            return [Query(q.question_id, q.question, {}, "negative", None, extra)]
        relevant = relevant_documents(q, self.granularity, self.assistant_turns)
        return [Query(q.question_id, q.question, relevant, "suite", None, extra)] if relevant else []

    def render(self, dest: Path | str | None = None) -> Layout:
        q = self.question
        root = fresh_root("longmemeval-", dest)
        writer = LayoutWriter(root)
        sessions = [s for s in q.sessions if indexed_turns(s, self.assistant_turns)]
        paths = session_paths(sessions)
        for s in sessions:
            path = paths[s.number]
            heading = [f"# {s.when:%Y-%m-%d %H:%M}", ""]
            turns = indexed_turns(s, self.assistant_turns)
            if self.granularity == "session":
                writer.add_lines(path, heading + [ln for t in turns for ln in _turn_lines(t)], [s.session_id])
                continue
            writer.add_lines(path, heading)
            for t in turns:
                writer.add_lines(path, _turn_lines(t), [turn_doc_id(s, t)])
        description = {**self.source, "question": q.question_id, "granularity": self.granularity,
                       "sessions": len(sessions), "turns": sum(len(indexed_turns(s, self.assistant_turns))
                                                               for s in sessions)}
        return writer.finish(description)


@DATASETS.register("longmemeval")
@stage
class LongMemEval(PublishedFileDataset):
    """LongMemEval from your copy: one haystack of dated sessions per question, evidence sessions or turns."""

    # conversation data: recall_all@k leads (LongMemEval's own printer), beside recall_any@k and ndcg_any@k
    evidence_metrics = HEADLINE
    PROVENANCE = Provenance("LongMemEval's own (the user brings the file); the committed sample is the project's "
                            "own text", ("datasets/handmade",), ("datasets/handmade/README.md",),
                            {"path": "datasets/handmade/longmemeval-sample.json"})

    path: str | Path
    """your longmemeval_s.json, longmemeval_m.json or longmemeval_oracle.json"""
    granularity: Literal["session", "turn"] = "session"
    """the document a question's evidence names: its sessions (answer_session_ids) or turns (has_answer)"""
    assistant_turns: bool = False
    """index the assistant's turns too (LongMemEval's retrieval scripts index the user's only)"""
    question_types: list[str] | None = None
    """only questions of these types (e.g. ["multi-session"]), in file order"""
    questions: list[str] | None = None
    """only these question ids, in file order"""
    limit: int | None = Field(None, ge=1)
    """the first N questions left after the filters above"""
    sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    """expected sha256 of your file (checked when given)"""
    verify: bool = True
    """check the sha256 when one is given"""

    def __post_init__(self) -> None:
        self.path = project_path(Path(str(self.path)).expanduser())
        self._loaded: list[LMEQuestion] | None = None
        self._checked: dict[str, Any] = {}
        self._read = 0

    def _load(self) -> list[LMEQuestion]:
        if self._loaded is None:
            self._checked = self.check_file()
            questions = load_longmemeval(self.path)
            self._read = len(questions)
            if self.questions is not None:
                known = {q.question_id for q in questions}
                unknown = [i for i in self.questions if i not in known]
                if unknown:
                    raise DataError(self.path, None, "question_id",
                                    f"dataset.questions names unknown ids {unknown[:5]}")
                questions = [q for q in questions if q.question_id in set(self.questions)]
            if self.question_types is not None:
                known_types = {q.question_type for q in questions}
                unknown = [t for t in self.question_types if t not in known_types]
                if unknown:
                    raise DataError(self.path, None, "question_type", f"dataset.question_types names {unknown}, "
                                    f"which no question has; types: {sorted(known_types)}")
                questions = [q for q in questions if q.question_type in set(self.question_types)]
            self._loaded = questions[: self.limit] if self.limit else questions
        return self._loaded

    def _part(self, q: LMEQuestion) -> LongMemEvalHaystack:
        source = {"dataset": "longmemeval", "path": str(self.path), **self._checked}
        return LongMemEvalHaystack(q, self.granularity, self.assistant_turns, source)

    def scopes(self) -> list[tuple[str, LongMemEvalHaystack]]:
        """One part per question that is asked (a skipped question's haystack is not indexed at all)."""
        parts = [(q.question_id, self._part(q)) for q in self._load()]
        return [(qid, part) for qid, part in parts if part.queries()]

    def queries(self) -> list[Query]:
        return [query for q in self._load() for query in self._part(q).queries()]

    def render(self, dest: Path | str | None = None) -> Layout:
        raise TypeError("longmemeval is scoped: render each of scopes() (one haystack per question)")

    def describe(self) -> dict[str, Any]:
        """Counts of what was read, indexed and skipped (results.json "dataset")."""
        questions = self._load()
        by_type: dict[str, int] = {}
        skipped: list[str] = []
        skipped_by_type: dict[str, int] = {}
        for q in questions:
            by_type[q.question_type] = by_type.get(q.question_type, 0) + 1
            if not q.abstention and not relevant_documents(q, self.granularity, self.assistant_turns):
                skipped.append(q.question_id)
                skipped_by_type[q.question_type] = skipped_by_type.get(q.question_type, 0) + 1
        sessions = [len(q.sessions) for q in questions]
        turns = sum(len(indexed_turns(s, self.assistant_turns)) for q in questions for s in q.sessions)
        abstention = sum(q.abstention for q in questions)
        roles = "user and assistant turns" if self.assistant_turns else "user turns only"
        notes = [f"{len(questions)} of the file's {self._read} questions, one haystack each; {roles} indexed "
                 f"({turns:,} turns); {abstention} abstention questions (_abs) as the negative set"]
        if skipped:
            detail = ", ".join(f"{t} {n}" for t, n in sorted(skipped_by_type.items()))
            notes.append(f"skipped {len(skipped)} question(s) whose indexed turns hold no evidence ({detail}), "
                         f"as LongMemEval's own retrieval script skips them")
        return {
            "dataset": "longmemeval", "path": str(self.path), **self._checked, "granularity": self.granularity,
            "assistant_turns": self.assistant_turns, "questions": len(questions), "questions_in_file": self._read,
            "sessions": sum(sessions), "sessions_per_haystack": [min(sessions, default=0), max(sessions, default=0)],
            "turns": turns, "abstention": abstention, "question_types": by_type,
            "queries": {"suite": len(questions) - abstention - len(skipped), "negative": abstention},
            "skipped": {"no_evidence_in_indexed_turns": skipped} if skipped else {},
            "category_names": {t: t for t in sorted(by_type)}, "headline": list(HEADLINE), "notes": notes,
        }
