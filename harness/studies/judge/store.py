"""Where labels live: one SQLite file beside the experiment (judge/labels.sqlite), one transaction per grade,
so an interrupted labelling session loses nothing and resumes where it stopped.

    grades(query_id, path, start_line, end_line, by, grade, judge, prompt, at)
        by      explicit (a person in the page) | llm
        judge   who: "page" for a person, the chat model's id for an LLM
        prompt  the LLM judge's prompt version (empty for a person)
A grade is replaced only by the same judge kind (a person re-grading a chunk); an LLM grade never replaces a
person's, and both are kept side by side for the agreement figures.
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from harness.errors import DataError

SCHEMA = """
CREATE TABLE IF NOT EXISTS grades (
  query_id TEXT NOT NULL, path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
  by TEXT NOT NULL CHECK (by IN ('explicit', 'llm')), grade INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
  judge TEXT NOT NULL, prompt TEXT NOT NULL DEFAULT '', at REAL NOT NULL,
  PRIMARY KEY (query_id, path, start_line, end_line, by)
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
                self.conn.execute(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise DataError(self.path, None, None, f"cannot open the labels ({exc}); they are never overwritten: move "
                                                   "the file aside to start again, or restore a copy") from None

    def put(self, query_id: str, path: str, start: int, end: int, grade: int, *, by: str = "explicit",
            judge: str = "page", prompt: str = "") -> None:
        if not 0 <= int(grade) <= 3:
            raise ValueError(f"grade must be 0-3, got {grade}")
        with self.conn:  # one transaction: the grade is on disk when this returns
            self.conn.execute("INSERT OR REPLACE INTO grades VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                              (query_id, path, int(start), int(end), by, int(grade), judge, prompt, time.time()))

    def delete(self, query_id: str, path: str, start: int, end: int, *, by: str = "explicit") -> None:
        with self.conn:
            self.conn.execute("DELETE FROM grades WHERE query_id = ? AND path = ? AND start_line = ? AND end_line = ? "
                              "AND by = ?", (query_id, path, int(start), int(end), by))

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
