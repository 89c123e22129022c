// Conformance driver for QMD (run under bun): index a Markdown workspace with QMD's own store, then run
// every query through the SDK's BM25 search (searchLex = the function behind `qmd search`), in one process.
//
//   bun qmd.ts --pkg <folder holding node_modules/@tobilu/qmd> --workspace <dir> --queries <file.jsonl>
//              [--collection ws] [--limit 100000]
//
// Writes one JSON object to stdout: {system, version, collection, documents, queries: [{id, text, match,
// results: [{path, title, score, bm25}]}]}. `score` is QMD's |bm25|/(1+|bm25|) at full precision; `bm25` is
// the raw FTS5 bm25(documents_fts, 1.5, 4.0, 1.0) of the same row, read back with the MATCH expression
// QMD itself built (captured at the SQLite layer), so nothing here re-implements QMD's query builder.
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1]!;
  if (fallback !== undefined) return fallback;
  throw new Error(`missing --${name}`);
}

const pkgRoot = join(arg("pkg"), "node_modules", "@tobilu", "qmd");
const workspace = arg("workspace");
const queriesFile = arg("queries");
const collection = arg("collection", "ws");
const limit = Number(arg("limit", "100000"));

// Capture the MATCH expression of every FTS statement QMD runs (first bound parameter).
const captured: string[] = [];
const origPrepare = Database.prototype.prepare;
(Database.prototype as any).prepare = function (sql: string, ...rest: unknown[]) {
  const stmt = (origPrepare as any).call(this, sql, ...rest);
  if (/documents_fts\s+MATCH\s+\?/.test(sql)) {
    const origAll = stmt.all;
    stmt.all = function (...params: unknown[]) {
      captured.push(String(params[0]));
      return origAll.apply(this, params);
    };
  }
  return stmt;
};

const home = mkdtempSync(join(tmpdir(), "qmd-conf-"));
process.env.HOME = home;
process.env.XDG_CONFIG_HOME = join(home, ".config");
process.env.XDG_CACHE_HOME = join(home, ".cache");

const pkg = JSON.parse(readFileSync(join(pkgRoot, "package.json"), "utf8"));
const qmd = await import(join(pkgRoot, "dist", "index.js"));
const store = await qmd.createStore({
  dbPath: join(home, "index.sqlite"),
  config: { collections: { [collection]: { path: workspace, pattern: "**/*.md" } } },
});
try {
  await store.update();
  const db = store.internal.db;
  const documents = db
    .prepare(`SELECT path, title FROM documents WHERE active = 1 AND collection = ? ORDER BY path`)
    .all(collection);
  const rawBm25 = db.prepare(
    `SELECT d.path AS path, bm25(documents_fts, 1.5, 4.0, 1.0) AS bm25
       FROM documents_fts JOIN documents d ON d.id = documents_fts.rowid
      WHERE documents_fts MATCH ? AND d.active = 1`,
  );
  const out: any[] = [];
  for (const line of readFileSync(queriesFile, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const q = JSON.parse(line);
    captured.length = 0;
    const hits = await store.searchLex(q.text, { limit, collection });
    const match = [...captured];
    const bm25ByPath = new Map<string, number>();
    // re-read the raw bm25 with QMD's own expression (rawBm25 is not itself captured: prepared above)
    for (const expr of match) for (const row of rawBm25.all(expr) as any[]) bm25ByPath.set(row.path, row.bm25);
    out.push({
      id: q.id,
      text: q.text,
      match,
      results: hits.map((h: any) => {
        const path = String(h.displayPath).slice(collection.length + 1);
        return { path, title: h.title, score: h.score, bm25: bm25ByPath.get(path) ?? null };
      }),
    });
  }
  process.stdout.write(
    JSON.stringify({
      system: "qmd",
      version: pkg.version,
      runtime: `bun ${Bun.version}`,
      collection,
      documents,
      queries: out,
    }) + "\n",
  );
} finally {
  await store.close();
  rmSync(home, { recursive: true, force: true });
}
