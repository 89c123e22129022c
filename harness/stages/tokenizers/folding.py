"""Tokenizers that wrap another tokenizer (its table in `base`) and change what it sees:

  opencc               OpenCC script folding (default t2s: traditional -> simplified) of the text at index
                       time and of the query at query time, so 頻道 finds 频道 (memory-lancedb-pro#271).
  colloquial-expansion a colloquial -> technical list (a TSV file): a query holding a listed phrase
                       (挂了) is searched as itself OR each technical term (崩溃, crash ...), the idea of
                       memory-lancedb-pro PR #112; query side only, the index is the base's.

Both leave everything else to the base (its FTS5 table, join, query plan), so they stack on any preset's
tokenizer:  tokenizer = { name = "opencc", base = { name = "unicode61", join = "and" } }.
The character n-gram keyword leg they are measured beside is the existing `cjk-bigram` (and `trigram`).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from pydantic import Field

from harness.bundled import REPOSITORY
from harness.errors import ConfigError, DataError
from harness.registry import stage
from harness.stages.tokenizers.base import TOKENIZERS, QueryPlan
from harness.text_files import shown

DEFAULT_EXPANSIONS = "datasets/robustness-zh/colloquial-technical.tsv"


def data_path(path: str) -> Path:
    """A relative path from the working directory when it is there, else from the repository the harness
    runs from (as harness.inputs.layout.project_path reads data files)."""
    given = Path(path)
    if given.is_absolute() or given.exists():
        return given
    return REPOSITORY / given if (REPOSITORY / given).exists() else given


def base_tokenizer(table: dict[str, Any], place: str) -> Any:
    if not isinstance(table, dict) or not isinstance(table.get("name"), str):
        raise ConfigError(f"{place} base: must be a tokenizer table with a name, e.g. {{ name = \"unicode61\" }}")
    return TOKENIZERS.create(table["name"], {k: v for k, v in table.items() if k != "name"}, where=f"{place} base")


class WrappingTokenizer:
    """Delegates the Tokenizer protocol to `self.inner`; subclasses change texts or queries."""

    inner: Any

    @property
    def name(self) -> str:
        return self.inner.name  # the base's name: backends that ask (trigram's fallback) see the base

    @property
    def fts5_tokenize(self) -> str:
        return self.inner.fts5_tokenize

    @property
    def join(self) -> str:
        return self.inner.join

    def fold(self, text: str) -> str:
        return text

    def index_text(self, text: str) -> str:
        return self.inner.index_text(self.fold(text))

    def match_expression(self, query: str) -> str | None:
        return self.query_plan(query).match

    def query_plan(self, query: str) -> QueryPlan:
        return self.inner.query_plan(self.fold(query))

    def analyze(self, text: str) -> list[str]:
        return self.inner.analyze(self.fold(text))

    def analyze_query(self, query: str) -> list[str]:
        return self.inner.analyze_query(self.fold(query))


@cache
def opencc_converter(config: str) -> Any:
    import opencc

    try:
        return opencc.OpenCC(config)
    except Exception as exc:  # an unknown configuration name
        raise ConfigError(f"[tokenizer] config: OpenCC has no configuration {config!r} ({exc})") from None


@TOKENIZERS.register("opencc")
@stage
class OpenCCFolding(WrappingTokenizer):
    """OpenCC script folding around another tokenizer: texts and queries converted (default t2s,
    traditional -> simplified characters) before the base tokenizer sees them."""

    base: dict[str, Any]
    """the wrapped tokenizer's table, e.g. { name = "unicode61", join = "and" }"""
    config: str = Field("t2s", min_length=1)
    """OpenCC configuration: t2s (characters), tw2sp (Taiwan phrases too: 記憶體 -> 内存), s2t ..."""

    def __post_init__(self) -> None:
        self.inner = base_tokenizer(self.base, "[tokenizer]")
        self._convert = opencc_converter(self.config).convert

    def fold(self, text: str) -> str:
        return self._convert(text)


@cache
def load_expansions(path: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A TSV list: `phrase<TAB>term term ...` a line, # comments; longest phrases first."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"[tokenizer] file: no expansion list {shown(path)}")
    rows: dict[str, tuple[str, ...]] = {}
    for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        phrase, sep, terms = line.partition("\t")
        if not sep or not phrase.strip() or not terms.split():
            raise DataError(file, lineno, None, "expected: phrase<TAB>technical terms separated by spaces")
        rows[phrase.strip()] = tuple(terms.split())
    return tuple(sorted(rows.items(), key=lambda item: -len(item[0])))


@TOKENIZERS.register("colloquial-expansion")
@stage
class ColloquialExpansion(WrappingTokenizer):
    """A colloquial -> technical list around another tokenizer: a query holding a listed phrase
    (case-insensitive substring) is searched as the query OR each term the list gives it (each term
    planned by the base tokenizer); the index is the base's.  A base whose plans use LIKE (trigram)
    keeps its own plan for the query (FTS5 MATCH expressions are what is OR-ed)."""

    base: dict[str, Any]
    """the wrapped tokenizer's table, e.g. { name = "unicode61", join = "and" }"""
    file: str = DEFAULT_EXPANSIONS
    """the list: `phrase<TAB>terms` a line (relative: working directory, else the project root)"""

    def __post_init__(self) -> None:
        self.inner = base_tokenizer(self.base, "[tokenizer]")
        self._rows = load_expansions(str(data_path(self.file)))

    def expansions(self, query: str) -> list[str]:
        """The technical terms the list gives the phrases in `query`, in list order, each once."""
        lowered, out = query.lower(), []
        for phrase, terms in self._rows:
            if phrase.lower() in lowered:
                out += [t for t in terms if t not in out and t.lower() not in lowered]
        return out

    def query_plan(self, query: str) -> QueryPlan:
        plan = self.inner.query_plan(query)
        terms = self.expansions(query)
        if not terms or plan.like or plan.fallback_like:
            return plan
        extra = [self.inner.query_plan(t) for t in terms]
        if any(p.like or p.fallback_like for p in extra):
            return plan
        parts = [f"({p.match})" for p in (plan, *extra) if p.match]
        return QueryPlan(match=" OR ".join(parts) if parts else None, join="or")

    def analyze_query(self, query: str) -> list[str]:
        return [*self.inner.analyze_query(query), *(t for term in self.expansions(query)
                                                     for t in self.inner.analyze_query(term))]
