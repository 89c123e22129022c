"""sqlite-vec vec0 tables: float (cosine or l2 over unit vectors, what OpenClaw uses) and quantised
coarse scans (int8, bit) re-scored with the float vectors, all in SQLite."""
from __future__ import annotations

import math
from typing import Annotated, ClassVar, Sequence

import apsw
import numpy as np
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from harness.db import connect
from harness.ranking import top_k
from harness.registry import stage
from harness.stages.vector.base import VECTOR_BACKENDS, Hits, checked_vectors, unit_rows

# vec0's distance metric -> (score from the distance, whether vectors are normalised first).
# cosine: score = 1 - cosine distance.  l2: vec0 returns the Euclidean distance d (not squared); for unit
# vectors d^2 = 2 - 2 cos, so 1 - d^2 / 2 is the cosine similarity again (up to float rounding).
FLOAT_METRICS = {
    "cosine": (lambda d: 1.0 - d, False),
    "l2": (lambda d: 1.0 - d * d / 2.0, True),
}


def _distance(d: float | None) -> float:
    return math.inf if d is None else d  # NULL: a zero vector's cosine distance, after every real one


VEC0_MAX_K = 4096  # sqlite-vec refuses a KNN query for more rows ("k value in knn query too large")


def knn_rows(conn: apsw.Connection, sql: str, args: tuple, k: int, n: int) -> list[tuple[int, float]]:
    """The (rowid, distance) rows of a vec0 KNN query `sql` (its last parameter is vec0's k) for the k
    nearest, plus every row tied with the k-th: vec0 orders equal distances as it likes, so a cut at
    exactly k would leave the ties at the cut to it instead of to (score desc, id).  Asks for one row
    more than k and doubles while the last row still ties the k-th, up to vec0's own limit on k (4,096:
    past it, in a memory of thousands of identical chunks, the ties beyond are vec0's to order)."""
    want = min(k + 1, n, VEC0_MAX_K)
    while True:
        rows = conn.execute(sql, (*args, want)).fetchall()
        if want >= min(n, VEC0_MAX_K) or len(rows) <= k or _distance(rows[-1][1]) > _distance(rows[k - 1][1]):
            return rows
        want = min(n, 2 * want, VEC0_MAX_K)


@VECTOR_BACKENDS.register("sqlite-vec")
@stage
class SqliteVecIndex:
    """A real sqlite-vec vec0 float table with distance_metric=cosine (what OpenClaw uses); the score
    is 1 - cosine distance."""

    dim: SkipJsonSchema[Annotated[int, Field(ge=1)]]
    """the embedder's dimension (from the pipeline)"""
    conn: SkipJsonSchema[apsw.Connection | None] = None
    """the run's SQLite connection with sqlite-vec loaded (from the pipeline); None: a new one"""

    metric: ClassVar[str] = "cosine"
    exact: ClassVar[bool] = True
    uses_blas: ClassVar[bool] = False

    @property
    def scan_bytes_per_vector(self) -> int:
        return 4 * self.dim

    def __post_init__(self) -> None:
        self.ids: list[str] = []
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
        vectors = self._prepared(checked_vectors(ids, vectors, self.dim))
        start = len(self.ids)
        self.ids.extend(ids)
        with self.conn:
            self.conn.executemany(f"INSERT INTO {self.table}(rowid, embedding) VALUES (?, ?)",
                                  ((start + i + 1, vec.tobytes()) for i, vec in enumerate(vectors)))

    def search(self, query: np.ndarray, k: int) -> Hits:
        if k <= 0 or not self.ids:
            return []
        rows = knn_rows(self.conn, f"SELECT rowid, distance FROM {self.table} WHERE embedding MATCH ? AND k = ? "
                                   "ORDER BY distance", (self._prepared(query).tobytes(),), k, len(self.ids))
        # a zero vector (an embedder's answer for blank text) has no cosine distance: sqlite-vec gives NULL;
        # it scores 0, as the numpy backends' dot product with it does
        return top_k([(self.ids[rowid - 1], 0.0 if d is None else self._to_score(float(d))) for rowid, d in rows], k)


@VECTOR_BACKENDS.register("sqlite-vec-l2")
@stage
class SqliteVecL2Index(SqliteVecIndex):
    """A vec0 float table with distance_metric=l2 over unit vectors (both sides normalised on the way
    in); for unit vectors |a - b|^2 = 2 - 2 cos(a, b), so the score 1 - d^2 / 2 is the cosine again."""

    metric: ClassVar[str] = "l2"


# How each quantiser stores a vector and which distance its coarse scan uses.
QUANTIZERS = {
    # int8: each component of a unit vector, in [-1, 1], mapped linearly onto -128..127 by sqlite-vec.
    # One scale for every vector, so L2 between the int8 vectors ranks like L2 (hence cosine) between
    # the unit vectors; sqlite-vec's int8 L2 scan measured ~2x faster than its int8 cosine scan.
    "int8": ("int8", "vec_quantize_int8(?, 'unit')", "distance_metric=l2"),
    # bit: the sign of each component; vec0 bit columns are compared by hamming distance
    "bit": ("bit", "vec_quantize_binary(?)", ""),
}


@stage
class SqliteVecQuantizedIndex:
    """sqlite-vec with a quantised coarse scan and float re-scoring, all in SQLite.

    A query scans the quantised vec0 table for k x `oversample` candidates, then computes the exact
    cosine distance of each candidate from its float32 vector (kept in a rowid table) and returns the
    best k by score = 1 - cosine distance, ties by id.  Results equal exact search whenever the true
    top k are among the candidates; `oversample` trades latency for that recall (measured in
    harness.studies.scale: the defaults give recall@10 >= 0.9 on the synthetic corpus).
    """

    dim: SkipJsonSchema[Annotated[int, Field(ge=1)]]
    """the embedder's dimension (from the pipeline)"""
    conn: SkipJsonSchema[apsw.Connection | None] = None
    """the run's SQLite connection with sqlite-vec loaded (from the pipeline); None: a new one"""

    quantizer: ClassVar[str]  # a key of QUANTIZERS; each subclass also declares `oversample`
    exact: ClassVar[bool] = False
    uses_blas: ClassVar[bool] = False

    def __post_init__(self) -> None:
        self.ids: list[str] = []
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
        vectors = unit_rows(checked_vectors(ids, vectors, self.dim))
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
        # the coarse candidates, with every row tied at their cut (quantised distances tie often)
        coarse = knn_rows(self.conn, f"SELECT rowid, distance FROM {self.table} WHERE embedding MATCH "
                                     f"{self._quantize_sql} AND k = ? ORDER BY distance",
                          (q,), min(k * self.oversample, len(self.ids)), len(self.ids))
        rowids = [rowid for rowid, _ in coarse]
        rows = []
        for start in range(0, len(rowids), 500):  # stay under SQLite's variable limit
            part = rowids[start:start + 500]
            rows += self.conn.execute(
                f"SELECT rowid, vec_distance_cosine(embedding, ?) FROM {self.float_table} "
                f"WHERE rowid IN ({','.join('?' * len(part))})", (q, *part)).fetchall()
        return top_k([(self.ids[rowid - 1], 1.0 - float(d)) for rowid, d in rows], k)


@VECTOR_BACKENDS.register("sqlite-vec-int8")
@stage
class SqliteVecInt8Index(SqliteVecQuantizedIndex):
    """vec0 int8 table (vec_quantize_int8 'unit', L2 scan) for k x oversample candidates, re-scored
    with their float vectors (vec_distance_cosine) from a rowid table."""

    oversample: int = Field(4, ge=1)
    """candidates scanned per result wanted (k x oversample), re-scored exactly"""

    quantizer: ClassVar[str] = "int8"


@VECTOR_BACKENDS.register("sqlite-vec-bit")
@stage
class SqliteVecBitIndex(SqliteVecQuantizedIndex):
    """vec0 bit table (vec_quantize_binary, hamming scan) for k x oversample candidates, re-scored
    with their float vectors from a rowid table."""

    oversample: int = Field(16, ge=1)
    """candidates scanned per result wanted (k x oversample), re-scored exactly"""

    quantizer: ClassVar[str] = "bit"
