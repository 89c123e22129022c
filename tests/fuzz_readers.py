"""Every reader fuzzed at its boundary, in-process, by generators that know the format (issue 38).

Formats: session transcripts (JSONL lines, and the agent database's transcript_events rows of 2026.8.1 (TEXT) and
2026.9.6 (zstd)), openclaw.json (JSON and JSON5, ${VAR} substitution, SecretRefs), the memory index (its meta row
and chunk rows), queries files (YAML and JSONL), LoCoMo and LongMemEval JSON, study TOML (documents drawn from the
JSON Schema `harness schema` emits, through hypothesis-jsonschema), and the gate's inputs (results.json).  Each
generated document is valid, a valid document's neighbour (the same content written another way), or a valid one
mutated: a value of the wrong type, a number that is not finite or out of range, a time without a zone, a string
Python cannot encode, a size or a nesting past any real file.

The contract (check()):  a valid input gives what its valid neighbour gives; an invalid one is one line of
HarnessError (exit 2) naming the field; never another exception (exit 3), never longer than BOUND_S, never a
changed input file, never a planted key in a message.  The counts go to TALLY: `python -m tests.fuzz_readers
--examples N --out reports/reliability` writes them (fuzz.json, fuzz.md); tests/test_fuzz_readers.py runs a few
examples of each in `make test`.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.bundled import REPOSITORY
from harness.errors import HarnessError

BOUND_S = 10.0  # a reader taking longer than this over one generated input has hung
EXAMPLE_HOME = REPOSITORY / "datasets" / "example-openclaw-home"
RESULTS = REPOSITORY / "reports" / "round2" / "results.json"
SECRET = "sk-live-7Qf2Zx9Lm4Np8Rt1Vw6Yb3Kc5Hd0Gj"  # planted in every input a user gives; never in a message


@dataclass
class Tally:
    examples: int = 0
    accepted: int = 0
    refused: int = 0
    internal: int = 0  # any exception but HarnessError: the CLI's exit 3
    hangs: int = 0
    silent: int = 0  # an invalid input accepted
    false_refusals: int = 0  # a valid input refused
    differs: int = 0  # a valid input that gives other than its valid neighbour
    vague: int = 0  # a refusal of more than one line, or not naming the field
    secrets: int = 0  # the planted key in a message
    changed: int = 0  # an input file changed by reading it
    slowest_s: float = 0.0


TALLY: dict[str, Tally] = {}


class Hang(Exception):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """SIGALRM after `seconds` (Python code stops there; a C loop stops when it returns, and is timed after)."""
    if threading_main() and hasattr(signal, "setitimer"):
        def alarm(*_: Any) -> None:
            raise Hang()

        old = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    else:
        yield


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _digest(path: Path) -> str:
    if path.is_dir():
        return hashlib.sha256("".join(f"{p}:{_digest(p)}" for p in sorted(path.rglob("*")) if p.is_file())
                              .encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""


def check(fmt: str, read: Callable[[], Any], *, files: tuple[Path, ...] = (), expect: str = "any",
          field: str | None = None, neighbour: Any = None, compare: Callable[[Any], Any] = lambda v: v) -> Any:
    """Run one reader over one generated input under the contract (module docstring); AssertionError on a
    breach, after counting it.  expect: "valid" (must be accepted, equal to `neighbour` when given, through
    `compare`), "invalid" (must be refused naming `field`), "any" (either, but nothing else)."""
    tally = TALLY.setdefault(fmt, Tally())
    tally.examples += 1
    before = {p: _digest(p) for p in files}
    start = time.perf_counter()
    value, refusal = None, None
    try:
        with time_limit(BOUND_S):
            value = read()
    except Hang:
        tally.hangs += 1
        raise AssertionError(f"{fmt}: no answer within {BOUND_S} s") from None
    except HarnessError as exc:
        refusal = str(exc)
    except Exception:
        tally.internal += 1
        raise
    finally:
        took = time.perf_counter() - start
        tally.slowest_s = max(tally.slowest_s, took)
        if any(_digest(p) != d for p, d in before.items()):
            tally.changed += 1
            raise AssertionError(f"{fmt}: reading changed an input file")
    if took > BOUND_S:
        tally.hangs += 1
        raise AssertionError(f"{fmt}: took {took:.1f} s, past the bound of {BOUND_S} s")
    if refusal is not None:
        if SECRET in refusal:
            tally.secrets += 1
            raise AssertionError(f"{fmt}: the planted key is in the message: {refusal}")
        if expect == "valid":
            tally.false_refusals += 1
            raise AssertionError(f"{fmt}: a valid input refused: {refusal}")
        if "\n" in refusal or (expect == "invalid" and field is not None and field not in refusal):
            tally.vague += 1
            raise AssertionError(f"{fmt}: the refusal does not name {field!r} in one line: {refusal}")
        tally.refused += 1
        return None
    if expect == "invalid":
        tally.silent += 1
        raise AssertionError(f"{fmt}: an invalid input (at {field}) was accepted")
    if expect == "valid" and neighbour is not None and compare(value) != compare(neighbour):
        tally.differs += 1
        raise AssertionError(f"{fmt}: a valid input gives other than its valid neighbour")
    tally.accepted += 1
    return value


# --- values -------------------------------------------------------------------------------------------------------

# strings as users and files hold them: any code point, lone surrogates included (st.text leaves those out)
any_char = st.characters(codec=None, categories=None)
texts = st.text(any_char, max_size=30) | st.sampled_from(["", " ", "天气怎么样", "${HOME}", "$${X}", "${UNSET_VAR_38}",
                                                          "\ud800", "a\x00b", "x" * 5000, SECRET])
numbers = st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, -1, 2**31, 2**63, 10**30, 1e308, -1e308, 5e-324, 0.5]))
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
junk = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                    max_leaves=8)
not_a_number = st.one_of(st.none(), st.booleans(), texts, st.lists(scalars, max_size=2),
                         st.sampled_from([math.nan, math.inf, -math.inf]))
not_an_object = st.one_of(scalars, st.lists(scalars, max_size=2))


def dumps(value: Any) -> str:
    """JSON as Python writes it: NaN and Infinity as bare words, lone surrogates as escapes (what a file may hold)."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


# --- transcripts ----------------------------------------------------------------------------------------------------

ISO = st.datetimes(timezones=st.none() | st.timezones()).map(lambda d: d.isoformat())
WHEN = st.one_of(ISO, st.integers(min_value=1, max_value=253402300799999), numbers, texts)


@st.composite
def transcript_entries(draw: Any, mutate: bool) -> list[Any]:
    """A session's entries after its header: user turns, memory_search / memory_get calls, their results, replies
    citing files; with `mutate`, any field may hold any JSON value (junk) and entries may be of any shape."""
    value = (lambda good: draw(st.one_of(st.just(good), junk))) if mutate else (lambda good: good)
    out: list[Any] = []
    for i in range(draw(st.integers(1, 6))):
        query = draw(st.sampled_from(["项目的截止日期是哪天", "Wi-Fi password", "报销 流程", "“会议室”在哪里？"]))
        when = draw(WHEN) if mutate else "2026-03-02T10:%02d:00Z" % i
        out.append({"type": "message", "timestamp": when, "message": {"role": "user", "content": value("q")}})
        args = {"query": value(query), "maxResults": value(6), "minScore": value(0.35)}
        out.append({"type": "message", "timestamp": value(when), "message": {"role": "assistant", "content": [
            {"type": "toolCall", "id": f"c{i}", "name": value("memory_search"), "arguments": value(args)}]}})
        rows = [{"path": value("MEMORY.md"), "startLine": value(1), "endLine": value(5), "score": value(0.7),
                 "source": value("memory")}]
        out.append({"type": "message", "message": {"role": "toolResult", "toolCallId": f"c{i}", "content": [
            {"type": "text", "text": json.dumps({"results": rows}, allow_nan=True)}], "details": value({"results": rows})}})
        out.append({"type": "message", "message": {"role": "assistant", "content": [
            {"type": "toolCall", "id": f"g{i}", "name": "memory_get",
             "arguments": {"path": value("MEMORY.md"), "from": value(1), "lines": value(5)}},
            {"type": "text", "text": value("see MEMORY.md#L1-L5 " + draw(st.sampled_from(["", "A" * 20000])))}]}})
        if mutate and draw(st.booleans()):
            out.insert(draw(st.integers(0, len(out))), draw(junk))
    return out


def write_jsonl(path: Path, entries: list[Any], raw_lines: list[bytes] = ()) -> Path:
    head = {"type": "session", "version": 3, "id": path.stem, "timestamp": "2026-03-02T10:00:00Z"}
    lines = [dumps(head).encode()] + [dumps(e).encode() for e in entries] + list(raw_lines)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def write_agent_db(path: Path, sessions: dict[str, list[Any]], compressed: bool) -> Path:
    """The agent database's transcript_events as 2026.8.1 (event_json TEXT) or 2026.9.6 (zstd) write it."""
    import zstandard

    conn = sqlite3.connect(path)
    extra = ", event_zstd BLOB, event_utf8_bytes INTEGER" if compressed else ""
    conn.execute(f"CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT{extra})")
    for sid, entries in sessions.items():
        head = {"type": "session", "version": 3, "id": sid, "timestamp": "2026-03-02T10:00:00Z"}
        for seq, entry in enumerate([head] + entries):
            text = dumps(entry)
            if compressed and seq % 2:
                data = text.encode("utf-8", "surrogatepass")
                conn.execute("INSERT INTO transcript_events VALUES (?, ?, NULL, ?, ?)",
                             (sid, seq, zstandard.ZstdCompressor().compress(data), len(data)))
            else:
                conn.execute("INSERT INTO transcript_events VALUES (?, ?, ?" + (", NULL, NULL" if compressed else "")
                             + ")", (sid, seq, text))
    conn.commit()
    conn.close()
    return path


def mined_texts(sessions: Any) -> list[tuple[str, int]]:
    from harness.inputs.openclaw_sessions import ReadStats
    from harness.inputs.session_mining import mine

    stats = ReadStats()
    mining = mine(sessions, stats)
    for q in mining.queries:  # what init writes: every text must be writable as UTF-8
        json.dumps(q.text, ensure_ascii=False).encode("utf-8")
        for label in q.implicit:
            label.doc_id.encode("utf-8")
    return sorted((q.text, q.count) for q in mining.queries)


def fuzz_transcripts(folder: Path) -> Callable[..., None]:
    from harness.inputs.openclaw_sessions import (
        ReadStats,
        read_database_sessions,
        read_sessions,
    )

    @given(entries=transcript_entries(mutate=False), noisy=transcript_entries(mutate=True),
           raw=st.lists(st.binary(max_size=40) | st.sampled_from([b"\xff\xfe{", b'{"type":', b"[]", b"\xef\xbb\xbf{}"]),
                        max_size=3), compressed=st.booleans())
    def run(entries: list[Any], noisy: list[Any], raw: list[bytes], compressed: bool) -> None:
        work = Path(tempfile.mkdtemp(dir=folder))
        try:
            valid = write_jsonl(work / "valid.jsonl", entries)
            expected = check("transcripts (JSONL)", lambda: mined_texts(read_sessions([valid], None, ReadStats())),
                             files=(valid,), expect="valid")
            # the valid neighbour: the same entries with an entry of an unknown type and blank lines between
            neighbour = write_jsonl(work / "neighbour.jsonl", [{"type": "custom", "data": [1, 2]}] + entries, [b"", b"  "])
            check("transcripts (JSONL)", lambda: mined_texts(read_sessions([neighbour], None, ReadStats())),
                  files=(neighbour,), expect="valid", neighbour=expected)
            db = write_agent_db(work / "agent.sqlite", {"s1": entries}, compressed)
            check("transcripts (agent database rows)",
                  lambda: mined_texts(read_database_sessions(db, ReadStats())), files=(db,), expect="valid",
                  neighbour=expected)
            bad = write_jsonl(work / "noisy.jsonl", noisy, raw)
            check("transcripts (JSONL)", lambda: mined_texts(read_sessions([bad], None, ReadStats())), files=(bad,))
            bad_db = write_agent_db(work / "noisy.sqlite", {"s1": noisy, "s2": entries}, compressed)
            check("transcripts (agent database rows)",
                  lambda: mined_texts(read_database_sessions(bad_db, ReadStats())), files=(bad_db,))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return run


# --- openclaw.json -----------------------------------------------------------------------------------------------

# memorySearch fields the harness reads: (path under the block, a valid value, what an invalid one is drawn from)
READ_FIELDS = [
    ("query.maxResults", st.integers(1, 1000), not_a_number | st.sampled_from([0, -3, 2.5, 10**7])),
    ("query.minScore", st.floats(0, 1), not_a_number | st.sampled_from([-0.1, 1.5, 1e308])),
    ("query.hybrid.vectorWeight", st.floats(0, 1), not_a_number | st.sampled_from([2, -1])),
    ("query.hybrid.textWeight", st.floats(0, 1), not_a_number | st.sampled_from([2, -1])),
    ("query.hybrid.candidateMultiplier", st.integers(1, 50), not_a_number | st.sampled_from([0, 1.5])),
    ("query.hybrid.mmr.enabled", st.booleans(), st.one_of(numbers, texts, st.none())),
    ("query.hybrid.mmr.lambda", st.floats(0, 1), not_a_number),
    ("query.hybrid.temporalDecay.enabled", st.booleans(), st.one_of(numbers, texts, st.none())),
    ("query.hybrid.temporalDecay.halfLifeDays", st.integers(1, 365), not_a_number | st.sampled_from([0, 1.5])),
    ("store.fts.tokenizer", st.sampled_from(["unicode61", "trigram"]), st.one_of(texts, numbers)),
    ("chunking.tokens", st.integers(2, 2000), not_a_number | st.sampled_from([0, 1.5, -4])),
    ("query", st.just({}), not_an_object),
    ("query.hybrid", st.just({}), not_an_object),
    ("chunking", st.just({}), not_an_object),
]
BLOCKS = ["agents.defaults.memorySearch", "memory.search", "memorySearch"]


def put(doc: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = doc
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def json5_text(doc: Any, style: int) -> str:
    """The same document as JSON5: comments, trailing commas, unquoted keys, single quotes."""
    def write(v: Any, depth: int) -> str:
        pad = "  " * depth
        if isinstance(v, dict):
            if not v:
                return "{}"
            items = []
            for k, x in v.items():
                key = k if (style & 1) and k.isidentifier() and k.isascii() else json.dumps(k)
                items.append(f"{pad}  {key}: {write(x, depth + 1)}")
            return "{ // settings\n" + ",\n".join(items) + (",\n" if style & 2 else "\n") + pad + "}"
        if isinstance(v, list):
            return "[" + ", ".join(write(x, depth + 1) for x in v) + (", ]" if v and style & 2 else "]")
        if isinstance(v, str) and style & 4 and "'" not in v and "\\" not in v and v.isprintable():
            return "'" + v + "'"
        return dumps(v)

    return "/* openclaw.json */\n" + write(doc, 0) + "\n"


@st.composite
def openclaw_docs(draw: Any) -> tuple[dict[str, Any], dict[str, Any], str | None, dict[str, str]]:
    """(the valid document, the same with one read field made invalid (or junk anywhere), the field path when it
    is invalid for sure, the environment)."""
    block = draw(st.sampled_from(BLOCKS))
    doc: dict[str, Any] = {"models": {"providers": {"x": {"apiKey": SECRET}}}}
    env = {"EMBED_URL_38": "http://127.0.0.1:8750/v1"}
    fields = draw(st.lists(st.sampled_from(range(len(READ_FIELDS))), unique=True, max_size=6))
    for i in fields:
        path, good, _ = READ_FIELDS[i]
        if path in ("query", "query.hybrid", "chunking") and any(READ_FIELDS[j][0].startswith(path + ".")
                                                                  for j in fields):
            continue
        put(doc, f"{block}.{path}", draw(good))
    put(doc, f"{block}.remote", draw(st.sampled_from([{"baseUrl": "${EMBED_URL_38}", "apiKey": SECRET},
                                                      {"apiKey": {"source": "env", "provider": "default", "id": "K"}},
                                                      {"baseUrl": "http://127.0.0.1:1/v1"}])))
    put(doc, f"{block}.extraPaths", draw(st.lists(st.sampled_from(["notes", "$${LITERAL}", "${EMBED_URL_38}x"]),
                                                  max_size=2)))
    bad = json.loads(json.dumps(doc))
    kind = draw(st.sampled_from(["field", "junk", "unset var", "secret ref"]))
    field = None
    if kind == "field":
        path, _, invalid = draw(st.sampled_from(READ_FIELDS))
        value = draw(invalid)
        put(bad, f"{block}.{path}", value)
        field = f"{block}.{path}"
    elif kind == "unset var":
        put(bad, f"{block}.model", "${UNSET_VAR_38}")
        field = f"{block}.model"
    elif kind == "secret ref":
        put(bad, f"{block}.remote.baseUrl", {"source": "exec", "provider": "op", "id": SECRET})
        field = f"{block}.remote.baseUrl"
    else:
        put(bad, draw(st.sampled_from([f"{block}.query", f"{block}.sync", "agents", "agents.list", "memory", "x.y",
                                       "agents.defaults", "agents.defaults.workspace", f"{block}.store.path",
                                       f"{block}.store", "agents.list"])),
            draw(junk | st.sampled_from(["a\x00b", "~/\x00", [{"id": "main", "workspace": 3}], [{"id": 5}]])))
    return doc, bad, field, env


def settings_of(s: Any) -> Any:
    return (sorted(s.values.items()), [(e.path, e.pattern) for e in s.extra_paths], sorted(s.embedding.items()))


def fuzz_openclaw_json(folder: Path) -> Callable[..., None]:
    from harness.inputs.openclaw_config import read_openclaw_config
    from harness.inputs.openclaw_home import locate

    @given(docs=openclaw_docs(), style=st.integers(0, 7), big=st.sampled_from([0, 0, 0, 1, 2]))
    def run(docs: tuple, style: int, big: int) -> None:
        doc, bad, field, env = docs
        work = Path(tempfile.mkdtemp(dir=folder))
        saved = {k: os.environ.get(k) for k in (*env, "UNSET_VAR_38")}
        os.environ.update(env)
        os.environ.pop("UNSET_VAR_38", None)
        try:
            plain = work / "plain" / "openclaw.json"
            plain.parent.mkdir()
            plain.write_text(dumps(doc), encoding="utf-8")
            expected = check("openclaw.json", lambda: read_openclaw_config(plain), files=(plain,), expect="valid",
                             compare=settings_of)
            five = work / "five" / "openclaw.json"
            five.parent.mkdir()
            five.write_text(json5_text(doc, style), encoding="utf-8")
            check("openclaw.json (JSON5)", lambda: read_openclaw_config(five), files=(five,), expect="valid",
                  neighbour=expected, compare=settings_of)
            check("openclaw.json (home)", lambda: locate(five.parent), files=(five,), expect="valid")
            wrong = work / "bad" / "openclaw.json"
            wrong.parent.mkdir()
            text = json5_text(bad, style) if style & 1 else dumps(bad)
            if big == 1:
                text = dumps({**bad, "deep": deep(200)})
                field = None
            elif big == 2:  # past MAX_JSON5_BYTES: JSON5 of that size is refused for its size, JSON read
                text = text.replace("{", "{\"pad\": \"" + "p" * 300_000 + "\",", 1)
                field = None if style & 1 else field
            wrong.write_text(text, encoding="utf-8", errors="surrogatepass")
            expect = "invalid" if field is not None or big == 1 or (big == 2 and style & 1) else "any"
            check("openclaw.json", lambda: read_openclaw_config(wrong), files=(wrong,), expect=expect, field=field)
            check("openclaw.json (home)", lambda: locate(wrong.parent), files=(wrong,))
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            shutil.rmtree(work, ignore_errors=True)

    return run


# --- the memory index ----------------------------------------------------------------------------------------------

sqlite_values = st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), texts.filter(
    lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)), st.binary(max_size=24),
    st.sampled_from([math.inf, -math.inf, "[1, NaN]", "[1e999]", "[]", "1e999", "NaN"]))
META_KEYS = ["vectorDims", "chunkTokens", "chunkOverlap", "provider", "model", "providerKey", "sources"]


def read_index(path: Path) -> tuple[Any, int, int]:
    from harness.inputs.openclaw_index import MemoryIndex

    with MemoryIndex(path) as index:
        vectors = sum(1 for _, v in index.chunks(vectors=True) if v is not None)
        return index.meta, len(index.files()), vectors


def fuzz_index(folder: Path) -> Callable[..., None]:
    @given(meta_key=st.sampled_from(META_KEYS), meta_value=junk, column=st.sampled_from(
        ["start_line", "end_line", "path", "text", "embedding", "model", "hash", "id"]), value=sqlite_values,
        file_column=st.sampled_from(["mtime", "size", "path", "hash"]), file_value=sqlite_values,
        which=st.sampled_from(["meta", "chunk", "file", "meta text"]))
    def run(meta_key: str, meta_value: Any, column: str, value: Any, file_column: str, file_value: Any,
            which: str) -> None:
        work = Path(tempfile.mkdtemp(dir=folder))
        try:
            path = work / "main.sqlite"
            shutil.copy(EXAMPLE_HOME / "memory" / "main.sqlite", path)
            with sqlite3.connect(path) as conn:
                if which == "meta":
                    (raw,) = conn.execute("SELECT value FROM meta WHERE key = 'memory_index_meta_v1'").fetchone()
                    meta = json.loads(raw)
                    meta[meta_key] = meta_value
                    conn.execute("UPDATE meta SET value = ? WHERE key = 'memory_index_meta_v1'",
                                 (dumps(meta).encode("utf-8", "surrogatepass").decode("utf-8", "replace"),))
                elif which == "meta text":
                    try:
                        conn.execute("UPDATE meta SET value = ? WHERE key = 'memory_index_meta_v1'", (value,))
                    except sqlite3.IntegrityError:
                        pass  # NOT NULL
                elif which == "chunk":
                    try:
                        conn.execute(f"UPDATE chunks SET {column} = ? WHERE rowid = (SELECT min(rowid) FROM chunks)",
                                     (value,))
                    except sqlite3.IntegrityError:
                        pass  # a NOT NULL or UNIQUE column: OpenClaw's schema refuses it too
                else:
                    try:
                        conn.execute(f"UPDATE files SET {file_column} = ? WHERE rowid = (SELECT min(rowid) FROM files)",
                                     (file_value,))
                    except sqlite3.IntegrityError:
                        pass
            conn.close()
            check("index SQLite (meta and rows)", lambda: read_index(path), files=(path,))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return run


# --- queries files --------------------------------------------------------------------------------------------------

@st.composite
def query_lists(draw: Any) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 5))):
        q: dict[str, Any] = {"id": f"q{i}", "text": draw(st.sampled_from(["天气怎么样", "Wi-Fi password?", "报销 流程"]))}
        kind = draw(st.sampled_from(["path", "lines", "contains", "negative"]))
        if kind == "negative":
            q["kind"] = "negative"
        else:
            q["path"] = "MEMORY.md"
            if kind == "lines":
                q["lines"] = [1, draw(st.integers(1, 50))]
            elif kind == "contains":
                q["contains"] = "password"
        out.append(q)
    return out


QUERY_FIELDS = {"id": not_a_number.filter(lambda v: not isinstance(v, str)) | st.just(""),
                "text": st.one_of(st.none(), numbers, st.lists(scalars, max_size=2), st.just(""), st.just("\ud800")),
                "lines": st.one_of(texts, numbers, st.just([3, 1]), st.just([1, math.inf]), st.just([1, 2, 3]),
                                   st.just([-1, 2]), st.just([1.5, 2])),
                "kind": st.one_of(numbers, st.sampled_from(["suite?", "", "NEGATIVE!"])),
                "path": st.one_of(numbers, st.just("../etc/passwd"), st.just("/abs.md"), st.just(""))}


def yaml_text(queries: list[dict[str, Any]]) -> str:
    lines = ["# queries"]
    for q in queries:
        lines.append(f"- id: {dumps(q['id'])}")
        lines += [f"  {k}: {dumps(v)}" for k, v in q.items() if k != "id"]
    return "\n".join(lines) + "\n"


def specs_of(specs: Any) -> Any:
    return [(s.id, s.text, s.kind, s.path, s.lines, s.contains) for s in specs]


def fuzz_queries(folder: Path) -> Callable[..., None]:
    from harness.inputs.query_files import load_query_specs

    @given(queries=query_lists(), data=st.data())
    def run(queries: list[dict[str, Any]], data: Any) -> None:
        work = Path(tempfile.mkdtemp(dir=folder))
        try:
            y = work / "queries.yaml"
            y.write_text(yaml_text(queries), encoding="utf-8")
            expected = check("queries (YAML)", lambda: load_query_specs(y), files=(y,), expect="valid", compare=specs_of)
            j = work / "queries.jsonl"
            j.write_text("".join(dumps(q) + "\n" for q in queries), encoding="utf-8")
            check("queries (JSONL)", lambda: load_query_specs(j), files=(j,), expect="valid", neighbour=expected,
                  compare=specs_of)
            i = data.draw(st.integers(0, len(queries) - 1))
            key = data.draw(st.sampled_from(sorted(k for k in QUERY_FIELDS if k in queries[i] or k in ("id", "text"))))
            bad = [dict(q) for q in queries]
            bad[i][key] = data.draw(QUERY_FIELDS[key])
            if key == "kind" and bad[i][key] in ("suite", "negative", "paraphrase"):
                return
            for suffix, text in ((".yaml", yaml_text(bad)), (".jsonl", "".join(dumps(q) + "\n" for q in bad))):
                f = work / f"bad{suffix}"
                f.write_text(text, encoding="utf-8", errors="surrogatepass")
                check(f"queries ({suffix[1:].upper()})", lambda: load_query_specs(f), files=(f,), expect="any")
            noisy = work / "noisy.yaml"
            noisy.write_bytes(data.draw(st.sampled_from([b"\xff\xfe- id: q", b"- id: q\n  text: [[[[", b"{a: b}",
                                                         b"- " * 5000, yaml_text(queries).encode()[:-7],
                                                         b"- id: q1\n  text: x\n  lines: [1, 1e999]\n  path: M.md\n"])))
            check("queries (YAML)", lambda: load_query_specs(noisy), files=(noisy,))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return run


# --- LoCoMo and LongMemEval -------------------------------------------------------------------------------------------

def locomo_doc() -> list[dict[str, Any]]:
    conv = {"speaker_a": "Caroline", "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group."},
                          {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds great."}],
            "session_2_date_time": "2023-05-09T10:00:00",
            "session_2": [{"speaker": "Caroline", "dia_id": "D2:1", "text": "I paint on weekends."}]}
    qa = [{"question": "What did Caroline go to?", "answer": "a support group", "evidence": ["D1:1"], "category": 1},
          {"question": "What does Caroline do on weekends?", "answer": "paint", "evidence": ["D2:1"], "category": 4}]
    return [{"sample_id": "conv-1", "conversation": conv, "qa": qa}]


def longmemeval_doc() -> list[dict[str, Any]]:
    sample = REPOSITORY / "datasets" / "handmade" / "longmemeval-sample.json"
    return json.loads(sample.read_text(encoding="utf-8"))


def paths_of(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths_of(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:4]):
            out += paths_of(v, prefix + (i,))
    return out


def replaced(doc: Any, at: tuple, value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    if not at:
        return value
    node = doc
    for part in at[:-1]:
        node = node[part]
    node[at[-1]] = value
    return doc


def fuzz_conversations(folder: Path) -> Callable[..., None]:
    from harness.inputs.locomo import load_locomo
    from harness.inputs.longmemeval import load_longmemeval, relevant_documents

    locomo, lme = locomo_doc(), longmemeval_doc()
    locomo_paths, lme_paths = paths_of(locomo), paths_of(lme)

    def read_lme(path: Path) -> Any:
        questions = load_longmemeval(path)
        return [sorted(relevant_documents(q, g, a)) for q in questions for g in ("session", "turn") for a in (0, 1)]

    @given(which=st.sampled_from(["locomo", "longmemeval"]), data=st.data(), value=junk | st.sampled_from(
        ["2023-05-09T10:00:00+08:00", "2023-05-09", "31 February, 2023", "9999-12-31T23:59:59-23:00"]))
    def run(which: str, data: Any, value: Any) -> None:
        work = Path(tempfile.mkdtemp(dir=folder))
        doc, paths = (locomo, locomo_paths) if which == "locomo" else (lme, lme_paths)
        read = load_locomo if which == "locomo" else read_lme
        fmt = "LoCoMo JSON" if which == "locomo" else "LongMemEval JSON"
        try:
            valid = work / "valid.json"
            valid.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
            if data.draw(st.integers(0, 9)) == 0:
                check(fmt, lambda: read(valid), files=(valid,), expect="valid")
            at = data.draw(st.sampled_from(paths))
            bad = work / "bad.json"
            bad.write_text(dumps(replaced(doc, at, value)), encoding="utf-8")
            check(fmt, lambda: read(bad), files=(bad,))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return run


# --- study TOML (documents drawn from `harness schema`) ---------------------------------------------------------------

def toml_text(doc: dict[str, Any]) -> str:
    """A TOML document of a schema-drawn dict: scalars and arrays at the top, tables (and arrays of tables) after."""
    def value(v: Any) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
        if isinstance(v, int):
            return str(v)
        if v is None:
            return '""'
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")

    return "\n".join(f"{json.dumps(k)} = {value(v)}" for k, v in doc.items()) + "\n"


def from_schema(schema: dict[str, Any], root: dict[str, Any] | None = None, depth: int = 0) -> st.SearchStrategy:
    """Documents valid under a JSON Schema of the shape `harness schema` emits (pydantic's: $defs/$ref, anyOf,
    allOf, const, enum, typed properties with required, items, minItems, bounds, minLength, pattern).  Written here
    because hypothesis-jsonschema 0.23.1, the newest, fails on the installed hypothesis (6.170: "'many' object has
    no attribute 'more'"); docs/reference/packages.md says so."""
    root = root or schema
    if depth > 12:
        return st.none()
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return st.deferred(lambda: from_schema(root["$defs"][name], root, depth + 1))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, root, depth + 1) for s in schema[key]])
    if "allOf" in schema:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = root["$defs"][part["$ref"].rsplit("/", 1)[-1]] if "$ref" in part else part
            merged = {**part, **merged, "properties": {**part.get("properties", {}), **merged.get("properties", {})}}
        return from_schema(merged, root, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, root, depth + 1) for k in kind])
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        return st.text(any_char, min_size=schema.get("minLength", 0), max_size=12)
    if kind in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        hi = schema.get("maximum", schema.get("exclusiveMaximum"))
        if kind == "integer":
            return st.integers(None if lo is None else math.ceil(lo + ("exclusiveMinimum" in schema)),
                               None if hi is None else math.floor(hi - ("exclusiveMaximum" in schema)))
        return st.floats(lo, hi, exclude_min="exclusiveMinimum" in schema, exclude_max="exclusiveMaximum" in schema,
                         allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = from_schema(schema.get("items", {}), root, depth + 1) if schema.get("items") else scalars
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=max(schema.get("minItems", 0), 3))
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = set(schema.get("required", ()))
        fields = {k: from_schema(v, root, depth + 1) for k, v in props.items()}

        @st.composite
        def objects(draw: Any) -> dict[str, Any]:
            return {k: draw(v) for k, v in fields.items() if k in required or draw(st.integers(0, 3)) == 0}

        return objects()
    return scalars


def fuzz_study_toml(folder: Path) -> Callable[..., None]:
    from harness.studies.plan import plan
    from harness.studies.spec import study_kind, study_schema

    kinds = ["experiment", "matrix", "grid"]
    strategies = {k: from_schema(study_schema(k)) for k in kinds}
    warm = Path(tempfile.mkdtemp(dir=folder)) / "grid.toml"  # imports and the experiment's first load, untimed
    warm.write_text('kind = "grid"\n[grid]\nvector_weight = [0.5]\n', encoding="utf-8")
    plan(warm, experiment=REPOSITORY / "experiments" / "round2.toml")

    @given(kind=st.sampled_from(kinds), data=st.data())
    def run(kind: str, data: Any) -> None:
        doc = data.draw(strategies[kind])
        if not isinstance(doc, dict):
            return
        if kind == "experiment":
            doc.setdefault("dataset", {"name": "king78"})
        work = Path(tempfile.mkdtemp(dir=folder))
        try:
            path = work / "study.toml"
            path.write_text(toml_text(doc), encoding="utf-8", errors="surrogatepass")
            experiment = REPOSITORY / "experiments" / "round2.toml" if study_kind(kind).takes_experiment else None
            os.environ["HARNESS_CONFIRM_ABOVE"] = "50"
            try:
                check("study TOML (from `harness schema`)", lambda: plan(path, experiment=experiment), files=(path,))
            finally:
                os.environ.pop("HARNESS_CONFIRM_ABOVE", None)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return run


# --- the gate's inputs -------------------------------------------------------------------------------------------------

def fuzz_gate(folder: Path) -> Callable[..., None]:
    from harness.gate.run import run_gate

    base = json.loads(RESULTS.read_text(encoding="utf-8"))
    where = [p for p in paths_of({k: base[k] for k in ("summary", "queries", "config", "dataset")}) if p]

    @given(at=st.sampled_from(where), value=junk, edit_text=st.booleans())
    def run(at: tuple, value: Any, edit_text: bool) -> None:
        work = Path(tempfile.mkdtemp(dir=folder))
        try:
            baseline = work / "baseline.json"
            shutil.copy(RESULTS, baseline)
            current = work / "results.json"
            current.write_text(dumps(replaced(base, at, value)), encoding="utf-8")
            check("gate inputs (results.json)", lambda: run_gate(current, baseline), files=(current, baseline))
            if edit_text:
                qid = next(iter(base["queries"]))
                edited = replaced(base, ("queries", qid, "text"), base["queries"][qid]["text"] + "?")
                current.write_text(dumps(edited), encoding="utf-8")
                check("gate inputs (results.json)", lambda: run_gate(current, baseline), files=(current, baseline),
                      expect="invalid", field=qid)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return run


TARGETS = {"transcripts": fuzz_transcripts, "openclaw.json": fuzz_openclaw_json, "index": fuzz_index,
           "queries": fuzz_queries, "conversations": fuzz_conversations, "study TOML": fuzz_study_toml,
           "gate": fuzz_gate}


def run_target(name: str, examples: int, folder: Path, seed: int | None = None) -> None:
    test = TARGETS[name](folder)
    configured = settings(max_examples=examples, deadline=None, database=None, derandomize=seed is None,
                          suppress_health_check=list(HealthCheck), print_blob=True)(test)
    if seed is not None:
        from hypothesis import seed as with_seed

        configured = with_seed(seed)(configured)
    configured()


def report(out: Path, examples: int, seconds: float, seed: int | None) -> None:
    rows = {fmt: asdict(t) for fmt, t in sorted(TALLY.items())}
    total = {k: sum(r[k] for r in rows.values()) for k in asdict(Tally()) if k != "slowest_s"}
    doc = {"examples_per_target": examples, "seed": seed, "seconds": round(seconds, 1), "bound_s": BOUND_S,
           "formats": rows, "total": total}
    out.mkdir(parents=True, exist_ok=True)
    (out / "fuzz.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    lines = [f"# Readers fuzzed at their boundary: {total['examples']:,} generated inputs", "",
             f"{examples} hypothesis examples per target (each reads several inputs), in {seconds:.0f} s, in-process; "
             f"a per-input bound of {BOUND_S:g} s.  Reproduce: `make reliability FUZZ_EXAMPLES={examples}` "
             f"(`python -m tests.fuzz_readers --examples {examples} --out reports/reliability`).", "",
             "| format | inputs | accepted | refused (exit 2, naming the field) | exit 3 | hangs | silent acceptances "
             "| valid refused | differs from its neighbour | secrets | changed files | slowest (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for fmt, r in rows.items():
        lines.append(f"| {fmt} | {r['examples']:,} | {r['accepted']:,} | {r['refused']:,} | {r['internal']} | "
                     f"{r['hangs']} | {r['silent']} | {r['false_refusals']} | {r['differs']} | {r['secrets']} | "
                     f"{r['changed']} | {r['slowest_s']:.2f} |")
    lines.append(f"| **total** | {total['examples']:,} | {total['accepted']:,} | {total['refused']:,} | "
                 f"{total['internal']} | {total['hangs']} | {total['silent']} | {total['false_refusals']} | "
                 f"{total['differs']} | {total['secrets']} | {total['changed']} | |")
    (out / "fuzz.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="hypothesis examples per target (the size knob)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--only", action="append", choices=sorted(TARGETS))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    failed = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only or TARGETS:
            t0 = time.perf_counter()
            try:
                run_target(name, args.examples, Path(folder), args.seed)
            except Exception as exc:  # counted in TALLY; the campaign goes on to the next target
                failed.append(f"{name}: {type(exc).__name__}: {str(exc)[:500]}")
            print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    if args.out:
        report(args.out, args.examples, time.perf_counter() - start, args.seed)
    for line in failed:
        print(line, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
