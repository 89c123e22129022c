"""Corpora and layouts: records -> the Markdown workspace a run indexes, plus a provenance map.

A *layout* is what an agent's memory folder looks like for one experiment: a set of Markdown files
under a fresh directory, and a provenance map saying which line ranges of which file come from which
document (a king78 record id, a CMRC paragraph id, ...).  Relevance is judged on the provenance map:
a chunk is relevant to a query when its lines overlap a relevant document's lines, and *pure* when it
overlaps no other document.  Every data set therefore reduces to the same thing: files + spans + qrels.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from harness.bundled import project_path  # noqa: F401  (re-exported: the readers of data paths import it here)
from harness.errors import DataError, OutputExistsError
from harness.registry import Registry
from harness.text_files import loads_json, read_text

DATASETS = Registry("dataset", builtins=("harness.inputs.king78", "harness.inputs.public", "harness.inputs.workspace",
                                       "harness.inputs.locomo", "harness.inputs.t2ranking",
                                       "harness.inputs.longmemeval", "harness.inputs.robustness_zh",
                                       "harness.inputs.knowledge_update"))

# ---------------------------------------------------------------------------------------------
# Layout: files + provenance
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """Lines start..end (1-based, inclusive) of `path` come from document `doc_id`."""

    path: str
    start: int
    end: int
    doc_id: str


@dataclass
class Layout:
    root: Path
    files: list[str]  # paths relative to root, the files a memory indexer would see
    spans: list[Span]
    description: dict[str, Any] = field(default_factory=dict)
    _by_path: dict[str, list[Span]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_path = {}
        for span in self.spans:
            self._by_path.setdefault(span.path, []).append(span)

    def docs_overlapping(self, path: str, start: int, end: int) -> set[str]:
        return {s.doc_id for s in self._by_path.get(path, ()) if s.start <= end and start <= s.end}

    _kept: dict[str, str] = field(default_factory=dict, repr=False)

    def read(self, path: str) -> str:
        if path in self._kept:
            return self._kept[path]
        return (self.root / path).read_text(encoding="utf-8")

    def cleanup(self) -> None:
        """Remove the rendered folder.  The files' texts stay readable through read(): figures computed
        after indexing (context cost) read them once the folder is gone (a sweep scores after cleanup)."""
        if self.root.exists():
            self._kept = {p: self.read(p) for p in self.files if (self.root / p).is_file()}
        shutil.rmtree(self.root, ignore_errors=True)


class LayoutWriter:
    """Accumulates files line by line and records which lines come from which document."""

    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, list[str]] = {}
        self.spans: list[Span] = []

    def add_lines(self, path: str, lines: Iterable[str], doc_ids: Iterable[str] = ()) -> None:
        buf = self.files.setdefault(path, [])
        lines = list(lines)
        start = len(buf) + 1
        buf.extend(lines)
        end = len(buf)
        if lines:
            for doc_id in doc_ids:
                self.spans.append(Span(path, start, end, doc_id))

    def finish(self, description: dict[str, Any] | None = None) -> Layout:
        for rel, lines in self.files.items():
            target = self.root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            # newline="\n": the same bytes on every platform, so renders are reproducible
            with open(target, "w", encoding="utf-8", newline="\n") as fh:
                fh.write("\n".join(lines) + "\n")
        layout = Layout(self.root, sorted(self.files), self.spans, description or {})
        (self.root / "provenance.json").write_text(
            json.dumps(
                {"description": layout.description,
                 "spans": [[s.path, s.start, s.end, s.doc_id] for s in layout.spans]},
                ensure_ascii=False, indent=0,
            ),
            encoding="utf-8",
        )
        return layout


def fresh_root(prefix: str, dest: Path | str | None = None) -> Path:
    if dest is None:
        return Path(tempfile.mkdtemp(prefix=prefix))
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise OutputExistsError(f"{dest}: layout destination must be new or empty")
    dest.mkdir(parents=True, exist_ok=True)
    return dest


# ---------------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    relevant: dict[str, int]  # doc id -> grade (>0)
    kind: str = "suite"  # suite | negative | paraphrase
    joined_round: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # The resampling unit the query belongs to (a LoCoMo conversation, a CMRC article, the king78 record
    # a paraphrase targets): queries of one cluster are not independent draws, so intervals and tests
    # resample clusters.  None: the query is its own unit.
    cluster: str | None = None

    def in_suite(self, round_no: int | None) -> bool:
        if self.kind != "suite":
            return False
        return round_no is None or self.joined_round is None or self.joined_round <= round_no


QUERY_KINDS = ("suite", "negative", "paraphrase")


def clusters_by_shared_documents(queries: Iterable[Query]) -> list[Query]:
    """The queries with `cluster` set to the connected component of the documents they share: a T-query
    and its paraphrases (the same record) form one cluster, as do queries linked through any document.
    The label is the component's smallest document id; a query with no relevant document (a negative)
    stays its own unit (cluster None).  A query whose cluster is already set keeps it."""
    queries = list(queries)
    parent: dict[str, str] = {}

    def find(doc: str) -> str:
        while parent.setdefault(doc, doc) != doc:
            parent[doc] = parent[parent[doc]]
            doc = parent[doc]
        return doc

    for q in queries:
        docs = sorted(q.relevant)
        for doc in docs[1:]:
            a, b = find(docs[0]), find(doc)
            if a != b:
                parent[max(a, b)] = min(a, b)
    out = []
    for q in queries:
        if q.cluster is not None or not q.relevant:
            out.append(q)
            continue
        out.append(dataclasses.replace(q, cluster=find(min(q.relevant))))
    return out


def resampling_unit(dataset: Any) -> str:
    """What one cluster of a data set's queries is (its RESAMPLING_UNIT, or a `cluster` option's value):
    "conversation", "article", "record"; "query" when the queries are independent draws."""
    value = getattr(dataset, "cluster", None)
    if isinstance(value, str) and value:
        return value
    return getattr(dataset, "RESAMPLING_UNIT", "query")



# ---------------------------------------------------------------------------------------------
# Reading text inputs
# ---------------------------------------------------------------------------------------------

def read_utf8(path: Path | str, *, missing: str = "no such file", what: str = "file",
              limit: int | None = None) -> str:
    """A text file's content (UTF-8, a leading BOM dropped); a missing file, a folder, an unreadable file,
    UTF-16 or invalid UTF-8 raise DataError naming the file (harness.text_files.read_text)."""
    return read_text(path, what, missing=missing, limit=limit)


def read_json(path: Path | str, what: str, *, limit: int | None = None) -> tuple[str, Any]:
    """A JSON file's text and parsed value; missing file, bad UTF-8 or bad JSON (a key twice in one
    object, nesting deeper than any real file) raise DataError naming the file (and line): `what` names
    the kind of file in the message, e.g. "SQuAD JSON file"."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, None, None, f"missing {what}")
    text = read_utf8(path, what=what, limit=limit)
    return text, loads_json(text, path, what)


def jsonl_objects(path: Path, what: str = "JSONL file") -> Iterable[tuple[int, dict[str, Any]]]:
    path = Path(path)
    text = read_utf8(path, what=what)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        obj = loads_json(line, path, what, line=lineno)
        if not isinstance(obj, dict):
            raise DataError(path, lineno, None, "each line must be a JSON object")
        yield lineno, obj
