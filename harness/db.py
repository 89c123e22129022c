"""SQLite connections with FTS5 and the sqlite-vec extension.

The stdlib sqlite3 module on these machines cannot load extensions, so we use apsw, which bundles a
recent SQLite (FTS5 and the trigram tokenizer included) and can load sqlite-vec.
"""
from __future__ import annotations

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
