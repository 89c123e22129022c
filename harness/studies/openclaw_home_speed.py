"""Speed of the own-agent path on a generated installation (`make openclaw-home-speed` -> reports/openclaw-home/
speed.json; tests/bench_openclaw_home.py runs the same measurements at a small size under pytest-benchmark):

    mining      N sessions of ~100 KB of JSONL each (10,000: ~1 GB), streamed by the session reader and mined,
                on one core; the peak memory the process grew by, against the largest and the total file size
    page        a query's pool of 50 chunks: the page's /api/query answer over loopback, and (with Chromium) the
                time from navigation to the page drawn
    vectors     importing M stored vectors (100,000 by default, 384 dimensions, the 2026.2.22 JSON format) from an
                index into the embedding cache

The sessions are generated from the example installation's real transcripts (datasets/example-openclaw-home):
each is one of them with a new id, dates spread over a year and its queries varied, padded with the large tool
results a real session carries (a `read` tool's file contents), so the reader meets the real format at volume.
"""
from __future__ import annotations

import json
import random
import resource
import sqlite3
import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
from harness.inputs.openclaw_home import locate
from harness.inputs.openclaw_sessions import ReadStats, read_sessions
from harness.inputs.session_mining import mine
from harness.judging.pool import Pool, PoolItem, PoolQuery
from harness.judging.page import JudgePage
from harness.judging.store import LabelStore
from harness.inputs.openclaw_index import MemoryIndex
from harness.stages.embedders.cache import EmbeddingCache
from harness.stages.embedders.openclaw_index import import_index_vectors

EXAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "example-openclaw-home"
SESSION_BYTES = 100_000
PAD = ("用户喜欢在周末去西溪湿地骑车。The billing service moves from MySQL to Postgres with logical replication. "
       "Atlas 项目的预算不包括备份存储。 ") * 40


def generate_sessions(root: Path, count: int, *, example: Path = EXAMPLE, seed: int = 0) -> Path:
    """root/.openclaw with `count` generated transcripts of agent main (module docstring); returns the state folder."""
    rng = random.Random(seed)
    templates = [p.read_text(encoding="utf-8").splitlines() for p in sorted((example / "agents" / "main" / "sessions")
                                                                            .glob("*.jsonl"))]
    home = root / ".openclaw"
    folder = home / "agents" / "main" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    start = datetime(2025, 5, 1, tzinfo=timezone.utc)
    for n in range(count):
        lines = templates[n % len(templates)]
        when = start + timedelta(minutes=int(n * 525600 / max(1, count)))
        sid = f"gen-{n:06d}"
        out = []
        size = 0
        for raw in lines:
            entry = json.loads(raw)
            if entry.get("type") == "session":
                entry["id"], entry["timestamp"] = sid, when.isoformat()
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                for part in message.get("content", []):
                    if part.get("type") == "toolCall" and part.get("name") == "memory_search" and rng.random() < 0.6:
                        part["arguments"]["query"] = f"{part['arguments']['query']} {n % 997}"  # many distinct queries
            text = json.dumps(entry, ensure_ascii=False)
            out.append(text)
            size += len(text.encode("utf-8")) + 1
        filler = 0
        while size < SESSION_BYTES:
            chunk = PAD[: min(len(PAD), 20_000)]
            pad = {"type": "message", "id": f"pad{filler}", "parentId": None, "timestamp": when.isoformat(),
                   "message": {"role": "toolResult", "toolCallId": f"read{filler}", "toolName": "read",
                               "content": [{"type": "text", "text": chunk}], "isError": False}}
            text = json.dumps(pad, ensure_ascii=False)
            out.insert(len(out) - 1, text)
            size += len(text.encode("utf-8")) + 1
            filler += 1
        (folder / f"{sid}.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    return home


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure_mining(home: Path) -> dict[str, Any]:
    inst = locate(home)
    sizes = [p.stat().st_size for p in inst.session_files]
    before = peak_rss_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    stats = ReadStats()
    m = mine(read_sessions(inst.session_files, inst.agent_db, stats), stats)
    return {"sessions": m.sessions, "bytes": int(sum(sizes)), "largest_file_bytes": int(max(sizes)),
            "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0, "calls": m.calls,
            "distinct_queries": len(m.queries), "peak_rss_growth_mib": max(0.0, peak_rss_mib() - before)}


def pool_of(items: int = 50, example: Path = EXAMPLE) -> Any:
    files = sorted((example / "workspace").rglob("*.md"))
    texts = [(str(p.relative_to(example / "workspace")), p.read_text(encoding="utf-8")) for p in files]
    pool_items = []
    for i in range(items):
        path, text = texts[i % len(texts)]
        lines = text.split("\n")
        pool_items.append(PoolItem(path, 1 + i // len(texts), len(lines), text))
    queries = {"q0001": PoolQuery("q0001", "Atlas 项目 cut-over 的日期和预算", "speed", "tuning", pool_items)}
    return Pool(["speed"], 10, [], queries)


def measure_page(items: int = 50, repeats: int = 20, chromium: str | None = None) -> dict[str, Any]:
    import http.client

    with tempfile.TemporaryDirectory() as tmp:
        store = LabelStore(Path(tmp) / "labels.sqlite")
        with JudgePage(pool_of(items), store) as page:
            port = int(page.url.rsplit(":", 1)[1].strip("/"))
            times = []
            for _ in range(repeats):
                conn = http.client.HTTPConnection("127.0.0.1", port)
                t0 = time.perf_counter()
                conn.request("GET", "/api/query?i=0")
                body = conn.getresponse().read()
                times.append((time.perf_counter() - t0) * 1000)
                conn.close()
            out: dict[str, Any] = {"items": items, "api_ms_median": statistics.median(times), "api_bytes": len(body)}
            if chromium:
                out["browser_ms_median"] = _browser_load(chromium, page.url, Path(tmp), repeats=11)
    return out


def _browser_load(binary: str, url: str, tmp: Path, repeats: int) -> float:
    """Navigation start to the pool drawn (the page sets body.dataset.ready once its chunks are in the DOM)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.cdp import Browser

    browser = Browser(binary, str(tmp / "profile"), str(tmp))
    try:
        values = []
        browser.open("about:blank")
        for _ in range(repeats):
            browser.send("Page.navigate", {"url": url})
            browser.wait_for("document.body && document.body.dataset.ready === '1' && "
                             "document.querySelectorAll('.item').length > 0")
            values.append(browser.evaluate("performance.now()"))
        return statistics.median(values)
    finally:
        browser.close()


def write_index(path: Path, chunks: int, dims: int = 384, seed: int = 0) -> None:
    """An index in the 2026.2.22 format (meta, files, chunks with JSON embeddings) holding `chunks` vectors."""
    rng = np.random.default_rng(seed)
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE files (path TEXT PRIMARY KEY, source TEXT NOT NULL DEFAULT 'memory', hash TEXT NOT NULL,
                            mtime INTEGER NOT NULL, size INTEGER NOT NULL);
        CREATE TABLE chunks (id TEXT PRIMARY KEY, path TEXT NOT NULL, source TEXT NOT NULL DEFAULT 'memory',
                             start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL,
                             model TEXT NOT NULL, text TEXT NOT NULL, embedding TEXT NOT NULL, updated_at INTEGER NOT NULL);""")
    conn.execute("INSERT INTO meta VALUES ('memory_index_meta_v1', ?)",
                 (json.dumps({"model": "text-embedding-3-small", "provider": "openai", "providerKey": "0" * 64,
                              "chunkTokens": 400, "chunkOverlap": 80, "vectorDims": dims}),))
    import hashlib

    batch = []
    for i in range(chunks):
        vec = rng.standard_normal(dims).astype(np.float32)
        vec /= np.linalg.norm(vec)
        text = f"chunk {i}"
        batch.append((f"c{i}", f"memory/{i // 50:05d}.md", "memory", 1 + (i % 50) * 10, 10 + (i % 50) * 10,
                      hashlib.sha256(text.encode()).hexdigest(), "text-embedding-3-small", text,
                      "[" + ",".join(f"{x:.7g}" for x in vec) + "]", 0))
        if len(batch) == 5000:
            conn.executemany("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?)", batch)
            batch = []
    if batch:
        conn.executemany("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?)", batch)
    conn.commit()
    conn.close()


def measure_import(chunks: int, dims: int = 384) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "main.sqlite"
        write_index(path, chunks, dims)
        cache = EmbeddingCache(Path(tmp) / "embeddings.sqlite")
        with MemoryIndex(path) as index:
            t0, c0 = time.perf_counter(), time.process_time()
            result = import_index_vectors(index, cache)
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {"vectors": result.imported, "dims": dims, "seconds": seconds, "cpu_seconds": cpu,
                "index_bytes": path.stat().st_size}


if __name__ == "__main__":  # the command line, which also writes the report, is harness.cli.openclaw_home_speed
    raise SystemExit("run `python -m harness.cli.openclaw_home_speed` (`make openclaw-home-speed`): this module "
                     "only measures")
