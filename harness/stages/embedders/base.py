"""The embedder interface: the Embedder protocol and the roles a text is embedded in."""
from __future__ import annotations

from typing import Callable, Literal, Protocol, Sequence

import numpy as np

from harness.registry import Registry

EMBEDDERS = Registry("embedder", builtins="harness.stages.embedders")

NO_VECTORS_MODEL_ID = "none"  # the model id of the `none` embedder: no vectors, no vector leg

Role = Literal["query", "passage"]
ROLES: tuple[Role, ...] = ("query", "passage")


class Embedder(Protocol):
    """Text -> unit vectors.  Besides `embed`, an embedder states what the pipeline reads of it.
    (Not runtime-checkable on purpose: isinstance() would read `dim`, which a remote embedder may
    have to ask its server for.)"""

    model_id: str  # identifies the vectors in the cache: a different model or version must change it
    dim: int
    batch_size: int  # texts per embed() call the cache makes (each call's vectors are committed at once)
    max_tokens: int | None  # the model's input limit in tokens, longer text is cut; None: not known
    token_count: Callable[[str], int] | None  # the model's own token count of a passage; None: cannot count

    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised; role is "query" or "passage"."""
        ...


def check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}")


def provides_vectors(embedder: object) -> bool:
    """False for the `none` embedder (no embedding provider): the pipeline then builds no vector index."""
    return getattr(embedder, "model_id", None) != NO_VECTORS_MODEL_ID
