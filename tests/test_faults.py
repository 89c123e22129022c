"""Faults a run must survive without losing or corrupting anything (issue 30): kill -9 at random moments,
a full disk, a read-only cache folder, a broken cache file.  Every run is the real CLI in a subprocess,
on the hash embedder (fast; the figures are not the point) with a workspace large enough that embedding
takes a few seconds.

Concurrent runs on one cache: tests/test_cache_concurrency.py (four runs and an e5 run at once).
The full disk and the read-only folder need a file system the test can make: a tmpfs mounted in a
mount namespace of its own (`unshare -rm`, root or an unprivileged user namespace), else they are skipped
with the reason.  HARNESS_FAULT_KILLS=N kills N times instead of 10.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

# every test here runs real CLI processes over an 80-file workspace (a clean run first, then killed, damaged or
# starved ones): minutes on 2 cores, so `make test-fast` leaves the module out
pytestmark = pytest.mark.slow

KILLS = int(os.environ.get("HARNESS_FAULT_KILLS", "10"))
WORDS = ("护照 换发 旧护照 照片 车钥匙 抽屉 周三 设计组 会议 首页 backup restore postgres deploy freeze friday "
         "staging password rotates monthly 西湖 跑步 公里 杭州").split()


def make_workspace(root: Path, files: int = 80) -> Path:
    """A workspace of `files` dated notes (~400 chunks) and an experiment on it with the hash embedder."""
    rng = random.Random(30)
    memory = root / "ws" / "memory"
    memory.mkdir(parents=True)
    for d in range(files):
        lines = [f"# notes {d}", ""] + ["- " + " ".join(rng.choice(WORDS) for _ in range(14)) + f" item {d}-{i}"
                                        for i in range(30)]
        (memory / f"2026-{d // 28 + 1:02d}-{d % 28 + 1:02d}-{d}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "ws" / "MEMORY.md").write_text("# 记忆\n\n- 护照在 3 月 4 日换发，带旧护照和两张照片。\n", encoding="utf-8")
    (root / "ws" / "queries.yaml").write_text(
        "- id: q1\n  text: 护照换发要带什么\n  path: MEMORY.md\n- id: q2\n  text: restore postgres\n"
        "  contains: restore postgres\n- id: q3\n  text: 周三 设计组 会议\n  path: memory/2026-01-05-4.md\n",
        encoding="utf-8")
    (root / "x.toml").write_text('preset = "openclaw-2026.08"\n[dataset]\nname = "workspace"\npath = "ws"\n'
                                 'queries = "ws/queries.yaml"\n[embedder]\nname = "hash"\n[evaluation]\n'
                                 'report_purity = false\nnow = 2026-03-08\n', encoding="utf-8")
    return root / "x.toml"


def env_for(cache: Path) -> dict[str, str]:
    return {**os.environ, "HARNESS_CACHE_DIR": str(cache), "HARNESS_PROGRESS_SECONDS": "0.2",
            "PYTHONDONTWRITEBYTECODE": "1"}


def harness(args: list[str], cwd: Path, cache: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env_for(cache),
                          capture_output=True, text=True, timeout=timeout)


def figures(results: Path) -> dict:
    """A results.json without what differs between two runs of one configuration (times, machine, paths
    of the cache, notes about the cache)."""
    doc = json.loads(results.read_text(encoding="utf-8"))
    summary = {k: v for k, v in doc["summary"].items() if k not in ("latency_ms", "index")}
    summary["chunks"] = doc["summary"]["index"]["chunks"]
    rows = {q: {k: v for k, v in row.items() if not k.startswith("ms_")} for q, row in doc["queries"].items()}
    return {"summary": summary, "queries": rows, "hits": doc["hits"]}


def one_value(cache: Path, sql: str) -> object:
    conn = sqlite3.connect(cache / "embeddings.sqlite")
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def integrity(cache: Path) -> str:
    return one_value(cache, "PRAGMA integrity_check")


def rows(cache: Path) -> int:
    return one_value(cache, "SELECT count(*) FROM vectors")


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The workspace, its results from one uninterrupted run on an empty cache, and how long that took."""
    root = tmp_path_factory.mktemp("faults")
    make_workspace(root)
    started = time.monotonic()
    proc = harness(["run", "x.toml", "--out", "clean"], root, root / "clean-cache")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root, figures(root / "clean" / "results.json"), time.monotonic() - started


def kill_at(args: list[str], cwd: Path, cache: Path, rng: random.Random, during_embedding: bool,
            run_seconds: float) -> str:
    """Start a run, SIGKILL it (and all it started) at a random moment; what it was doing then."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env_for(cache),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    started = time.monotonic()
    if during_embedding:  # wait for the first progress line of the embedding, then a moment into it
        while proc.poll() is None and time.monotonic() - started < 120 and \
                not any("embedding passages" in line for line in lines):
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 1.5))
    else:
        time.sleep(rng.uniform(0.2, 0.9) * run_seconds)
    seen = "".join(lines)
    phase = "finished before the kill" if proc.poll() is not None else \
        ("during embedding" if "embedding passages" in seen and "100%)" not in seen else "at a random moment")
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)
    reader.join(10)
    return phase


def test_kill_9_at_random_moments_never_corrupts_the_cache_and_the_rerun_equals_a_clean_run(clean):
    """KILLS runs SIGKILLed at random moments, in pairs on an empty cache: the first while it embeds, the
    second (resuming) at any moment of the run.  After each kill the cache passes SQLite's integrity check
    and the run's output folder is complete or absent (never a results.json beside files of another run);
    after each pair a run on that cache completes and equals the clean run."""
    root, reference, run_seconds = clean
    rng = random.Random(int(os.environ.get("HARNESS_FAULT_SEED", "30")))
    phases = []
    for i in range(KILLS):
        cache = root / f"killed-cache-{i // 2}"
        out = f"killed{i}"
        phases.append(kill_at(["run", "x.toml", "--out", out], root, cache, rng, i % 2 == 0, run_seconds))
        if (cache / "embeddings.sqlite").exists():
            assert integrity(cache) == "ok", f"kill {i} ({phases[-1]}) corrupted the cache"
        results = root / out / "results.json"
        if results.exists():  # the folder looks complete only when it is
            assert (root / out / "report.md").exists() and figures(results) == reference
        else:
            assert not (root / out / "report.md").exists()
        if i % 2 == 1 or i == KILLS - 1:
            proc = harness(["run", "x.toml", "--out", f"rerun{i}"], root, cache)
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert figures(root / f"rerun{i}" / "results.json") == reference
            assert integrity(cache) == "ok"
    print("kills:", ", ".join(phases))
    assert sum(p == "during embedding" for p in phases) >= KILLS // 4  # the kills did land in the embedding


# --- a broken cache file: moved aside, rebuilt, named --------------------------------------------------------

@pytest.mark.parametrize("damage", ["garbage", "truncated", "bad rows", "another schema"])
def test_a_broken_cache_is_named_moved_aside_and_rebuilt(clean, damage, tmp_path):
    root, reference, _ = clean
    cache = tmp_path / "cache"
    cache.mkdir()
    good = root / "clean-cache" / "embeddings.sqlite"
    db = cache / "embeddings.sqlite"
    conn = sqlite3.connect(good)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    if damage == "garbage":
        db.write_bytes(os.urandom(3000))
    elif damage == "truncated":
        raw = good.read_bytes()
        db.write_bytes(raw[: len(raw) // 2])
    elif damage == "bad rows":
        shutil.copy(good, db)
        conn = sqlite3.connect(db)
        conn.execute("UPDATE vectors SET vector = zeroblob(100) WHERE sha256 IN "
                     "(SELECT sha256 FROM vectors WHERE role = 'passage' LIMIT 7)")
        conn.commit()
        conn.close()
    else:
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE vectors (id INTEGER PRIMARY KEY, payload TEXT)")
        conn.commit()
        conn.close()
    proc = harness(["run", "x.toml", "--out", str(tmp_path / "out")], root, cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    notes = [line for line in proc.stdout.splitlines() if line.startswith("note:") and "embedding cache" in line]
    assert len(notes) == 1 and str(db) in notes[0], proc.stdout[-3000:]
    if damage == "bad rows":
        assert "7 vectors in the embedding cache" in notes[0] and "malformed" in notes[0]
        assert not list(cache.glob("embeddings.sqlite.broken-*"))
    else:
        assert "moved aside to embeddings.sqlite.broken-" in notes[0]
        moved = [p for p in cache.glob("embeddings.sqlite.broken-*") if not p.name.endswith(("-wal", "-shm"))]
        assert len(moved) == 1  # (with its -wal and -shm, when it had them)
    assert figures(tmp_path / "out" / "results.json") == reference
    assert integrity(cache) == "ok"
    again = harness(["run", "x.toml", "--out", str(tmp_path / "again")], root, cache)  # the rebuilt cache serves
    assert again.returncode == 0 and "embedding cache" not in again.stdout
    assert figures(tmp_path / "again" / "results.json") == reference


def test_a_cache_folder_that_is_a_file_is_named(clean, tmp_path):
    root, _, _ = clean
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    proc = harness(["run", "x.toml", "--out", str(tmp_path / "out")], root, tmp_path / "afile")
    assert proc.returncode == 2, proc.stderr[-2000:]
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("error: ") and "afile" in error and "HARNESS_CACHE_DIR" in error


# --- a file system of our own: a small tmpfs in a mount namespace ------------------------------------------

def namespace_python(script: str, tmp_path: Path, timeout: float = 900) -> dict:
    """Run `script` (Python; it prints one JSON line) as root of a new user and mount namespace, where it
    may mount a tmpfs; skip the test when this machine allows neither."""
    unshare = shutil.which("unshare")
    if unshare is None or shutil.which("mount") is None:
        pytest.skip("needs unshare(1) and mount(8) to make a small file system (util-linux)")
    probe = subprocess.run([unshare, "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {tmp_path}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {probe.stderr.strip()[:200]}")
    path = tmp_path / "driver.py"
    path.write_text(textwrap.dedent(script), encoding="utf-8")
    proc = subprocess.run([unshare, "-rm", sys.executable, str(path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


DRIVER_HEAD = """
    import json, os, shutil, sqlite3, subprocess, sys
    from pathlib import Path

    def mount(target, size):
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)], check=True)

    def run(args, cache, cwd):
        env = {**os.environ, "HARNESS_CACHE_DIR": str(cache), "HARNESS_PROGRESS_SECONDS": "3600"}
        p = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=600)
        return {"code": p.returncode, "stdout": p.stdout[-4000:], "stderr": p.stderr[-4000:]}

    def count(cache):
        conn = sqlite3.connect(Path(cache) / "embeddings.sqlite")
        try:
            return conn.execute("SELECT count(*) FROM vectors").fetchone()[0], \\
                conn.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            conn.close()
"""


def test_a_full_disk_is_named_with_the_space_needed_and_the_rerun_after_freeing_space_succeeds(clean, tmp_path):
    root, reference, _ = clean
    out = namespace_python(DRIVER_HEAD + f"""
    root = Path({str(root)!r})
    disk = Path({str(tmp_path / 'disk')!r})
    mount(disk, "256k")                     # room for some vectors of ~400, not all
    full = run(["run", "x.toml", "--out", {str(tmp_path / 'out1')!r}], disk / "cache", root)
    kept, check = count(disk / "cache")
    subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)   # space freed
    rerun = run(["run", "x.toml", "--out", {str(tmp_path / 'out2')!r}], disk / "cache", root)
    small = Path({str(tmp_path / 'small')!r})
    mount(small, "16k")                     # --out on a disk too small for results.json
    results = run(["run", "x.toml", "--out", str(small / "out")], disk / "cache", root)
    print(json.dumps({{"full": full, "kept": kept, "check": check, "rerun": rerun, "results": results}}))
    """, tmp_path)
    full = out["full"]
    assert full["code"] == 2, full
    error = full["stderr"].strip().splitlines()[-1]
    assert error.startswith("error: ") and str(tmp_path / "disk" / "cache") in error, error
    assert "no space left" in error and "need about" in error and "are kept in" in error, error
    assert out["kept"] > 0 and out["check"] == "ok"  # the vectors computed before the disk filled are kept
    assert out["rerun"]["code"] == 0, out["rerun"]
    assert figures(tmp_path / "out2" / "results.json") == reference
    results = out["results"]
    assert results["code"] == 2, results
    error = results["stderr"].strip().splitlines()[-1]
    assert error.startswith("error: ") and "no space left" in error and "needs" in error, error
    assert str(tmp_path / "small") in error


def test_a_read_only_cache_is_read_and_says_what_it_cannot_store(clean, tmp_path):
    """A CI cache restored read-only: the vectors it holds are used, the run succeeds with the clean
    run's figures, and it says how many new vectors it could not store."""
    root, reference, _ = clean
    cache = tmp_path / "ro-cache"
    shutil.copytree(root / "clean-cache", cache)
    conn = sqlite3.connect(cache / "embeddings.sqlite")
    conn.execute("DELETE FROM vectors WHERE sha256 IN (SELECT sha256 FROM vectors WHERE role = 'passage' LIMIT 5)")
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = rows(cache)
    out = namespace_python(DRIVER_HEAD + f"""
    cache = Path({str(cache)!r})
    subprocess.run(["mount", "--bind", str(cache), str(cache)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(cache)], check=True)
    print(json.dumps(run(["run", "x.toml", "--out", {str(tmp_path / 'out')!r}], cache, Path({str(root)!r}))))
    """, tmp_path)
    assert out["code"] == 0, out
    notes = [line for line in out["stdout"].splitlines() if line.startswith("note:") and str(cache) in line]
    assert any("cannot be written" in n and "its entries are read" in n for n in notes), out["stdout"]
    assert any("5 new hash-v1 vectors were not stored" in n for n in notes), out["stdout"]
    assert figures(tmp_path / "out" / "results.json") == reference
    assert rows(cache) == before  # nothing was written to it
