// The memory-search settings an OpenClaw release resolves for its agents, read the way the release reads them:
// its own config loader (loadConfig, OPENCLAW_CONFIG_PATH) and its own resolveMemorySearchConfig(cfg, agentId)
// (src/agents/memory-search.ts, bundled as dist/memory-search-*.{js,mjs}).  Run under the release's Node with
// the home's environment (harness.systems.openclaw_agent.OpenClawHome), after the CLI has used the home:
//
//   node openclaw_settings.mjs --pkg <node_modules/openclaw folder> --agent main [--agent work]
//
// Prints one JSON document: {version, agents: {id: resolved settings | {error}}}; the remote API key is
// replaced by whether it is set (the harness compares settings, it never needs a key).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const pkgRoot = args[args.indexOf("--pkg") + 1];
const agents = args.flatMap((a, i) => (a === "--agent" ? [args[i + 1]] : []));
const dist = path.join(pkgRoot, "dist");
const files = fs.readdirSync(dist).filter((f) => /\.(m?js)$/.test(f)).sort();

// The first bundled module (file name starting with `prefix`) that exports `name`, under its own name or an alias.
async function bundled(prefix, name) {
  for (const f of files) {
    if (!f.startsWith(prefix)) continue;
    const src = fs.readFileSync(path.join(dist, f), "utf8");
    const alias = new RegExp(`\\b${name} as (\\w+)\\b`).exec(src)?.[1]
      ?? (new RegExp(`export \\{[^}]*\\b${name}\\b[^}]*\\}`).test(src) ? name : null);
    if (!alias) continue;
    const value = (await import(pathToFileURL(path.join(dist, f)).href))[alias];
    if (typeof value === "function") return value;
  }
  throw new Error(`no dist/${prefix}* module exports ${name}`);
}

const realLog = console.log;
console.log = (...a) => console.error(...a); // stdout is the JSON document
const version = JSON.parse(fs.readFileSync(path.join(pkgRoot, "package.json"), "utf8")).version;
const out = { version, agents: {} };
try {
  const loadConfig = await bundled("io.runtime", "loadConfig");
  const resolve = await bundled("memory-search-", "resolveMemorySearchConfig");
  const cfg = await loadConfig();
  for (const agent of agents) {
    try {
      const s = resolve(cfg, agent);
      if (s?.remote) s.remote = { ...s.remote, apiKey: s.remote.apiKey ? "(set)" : null };
      out.agents[agent] = s ?? { enabled: false };
    } catch (err) {
      out.agents[agent] = { error: String(err?.message ?? err).split("\n")[0] };
    }
  }
} catch (err) {
  out.error = String(err?.message ?? err).split("\n")[0];
}
await new Promise((resolve) => process.stdout.write(JSON.stringify(out) + "\n", resolve));
console.log = realLog;
process.exit(0);
