"""`http`: relevance scores from a /rerank API: Cohere (v1/v2), Jina, and the OpenAI-style servers that
expose one (vLLM, Infinity: the Cohere/Jina request shape; Hugging Face text-embeddings-inference (TEI):
its own), over the endpoint the HTTP embedder and chat use (harness.stages.http_json: retries, key hygiene).

Request shapes (POST {base_url}{path}):
  cohere, jina, vllm, infinity   {"model", "query", "documents": [str], "top_n": n}
                                 -> {"results": [{"index", "relevance_score"}]} (some servers say "data")
  tei                            {"query", "texts": [str], "raw_scores": false}
                                 -> [{"index", "score"}]
"""
from __future__ import annotations

import json
import math
import urllib.parse
from typing import Annotated, Any, Literal, Sequence

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic_core import ArgsKwargs

from harness.errors import RerankError
from harness.registry import stage
from harness.stages.http_json import (
    JSONPoster,
    RequestFailure,
    check_base_url,
    env_key,
    host_of,
    refuse_key_in_config,
    require_key_variable,
)
from harness.stages.rerankers.base import RERANKERS

USER_AGENT = "harness-reranker/1 (python httpx)"
_DOCUMENTS_APIS = ("cohere", "jina", "vllm", "infinity")
_RESERVED = frozenset({"model", "query", "documents", "texts", "top_n"})


class HTTPRerankError(RequestFailure, RerankError):
    """A rerank request failed (after any retries).  The message names the URL, never the API key."""


class MissingRerankKeyError(RerankError, ValueError):
    """api_key_env names a variable that is not set: a configuration error."""


@RERANKERS.register("http")
@stage(config=ConfigDict(hide_input_in_errors=True))  # a value given here may be a credential
class HTTPReranker:
    """Relevance scores from a /rerank HTTP API: Cohere, Jina, vLLM, Infinity (one request shape) or TEI.

    Every text of a request is scored (top_n = the number of texts); a response must give each index
    once with a finite score.  Failures as the `openai-compatible` embedder's: 408, 429, 5xx, connection
    errors and timeouts retried with exponential backoff (Retry-After honoured), bounded by max_retries
    and max_retry_time; other statuses fail at once; redirects refused; the key read from api_key_env
    when a request is sent and never written anywhere."""

    base_url: str
    """the API root, e.g. https://api.jina.ai/v1 or http://127.0.0.1:8080 (requests go to {base_url}{path})"""
    api: Literal["cohere", "jina", "vllm", "infinity", "tei"] = "cohere"
    """request/response shape: "cohere", "jina", "vllm", "infinity" (documents, results) or "tei" (texts)"""
    model: Annotated[str, Field(min_length=1)] | None = None
    """the model name sent with each request (required by Cohere and Jina; TEI takes none)"""
    path: str = "/rerank"
    """appended to base_url"""
    api_key_env: str | None = Field(None, min_length=1)
    """name of the environment variable holding the key; None: no Authorization header"""
    params: dict[str, Any] | None = None
    """extra JSON fields of each request, e.g. {truncate = true} for TEI, {return_documents = false}"""
    batch_size: int = Field(32, ge=1)
    """texts per request"""
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

    @model_validator(mode="before")
    @classmethod
    def _no_key_in_config(cls, data: Any) -> Any:
        refuse_key_in_config(data.kwargs if isinstance(data, ArgsKwargs) else data)
        return data

    @field_validator("api_key_env")
    @classmethod
    def _key_is_set(cls, api_key_env: str | None) -> str | None:
        return require_key_variable(api_key_env, MissingRerankKeyError)

    def __post_init__(self) -> None:
        check_base_url(self.base_url, self._redact)
        if not self.path.startswith("/"):
            raise ValueError(f"path must start with '/', got {self.path!r}")
        if self.api in ("cohere", "jina") and self.model is None:
            raise ValueError(f"api {self.api!r} needs a model name (e.g. model = \"jina-reranker-v2-base-multilingual\")")
        if self.params is not None:
            reserved = sorted(_RESERVED & self.params.keys())
            if reserved:
                raise ValueError(f"params must not set {reserved}: the reranker sends them itself")
            try:
                json.dumps(self.params)
            except TypeError as exc:
                raise ValueError(f"params must be JSON-serialisable: {exc}") from None
        self.stats = {"requests": 0, "retries": 0, "texts": 0}
        self._poster = JSONPoster.for_stage(
            self, self.url, fail=self._failure, user_agent=USER_AGENT, stats=self.stats,
            missing_key=lambda message: MissingRerankKeyError(f"reranker 'http': {message}"))

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + self.path

    @property
    def model_id(self) -> str:
        """api + host + path + model + extra fields: what decides the scores.  Never the key."""
        base_path = urllib.parse.urlsplit(self.base_url).path.rstrip("/")
        extra = json.dumps(self.params, sort_keys=True, ensure_ascii=False) if self.params else ""
        return f"rerank-{self.api}:{host_of(self.base_url)}{base_path}{self.path}/{self.model or 'default'}{extra}"

    def _redact(self, text: str) -> str:
        key = env_key(self.api_key_env)
        return text.replace(key, "***") if key else text

    def _failure(self, message: str, status: int | None, attempts: int) -> HTTPRerankError:
        return HTTPRerankError(message, url=self.url, status=status, attempts=attempts)

    def close(self) -> None:
        self._poster.close()

    def payload(self, query: str, texts: list[str]) -> dict[str, Any]:
        """The request body for one batch."""
        if self.api == "tei":
            body: dict[str, Any] = {"query": query, "texts": texts, "raw_scores": False}
        else:
            body = {"query": query, "documents": texts, "top_n": len(texts)}
            if self.model is not None:
                body["model"] = self.model
        return {**(self.params or {}), **body}

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        texts = list(texts)
        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            out.extend(self.scores(self._poster.post(self.payload(query, batch)), len(batch)))
            self.stats["texts"] += len(batch)
        return out

    def scores(self, doc: Any, expected: int) -> list[float]:
        """A response -> one score per text in request order; anything else is an error naming the URL."""
        items = doc
        if isinstance(doc, dict):
            items = doc.get("results", doc.get("data"))
        if not isinstance(items, list):
            error = doc.get("error") or doc.get("message") if isinstance(doc, dict) else None
            raise self._poster.fail("response has no 'results' list" + (f": {error}" if error else ""))
        found: dict[int, float] = {}
        for i, item in enumerate(items):
            index = item.get("index") if isinstance(item, dict) else None
            score = None
            if isinstance(item, dict):
                score = item.get("relevance_score", item.get("score"))
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected:
                raise self._poster.fail(f"results[{i}].index is not an index of the {expected} texts sent ({index!r})")
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise self._poster.fail(f"results[{i}] has no finite relevance_score / score ({score!r})")
            if index in found:
                raise self._poster.fail(f"results name text {index} twice")
            found[index] = float(score)
        if len(found) != expected:
            raise self._poster.fail(f"sent {expected} texts, got scores for {len(found)} (top_n is set to all of them)")
        return [found[i] for i in range(expected)]
