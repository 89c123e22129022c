"""Vector leg: nearest chunks by cosine similarity.  Returns (chunk id, cosine similarity), best first,
ties broken by chunk id.

Backends (VECTOR_BACKENDS):
  sqlite-vec       vec0 float table, distance_metric=cosine; score = 1 - cosine distance
  sqlite-vec-l2    vec0 float table, distance_metric=l2, over unit vectors (both sides normalised on the
                   way in); for unit vectors |a - b|^2 = 2 - 2 cos(a, b), so score = 1 - d^2 / 2
  sqlite-vec-int8  vec0 int8 table (vec_quantize_int8 'unit') scanned for k x oversample candidates, which
                   are re-scored with their float vectors (vec_distance_cosine) from a rowid table
  sqlite-vec-bit   the same with a bit table (vec_quantize_binary, hamming distance)
  numpy            exact brute force, row-major matrix (n x dim) @ query
  numpy-colmajor   exact brute force with the matrix stored column-major (dim x n): query @ matrix is a
                   BLAS gemv over one contiguous stream, the fastest exact scan we measured here
The quantised backends are approximate; their recall@10 against exact search is measured in harness.scale.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Protocol, Sequence

import apsw
import numpy as np

from harness.db import connect
from harness.registry import Registry

VECTOR_BACKENDS = Registry("vector backend", table="vector", group="harness.vector", builtins="harness.stages.vector", runtime=("dim", "conn"))

Hits = list[tuple[str, float]]


class VectorIndex(Protocol):
    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None: ...
    def search(self, query: np.ndarray, k: int) -> Hits: ...


def _checked(ids: Sequence[str], vectors: np.ndarray, dim: int) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != dim or len(ids) != len(vectors):
        raise ValueError(f"expected {len(ids)} vectors of dim {dim}, got shape {vectors.shape}")
    return vectors


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (float32); an all-zero row stays zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms == 0, 1, norms), dtype=np.float32)


def rank_hits(hits: Hits, k: int) -> Hits:
    """Best first, ties by chunk id, at most k."""
    return sorted(hits, key=lambda h: (-h[1], h[0]))[:k]


_BLOCK = 64  # block maxima bound the k-th largest similarity before the exact selection


def top_k_exact(sims: np.ndarray, ids: Sequence[str], k: int) -> Hits:
    """Top k of a full similarity array; every row tied with the k-th is considered, so ties break by id.

    On large arrays the k-th largest of the block maxima (a lower bound of the k-th largest value: those
    k maxima are k distinct rows) first cuts the array to the few rows that can reach the top k; the
    selection on them is exact, so the result is the same as partitioning the whole array, ~3x faster."""
    k = min(k, len(ids))
    if k <= 0:
        return []
    rows = np.arange(len(sims))
    blocks = len(sims) // _BLOCK
    if blocks >= 4 * k:
        maxima = sims[: blocks * _BLOCK].reshape(blocks, _BLOCK).max(axis=1)
        bound = np.partition(maxima, blocks - k)[blocks - k]
        rows = np.flatnonzero(sims >= bound)
    values = sims[rows]
    kth = np.partition(values, len(values) - k)[len(values) - k]
    top = rows[values >= kth]
    return rank_hits([(ids[i], float(sims[i])) for i in top], k)


# ---------------------------------------------------------------------------------------------
# sqlite-vec
# ---------------------------------------------------------------------------------------------


# vec0's distance metric -> (score from the distance, whether vectors are normalised first).
# cosine: score = 1 - cosine distance.  l2: vec0 returns the Euclidean distance d (not squared); for unit
# vectors d^2 = 2 - 2 cos, so 1 - d^2 / 2 is the cosine similarity again (up to float rounding).
FLOAT_METRICS = {
    "cosine": (lambda d: 1.0 - d, False),
    "l2": (lambda d: 1.0 - d * d / 2.0, True),
}


@dataclass
class SqliteVecIndex:
    """A real sqlite-vec vec0 float table; the score is the cosine similarity whichever `metric`
    ("cosine", what OpenClaw uses, or "l2" on normalised vectors) the table was built with."""

    exact: ClassVar[bool] = True
    dim: int
    conn: apsw.Connection | None = None
    ids: list[str] = field(default_factory=list)
    metric: str = "cosine"

    @property
    def scan_bytes_per_vector(self) -> int:
        return 4 * self.dim

    def __post_init__(self) -> None:
        if self.metric not in FLOAT_METRICS:
            raise ValueError(f"metric must be one of {sorted(FLOAT_METRICS)}, got {self.metric!r}")
        self._to_score, self._normalise = FLOAT_METRICS[self.metric]
        self.table = "chunks_vec" if self.metric == "cosine" else f"chunks_vec_{self.metric}"
        if self.conn is None:
            self.conn = connect()
        self.conn.execute(f"CREATE VIRTUAL TABLE {self.table} USING "
                          f"vec0(embedding float[{int(self.dim)}] distance_metric={self.metric})")

    def _prepared(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        return unit_rows(vectors) if self._normalise else vectors

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        vectors = self._prepared(_checked(ids, vectors, self.dim))
        start = len(self.ids)
        self.ids.extend(ids)
        with self.conn:
            self.conn.executemany(f"INSERT INTO {self.table}(rowid, embedding) VALUES (?, ?)",
                                  ((start + i + 1, vec.tobytes()) for i, vec in enumerate(vectors)))

    def search(self, query: np.ndarray, k: int) -> Hits:
        if k <= 0 or not self.ids:
            return []
        rows = self.conn.execute(
            f"SELECT rowid, distance FROM {self.table} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (self._prepared(query).tobytes(), min(k, len(self.ids))),
        ).fetchall()
        return rank_hits([(self.ids[rowid - 1], self._to_score(float(d))) for rowid, d in rows], k)


@VECTOR_BACKENDS.register("sqlite-vec")
def _sqlite_vec(dim: int, conn: apsw.Connection | None = None) -> SqliteVecIndex:
    return SqliteVecIndex(dim=dim, conn=conn)


@VECTOR_BACKENDS.register("sqlite-vec-l2")
def _sqlite_vec_l2(dim: int, conn: apsw.Connection | None = None) -> SqliteVecIndex:
    return SqliteVecIndex(dim=dim, conn=conn, metric="l2")


# How each quantiser stores a vector and which distance its coarse scan uses.
QUANTIZERS = {
    # int8: each component of a unit vector, in [-1, 1], mapped linearly onto -128..127 by sqlite-vec.
    # One scale for every vector, so L2 between the int8 vectors ranks like L2 (hence cosine) between
    # the unit vectors; sqlite-vec's int8 L2 scan measured ~2x faster than its int8 cosine scan.
    "int8": ("int8", "vec_quantize_int8(?, 'unit')", "distance_metric=l2"),
    # bit: the sign of each component; vec0 bit columns are compared by hamming distance
    "bit": ("bit", "vec_quantize_binary(?)", ""),
}
DEFAULT_OVERSAMPLE = {"int8": 4, "bit": 16}


@dataclass
class SqliteVecQuantizedIndex:
    """sqlite-vec with a quantised coarse scan and float re-scoring, all in SQLite.

    A query scans the quantised vec0 table for k x `oversample` candidates, then computes the exact
    cosine distance of each candidate from its float32 vector (kept in a rowid table) and returns the
    best k by score = 1 - cosine distance, ties by id.  Results equal exact search whenever the true
    top k are among the candidates; `oversample` trades latency for that recall (measured in
    harness.scale: DEFAULT_OVERSAMPLE gives recall@10 >= 0.9 on the synthetic corpus).
    """

    exact: ClassVar[bool] = False
    dim: int
    quantizer: str = "int8"
    oversample: int | None = None
    conn: apsw.Connection | None = None
    ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.quantizer not in QUANTIZERS:
            raise ValueError(f"quantizer must be one of {sorted(QUANTIZERS)}, got {self.quantizer!r}")
        if self.oversample is None:
            self.oversample = DEFAULT_OVERSAMPLE[self.quantizer]
        if int(self.oversample) < 1:
            raise ValueError(f"oversample must be >= 1, got {self.oversample!r}")
        self.oversample = int(self.oversample)
        if self.conn is None:
            self.conn = connect()
        element, self._quantize_sql, metric = QUANTIZERS[self.quantizer]
        self.table = f"chunks_vec_{self.quantizer}"
        self.float_table = f"{self.table}_f32"
        self.conn.execute(
            f"CREATE VIRTUAL TABLE {self.table} USING vec0(embedding {element}[{int(self.dim)}] {metric})")
        self.conn.execute(f"CREATE TABLE {self.float_table}(rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")

    @property
    def scan_bytes_per_vector(self) -> float:
        """Bytes the coarse scan reads per vector (the float re-scoring reads only the candidates)."""
        return self.dim if self.quantizer == "int8" else self.dim / 8

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        # normalised so the int8 'unit' range [-1, 1] holds every component (bit only needs the signs)
        vectors = unit_rows(_checked(ids, vectors, self.dim))
        start = len(self.ids)
        self.ids.extend(ids)
        def rows():  # generated twice rather than held: n x dim x 4 bytes fewer at the peak
            return ((start + i + 1, vec.tobytes()) for i, vec in enumerate(vectors))

        with self.conn:
            self.conn.executemany(
                f"INSERT INTO {self.table}(rowid, embedding) VALUES (?, {self._quantize_sql})", rows())
            self.conn.executemany(f"INSERT INTO {self.float_table}(rowid, embedding) VALUES (?, ?)", rows())

    def search(self, query: np.ndarray, k: int) -> Hits:
        if k <= 0 or not self.ids:
            return []
        q = unit_rows(query).tobytes()
        candidates = min(k * self.oversample, len(self.ids))
        rows = self.conn.execute(
            f"SELECT c.rowid, vec_distance_cosine(f.embedding, ?) FROM "
            f"(SELECT rowid FROM {self.table} WHERE embedding MATCH {self._quantize_sql} AND k = ?) AS c "
            f"JOIN {self.float_table} AS f ON f.rowid = c.rowid",
            (q, q, candidates),
        ).fetchall()
        return rank_hits([(self.ids[rowid - 1], 1.0 - float(d)) for rowid, d in rows], k)


@VECTOR_BACKENDS.register("sqlite-vec-int8")
def _sqlite_vec_int8(dim: int, conn: apsw.Connection | None = None,
                     oversample: int = DEFAULT_OVERSAMPLE["int8"]) -> SqliteVecQuantizedIndex:
    return SqliteVecQuantizedIndex(dim=dim, quantizer="int8", oversample=oversample, conn=conn)


@VECTOR_BACKENDS.register("sqlite-vec-bit")
def _sqlite_vec_bit(dim: int, conn: apsw.Connection | None = None,
                    oversample: int = DEFAULT_OVERSAMPLE["bit"]) -> SqliteVecQuantizedIndex:
    return SqliteVecQuantizedIndex(dim=dim, quantizer="bit", oversample=oversample, conn=conn)


# ---------------------------------------------------------------------------------------------
# numpy
# ---------------------------------------------------------------------------------------------


@dataclass
class NumpyIndex:
    """Exact brute force in numpy (the reference the sqlite-vec leg is compared with)."""

    exact: ClassVar[bool] = True
    uses_blas: ClassVar[bool] = True  # matrix @ query runs in BLAS, multi-threaded unless limited
    dim: int
    ids: list[str] = field(default_factory=list)
    matrix: np.ndarray | None = None

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0, 1, norms)
        self.ids.extend(ids)
        self.matrix = vectors if self.matrix is None else np.vstack([self.matrix, vectors])

    @property
    def scan_bytes_per_vector(self) -> int:
        return 4 * self.dim

    def search(self, query: np.ndarray, k: int) -> Hits:
        if k <= 0 or self.matrix is None:
            return []
        q = np.asarray(query, dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        sims = self.matrix @ q
        return top_k_exact(sims, self.ids, k)


@VECTOR_BACKENDS.register("numpy")
def _numpy(dim: int, conn: apsw.Connection | None = None) -> NumpyIndex:
    return NumpyIndex(dim=dim)


@dataclass
class NumpyColumnMajorIndex:
    """Exact brute force over a column-major (dim x n) float32 matrix: `query @ columns` is one BLAS
    gemv that streams the matrix once in memory order; the row-major `matrix @ query` of NumpyIndex
    measured 1.3-1.5x slower at 100k x 384 with this OpenBLAS on 2 threads (2x on one thread).
    Same scores up to float rounding; peak memory while building is two copies of the vectors."""

    exact: ClassVar[bool] = True
    uses_blas: ClassVar[bool] = True
    dim: int
    ids: list[str] = field(default_factory=list)
    _blocks: list[np.ndarray] = field(default_factory=list, repr=False)
    _columns: np.ndarray | None = field(default=None, repr=False)

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        vectors = unit_rows(_checked(ids, vectors, self.dim))
        self.ids.extend(ids)
        self._blocks.append(vectors)
        self._columns = None  # transposed once, on the next search

    @property
    def scan_bytes_per_vector(self) -> int:
        return 4 * self.dim

    @property
    def columns(self) -> np.ndarray | None:
        if self._columns is None and self._blocks:
            rows = self._blocks[0] if len(self._blocks) == 1 else np.concatenate(self._blocks)
            self._blocks = []
            self._columns = np.ascontiguousarray(rows.T)
            self._blocks = [self._columns.T]  # a view: later adds concatenate onto it
        return self._columns

    def search(self, query: np.ndarray, k: int) -> Hits:
        columns = self.columns
        if k <= 0 or columns is None:
            return []
        sims = unit_rows(query) @ columns
        return top_k_exact(sims, self.ids, k)


@VECTOR_BACKENDS.register("numpy-colmajor")
def _numpy_colmajor(dim: int, conn: apsw.Connection | None = None) -> NumpyColumnMajorIndex:
    return NumpyColumnMajorIndex(dim=dim)
