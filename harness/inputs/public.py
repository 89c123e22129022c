"""External retrieval data sets: BEIR-format folders and SQuAD-style JSON.

Both become the harness's common shape (layout.py): a layout of Markdown files with provenance spans,
plus queries with graded relevant documents.

    [dataset]
    name = "squad"                                   # or "beir"
    path = "datasets/cmrc2018/cmrc2018_dev.json"     # sha256-checked (published.py)
    limit_queries = 500                              # the first N questions, in file order

Rendering writes one file per document, memory/<doc_id>.md: the title as a level-1 heading (when the
document has one), a blank line, then the text; one provenance span covers all of the file's lines.

BEIR (SPEC.md section 5): corpus.jsonl {_id, title?, text}, queries.jsonl {_id, text},
qrels/<split>.tsv with a header row (query-id, corpus-id, score).  C-MTEB's names are accepted too:
id/text in the JSONL files and qid/pid/score in the qrels.  Grades <= 0 are not relevant; queries without
a relevant document are dropped (BEIR evaluates only judged queries).

SQuAD (v1.1 layout, e.g. CMRC 2018): corpus = paragraphs (doc id = the paragraph's "id", else
"<article index>-<paragraph index>"), each question's relevant document = its own paragraph.  A question
whose text is empty cannot be asked: it is skipped and listed under `skipped` in the data set's
description (results.json "dataset"), as CMRC 2018 trial's TRIAL_20_QUERY_0 and TRIAL_776_QUERY_4 are;
`empty_questions = "error"` refuses such a file instead.
"""
from __future__ import annotations

import csv
import dataclasses
import json
import json.decoder
import json.scanner
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence
from urllib.parse import quote

from pydantic import Field

from harness.errors import DataError
from harness.inputs.dataset import Provenance, PublishedFileDataset
from harness.inputs.layout import (
    DATASETS,
    Layout,
    LayoutWriter,
    Query,
    fresh_root,
    jsonl_objects,
    project_path,
    read_json,
)
from harness.registry import stage


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str


def document_path(doc_id: str) -> str:
    """memory/<doc_id>.md, with characters that are unsafe in a file name percent-encoded."""
    name = quote(doc_id, safe="-_.~")  # injective: distinct ids never share a file
    if name in (".", ".."):
        name = name.replace(".", "%2E")
    return f"memory/{name}.md"


def document_lines(doc: Document, *, title_heading: bool = True) -> list[str]:
    lines = [f"# {doc.title}", ""] if title_heading and doc.title.strip() else []
    return lines + doc.text.split("\n")


def render_documents(docs: Iterable[Document], description: dict[str, Any], dest: Path | str | None = None,
                     *, title_heading: bool = True) -> Layout:
    """One Markdown file per document; its provenance span covers all of its lines."""
    root = fresh_root(f"{description.get('dataset', 'docs')}-", dest)
    writer = LayoutWriter(root)
    n = 0
    for doc in docs:
        writer.add_lines(document_path(doc.id), document_lines(doc, title_heading=title_heading), [doc.id])
        n += 1
    return writer.finish({**description, "documents": n, "title_heading": title_heading})


def render_grouped(docs: Sequence[Document], description: dict[str, Any], group_size: int,
                   dest: Path | str | None = None) -> Layout:
    """Long files: `group_size` documents per file, each under its title as a `##` heading, so that
    chunk boundaries matter; a document's span is its heading and paragraph lines."""
    if group_size < 1:
        raise ValueError(f"layout.group_size must be >= 1, got {group_size}")
    root = fresh_root(f"{description.get('dataset', 'docs')}-", dest)
    writer = LayoutWriter(root)
    for start in range(0, len(docs), group_size):
        path = f"memory/group-{start // group_size + 1:04d}.md"
        for i, doc in enumerate(docs[start:start + group_size]):
            if i:
                writer.add_lines(path, [""])
            writer.add_lines(path, [f"## {doc.title or doc.id}", ""] + doc.text.split("\n"), [doc.id])
    return writer.finish({**description, "documents": len(docs), "group_size": group_size})


# ---------------------------------------------------------------------------------------------
# BEIR
# ---------------------------------------------------------------------------------------------

BEIR_ID_FIELDS = ("_id", "id")  # BEIR, C-MTEB
QRELS_HEADERS = (("query-id", "corpus-id", "score"), ("qid", "pid", "score"))


def _id_field(obj: dict[str, Any], path: Path, lineno: int) -> str:
    for key in BEIR_ID_FIELDS:
        if key in obj:
            value = obj[key]
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise DataError(path, lineno, key, f"must be a string (or an integer), got {type(value).__name__}")
            value = str(value)
            if not value.strip():
                raise DataError(path, lineno, key, "must not be empty")
            return value
    raise DataError(path, lineno, "_id", "missing (neither '_id' nor 'id')")


def _text_field(obj: dict[str, Any], key: str, path: Path, lineno: int, *, required: bool) -> str:
    if key not in obj or obj[key] is None:
        if required:
            raise DataError(path, lineno, key, "missing")
        return ""
    if not isinstance(obj[key], str):
        raise DataError(path, lineno, key, f"must be a string, got {type(obj[key]).__name__}")
    return obj[key]


def _existing(path: Path, what: str) -> Path:
    if not path.is_file():
        raise DataError(path, None, None, f"missing {what}")
    return path


def load_beir_corpus(path: Path | str) -> list[Document]:
    path = _existing(Path(path), "BEIR corpus file")
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for lineno, obj in jsonl_objects(path):
        doc_id = _id_field(obj, path, lineno)
        if doc_id in seen:
            raise DataError(path, lineno, "_id", f"duplicate document id {doc_id!r} (first on line {seen[doc_id]})")
        seen[doc_id] = lineno
        docs.append(Document(doc_id, _text_field(obj, "title", path, lineno, required=False),
                             _text_field(obj, "text", path, lineno, required=True)))
    return docs


def load_beir_queries(path: Path | str) -> dict[str, str]:
    """Query id -> text, in file order."""
    path = _existing(Path(path), "BEIR queries file")
    queries: dict[str, str] = {}
    lines: dict[str, int] = {}
    for lineno, obj in jsonl_objects(path):
        qid = _id_field(obj, path, lineno)
        if qid in queries:
            raise DataError(path, lineno, "_id", f"duplicate query id {qid!r} (first on line {lines[qid]})")
        text = _text_field(obj, "text", path, lineno, required=True)
        if not text.strip():
            raise DataError(path, lineno, "text", "empty query")
        queries[qid], lines[qid] = text, lineno
    return queries


def load_qrels(path: Path | str, query_ids: set[str] | None = None,
               doc_ids: set[str] | None = None) -> dict[str, dict[str, int]]:
    """qrels/<split>.tsv: a header row, then query-id, corpus-id, score (tab-separated)."""
    path = _existing(Path(path), "qrels file")
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        try:
            rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
        except UnicodeDecodeError as exc:
            raise DataError(path, None, None, f"not UTF-8 ({exc})") from None
    if not rows:
        raise DataError(path, 1, None, "empty file: expected a header row (query-id, corpus-id, score)")
    header = tuple(cell.strip().lower() for cell in rows[0])
    if header not in QRELS_HEADERS:
        raise DataError(path, 1, None, f"expected a header row {' / '.join(map(str, QRELS_HEADERS))}, "
                                       f"got {rows[0]!r}")
    names = QRELS_HEADERS[0] if header == QRELS_HEADERS[0] else QRELS_HEADERS[1]
    for lineno, row in enumerate(rows[1:], start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != 3:
            raise DataError(path, lineno, None, f"expected 3 tab-separated columns, got {len(row)}")
        qid, doc_id, score = (cell.strip() for cell in row)
        if not qid:
            raise DataError(path, lineno, names[0], "empty")
        if not doc_id:
            raise DataError(path, lineno, names[1], "empty")
        try:
            grade = int(score)
        except ValueError:
            raise DataError(path, lineno, names[2], f"must be an integer, got {score!r}") from None
        if query_ids is not None and qid not in query_ids:
            raise DataError(path, lineno, names[0], f"unknown query id {qid!r}")
        if doc_ids is not None and doc_id not in doc_ids:
            raise DataError(path, lineno, names[1], f"unknown document id {doc_id!r}")
        judged = qrels.setdefault(qid, {})
        if doc_id in judged and judged[doc_id] != grade:
            raise DataError(path, lineno, names[2], f"conflicting grades for ({qid}, {doc_id})")
        judged[doc_id] = grade
    return qrels


@DATASETS.register("beir")
@stage
class BeirDataset:
    """A BEIR-format folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

    PROVENANCE = Provenance("the BEIR data set's own (the user brings the folder)")

    path: str | Path
    """the folder (a relative path is read from the working directory, else the project root)"""
    split: str = "test"
    """the qrels file, qrels/<split>.tsv"""
    limit_queries: int | None = Field(None, gt=0)
    """the first N judged queries, in file order (all when unset)"""

    def __post_init__(self) -> None:
        self.path = project_path(self.path)
        self._docs: list[Document] | None = None

    def _folder(self) -> Path:
        # checked on first use, not in __post_init__: pydantic would turn the DataError into a ValidationError
        if not self.path.is_dir():
            raise DataError(self.path, None, None, "not a BEIR folder (expected corpus.jsonl, queries.jsonl, qrels/)")
        return self.path

    def files(self) -> list[Path]:
        return [self.path / "corpus.jsonl", self.path / "queries.jsonl", self.path / "qrels" / f"{self.split}.tsv"]

    def documents(self) -> list[Document]:
        if self._docs is None:
            self._docs = load_beir_corpus(self._folder() / "corpus.jsonl")
        return self._docs

    def queries(self) -> list[Query]:
        texts = load_beir_queries(self._folder() / "queries.jsonl")
        qrels = load_qrels(self.path / "qrels" / f"{self.split}.tsv", set(texts), {d.id for d in self.documents()})
        out: list[Query] = []
        for qid, text in texts.items():  # file order
            relevant = {doc: grade for doc, grade in qrels.get(qid, {}).items() if grade > 0}
            if relevant:
                out.append(Query(qid, text, relevant))
        return out[: self.limit_queries] if self.limit_queries else out

    def render(self, dest: Path | str | None = None, *, title_heading: bool = True) -> Layout:
        description = {"dataset": "beir", "path": str(self.path), "split": self.split}
        return render_documents(self.documents(), description, dest, title_heading=title_heading)


# ---------------------------------------------------------------------------------------------
# SQuAD-style JSON (CMRC 2018)
# ---------------------------------------------------------------------------------------------


class _Invalid(Exception):
    """A defect at a JSON path: ("data", 3, "paragraphs", 0, "qas", 2), field "question"."""

    def __init__(self, where: tuple[Any, ...], field_name: str | None, message: str):
        super().__init__(message)
        self.where, self.field_name, self.message = where, field_name, message


def _json_path(where: tuple[Any, ...], field_name: str | None) -> str:
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    if field_name:
        out += f".{field_name}" if out else field_name
    return out


def _parse_with_offsets(text: str) -> tuple[Any, dict[int, int]]:
    """The parsed JSON and id(object) -> offset of its '{', using the pure-Python scanner (slow).  Only
    used to put a line number on an error, so the fast C parser does the normal load."""
    offsets: dict[int, int] = {}
    decoder = json.JSONDecoder()

    def parse_object(s_and_end, *args, **kwargs):
        obj, end = json.decoder.JSONObject(s_and_end, *args, **kwargs)
        offsets[id(obj)] = s_and_end[1] - 1  # the scanner passes the index just after '{'
        return obj, end

    decoder.parse_object = parse_object
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    return decoder.decode(text), offsets  # the root keeps every object alive, so ids stay valid


def _line_of(text: str, where: tuple[Any, ...], field_name: str | None) -> int | None:
    try:
        node, offsets = _parse_with_offsets(text)
    except (ValueError, RecursionError):
        return None
    start = offsets.get(id(node))
    for part in where:  # the innermost object on the path that exists gives the line
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        start = offsets.get(id(node), start)
    if start is None:
        return None
    if isinstance(node, dict) and field_name in node:  # point at the key itself
        for spelling in (json.dumps(field_name, ensure_ascii=False), json.dumps(field_name)):
            at = text.find(spelling, start)
            if at >= 0:
                start = at
                break
    return text.count("\n", 0, start) + 1


_JSON_TYPE_NAMES = {str: "a string", list: "a list", dict: "an object"}


def _want(obj: Any, key: str, typ: type, where: tuple[Any, ...]) -> Any:
    if not isinstance(obj, dict):
        raise _Invalid(where, None, "must be a JSON object")
    if key not in obj:
        raise _Invalid(where, key, "missing")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, typ):
        raise _Invalid(where, key, f"must be {_JSON_TYPE_NAMES.get(typ, typ.__name__)}, got {type(value).__name__}")
    return value


@dataclass
class SquadData:
    """A parsed SQuAD file: paragraphs, the questions kept, and the ids of questions skipped by reason."""

    documents: list[Document]
    queries: list[Query]
    skipped: dict[str, list[str]]


def _parse_squad(root: Any, empty_questions: str = "skip") -> SquadData:
    if not isinstance(root, dict):
        raise _Invalid((), None, "the top level must be a JSON object with a 'data' list")
    articles = _want(root, "data", list, ())
    docs: list[Document] = []
    queries: list[Query] = []
    skipped: dict[str, list[str]] = {}
    doc_seen: set[str] = set()
    query_seen: set[str] = set()
    for ai, article in enumerate(articles):
        where_a = ("data", ai)
        title = _want(article, "title", str, where_a) if isinstance(article, dict) and "title" in article else ""
        for pi, paragraph in enumerate(_want(article, "paragraphs", list, where_a)):
            where_p = (*where_a, "paragraphs", pi)
            context = _want(paragraph, "context", str, where_p)
            if not context.strip():
                raise _Invalid(where_p, "context", "empty paragraph")
            doc_id = _want(paragraph, "id", str, where_p) if "id" in paragraph else f"{ai}-{pi}"
            if doc_id in doc_seen:
                raise _Invalid(where_p, "id", f"duplicate paragraph id {doc_id!r}")
            doc_seen.add(doc_id)
            docs.append(Document(doc_id, title, context))
            for qi, qa in enumerate(_want(paragraph, "qas", list, where_p)):
                where_q = (*where_p, "qas", qi)
                qid = _want(qa, "id", str, where_q)
                question = _want(qa, "question", str, where_q)
                if qid in query_seen:
                    raise _Invalid(where_q, "id", f"duplicate question id {qid!r}")
                query_seen.add(qid)
                if not question.strip():
                    if empty_questions == "error":
                        raise _Invalid(where_q, "question", "empty question")
                    skipped.setdefault("empty_question", []).append(qid)  # nothing to ask; the rest stands
                    continue
                answers = qa.get("answers", [])
                texts = [a["text"] for a in answers if isinstance(a, dict) and isinstance(a.get("text"), str)] \
                    if isinstance(answers, list) else []
                queries.append(Query(qid, question, {doc_id: 1}, extra={"answers": texts, "article": f"a{ai}",
                                                                         "paragraph": doc_id}))
    return SquadData(docs, queries, skipped)


def read_squad(path: Path | str, *, empty_questions: str = "skip") -> SquadData:
    """Paragraphs as documents, questions as queries whose relevant document is their own paragraph;
    questions with an empty text are skipped and listed (`empty_questions = "error"`: refused)."""
    path = Path(path)
    text, root = read_json(path, "SQuAD JSON file")
    try:
        return _parse_squad(root, empty_questions)
    except _Invalid as bad:
        raise DataError(path, _line_of(text, bad.where, bad.field_name),
                        _json_path(bad.where, bad.field_name) or None, bad.message) from None


def skipped_note(skipped: dict[str, list[str]]) -> list[str]:
    """One sentence per reason, for the data set's description and the run's output."""
    return [f"skipped {len(ids)} item(s), {reason.replace('_', ' ')}: {', '.join(ids)}"
            for reason, ids in skipped.items() if ids]


@DATASETS.register("squad")
@stage
class SquadDataset(PublishedFileDataset):
    """A SQuAD-style JSON file (e.g. CMRC 2018) turned into a retrieval set (corpus = paragraphs)."""

    PROVENANCE = Provenance("CMRC 2018: CC BY-SA 4.0; another SQuAD-style file: its own", ("datasets/cmrc2018",),
                            ("datasets/cmrc2018/SOURCE.md",), {"path": "datasets/cmrc2018/cmrc2018_dev.json"})

    path: str | Path
    """the JSON file (a relative path is read from the working directory, else the project root)"""
    limit_queries: int | None = Field(None, gt=0)
    """the first N questions kept, in file order (all when unset)"""
    empty_questions: Literal["skip", "error"] = "skip"
    """a question with an empty text: skipped and counted, or refused with the file's line"""
    sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    """expected sha256 of the file (default: the published hash of a file named as upstream names it)"""
    verify: bool = True
    """check the sha256 before reading (false: measure a modified copy without a check)"""
    cluster: Literal["article", "paragraph", "question"] = "article"
    """the unit intervals and tests resample: the questions of one article (or paragraph) are not
    independent draws; "question" treats every question as its own"""

    def __post_init__(self) -> None:
        self.path = project_path(self.path)
        self._loaded: SquadData | None = None
        self._checked: dict[str, Any] = {}

    def _load(self) -> SquadData:
        if self._loaded is None:
            self._checked = self.check_file()
            self._loaded = read_squad(self.path, empty_questions=self.empty_questions)
        return self._loaded

    def documents(self) -> list[Document]:
        return self._load().documents

    def queries(self) -> list[Query]:
        queries = self._load().queries
        queries = queries[: self.limit_queries] if self.limit_queries else list(queries)
        if self.cluster == "question":
            return queries
        return [dataclasses.replace(q, cluster=str(q.extra[self.cluster])) for q in queries]

    def describe(self) -> dict[str, Any]:
        """What was read: the file, its hash and check, and what was skipped."""
        data = self._load()
        return {"dataset": "squad", "path": str(self.path), **self._checked,
                "questions": len(data.queries) + sum(map(len, data.skipped.values())),
                "skipped": data.skipped, "notes": skipped_note(data.skipped)}

    def render(self, dest: Path | str | None = None, *, title_heading: bool = True,
               group_size: int | None = None) -> Layout:
        """One file per paragraph, or `group_size` paragraphs per long file (the long-document set)."""
        description = self.describe()
        if group_size:
            return render_grouped(self.documents(), description, group_size, dest)
        return render_documents(self.documents(), description, dest, title_heading=title_heading)
