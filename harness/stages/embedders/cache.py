"""The persistent embedding cache: vectors by (model id, role, sha256 of the text) in SQLite, and the
wrapper that puts any embedder behind it."""
from __future__ import annotations

import hashlib
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from harness.db import cache_dir, open_cache, retry_busy
from harness.errors import EmbeddingError
from harness.progress import progress_bar
from harness.stages.embedders.base import Embedder, Role, provides_vectors


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_cache_path() -> Path:
    """embeddings.sqlite in the user's cache folder, or in $HARNESS_CACHE_DIR (harness.db.cache_dir)."""
    return cache_dir() / "embeddings.sqlite"


class EmbeddingCache:
    """Vectors by (model id, role, sha256(text)) in SQLite; each put is one transaction.  Safe for
    several processes at once (WAL, a busy timeout, retries on a lock)."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self.conn = open_cache(self.path)  # several runs may share one cache (harness.db)
        retry_busy(self._create, "opening it", self.path)

    def _create(self) -> None:
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, role TEXT NOT NULL, sha256 TEXT NOT NULL,"
            " dim INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, role, sha256)) WITHOUT ROWID"
        )

    def get_many(self, model: str, role: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(shas))
        for start in range(0, len(unique), 500):  # stay under SQLite's variable limit
            part = unique[start:start + 500]
            marks = ",".join("?" * len(part))
            query = f"SELECT sha256, dim, vector FROM vectors WHERE model = ? AND role = ? AND sha256 IN ({marks})"
            rows = retry_busy(lambda: self.conn.execute(query, (model, role, *part)).fetchall(),
                               "reading vectors", self.path)
            for sha, dim, blob in rows:
                found[sha] = np.frombuffer(blob, dtype=np.float32, count=dim)
        return found

    def put_many(self, model: str, role: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [(model, role, sha, int(v.shape[0]), v.tobytes())
                for sha, v in ((sha, np.ascontiguousarray(vec, dtype=np.float32)) for sha, vec in items)]

        def write() -> None:
            with self.conn:  # one transaction: a failed try leaves nothing behind, so it can be repeated
                self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)

        retry_busy(write, f"storing {len(rows)} vectors", self.path)

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self.conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0]


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

    def _compute(self, missing: dict[str, str], role: Role, have: dict[str, np.ndarray]) -> None:
        items = list(missing.items())
        batches = [items[i:i + self.batch_size] for i in range(0, len(items), self.batch_size)]
        show = self.progress and len(items) >= 8
        with progress_bar(f"embedding {role}s ({self.model_id})", len(items)) if show else nullcontext() as bar:
            for batch in batches:
                try:
                    vectors = self.inner.embed([t for _, t in batch], role)
                except Exception as exc:
                    done = sum(1 for s, _ in items if s in have)
                    raise EmbeddingError(
                        f"embedding failed after {done} of {len(items)} new {role} vectors "
                        f"(those are kept in {self.cache.path}; a rerun resumes): {exc}"
                    ) from exc
                self.cache.put_many(self.model_id, role, [(s, v) for (s, _), v in zip(batch, vectors)])
                for (s, _), v in zip(batch, vectors):
                    have[s] = np.asarray(v, dtype=np.float32)
                self.stats["computed"] += len(batch)
                if bar is not None:
                    bar.advance(len(batch))
