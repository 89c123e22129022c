"""The 100-query T2Ranking sample (THUIR/T2Ranking, as shipped in NLPJCL/RAG-Retrieval's example data):
real Sogou search queries with passages labelled positive and negative.

    [dataset]
    name = "t2ranking"
    path = "datasets/t2ranking_100/t2rank_100.jsonl"   # sha256-checked (published.py)

Each line is {"query": str, "pos": [passage, ...], "neg": [passage, ...]}, passages as raw text without
ids.  The corpus is every distinct passage of the file (1,987), one Markdown file each,
memory/<id>.md, with id = "p" + the first 12 hex digits of the sha256 of its UTF-8 text: stable
whatever the file order, and the same passage under two queries is one document.  A query's `pos`
passages are relevant (grade 1); its `neg` passages are judged non-relevant: the harness's queries hold
only relevant documents (grade > 0), so they are kept in the query's extra field `nonrelevant` (grade 0
in qrels built from it) rather than dropped.

Conflicting labels: 6 passages are both pos and neg for the same query.  They count as relevant
(`conflicting_labels = "relevant"`, the default): a positive is an annotator's judgement, while the
sample's negatives may be mined hard negatives (RAG-Retrieval does not say which); "nonrelevant" counts
them the other way, so the effect of the choice can be measured.  The description lists them.

Contamination: the queries are a contiguous pinyin-sorted slice of T2Ranking, most likely of its train
split, on which many Chinese embedding models (BGE-zh / C-MTP among them) were trained; figures for such
models here may be inflated (datasets/t2ranking_100/SOURCE.md).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from harness.errors import DataError
from harness.inputs.dataset import Provenance, PublishedFileDataset
from harness.inputs.layout import DATASETS, Layout, Query, jsonl_objects, project_path
from harness.inputs.public import Document, render_documents
from harness.registry import stage

CONTAMINATION = ("queries most likely from T2Ranking's train split, on which many Chinese embedding models "
                 "(e.g. BGE-zh / C-MTP) were trained: their figures here may be inflated")


def passage_id(text: str) -> str:
    return "p" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _passages(obj: dict[str, Any], key: str, path: Path, lineno: int) -> list[str]:
    value = obj.get(key)
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise DataError(path, lineno, key, "must be a list of passage texts")
    return value


def read_t2ranking(path: Path | str, conflicting_labels: str = "relevant"
                   ) -> tuple[list[Document], list[Query], dict[str, Any]]:
    """Passages (deduplicated, in order of first appearance), queries, and what was merged or skipped."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, None, "missing T2Ranking JSONL file")
    docs: dict[str, Document] = {}
    queries: list[Query] = []
    conflicts: list[list[str]] = []
    skipped: dict[str, list[str]] = {}
    for lineno, obj in jsonl_objects(path):
        text = obj.get("query")
        if not isinstance(text, str):
            raise DataError(path, lineno, "query", "must be a string")
        qid = f"q{lineno:03d}"
        pos, neg = _passages(obj, "pos", path, lineno), _passages(obj, "neg", path, lineno)
        ids: dict[str, set[str]] = {"pos": set(), "neg": set()}
        for key, passages in (("pos", pos), ("neg", neg)):
            for passage in passages:
                if not passage.strip():
                    skipped.setdefault("empty_passage", []).append(f"{qid}:{key}")
                    continue
                pid = passage_id(passage)
                if pid in docs and docs[pid].text != passage:
                    raise DataError(path, lineno, key, f"two passages share the id {pid}: lengthen passage_id")
                docs.setdefault(pid, Document(pid, "", passage))
                ids[key].add(pid)
        both = ids["pos"] & ids["neg"]
        conflicts += [[qid, pid] for pid in sorted(both)]
        relevant = ids["pos"] - both if conflicting_labels == "nonrelevant" else ids["pos"]
        nonrelevant = ids["neg"] - relevant
        if not text.strip():
            skipped.setdefault("empty_query", []).append(qid)
        elif not relevant:
            skipped.setdefault("no_relevant_passage", []).append(qid)
        else:
            queries.append(Query(qid, text, {pid: 1 for pid in sorted(relevant)},
                                 extra={"nonrelevant": sorted(nonrelevant)}))
    facts = {"conflicting_labels": {"treated_as": conflicting_labels, "pairs": conflicts}, "skipped": skipped}
    return list(docs.values()), queries, facts


@DATASETS.register("t2ranking")
@stage
class T2Ranking(PublishedFileDataset):
    """The 100-query T2Ranking sample: passages deduplicated, pos relevant, neg judged non-relevant."""

    PROVENANCE = Provenance("Apache-2.0 (the data, THUIR/T2Ranking); MIT (the redistributing repository, "
                            "NLPJCL/RAG-Retrieval)", ("datasets/t2ranking_100",), ("datasets/t2ranking_100/SOURCE.md",))

    path: str | Path = "datasets/t2ranking_100/t2rank_100.jsonl"
    """the JSONL file (a relative path is read from the working directory, else the project root)"""
    limit_queries: int | None = Field(None, gt=0)
    """the first N queries kept, in file order (all when unset)"""
    conflicting_labels: Literal["relevant", "nonrelevant"] = "relevant"
    """a passage both pos and neg for one query counts as this"""
    sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    """expected sha256 of the file (default: the published hash of t2rank_100.jsonl)"""
    verify: bool = True
    """check the sha256 before reading (false: measure a modified copy without a check)"""

    def __post_init__(self) -> None:
        self.path = project_path(self.path)
        self._loaded: tuple[list[Document], list[Query], dict[str, Any]] | None = None
        self._checked: dict[str, Any] = {}

    def _load(self) -> tuple[list[Document], list[Query], dict[str, Any]]:
        if self._loaded is None:
            self._checked = self.check_file()
            self._loaded = read_t2ranking(self.path, self.conflicting_labels)
        return self._loaded

    def documents(self) -> list[Document]:
        return self._load()[0]

    def queries(self) -> list[Query]:
        queries = self._load()[1]
        return queries[: self.limit_queries] if self.limit_queries else list(queries)

    def describe(self) -> dict[str, Any]:
        docs, queries, facts = self._load()
        pairs = facts["conflicting_labels"]["pairs"]
        notes = [f"{len(pairs)} passage(s) both pos and neg for the same query, counted as "
                 f"{self.conflicting_labels}", f"contamination: {CONTAMINATION}"]
        notes += [f"skipped {len(ids)} item(s), {reason.replace('_', ' ')}: {', '.join(ids)}"
                  for reason, ids in facts["skipped"].items()]
        return {"dataset": "t2ranking", "path": str(self.path), **self._checked, "passages": len(docs),
                "queries": len(queries), "relevant_labels": sum(len(q.relevant) for q in queries),
                "nonrelevant_labels": sum(len(q.extra["nonrelevant"]) for q in queries), **facts,
                "notes": notes}

    def render(self, dest: Path | str | None = None) -> Layout:
        """One file per passage, memory/<id>.md, no heading (the passages have no titles)."""
        return render_documents(self.documents(), self.describe(), dest, title_heading=False)
