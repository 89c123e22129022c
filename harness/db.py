"""SQLite connections with FTS5 and the sqlite-vec extension.

The stdlib sqlite3 module on these machines cannot load extensions, so we use apsw, which bundles a
recent SQLite (FTS5 and the trigram tokenizer included) and can load sqlite-vec.
"""
from __future__ import annotations

import os
import random
import time
import urllib.parse
from dataclasses import dataclass, field
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


# --- a cache file that may be broken, read-only or on a full disk --------------------------------------

BROKEN = (apsw.CorruptError, apsw.NotADBError)  # the file is not (or no longer) a sound SQLite database
UNWRITABLE = (apsw.CantOpenError, apsw.ReadOnlyError, apsw.PermissionsError, apsw.AuthError)


class CacheFolderError(HarnessError):
    """The cache folder cannot be used at all (a file where the folder should be): named, with what to do."""


class CacheFullError(HarnessError):
    """The disk holding a cache is full; what was stored before is kept.  `folder` is where space is needed."""

    def __init__(self, message: str, folder: Path):
        super().__init__(message)
        self.folder = folder


class SchemaMismatch(Exception):
    """The file is a SQLite database, but its table is not the one this cache writes."""


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def move_aside(path: Path) -> Path:
    """Rename a broken cache file (and its -wal and -shm) to <name>.broken-<time>; returns the new name."""
    target = path.with_name(f"{path.name}.broken-{_stamp()}")
    n = 2
    while target.exists():
        target = path.with_name(f"{path.name}.broken-{_stamp()}-{n}")
        n += 1
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = Path(str(path) + suffix)
        if side.exists():
            os.replace(side, Path(str(target) + suffix))
    return target


@dataclass
class CacheFile:
    """An open cache database and what happened on the way: `readonly` (vectors are read, not stored),
    `notes` for the user (a file moved aside, a folder that cannot be written)."""

    path: Path
    conn: apsw.Connection
    readonly: bool = False
    notes: list[str] = field(default_factory=list)


def check_cache_folder(folder: Path, what: str) -> None:
    """A file where the cache folder (or one above it) should be: one error naming it and the variable."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        hint = " (HARNESS_CACHE_DIR)" if os.environ.get("HARNESS_CACHE_DIR") else ""
        raise CacheFolderError(f"{probe}: is a file, but the {what} folder{hint} is to be {folder}; point "
                               "HARNESS_CACHE_DIR at a folder, or move that file away")


def open_cache_file(path: Path | str, *, table: str, create: str, columns: tuple[str, ...], what: str) -> CacheFile:
    """Open (or create) a cache database that several runs share, and survive what a disk can do to it:

    * a file that is not a database, truncated, corrupt, or holds another table under our name: moved
      aside (<name>.broken-<time>, named in a note) and a new cache started in its place;
    * a folder (or file) that cannot be written, e.g. a CI cache restored read-only: opened read-only,
      so the vectors it holds are used (`readonly`: new ones are computed and not stored); a cache that
      cannot even be created there: an empty one in memory, with a note;
    * a full disk: CacheFullError naming the folder; a file where the folder should be: CacheFolderError."""
    path = Path(path)
    if str(path) == ":memory:":
        conn = open_cache(path)
        conn.execute(create)
        return CacheFile(path, conn)
    folder = path.parent
    check_cache_folder(folder, what)
    if path.is_dir():
        raise CacheFolderError(f"{path}: is a folder, but the {what} file is to be there; remove it, or point "
                               "HARNESS_CACHE_DIR elsewhere")
    notes: list[str] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _in_memory(path, create, notes + [f"the {what} folder {folder} cannot be created ({exc.strerror}): "
                                                 "what is computed now is not kept for the next run"])
    for attempt in range(2):
        try:
            conn = open_cache(path)
            retry_busy(lambda: conn.execute(create), "opening it", path)
            _check_table(conn, table, columns)
            return CacheFile(path, conn, notes=notes)
        except BROKEN + (SchemaMismatch,) as exc:
            if attempt:
                raise
            why = "holds another table" if isinstance(exc, SchemaMismatch) else f"is not a sound database ({exc})"
            try:
                moved = move_aside(path)
            except OSError:
                break  # cannot even rename it: read-only, below
            notes.append(f"the {what} {path} {why}: moved aside to {moved.name} and started anew")
        except apsw.FullError:
            raise CacheFullError(f"{folder}: no space left on the device for the {what} ({path.name}); free some "
                                 "space there, or set HARNESS_CACHE_DIR to a folder with room, and run again",
                                 folder) from None
        except UNWRITABLE + (PermissionError,):
            break
    return _read_only(path, create, table, columns, what, notes)


def _check_table(conn: apsw.Connection, table: str, columns: tuple[str, ...]) -> None:
    found = tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
    if found != columns:
        raise SchemaMismatch(f"columns {found}")
    conn.execute(f"SELECT * FROM {table} LIMIT 1").fetchall()


def _read_only(path: Path, create: str, table: str, columns: tuple[str, ...], what: str,
               notes: list[str]) -> CacheFile:
    """The cache as it is on a folder this process cannot write: its vectors read, none stored."""
    if path.is_file():
        for query in ("mode=ro", "immutable=1"):  # immutable: no -shm needed (a folder nobody may write)
            try:
                conn = apsw.Connection(f"file:{urllib.parse.quote(str(path.resolve()))}?{query}",
                                       flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
                conn.setbusytimeout(BUSY_TIMEOUT_MS)
                _check_table(conn, table, columns)
                return CacheFile(path, conn, readonly=True, notes=notes + [
                    f"the {what} {path} cannot be written (a read-only folder or file): its entries are read, "
                    "and what is computed now is not stored"])
            except (apsw.Error, SchemaMismatch):
                continue
    return _in_memory(path, create, notes + [f"the {what} {path} can neither be written nor read: what is "
                                             "computed now is not kept for the next run"])


def _in_memory(path: Path, create: str, notes: list[str]) -> CacheFile:
    conn = connect(":memory:", load_vec=False)
    conn.execute(create)
    return CacheFile(path, conn, readonly=False, notes=notes)
