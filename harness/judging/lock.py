"""One `harness judge` per judge folder at a time.

Two labelling pages on the same folder would each show their own view of the grades while writing into the one
label store: a chunk both people grade keeps whichever grade came last, and neither page says so.  So the first
`harness judge` takes the folder's lock (judge/.lock, an OS file lock: the kernel releases it when the process
ends, however it ends, so a crashed session never leaves a stale lock behind) and a second one, with or without
a page, refuses in one line naming who holds it, since when and where its page is.  Two people label one pool by
taking turns (each grade records who made it), or with copies of the folder.
"""
from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

LOCK_FILE = ".lock"


class FolderInUseError(HarnessError):
    """Another `harness judge` holds the judge folder's lock."""


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


class JudgeLock:
    """The judge folder's lock, held from acquire() until release() (or the process's end)."""

    def __init__(self, judge_dir: Path | str, who: str):
        self.path = Path(judge_dir) / LOCK_FILE
        self.who = who
        self._fd: int | None = None
        self._info: dict[str, Any] = {}

    def acquire(self) -> "JudgeLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        if not _try_lock(fd):
            try:
                raw = os.read(fd, 4096).decode("utf-8", "replace")
            finally:
                os.close(fd)
            raise FolderInUseError(f"{self.path.parent}: {holder(raw)} labels this folder; one `harness judge` per "
                                   "folder, so that no grade overwrites another: grade in that page, or stop it (Ctrl-C) "
                                   "and run this again")
        self._fd = fd
        self._info = {"pid": os.getpid(), "who": self.who,
                      "since": datetime.now().astimezone().isoformat(timespec="seconds")}
        self._write()
        return self

    def note(self, **info: Any) -> None:
        """Add what a second session's refusal should say (the page's address)."""
        self._info.update(info)
        self._write()

    def _write(self) -> None:
        if self._fd is None:
            return
        raw = json.dumps(self._info, ensure_ascii=False).encode("utf-8")
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.ftruncate(self._fd, 0)
        os.write(self._fd, raw)

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None

    def __enter__(self) -> "JudgeLock":
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def holder(raw: str) -> str:
    """Who holds the lock, from what it wrote: 'harness judge (pid 12, by ana, since ..., page http://...)'."""
    try:
        info = json.loads(raw)
    except ValueError:
        info = None
    if not isinstance(info, dict):
        return "another `harness judge`"
    parts = [f"pid {info['pid']}" if isinstance(info.get("pid"), int) else None,
             f"by {info['who']}" if isinstance(info.get("who"), str) else None,
             f"since {info['since']}" if isinstance(info.get("since"), str) else None,
             f"page {info['url']}" if isinstance(info.get("url"), str) else None]
    shown = ", ".join(p for p in parts if p)
    return f"another `harness judge` ({shown})" if shown else "another `harness judge`"
