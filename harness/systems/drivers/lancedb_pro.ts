// Conformance driver for memory-lancedb-pro (run under bun): the plugin's own MemoryStore, embedder and
// MemoryRetriever, imported at run time from its source folder (nothing of it is copied here), on memories
// the harness hands over, then every query through retriever.retrieve() as its memory_recall tool calls it.
//
//   bun lancedb_pro.ts --src <plugin folder> --memories <file.jsonl> --queries <file.jsonl>
//                      --provider-url <OpenAI-compatible base URL> --model <name> --dimensions 384
//                      [--now 2026-02-23] [--limit 6]
//
// The plugin's npm dependencies are found through NODE_PATH (the harness installs them into its cache).
// memories: one {id, text, timestamp (ms)} per line, stored with store.importEntry() after the store was
// opened (so, as in a user's store, LanceDB's full-text index was created on the empty table and the rows
// are searched unindexed), each vector from embedder.embedPassage() as memory_store embeds one.
// Per query, recorded by wrapping the store's and retriever's own methods (their code runs unchanged):
//   vector    store.vectorSearch() as the retriever called it: [{id, score}] (score = 1/(1 + cosine distance))
//   keyword   store.bm25Search(): [{id, score}], and `fallback`: whether it came from lexicalFallbackSearch
//   fused     retriever.fuseResults(): [{id, score, vector, bm25}] (every fused candidate, before minScore)
//   results   retriever.retrieve({query, limit, scopeFilter: ["global"]}): [{id, score, reranked, vector_is_array}]
//   keyword_indexed  store.bm25Search() again after store.rebuildFtsIndex() (the index over every row)
// Writes one JSON object to stdout: {system, version, runtime, lancedb, stored: [{id, sha256}], queries}.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1]!;
  if (fallback !== undefined) return fallback;
  throw new Error(`missing --${name}`);
}

class StepError extends Error {
  constructor(public step: string, message: string) {
    super(message);
  }
}
async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err: any) {
    if (err instanceof StepError) throw err;
    throw new StepError(name, err?.message ?? String(err));
  }
}

const src = path.resolve(arg("src"));
const readJsonl = (file: string) =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
const memories = readJsonl(arg("memories"));
const queries = readJsonl(arg("queries"));
const providerUrl = arg("provider-url");
const model = arg("model");
const dimensions = Number(arg("dimensions", "384"));
const limit = Number(arg("limit", "6"));
const nowArg = arg("now", "");

// A fixed clock for the recency boost and time decay: Date.now() runs offset to the target (timers and the
// store's lock file keep working) and is frozen at the target while a query runs, so that ages are exact.
let frozenNow: number | null = null;
const nowTarget = nowArg ? Date.parse(nowArg) : Date.now();
if (!Number.isFinite(nowTarget)) throw new Error(`bad --now ${nowArg}`);
{
  const realNow = Date.now;
  const offset = nowTarget - realNow();
  Date.now = () => frozenNow ?? realNow() + offset;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "lancedb-pro-conf-"));
process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));
for (const key of Object.keys(process.env)) if (/_API_KEY$/.test(key)) delete process.env[key];

async function main() {
  const pkg = JSON.parse(fs.readFileSync(path.join(src, "package.json"), "utf8"));
  const { MemoryStore } = await step("loading src/store.ts", () => import(path.join(src, "src", "store.ts")));
  const { createEmbedder } = await step("loading src/embedder.ts", () => import(path.join(src, "src", "embedder.ts")));
  const { createRetriever } = await step("loading src/retriever.ts", () => import(path.join(src, "src", "retriever.ts")));

  const store = new MemoryStore({ dbPath: path.join(tmp, "lancedb"), vectorDim: dimensions });
  const embedder = createEmbedder({
    provider: "openai-compatible",
    apiKey: "loopback-server-needs-no-key",
    model,
    baseURL: providerUrl,
    dimensions,
  });

  const sha = (t: string) => createHash("sha256").update(t, "utf8").digest("hex");
  await step("storing memories", async () => {
    for (const m of memories) {
      const vector = await embedder.embedPassage(m.text);
      await store.importEntry({
        id: String(m.id), text: m.text, vector, category: "other", scope: "global", importance: 0.7,
        timestamp: Number(m.timestamp), metadata: "{}",
      });
    }
  });
  const stored = await step("listing the stored memories", async () => {
    const rows = await (store as any).table.query().select(["id", "text"]).toArray();
    return rows.map((r: any) => ({ id: String(r.id), sha256: sha(String(r.text)) }));
  });

  const retriever = createRetriever(store, embedder, {});
  // record what the retriever's own steps return (the methods run unchanged)
  let rec: any = null;
  const s = store as any;
  const r = retriever as any;
  const origVector = s.vectorSearch.bind(s);
  s.vectorSearch = async (...a: any[]) => {
    const out = await origVector(...a);
    if (rec) rec.vector = out.map((x: any) => ({ id: x.entry.id, score: x.score }));
    return out;
  };
  const origBm25 = s.bm25Search.bind(s);
  const origFallback = s.lexicalFallbackSearch.bind(s);
  let inFallback = false;
  s.lexicalFallbackSearch = async (...a: any[]) => {
    inFallback = true;
    return origFallback(...a);
  };
  s.bm25Search = async (...a: any[]) => {
    inFallback = false;
    const out = await origBm25(...a);
    if (rec) {
      rec.keyword = out.map((x: any) => ({ id: x.entry.id, score: x.score }));
      rec.fallback = inFallback;
    }
    return out;
  };
  const origFuse = r.fuseResults.bind(r);
  r.fuseResults = async (...a: any[]) => {
    const out = await origFuse(...a);
    if (rec) {
      rec.fused = out.map((x: any) => ({
        id: x.entry.id, score: x.score, vector: x.sources?.vector?.score ?? null, bm25: x.sources?.bm25?.score ?? null,
      }));
    }
    return out;
  };

  const out: any[] = [];
  for (const q of queries) {
    rec = { id: q.id, text: q.text, vector: [], keyword: [], fallback: false, fused: [] };
    frozenNow = nowTarget;
    try {
      const results = await step(`query ${q.id}`, () =>
        retriever.retrieve({ query: q.text, limit, scopeFilter: ["global"] }));
      // reranked: the cosine the retriever's rerank step computed (null when it was not a number)
      rec.results = results.map((x: any) => ({
        id: x.entry.id, score: x.score, reranked: x.sources?.reranked?.score ?? null,
        vector_is_array: Array.isArray(x.entry.vector),
      }));
    } finally {
      frozenNow = null;
    }
    out.push(rec);
  }
  rec = null;

  // the same BM25 leg once the full-text index covers every row (`memory-pro` CLI: reindex-fts)
  const rebuilt = await step("rebuilding the full-text index", () => store.rebuildFtsIndex());
  for (const q of out) {
    inFallback = false;
    const hits = await step(`indexed BM25 for ${q.id}`, () =>
      origBm25(q.text, Math.max(20, limit * 2), ["global"], { excludeInactive: true }));
    q.keyword_indexed = hits.map((x: any) => ({ id: x.entry.id, score: x.score }));
    q.fallback_indexed = inFallback;
  }

  let lancedb = "";
  try {
    const require = (await import("node:module")).createRequire(path.join(src, "package.json"));
    lancedb = JSON.parse(fs.readFileSync(require.resolve("@lancedb/lancedb/package.json"), "utf8")).version;
  } catch {
    lancedb = "";
  }
  process.stdout.write(JSON.stringify({
    system: "memory-lancedb-pro", version: pkg.version, runtime: `bun ${Bun.version}`, lancedb,
    fts_rebuilt: rebuilt, stored, queries: out,
  }) + "\n");
}

try {
  await main();
} catch (err: any) {
  const stepName = err instanceof StepError ? err.step : "running";
  process.stdout.write(JSON.stringify({ error: { step: stepName, message: err?.message ?? String(err) } }) + "\n");
  process.exit(1);
}
