"""The pool, the way TREC builds qrels: per query, the top `depth` chunks of several configurations (and the
chunks the agent itself read, so that implicit and explicit judgments can be compared), de-duplicated by line
range, shuffled, and shown without saying which configuration returned which.

pool.toml (written by `harness init --openclaw-home`, beside the experiment):
    depth = 10
    [[configuration]]
    label = "yours"
    set = []                                          # --set assignments on the experiment
    [[configuration]]
    label = "balanced"
    set = ["fusion.vector_weight=0.5", "fusion.text_weight=0.5"]
pool.json (in the judge folder) records the experiments, every configuration that fed the pool with its depth
and when it was added (`harness judge --extend FILE` adds configurations), and each query's items: their
line range, text and which configurations returned them (never shown in the page).
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from harness.config import load_experiment, load_toml, merge, parse_assignments
from harness.errors import ConfigError, DataError
from harness.inputs.anchors import reanchor
from harness.inputs.layout import Query
from harness.inputs.query_files import load_query_specs
from harness.judging.store import item_key
from harness.pipeline import build_stages, dataset_parts, fuse, index_layout, load_dataset, search_legs

DEFAULT_DEPTH = 10
POOL_FILE = "pool.json"


@dataclass(frozen=True)
class PoolConfiguration:
    label: str
    set: tuple[str, ...] = ()
    tables: str = "{}"  # experiment tables merged in after `set` (JSON; what `harness sweep` writes for --extend)

    def overrides(self) -> dict[str, Any]:
        return merge(parse_assignments(list(self.set)), json.loads(self.tables))


@dataclass
class PoolSpec:
    depth: int
    configurations: list[PoolConfiguration]
    chat: dict[str, Any] | None = None  # [chat] for the LLM judge
    source: str = "<pool>"


def load_pool_spec(path: Path | str) -> PoolSpec:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no pool file (harness init --openclaw-home writes pool.toml beside the experiment; "
                          "write one: depth = 10 and [[configuration]] tables with label and set)")
    doc = load_toml(path)
    unknown = sorted(set(doc) - {"depth", "configuration", "chat"})
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r}; a pool file has depth, [[configuration]] and [chat]")
    depth = doc.get("depth", DEFAULT_DEPTH)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ConfigError(f"{path}: depth must be a whole number >= 1, got {depth!r}")
    configs = []
    for i, table in enumerate(doc.get("configuration", [])):
        where = f"{path} [[configuration]] {i + 1}"
        if not isinstance(table, dict) or not isinstance(table.get("label"), str) or not table["label"].strip():
            raise ConfigError(f"{where}: needs a label")
        sets = table.get("set", [])
        if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
            raise ConfigError(f"{where}: set must be a list of TABLE.KEY=VALUE strings")
        parse_assignments(sets)  # a wrong assignment fails now, naming itself
        tables = table.get("tables", {})
        if not isinstance(tables, dict):
            raise ConfigError(f"{where}: tables must be a table of experiment tables")
        configs.append(PoolConfiguration(table["label"].strip(), tuple(sets), json.dumps(tables, sort_keys=True)))
    if not configs:
        raise ConfigError(f"{path}: no [[configuration]]; pool at least your own (label = \"yours\", set = [])")
    labels = [c.label for c in configs]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"{path}: configuration labels repeat: {labels}")
    chat = doc.get("chat")
    if chat is not None and not isinstance(chat, dict):
        raise ConfigError(f"{path}: [chat] must be a table")
    return PoolSpec(depth, configs, chat, str(path))


@dataclass
class PoolItem:
    path: str
    start: int
    end: int
    text: str
    fed_by: list[str] = field(default_factory=list)  # configuration labels (and "agent" for the implicit ones)

    @property
    def key(self) -> str:
        return item_key(self.path, self.start, self.end)


@dataclass
class PoolQuery:
    id: str
    text: str
    experiment: str
    split: str
    items: list[PoolItem] = field(default_factory=list)
    stale: list[PoolItem] = field(default_factory=list)  # items whose text is no longer at their lines: not shown


@dataclass
class Pool:
    experiments: list[str]
    depth: int
    configurations: list[dict[str, Any]]  # {label, set, depth, added}
    queries: dict[str, PoolQuery]

    def save(self, path: Path) -> None:
        doc = {"experiments": self.experiments, "depth": self.depth, "configurations": self.configurations,
               "queries": [asdict(q) for q in self.queries.values()]}
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> "Pool":
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            queries = {}
            for q in doc["queries"]:
                items = [PoolItem(**i) for i in q.pop("items")]
                stale = [PoolItem(**i) for i in q.pop("stale", [])]
                queries[q["id"]] = PoolQuery(**q, items=items, stale=stale)
            return cls(doc["experiments"], doc["depth"], doc["configurations"], queries)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError(path, None, None, f"not a pool file the harness wrote ({exc}); remove it to pool again "
                                              "(the labels are kept apart, in labels.sqlite)") from None

    @property
    def items(self) -> int:
        return sum(len(q.items) for q in self.queries.values())


def _lines(text: str, start: int, end: int) -> str:
    lines = text.split("\n")  # OpenClaw's line numbers: the line after a final newline exists (empty)
    return "\n".join(lines[start - 1:end])


def _shuffled(qid: str, items: list[PoolItem]) -> list[PoolItem]:
    """A fixed order per query, unrelated to any configuration's ranking (seeded by the query id)."""
    out = sorted(items, key=lambda i: i.key)
    random.Random(int(hashlib.sha256(qid.encode("utf-8")).hexdigest()[:16], 16)).shuffle(out)
    return out


def _split_of(note: str | None) -> str:
    return "held-out" if note and "held-out" in note else "tuning"


def build_pool(experiments: Sequence[Path], spec: PoolSpec, *, existing: Pool | None = None, progress: bool = True,
               embedder: Any = None, log: Any = print) -> Pool:
    """Pool every query of the experiments' queries files (judged or not) from each configuration of `spec`
    not already in `existing`; the items `existing` has keep their order, new ones go after them, shuffled."""

    done = {c["label"] for c in existing.configurations} if existing else set()
    pool = existing or Pool([str(p) for p in experiments], spec.depth, [], {})
    for path in experiments:
        if str(path) not in pool.experiments:
            pool.experiments.append(str(path))
    new_items: dict[str, dict[str, PoolItem]] = {}
    known = {qid: {i.key: i for i in q.items} for qid, q in pool.queries.items()}
    for path in experiments:
        base = load_experiment(path)
        queries_file = base.dataset.params.get("queries") if base.dataset is not None else None
        if base.dataset is None or base.dataset.name != "workspace" or not queries_file:
            raise ConfigError(f"{path}: `harness judge` pools a workspace experiment's queries ([dataset] name = "
                              "\"workspace\" with a queries file), e.g. one `harness init --openclaw-home` wrote")
        specs = load_query_specs(queries_file)
        for s in specs:
            if s.id in pool.queries and pool.queries[s.id].experiment != str(path):
                raise DataError(queries_file, s.line, "id", f"query id {s.id!r} is also in "
                                                            f"{pool.queries[s.id].experiment}: ids must differ across the pooled experiments")
            pool.queries.setdefault(s.id, PoolQuery(s.id, s.text, str(path), _split_of(s.note)))
        queries = [Query(s.id, s.text, {}) for s in specs]
        for c in spec.configurations:
            if c.label in done:
                continue
            config = load_experiment(path, **c.overrides())
            config = config.with_overrides({"search": {"max_results": max(int(config.search.max_results), spec.depth)}})
            stages = build_stages(config, embedder=embedder, progress=progress)
            layout = None
            try:
                for scope, part in dataset_parts(load_dataset(config)):
                    layout = part.render(**config.layout)
                    index = index_layout(layout, stages)
                    legs = search_legs(index, stages, queries)
                    for q in queries:
                        hits, _ = fuse(stages, q, legs[q.id].legs, index, legs[q.id].query_vector)
                        for h in hits[:spec.depth]:
                            chunk = index.lookup(h.id)
                            _add(new_items, known, q.id, chunk.path, chunk.start_line, chunk.end_line, chunk.text, c.label)
            finally:
                if layout is not None:
                    layout.cleanup()
            log(f"pooled configuration {c.label!r} ({' '.join(c.set) or 'as configured'}) on {Path(path).name}: "
                f"top {spec.depth} of {len(queries)} queries")
        # the chunks the agent itself judged (read, cited, passed over): pooled so both kinds of judgment meet,
        # at the lines where the text it judged is now (a judgment whose text is gone is not pooled)
        texts = _texts(base)
        for s in specs:
            for j in s.judged or []:
                if j.path in texts:
                    start, end = j.start, j.end
                    if j.anchor is not None:

                        moved = reanchor(texts[j.path], j.start, j.end, j.anchor)
                        if moved is None:
                            continue
                        start, end = moved
                    _add(new_items, known, s.id, j.path, start, end, _lines(texts[j.path], start, end), "agent")
        stale, restored = check_items(pool, {s.id for s in specs}, texts)
        if stale or restored:
            log(f"{Path(path).name}: {stale} pooled chunk(s) no longer hold (their file changed since they were "
                f"pooled: not shown, their labels not exported)" + (f"; {restored} hold again" if restored else ""))
    for c in spec.configurations:
        if c.label not in done:
            pool.configurations.append({"label": c.label, "set": list(c.set), "tables": json.loads(c.tables),
                                        "depth": spec.depth,
                                        "added": datetime.now().astimezone().isoformat(timespec="seconds")})
    for qid, items in new_items.items():
        fresh = [i for k, i in items.items() if k not in {x.key for x in pool.queries[qid].items}]
        pool.queries[qid].items.extend(_shuffled(qid, fresh))
    return pool


def check_items(pool: Pool, query_ids: set[str], texts: dict[str, str]) -> tuple[int, int]:
    """Move the pooled items of these queries whose text is no longer at their lines in today's files (the
    file changed after pooling) to the query's `stale` list, so the page shows only spans that still hold,
    and back when they hold again.  Returns (newly stale, restored)."""
    stale = restored = 0
    for qid in query_ids:
        q = pool.queries.get(qid)
        if q is None:
            continue

        def holds(item: PoolItem) -> bool:
            return item.path in texts and _lines(texts[item.path], item.start, item.end) == item.text

        keep = [i for i in q.items if holds(i)]
        gone = [i for i in q.items if not holds(i)]
        back = [i for i in q.stale if holds(i)]
        q.stale = [i for i in q.stale if not holds(i)] + gone
        q.items = keep + back
        stale += len(gone)
        restored += len(back)
    return stale, restored


def _add(new: dict[str, dict[str, PoolItem]], known: dict[str, dict[str, PoolItem]], qid: str, path: str, start: int,
         end: int, text: str, label: str) -> None:
    key = item_key(path, start, end)
    have = known.get(qid, {}).get(key)
    if have is not None:
        if label not in have.fed_by:
            have.fed_by.append(label)
        return
    item = new.setdefault(qid, {}).setdefault(key, PoolItem(path, start, end, text))
    if label not in item.fed_by:
        item.fed_by.append(label)


def _texts(config: dict[str, Any]) -> dict[str, str]:
    dataset = load_dataset(config)
    return dataset.texts() if hasattr(dataset, "texts") else {}
