"""Exact brute force in numpy: the reference the sqlite-vec legs are compared with."""
from __future__ import annotations

from typing import Annotated, Any, ClassVar, Sequence

import numpy as np
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from harness.registry import stage
from harness.stages.vector.base import (
    VECTOR_BACKENDS,
    Hits,
    checked_vectors,
    top_k_exact,
    unit_rows,
)


@VECTOR_BACKENDS.register("numpy")
@stage
class NumpyIndex:
    """Exact brute force, row-major matrix (n x dim) @ query."""

    dim: SkipJsonSchema[Annotated[int, Field(ge=1)]]
    """the embedder's dimension (from the pipeline)"""
    conn: SkipJsonSchema[Any] = None
    """the run's SQLite connection: unused, the vectors are kept in memory"""

    exact: ClassVar[bool] = True
    uses_blas: ClassVar[bool] = True  # matrix @ query runs in BLAS, multi-threaded unless limited

    def __post_init__(self) -> None:
        self.ids: list[str] = []
        self.matrix: np.ndarray | None = None

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


@VECTOR_BACKENDS.register("numpy-colmajor")
@stage
class NumpyColumnMajorIndex:
    """Exact brute force over a column-major (dim x n) float32 matrix: `query @ columns` is one BLAS
    gemv that streams the matrix once in memory order; the row-major `matrix @ query` of NumpyIndex
    measured 1.3-1.5x slower at 100k x 384 with this OpenBLAS on 2 threads (2x on one thread).
    Same scores up to float rounding; peak memory while building is two copies of the vectors."""

    dim: SkipJsonSchema[Annotated[int, Field(ge=1)]]
    """the embedder's dimension (from the pipeline)"""
    conn: SkipJsonSchema[Any] = None
    """the run's SQLite connection: unused, the vectors are kept in memory"""

    exact: ClassVar[bool] = True
    uses_blas: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.ids: list[str] = []
        self._blocks: list[np.ndarray] = []
        self._columns: np.ndarray | None = None

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        vectors = unit_rows(checked_vectors(ids, vectors, self.dim))
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
