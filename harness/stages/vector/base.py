"""The vector interface: the VectorIndex protocol and the helpers the backends share (input checks,
unit rows, the exact top k of a similarity array)."""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from harness.ranking import top_k
from harness.registry import Registry

VECTOR_BACKENDS = Registry("vector backend", table="vector", group="harness.vector",
                           builtins="harness.stages.vector", runtime=("dim", "conn"))

Hits = list[tuple[str, float]]


@runtime_checkable
class VectorIndex(Protocol):
    """A vector backend: (chunk id, cosine similarity) best first, ties broken by chunk id.  Built with
    the embedder's dimension (and the run's SQLite connection, which only sqlite-vec backends use)."""

    exact: bool  # search returns the exact top k (False: an approximate scan, e.g. quantised)
    uses_blas: bool  # its scan runs in BLAS, multi-threaded unless limited (the scale study times both)

    @property
    def scan_bytes_per_vector(self) -> float:
        """Bytes a query's scan reads per stored vector."""
        ...

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None: ...

    def search(self, query: np.ndarray, k: int) -> Hits: ...


def checked_vectors(ids: Sequence[str], vectors: np.ndarray, dim: int) -> np.ndarray:
    """`vectors` as a contiguous float32 (len(ids) x dim) matrix, or a ValueError naming the shapes."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != dim or len(ids) != len(vectors):
        raise ValueError(f"expected {len(ids)} vectors of dim {dim}, got shape {vectors.shape}")
    return vectors


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (float32); an all-zero row stays zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms == 0, 1, norms), dtype=np.float32)


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
    return top_k([(ids[i], float(sims[i])) for i in top], k)


class NoVectorIndex:
    """The vector index of a run without an embedding provider (embedder `none`): holds nothing, finds
    nothing.  Not a registered backend: the pipeline uses it whatever [vector] says."""

    exact = True
    uses_blas = False
    scan_bytes_per_vector = 0.0

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        pass

    def search(self, query: np.ndarray | None, k: int) -> Hits:
        return []
