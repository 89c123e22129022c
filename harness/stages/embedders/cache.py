"""The persistent embedding cache: vectors by (model id, role, sha256 of the text) in SQLite, and the
wrapper that puts any embedder behind it."""
from __future__ import annotations

import hashlib
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import apsw
import numpy as np

from harness.db import (
    BROKEN,
    UNWRITABLE,
    CacheFullError,
    cache_dir,
    move_aside,
    open_cache_file,
    retry_busy,
)
from harness.errors import EmbeddingError
from harness.progress import progress_bar
from harness.stages.embedders.base import Embedder, Role, provides_vectors


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_cache_path() -> Path:
    """embeddings.sqlite in the user's cache folder, or in $HARNESS_CACHE_DIR (harness.db.cache_dir)."""
    return cache_dir() / "embeddings.sqlite"


VECTORS_TABLE = ("CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, role TEXT NOT NULL, sha256 TEXT NOT NULL,"
                 " dim INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, role, sha256)) WITHOUT ROWID")
VECTORS_COLUMNS = ("model", "role", "sha256", "dim", "vector")
# The embedder's own token count of a passage (the chunk statistics' real tokens), kept beside the vectors:
# counting runs the model's tokenizer, so without it a rerun whose every vector is cached still loads
# the model only to count (~0.4 s of a king78 round).  A count depends on the model and the text only.
TOKEN_COUNTS_TABLE = ("CREATE TABLE IF NOT EXISTS token_counts (model TEXT NOT NULL, sha256 TEXT NOT NULL, "
                      "tokens INTEGER NOT NULL, PRIMARY KEY (model, sha256)) WITHOUT ROWID")
MAX_DIM = 32_768  # longer than any embedding model's vectors (OpenAI's largest: 3,072): a server's error


class EmbeddingCache:
    """Vectors by (model id, role, sha256(text)) in SQLite; each put is one transaction.  Safe for
    several processes at once (WAL, a busy timeout, retries on a lock).

    What a disk can do to it (harness.db.open_cache_file): a broken or truncated file is moved aside and
    a new cache started; a read-only folder is read and not written (`unstored` counts what could not be
    kept); a full disk raises CacheFullError naming the folder.  A stored vector of the wrong length or
    with a NaN is never returned: it is computed again (and replaced), and counted in `malformed`."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self._open()
        self.unstored: dict[str, int] = {}  # model -> vectors computed but not stored (read-only cache)
        self.malformed = 0

    def _open(self) -> None:
        opened = open_cache_file(self.path, table="vectors", create=VECTORS_TABLE, columns=VECTORS_COLUMNS,
                                 what="embedding cache")
        self.conn, self.readonly = opened.conn, opened.readonly
        self._notes = getattr(self, "_notes", []) + opened.notes
        if not self.readonly:
            try:
                retry_busy(lambda: self.conn.execute(TOKEN_COUNTS_TABLE), "opening it", self.path)
            except UNWRITABLE:
                self.readonly = True

    def _rebuild(self, exc: Exception) -> None:
        """The file broke while in use (a truncated page is only found when read): aside, and anew."""
        try:
            self.conn.close()
        except apsw.Error:
            pass
        try:
            moved = move_aside(self.path)
            self._notes.append(f"the embedding cache {self.path} is not a sound database ({exc}): moved aside to "
                               f"{moved.name} and started anew")
        except OSError:
            pass
        self._open()

    def _guarded(self, operation: Callable[[], Any], what: str) -> Any:
        try:
            return retry_busy(operation, what, self.path)
        except BROKEN as exc:
            self._rebuild(exc)
            return retry_busy(operation, what, self.path)

    def notes(self) -> list[str]:
        """What the user should know about the cache this run used (moved aside, read-only, bad rows)."""
        out = list(self._notes)
        if self.malformed:
            out.append(f"{self.malformed} vectors in the embedding cache {self.path} were malformed (wrong length "
                       "or not finite): computed again and replaced")
        for model, n in sorted(self.unstored.items()):
            out.append(f"{n} new {model} vectors were not stored in {self.path} (it cannot be written); they are "
                       "computed again next time")
        return out

    def get_many(self, model: str, role: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(shas))
        for start in range(0, len(unique), 500):  # stay under SQLite's variable limit
            part = unique[start:start + 500]
            marks = ",".join("?" * len(part))
            query = f"SELECT sha256, dim, vector FROM vectors WHERE model = ? AND role = ? AND sha256 IN ({marks})"
            rows = self._guarded(lambda: self.conn.execute(query, (model, role, *part)).fetchall(), "reading vectors")
            for sha, dim, blob in rows:
                vector = _valid_vector(dim, blob)
                if vector is None:
                    self.malformed += 1  # left out: computed again and replaced
                    continue
                found[sha] = vector
        dims = {v.shape[0] for v in found.values()}
        if len(dims) > 1:  # rows of one model must agree: keep the common length, recompute the others
            common = max(dims, key=lambda d: sum(v.shape[0] == d for v in found.values()))
            odd = [s for s, v in found.items() if v.shape[0] != common]
            self.malformed += len(odd)
            for sha in odd:
                del found[sha]
        return found

    def put_many(self, model: str, role: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [(model, role, sha, int(v.shape[0]), v.tobytes())
                for sha, v in ((sha, np.ascontiguousarray(vec, dtype=np.float32)) for sha, vec in items)]
        if self.readonly:
            self.unstored[model] = self.unstored.get(model, 0) + len(rows)
            return

        def write() -> None:
            with self.conn:  # one transaction: a failed try leaves nothing behind, so it can be repeated
                self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)

        try:
            self._guarded(write, f"storing {len(rows)} vectors")
        except apsw.FullError:
            raise CacheFullError(f"{self.path.parent}: no space left on the device for the embedding cache",
                                 self.path.parent) from None
        except UNWRITABLE:  # the folder became read-only (or the file was made so) under the run
            self.readonly = True
            self.unstored[model] = self.unstored.get(model, 0) + len(rows)

    def get_token_count(self, model: str, sha: str) -> int | None:
        """A passage's token count stored earlier, or None (none stored, or a cache without the table)."""
        query = "SELECT tokens FROM token_counts WHERE model = ? AND sha256 = ?"
        try:
            row = self._guarded(lambda: self.conn.execute(query, (model, sha)).fetchone(), "reading token counts")
        except apsw.SQLError:  # a read-only cache written before counts were kept: no such table
            return None
        return row[0] if row is not None and isinstance(row[0], int) and row[0] >= 0 else None

    def put_token_count(self, model: str, sha: str, tokens: int) -> None:
        """Keep a count for the next run; a cache that cannot be written keeps nothing (it is counted again)."""
        if self.readonly:
            return

        def write() -> None:
            with self.conn:
                self.conn.execute("INSERT OR REPLACE INTO token_counts VALUES (?, ?, ?)", (model, sha, tokens))

        try:
            self._guarded(write, "storing a token count")
        except apsw.FullError:
            raise CacheFullError(f"{self.path.parent}: no space left on the device for the embedding cache",
                                 self.path.parent) from None
        except UNWRITABLE:
            self.readonly = True

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self.conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0]


def _valid_vector(dim: Any, blob: Any) -> np.ndarray | None:
    """A stored row as a vector, or None when it cannot be one (a wrong length, NaN, a torn write)."""
    if not isinstance(dim, int) or not 0 < dim <= MAX_DIM or not isinstance(blob, bytes) or len(blob) != 4 * dim:
        return None
    vector = np.frombuffer(blob, dtype=np.float32, count=dim)
    return vector if np.isfinite(vector).all() else None


def check_vectors(vectors: Any, count: int, dim: int | None, source: str) -> np.ndarray:
    """Vectors an embedder returned, checked before anything stores them: `count` rows, one length (the
    expected `dim` when known, at most MAX_DIM), finite.  An EmbeddingError names the embedder."""
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned vectors that are not numbers ({exc}); nothing was stored") from None
    if array.ndim != 2 or array.shape[0] != count:
        raise EmbeddingError(f"{source} returned {array.shape[0] if array.ndim else 0} vectors for {count} texts "
                             f"(shape {array.shape}); nothing was stored")
    if not 0 < array.shape[1] <= MAX_DIM:
        raise EmbeddingError(f"{source} returned {array.shape[1]}-dimensional vectors (at most {MAX_DIM:,} are "
                             "taken); nothing was stored")
    if dim is not None and array.shape[1] != dim:
        raise EmbeddingError(f"{source} returned {array.shape[1]}-dimensional vectors where {dim} were expected "
                             "(earlier vectors of this model, or its `dimensions`); nothing was stored")
    if not np.isfinite(array).all():
        raise EmbeddingError(f"{source} returned vectors with NaN or infinite values; nothing was stored")
    return array


@dataclass
class CachedEmbedder:
    """Wraps an embedder with the persistent cache; embeds only missing texts, in committed batches of
    `batch_size` (build_stages passes the inner embedder's own batch_size)."""

    inner: Embedder
    cache: EmbeddingCache
    batch_size: int = 16
    progress: bool = True
    stats: dict[str, int] = field(default_factory=lambda: {"hits": 0, "computed": 0})
    _seen_dim: int | None = field(default=None, init=False, repr=False)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def max_tokens(self) -> int | None:
        return self.inner.max_tokens

    @property
    def token_count(self) -> Callable[[str], int] | None:
        return self.inner.token_count

    @property
    def cached_token_count(self) -> Callable[[str], int] | None:
        """The inner embedder's count of a passage's tokens, kept in the cache (the chunk statistics and
        the context budget count whole chunks and files, the same ones every run).  A chunker that counts
        candidate cuts uses `token_count`: those are not worth a row each."""
        count = self.inner.token_count
        if count is None:
            return None

        def cached_count(text: str) -> int:
            sha = text_sha256(text)
            tokens = self.cache.get_token_count(self.model_id, sha)
            if tokens is None:
                tokens = int(count(text))
                self.cache.put_token_count(self.model_id, sha, tokens)
            return tokens

        return cached_count

    @property
    def dim(self) -> int:
        # Vectors already returned (possibly all from the cache) fix the dimension, so a fully cached
        # rerun never has to ask a remote embedder (which may be down) what its dimension is.
        if self._seen_dim is not None:
            return self._seen_dim
        return self.inner.dim

    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        if not provides_vectors(self.inner):  # nothing to compute or keep
            return self.inner.embed(texts, role)
        shas = [text_sha256(t) for t in texts]
        have = self.cache.get_many(self.model_id, role, shas)
        missing: dict[str, str] = {}
        for sha, text in zip(shas, texts):
            if sha not in have and sha not in missing:
                missing[sha] = text
        self.stats["hits"] += len(texts) - sum(1 for s in shas if s in missing)
        if missing:
            self._compute(missing, role, have)
        if not shas:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.stack([have[s] for s in shas])
        self._seen_dim = int(out.shape[1])
        return out

    def _expected_dim(self, have: dict[str, np.ndarray]) -> int | None:
        """The length new vectors must have: that of vectors already read or computed, else the embedder's
        own when it states one without asking a server (a remote embedder's `dim` may cost a request)."""
        for vector in have.values():
            return int(vector.shape[0])
        if self._seen_dim is not None:
            return self._seen_dim
        if isinstance(getattr(type(self.inner), "dim", None), property):
            return getattr(self.inner, "dimensions", None)
        return getattr(self.inner, "dim", None)

    def _compute(self, missing: dict[str, str], role: Role, have: dict[str, np.ndarray]) -> None:
        items = list(missing.items())
        batches = [items[i:i + self.batch_size] for i in range(0, len(items), self.batch_size)]
        show = self.progress and len(items) >= 8
        source = f"embedder {self.model_id}"
        with progress_bar(f"embedding {role}s ({self.model_id})", len(items)) if show else nullcontext() as bar:
            for batch in batches:
                done = sum(1 for s, _ in items if s in have)
                try:
                    vectors = self.inner.embed([t for _, t in batch], role)
                except Exception as exc:
                    raise EmbeddingError(
                        f"embedding failed after {done} of {len(items)} new {role} vectors "
                        f"(those are kept in {self.cache.path}; a rerun resumes): {exc}"
                    ) from exc
                # checked before anything is stored: a wrong count, length or a NaN never reaches the cache
                vectors = check_vectors(vectors, len(batch), self._expected_dim(have), source)
                try:
                    self.cache.put_many(self.model_id, role, [(s, v) for (s, _), v in zip(batch, vectors)])
                except CacheFullError as exc:
                    remaining = len(items) - done
                    need = remaining * (4 * vectors.shape[1] + 160)  # a row: the vector, its key, page overhead
                    raise CacheFullError(
                        f"{exc.folder}: no space left on the device for the embedding cache: {remaining:,} more "
                        f"{role} vectors need about {_size(need)} (and as much again while SQLite writes); the "
                        f"{done:,} computed so far are kept in {self.cache.path}. Free that much space there, or "
                        "set HARNESS_CACHE_DIR to a folder with room, and run again", exc.folder) from None
                for (s, _), v in zip(batch, vectors):
                    have[s] = v
                self.stats["computed"] += len(batch)
                if bar is not None:
                    bar.advance(len(batch))


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
