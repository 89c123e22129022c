"""`harness init --openclaw-home DIR [--agent ID]`: an experiment whose queries are the agent's own.

Reads the installation (harness.inputs.openclaw_home): openclaw.json, the workspace, the agent's memory
index and its sessions; mines the queries and their implicit judgments (harness.inputs.session_mining);
imports the index's vectors into the embedding cache (the `openclaw-index` embedder) and reports on the index
(harness.inputs.index_report).  Writes, into the output folder:

    queries.yaml, holdout.yaml   the tuning and the held-out (later) queries, each with its cluster (the session
                                 it was first asked in), count, language and implicit judgments (`by: implicit`)
    experiment.toml, holdout.toml  the workspace data set over them (judgments = "implicit", cluster = "session"),
                                 the preset of the release whose format the index has, openclaw.json read at
                                 every run, the `openclaw-index` embedder (the index's vectors, the user's provider)
    pool.toml                    what `harness judge` pools: the configurations and the depth
    init.json, init.md           what was read, mined, dropped and found (with --redact: numbers, e-mail
                                 addresses, URLs and key-like strings masked in init.md)
Nothing of a transcript is written beyond the queries and the tool calls used (their paths and lines).
"""
from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from harness.errors import DataError, OutputExistsError
from harness.inputs.index_report import IndexReport, index_report
from harness.inputs.openclaw_config import agent_key, agent_roster, read_openclaw_config
from harness.inputs.openclaw_env import is_secret_ref, secret_env_name
from harness.inputs.openclaw_home import Installation, locate, user_timezone
from harness.inputs.openclaw_index import MemoryIndex
from harness.inputs.openclaw_releases import RELEASES, rules_of, version_tuple
from harness.inputs.openclaw_sessions import ReadStats, read_sessions
from harness.inputs.session_mining import (
    DEFAULT_TUNING_SHARE,
    DROP_REASONS,
    MinedQuery,
    Mining,
    mine,
)
from harness.inputs.workspace_files import AGENT_DB_ROOT_FILES, MEMORY_FILES, discover_files
from harness.inputs.workspace_init import toml_value, write_keeping
from harness.stages.embedders.openclaw_index import import_index_vectors
from harness.toml_files import list_presets

FALLBACK_PRESET = "openclaw-2026.08"
POOL_DEPTH = 10
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def preset_for(release: str) -> str:
    """The preset that models the release whose format the index has (the newest known one before it)."""
    available = list_presets()
    if release in RELEASES and RELEASES[release].preset in available:
        return RELEASES[release].preset
    older = [(version_tuple(r.version), r.preset) for r in RELEASES.values()
             if version_tuple(r.version) <= version_tuple(release) and r.preset in available]
    return max(older)[1] if older else FALLBACK_PRESET


def search_fields(config: dict[str, Any], agent: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The memory-search settings OpenClaw resolves for the agent, and the field each came from, merged key by
    key in its order: a top-level memorySearch, agents.defaults.memorySearch, memory.search, then the agent's
    own block (agents.entries.<id> or agents.list[]: memorySearch, then memory.search).  As 2026.9.6's
    produceMemorySearchConfig (dist/memory-search-*.mjs) does, the agent's key wins over the default's one
    by one (`overrides?.model ?? defaults?.model`), and inside `remote` key by key too (baseUrl, apiKey,
    headers)."""
    out: dict[str, Any] = {}
    fields: dict[str, str] = {}
    layers: list[tuple[str, Any]] = [("memorySearch", config.get("memorySearch"))]
    agents = config.get("agents") if isinstance(config.get("agents"), dict) else {}
    defaults = agents.get("defaults") if isinstance(agents.get("defaults"), dict) else {}
    layers.append(("agents.defaults.memorySearch", defaults.get("memorySearch")))
    memory = config.get("memory") if isinstance(config.get("memory"), dict) else {}
    layers.append(("memory.search", memory.get("search")))
    entry = next((e for e in agent_roster(config) if agent_key(e.id) == agent_key(agent)), None)
    if entry is not None:
        layers.append((f"{entry.field}.memorySearch", entry.entry.get("memorySearch")))
        own = entry.entry.get("memory")
        layers.append((f"{entry.field}.memory.search", own.get("search") if isinstance(own, dict) else None))
    for name, layer in layers:
        if not isinstance(layer, dict):
            continue
        for key, value in layer.items():
            if key == "remote" and isinstance(value, dict) and isinstance(out.get("remote"), dict):
                out["remote"] = {**out["remote"], **value}
            else:
                out[key] = value
            fields[key] = f"{name}.{key}"
    return out, fields


def search_block(config: dict[str, Any], agent: str) -> dict[str, Any]:
    """search_fields' settings alone."""
    return search_fields(config, agent)[0]


REBUILD = ("rebuild the index with the configured model (`openclaw memory index --force`, as OpenClaw {release} "
           "pauses vector search until it is rebuilt) and run init again, or rerun init with --reembed (the corpus "
           "embedded by the configured model through its endpoint), or with --no-index-vectors (the harness's own "
           "model)")


def check_index_model(index: MemoryIndex, config: dict[str, Any], agent: str, config_path: Path | None) -> None:
    """The index's vectors belong to the model openclaw.json configures, or the run would compare two models'
    vectors: the index meta's provider, model and dimensions against the agent's resolved provider, model and
    outputDimensionality (what the config does not set is not compared).  A difference is one DataError naming
    the field and what to do."""
    meta = index.meta
    block, fields = search_fields(config, agent)
    wanted: list[tuple[str, Any, Any]] = []
    provider = block.get("provider")
    if isinstance(provider, str) and provider.strip() and provider.strip() != "auto":
        # "auto" is resolved at run time (2026.2.22 tries local, openai, gemini ...; 2026.9.6 takes openai): the
        # index's meta records what it became, so there is nothing to compare it with
        wanted.append(("provider", provider.strip(), meta.provider))
    if isinstance(block.get("model"), str) and block["model"].strip():
        wanted.append(("model", block["model"].strip(), meta.model))
    dims = block.get("outputDimensionality")
    if isinstance(dims, int) and not isinstance(dims, bool):
        wanted.append(("outputDimensionality", dims, meta.dims))
    for key, configured, stored in wanted:
        if stored is not None and configured != stored:
            raise DataError(config_path or index.path, None, fields.get(key, key),
                            f"is {configured!r}, but the memory index {index.path} holds vectors of "
                            f"{meta.provider}/{meta.model} ({meta.dims} dimensions): queries embedded by one model "
                            f"cannot be compared with another's vectors; " + REBUILD.format(release=index.release))


def reembed_table(config: dict[str, Any], agent: str, config_path: Path | None) -> dict[str, Any]:
    """--reembed: the [embedder] table of the configured provider (an OpenAI-compatible endpoint) and model, for
    the corpus and the queries alike."""
    block, fields = search_fields(config, agent)
    provider = block.get("provider") if isinstance(block.get("provider"), str) else "openai"
    provider = "openai" if provider in ("auto", "") else provider
    remote = block.get("remote") if isinstance(block.get("remote"), dict) else {}
    base_url = remote.get("baseUrl") if isinstance(remote.get("baseUrl"), str) else \
        "https://api.openai.com/v1" if provider == "openai" else None
    model = block.get("model") if isinstance(block.get("model"), str) else None
    where = config_path or Path("openclaw.json")
    if provider not in ("openai", "openai-compatible") or not base_url:
        raise DataError(where, None, fields.get("provider", "memory.search.provider"),
                        f"--reembed embeds through an OpenAI-compatible endpoint; provider {provider!r} "
                        f"{'has no remote.baseUrl' if not base_url else 'is not one'}: use --no-index-vectors")
    if not model:
        raise DataError(where, None, "memory.search.model", "--reembed needs the model openclaw.json configures; "
                                                            "set memory.search.model")
    table: dict[str, Any] = {"name": "openai-compatible", "base_url": base_url, "model": model}
    host = urllib.parse.urlsplit(base_url).hostname or ""
    if host not in LOOPBACK:
        table["api_key_env"] = "OPENAI_API_KEY" if provider == "openai" else "EMBEDDINGS_API_KEY"
    for role, keys in (("query_params", ("queryInputType", "inputType")),
                       ("passage_params", ("documentInputType", "inputType"))):
        value = next((block[k] for k in keys if isinstance(block.get(k), str) and block[k]), None)
        if value:
            table[role] = {"input_type": value}
    return table


def provider_table(index: MemoryIndex, config: dict[str, Any], agent: str,
                   references: dict[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The [embedder] table: the index's stored model and vectors, the queries through the provider openclaw.json
    names (an OpenAI-compatible endpoint), with the input types it sends; and notes for the user."""
    meta = index.meta
    block = search_block(config, agent)
    references = {path.rsplit("memorySearch.", 1)[-1].rsplit("memory.search.", 1)[-1]: name
                  for path, name in (references or {}).items()}  # the merged block's keys
    notes: list[str] = []
    provider = meta.provider or block.get("provider") or "openai"
    remote = block.get("remote") if isinstance(block.get("remote"), dict) else {}
    base_url = remote.get("baseUrl") if isinstance(remote.get("baseUrl"), str) else None
    if base_url is None and provider == "openai":
        base_url = "https://api.openai.com/v1"
    table: dict[str, Any] = {"name": "openclaw-index", "index": str(index.path), "model": meta.model,
                             "dims": meta.dims, "provider": provider, "provider_key": (meta.provider_key or "")[:12]}
    if base_url and provider in ("openai", "openai-compatible"):
        table["base_url"] = base_url
        try:
            host = urllib.parse.urlsplit(base_url).hostname or ""
        except ValueError:  # an invalid URL (a bad port, brackets): not a loopback host
            host = ""
        key = remote.get("apiKey")
        named = secret_env_name(key, references.get("remote.apiKey"))
        if host not in LOOPBACK:
            table["api_key_env"] = named or ("OPENAI_API_KEY" if provider == "openai" else "EMBEDDINGS_API_KEY")
            if named:
                notes.append(f"openclaw.json takes the provider's key from ${named} (a reference, as OpenClaw resolves "
                             f"it); the harness reads it from there too (export it before `harness run`)")
            elif is_secret_ref(key):
                notes.append(f"openclaw.json takes the provider's key from a {key['source']} SecretRef, which the harness "
                             f"does not resolve; it reads the key only from ${table['api_key_env']} (export it before "
                             "`harness run`)")
            elif key:
                notes.append(f"openclaw.json holds the provider's key inline; the harness never copies it and reads "
                             f"it only from ${table['api_key_env']} (export it before `harness run`)")
        elif key:
            if named:
                table["api_key_env"] = named
            notes.append(f"openclaw.json gives the loopback provider ({host}) a key; the harness never copies it"
                         + (f" and reads it from ${named}" if named else " and sends none (set [embedder] api_key_env to "
                            "an environment variable holding it if the server needs one)"))
    else:
        notes.append(f"the index was embedded by provider {provider!r}, which is not an OpenAI-compatible endpoint the "
                     "harness can call: queries cannot be embedded by that model until [embedder] base_url names one "
                     "(or rerun with --no-index-vectors to evaluate with the harness's own model)")
    for role, keys in (("query_params", ("queryInputType", "inputType")),
                       ("passage_params", ("documentInputType", "inputType"))):
        value = next((block[k] for k in keys if isinstance(block.get(k), str) and block[k]), None)
        if value:
            table[role] = {"input_type": value}
    return table, notes


def root_files_for(inst: Installation, index: MemoryIndex | None) -> tuple[str, ...]:
    """The root files the agent's release indexes: MEMORY.md and USER.md from 2026.8.1 on (a home with an agent
    database, or an index in its format), MEMORY.md and memory.md before."""
    release = index.release if index is not None else None
    newer = inst.agent_db is not None or inst.rule != "2026.2.22" or (
        release is not None and rules_of(release).user_md)
    return AGENT_DB_ROOT_FILES if newer else MEMORY_FILES


@dataclass
class HomeInit:
    out: Path
    installation: Installation
    preset: str
    release: str | None
    mining: Mining
    report: IndexReport | None
    imported: Any | None  # ImportResult
    files: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    tz: Any = None  # the configured timezone dates are printed in (None: the machine's)


def _yaml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def queries_yaml(queries: list[MinedQuery], header: str, tz: Any = None) -> str:
    """A queries file of mined queries: each with `judged:` (its implicit judgments; empty when the agent left
    none) so that `harness judge` can add explicit ones beside them.  Dates in `tz` (the configured
    agents.defaults.userTimezone; None: the machine's)."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()] + [""]
    for q in queries:
        when = q.first.astimezone(tz).date().isoformat() if q.first else "unknown date"
        note = (f"mined: asked {q.count} time(s) in {len(q.sessions)} session(s), first {when}; {q.language}; "
                f"{q.split}" + (f"; maxResults {', '.join(map(str, q.max_results))}" if q.max_results else "")
                + (f"; text as the agent sent it most often, {q.forms - 1} other written form(s) merged (the same "
                   "after normalising width, spaces, quotes, end punctuation and case)" if q.forms > 1 else ""))
        lines += [f"- id: {q.id}", f"  text: {_yaml(q.text)}", f"  cluster: {_yaml(q.cluster)}",
                  f"  note: {_yaml(note)}"]
        if q.first is not None:  # the first time it was asked: what a run replaying as asked searches it at
            lines.append(f"  asked: {_yaml(q.first.isoformat())}")
        if q.implicit:
            lines.append("  judged:")
            lines += [f"    - {{path: {_yaml(j.path)}, lines: [{j.start}, {j.end}], grade: {j.grade}, by: implicit, "
                      f"evidence: {_yaml(j.evidence)}" + (f", anchor: {_yaml(j.anchor)}" if j.anchor else "") + "}"
                      for j in q.implicit]
        else:
            lines.append("  judged: []")
    return "\n".join(lines) + "\n"


def experiment_toml(name: str, description: str, preset: str, dataset: dict[str, Any], embedder: dict[str, Any] | None,
                    now: str, redact: bool, notes: list[str]) -> str:
    lines = ["# Written by `harness init --openclaw-home`: the agent's own questions (mined from its sessions),",
             "# judged by what the agent did (implicit judgments) until `harness judge` adds explicit ones.",
             f"name = {toml_value(name)}", f"description = {toml_value(description)}", f"preset = {toml_value(preset)}",
             "", "[dataset]", *(f"{k} = {toml_value(v)}" for k, v in dataset.items()), "",
             "[evaluation]", "report_purity = false",
             "# each question is searched as of when it was asked (its `asked`; the files as of then where the",
             "# workspace's own git history has them, else today's); the figures at one date, `now` (the last",
             "# session's day), are reported beside them.  replay = \"one-date\" searches every question at `now`.",
             "replay = \"as-asked\"", f"now = {toml_value(now)}"]
    if redact:
        lines.append("redact = true   # mask numbers, e-mail addresses, URLs and key-like strings in reports and pages")
    if embedder is not None:
        lines += ["", "# the corpus vectors the agent's index holds; queries through its provider (no corpus embedding)",
                  "[embedder]", *(f"{k} = {_toml_inline(v)}" for k, v in embedder.items() if v is not None)]
    if notes:
        lines += ["", "# Notes:", *(f"#   {n}" for n in notes)]
    return "\n".join(lines) + "\n"


def _toml_inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    return toml_value(value)


def pool_toml() -> str:
    return f"""# What `harness judge` pools for each query: the top {POOL_DEPTH} chunks of every configuration below, shuffled,
# de-duplicated and shown without saying which configuration returned them (TREC-style pooling).
# Each configuration is the experiment with these --set assignments; add your own (any TABLE.KEY=VALUE).
depth = {POOL_DEPTH}

[[configuration]]
label = "yours"          # the experiment as it is: your openclaw.json's settings
set = []

[[configuration]]
label = "vector-heavy"
set = ["fusion.vector_weight=0.9", "fusion.text_weight=0.1"]

[[configuration]]
label = "balanced"
set = ["fusion.vector_weight=0.5", "fusion.text_weight=0.5"]

[[configuration]]
label = "text-heavy"
set = ["fusion.vector_weight=0.2", "fusion.text_weight=0.8"]

[[configuration]]
label = "trigram"
set = ["tokenizer.name=\\"trigram\\""]
"""


def init_openclaw_home(home: Path | str, out_dir: Path | str, *, agent: str | None = None, preset: str | None = None,
                       tuning_share: float = DEFAULT_TUNING_SHARE, redact: bool = False, index_vectors: bool = True,
                       force: bool = False, cache: Any = None, reembed: bool = False) -> HomeInit:
    """`reembed`: the corpus and the queries embedded by the model openclaw.json configures (through its
    OpenAI-compatible endpoint) instead of the index's vectors: what OpenClaw does once the index is rebuilt."""
    inst = locate(home, agent)
    tz = user_timezone(inst.config)
    out = Path(os.path.abspath(Path(out_dir).expanduser()))
    experiment_path = out / "experiment.toml"
    if experiment_path.exists() and not force:
        raise OutputExistsError(f"{experiment_path} already exists; pass --force to replace it (the old files are kept "
                                "as .bak; labels made with `harness judge` are never touched)")
    notes = list(inst.notes)
    listed = {agent_key(e.id) for e in agent_roster(inst.config)}
    settings = read_openclaw_config(inst.config_path, agent=inst.agent if inst.agent in listed else None) \
        if inst.config_path else None
    if not inst.workspace.is_dir():
        where = (f"{inst.workspace_field} in {inst.config_path} names it" if inst.workspace_field else
                 f"OpenClaw {inst.rule}'s default place for agent {inst.agent!r}; set {inst.entry_field or 'its entry'}"
                 ".workspace in openclaw.json if it is elsewhere")
        raise DataError(inst.workspace, None, None, f"the workspace of agent {inst.agent!r} is not there ({where})")
    index = MemoryIndex(inst.index_path) if inst.index_path else None
    root_files = root_files_for(inst, index)
    discovery = discover_files(inst.workspace, settings.extra_paths if settings else (), root_files)

    if index is None:
        notes.append(f"no memory index for agent {inst.agent!r} (OpenClaw writes it at its first memory search); the "
                     "experiment embeds with the preset's model")
    release = index.release if index is not None else None
    chosen_preset = preset or preset_for(release or "")

    stats = ReadStats(other_agents=dict(inst.other_agents))
    if not inst.session_files and inst.agent_db is None and not inst.archives:
        notes.append(f"no sessions for agent {inst.agent!r} under {inst.home / 'agents' / inst.agent}: nothing to mine")
    mining = mine(read_sessions(inst.session_files, inst.agent_db, stats, inst.archives), stats,
                  tuning_share=tuning_share)
    if mining.unavailable:
        notes.append(f"{mining.unavailable} memory_search call(s) were answered unavailable (timed out, disabled or "
                     "paused): their queries are mined, their empty results are not taken for what memory returned")
    if not mining.queries:
        raise DataError(inst.home, None, None, f"no memory_search calls found in {mining.sessions} session(s) of agent "
                                               f"{inst.agent!r}: nothing to evaluate yet")

    report = embedder = imported = None
    if index is not None:
        configured = search_block(inst.config, inst.agent).get("model")
        report = index_report(index, discovery, configured if isinstance(configured, str) else None)
        if reembed:
            embedder = reembed_table(inst.config, inst.agent, inst.config_path)
            notes.append(f"--reembed: the corpus and the queries embedded by {embedder['model']} through "
                         f"{embedder['base_url']} (the index's vectors, of {index.meta.model}, are not used)")
        elif index_vectors:
            check_index_model(index, inst.config, inst.agent, inst.config_path)

            if not index.meta.model or not index.meta.dims:
                import_index_vectors(index, cache)  # raises the one-line error naming what is missing
            embedder, provider_notes = provider_table(index, inst.config, inst.agent, inst.references)
            notes += provider_notes
            imported = import_index_vectors(index, cache)
            if imported.imported == 0:
                raise DataError(index.path, None, f"{index.format.chunks}.embedding",
                                f"no chunk of model {index.meta.model} has a vector ({imported.without_vector} stored "
                                "without one): let OpenClaw embed them (`openclaw memory index --force`) or rerun with "
                                "--no-index-vectors")

    last = max((q.last for q in mining.queries if q.last), default=None)
    now = (last.astimezone(tz).date() if last else date.today()).isoformat()
    out.mkdir(parents=True, exist_ok=True)
    dataset = {"name": "workspace", "path": str(inst.workspace), "queries": str(out / "queries.yaml")}
    if inst.config_path:
        dataset.update(config=str(inst.config_path), follow_config=True)
    if inst.agent in listed:
        dataset["agent"] = inst.agent
    if tuple(root_files) != MEMORY_FILES:
        dataset["root_files"] = list(root_files)
    dataset.update(judgments="implicit", cluster="session")
    files: dict[str, Path] = {}
    header = (f"The questions agent {inst.agent!r} asked its memory (memory_search), mined by `harness init "
              f"--openclaw-home` from {mining.sessions} sessions.\nEach query's cluster is the session it was first "
              "asked in; `judged` holds the implicit judgments (by: implicit) from what the agent read or cited.\n"
              "`harness judge` adds explicit grades (by: explicit) beside them; none of these is ever overwritten.")
    parts = {"queries.yaml": ("tuning", "experiment.toml", ""), "holdout.yaml": ("held-out", "holdout.toml", "-held-out")}
    for queries_name, (split, toml_name, suffix) in parts.items():
        chosen = mining.split(split)
        if not chosen and split == "held-out":
            notes.append("no held-out queries: the sessions are too few to split by time")
            continue
        split_header = header + f"\nThis file: the {split} queries" + (
            f" (first asked before {mining.cut.astimezone(tz).date()})" if split == "tuning" and mining.cut else
            f" (first asked on or after {mining.cut.astimezone(tz).date()})" if mining.cut else "") + "."
        files[queries_name] = out / queries_name
        _write_new(files[queries_name], queries_yaml(chosen, split_header, tz), force)
        ds = {**dataset, "queries": str(out / queries_name)}
        description = (f"OpenClaw agent {inst.agent!r} of {inst.home}: its {len(chosen)} {split} questions, implicit "
                       "judgments; " + (f"the index's own vectors ({index.meta.model})" if embedder else "the preset's embedder"))
        files[toml_name] = out / toml_name
        write_keeping(files[toml_name], experiment_toml(f"openclaw-{inst.agent}{suffix}", description, chosen_preset, ds,
                                                        embedder, now, redact, notes))
    files["agent-run.trec"] = out / "agent-run.trec"
    files["agent-run.trec"].write_text(agent_run_trec(mining.queries), encoding="utf-8")
    files["pool.toml"] = out / "pool.toml"
    if not files["pool.toml"].exists():
        files["pool.toml"].write_text(pool_toml(), encoding="utf-8")
    result = HomeInit(out, inst, chosen_preset, release, mining, report, imported, files, notes, tz)
    # init.json and init.md (its document and report) are written by the caller above the inputs
    # (harness.reporting.home_report.write_init): a reader of inputs writes no document
    if index is not None:
        index.close()
    return result


def agent_run_trec(queries: list[MinedQuery]) -> str:
    """What the agent's own memory_search returned for each query (its first time), as a TREC run: the production
    system's results, which `harness eval --run agent-run.trec --qrels judge/qrels.trec` scores against the grades
    (doc ids path#Lstart-Lend, as the qrels name them)."""
    lines = []
    for q in queries:
        seen = set()
        for rank, r in enumerate(q.first_results, start=1):
            doc = f"{r.path}#L{r.start}-L{r.end}"
            if doc in seen:
                continue
            seen.add(doc)
            score = r.score if r.score is not None else 1.0 / rank
            lines.append(f"{q.id} Q0 {doc} {rank} {score:.6f} openclaw-agent")
    return "\n".join(lines) + ("\n" if lines else "")


def _holds_labels(text: str) -> bool:
    """Whether a queries file holds a judgment made with `harness judge` (by: explicit or llm): read as YAML, so
    that init's own header (which names them) or a query text quoting them is not taken for one."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:  # unreadable: judged by its lines outside comments, erring on keeping the file
        return any(("by: explicit" in line or "by: llm" in line) for line in text.splitlines()
                   if not line.lstrip().startswith("#"))
    queries = doc.get("queries") if isinstance(doc, dict) else doc
    for q in queries if isinstance(queries, list) else []:
        judged = q.get("judged") if isinstance(q, dict) else None
        for j in judged if isinstance(judged, list) else []:
            if isinstance(j, dict) and str(j.get("by", "")).strip().lower() in ("explicit", "llm"):
                return True
    return False


def _write_new(path: Path, text: str, force: bool) -> None:
    """A mined queries file: written, or (force) replaced with the old one kept as .bak; a file whose queries
    carry explicit judgments is never replaced (labels would be lost)."""
    if path.exists():
        old = path.read_text(encoding="utf-8", errors="replace")
        if _holds_labels(old):
            raise OutputExistsError(f"{path} holds judgments made with `harness judge`; init never replaces it "
                                    "(choose another --out)")
    write_keeping(path, text)


def init_document(r: HomeInit) -> dict[str, Any]:
    """init.json: what was read and found (query texts only as the queries files hold them)."""
    m = r.mining
    inst = r.installation
    stats = m.stats
    sessions = {"read": m.sessions, "with_memory_search": m.sessions_with_searches, "formats": dict(m.formats),
                "entries": stats.entries, "bytes": stats.bytes, "bad_lines": stats.bad_lines,
                "bad_where": stats.bad_where, "not_transcripts": stats.not_transcripts,
                "other_harness": stats.other_harness, "other_agents": stats.other_agents}
    queries = {"calls": m.calls, "distinct": len(m.queries), "duplicates": m.duplicates,
               "dropped": dict(m.dropped), "dropped_why": {k: DROP_REASONS[k] for k in m.dropped},
               "dropped_examples": m.dropped_examples, "by_language": m.by_language(),
               "tuning": len(m.split("tuning")), "held_out": len(m.split("held-out")),
               "tuning_by_language": m.by_language("tuning"), "held_out_by_language": m.by_language("held-out"),
               "cut": m.cut.astimezone(r.tz).isoformat() if m.cut else None, "tuning_share": m.tuning_share,
               "memory_get_calls": m.gets, "unavailable_calls": m.unavailable, "top": [{"id": q.id, "text": q.text, "count": q.count,
                                                    "sessions": len(q.sessions), "language": q.language, "split": q.split}
                                                   for q in sorted(m.queries, key=lambda q: (-q.count, q.id))[:10]]}
    implicit = {"queries_with_positive": sum(any(j.grade > 0 for j in q.implicit) for q in m.queries),
                "queries_without": sum(not q.implicit for q in m.queries),
                "positives": sum(j.grade > 0 for q in m.queries for j in q.implicit),
                "not_satisfied": sum(j.grade == 0 for q in m.queries for j in q.implicit),
                "by_evidence": _count(j.evidence for q in m.queries for j in q.implicit),
                "reformulated_searches": sum(q.reformulated for q in m.queries)}
    doc: dict[str, Any] = {
        "generated": datetime.now().astimezone().isoformat(timespec="seconds"),
        "installation": {"home": str(inst.home), "agent": inst.agent, "config": str(inst.config_path or ""),
                         "workspace": str(inst.workspace), "index": str(inst.index_path or "")},
        "release": r.release, "preset": r.preset, "sessions": sessions, "queries": queries, "implicit": implicit,
        "index_report": r.report.as_dict() if r.report else None,
        "index_findings": r.report.findings() if r.report else [],
        "vectors": None, "files": {k: str(v) for k, v in r.files.items()}, "notes": r.notes + stats.notes(),
    }
    if r.imported is not None:
        doc["vectors"] = {"model_id": r.imported.model_id, "imported": r.imported.imported,
                          "without_vector": r.imported.without_vector, "wrong_length": r.imported.wrong_length,
                          "other_models": dict(r.imported.other_models), "hash_mismatch": r.imported.hash_mismatch,
                          "seconds": r.imported.seconds}
    return doc


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return dict(sorted(out.items()))
