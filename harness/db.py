"""SQLite connections with FTS5 and the sqlite-vec extension.

The stdlib sqlite3 module on these machines cannot load extensions, so we use apsw, which bundles a
recent SQLite (FTS5 and the trigram tokenizer included) and can load sqlite-vec.
"""
from __future__ import annotations

import os
from pathlib import Path

import apsw
import sqlite_vec


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
    """Where the persistent caches live: $HARNESS_CACHE_DIR, else .cache."""
    return Path(os.environ.get("HARNESS_CACHE_DIR", ".cache"))


def open_cache(path: Path | str) -> apsw.Connection:
    """A cache database shared by concurrent runs: WAL, and a writer waits (60 s) instead of failing
    with "database is locked"."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = connect(str(path), load_vec=False)
    conn.setbusytimeout(60_000)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn
