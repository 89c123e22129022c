"""The typed study files: one pydantic model per kind of TOML file in experiments/.

Each model declares every key its study reads, with its type and what it means (the docstring after a
field is its documentation, as for the stages); a key the model does not declare is refused.  The
checks the loaders used to write by hand are the models' types and validators, so `load_matrix` and the
others validate through them, and `harness schema --kind KIND` is the JSON schema of the same model.

Nested tables whose keys are other files' tables (a matrix value's stage tables, a run's `overrides`,
a benchmark's published comparison) are left open: they are checked where they are applied (by the
experiment loader, or the report that reads them).
"""
from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from harness.errors import ConfigError
from harness.text_files import shown

Name = Annotated[str, Field(min_length=1)]
Label = Annotated[str, Field(min_length=1)]


class _ReadByKey(BaseModel):
    """A loaded spec is read by attribute (`spec.runs`, `run.overrides`).  The report writers
    (harness.reporting) still read the dictionary the loaders used to return, until they receive a typed
    document instead: `spec["name"]`, `spec.get("metrics", default)`, `"compare" in spec`, `{**run}` read
    what the file set (a key it left out reads as absent, as it did then)."""

    def _set_keys(self) -> list[str]:
        return [*self.model_fields_set, *[k for k in (self.model_extra or {}) if k not in self.model_fields_set]]

    def __getitem__(self, key: str) -> Any:
        if key not in self._set_keys():
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self._set_keys() else default

    def __contains__(self, key: object) -> bool:
        return key in self._set_keys()

    def keys(self) -> list[str]:
        return self._set_keys()


class _Model(_ReadByKey):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


class _Open(_ReadByKey):
    """A table whose further keys are read elsewhere."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True, frozen=True)

    def tables(self) -> dict[str, Any]:
        """Its further keys (the tables a matrix value sets, a pairing side's options), as written."""
        return dict(self.model_extra or {})


class _Study(_Model):
    name: Name
    """names the results (NAME.json, NAME.md)"""
    description: str = ""
    """what the study asks; the report's first paragraph"""
    notes: str = ""
    """further text of the report"""
    output: Optional[str] = None
    """where `make` writes it (the Makefile passes it as --out)"""
    _source: str = PrivateAttr("<study file>")

    @property
    def source(self) -> str:
        """The file it was loaded from (set by harness.studies.spec.validated), for errors."""
        return self._source


# --- experiment ------------------------------------------------------------------------------------


class ExperimentStudy(_Open):
    """An experiment: a preset (a file of stages) and the tables that override it; `harness run`.
    Its tables are validated by the experiment loader (harness.config.load_experiment) and its JSON
    schema is the stage registries' (harness.catalog.experiment_schema)."""

    kind: Literal["experiment"] = "experiment"
    name: Optional[str] = None
    """names the results (default: the file's name)"""
    description: str = ""
    """what the experiment is"""
    preset: Optional[str] = None
    """a preset name (experiments/presets/NAME.toml, `harness presets`) or a .toml path"""
    dataset: Optional[dict[str, Any]] = None
    """[dataset]: name and parameters of the data set (`harness stages dataset`)"""


# --- matrix ----------------------------------------------------------------------------------------


class MatrixValue(_Open):
    label: Label
    """the value's name in the tables; the first value is the reference"""


class MatrixRun(_Model):
    label: Label
    """the run's name (a column of the tables)"""
    experiment: Name
    """the experiment file the values are applied to"""
    overrides: dict[str, Any] = {}
    """tables applied after the value"""
    vary: bool = True
    """false: run once with the experiment's own stages"""
    value_label: str = "—"
    """the row label of a run that does not vary"""


MATRIX_METRICS = ["passed", "mrr@6", "ndcg@10", "recall@1", "recall@5", "recall@10", "mrr@10",
                  "text_score_nonzero_share", "index_ms_without_embedding", "lexical_p50_ms", "retrieval_p50_ms"]


class MatrixStudy(_Study):
    """One stage varied over several runs (tokenizer x round, chunker x data set); `harness matrix`."""

    kind: Literal["matrix"]
    values: Optional[Annotated[list[MatrixValue], Field(min_length=1)]] = None
    """the implementations compared, each a label and the tables it sets; the first is the reference"""
    values_from: Optional[str] = None
    """another matrix file whose [[values]] this one takes (when it has none of its own)"""
    runs: list[MatrixRun]
    """where the values are compared"""
    metrics: list[str] = MATRIX_METRICS
    """the tables of the report, one per metric"""
    plot_metrics: Optional[list[str]] = None
    """the metrics of the plot"""
    compare: Optional[list[str]] = None
    """the per-query figures tested between values (default: passes and every Recall/MRR/nDCG shown)"""
    per_query_columns: list[str] = []
    """per-query columns kept in NAME.json, not tested"""
    vary_label: str = "value"
    """the heading of the values' column"""
    intended_confounds: list[Literal["embedder", "result-count", "candidate-pool", "corpus", "all"]] = []
    """what the values may differ in besides their stage because it is the point (harness.evaluation.confounds);
    a value that differs from the reference in another is flagged in the report"""

    @property
    def reference(self) -> str:
        """The first value's label: every other value is compared with it."""
        return self.values[0].label if self.values else ""

    @model_validator(mode="after")
    def _values_given(self) -> "MatrixStudy":
        if self.values is None and self.values_from is None:
            raise ValueError("a matrix needs [[values]] (or values_from = \"another matrix file\")")
        return self


# --- benchmark -------------------------------------------------------------------------------------

PresetList = Annotated[list[Name], Field(min_length=1)]


def run_slug(preset: str | None, label: str) -> str:
    """A run's folder name: '<preset>-<run label>' with anything but letters, digits and ._- as '-'."""
    text = f"{preset}-{label}" if preset else label
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


class BenchmarkRun(_Model):
    label: Label
    experiment: Name
    overrides: dict[str, Any] = {}
    """tables applied to the experiment"""
    presets: Optional[PresetList] = None
    """this run's own presets (a diagnostic variant of one preset), instead of the file's"""

    @field_validator("presets", mode="before")
    @classmethod
    def _preset_names(cls, value: Any) -> Any:
        if value is not None and not (isinstance(value, list) and value and all(isinstance(p, str) for p in value)):
            raise ValueError("must be a non-empty list of preset names")
        return value


class PairedTable(_Open):
    metrics: Annotated[list[str], Field(min_length=1)]
    """the per-query metrics whose paired differences are tested (Holm over the table)"""
    pairs: Optional[list[list[str]]] = None
    """[a, b] run names (a minus b); default: per run label, each preset against the label's first"""


class BenchmarkStudy(_Study):
    """A public data set with one or more presets, per query group, beside published figures;
    `harness benchmark`."""

    kind: Literal["benchmark"]
    runs: list[BenchmarkRun]
    presets: Optional[list[str]] = None
    """every run once per preset"""
    metrics: Optional[list[str]] = None
    """the report's columns"""
    hits: int = Field(0, ge=0)
    """returned hits kept per query in each results.json"""
    paired: Optional[PairedTable] = None
    """[paired]: paired differences between runs"""
    comparison: Optional[dict[str, Any]] = None
    """[comparison]: `columns`, [[comparison.ours]] (label, run, values) and [[comparison.published]]"""
    group_labels: Optional[dict[str, str]] = None
    """names of the data set's query groups in the report"""

    @field_validator("paired", mode="before")
    @classmethod
    def _paired_metrics(cls, value: Any) -> Any:
        if value is not None and (not isinstance(value, dict) or not value.get("metrics")):
            raise ValueError("needs metrics, e.g. metrics = [\"ndcg@10\"]")
        return value

    @model_validator(mode="after")
    def _names_exist(self) -> "BenchmarkStudy":
        labels = [run.label for run in self.runs]
        for i, ours in enumerate((self.comparison or {}).get("ours", [])):
            if not isinstance(ours, dict) or ours.get("run") not in labels:
                raise ValueError(f"comparison.ours[{i}].run must be one of the run labels {labels}")
        if self.paired is not None:
            names = [run_slug(p, run.label) for run in self.runs for p in run.presets or self.presets or [None]]
            for i, pair in enumerate(self.paired.pairs or []):
                if not (len(pair) == 2 and all(x in names for x in pair)):
                    raise ValueError(f"paired.pairs[{i}] must be two run names [a, b] (a minus b), each "
                                     f"'<preset>-<run label>' as the results folders are named: {', '.join(names)}")
        return self


# --- abstention ------------------------------------------------------------------------------------

ABSTENTION_WEIGHT = 0.5  # harness.evaluation.abstention.ABSTENTION_WEIGHT (checked equal in the tests)


class AbstentionRun(_Model):
    label: Label
    experiment: Name
    presets: Optional[list[Optional[str]]] = None
    """the presets the experiment runs under (default: its own)"""
    overrides: dict[str, Any] = {}
    without: list[str] = []
    """further post-processing stages to leave out (by name); min_score always is"""


class AbstentionStudy(_Study):
    """Top-1 score distributions, AUROC of "nothing relevant" and the cross-validated minScore per
    preset; `harness abstention`."""

    kind: Literal["abstention"]
    runs: list[AbstentionRun]
    weight: float = ABSTENTION_WEIGHT
    """the utility's weight of silence on unanswerable queries, in [0, 1]"""
    holm_elsewhere: list[Name] = []
    """committed abstention.json files whose Holm family owns the hypotheses they share with this study
    (those rows are corrected there, once: the families are disjoint)"""

    @field_validator("weight", mode="before")
    @classmethod
    def _unit_weight(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError("must be a number in [0, 1]")
        return value


# --- lossless --------------------------------------------------------------------------------------


LCM_GREP_SORTS = ("recency", "relevance", "hybrid")  # lcm_grep's sorts in full_text mode (regex: recency)


class GrepSettings(_Model):
    limit: int = Field(50, ge=1)
    """lcm_grep's row limit"""
    modes: list[Literal["regex", "full_text"]] = ["regex", "full_text"]
    """lcm_grep's modes run"""
    sorts: list[Literal["recency", "relevance", "hybrid"]] = list(LCM_GREP_SORTS)
    """the full_text sorts run (regex mode sorts by recency)"""
    agent_terms: list[int] = [1, 2, 3]
    """the numbers of key terms an agent's pattern has"""


class ContextSeries(_Model):
    label: str = "context"
    summarizer: str = "term-density"
    fresh_tail_count: int = Field(64, ge=0)
    settings: list[Annotated[list[int], Field(min_length=2, max_length=2)]] = [[128_000, 20_000]]
    """[tokenBudget, leafChunkTokens] pairs"""


class DagSweep(_Model):
    summarizer: str = "term-density"
    token_budget: int = Field(128_000, ge=1)
    leaf_chunk_tokens: list[int] = []


class LosslessStudy(_Study):
    """lossless-claw on LoCoMo: lcm_grep recall, the assembled context as the budget shrinks, the DAG's
    shape, beside the Markdown-memory presets; `harness lossless`."""

    kind: Literal["lossless"]
    dataset: dict[str, Any]
    """[dataset]: the LoCoMo file (name = "locomo", path, granularity ...)"""
    experiment: str = "experiments/locomo.toml"
    """the experiment the Markdown-memory presets run"""
    presets: list[str] = []
    """the Markdown-memory presets beside lossless-claw"""
    grep: GrepSettings = GrepSettings()
    """[grep]: lcm_grep's limit, modes, sorts and agent_terms"""
    context: list[ContextSeries] = []
    """[[context]]: compaction series"""
    dag: DagSweep = DagSweep()
    """[dag]: the leaf-size sweep at one budget"""
    chat: Optional[dict[str, Any]] = None
    """[chat]: the LLM of the 'chat' summarizer"""


# --- expansion -------------------------------------------------------------------------------------


class ExpansionVariant(_Model):
    label: Label
    overrides: dict[str, Any] = {}
    """tables of the variant (an [expansion] stage, a fusion)"""


class ExpansionRun(_Model):
    label: Label
    experiment: Name
    metrics: list[str]
    overrides: dict[str, Any] = {}


class ExpansionStudy(_Study):
    """QMD's query side: expansion variants of a preset with intervals and paired differences;
    `harness expansion`."""

    kind: Literal["expansion"]
    variants: Annotated[list[ExpansionVariant], Field(min_length=1)]
    """the first is the reference"""
    runs: list[ExpansionRun]
    preset: Optional[str] = None


# --- language pairs --------------------------------------------------------------------------------


class PairingSide(_Open):
    path: Name
    conversations: Optional[list[str]] = None


class Pairing(_Open):
    a: PairingSide
    b: PairingSide


class PairsSource(_Model):
    kind: Literal["benchmark", "matrix"]
    file: Name
    """the study JSON written earlier"""
    label: Optional[str] = None
    spec: Optional[str] = None
    """the study file that writes it (what `harness embed` reads)"""
    a: Optional[str] = None
    b: Optional[str] = None
    pairs: list[dict[str, str]] = []

    @model_validator(mode="after")
    def _sides(self) -> "PairsSource":
        if self.kind == "benchmark" and not (self.a and self.b):
            raise ValueError("(benchmark) needs the run labels a and b")
        if self.kind == "matrix" and not all("a" in p and "b" in p for p in self.pairs):
            raise ValueError("(matrix) needs pairs = [{ a = \"run\", b = \"run\" }, ...]")
        return self


class LanguagePairsStudy(_Study):
    """The same questions in two languages, paired, per system of studies already written;
    `harness language-pairs`."""

    kind: Literal["language-pairs"]
    title: Optional[str] = None
    a: str = "a"
    """the first language's name in the report (e.g. "English")"""
    b: str = "b"
    """the second language's name"""
    pairing: Pairing
    sources: list[PairsSource]
    metrics: Annotated[list[str], Field(min_length=1)]
    """the first is the headline (its cut-off is the k of the stage diagnostics)"""
    plot_metrics: Optional[list[str]] = None
    category_names: Optional[dict[str, str]] = None

    @field_validator("metrics")
    @classmethod
    def _headline_cutoff(cls, value: list[str]) -> list[str]:
        if not re.search(r"@\d+$", value[0]):
            raise ValueError(f"metric {value[0]!r} has no cut-off (@k)")
        return value


# --- scale ---------------------------------------------------------------------------------------


class ScaleStudy(_Study):
    """How index build time, query latency and peak memory grow with corpus size, for every vector and
    lexical backend, on a synthetic corpus (harness.studies.scale); `harness study FILE` (or `harness scale`
    with the same settings as options).  A key left out takes the command's default (`harness scale -h`)."""

    kind: Literal["scale"]
    sizes: Optional[list[Annotated[int, Field(ge=1)]]] = None
    """corpus sizes in chunks (--sizes)"""
    queries: Optional[int] = Field(None, ge=1)
    """timed queries per backend and size (--queries)"""
    chars: Optional[int] = Field(None, ge=1)
    """mean chunk length in characters (--chars)"""
    seed: Optional[int] = None
    """the synthetic corpus's seed (--seed)"""
    bag_tokenizer: Optional[str] = None
    """the tokenizer of rank-bm25 and bm25s (--bag-tokenizer)"""
    vector: Optional[list[str]] = None
    """vector backends (--vector; default all)"""
    tokenizers: Optional[list[str]] = None
    """FTS5 tokenizers (--tokenizers; default all)"""
    lexical: Optional[list[str]] = None
    """lexical backends (--lexical; default all)"""
    budget: Optional[float] = Field(None, gt=0)
    """seconds per backend and size, predicted (--budget)"""

    def run_options(self) -> dict[str, Any]:
        """The keyword arguments of harness.studies.scale.run_scale the file sets (the others keep
        run_scale's defaults)."""
        names = {"chars": "mean_chars", "budget": "backend_budget_s"}
        return {names.get(key, key): getattr(self, key) for key in ("sizes", "queries", "chars", "seed",
                                                                     "bag_tokenizer", "vector", "tokenizers",
                                                                     "lexical", "budget")
                if getattr(self, key) is not None}


# --- sweep grid ------------------------------------------------------------------------------------

MAX_GRID_VALUES = 10_000  # values of one dimension (a range with a tiny step is a mistake, not a grid)
OFF = "off"


class GridRange(_Model):
    start: float
    stop: float
    step: float


GridValues = Optional[Union[list[Union[float, bool, Literal["off"]]], GridRange]]


def weight_values(spec: Any, where: str = "[grid]") -> list[Any]:
    """A dimension's values: a list, or {start, stop, step} (step > 0, at most MAX_GRID_VALUES values)."""
    if isinstance(spec, dict):
        try:
            start, stop, step = (spec[k] for k in ("start", "stop", "step"))
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                       for v in (start, stop, step)) or set(spec) - {"start", "stop", "step"}:
                raise ValueError
        except (KeyError, ValueError):
            raise ConfigError(f"{where}: a range is {{start = A, stop = B, step = S}} of finite numbers") from None
        if step <= 0 or stop < start:
            raise ConfigError(f"{where}: step must be > 0 and stop >= start (got start {start}, stop {stop}, "
                              f"step {step})")
        span = (stop - start) / step  # infinite for a step of a denormal size
        if not math.isfinite(span) or span + 1 > MAX_GRID_VALUES:
            count = f"{int(round(span)) + 1:,}" if math.isfinite(span) else "countless"
            raise ConfigError(f"{where}: {count} values; a dimension has at most {MAX_GRID_VALUES:,}")
        n = int(round(span))
        return [round(start + i * step, 10) for i in range(n + 1)]
    if not isinstance(spec, list):
        raise ConfigError(f"{where}: must be a list of values or {{start, stop, step}}, got {shown(spec)}")
    if len(spec) > MAX_GRID_VALUES:
        raise ConfigError(f"{where}: {len(spec):,} values; a dimension has at most {MAX_GRID_VALUES:,}")
    out: list[Any] = []
    for v in spec:
        if v == OFF or isinstance(v, bool) or isinstance(v, (int, float)) and math.isfinite(v):
            out.append(v if v == OFF or isinstance(v, bool) else float(v))
        else:
            raise ConfigError(f"{where}: {shown(v)} is not a finite number" + (' or "off"' if isinstance(v, str) else ""))
    return out


# dimensions whose values are numbers in [0, 1] (weights, minScore, MMR's lambda), "off" where allowed
UNIT_DIMENSIONS = {"vector_weight": False, "min_score": False, "mmr": True}


class Grid(_Model):
    """[grid]: the dimensions a sweep varies; a dimension left out keeps the experiment's own value
    (vector_weight: 0 to 1 by 0.05; fusion: weighted), which every dimension always includes."""

    vector_weight: GridValues = GridRange(start=0.0, stop=1.0, step=0.05)
    """the vector leg's weight, in [0, 1] (a list, or {start, stop, step})"""
    fusion: Optional[list[str]] = ["weighted"]
    """fusion names"""
    fusion_params: Optional[dict[str, dict[str, Any]]] = None
    """fusion name -> parameters"""
    tokenizer: Optional[list[dict[str, Any]]] = None
    """tokenizer tables"""
    min_score: GridValues = None
    """minScore values in [0, 1]"""
    temporal_decay: GridValues = None
    """half-lives in days, or "off" (OpenClaw's query.hybrid.temporalDecay)"""
    mmr: GridValues = None
    """MMR's lambda in [0, 1], or "off" (query.hybrid.mmr)"""
    max_results: GridValues = None
    """query.maxResults"""
    candidate_multiplier: GridValues = None
    """query.hybrid.candidateMultiplier"""
    chunk_tokens: GridValues = None
    """chunking.tokens: the index is rebuilt per value (embeddings from the cache)"""

    def values(self, key: str) -> Any:
        """A dimension as weight_values reads it: its list, a range as {start, stop, step}, or None."""
        value = getattr(self, key)
        return value.model_dump() if isinstance(value, GridRange) else value

    def sizes(self) -> dict[str, int]:
        """The number of values of each dimension the file sets (fusion_params aside), in the model's order."""
        out = {}
        for key in type(self).model_fields:
            values = getattr(self, key)
            if key in self.model_fields_set and key != "fusion_params":
                listed = key in ("fusion", "tokenizer")
                out[key] = len(values) if listed else len(weight_values(self.values(key)))
        return out

    @model_validator(mode="before")
    @classmethod
    def _dimensions(cls, table: Any, info: Any) -> Any:
        """The checks of each dimension, in the file's order, each naming the file and key; a
        ConfigError (not a ValueError's wrapping) so the message is the loader's own."""
        if not isinstance(table, dict):
            return table
        path = (info.context or {}).get("path", "<grid>")
        for key, spec in table.items():
            where = f"{path} [grid] {key}"
            if key in ("fusion", "tokenizer"):
                if not (isinstance(spec, list) and all(isinstance(v, str if key == "fusion" else dict) for v in spec)):
                    raise GridRefused(f"{where}: must be a list of {'fusion names' if key == 'fusion' else 'tables'}")
            elif key == "fusion_params":
                if not isinstance(spec, dict) or not all(isinstance(v, dict) for v in spec.values()):
                    raise GridRefused(f"{where}: must be a table of fusion name -> parameters")
            elif key in cls.model_fields:
                try:
                    values = weight_values(spec, where)
                except ValueError as exc:  # a ConfigError, already naming the file and key
                    raise GridRefused(str(exc)) from None
                if key in UNIT_DIMENSIONS:
                    bad = [v for v in values if not (v == OFF and UNIT_DIMENSIONS[key]) and
                           not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1)]
                    if bad:
                        raise GridRefused(f"{where}: {bad[0]!r} is outside [0, 1]" + (' (or "off")' if
                                                                                  UNIT_DIMENSIONS[key] else ""))
        return table


class GridRefused(Exception):
    """A check whose message is already the whole one-line error (file, table, key): it passes through
    pydantic (which wraps only ValueError and AssertionError) to the loader unchanged."""


class GridStudy(_Model):
    """A sweep grid (experiments/sweep*.toml): `harness sweep EXPERIMENT --grid FILE`, or
    `harness study FILE --experiment EXPERIMENT`."""

    kind: Literal["grid"]
    name: Optional[str] = None
    """not read: the sweep is named by its experiment"""
    description: str = ""
    """what the grid is for"""
    grid: Grid
    """[grid]: the dimensions to vary"""

    @model_validator(mode="before")
    @classmethod
    def _a_grid_table(cls, doc: Any, info: Any) -> Any:
        path = (info.context or {}).get("path", "<grid>")
        if isinstance(doc, dict):
            if "grid" not in doc:
                raise GridRefused(f"{path}: no [grid] table; a grid file holds [grid] with the dimensions to vary "
                               "(see experiments/sweep.toml)")
            if not isinstance(doc["grid"], dict):
                raise GridRefused(f"{path}: [grid] must be a table")
            unknown = set(doc["grid"]) - set(Grid.model_fields)
            if unknown:
                known = sorted(set(Grid.model_fields) - {"fusion_params"})
                raise GridRefused(f"{path}: [grid] unknown key(s) {sorted(unknown)}; known: {known}")
        return doc
