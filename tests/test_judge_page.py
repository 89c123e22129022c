"""`harness judge` as two people and a closed terminal meet it: grades stored with who and when as they are made,
an export however the session ends (Ctrl-C, SIGTERM, SIGHUP), one session per folder, the page's token checked
before a body is read, bounded bodies, a port in use or out of range as a one-line error.  A tiny workspace
experiment whose pool is already built: nothing here embeds."""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.judging.pool import Pool, PoolItem, PoolQuery
from harness.judging.store import LabelStore

runner = CliRunner()


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    """A workspace experiment with two queries and its pool (judge/pool.json) already built."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n\nbudget 18000 EUR\n\nthe weekly sync is on Tuesday\n", encoding="utf-8")
    (ws / "queries.yaml").write_text('- id: q1\n  text: "what is the budget"\n  judged: []\n'
                                     '- id: q2\n  text: "when is the sync"\n  judged: []\n', encoding="utf-8")
    exp = tmp_path / "experiment.toml"
    exp.write_text(f'name = "tiny"\npreset = "openclaw-2026.02"\n\n[dataset]\nname = "workspace"\npath = "{ws}"\n'
                   f'queries = "{ws / "queries.yaml"}"\n', encoding="utf-8")
    (tmp_path / "pool.toml").write_text('depth = 2\n[[configuration]]\nlabel = "yours"\nset = []\n', encoding="utf-8")
    (tmp_path / "judge").mkdir()
    queries = {"q1": PoolQuery("q1", "what is the budget", str(exp), "tuning",
                               [PoolItem("MEMORY.md", 3, 3, "budget 18000 EUR", ["yours"]),
                                PoolItem("MEMORY.md", 5, 5, "the weekly sync is on Tuesday", ["yours"])]),
               "q2": PoolQuery("q2", "when is the sync", str(exp), "tuning",
                               [PoolItem("MEMORY.md", 5, 5, "the weekly sync is on Tuesday", ["yours"])])}
    Pool([str(exp)], 2, [{"label": "yours", "set": [], "tables": {}, "depth": 2, "added": "2026-01-01T00:00:00+00:00"}],
         queries).save(tmp_path / "judge" / "pool.json")
    return exp


def _page(tmp_path: Path, **kw):
    from harness.judging.page import JudgePage

    pool = Pool(["x"], 10, [], {"q1": PoolQuery("q1", "budget", "x", "tuning", [PoolItem("MEMORY.md", 1, 2, "budget")])})
    return JudgePage(pool, LabelStore(tmp_path / "labels.sqlite"), **kw)


def _raw(port: int, head: str, body: bytes = b"", timeout: float = 5.0) -> int:
    """Send a request by hand (headers exactly as given) and return the status the page answers with."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head.encode("latin-1") + b"\r\n" + body)
        data = s.recv(4096)
    return int(data.split(b" ", 2)[1])


def test_the_token_is_checked_before_any_body_is_read(tmp_path):
    with _page(tmp_path) as page:
        port = int(page.url.rsplit(":", 1)[1].strip("/"))
        # no token, a body announced but never sent: refused at once (the old page waited for the body)
        head = "POST /api/grade HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
        assert _raw(port, head) == 403
        # the token inside the body no longer counts: it comes in a header, before the body
        body = json.dumps({"token": page.token, "query": "q1", "key": "MEMORY.md#L1-L2", "grade": 2}).encode()
        assert _raw(port, head.replace("100000", str(len(body))), body) == 403
        assert list(page.store.grades()) == []


def test_bodies_are_bounded_and_a_bad_one_is_an_answer_not_a_traceback(tmp_path, capfd):
    from harness.judging.page import MAX_BODY, TOKEN_HEADER

    with _page(tmp_path) as page:
        port = int(page.url.rsplit(":", 1)[1].strip("/"))
        head = f"POST /api/grade HTTP/1.1\r\nHost: 127.0.0.1\r\n{TOKEN_HEADER}: {page.token}\r\n"
        assert _raw(port, head + f"Content-Length: {MAX_BODY * 1000}\r\n") == 413  # not read, not waited for
        assert _raw(port, head + "Content-Length: -5\r\n") == 413
        assert _raw(port, head + "Content-Length: lots\r\n") == 411
        assert _raw(port, head + "Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n") == 411
        for body in (b"\xff\xfe not utf-8", b"[1, 2]", b'{"query": 1, "key": [], "grade": 1}', b"{" * 5000,
                     b'{"query": "q1", "key": "MEMORY.md#L1-L2", "grade": 2.0}'):
            assert _raw(port, head + f"Content-Length: {len(body)}\r\n", body) == 400, body[:20]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("POST", "/api/grade", body=json.dumps({"query": "q1", "key": "MEMORY.md#L1-L2", "grade": 2}),
                     headers={"Content-Type": "application/json", TOKEN_HEADER: page.token})
        assert conn.getresponse().status == 200
    assert "Traceback" not in capfd.readouterr().err
    assert [(g.query_id, g.grade) for g in page.store.grades()] == [("q1", 2)]


def test_every_grade_is_stored_with_who_and_when_and_every_edit_is_kept(tmp_path):
    before = time.time()
    page = _page(tmp_path, who="ana")
    page.grade("q1", "MEMORY.md#L1-L2", 2)
    page.grade("q1", "MEMORY.md#L1-L2", 3)
    page.grade("q1", "MEMORY.md#L1-L2", None)
    page.grade("q1", "MEMORY.md#L1-L2", 1)
    (grade,) = list(page.store.grades())
    assert (grade.grade, grade.judge) == (1, "ana") and before <= grade.at <= time.time()
    history = page.store.history()
    assert [(h[5], h[6]) for h in history] == [(2, "ana"), (3, "ana"), (None, "ana"), (1, "ana")]
    assert all(before <= h[8] <= time.time() for h in history)
    page.stop()


def test_a_port_in_use_or_out_of_range_is_one_line_exit_2(tmp_path, tiny):
    from harness.errors import ConfigError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match="in use"):
            _page(tmp_path, port=port)
        result = runner.invoke(app, ["judge", str(tiny), "--port", str(port)])
        assert result.exit_code == 2 and "in use" in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()[-1:]) == 1 and result.output.count("error:") == 1
    for bad in ("70000", "-1"):
        result = runner.invoke(app, ["judge", str(tiny), "--port", bad])
        assert result.exit_code == 2, result.output
        assert "error: --port" in result.output and "0-65535" in result.output and "Traceback" not in result.output
        assert not (tiny.parent / "judge" / "qrels.trec").exists()  # refused before any work


def test_a_second_session_on_the_same_folder_refuses_in_one_line(tiny):
    from harness.judging.lock import JudgeLock

    with JudgeLock(tiny.parent / "judge", "ana") as lock:
        lock.note(url="http://127.0.0.1:1234/")
        result = runner.invoke(app, ["judge", str(tiny), "--no-page", "--labeller", "ben"])
        assert result.exit_code == 2, result.output
        (line,) = [x for x in result.output.splitlines() if x.strip()]
        assert line.startswith("error:") and f"pid {os.getpid()}" in line and "by ana" in line
        assert "http://127.0.0.1:1234/" in line
        assert not (tiny.parent / "judge" / "qrels.trec").exists()
    # once the first session is over (however it ended) the folder is free again
    result = runner.invoke(app, ["judge", str(tiny), "--no-page"])
    assert result.exit_code == 0, result.output
    assert (tiny.parent / "judge" / "qrels.trec").is_file()


def _start(exp: Path, *args: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "harness", "judge", str(exp), "--labeller", "ana", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    deadline = time.time() + 120
    seen = []
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith("labelling page: "):
            return proc, line.split()[2]
    proc.kill()
    raise AssertionError("no page: " + "".join(seen))


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_the_grades_are_exported_when_the_session_is_terminated_or_its_terminal_closes(tiny, sig):
    from harness.judging.page import TOKEN_HEADER

    proc, url = _start(tiny)
    try:
        port = int(url.rsplit(":", 1)[1].strip("/"))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/api/state")
        token = json.loads(conn.getresponse().read())["token"]
        for key, grade in (("MEMORY.md#L3-L3", 3), ("MEMORY.md#L5-L5", 0)):
            conn.request("POST", "/api/grade", body=json.dumps({"query": "q1", "key": key, "grade": grade}),
                         headers={"Content-Type": "application/json", TOKEN_HEADER: token})
            assert conn.getresponse().read() and True
        # a second session on the folder, while this one serves: refused, naming the first
        second = subprocess.run([sys.executable, "-m", "harness", "judge", str(tiny), "--no-page"],
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and f"pid {proc.pid}" in second.stderr and url in second.stderr, second.stderr
        if sig == "SIGHUP":
            proc.stdout.close()  # the terminal is gone: whatever the export prints goes nowhere
        proc.send_signal(getattr(signal, sig))
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    qrels = (tiny.parent / "judge" / "qrels.trec").read_text(encoding="utf-8").splitlines()
    assert qrels == ["q1 0 MEMORY.md#L3-L3 3", "q1 0 MEMORY.md#L5-L5 0"]
    assert "by: explicit" in (tiny.parent / "ws" / "queries.judged.yaml").read_text(encoding="utf-8")
    store = LabelStore(tiny.parent / "judge" / "labels.sqlite")
    assert {g.judge for g in store.grades()} == {"ana"}
