"""`harness judge EXPERIMENT...`: pool, label (page and/or LLM), export; the documented function behind the CLI."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from harness.config import load_experiment, load_toml
from harness.errors import ConfigError
from harness.judging.export import export
from harness.judging.pool import POOL_FILE, Pool, PoolConfiguration, build_pool, load_pool_spec
from harness.judging.store import LabelStore

JUDGE_DIR = "judge"


@dataclass
class JudgeSession:
    judge_dir: Path
    pool: Pool
    store: LabelStore
    redact: bool


def judge_dir_of(experiments: Sequence[Path]) -> Path:
    return Path(experiments[0]).resolve().parent / JUDGE_DIR


def extend_configurations(path: Path) -> list[PoolConfiguration]:
    """The configurations of an --extend file (what `harness sweep` writes for a setting it would not recommend
    unjudged): [[configuration]] tables with label and set."""
    doc = load_toml(path)
    configs = []
    for i, table in enumerate(doc.get("configuration", [])):
        if not isinstance(table, dict) or not isinstance(table.get("label"), str):
            raise ConfigError(f"{path} [[configuration]] {i + 1}: needs a label and a set list")
        import json

        configs.append(PoolConfiguration(table["label"], tuple(table.get("set", [])),
                                         json.dumps(table.get("tables", {}), sort_keys=True)))
    if not configs:
        raise ConfigError(f"{path}: no [[configuration]] to add to the pool")
    return configs


def prepare(experiments: Sequence[Path], *, pool_file: Path | None = None, extend: Path | None = None,
            redact: bool | None = None, embedder: Any = None, progress: bool = True,
            log: Callable[[str], None] = print) -> JudgeSession:
    """Build (or extend) the pool and open the labels: what the page and the LLM judge work on."""
    experiments = [Path(e).resolve() for e in experiments]
    judge_dir = judge_dir_of(experiments)
    judge_dir.mkdir(parents=True, exist_ok=True)
    spec = load_pool_spec(pool_file or experiments[0].parent / "pool.toml")
    existing = Pool.load(judge_dir / POOL_FILE) if (judge_dir / POOL_FILE).is_file() else None
    if extend is not None:
        added = [c for c in extend_configurations(extend) if c.label not in {x.label for x in spec.configurations}]
        spec.configurations += added
        log(f"extending the pool with {', '.join(c.label for c in added) or 'nothing new'}")
    before = existing.items if existing else 0
    pool = build_pool(experiments, spec, existing=existing, progress=progress, embedder=embedder, log=log)
    pool.save(judge_dir / POOL_FILE)
    log(f"pool: {len(pool.queries)} queries, {pool.items} chunks ({pool.items - before} new) in {judge_dir / POOL_FILE}")
    if redact is None:

        redact = bool(load_experiment(experiments[0]).evaluation.redact)
    return JudgeSession(judge_dir, pool, LabelStore(judge_dir / "labels.sqlite"), redact)


def finish(session: JudgeSession, llm: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the qrels, the judged queries files and experiments; returns the document of the report
    (harness.reporting.judge.write_judge_report writes it)."""
    return export(session.pool, session.store, session.judge_dir, redact=session.redact, llm=llm)
