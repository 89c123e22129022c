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
The quantised backends are approximate; their recall@10 against exact search is measured in
harness.studies.scale.

Modules: base (VECTOR_BACKENDS, the VectorIndex protocol, unit_rows, top_k_exact), sqlite_vec,
numpy_index.
"""
from harness.stages.vector.base import (
    VECTOR_BACKENDS,
    Hits,
    VectorIndex,
    checked_vectors,
    top_k_exact,
    unit_rows,
)
from harness.stages.vector.numpy_index import NumpyColumnMajorIndex, NumpyIndex
from harness.stages.vector.sqlite_vec import (
    QUANTIZERS,
    SqliteVecBitIndex,
    SqliteVecIndex,
    SqliteVecInt8Index,
    SqliteVecL2Index,
    SqliteVecQuantizedIndex,
)

__all__ = ["VECTOR_BACKENDS", "Hits", "VectorIndex", "checked_vectors", "top_k_exact", "unit_rows",
           "NumpyColumnMajorIndex", "NumpyIndex", "QUANTIZERS", "SqliteVecBitIndex", "SqliteVecIndex",
           "SqliteVecInt8Index", "SqliteVecL2Index", "SqliteVecQuantizedIndex"]
