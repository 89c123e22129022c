"""SQLite connections with FTS5 and the sqlite-vec extension.

The stdlib sqlite3 module on these machines cannot load extensions, so we use apsw, which bundles a
recent SQLite (FTS5 and the trigram tokenizer included) and can load sqlite-vec.
"""
from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Callable, TypeVar

import apsw
import sqlite_vec

from harness.errors import HarnessError

T = TypeVar("T")


def connect(path: str = ":memory:", *, load_vec: bool = True) -> apsw.Connection:
    conn = apsw.Connection(path)
    if load_vec:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
    return conn


def sqlite_version() -> str:
    return apsw.sqlite_lib_version()


def sqlite_vec_version() -> str:
    conn = connect()
    (version,) = conn.execute("select vec_version()").fetchone()
    return version


def cache_dir() -> Path:
    """Where the persistent caches live: $HARNESS_CACHE_DIR when set, else the user's cache folder
    (platformdirs: ~/.cache/harness on Linux, ~/Library/Caches/harness on macOS,
    %LOCALAPPDATA%\\harness\\Cache on Windows), so that a run from any folder finds what an earlier
    run computed."""
    if os.environ.get("HARNESS_CACHE_DIR"):
        return Path(os.environ["HARNESS_CACHE_DIR"]).expanduser()
    from platformdirs import user_cache_path

    return user_cache_path("harness", appauthor=False)


# Several runs may share one cache (four at once in tests/test_cache_concurrency.py).  SQLite's busy
# timeout makes a writer wait for another's transaction; WAL lets readers go on meanwhile.  A few
# operations can still report SQLITE_BUSY at once (switching the journal mode while another connection
# opens the file, a checkpoint racing a new transaction), so those are retried with a growing pause.
BUSY_TIMEOUT_MS = 60_000
BUSY_RETRIES = 8


def retry_busy(operation: Callable[[], T], what: str, path: Path | str) -> T:
    """operation(), tried again with a growing pause while the database is busy or locked; a
    HarnessError naming the cache file once it stays locked."""
    for attempt in range(BUSY_RETRIES + 1):
        try:
            return operation()
        except (apsw.BusyError, apsw.LockedError) as exc:
            if attempt == BUSY_RETRIES:
                raise HarnessError(f"the cache {path} stayed locked by other runs while {what} "
                                   f"({BUSY_RETRIES + 1} tries, waiting up to {BUSY_TIMEOUT_MS // 1000} s each): "
                                   f"{exc}") from exc
            time.sleep(min(2.0, 0.05 * 2 ** attempt) * (1 + random.random()))
    raise AssertionError("unreachable")


def open_cache(path: Path | str) -> apsw.Connection:
    """A cache database shared by concurrent runs: WAL, a writer waits (60 s) instead of failing with
    "database is locked", and opening it is retried while another process switches the journal mode."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = connect(str(path), load_vec=False)
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchall(), "opening it", path)
    return conn
