"""The post-processing interface: (hits, SearchContext) -> hits, plus the score a query's top hit must
clear to pass; and the time helpers the decay stages share (reference time, dates of memory files)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import (
    Annotated,
    Any,
    Callable,
    Optional,
    Protocol,
    Sequence,
    runtime_checkable,
)

from pydantic import AfterValidator

from harness.errors import ConfigError
from harness.registry import Registry
from harness.stages.fusion import Hit
from harness.stages.memory_dates import memory_date

POSTPROCESSORS = Registry("postprocess stage", table="postprocess", group="harness.postprocess",
                          builtins="harness.stages.postprocess")

DAY_SECONDS = 86_400.0


def as_utc_datetime(value: Any, what: str = "now") -> datetime:
    """A date, datetime or ISO-8601 string -> an aware UTC datetime (a date is its UTC midnight; a
    naive date-time is taken as UTC)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{what} must be an ISO-8601 date or date-time, got {value!r}") from None
    if isinstance(value, datetime):
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    raise ValueError(f"{what} must be an ISO-8601 date or date-time, got {value!r}")


def _utc_or_none(value: datetime | date | str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return as_utc_datetime(value)
    except ValueError:
        raise ValueError("not an ISO-8601 date or date-time") from None


# A stage's own reference time: a TOML date, date-time or ISO string, held as an aware UTC datetime.
ReferenceTime = Annotated[Optional[datetime | date | str], AfterValidator(_utc_or_none)]


@dataclass
class SearchContext:
    """What a stage may know about the query besides the hits.  The first four fields are the
    original positional constructor; the rest are optional lookups the pipeline fills in:

      chunk_text(id)   -> the chunk's text (MMR snippets, length normalisation)
      chunk_path(id)   -> the chunk's file path, relative to the memory root (dates for decay)
      chunk_vector(id) -> the chunk's embedding, or None (diversity, cosine rerank)
      query_vector     the query's embedding (cosine rerank)
      now              the reference time for ages; a date, datetime or ISO string.  Never the
                       wall clock, so that results are reproducible.
      reranker         the [reranker] stage (query, texts -> relevance scores), or None
      document_chunks(path) -> the texts of a file's chunks in order (QMD reranks one of them)
    """

    query: str
    max_results: int
    vector_weight: float
    text_weight: float
    chunk_text: Optional[Callable[[str], str]] = None
    chunk_path: Optional[Callable[[str], str]] = None
    chunk_vector: Optional[Callable[[str], Optional[Sequence[float]]]] = None
    query_vector: Optional[Sequence[float]] = None
    now: Any = None
    reranker: Any = None
    document_chunks: Optional[Callable[[str], list[str]]] = None

    def __post_init__(self) -> None:
        if self.now is not None:
            self.now = as_utc_datetime(self.now, "SearchContext.now")

    def need(self, attribute: str, stage: str) -> Any:
        value = getattr(self, attribute)
        if value is None and attribute == "now":  # the user's to give: a configuration error, not a bug
            raise ConfigError(f"postprocess stage {stage!r} ages dated memories from a reference day: set "
                              "[evaluation] now = YYYY-MM-DD in the experiment (`harness init --now` writes it)")
        if value is None:
            raise ValueError(f"postprocess stage {stage!r} needs SearchContext.{attribute}, which this "
                             "pipeline did not provide")
        return value


@runtime_checkable
class PostProcessor(Protocol):
    """Hits ranked by a fusion (or an earlier stage) -> the hits to return; never mutates its input."""

    def __call__(self, hits: list[Hit], ctx: SearchContext) -> list[Hit]: ...

    @property
    def pass_threshold(self) -> float:
        """The score a query's top hit must reach for the query to pass (evaluation.metrics.query_outcome):
        OpenClaw's minScore for `min_score`, 0.0 for a stage that sets no such bar."""
        ...


def reference_time(stage_now: datetime | None, ctx: SearchContext, stage: str) -> datetime:
    """A stage's own `now` parameter wins over the context's; one of them must be set."""
    if stage_now is not None:
        return stage_now
    return ctx.need("now", stage)




def age_days(path: str, now: datetime, name_suffix: bool = False) -> float | None:
    """Days from the file's date to `now` (never negative), or None for an undated file."""
    stamp = memory_date(path, name_suffix)
    if stamp is None:
        return None
    return max(0.0, (now - stamp).total_seconds() / DAY_SECONDS)
