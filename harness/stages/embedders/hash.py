"""A deterministic stand-in embedder for fast unit tests."""
from __future__ import annotations

import hashlib
from typing import Callable, ClassVar, Sequence

import numpy as np
from pydantic import Field

from harness.registry import stage
from harness.stages.embedders.base import EMBEDDERS, Role


@EMBEDDERS.register("hash")
@stage
class HashEmbedder:
    """Deterministic hashed character uni+bigrams.  For fast unit tests only, never for reported figures."""

    dim: int = Field(384, ge=1)
    """vector length"""

    model_id: ClassVar[str] = "hash-v1"
    batch_size: ClassVar[int] = 16
    max_tokens: ClassVar[int | None] = None  # no input limit
    token_count: ClassVar[Callable[[str], int] | None] = None

    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            chars = [c for c in text.lower() if not c.isspace()]
            grams = chars + [a + b for a, b in zip(chars, chars[1:])]
            for g in grams:
                h = int.from_bytes(hashlib.blake2b(g.encode("utf-8"), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 63) else -1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out
