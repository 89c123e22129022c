"""The bad-input campaign's cases: malformed and hostile inputs of every kind a user hands the CLI.

Each family is a function of a seeded random.Random that returns one Case: the files to write into
the case's own folder (beside a copy of the shared fixtures: a small workspace, its queries, a valid
results.json and its TREC export), the `harness` command to run there, and what must come out:

    error    exit 2, one `error:` line naming the file (and key, line or option) the case broke
    refuse   the same, for a value outside its declared domain: exit 0 there is a *silent acceptance*
    ok       exit 0 (a valid input, e.g. UTF-8 with a BOM); `note` must then be printed when given
    either   exit 0, or exit 2 naming what it must (a hostile input the harness may read or refuse)
    verdict  exit 0 or 1 (the gate on valid files), or exit 2 naming what it must

Families draw from the experiment schema (`harness schema`) where they can: every stage parameter with
a declared domain gets values outside it, so the schema and the CLI are checked against each other.
Case i of seed s is always the same case: `python -m tests.campaign --seed s --case i` replays it.
"""
from __future__ import annotations

import json
import math
import random
import string
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Callable

SECRET = "sk-campaign-CANARY-7f3a9c1e5b"  # must never be printed or written by the harness

# --- the shared fixtures -------------------------------------------------------------------------------

MEMORY = {
    "ws/MEMORY.md": "# 记忆\n\n- 护照在 3 月 4 日换发，带旧护照和两张照片。\n- 车钥匙放在门口的抽屉里。\n",
    "ws/memory/2026-03-01.md": "# 2026-03-01\n\n- Restored the Postgres backup with pg_restore.\n"
                               "- The staging database password rotates monthly.\n",
    "ws/memory/2026-03-02.md": "# 2026-03-02\n\n## 会议\n\n- 周三下午三点和设计组开会，讨论新首页。\n"
                               "- Deploys freeze on Fridays after 15:00.\n",
}
QUERIES = [
    {"id": "q1", "text": "护照换发要带什么", "path": "MEMORY.md"},
    {"id": "q2", "text": "How do we restore the Postgres backup?", "contains": "pg_restore"},
    {"id": "q3", "text": "什么时候和设计组开会", "path": "memory/2026-03-02.md", "lines": [5, 5]},
    {"id": "q4", "text": "what is the wifi password of the beach house", "kind": "negative"},
]


def experiment_dict(**tables: Any) -> dict[str, Any]:
    """The valid workspace experiment every experiment case starts from (hash embedder: fast)."""
    doc: dict[str, Any] = {
        "name": "case", "preset": "openclaw-2026.08",
        "dataset": {"name": "workspace", "path": "ws", "queries": "ws/queries.yaml"},
        "embedder": {"name": "hash"},
        "evaluation": {"report_purity": False, "now": date(2026, 3, 8)},
    }
    doc.update(tables)
    return doc


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value).__name__)


def toml_key(key: str) -> str:
    return key if key and all(c in string.ascii_letters + string.digits + "_-" for c in key) else json.dumps(key)


def to_toml(doc: dict[str, Any]) -> str:
    """A dict as TOML: scalars first, then one [table] per dict, [[table]] per list of dicts."""
    lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in doc.items()
             if not isinstance(v, dict) and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))]
    for key, value in doc.items():
        if isinstance(value, dict):
            lines += ["", f"[{toml_key(key)}]", *(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())]
        elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            for item in value:
                lines += ["", f"[[{toml_key(key)}]]", *(f"{toml_key(k)} = {toml_value(v)}" for k, v in item.items())]
    return "\n".join(lines) + "\n"


def queries_yaml(queries: list[dict[str, Any]]) -> str:
    out = []
    for q in queries:
        first = True
        for key, value in q.items():
            out.append(("- " if first else "  ") + f"{key}: {json.dumps(value, ensure_ascii=False)}")
            first = False
    return "\n".join(out) + "\n"


def queries_jsonl(queries: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)


OPENCLAW_JSON = {"memory": {"search": {"query": {"maxResults": 6, "minScore": 0.35},
                                       "store": {"fts": {"tokenizer": "unicode61"}}}},
                 "agents": {"defaults": {"memorySearch": {"query": {"hybrid": {"vectorWeight": 0.7,
                                                                                "textWeight": 0.3}}}},
                            "list": [{"id": "main"}]}}


# --- a case ------------------------------------------------------------------------------------------------

@dataclass
class Case:
    kind: str  # the family's kind of input: experiment, queries, openclaw-json, workspace, trec, results, gate, ...
    label: str  # what this case does, in a few words
    args: list[str]  # the harness command, run in the case's folder
    expect: str = "error"  # error | refuse | ok | either | verdict (module docstring)
    names: list[tuple[str, ...]] = field(default_factory=list)  # each: one of these must be in the error line
    files: dict[str, str | bytes] = field(default_factory=dict)  # written (over the fixtures) before the run
    remove: list[str] = field(default_factory=list)  # fixture paths removed first
    dirs: list[str] = field(default_factory=list)  # folders made
    symlinks: list[tuple[str, str]] = field(default_factory=list)  # (link, target)
    modes: dict[str, int] = field(default_factory=dict)  # chmod after writing
    env: dict[str, str] = field(default_factory=dict)  # added to the case's environment (paths relative: in the folder)
    note: str | None = None  # expect ok: this must be printed
    secret: bool = False  # SECRET is in the input: it must appear nowhere the harness writes
    timeout: float = 60.0
    as_nobody: bool = False  # the case needs a file its process cannot read (as root: run as nobody)
    fixtures: bool = True  # copy the shared fixtures into the folder first


Family = Callable[[random.Random], Case]
FAMILIES: dict[str, Family] = {}


def family(name: str) -> Callable[[Family], Family]:
    def register(fn: Family) -> Family:
        FAMILIES[name] = fn
        return fn
    return register


RUN = ["run", "x.toml", "--out", "out"]
X = ("x.toml",)


def run_case(kind: str, label: str, doc: dict[str, Any] | str | bytes, expect: str = "error",
             names: list[tuple[str, ...]] | None = None, **kw: Any) -> Case:
    text = to_toml(doc) if isinstance(doc, dict) else doc
    files = {"x.toml": text, **kw.pop("files", {})}
    return Case(kind, label, list(RUN), expect, names if names is not None else [X], files=files, **kw)


# --- encodings, shared by every text input ---------------------------------------------------------------

def encoded(rng: random.Random, text: str) -> tuple[str, bytes, str, tuple[str, ...]]:
    """(label, bytes, expect, what the error must say) of `text` in some encoding."""
    choice = rng.choice(["bom", "utf16le", "utf16be", "utf16-nobom", "latin1", "bad-byte", "nul", "utf32"])
    if choice == "bom":
        return "UTF-8 with a BOM", b"\xef\xbb\xbf" + text.encode("utf-8"), "ok", ()
    if choice == "utf16le":
        return "UTF-16 LE with a BOM", text.encode("utf-16"), "error", ("UTF-16",)
    if choice == "utf16be":
        return "UTF-16 BE with a BOM", b"\xfe\xff" + text.encode("utf-16-be"), "error", ("UTF-16",)
    if choice == "utf16-nobom":
        return "UTF-16 LE without a BOM", text.encode("utf-16-le"), "error", ("UTF-16",)
    if choice == "utf32":
        return "UTF-32 with a BOM", text.encode("utf-32"), "error", ("UTF-32", "UTF-16", "UTF-8")
    if choice == "latin1":
        return "Latin-1 text", (text + "\n# café à la crème\n").encode("latin-1", "replace"), "error", ("UTF-8",)
    raw = bytearray(text.encode("utf-8"))
    at = rng.randrange(len(raw))
    if choice == "nul":
        raw[at:at] = b"\x00"
        return "a NUL byte", bytes(raw), "either", ()
    raw[at:at] = bytes([rng.choice([0xff, 0xfe, 0xc0, 0x80, 0xed])])
    return "an invalid UTF-8 byte", bytes(raw), "error", ("UTF-8", "byte")


def deep(rng: random.Random, syntax: str) -> tuple[str, int]:
    """A value nested `depth` levels deep in JSON/TOML inline syntax."""
    depth = rng.choice([70, 200, 1000, 5000, 50_000])
    if syntax == "array":
        return "[" * depth + "1" + "]" * depth, depth
    if syntax == "json-object":
        return '{"a": ' * depth + "1" + "}" * depth, depth
    return "{a = " * depth + "1" + "}" * depth, depth


# --- experiment files -----------------------------------------------------------------------------------------

@family("experiment-encoding")
def experiment_encoding(rng: random.Random) -> Case:
    label, raw, expect, says = encoded(rng, to_toml(experiment_dict()))
    names = [X, says] if says else [X]
    return run_case("experiment", f"experiment TOML in {label}", raw, expect, names)


@family("experiment-syntax")
def experiment_syntax(rng: random.Random) -> Case:
    text = to_toml(experiment_dict())
    choice = rng.choice(["truncate", "garbage-line", "deep-array", "deep-table", "deep-dotted", "duplicate-table",
                         "huge", "empty", "comments-only", "duplicate-key"])
    if choice == "truncate":
        cut = rng.randrange(1, len(text) - 1)
        return run_case("experiment", f"experiment TOML cut at byte {cut}", text[:cut], "either", [X])
    if choice == "garbage-line":
        lines = text.splitlines()
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["= 3", "[[", "a = ", "x = 'unclosed", "[fusion",
                                                                  "key = value with spaces", "\t= ="]))
        return run_case("experiment", "a broken line in the experiment TOML", "\n".join(lines) + "\n", "error", [X])
    if choice in ("deep-array", "deep-table"):
        value, depth = deep(rng, "array" if choice == "deep-array" else "toml-table")
        return run_case("experiment", f"a {choice[5:]} nested {depth} deep in the experiment",
                        text.replace("[dataset]", f"[layout]\nx = {value}\n\n[dataset]"), "error", [X])
    if choice == "deep-dotted":
        depth = rng.choice([50, 500, 5000])
        return run_case("experiment", f"a table header {depth} keys deep",
                        text + "\n[" + ".".join(["a"] * depth) + "]\nx = 1\n", "error", [X])
    if choice == "duplicate-table":
        return run_case("experiment", "[embedder] twice", text + '\n[embedder]\nname = "hash"\n', "error", [X])
    if choice == "duplicate-key":
        return run_case("experiment", "a key given twice", text.replace('name = "case"', 'name = "case"\nname = "b"'),
                        "error", [X])
    if choice == "huge":
        size = rng.choice([2, 12, 40])
        filler = "".join(f"# {'x' * 70}\n" for _ in range(size * 1024 * 1024 // 73))
        return run_case("experiment", f"a {size} MB experiment file (comments)", text + filler, "either", [X],
                        timeout=90)
    if choice == "empty":
        return run_case("experiment", "an empty experiment file", "", "error",
                        [X, ("preset", "dataset")])
    return run_case("experiment", "an experiment of comments only", "# nothing here\n# at all\n", "error",
                    [X, ("preset", "dataset")])


@family("experiment-structure")
def experiment_structure(rng: random.Random) -> Case:
    doc = experiment_dict()
    choice = rng.choice(["no-dataset", "dataset-no-name", "postprocess-no-name", "preset-int", "preset-empty",
                         "preset-unknown", "name-empty", "name-int", "name-long", "name-path", "unknown-key",
                         "table-scalar", "postprocess-table", "unknown-stage", "unknown-dataset", "stage-no-name",
                         "dataset-scalar", "layout-for-workspace", "min-score-twice", "preset-path-missing",
                         "unknown-postprocess", "list-as-name"])
    if choice == "no-dataset":
        del doc["dataset"]
        return run_case("experiment", "no [dataset] table", doc, "either", [X, ("[dataset]", "dataset")])
    if choice == "dataset-no-name":
        del doc["dataset"]["name"]
        return run_case("experiment", "[dataset] without name", doc, "error", [X, ("[dataset]",), ("name",)])
    if choice == "postprocess-no-name":
        doc["postprocess"] = [{"min_score": 0.3}]
        return run_case("experiment", "[[postprocess]] without name", doc, "error", [X, ("postprocess",), ("name",)])
    if choice == "preset-int":
        doc["preset"] = rng.choice([1, 2.5, True, [1]])
        return run_case("experiment", f"preset = {toml_value(doc['preset'])}", doc, "refuse", [X, ("preset",)])
    if choice == "preset-empty":
        doc["preset"] = rng.choice(["", "  "])
        return run_case("experiment", "an empty preset name", doc, "refuse", [X, ("preset",)])
    if choice == "preset-unknown":
        doc["preset"] = rng.choice(["openclaw-2099.01", "OPENCLAW-2026.08", "qmd ", "../../etc/passwd"])
        return run_case("experiment", f"unknown preset {doc['preset']!r}", doc, "error", [X, ("preset",)])
    if choice == "preset-path-missing":
        doc["preset"] = "presets/missing.toml"
        return run_case("experiment", "a preset path that does not exist", doc, "error", [X, ("preset", "missing")])
    if choice == "name-empty":
        doc["name"] = rng.choice(["", "   ", "\t"])
        return run_case("experiment", "an empty experiment name", doc, "refuse", [X, ("name",)])
    if choice == "name-int":
        doc["name"] = rng.choice([1, 0, 3.5, False, [1, 2], {"a": 1}])
        return run_case("experiment", f"name = {toml_value(doc['name'])}", doc, "refuse", [X, ("name",)])
    if choice == "name-long":
        doc["name"] = rng.choice(["n", "名", "a-"]) * rng.choice([120, 300, 1000])
        return Case("experiment", f"a {len(doc['name'])}-character experiment name", ["run", "x.toml"], "either",
                    [X], files={"x.toml": to_toml(doc)})
    if choice == "name-path":
        doc["name"] = rng.choice(["../../escape", "a/b/c", "/abs/name", "..", "con", "a\\b"])
        return Case("experiment", f"experiment name {doc['name']!r} (no --out)", ["run", "x.toml"], "either", [X],
                    files={"x.toml": to_toml(doc)})
    if choice == "unknown-key":
        doc[rng.choice(["fusoin", "Dataset", "embeder", "search_settings"])] = {"x": 1}
        return run_case("experiment", "an unknown top-level table", doc, "error", [X])
    if choice == "table-scalar":
        table = rng.choice(["fusion", "chunker", "embedder", "search", "evaluation", "profile", "layout"])
        doc[table] = rng.choice([1, "weighted", True, [1, 2]])
        return run_case("experiment", f"{table} = a value, not a table", doc, "error", [X, (table,)])
    if choice == "dataset-scalar":
        doc["dataset"] = rng.choice(["workspace", 3, ["workspace"]])
        return run_case("experiment", "dataset = a value, not a table", doc, "error", [X, ("dataset",)])
    if choice == "postprocess-table":
        doc["postprocess"] = {"name": "min_score"}
        return run_case("experiment", "[postprocess] as one table", doc, "error", [X, ("postprocess",)])
    if choice == "unknown-stage":
        table = rng.choice(["fusion", "chunker", "tokenizer", "lexical", "embedder", "vector"])
        doc[table] = {"name": rng.choice(["bogus", "", "Weighted", "hash ", "fts6"])}
        return run_case("experiment", f"unknown [{table}] name", doc, "error", [X, (f"[{table}]",)])
    if choice == "unknown-postprocess":
        doc["postprocess"] = [{"name": rng.choice(["min-score", "MMR", "bogus"])}]
        return run_case("experiment", "unknown postprocess stage", doc, "error", [X, ("postprocess",)])
    if choice == "list-as-name":
        table = rng.choice(["fusion", "embedder", "chunker"])
        doc[table] = {"name": rng.choice([["weighted"], 3, {"a": 1}, True])}
        return run_case("experiment", f"[{table}] name of the wrong type", doc, "error", [X, (f"[{table}]",), ("name",)])
    if choice == "stage-no-name":
        doc["preset"] = None
        del doc["preset"]
        doc["fusion"] = {"vector_weight": 0.5}
        return run_case("experiment", "no preset and stage tables without names", doc, "error", [X])
    if choice == "unknown-dataset":
        doc["dataset"]["name"] = rng.choice(["worksapce", "king79", "", "LOCOMO"])
        return run_case("experiment", f"unknown data set {doc['dataset']['name']!r}", doc, "error", [X, ("[dataset]",)])
    if choice == "layout-for-workspace":
        doc["layout"] = {"records": "all"}
        return run_case("experiment", "[layout] options a workspace does not take", doc, "error", [X, ("layout",)])
    doc["postprocess"] = [{"name": "min_score", "min_score": 0.3}, {"name": "min_score", "min_score": 0.5}]
    return run_case("experiment", "min_score twice in [[postprocess]]", doc, "refuse", [X, ("min_score",)])


# --- declared domains, from the experiment schema ---------------------------------------------------------

_SCHEMA: dict[str, Any] = {}


def schema() -> dict[str, Any]:
    if not _SCHEMA:
        from harness.catalog import experiment_schema

        _SCHEMA.update(experiment_schema())
    return _SCHEMA


def _branches(table: str) -> dict[str, dict[str, Any]]:
    """name -> the JSON schema of that implementation's table."""
    node = schema()["properties"][table]
    node = node.get("items", node)
    return {b["if"]["properties"]["name"]["const"]: b["then"] for b in node["allOf"]}


# parameters a stage cannot be built without (their own values are valid)
REQUIRED = {("embedder", "openai-compatible"): {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
            ("reranker", "http"): {"base_url": "http://127.0.0.1:9", "model": "m"},
            ("chat", "openai-compatible"): {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
            ("dataset", "beir"): {"path": "ws"}, ("dataset", "squad"): {"path": "ws/x.json"}}
SKIP_TABLES = ("dataset",)  # data-set parameters are checked by the data-set families


def _kinds(prop: dict[str, Any]) -> list[dict[str, Any]]:
    alts = prop.get("anyOf") or [prop]
    return [a for a in alts if a.get("type") != "null"]


def invalid_values(prop: dict[str, Any], rng: random.Random) -> list[tuple[Any, str]]:
    """Values outside a property's declared domain, each with a word on why."""
    out: list[tuple[Any, str]] = []
    kinds = _kinds(prop)
    types = {k.get("type") for k in kinds}
    for k in kinds:
        t = k.get("type")
        if t in ("number", "integer"):
            step = 1 if t == "integer" else rng.choice([1, 0.5, 1e-6])
            if "minimum" in k:
                out.append((k["minimum"] - step, f"below its minimum {k['minimum']}"))
            if "exclusiveMinimum" in k:
                out.append((k["exclusiveMinimum"] if t == "integer" or rng.random() < 0.5
                            else k["exclusiveMinimum"] - step, f"not above {k['exclusiveMinimum']}"))
            if "maximum" in k:
                out.append((k["maximum"] + step, f"above its maximum {k['maximum']}"))
            if "exclusiveMaximum" in k:
                out.append((k["exclusiveMaximum"], f"not below {k['exclusiveMaximum']}"))
            if t == "number":
                out.append((rng.choice([math.nan, math.inf, -math.inf]), "not finite"))
            out.append((rng.choice(["0.5", "x", ""]), "a string"))
            if t == "integer" and "number" not in types:
                out.append((2.5, "not a whole number"))
        elif t == "string":
            if "enum" in k:
                out.append((rng.choice(["bogus", k["enum"][0].upper() + "x", ""]), "not one of its values"))
            if k.get("minLength"):
                out.append(("", "empty"))
            out.append((rng.choice([1, 2.5, True]), "not a string"))
        elif t == "boolean":
            out.append((rng.choice(["yes", 1, "true"]), "not a boolean"))
        elif t == "array":
            out.append((rng.choice(["a", 3]), "not a list"))
            items = k.get("items", {})
            if items.get("type") in ("integer", "number"):
                bad = invalid_values(items, rng)
                if bad:
                    value, why = rng.choice(bad)
                    out.append(([value], f"an item {why}"))
        elif t == "object":
            out.append((rng.choice(["a", 3, [1]]), "not a table"))
    return [(v, w) for v, w in out if not _also_valid(v, kinds)]


def _also_valid(value: Any, kinds: list[dict[str, Any]]) -> bool:
    """A value another branch of a union accepts (e.g. "x" for `str | Path`)."""
    for k in kinds:
        t = k.get("type")
        if t == "string" and isinstance(value, str) and "enum" not in k and not k.get("minLength") and "const" not in k:
            return True
        if t == "number" and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            if all(c not in k for c in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
                return True
    return False


def _stage_case(rng: random.Random, table: str) -> Case | None:
    branches = _branches(table)
    name = rng.choice(sorted(branches))
    props = {k: v for k, v in branches[name]["properties"].items() if k != "name"}
    candidates = [(k, v) for k, v in props.items() if invalid_values(v, rng)]
    if not candidates:
        return None
    key, prop = rng.choice(candidates)
    value, why = rng.choice(invalid_values(prop, rng))
    params = {**REQUIRED.get((table, name), {}), key: value}
    doc = experiment_dict()
    if table == "postprocess":
        doc["postprocess"] = [{"name": name, **params}]
    else:
        doc[table] = {"name": name, **params}
    if table in ("reranker",):
        doc["postprocess"] = [{"name": "rerank"}]
    if table == "expansion":
        doc["fusion"] = {"name": "rrf"}
    where = f"[[postprocess]] {name}" if table == "postprocess" else f"[{table}] {name}"
    return run_case("experiment-value", f"{where} {key} = {toml_value(value)} ({why})", doc, "refuse",
                    [X, (key,)])


@family("stage-domain")
def stage_domain(rng: random.Random) -> Case:
    for _ in range(50):
        table = rng.choice([t for t in ("chunker", "tokenizer", "lexical", "embedder", "vector", "fusion",
                                        "postprocess", "postprocess", "postprocess", "expansion", "reranker",
                                        "chat") if t not in SKIP_TABLES])
        case = _stage_case(rng, table)
        if case is not None:
            return case
    raise AssertionError("no stage parameter with a declared domain")


@family("settings-domain")
def settings_domain(rng: random.Random) -> Case:
    table = rng.choice(["search", "evaluation", "profile"])
    props = schema()["properties"][table]["properties"]
    candidates = [(k, v) for k, v in props.items() if invalid_values(v, rng)]
    key, prop = rng.choice(candidates)
    value, why = rng.choice(invalid_values(prop, rng))
    doc = experiment_dict()
    doc[table] = {**doc.get(table, {}), key: value}
    return run_case("experiment-value", f"[{table}] {key} = {toml_value(value)} ({why})", doc, "refuse", [X, (key,)])


@family("relations")
def relations(rng: random.Random) -> Case:
    """Values each valid alone, invalid together, and values the harness must read with care."""
    doc = experiment_dict()
    choice = rng.choice(["overlap", "cutoff-above", "cutoffs-empty", "now-bad", "now-type", "threads",
                         "weights-normalised", "weights-out", "mmr-lambda", "half-life", "cap-small",
                         "evidence-empty", "max-results-huge"])
    if choice == "overlap":
        chunker = rng.choice(["openclaw", "fixed", "recursive", "record"])
        tokens = rng.choice([1, 16, 400])
        overlap = tokens + rng.choice([0, 1, 100])
        doc["chunker"] = {"name": chunker, "tokens": tokens, "overlap": overlap}
        return run_case("experiment-value", f"[chunker] {chunker} overlap {overlap} >= tokens {tokens}", doc, "refuse",
                        [X, ("overlap",)])
    if choice == "cutoff-above":
        doc["evaluation"]["cutoffs"] = [rng.choice([7, 10, 1000])]
        return run_case("experiment-value", "a cutoff above max_results", doc, "refuse", [X, ("cutoff",)])
    if choice == "cutoffs-empty":
        key = rng.choice(["cutoffs", "evidence_cutoffs"])
        doc["evaluation"][key] = []
        return run_case("experiment-value", f"{key} = []", doc, "refuse", [X, (key,)])
    if choice == "evidence-empty":
        doc["evaluation"]["evidence_cutoffs"] = [0]
        return run_case("experiment-value", "evidence_cutoffs = [0]", doc, "refuse", [X, ("evidence_cutoffs",)])
    if choice == "now-bad":
        doc["evaluation"]["now"] = rng.choice(["2026-02-30", "not-a-date", "2026-13-01", "", "yesterday",
                                               "2026-03-08T25:00:00"])
        return run_case("experiment-value", f"evaluation.now = {doc['evaluation']['now']!r}", doc, "refuse",
                        [X, ("now",)])
    if choice == "now-type":
        doc["evaluation"]["now"] = rng.choice([20260308, 1.5, True, [2026, 3, 8]])
        return run_case("experiment-value", f"evaluation.now = {toml_value(doc['evaluation']['now'])}", doc,
                        "refuse", [X, ("now",)])
    if choice == "threads":
        table = rng.choice(["profile", "embedder"])
        threads = rng.choice([100_000, 10**9, 0, -4])
        if table == "embedder":
            doc["embedder"] = {"name": "e5-small-q4", "threads": threads}
        else:
            doc["profile"] = {"threads": threads}
        return run_case("experiment-value", f"[{table}] threads = {threads}", doc, "refuse", [X, ("threads",)])
    if choice == "weights-normalised":
        vw, tw = rng.choice([(0.9, 0.9), (0.2, 0.2), (1.0, 1.0), (0.0, 0.0), (0.5, 0.1)])
        doc["fusion"] = {"vector_weight": vw, "text_weight": tw}
        return run_case("experiment-value", f"weights {vw}/{tw}: applied normalised, as OpenClaw", doc, "ok", [X],
                        note="fusion weights")
    if choice == "weights-out":
        key = rng.choice(["vector_weight", "text_weight"])
        doc["fusion"] = {key: rng.choice([-0.5, 1.5, 1e9, -1e-9])}
        return run_case("experiment-value", f"[fusion] {key} = {doc['fusion'][key]} (openclaw.json refuses it)", doc,
                        "refuse", [X, (key,)])
    if choice == "mmr-lambda":
        value = rng.choice([2.0, -1.0, 1.0001, -0.0001])
        doc["postprocess"] = [{"name": "mmr", "lambda": value}]
        return run_case("experiment-value", f"mmr lambda = {value}", doc, "refuse", [X, ("lambda",)])
    if choice == "half-life":
        stage = rng.choice(["temporal_decay", "time_decay", "recency_boost"])
        value = rng.choice([-1.0, -0.5])
        doc["postprocess"] = [{"name": stage, "half_life_days": value}]
        return run_case("experiment-value", f"{stage} half_life_days = {value}", doc, "refuse",
                        [X, ("half_life_days",)])
    if choice == "max-results-huge":
        doc["search"] = {"max_results": rng.choice([10**6, 10**12])}
        return run_case("experiment-value", "max_results of a million or more", doc, "either", [X, ("max_results",)])
    doc["profile"] = {"name": "vps", "memory_cap_gib": rng.choice([0.01, 0.05])}
    return run_case("experiment-value", f"memory_cap_gib = {doc['profile']['memory_cap_gib']}", doc, "either",
                    [X, ("memory", "cap", "GiB")])


@family("set-option")
def set_option(rng: random.Random) -> Case:
    choice = rng.choice(["malformed", "unknown-table", "out-of-domain", "table-over-value", "no-out", "deep"])
    args = ["run", "x.toml", "--out", "out"]
    if choice == "malformed":
        value = rng.choice(["fusion", "=1", "fusion.=1", ".x=1", "fusion..a=1", "fusion.vector_weight"])
        return Case("options", f"--set {value!r}", args + ["--set", value], "error", [("--set",)])
    if choice == "unknown-table":
        return Case("options", "--set on an unknown table", args + ["--set", "fusoin.vector_weight=0.5"], "error",
                    [("--set", "fusoin")])
    if choice == "out-of-domain":
        value = rng.choice(["fusion.vector_weight=-3", "search.max_results=0", "postprocess=3",
                            "evaluation.cutoffs=[]", "chunker.overlap=-1", "embedder.dim=0",
                            "evaluation.near_tie_fraction=nan", "profile.threads=0"])
        return Case("options", f"--set {value}", args + ["--set", value], "refuse",
                    [(value.split("=")[0].split(".")[-1], "--set")])
    if choice == "table-over-value":
        return Case("options", "--set a key under a value", args + ["--set", "search.max_results=6",
                                                                    "--set", "search.max_results.x=1"], "error",
                    [("--set",)])
    if choice == "deep":
        key = ".".join(["fusion"] + ["a"] * rng.choice([50, 2000]))
        return Case("options", "--set with a very deep key", args + ["--set", f"{key}=1"], "error",
                    [("--set", "fusion")])
    return Case("options", "--set without --out", ["run", "x.toml", "--set", "fusion.vector_weight=0.5"], "error",
                [("--out",)])


# --- queries files -----------------------------------------------------------------------------------------------

QY = ("queries.yaml",)
QJ = ("queries.jsonl",)


def _queries_case(label: str, text: str | bytes, expect: str = "error", names: list[tuple[str, ...]] | None = None,
                  jsonl: bool = False, **kw: Any) -> Case:
    doc = experiment_dict()
    name = "ws/queries.jsonl" if jsonl else "ws/queries.yaml"
    doc["dataset"]["queries"] = name
    files = {name: text, **kw.pop("files", {})}
    return run_case("queries", label, doc, expect, names if names is not None else [QJ if jsonl else QY],
                    files=files, **kw)


@family("queries-encoding")
def queries_encoding(rng: random.Random) -> Case:
    jsonl = rng.random() < 0.5
    text = queries_jsonl(QUERIES) if jsonl else queries_yaml(QUERIES)
    label, raw, expect, says = encoded(rng, text)
    where = QJ if jsonl else QY
    return _queries_case(f"queries {'JSONL' if jsonl else 'YAML'} in {label}", raw, expect,
                         [where, says] if says else [where], jsonl=jsonl)


@family("queries-fields")
def queries_fields(rng: random.Random) -> Case:
    jsonl = rng.random() < 0.4
    queries = [dict(q) for q in QUERIES]
    q = rng.choice(queries[:3])
    choice = rng.choice(["id-missing", "text-missing", "id-type", "text-type", "kind", "lines", "path-abs",
                         "path-dotdot", "path-unknown", "contains-missing", "duplicate-id", "unknown-field",
                         "negative-target", "lines-no-path", "cluster-type", "note-type", "text-empty",
                         "only-negative", "long-text", "contains-empty", "lines-past-end", "path-type"])
    expect = "error"
    note = None
    if choice == "id-missing":
        del q["id"]
    elif choice == "text-missing":
        del q["text"]
    elif choice == "id-type":
        q["id"] = rng.choice([7, 2.5, None, [1], {"a": 1}, True])
    elif choice == "text-type":
        q["text"] = rng.choice([7, None, ["a"], {"a": 1}, False])
    elif choice == "text-empty":
        q["text"] = rng.choice(["", "   "])
    elif choice == "kind":
        q["kind"] = rng.choice(["Suite", "positive", 1, None, ""])
    elif choice == "lines":
        q["path"], q["lines"] = "MEMORY.md", rng.choice([[0, 1], [3, 1], [1], [1, 2, 3], "1-2", [1.5, 2], [True, 2],
                                                         [-1, 2], [1, 10**30]])
        q.pop("contains", None)
    elif choice == "lines-past-end":
        q["path"], q["lines"] = "MEMORY.md", [1, 999]
        q.pop("contains", None)
    elif choice == "path-abs":
        q["path"] = rng.choice(["/etc/passwd", "~/x.md", "C:\\x.md", "\\\\host\\x.md"])
        q.pop("contains", None), q.pop("lines", None)
    elif choice == "path-dotdot":
        q["path"] = rng.choice(["../x.toml", "memory/../../x.md", "memory/.."])
        q.pop("contains", None), q.pop("lines", None)
    elif choice == "path-unknown":
        q["path"] = rng.choice(["memory/2026-03-09.md", "MEMORY.MD", "notes.md", "x.toml"])
        q.pop("contains", None), q.pop("lines", None)
    elif choice == "path-type":
        q["path"] = rng.choice([1, ["MEMORY.md"], None, {"p": 1}])
        q.pop("contains", None), q.pop("lines", None)
    elif choice == "contains-missing":
        q["contains"] = rng.choice(["PG_RESTORE", "not in any file", "护照 换发"])
        q.pop("path", None), q.pop("lines", None)
    elif choice == "contains-empty":
        q["contains"] = rng.choice(["", 3, None])
        q.pop("path", None), q.pop("lines", None)
    elif choice == "duplicate-id":
        queries.append(dict(queries[0]))
    elif choice == "unknown-field":
        q[rng.choice(["Text", "answer", "relevant", "paths"])] = "x"
    elif choice == "negative-target":
        q["kind"] = "negative"
    elif choice == "lines-no-path":
        q.pop("path", None), q.pop("contains", None)
        q["lines"] = [1, 2]
    elif choice == "cluster-type":
        q["cluster"] = rng.choice([True, None, [1], "", {"a": 1}])
    elif choice == "note-type":
        q["note"] = rng.choice([1, ["a"], {"a": 1}])
    elif choice == "only-negative":
        queries = [{"id": f"n{i}", "text": t, "kind": "negative"} for i, t in
                   enumerate(["the wifi password of the beach house", "我的血型是什么"])]
        expect = "ok"
    elif choice == "long-text":
        q["text"] = "护照" * rng.choice([1500, 20_000])
        expect, note = "ok", "characters long"
    text = queries_jsonl(queries) if jsonl else queries_yaml(queries)
    return _queries_case(f"queries: {choice}", text, expect, jsonl=jsonl, note=note)


@family("queries-syntax")
def queries_syntax(rng: random.Random) -> Case:
    choice = rng.choice(["yaml-tab", "yaml-unclosed", "yaml-mapping", "yaml-scalar", "yaml-deep", "yaml-anchors",
                         "yaml-dup-key", "jsonl-broken", "jsonl-array", "jsonl-dup-key", "jsonl-surrogate",
                         "jsonl-deep", "jsonl-nan", "empty", "suffix", "folder", "yaml-tags", "jsonl-bigint",
                         "yaml-bomb"])
    if choice == "yaml-tab":
        return _queries_case("a tab in the YAML", "- id: q1\n\ttext: x\n  path: MEMORY.md\n")
    if choice == "yaml-unclosed":
        return _queries_case("an unclosed quote", '- id: q1\n  text: "护照\n  path: MEMORY.md\n')
    if choice == "yaml-mapping":
        return _queries_case("a mapping instead of a list", "q1:\n  text: x\n  path: MEMORY.md\n")
    if choice == "yaml-scalar":
        return _queries_case("a scalar instead of a list", rng.choice(["just text\n", "42\n", "~\n"]), "error")
    if choice == "yaml-deep":
        value, depth = deep(rng, "array")
        return _queries_case(f"a note nested {depth} deep", f"- id: q1\n  text: x\n  path: MEMORY.md\n  note: {value}\n")
    if choice == "yaml-anchors":
        return _queries_case("an alias as a query", "- &a {id: q1, text: x, path: MEMORY.md}\n- *a\n")
    if choice == "yaml-bomb":
        lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
        for i in range(1, 10):
            lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
        return _queries_case("billion laughs in a note", "- id: q1\n  text: x\n  path: MEMORY.md\n  note:\n    "
                             + "\n    ".join(lines) + "\n", timeout=60)
    if choice == "yaml-tags":
        return _queries_case("a Python tag", "- id: !!python/object/apply:os.system ['echo hi']\n  text: x\n"
                                             "  path: MEMORY.md\n")
    if choice == "yaml-dup-key":
        return _queries_case("a key given twice", "- id: q1\n  text: x\n  text: y\n  path: MEMORY.md\n")
    if choice == "jsonl-broken":
        return _queries_case("a broken JSONL line", queries_jsonl(QUERIES) + '{"id": "q9", "text": \n', jsonl=True)
    if choice == "jsonl-array":
        return _queries_case("a JSONL line that is a list", queries_jsonl(QUERIES) + '["q9", "x"]\n', jsonl=True)
    if choice == "jsonl-dup-key":
        return _queries_case("a key twice on a JSONL line",
                             '{"id": "q1", "text": "x", "text": "y", "path": "MEMORY.md"}\n', "refuse", jsonl=True)
    if choice == "jsonl-surrogate":
        return _queries_case("a lone surrogate in JSONL", '{"id": "q1", "text": "bad \\ud800 text", "path": "MEMORY.md"}\n',
                             "error", jsonl=True)
    if choice == "jsonl-deep":
        value, depth = deep(rng, rng.choice(["array", "json-object"]))
        return _queries_case(f"a JSONL field nested {depth} deep",
                             '{"id": "q1", "text": "x", "path": "MEMORY.md", "note": ' + value + "}\n", jsonl=True)
    if choice == "jsonl-nan":
        return _queries_case("NaN as a query id", '{"id": NaN, "text": "x", "path": "MEMORY.md"}\n', jsonl=True)
    if choice == "jsonl-bigint":
        return _queries_case("a huge number as an id", '{"id": ' + "9" * 5000 + ', "text": "x", "path": "MEMORY.md"}\n',
                             jsonl=True)
    if choice == "empty":
        return _queries_case("an empty queries file", rng.choice(["", "\n\n", "# only comments\n"]))
    if choice == "suffix":
        doc = experiment_dict()
        doc["dataset"]["queries"] = "ws/queries.txt"
        return run_case("queries", "a queries file that is .txt", doc, "error", [("queries.txt",)],
                        files={"ws/queries.txt": queries_yaml(QUERIES)})
    doc = experiment_dict()
    doc["dataset"]["queries"] = "ws/qdir.yaml"
    return run_case("queries", "the queries path is a folder", doc, "error", [("qdir.yaml",)], dirs=["ws/qdir.yaml"])


# --- openclaw.json -----------------------------------------------------------------------------------------------------

OC = ("openclaw.json",)


def _openclaw_case(label: str, text: str | bytes, expect: str = "error", names: list[tuple[str, ...]] | None = None,
                   init: bool | None = None, rng: random.Random | None = None, **kw: Any) -> Case:
    files = {"ws/openclaw.json": text, **kw.pop("files", {})}
    names = names if names is not None else [OC]
    if init is None:
        init = rng.random() < 0.5 if rng is not None else False
    if init:
        return Case("openclaw-json", label + " (init)", ["init", "ws", "--out", "ev", "--now", "2026-03-08"], expect,
                    names, files=files, **kw)
    doc = experiment_dict()
    doc["dataset"]["config"] = "ws/openclaw.json"
    doc["dataset"]["follow_config"] = True
    return run_case("openclaw-json", label + " (run)", doc, expect, names, files=files, **kw)


def _set_path(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    node = doc
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return doc


OC_FIELDS = {  # field path -> values outside what OpenClaw's schema accepts
    "memory.search.query.maxResults": [0, -1, 2.5, "6", None, True],
    "memory.search.query.minScore": [-0.1, 1.5, "0.3", math.nan],
    "agents.defaults.memorySearch.query.hybrid.vectorWeight": [-0.5, 1.5, 1e9, "0.7"],
    "agents.defaults.memorySearch.query.hybrid.textWeight": [-0.5, 1.5, "x"],
    "agents.defaults.memorySearch.query.hybrid.candidateMultiplier": [0, -3, 2.5],
    "agents.defaults.memorySearch.query.hybrid.mmr.lambda": [2.0, -1.0, "0.5"],
    "agents.defaults.memorySearch.query.hybrid.mmr.enabled": ["yes", 1],
    "agents.defaults.memorySearch.query.hybrid.temporalDecay.halfLifeDays": [0, -1, 0.5, 2.5, "30"],
    "agents.defaults.memorySearch.chunking.tokens": [0, -5, 2.5],
    "agents.defaults.memorySearch.chunking.overlap": [-1, 2.5],
    "memory.search.store.fts.tokenizer": ["jieba", "", 3, "Unicode61"],
    "agents.defaults.memorySearch.extraPaths": ["notes", 3, [3], [{"pattern": "*.md"}], [{"path": "x", "pattern": 3}]],
    "agents.list": [{"id": "main"}, "main", 3],
    "agents.defaults.memorySearch": [3, "x", [1]],
    "memory.search.query": [3, "x"],
}
OC_NORMALISED = {  # values OpenClaw accepts and normalises: accepted with a note naming the field
    "agents.defaults.memorySearch.query.hybrid.candidateMultiplier": ([50, 21, 1000], "candidateMultiplier"),
    "agents.defaults.memorySearch.chunking.overlap": ([400, 800], "overlap"),
}


@family("openclaw-fields")
def openclaw_fields(rng: random.Random) -> Case:
    path = rng.choice(sorted(OC_FIELDS))
    doc = json.loads(json.dumps(OPENCLAW_JSON))
    if path in OC_NORMALISED and rng.random() < 0.4:
        values, says = OC_NORMALISED[path]
        value = rng.choice(values)
        _set_path(doc, path, value)
        return _openclaw_case(f"{path} = {value!r} (OpenClaw normalises it)", json.dumps(doc), "ok", rng=rng,
                              note=says)
    value = rng.choice(OC_FIELDS[path])
    _set_path(doc, path, value)
    text = json.dumps(doc, allow_nan=True)
    return _openclaw_case(f"{path} = {json.dumps(value, allow_nan=True)}", text, "refuse",
                          [OC, (path.split(".")[-1],)], rng=rng)


@family("openclaw-syntax")
def openclaw_syntax(rng: random.Random) -> Case:
    base = json.dumps(OPENCLAW_JSON, indent=2)
    choice = rng.choice(["encoding", "truncate", "deep", "huge", "dup-key", "not-object", "comments", "empty",
                         "dup-agent", "secret-unknown", "secret-remote", "secret-agent", "pattern", "root-extra",
                         "folder", "json5-huge"])
    if choice == "encoding":
        label, raw, expect, says = encoded(rng, base)
        return _openclaw_case(f"openclaw.json in {label}", raw, expect, [OC, says] if says else [OC], rng=rng)
    if choice == "truncate":
        cut = rng.randrange(1, len(base) - 1)
        return _openclaw_case(f"openclaw.json cut at byte {cut}", base[:cut], "error", rng=rng)
    if choice == "deep":
        value, depth = deep(rng, rng.choice(["array", "json-object"]))
        return _openclaw_case(f"a value nested {depth} deep", base[:-1] + f', "x": {value}}}', "error", rng=rng)
    if choice in ("huge", "json5-huge"):
        size = rng.choice([3, 10])
        filler = [{"id": f"agent{i}", "name": "x" * 200} for i in range(size * 1024 * 1024 // 230)]
        doc = json.loads(base)
        doc["agents"]["list"] += filler
        text = json.dumps(doc)
        if choice == "json5-huge":
            text = "// openclaw config\n" + text.replace('"id":', "id:")
        return _openclaw_case(f"a {size} MB openclaw.json{' in JSON5' if choice == 'json5-huge' else ''}", text,
                              "either", rng=rng, timeout=90)
    if choice == "dup-key":
        return _openclaw_case("a key given twice", base[:-1] + ', "memory": {}}', "error", rng=rng)
    if choice == "not-object":
        return _openclaw_case("openclaw.json is a list", rng.choice(["[]", "3", '"x"', "null"]), "error", rng=rng)
    if choice == "comments":
        return _openclaw_case("JSON5 comments and trailing commas",
                              "// mine\n{memory: {search: {query: {maxResults: 5,},},},}\n", "ok", rng=rng)
    if choice == "empty":
        return _openclaw_case("an empty openclaw.json", rng.choice(["", "  \n"]), "error", rng=rng)
    if choice == "dup-agent":
        doc = json.loads(base)
        doc["agents"]["list"] = [{"id": "main", "memorySearch": {"query": {"maxResults": 3}}},
                                 {"id": rng.choice(["main", "Main", " main "]),
                                  "memorySearch": {"query": {"maxResults": 9}}}]
        case = _openclaw_case("two agents with the same id", json.dumps(doc), "ok", init=True, note="agents.list")
        case.args += ["--agent", "main"]
        return case
    if choice.startswith("secret"):
        doc = json.loads(base)
        path = {"secret-unknown": rng.choice(["memory.search.query.apiKey", "memory.search.apiKey",
                                              "agents.defaults.memorySearch.query.hybrid.token",
                                              "agents.defaults.memorySearch.password"]),
                "secret-remote": "agents.defaults.memorySearch.remote.apiKey",
                "secret-agent": "agents.defaults.memorySearch.headers.Authorization"}[choice]
        _set_path(doc, path, SECRET if rng.random() < 0.7 else {"value": SECRET, "list": [SECRET]})
        return _openclaw_case(f"a key in {path}", json.dumps(doc), "either", rng=rng, secret=True)
    if choice == "pattern":
        doc = json.loads(base)
        pattern = rng.choice(["[z-a]", "[", "**/[!", "\\", "a[b-", "(?P<x>", "[[:alpha:]]"])
        doc["agents"]["defaults"]["memorySearch"]["extraPaths"] = [{"path": "notes", "pattern": pattern}]
        return _openclaw_case(f"extraPaths pattern {pattern!r}", json.dumps(doc), "either",
                              [OC, ("pattern", "extraPaths")], rng=rng, dirs=["ws/notes"])
    if choice == "root-extra":
        doc = json.loads(base)
        doc["agents"]["defaults"]["memorySearch"]["extraPaths"] = [rng.choice(["/", "//", "/proc", "/sys"])]
        return _openclaw_case("extraPaths holds a system folder", json.dumps(doc), "either",
                              [OC, ("extraPaths",)], rng=rng, timeout=90)
    return Case("openclaw-json", "--config is a folder", ["init", "ws", "--out", "ev", "--config", "ws/memory"],
                "error", [("memory", "--config")])


# --- workspaces -------------------------------------------------------------------------------------------------------

@family("workspace")
def workspace(rng: random.Random) -> Case:
    choice = rng.choice(["memory-link", "memory-md-link", "unreadable-file", "unreadable-memory-dir",
                         "unreadable-config", "not-utf8", "utf16-memory", "bom-memory", "empty", "path-is-file",
                         "memory-md-dir", "missing", "unreadable-queries", "binary", "provenance-name", "long-line"])
    cmd = rng.choice(["run", "init"])
    args = list(RUN) if cmd == "run" else ["init", "ws", "--out", "ev", "--now", "2026-03-08"]
    if choice == "memory-link":
        case = Case("workspace", f"memory/ is a symbolic link ({cmd})", args, "either",
                    [("memory",), ("symbolic link", "symlink")], remove=["ws/memory"],
                    symlinks=[("ws/memory", "../real-memory")],
                    files={f"real-memory/{n.split('/')[-1]}": MEMORY[n] for n in MEMORY if "/memory/" in n})
        return case
    if choice == "memory-md-link":
        return Case("workspace", f"MEMORY.md is a symbolic link ({cmd})", args, "either",
                    [("MEMORY.md",), ("symbolic link", "symlink")], remove=["ws/MEMORY.md"],
                    symlinks=[("ws/MEMORY.md", "../real-MEMORY.md")], files={"real-MEMORY.md": MEMORY["ws/MEMORY.md"]})
    if choice == "unreadable-file":
        return Case("workspace", f"a memory file nobody may read ({cmd})", args, "error" if cmd == "run" else "either",
                    [("2026-03-01.md",)],
                    modes={"ws/memory/2026-03-01.md": 0o000}, as_nobody=True)
    if choice == "unreadable-memory-dir":
        return Case("workspace", f"memory/ nobody may list ({cmd})", args, "either", [("memory",)],
                    modes={"ws/memory": 0o000}, as_nobody=True)
    if choice == "unreadable-config":
        doc = experiment_dict()
        doc["dataset"]["config"] = "ws/openclaw.json"
        return run_case("workspace", "an openclaw.json nobody may read", doc, "error", [OC],
                        files={"ws/openclaw.json": json.dumps(OPENCLAW_JSON)}, modes={"ws/openclaw.json": 0o000},
                        as_nobody=True)
    if choice == "unreadable-queries":
        return run_case("workspace", "a queries file nobody may read", experiment_dict(), "error", [QY],
                        modes={"ws/queries.yaml": 0o000}, as_nobody=True)
    if choice == "not-utf8":
        return Case("workspace", f"a memory file in Latin-1 ({cmd})", args, "either" if cmd == "init" else "error",
                    [("2026-03-01.md",), ("UTF-8",)],
                    files={"ws/memory/2026-03-01.md": "# café\n\n- crème brûlée\n".encode("latin-1")})
    if choice == "utf16-memory":
        return Case("workspace", f"a memory file in UTF-16 ({cmd})", args, "either" if cmd == "init" else "error",
                    [("2026-03-01.md",), ("UTF-16",)],
                    files={"ws/memory/2026-03-01.md": MEMORY["ws/memory/2026-03-01.md"].encode("utf-16")})
    if choice == "bom-memory":
        return Case("workspace", f"a memory file with a BOM ({cmd})", args, "ok", [],
                    files={"ws/MEMORY.md": b"\xef\xbb\xbf" + MEMORY["ws/MEMORY.md"].encode("utf-8")})
    if choice == "empty":
        return Case("workspace", f"a workspace without memory files ({cmd})", args, "error", [("ws",)],
                    remove=["ws/MEMORY.md", "ws/memory"])
    if choice == "path-is-file":
        doc = experiment_dict()
        doc["dataset"]["path"] = "ws/MEMORY.md"
        if cmd == "init":
            return Case("workspace", "init on a file", ["init", "ws/MEMORY.md", "--out", "ev"], "error",
                        [("MEMORY.md",)])
        return run_case("workspace", "the workspace path is a file", doc, "error", [("MEMORY.md",)])
    if choice == "memory-md-dir":
        return Case("workspace", f"MEMORY.md is a folder ({cmd})", args, "either", [("MEMORY.md",)],
                    remove=["ws/MEMORY.md"], dirs=["ws/MEMORY.md"])
    if choice == "missing":
        return Case("workspace", f"no such workspace ({cmd})", [a.replace("ws", "nope") if a == "ws" else a for a in args]
                    if cmd == "init" else args, "error", [("nope",)] if cmd == "init" else [("ws",)],
                    remove=[] if cmd == "init" else ["ws"], fixtures=True)
    if choice == "binary":
        return Case("workspace", f"a binary file named .md ({cmd})", args, "either" if cmd == "init" else "error",
                    [("2026-03-01.md",)], files={"ws/memory/2026-03-01.md": bytes(range(256)) * 8})
    if choice == "provenance-name":
        return Case("workspace", f"a memory file named provenance.json ({cmd})", args, "either", [("provenance",)],
                    files={"ws/memory/x/provenance.json.md": "x\n"})
    return Case("workspace", f"one 8 MB line in a memory file ({cmd})", args, "either", [("big.md",)],
                files={"ws/memory/big.md": "# x\n" + "护照" * (4 * 1024 * 1024) + "\n"}, timeout=240)


# --- TREC runs and qrels: harness eval -------------------------------------------------------------------------------

@family("trec")
def trec(rng: random.Random) -> Case:
    choice = rng.choice(["columns", "score", "nan-score", "grade-huge", "grade-float", "dup-doc", "empty", "folder",
                         "bom", "utf16", "json-broken", "json-shape", "json-nan", "json-grade-huge", "metric",
                         "ties", "json-out-dir", "swapped", "deep-json", "rank", "json-deep-qrels", "ok"])
    run, qrels = "fx/chunk.run", "fx/chunk.qrels"
    args = lambda r=run, q=qrels, *more: ["eval", "--run", r, "--qrels", q, *more]  # noqa: E731
    if choice == "ok":
        return Case("trec", "a valid run and qrels", args(), "ok")
    if choice == "columns":
        return Case("trec", "a run line of 5 columns", args("bad.run"), "error", [("bad.run",)],
                    files={"bad.run": "q1 Q0 doc 1 0.5 t\nq1 Q0 doc2 2 0.4\n"})
    if choice == "score":
        return Case("trec", "a run score that is not a number", args("bad.run"), "error", [("bad.run",)],
                    files={"bad.run": f"q1 Q0 d 1 {rng.choice(['x', '0,5', '--1'])} t\n"})
    if choice == "nan-score":
        return Case("trec", "a NaN score", args("bad.run"), "error", [("bad.run",)],
                    files={"bad.run": f"q1 Q0 d 1 {rng.choice(['nan', 'inf', '-inf', '1e999'])} t\n"})
    if choice == "rank":
        return Case("trec", "a rank that is not an integer", args("bad.run"), "error", [("bad.run",)],
                    files={"bad.run": "q1 Q0 d one 0.5 t\n"})
    if choice == "grade-huge":
        return Case("trec", "a qrels grade of 20 digits", args(run, "bad.qrels"), "error", [("bad.qrels",)],
                    files={"bad.qrels": f"q1 0 d {rng.choice(['9' * 20, '-' + '9' * 20, str(2**63)])}\n"})
    if choice == "grade-float":
        return Case("trec", "a qrels grade of 1.5", args(run, "bad.qrels"), "error", [("bad.qrels",)],
                    files={"bad.qrels": "q1 0 d 1.5\n"})
    if choice == "dup-doc":
        return Case("trec", "a document twice in one query", args("bad.run"), "error", [("bad.run",)],
                    files={"bad.run": "q1 Q0 d 1 0.5 t\nq1 Q0 d 2 0.4 t\n"})
    if choice == "empty":
        return Case("trec", "an empty run file", args("bad.run"), "error", [("bad.run",)], files={"bad.run": ""})
    if choice == "folder":
        which = rng.choice(["run", "qrels"])
        return Case("trec", f"the {which} path is a folder", args("adir") if which == "run" else args(run, "adir"),
                    "error", [("adir",)], dirs=["adir"])
    if choice == "bom":
        text = (FIXTURE_TEXT["chunk.run"])
        return Case("trec", "a run with a BOM", args("bom.run"), "ok", files={"bom.run": "\ufeff" + text})
    if choice == "utf16":
        return Case("trec", "a run in UTF-16", args("u.run"), "error", [("u.run",), ("UTF-16",)],
                    files={"u.run": FIXTURE_TEXT["chunk.run"].encode("utf-16")})
    if choice == "json-broken":
        return Case("trec", "a ranx JSON run cut short", args("bad.json"), "error", [("bad.json",)],
                    files={"bad.json": '{"q1": {"d": 0.5'})
    if choice == "json-shape":
        return Case("trec", "a ranx JSON run of the wrong shape", args("bad.json"), "error", [("bad.json",)],
                    files={"bad.json": rng.choice(['{"q1": [1, 2]}', '{"q1": {"d": "high"}}', '{"q1": 3}',
                                                   '{"q1": {"d": true}}', '{"": {"d": 1}}'])})
    if choice == "json-nan":
        return Case("trec", "a ranx JSON score NaN", args("bad.json"), "error", [("bad.json",)],
                    files={"bad.json": '{"q1": {"d": NaN}}'})
    if choice == "json-grade-huge":
        return Case("trec", "a ranx JSON grade of 30 digits", args(run, "bad.json"), "error", [("bad.json",)],
                    files={"bad.json": '{"q1": {"d": ' + "9" * 30 + "}}"})
    if choice in ("deep-json", "json-deep-qrels"):
        value, depth = deep(rng, "json-object")
        return Case("trec", f"a ranx JSON file nested {depth} deep",
                    args("bad.json") if choice == "deep-json" else args(run, "bad.json"), "error", [("bad.json",)],
                    files={"bad.json": '{"q1": ' + value + "}"})
    if choice == "metric":
        metric = rng.choice(["mrr@0", "ndcg@-1", "foo@5", "mrr@x", "", "recall@99999999999999999999", "map@"])
        return Case("trec", f"--metric {metric!r}", args(run, qrels, "--metric", metric), "error",
                    [("metric", "--metric", metric or "metric")])
    if choice == "ties":
        return Case("trec", "--ties of an unknown rule", args(run, qrels, "--ties", "random"), "error",
                    [("ties", "--ties")])
    if choice == "json-out-dir":
        return Case("trec", "--json is a folder", args(run, qrels, "--json", "adir"), "error", [("adir", "--json")],
                    dirs=["adir"])
    return Case("trec", "run and qrels swapped", args(qrels, run), "error", [("chunk.qrels", "chunk.run")])


FIXTURE_TEXT: dict[str, str] = {}  # filled by the runner from the fixtures it made (chunk.run ...)


# --- results files: gate, export, report, diff --------------------------------------------------------------------

def _results_variant(rng: random.Random) -> tuple[str, str | bytes, str, list[tuple[str, ...]]]:
    """(label, bad results.json text, expect, names)."""
    doc = json.loads(FIXTURE_TEXT["results.json"])
    choice = rng.choice(["truncate", "bom", "no-summary", "passed-string", "nan-metric", "queries-list", "not-object",
                         "utf16", "empty", "suite-missing", "deep", "summary-list", "inf-metric", "hits-bad"])
    r = ("bad.json",)
    if choice == "truncate":
        text = FIXTURE_TEXT["results.json"]
        return "a results.json cut short", text[: rng.randrange(1, len(text) - 1)], "error", [r]
    if choice == "bom":
        return "a results.json with a BOM", "\ufeff" + FIXTURE_TEXT["results.json"], "verdict", [r]
    if choice == "utf16":
        return "a results.json in UTF-16", FIXTURE_TEXT["results.json"].encode("utf-16"), "error", [r, ("UTF-16",)]
    if choice == "empty":
        return "an empty results.json", "", "error", [r]
    if choice == "no-summary":
        del doc["summary"]
        return "a results.json without summary", json.dumps(doc), "error", [r]
    if choice == "summary-list":
        doc["summary"] = [1, 2]
        return "summary is a list", json.dumps(doc), "error", [r]
    if choice == "passed-string":
        doc["summary"]["suite"]["passed"] = rng.choice(["3", "all", None, [1], True])
        return "summary passed is not a number", json.dumps(doc), "error", [r, ("passed",)]
    if choice == "nan-metric":
        key = rng.choice([k for k, v in doc["summary"]["suite"].items() if isinstance(v, (int, float))])
        doc["summary"]["suite"][key] = math.nan
        return f"summary {key} is NaN", json.dumps(doc, allow_nan=True), "error", [r, (key,)]
    if choice == "inf-metric":
        key = rng.choice([k for k, v in doc["summary"]["suite"].items() if isinstance(v, (int, float))])
        doc["summary"]["suite"][key] = math.inf
        return f"summary {key} is Infinity", json.dumps(doc, allow_nan=True), "error", [r, (key,)]
    if choice == "suite-missing":
        del doc["summary"]["suite"]
        return "summary without suite", json.dumps(doc), "error", [r]
    if choice == "queries-list":
        doc["queries"] = rng.choice([[1, 2], "x", 3])
        return "queries is not an object", json.dumps(doc), "error", [r, ("queries",)]
    if choice == "hits-bad":
        doc["hits"] = rng.choice([3, "x", {"q1": 3}])
        return "hits of the wrong shape", json.dumps(doc), "either", [r]
    if choice == "deep":
        value, depth = deep(rng, "json-object")
        doc_text = json.dumps(doc)
        return f"a results.json nested {depth} deep", doc_text[:-1] + f', "x": {value}}}', "error", [r]
    return "a results.json that is a list", "[1, 2, 3]", "error", [r]


@family("results-files")
def results_files(rng: random.Random) -> Case:
    label, text, expect, names = _results_variant(rng)
    cmd = rng.choice(["gate-results", "gate-baseline", "export", "report", "diff"])
    if cmd == "gate-results":
        args = ["gate", "bad.json", "--baseline", "fx/results.json"]
    elif cmd == "gate-baseline":
        args = ["gate", "fx/results.json", "--baseline", "bad.json"]
    elif cmd == "export":
        args = ["export", "bad.json", "--out", "exp"]
        expect = "ok" if expect == "verdict" else expect
    elif cmd == "report":
        args = ["report", "bad.json", "--out", "page.html"]
        expect = "ok" if expect == "verdict" else expect
    else:
        args = ["diff", "fx/results.json", "bad.json"]
        expect = "ok" if expect == "verdict" else expect
    if cmd in ("export", "report", "diff") and expect == "error" and label.startswith(("summary", "a results.json without summary", "summary without")):
        expect = "either"  # these commands do not read the summary
    if cmd in ("export", "report", "diff") and label.startswith(("queries is not", "hits of")):
        expect = "either"
    return Case("results", f"{cmd}: {label}", args, expect, names, files={"bad.json": text})


@family("gate-rules")
def gate_rules(rng: random.Random) -> Case:
    base = ["gate", "fx/results.json", "--baseline", "fx/results.json"]
    choice = rng.choice(["rule-domain", "rule-syntax", "file-domain", "file-syntax", "junit-dir", "markdown-dir",
                         "markdown-under-file", "file-encoding", "file-missing", "ok", "file-deep"])
    if choice == "rule-domain":
        rule = rng.choice(["passed:drop=-1", "passed:drop=nan", "mrr@6:growth=-1", "mrr@*:drop=inf",
                           "recall@6:interval=1.5", "recall@6:interval=0", "ndcg@6:paired=1", "passed:drop=-0.01",
                           "latency_p50_ms:growth=nan", "mrr@6:paired=-0.1"])
        return Case("gate", f"--rule {rule}", base + ["--rule", rule], "refuse", [("--rule", rule)])
    if choice == "rule-syntax":
        rule = rng.choice(["passed", "passed:dorp=0", "passed:drop", "passed:drop=x", ":drop=0", "passed:=1",
                           "mrr@6:growth=", "passed::drop=0", ""])
        return Case("gate", f"--rule {rule!r}", base + ["--rule", rule], "error", [("--rule", "rule")])
    if choice == "file-domain":
        rule = rng.choice(['drop = -1', 'drop = nan', 'growth = -1', 'growth = inf', 'kind = "interval"\nlevel = 1.5',
                           'op = ">="\nvalue = nan', 'kind = "paired"\nalpha = 0'])
        return Case("gate", f"a gate file rule {rule!r}", base + ["--gate-file", "gate.toml"], "refuse",
                    [("gate.toml",)], files={"gate.toml": f'[[rule]]\nmetric = "passed"\n{rule}\n'})
    if choice == "file-syntax":
        text = rng.choice(['[[rule]]\nmetric = "passed"\n', '[gate]\nflips = "maybe"\n[[rule]]\nmetric = "p"\ndrop = 0\n',
                           '[rule]\nmetric = "passed"\ndrop = 0\n', 'rule = 3\n', '[[rule]]\nmetric = ""\ndrop = 0\n',
                           '[[rule]]\nmetric = "passed"\ndrop = 0\ngrowth = 1\n', "[[rule]\n", '[gates]\n'])
        return Case("gate", "a malformed gate file", base + ["--gate-file", "gate.toml"], "error", [("gate.toml",)],
                    files={"gate.toml": text})
    if choice == "file-encoding":
        label, raw, expect, says = encoded(rng, '[[rule]]\nmetric = "passed"\ndrop = 0\n')
        return Case("gate", f"a gate file in {label}", base + ["--gate-file", "gate.toml"],
                    "verdict" if expect == "ok" else expect, [("gate.toml",), says] if says else [("gate.toml",)],
                    files={"gate.toml": raw})
    if choice == "file-deep":
        value, depth = deep(rng, "array")
        return Case("gate", f"a gate file nested {depth} deep", base + ["--gate-file", "gate.toml"], "error",
                    [("gate.toml",)], files={"gate.toml": f'[[rule]]\nmetric = "passed"\ndrop = 0\nx = {value}\n'})
    if choice == "file-missing":
        return Case("gate", "no such gate file", base + ["--gate-file", "nope.toml"], "error", [("nope.toml",)])
    if choice == "junit-dir":
        return Case("gate", "--junit is a folder", base + ["--junit", "adir"], "error", [("adir", "--junit")],
                    dirs=["adir"])
    if choice == "markdown-dir":
        return Case("gate", "--markdown is a folder", base + ["--markdown", "adir"], "error", [("adir", "--markdown")],
                    dirs=["adir"])
    if choice == "markdown-under-file":
        return Case("gate", "--markdown under a file", base + ["--markdown", "afile/gate.md"], "error",
                    [("afile", "--markdown")], files={"afile": "x"})
    return Case("gate", "a valid gate of a file against itself", base, "verdict")


# --- output paths -----------------------------------------------------------------------------------------------

@family("outputs")
def outputs(rng: random.Random) -> Case:
    choice = rng.choice(["out-file", "out-under-file", "out-proc", "out-long", "schema-dir", "render-nonempty",
                         "init-out-file", "export-out-file", "report-out-dir", "diff-md-dir", "out-dev-null",
                         "eval-json-under-file", "out-existing-ok"])
    if choice == "out-file":
        return Case("outputs", "--out is a file", ["run", "x.toml", "--out", "afile"], "error", [("afile", "--out")],
                    files={"afile": "x", "x.toml": to_toml(experiment_dict())})
    if choice == "out-under-file":
        return Case("outputs", "--out under a file", ["run", "x.toml", "--out", "afile/out"], "error",
                    [("afile", "--out")], files={"afile": "x", "x.toml": to_toml(experiment_dict())})
    if choice == "out-proc":
        where = rng.choice(["/proc/harness-out", "/sys/harness-out", "/proc/self/x"])
        return Case("outputs", f"--out {where}", ["run", "x.toml", "--out", where], "error", [(where, "--out")],
                    files={"x.toml": to_toml(experiment_dict())})
    if choice == "out-dev-null":
        return Case("outputs", "--out /dev/null", ["run", "x.toml", "--out", "/dev/null"], "error",
                    [("/dev/null", "--out")], files={"x.toml": to_toml(experiment_dict())})
    if choice == "out-long":
        name = "o" * rng.choice([256, 300, 5000])
        return Case("outputs", f"an --out name of {len(name)} characters", ["run", "x.toml", "--out", name], "error",
                    [("--out",)], files={"x.toml": to_toml(experiment_dict())})
    if choice == "out-existing-ok":
        return Case("outputs", "--out an existing folder with other files", ["run", "x.toml", "--out", "out"], "ok",
                    files={"out/mine.txt": "keep", "x.toml": to_toml(experiment_dict())})
    if choice == "schema-dir":
        return Case("outputs", "schema --out a folder", ["schema", "--out", "adir"], "error", [("adir", "--out")],
                    dirs=["adir"])
    if choice == "render-nonempty":
        return Case("outputs", "render into a folder with files", ["render", "x.toml", "--out", "rdir"], "error",
                    [("rdir",)], files={"rdir/x": "x", "x.toml": to_toml(experiment_dict())})
    if choice == "init-out-file":
        return Case("outputs", "init --out is a file", ["init", "ws", "--out", "afile"], "error", [("afile", "--out")],
                    files={"afile": "x"})
    if choice == "export-out-file":
        return Case("outputs", "export --out is a file", ["export", "fx/results.json", "--out", "afile"], "error",
                    [("afile", "--out")], files={"afile": "x"})
    if choice == "report-out-dir":
        return Case("outputs", "report --out is a folder", ["report", "fx/results.json", "--out", "adir"], "error",
                    [("adir", "--out")], dirs=["adir"])
    if choice == "diff-md-dir":
        return Case("outputs", "diff --markdown is a folder",
                    ["diff", "fx/results.json", "fx/results.json", "--markdown", "adir"], "error",
                    [("adir", "--markdown")], dirs=["adir"])
    return Case("outputs", "eval --json under a file",
                ["eval", "--run", "fx/chunk.run", "--qrels", "fx/chunk.qrels", "--json", "afile/s.json"], "error",
                [("afile", "--json")], files={"afile": "x"})


# --- the environment and the cache --------------------------------------------------------------------------

@family("cache")
def cache(rng: random.Random) -> Case:
    choice = rng.choice(["cache-dir-file", "cache-dir-under-file", "garbage", "truncated", "bad-row", "empty-file",
                         "cache-file-dir", "wrong-schema"])
    files = {"x.toml": to_toml(experiment_dict())}
    env = {"HARNESS_CACHE_DIR": "cache"}
    if choice == "cache-dir-file":
        return Case("cache", "HARNESS_CACHE_DIR is a file", list(RUN), "error", [("HARNESS_CACHE_DIR", "cache")],
                    files={**files, "cache": "x"}, env=env)
    if choice == "cache-dir-under-file":
        return Case("cache", "HARNESS_CACHE_DIR under a file", list(RUN), "error", [("HARNESS_CACHE_DIR", "afile")],
                    files={**files, "afile": "x"}, env={"HARNESS_CACHE_DIR": "afile/cache"})
    if choice == "cache-file-dir":
        return Case("cache", "embeddings.sqlite is a folder", list(RUN), "error", [("embeddings.sqlite",)],
                    files=files, env=env, dirs=["cache/embeddings.sqlite"])
    if choice == "garbage":
        return Case("cache", "a cache file of garbage", list(RUN), "ok", files={
            **files, "cache/embeddings.sqlite": bytes(rng.randrange(256) for _ in range(rng.choice([10, 5000])))},
            env=env, note="embeddings.sqlite")
    if choice == "empty-file":
        return Case("cache", "an empty cache file", list(RUN), "ok", files={**files, "cache/embeddings.sqlite": b""},
                    env=env)
    if choice == "truncated":
        raw = FIXTURE_BYTES["embeddings.sqlite"]
        cut = rng.randrange(100, len(raw) - 100)
        return Case("cache", f"a cache file cut at byte {cut}", list(RUN), "either", [("embeddings.sqlite",)],
                    files={**files, "cache/embeddings.sqlite": raw[:cut]}, env=env)
    if choice == "wrong-schema":
        return Case("cache", "a cache database of another schema", list(RUN), "ok",
                    files={**files, "cache/embeddings.sqlite": FIXTURE_BYTES["other.sqlite"]}, env=env,
                    note="embeddings.sqlite")
    return Case("cache", "a vector row of the wrong length", list(RUN), "ok",
                files={**files, "cache/embeddings.sqlite": FIXTURE_BYTES["bad-row.sqlite"]}, env=env,
                note="embeddings.sqlite")


FIXTURE_BYTES: dict[str, bytes] = {}


# --- CLI options ---------------------------------------------------------------------------------------------

@family("options")
def options(rng: random.Random) -> Case:
    choice = rng.choice(["unknown-option", "bad-int", "now", "profile", "preset-option", "agent", "init-preset-qmd",
                         "missing-arg", "stages-table", "init-queries-dir", "sweep-folds", "diff-hits", "ok-stages"])
    if choice == "unknown-option":
        return Case("options", "an unknown option", ["run", "x.toml", "--outt", "o"], "error", [("--outt",)],
                    files={"x.toml": to_toml(experiment_dict())})
    if choice == "bad-int":
        return Case("options", "--hits is not a number", ["diff", "fx/results.json", "fx/results.json", "--hits", "x"],
                    "error", [("--hits",)])
    if choice == "diff-hits":
        return Case("options", "--hits 0", ["diff", "fx/results.json", "fx/results.json", "--hits", "0"], "error",
                    [("--hits",)])
    if choice == "sweep-folds":
        return Case("options", "--folds 1", ["sweep", "x.toml", "--folds", rng.choice(["1", "0", "-2"]), "--out", "s"],
                    "error", [("--folds",)], files={"x.toml": to_toml(experiment_dict())})
    if choice == "now":
        value = rng.choice(["2026-02-30", "today", "2026/03/08", "", "2026-3-8x"])
        return Case("options", f"init --now {value!r}", ["init", "ws", "--out", "ev", "--now", value], "error",
                    [("--now",)])
    if choice == "profile":
        return Case("options", "--profile bogus", ["run", "x.toml", "--profile", rng.choice(["bogus", "VPS", ""]),
                                                   "--out", "o"], "error", [("profile",)],
                    files={"x.toml": to_toml(experiment_dict())})
    if choice == "preset-option":
        return Case("options", "--preset bogus", ["run", "x.toml", "--preset", "bogus", "--out", "o"], "error",
                    [("preset", "bogus")], files={"x.toml": to_toml(experiment_dict())})
    if choice == "agent":
        return Case("options", "init --agent that is not there", ["init", "ws", "--out", "ev", "--agent", "ghost"],
                    "error", [("openclaw.json", "--agent")], files={"ws/openclaw.json": json.dumps(OPENCLAW_JSON)})
    if choice == "init-preset-qmd":
        return Case("options", "init --preset qmd with openclaw.json weights",
                    ["init", "ws", "--out", "ev", "--preset", rng.choice(["qmd", "lancedb-pro"])], "error",
                    [("openclaw.json",), ("--preset", "qmd", "lancedb")],
                    files={"ws/openclaw.json": json.dumps(OPENCLAW_JSON)})
    if choice == "missing-arg":
        return Case("options", "run without its experiment", ["run"], "error", [("EXPERIMENT", "experiment")])
    if choice == "stages-table":
        return Case("options", "stages of an unknown table", ["stages", "bogus"], "error", [("bogus", "table")])
    if choice == "init-queries-dir":
        return Case("options", "init --queries is a folder", ["init", "ws", "--out", "ev", "--queries", "ws/memory"],
                    "error", [("memory", "--queries")])
    return Case("options", "stages fusion", ["stages", "fusion"], "ok")


# --- secrets in any field ------------------------------------------------------------------------------------

@family("secrets")
def secrets(rng: random.Random) -> Case:
    """The canary key in fields that are not secret fields: it must be refused or ignored, never echoed."""
    choice = rng.choice(["stage-value", "set-value", "known-openclaw", "queries-id", "embedder-key", "base-url"])
    doc = experiment_dict()
    if choice == "stage-value":
        table, key = rng.choice([("fusion", "vector_weight"), ("chunker", "tokens"), ("search", "max_results"),
                                 ("evaluation", "near_tie")])
        doc[table] = {**doc.get(table, {}), key: SECRET}
        return run_case("secrets", f"a key as [{table}] {key}", doc, "refuse", [X, (key,)], secret=True)
    if choice == "set-value":
        return Case("secrets", "a key in --set", ["run", "x.toml", "--out", "out", "--set",
                                                  f"fusion.text_weight={SECRET}"], "refuse", [("text_weight",)],
                    secret=True)
    if choice == "known-openclaw":
        path = rng.choice(["memory.search.query.maxResults", "memory.search.query.minScore",
                           "memory.search.store.fts.tokenizer", "agents.defaults.memorySearch.chunking.tokens"])
        body = _set_path(json.loads(json.dumps(OPENCLAW_JSON)), path, SECRET)
        return _openclaw_case(f"a key as {path}", json.dumps(body), "refuse", [OC, (path.split(".")[-1],)],
                              rng=rng, secret=True)
    if choice == "queries-id":
        return _queries_case("a key as a query's kind", queries_yaml([{**QUERIES[0], "kind": SECRET}]), "error",
                             secret=True)
    if choice == "embedder-key":
        doc["embedder"] = {"name": "openai-compatible", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                           "api_key": SECRET}
        return run_case("secrets", "api_key in [embedder]", doc, "error", [X, ("api_key",)], secret=True)
    doc["embedder"] = {"name": "openai-compatible", "base_url": f"https://user:{SECRET}@api.example.com/v1",
                       "model": "m"}
    return run_case("secrets", "a key in base_url", doc, "error", [X, ("base_url",)], secret=True)


# --- HTTP stages and study specs ---------------------------------------------------------------------------

@family("http-and-studies")
def http_and_studies(rng: random.Random) -> Case:
    choice = rng.choice(["base-url", "refused-port", "grid-syntax", "grid-value", "grid-encoding", "matrix-spec",
                         "reranker-without-stage", "expansion-fusion"])
    doc = experiment_dict()
    if choice == "base-url":
        url = rng.choice(["ftp://host/v1", "http://", "localhost:8080/v1", "http://h/v1?key=1", ""])
        doc["embedder"] = {"name": "openai-compatible", "base_url": url, "model": "m"}
        return run_case("http", f"base_url {url!r}", doc, "error", [X, ("base_url",)])
    if choice == "refused-port":
        doc["embedder"] = {"name": "openai-compatible", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                           "max_retries": 0, "timeout": 5.0}
        return run_case("http", "an embedding server that is not there", doc, "error",
                        [("127.0.0.1:9", "base_url")])
    if choice == "reranker-without-stage":
        doc["reranker"] = {"name": "http", "base_url": "http://127.0.0.1:9", "model": "m"}
        return run_case("http", "a [reranker] no stage uses", doc, "error", [X, ("[reranker]",)])
    if choice == "expansion-fusion":
        doc["expansion"] = {"name": "prf"}
        return run_case("http", "query expansion with a fusion that cannot fuse it", doc, "error", [X, ("expansion",)])
    base = ["sweep", "x.toml", "--grid", "grid.toml", "--out", "s"]
    if choice == "grid-syntax":
        text = rng.choice(["[grid\n", "grid = 3\n", "[grid]\nvector_weight = [\n", "[grid]\nbogus = [1]\n",
                           "[grid]\nvector_weight = {start = 0.0}\n", ""])
        return Case("studies", "a malformed sweep grid", base, "error", [("grid.toml",)], files={"grid.toml": text})
    if choice == "grid-value":
        text = rng.choice(["[grid]\nvector_weight = [1.5]\n", "[grid]\nvector_weight = [-0.1, 0.5]\n",
                           "[grid]\nmmr = [2.0]\n", "[grid]\nvector_weight = {start = 0.0, stop = 1.0, step = 0.0}\n",
                           "[grid]\nvector_weight = {start = 0.0, stop = 1.0, step = -0.1}\n",
                           "[grid]\nmin_score = [\"high\"]\n"])
        return Case("studies", "a sweep grid value outside its domain", base, "refuse",
                    [("grid.toml", "vector_weight", "mmr", "min_score", "lambda", "step")], files={"grid.toml": text})
    if choice == "grid-encoding":
        label, raw, expect, says = encoded(rng, "[grid]\nvector_weight = [0.5, 0.7]\n")
        if expect == "ok":
            return Case("studies", f"a sweep grid in {label} (redraw of nothing)", base[:1] + ["x.toml", "--grid",
                        "grid.toml", "--out", "s", "--folds", "1"], "error", [("--folds",)], files={"grid.toml": raw})
        return Case("studies", f"a sweep grid in {label}", base, expect, [("grid.toml",), says] if says else
                    [("grid.toml",)], files={"grid.toml": raw})
    text = rng.choice(["[matrix]\n", "name = 3\n", 'name = "m"\nruns = 3\n', 'name = "m"\n[[runs]]\nlabel = 1\n',
                       "[[", 'name = ""\n'])
    return Case("studies", "a malformed matrix spec", ["matrix", "m.toml", "--out", "mo"], "error", [("m.toml",)],
                files={"m.toml": text})


# --- generation ---------------------------------------------------------------------------------------------

WEIGHTS = {"experiment-encoding": 2, "experiment-syntax": 3, "experiment-structure": 4, "stage-domain": 8,
           "settings-domain": 3, "relations": 4, "set-option": 2, "queries-encoding": 2, "queries-fields": 4,
           "queries-syntax": 3, "openclaw-fields": 4, "openclaw-syntax": 3, "workspace": 4, "trec": 4,
           "results-files": 4, "gate-rules": 3, "outputs": 3, "cache": 2, "options": 3, "secrets": 3,
           "http-and-studies": 3}


def family_order(seed: int) -> list[str]:
    """One round of families in proportion to WEIGHTS, shuffled by the seed."""
    names = [name for name, w in WEIGHTS.items() for _ in range(w)]
    random.Random(seed).shuffle(names)
    return names


def make_case(seed: int, index: int) -> Case:
    order = family_order(seed)
    name = order[index % len(order)]
    rng = random.Random(f"{seed}:{index}")
    case = FAMILIES[name](rng)
    case.label = f"[{name}] {case.label}"
    return case
