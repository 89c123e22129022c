"""The labelling page: a local web page on 127.0.0.1 that shows one query at a time with its pooled chunks
(query terms highlighted) and takes a grade 0-3 per chunk from the keyboard; each grade is written to the
label store before the page shows it as saved, so closing the tab or the terminal loses nothing, and the page
reopens at the first query that still has an ungraded chunk.

    0 not relevant · 1 marginally relevant · 2 relevant · 3 highly relevant, answers it   (grade >= 1 counts as
    relevant in the binary figures, as in TREC)
    keys: 0-3 grade the chunk in focus (and move on) · j/↓ k/↑ move between chunks · n/→/Enter next query ·
          p/← previous query · u the next query with an ungraded chunk

No network and no external assets: the page is one HTML document with its own CSS and script, served only on
127.0.0.1; requests with another Host header are refused (a web page elsewhere cannot reach it by DNS
rebinding) and every write carries the page's one-time token in a header (X-Judge-Token, which a page elsewhere
cannot send without a preflight this server never grants), checked before a byte of the body is read; a body
must state its length and stay under MAX_BODY bytes.  A request that fails never prints a traceback in the
labeller's terminal.  Each grade is stored with who made it (the labeller's name) and when.  The page never says
which configuration returned a chunk.

serve() runs until Ctrl-C, SIGTERM or SIGHUP (the terminal closed) and returns which ended it, so that the
command exports the grades however the session ends.
"""
from __future__ import annotations

import errno
import html
import json
import re
import secrets
import signal
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.errors import ConfigError
from harness.redact import maybe
from harness.judging.pool import Pool
from harness.judging.store import LabelStore

HOST = "127.0.0.1"
GRADES = {0: "not relevant", 1: "marginally relevant", 2: "relevant", 3: "highly relevant, answers it"}
LATIN_TERM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]+")
HAN_RUN = re.compile(r"[\u3400-\u9fff]+")
TOKEN_HEADER = "X-Judge-Token"
MAX_BODY = 16 * 1024  # a grade is ~200 bytes; a chunk key is a path and two line numbers


def check_port(port: object) -> int:
    """--port as a number the page can listen on (0: any free one), else a one-line error."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: a port is 0-65535 (0: any free one)")
    return port


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that failed: one line (a dropped connection: nothing), never a traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        try:
            sys.stderr.write(f"judge page: a request failed ({type(exc).__name__}: {exc})\n")
        except (OSError, ValueError):
            pass


def query_terms(text: str) -> list[str]:
    """The words to highlight: Latin words of 2+ characters and the Chinese words jieba finds (2+ characters)."""
    terms = {t.lower() for t in LATIN_TERM.findall(text)}
    runs = HAN_RUN.findall(text)
    if runs:
        import jieba

        jieba.setLogLevel(60)
        for run in runs:
            terms.update(w for w in jieba.lcut_for_search(run) if len(w) >= 2)
            if len(run) < 2:
                continue
            if not any(len(w) >= 2 for w in jieba.lcut(run)):
                terms.add(run)
    return sorted(terms, key=lambda t: (-len(t), t))


def segments(text: str, terms: list[str]) -> list[list[Any]]:
    """[[piece, marked], ...]: `text` cut where a term occurs (case-insensitive), the page shows marked pieces
    highlighted (as text: nothing here is HTML)."""
    if not terms or not text:
        return [[text, False]]
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
    out: list[list[Any]] = []
    last = 0
    for m in pattern.finditer(text):
        if m.start() > last:
            out.append([text[last:m.start()], False])
        out.append([m.group(0), True])
        last = m.end()
    if last < len(text):
        out.append([text[last:], False])
    return out


class JudgePage:
    """The page's server.  start() serves in a thread (tests), serve() until Ctrl-C (the CLI)."""

    def __init__(self, pool: Pool, store: LabelStore, *, redact: bool = False, port: int = 0, who: str = "page"):
        self.pool, self.store, self.redact, self.who = pool, store, redact, who
        port = check_port(port)
        self.order = list(pool.queries)
        self.token = secrets.token_urlsafe(24)
        self._lock = threading.Lock()
        self.saved = 0
        page = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 30  # seconds a connection may sit silent (a body shorter than its Content-Length)

            def log_message(self, *args: Any) -> None:
                pass

            def _allowed(self) -> bool:
                host = (self.headers.get("Host") or "").split(":")[0]
                if host not in (HOST, "localhost"):
                    self._send(403, {"error": "this page answers on 127.0.0.1 only"})
                    return False
                return True

            def _send(self, code: int, doc: Any, content_type: str = "application/json") -> None:
                raw = doc.encode("utf-8") if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False).encode("utf-8")
                self.send_response(code)
                self.send_header("Content-Type", content_type + "; charset=utf-8")
                self.send_header("Content-Length", str(len(raw)))
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; "
                                                            "style-src 'unsafe-inline'; connect-src 'self'")
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                if not self._allowed():
                    return
                url = urllib.parse.urlsplit(self.path)
                args = urllib.parse.parse_qs(url.query)
                if url.path == "/":
                    self._send(200, page.html(), "text/html")
                elif url.path == "/api/state":
                    self._send(200, page.state())
                elif url.path == "/api/query":
                    try:
                        i = int(args.get("i", ["0"])[0])
                    except ValueError:
                        i = -1
                    if not 0 <= i < len(page.order):
                        self._send(404, {"error": "no such query"})
                        return
                    self._send(200, page.query(i))
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                if not self._allowed():
                    return
                if urllib.parse.urlsplit(self.path).path != "/api/grade":
                    self._send(404, {"error": "not found"})
                    return
                # the token first, from a header: nothing of the body is read for a request without it
                sent = (self.headers.get(TOKEN_HEADER) or "").encode("utf-8", "surrogateescape")
                if not secrets.compare_digest(sent, page.token.encode("ascii")):
                    self._refuse(403, "wrong token: reload the page")
                    return
                if self.headers.get("Transfer-Encoding"):
                    self._refuse(411, "a grade states its Content-Length")
                    return
                try:
                    length = int(self.headers.get("Content-Length") or "")
                except ValueError:
                    self._refuse(411, "a grade states its Content-Length")
                    return
                if not 0 < length <= MAX_BODY:
                    self._refuse(413, f"a grade is at most {MAX_BODY} bytes")
                    return
                try:
                    body = json.loads(self.rfile.read(length).decode("utf-8"))
                except (ValueError, UnicodeDecodeError):
                    self._send(400, {"error": "not JSON"})
                    return
                if not isinstance(body, dict) or not all(isinstance(body.get(k), str) for k in ("query", "key")):
                    self._send(400, {"error": "a grade is {query, key, grade}"})
                    return
                try:
                    self._send(200, page.grade(body["query"], body["key"], body.get("grade")))
                except (KeyError, ValueError) as exc:
                    self._send(400, {"error": str(exc.args[0]) if exc.args else str(exc)})

            def _refuse(self, code: int, error: str) -> None:
                """Answer without reading the body, and close the connection (its unread bytes go with it)."""
                self.close_connection = True
                self._send(code, {"error": error})

        try:
            self._server = _Server((HOST, port), Handler)
        except OSError as exc:
            what = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be opened ({exc.strerror or exc})"
            raise ConfigError(f"--port {port}: {HOST}:{port} {what}; pick another port, or --port 0 for any free "
                              "one") from None
        self._thread: threading.Thread | None = None

    # -- the data the page reads -----------------------------------------------------------------------
    def _graded(self) -> dict[str, dict[str, int]]:
        return self.store.by_query("explicit")

    def state(self) -> dict[str, Any]:
        graded = self._graded()
        rows = []
        for i, qid in enumerate(self.order):
            q = self.pool.queries[qid]
            done = sum(1 for item in q.items if item.key in graded.get(qid, {}))
            rows.append({"i": i, "id": qid, "items": len(q.items), "graded": done})
        total = sum(r["items"] for r in rows)
        done = sum(r["graded"] for r in rows)
        first_open = next((r["i"] for r in rows if r["graded"] < r["items"]), 0)
        return {"queries": rows, "total": total, "graded": done, "resume": first_open, "token": self.token}

    def query(self, i: int) -> dict[str, Any]:
        qid = self.order[i]
        q = self.pool.queries[qid]
        grades = self._graded().get(qid, {})
        text = maybe(q.text, self.redact)
        terms = query_terms(text)
        items = [{"key": it.key, "path": it.path, "start": it.start, "end": it.end,
                  "segments": segments(maybe(it.text, self.redact), terms), "grade": grades.get(it.key)} for it in q.items]
        return {"i": i, "id": qid, "text": text, "items": items, "count": len(self.order)}

    def grade(self, qid: str, key: str, grade: Any) -> dict[str, Any]:
        if qid not in self.pool.queries:
            raise KeyError(f"no query {qid!r}")
        item = next((it for it in self.pool.queries[qid].items if it.key == key), None)
        if item is None:
            raise KeyError(f"query {qid!r} has no pooled chunk {key!r}")
        if not (grade is None or type(grade) is int and 0 <= grade <= 3):
            raise ValueError(f"a grade is 0, 1, 2 or 3, got {grade!r}")
        with self._lock:
            if grade is None:
                self.store.delete(qid, item.path, item.start, item.end, judge=self.who)
            else:
                self.store.put(qid, item.path, item.start, item.end, grade, judge=self.who)
            self.saved += 1
        state = self.state()
        row = state["queries"][self.order.index(qid)]
        return {"ok": True, "key": key, "grade": grade, "graded": state["graded"], "total": state["total"],
                "query_graded": row["graded"], "query_items": row["items"]}

    def html(self) -> str:
        """The page, with the state and the query it opens at inlined (no round trip before it draws)."""
        legend = " · ".join(f"<b>{g}</b> {html.escape(t)}" for g, t in GRADES.items())
        state = self.state()
        first = self.query(state["resume"]) if self.order else None
        boot = json.dumps({"state": state, "query": first}, ensure_ascii=False).replace("</", "<\\/")
        return PAGE.replace("__LEGEND__", legend).replace("__TOKEN__", self.token).replace("__BOOT__", boot)

    # -- serving ---------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{HOST}:{self._server.server_address[1]}/"

    def start(self) -> "JudgePage":
        self._thread = threading.Thread(target=self._server.serve_forever, name="judge-page", daemon=True)
        self._thread.start()
        return self

    def serve(self) -> str:
        """Serve until Ctrl-C, SIGTERM or SIGHUP; returns which ("SIGINT", "SIGTERM", "SIGHUP")."""
        ended = ["SIGINT"]

        def stop(signum: int, frame: Any) -> None:
            ended[0] = signal.Signals(signum).name
            raise KeyboardInterrupt

        previous = {}
        if threading.current_thread() is threading.main_thread():
            for name in ("SIGTERM", "SIGHUP"):
                if hasattr(signal, name):
                    previous[name] = signal.signal(getattr(signal, name), stop)
        try:
            self._server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            for name, handler in previous.items():
                signal.signal(getattr(signal, name), handler)
            self._server.server_close()
        return ended[0]

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() waits for a serve_forever() that must be running
            self._server.shutdown()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> "JudgePage":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


PAGE = """<!doctype html>
<html lang="zh"><head><meta charset="utf-8"><title>harness judge</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 15px/1.5 system-ui, "Noto Sans CJK SC", sans-serif; margin: 0; background: #fafafa; color: #222; }
header { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #ddd; padding: 8px 16px; }
#bar { height: 6px; background: #eee; border-radius: 3px; margin-top: 6px; }
#bar div { height: 6px; background: #3a7; border-radius: 3px; width: 0; }
main { padding: 12px 16px 60px; max-width: 1000px; }
#query { font-size: 20px; font-weight: 600; margin: 8px 0 12px; }
.item { background: #fff; border: 2px solid #ddd; border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.item.focus { border-color: #36c; }
.item .where { color: #666; font-size: 13px; }
.item pre { white-space: pre-wrap; font: inherit; margin: 4px 0 0; }
.item .grade { float: right; font-weight: 700; min-width: 2em; text-align: center; border-radius: 4px; padding: 0 6px; }
.g0 { background: #eee; } .g1 { background: #fde9c4; } .g2 { background: #cfe9ff; } .g3 { background: #bfeacb; }
mark { background: #fff176; }
#status { float: right; color: #666; }
#status.err { color: #c00; font-weight: 700; }
.legend { color: #555; font-size: 13px; }
</style></head>
<body>
<header><span id="status">loading…</span><span id="progress"></span><div id="bar"><div></div></div>
<div class="legend">__LEGEND__ · keys: 0-3 grade · j/↓ k/↑ move · n/→/Enter next query · p/← previous · u next ungraded</div>
</header>
<main><div id="query"></div><div id="items"></div></main>
<script>
"use strict";
const TOKEN = "__TOKEN__";
const BOOT = __BOOT__;
let state = null, current = null, focus = 0, index = 0;
const $ = (id) => document.getElementById(id);
function setStatus(text, error) { const s = $("status"); s.textContent = text; s.className = error ? "err" : ""; }
function progress() {
  const pct = state.total ? Math.round(100 * state.graded / state.total) : 100;
  $("progress").textContent = `Query ${index + 1} of ${state.queries.length} · ${state.graded} of ${state.total} chunks graded (${pct}%)`;
  $("bar").firstElementChild.style.width = pct + "%";
}
function render() {
  $("query").textContent = current.text;
  const box = $("items"); box.textContent = "";
  current.items.forEach((it, n) => {
    const div = document.createElement("div");
    div.className = "item" + (n === focus ? " focus" : ""); div.dataset.key = it.key; div.id = "item-" + n;
    const badge = document.createElement("span");
    badge.className = "grade" + (it.grade === null || it.grade === undefined ? "" : " g" + it.grade);
    badge.textContent = it.grade === null || it.grade === undefined ? "–" : String(it.grade);
    const where = document.createElement("div"); where.className = "where";
    where.textContent = `${n + 1}. ${it.path} lines ${it.start}-${it.end}`;
    const pre = document.createElement("pre");
    for (const [piece, marked] of it.segments) {
      if (marked) { const m = document.createElement("mark"); m.textContent = piece; pre.appendChild(m); }
      else pre.appendChild(document.createTextNode(piece));
    }
    div.append(badge, where, pre); box.appendChild(div);
  });
  progress();
  const f = $("item-" + focus); if (f) f.scrollIntoView({block: "nearest"});
}
function show(doc, i) {
  current = doc; index = i;
  const open = current.items.findIndex((it) => it.grade === null || it.grade === undefined);
  focus = open >= 0 ? open : 0; render(); document.title = `harness judge · ${current.id}`;
}
async function load(i) {
  const r = await fetch("/api/query?i=" + i); show(await r.json(), i);
}
async function grade(g) {
  if (!current || !current.items.length) return;
  const it = current.items[focus];
  setStatus("saving…");
  try {
    const r = await fetch("/api/grade", {method: "POST",
      headers: {"Content-Type": "application/json", "X-Judge-Token": TOKEN},
      body: JSON.stringify({query: current.id, key: it.key, grade: g})});
    const doc = await r.json();
    if (!r.ok || !doc.ok) throw new Error(doc.error || r.status);
    it.grade = g; state.graded = doc.graded; state.queries[index].graded = doc.query_graded;
    setStatus("saved " + it.key + " = " + g);
    const next = current.items.findIndex((x, n) => n > focus && (x.grade === null || x.grade === undefined));
    if (next >= 0) focus = next; else if (focus < current.items.length - 1) focus += 1;
    render();
  } catch (e) { setStatus("NOT saved: " + e.message, true); }
}
function move(d) { if (!current) return; focus = Math.max(0, Math.min(current.items.length - 1, focus + d)); render(); }
function go(i) { if (i >= 0 && i < state.queries.length) load(i); }
document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (["0", "1", "2", "3"].includes(e.key)) { grade(Number(e.key)); e.preventDefault(); }
  else if (e.key === "j" || e.key === "ArrowDown") { move(1); e.preventDefault(); }
  else if (e.key === "k" || e.key === "ArrowUp") { move(-1); e.preventDefault(); }
  else if (e.key === "n" || e.key === "ArrowRight" || e.key === "Enter") { go(index + 1); e.preventDefault(); }
  else if (e.key === "p" || e.key === "ArrowLeft") { go(index - 1); e.preventDefault(); }
  else if (e.key === "u") {
    const open = state.queries.findIndex((q, n) => n > index && q.graded < q.items);
    go(open >= 0 ? open : state.queries.findIndex((q) => q.graded < q.items)); e.preventDefault();
  }
});
state = BOOT.state;  // inlined: the page draws without a round trip; a reload asks the server afresh
setStatus("ready");
if (BOOT.query) show(BOOT.query, state.resume); else $("query").textContent = "Nothing to judge.";
document.body.dataset.ready = "1";
</script></body></html>
"""
