"""Where labels live: one SQLite file beside the experiment (judge/labels.sqlite), one transaction per grade,
so an interrupted labelling session loses nothing and resumes where it stopped.

    grades(query_id, path, start_line, end_line, by, grade, judge, prompt, at)
        by      explicit (a person in the page) | llm
        judge   who: the labeller's name for a person (`harness judge --labeller`, default the login name;
                "page" in stores written before names were kept), the chat model's id for an LLM
        prompt  the LLM judge's prompt version (empty for a person)
        at      when (seconds since the epoch, UTC)
    history(query_id, path, start_line, end_line, by, grade, judge, prompt, at)
        every write as it was made, in the same transaction as the grade: a re-grade or a cleared grade
        (grade NULL) adds a row and never removes one, so who graded what, and when, survives every edit
A grade is replaced only by the same judge kind (a person re-grading a chunk); an LLM grade never replaces a
person's, and both are kept side by side for the agreement figures.  One `harness judge` at a time writes a
folder's labels (harness.judging.lock): a second one refuses rather than overwrite the first's grades.
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from harness.errors import DataError

SCHEMA = """
CREATE TABLE IF NOT EXISTS grades (
  query_id TEXT NOT NULL, path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
  by TEXT NOT NULL CHECK (by IN ('explicit', 'llm')), grade INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
  judge TEXT NOT NULL, prompt TEXT NOT NULL DEFAULT '', at REAL NOT NULL,
  PRIMARY KEY (query_id, path, start_line, end_line, by)
);
CREATE TABLE IF NOT EXISTS history (
  query_id TEXT NOT NULL, path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
  by TEXT NOT NULL, grade INTEGER, judge TEXT NOT NULL, prompt TEXT NOT NULL DEFAULT '', at REAL NOT NULL
)"""


@dataclass(frozen=True)
class Grade:
    query_id: str
    path: str
    start: int
    end: int
    by: str
    grade: int
    judge: str
    prompt: str
    at: float

    @property
    def key(self) -> str:
        return item_key(self.path, self.start, self.end)


def item_key(path: str, start: int, end: int) -> str:
    return f"{path}#L{start}-L{end}"


class LabelStore:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            with self.conn:
                for statement in SCHEMA.split(";"):
                    self.conn.execute(statement)
        except sqlite3.DatabaseError as exc:
            raise DataError(self.path, None, None, f"cannot open the labels ({exc}); they are never overwritten: move "
                                                   "the file aside to start again, or restore a copy") from None

    def put(self, query_id: str, path: str, start: int, end: int, grade: int, *, by: str = "explicit",
            judge: str = "page", prompt: str = "") -> None:
        if not 0 <= int(grade) <= 3:
            raise ValueError(f"grade must be 0-3, got {grade}")
        row = (query_id, path, int(start), int(end), by, int(grade), judge, prompt, time.time())
        with self.conn:  # one transaction: the grade and its history row are on disk when this returns
            self.conn.execute("INSERT OR REPLACE INTO grades VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            self.conn.execute("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def delete(self, query_id: str, path: str, start: int, end: int, *, by: str = "explicit",
               judge: str = "page") -> None:
        with self.conn:
            self.conn.execute("DELETE FROM grades WHERE query_id = ? AND path = ? AND start_line = ? AND end_line = ? "
                              "AND by = ?", (query_id, path, int(start), int(end), by))
            self.conn.execute("INSERT INTO history VALUES (?, ?, ?, ?, ?, NULL, ?, '', ?)",
                              (query_id, path, int(start), int(end), by, judge, time.time()))

    def history(self) -> list[tuple[Any, ...]]:
        """Every write in the order made: (query_id, path, start, end, by, grade or None, judge, prompt, at)."""
        return list(self.conn.execute("SELECT query_id, path, start_line, end_line, by, grade, judge, prompt, at "
                                      "FROM history ORDER BY rowid"))

    def grades(self, by: str | None = None) -> Iterator[Grade]:
        where, args = ("WHERE by = ?", (by,)) if by else ("", ())
        for row in self.conn.execute(f"SELECT query_id, path, start_line, end_line, by, grade, judge, prompt, at FROM "
                                     f"grades {where} ORDER BY query_id, path, start_line, end_line, by", args):
            yield Grade(*row)

    def by_query(self, by: str = "explicit") -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for g in self.grades(by):
            out.setdefault(g.query_id, {})[g.key] = g.grade
        return out

    def close(self) -> None:
        self.conn.close()
