"""An OpenClaw agent's memory index (SQLite), read as the release that wrote it stores it.

Three on-disk formats, read from the releases' own code (npm `openclaw@VERSION`, `dist/`):

    release    file (state dir ~/.openclaw)                     tables read                          embedding column
    2026.2.22  memory/<agentId>.sqlite (memorySearch.store.path  meta (key memory_index_meta_v1),     TEXT: a JSON array
               may move it; {agentId} in it is replaced)        files, chunks                        (parseEmbedding)
    2026.8.1   agents/<agentId>/agent/openclaw-agent.sqlite     memory_index_meta, memory_index_     TEXT: a JSON array
               (the agent's database: sessions live there too)  sources, memory_index_chunks
    2026.9.6   the same file                                    the same; memory_index_chunks has    BLOB: IEEE-754 binary64,
                                                                 chunk_rowid and id UNIQUE            little-endian
                                                                                                      (encodeMemoryEmbedding)

2026.2.22: dist/manager-*.js ensureMemoryIndexSchema (src/memory/memory-schema.ts), resolveStorePath
(dist/agents-*.js: `${stateDir}/memory/${agentId}.sqlite`), META_KEY "memory_index_meta_v1".  2026.8.1:
dist/memory-schema-*.js buildMemoryIndexStrictSchema (packages/memory-host-sdk/src/host/memory-schema-base.ts),
dist/openclaw-agent-db.paths-*.js resolveOpenClawAgentSqlitePath.  2026.9.6: dist/state/openclaw-state-read.worker.js
OPENCLAW_AGENT_SCHEMA_SQL and resolveOpenClawAgentSqlitePath, dist/embedding-vector-*.mjs encode/decodeMemoryEmbedding.
The agent database of 2026.8.1 and later also has schema_meta (app_version, schema_version): the release that
wrote the file, which the format is named by when it is there.

Every chunk row: path (relative to the workspace), source ("memory" or "sessions"), start_line, end_line,
hash (sha256 of the chunk text as stored), model (the embedding model id as the provider named it), text,
embedding.  The meta row (JSON) names the provider, model, providerKey (OpenClaw's hash of the provider's
settings), chunkTokens/chunkOverlap and vectorDims.

The file is opened read-only and never changed.  A file that is not SQLite or is cut short, a lock held by
another process, a table or column this module does not know: one DataError naming the file and the
table/field, and what to do.
"""
from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from harness.errors import DataError
from harness.text_files import shown

META_KEY = "memory_index_meta_v1"
LOCK_TIMEOUT_S = 2.0
CHUNK_COLUMNS = ("id", "path", "source", "start_line", "end_line", "hash", "model", "text", "embedding")
FILE_COLUMNS = ("path", "source", "hash", "mtime", "size")


@dataclass(frozen=True)
class IndexFormat:
    """One release's index layout."""

    release: str  # the release whose format this is
    meta: str
    files: str
    chunks: str
    embedding: str  # "json" (TEXT) or "float64" (BLOB)
    where: str  # where the file lives in the state folder


LEGACY = IndexFormat("2026.2.22", "meta", "files", "chunks", "json", "memory/<agentId>.sqlite")
AGENT_DB_2026_08 = IndexFormat("2026.8.1", "memory_index_meta", "memory_index_sources", "memory_index_chunks", "json",
                               "agents/<agentId>/agent/openclaw-agent.sqlite")
AGENT_DB_2026_09 = IndexFormat("2026.9.6", "memory_index_meta", "memory_index_sources", "memory_index_chunks",
                               "float64", "agents/<agentId>/agent/openclaw-agent.sqlite")
FORMATS = (LEGACY, AGENT_DB_2026_08, AGENT_DB_2026_09)
KNOWN = ("OpenClaw 2026.2.22 (tables meta, files, chunks), 2026.8.1 (memory_index_meta, memory_index_sources, "
         "memory_index_chunks with a TEXT embedding) and 2026.9.6 (memory_index_chunks with chunk_rowid and a BLOB "
         "embedding)")


@dataclass(frozen=True)
class IndexMeta:
    provider: str | None
    model: str | None
    provider_key: str | None
    dims: int | None
    chunk_tokens: int | None
    chunk_overlap: int | None
    sources: tuple[str, ...]
    raw: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class IndexChunk:
    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    hash: str
    model: str
    text: str


@dataclass(frozen=True)
class IndexedFile:
    path: str
    source: str
    hash: str
    mtime: float
    size: int


MAX_META_NUMBER = 2**31 - 1  # dimensions, chunk tokens: no real index holds more


def _finite(value: Any) -> float | None:
    """A number stored in a row (SQLite REAL or INTEGER, or text of one), None when it is none or not finite."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and abs(value) <= 2**53 else None


def _connect(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise DataError(path, None, None, "no memory index here (OpenClaw writes it on its first memory search or "
                                          "`openclaw memory index`)")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=LOCK_TIMEOUT_S)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise _database_error(path, exc) from None
    return conn


def _database_error(path: Path, exc: Exception) -> DataError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return DataError(path, None, None, "the index is locked by another process (OpenClaw indexing right now?); "
                                           "wait until it is done, or stop OpenClaw, and retry")
    if "not a database" in text or "malformed" in text or "disk image" in text or "truncated" in text:
        return DataError(path, None, None, f"not a readable SQLite database ({text}): the file is cut short or "
                                           "damaged; let OpenClaw rebuild it (`openclaw memory index --force`) or "
                                           "restore a copy, and retry")
    return DataError(path, None, None, f"cannot read the index: {text}")


def _columns(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    return {row[1]: (row[2] or "").upper() for row in conn.execute(f"PRAGMA table_info({table})")}


class MemoryIndex:
    """An index file, opened read-only (module docstring).  `path` is the SQLite file."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.conn = _connect(self.path)
        try:
            self.format = self._detect()
            self.app_version, self.schema_version = self._schema_meta()
            self.meta = self._meta()
        except sqlite3.DatabaseError as exc:
            raise _database_error(self.path, exc) from None

    # -- what the file is ------------------------------------------------------------------------------
    def _detect(self) -> IndexFormat:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if "memory_index_chunks" in tables:
            fmt = AGENT_DB_2026_08
        elif "chunks" in tables:
            fmt = LEGACY
        else:
            raise DataError(self.path, None, "memory_index_chunks",
                            f"unknown index schema: no table memory_index_chunks (nor chunks); known: {KNOWN}")
        for table in (fmt.meta, fmt.files):
            if table not in tables:
                raise DataError(self.path, None, table, f"unknown index schema: table {table} is missing "
                                                        f"(the {fmt.release} format has it); known: {KNOWN}")
        for table, needed in ((fmt.chunks, CHUNK_COLUMNS), (fmt.files, FILE_COLUMNS)):
            have = _columns(self.conn, table)
            missing = [c for c in needed if c not in have]
            if missing:
                raise DataError(self.path, None, f"{table}.{missing[0]}",
                                f"unknown index schema: table {table} has no column {missing[0]} (columns: "
                                f"{', '.join(have)}); known: {KNOWN}")
        chunk_columns = _columns(self.conn, fmt.chunks)
        if fmt is AGENT_DB_2026_08 and chunk_columns["embedding"] == "BLOB":
            fmt = AGENT_DB_2026_09
        elif chunk_columns["embedding"] not in ("TEXT", "BLOB"):
            raise DataError(self.path, None, f"{fmt.chunks}.embedding",
                            f"unknown index schema: embedding is {chunk_columns['embedding'] or 'untyped'}, "
                            f"expected TEXT (2026.2.22, 2026.8.1) or BLOB (2026.9.6)")
        elif fmt is LEGACY and chunk_columns["embedding"] != "TEXT":
            raise DataError(self.path, None, "chunks.embedding", "unknown index schema: the 2026.2.22 format stores "
                                                                  "a TEXT embedding, this file a BLOB")
        return fmt

    def _schema_meta(self) -> tuple[str | None, int | None]:
        if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_meta'").fetchone():
            return None, None
        # the database's own row is meta_key 'primary' (2026.9.6 reads it so); other rows record migrations
        # (2026.9.6's doctor adds historical-transcript-directives-v1 to an upgraded 2026.8.1 database)
        row = self.conn.execute("SELECT app_version, schema_version FROM schema_meta "
                                "ORDER BY meta_key != 'primary', meta_key LIMIT 1") \
            .fetchone() if {"app_version", "schema_version"} <= set(_columns(self.conn, "schema_meta")) else None
        return (row[0], row[1]) if row else (None, None)

    @property
    def release(self) -> str:
        """The release whose format the file has: the writer's own version when the file records it."""
        return self.app_version or self.format.release

    def describe(self) -> str:
        writer = f"written by OpenClaw {self.app_version} (schema {self.schema_version})" if self.app_version else \
            f"the format of OpenClaw {self.format.release}"
        return f"{self.path}: {writer}"

    def _meta(self) -> IndexMeta:
        row = self.conn.execute(f"SELECT value FROM {self.format.meta} WHERE key = ?", (META_KEY,)).fetchone()
        raw: dict[str, Any] = {}
        if row is not None:
            try:
                raw = json.loads(row[0])
            except (TypeError, ValueError):  # not JSON, not text, or bytes that are not UTF-8
                raise DataError(self.path, None, f"{self.format.meta}.{META_KEY}",
                                "is not JSON; let OpenClaw rebuild the index (`openclaw memory index --force`)") from None
            if not isinstance(raw, dict):
                raise DataError(self.path, None, f"{self.format.meta}.{META_KEY}", "must be a JSON object")
        where = f"{self.format.meta}.{META_KEY}"

        def num(k: str) -> int | None:
            value = raw.get(k)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value != int(value) or not 0 <= value <= MAX_META_NUMBER:
                raise DataError(self.path, None, f"{where}.{k}", f"must be a whole number from 0 to {MAX_META_NUMBER:,}, "
                                f"got {shown(value)}; let OpenClaw rebuild the index (`openclaw memory index --force`)")
            return int(value)

        text = lambda k: raw[k] if isinstance(raw.get(k), str) else None  # noqa: E731
        sources = tuple(s for s in raw.get("sources", ["memory"]) if isinstance(s, str)) \
            if isinstance(raw.get("sources", []), list) else ("memory",)
        return IndexMeta(text("provider"), text("model"), text("providerKey"), num("vectorDims"), num("chunkTokens"),
                         num("chunkOverlap"), sources, raw)

    # -- rows ------------------------------------------------------------------------------------------
    def files(self, source: str | None = "memory") -> list[IndexedFile]:
        where, args = ("WHERE source = ?", (source,)) if source else ("", ())
        try:
            rows = self.conn.execute(f"SELECT path, source, hash, mtime, size FROM {self.format.files} {where} "
                                     "ORDER BY path", args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise _database_error(self.path, exc) from None
        out = []
        for p, s, h, m, z in rows:
            mtime, size = _finite(m), _finite(z)
            if not isinstance(p, str) or mtime is None or size is None:
                column = "path" if not isinstance(p, str) else "mtime" if mtime is None else "size"
                raise DataError(self.path, None, f"{self.format.files}.{column}",
                                f"row {shown(p)}: {column} must be " + ("a string" if column == "path" else
                                "a finite number") + f", got {shown({'path': p, 'mtime': m, 'size': z}[column])}; "
                                "let OpenClaw rebuild the index (`openclaw memory index --force`)")
            out.append(IndexedFile(p, s if isinstance(s, str) else str(s), h if isinstance(h, str) else "",
                                   mtime, int(size)))
        return out

    def count(self, source: str | None = "memory") -> int:
        where, args = ("WHERE source = ?", (source,)) if source else ("", ())
        return self.conn.execute(f"SELECT count(*) FROM {self.format.chunks} {where}", args).fetchone()[0]

    def chunks(self, source: str | None = "memory", *, vectors: bool = False
               ) -> Iterator[tuple[IndexChunk, np.ndarray | None]]:
        """Chunks in (path, start_line, end_line, id) order, with their vector when `vectors` (None for a chunk
        stored without one: an empty embedding, as OpenClaw leaves it when the provider failed)."""
        where, args = ("WHERE source = ?", (source,)) if source else ("", ())
        column = "embedding" if vectors else "NULL"
        query = (f"SELECT id, path, source, start_line, end_line, hash, model, text, {column} FROM {self.format.chunks} "
                 f"{where} ORDER BY path, start_line, end_line, id")
        try:
            for row in self.conn.execute(query, args):
                chunk = self._chunk(row)
                yield chunk, (self.decode(row[8], chunk) if vectors else None)
        except sqlite3.DatabaseError as exc:
            raise _database_error(self.path, exc) from None

    def _chunk(self, row: tuple[Any, ...]) -> IndexChunk:
        """One chunk row, its fields checked: a path and text as strings, lines as whole numbers (a row OpenClaw
        could not have written is a DataError naming the column, never an internal error)."""
        path, text = row[1], row[7]
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        start, end = _finite(row[3]), _finite(row[4])
        problem = ("path", "must be a string") if not isinstance(path, str) else \
            ("text", "must be a string") if not isinstance(text, str) else \
            ("start_line", "must be a whole number >= 0") if start is None or start != int(start) or start < 0 else \
            ("end_line", "must be a whole number >= 0") if end is None or end != int(end) or end < 0 else None
        if problem:
            raise DataError(self.path, None, f"{self.format.chunks}.{problem[0]}",
                            f"chunk {shown(row[0])} ({shown(path)}): {problem[1]}, got {shown(row[{'path': 1, 'text': 7, 'start_line': 3, 'end_line': 4}[problem[0]]])}; "
                            "let OpenClaw rebuild the index (`openclaw memory index --force`)")
        return IndexChunk(str(row[0]), path, str(row[2]), int(start), int(end), str(row[5] or ""), str(row[6] or ""),
                          text)

    def decode(self, raw: Any, chunk: IndexChunk) -> np.ndarray | None:
        """A stored embedding as float32 (the harness's vectors), None when it is empty."""
        if raw is None:
            return None
        if self.format.embedding == "float64":
            if not isinstance(raw, bytes) or len(raw) % 8:
                raise DataError(self.path, None, f"{self.format.chunks}.embedding",
                                f"chunk {chunk.path}:{chunk.start_line}-{chunk.end_line}: not a binary64 vector")
            if not raw:
                return None
            return self._finite_vector(np.frombuffer(raw, dtype="<f8"), chunk)
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        text = raw.strip()
        if text in ("", "[]"):
            return None
        if not (text.startswith("[") and text.endswith("]")):
            raise DataError(self.path, None, f"{self.format.chunks}.embedding",
                            f"chunk {chunk.path}:{chunk.start_line}-{chunk.end_line}: not a JSON array")
        vec = np.fromstring(text[1:-1], dtype=np.float32, sep=",")  # a flat JSON array of numbers, parsed in C
        if vec.size != text.count(",") + 1:
            raise DataError(self.path, None, f"{self.format.chunks}.embedding",
                            f"chunk {chunk.path}:{chunk.start_line}-{chunk.end_line}: not a JSON array of numbers")
        return self._finite_vector(vec, chunk)

    def _finite_vector(self, vec: np.ndarray, chunk: IndexChunk) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            out = vec.astype(np.float32)
        if not np.isfinite(out).all():
            raise DataError(self.path, None, f"{self.format.chunks}.embedding",
                            f"chunk {chunk.path}:{chunk.start_line}-{chunk.end_line}: holds a value that is not a "
                            "finite number (NaN, Infinity or past float32's range); let OpenClaw rebuild the index "
                            "(`openclaw memory index --force`)")
        return out

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "MemoryIndex":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
