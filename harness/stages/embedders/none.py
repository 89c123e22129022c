"""No embedding provider: what an OpenClaw user without one gets (its FTS-only mode)."""
from __future__ import annotations

from typing import Callable, ClassVar, Sequence

import numpy as np

from harness.registry import stage
from harness.stages.embedders.base import (
    EMBEDDERS,
    NO_VECTORS_MODEL_ID,
    Role,
    check_role,
)


@EMBEDDERS.register("none")
@stage
class NoEmbedder:
    """No embedding provider.  Vectors have no components (dim 0), so the pipeline builds no vector index
    and the vector leg is always empty; pair it with a fusion that reads the lexical leg alone
    (`keyword-only`, OpenClaw's FTS-only mode)."""

    model_id: ClassVar[str] = NO_VECTORS_MODEL_ID
    dim: ClassVar[int] = 0
    batch_size: ClassVar[int] = 1024
    max_tokens: ClassVar[int | None] = None
    token_count: ClassVar[Callable[[str], int] | None] = None

    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        check_role(role)
        return np.zeros((len(texts), 0), dtype=np.float32)
