"""QMD's lexical index (tobi/qmd 2.8.3, src/store.ts; harness/conformance/NOTES.md section 3): one
FTS5 row per whole document with filepath, title and body columns, ranked by bm25(t, 1.5, 4.0, 1.0)."""
from __future__ import annotations

import re
from typing import ClassVar, Literal, Sequence

import apsw
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from harness.db import connect
from harness.ranking import top_k
from harness.registry import stage
from harness.stages.chunkers import Chunk
from harness.stages.lexical.base import LEXICAL_BACKENDS, Hits
from harness.stages.tokenizers import Tokenizer

_LINE_END = "\n\r\u2028\u2029"  # JavaScript's line terminators: where ^ and $ match under the m flag
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
# titleExtractors['.md']: /^##?\s+(.+)$/m (\s may run over line ends, as in JavaScript)
_HEADING = re.compile(rf"(?:\A|(?<=[{_LINE_END}]))##?[{_JS_SPACE}]+([^{_LINE_END}]+)(?=[{_LINE_END}]|\Z)")
_H2 = re.compile(rf"(?:\A|(?<=[{_LINE_END}]))##[{_JS_SPACE}]+([^{_LINE_END}]+)(?=[{_LINE_END}]|\Z)")
_JS_TRIM = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
           "\u2028\u2029\u202f\u205f\u3000\ufeff"


def qmd_title(content: str, path: str) -> str:
    """QMD's extractTitle for Markdown: the first H1 or H2 line (whichever comes first), trimmed; if it is
    "📝 Notes" or "Notes", the first H2 instead; no heading: the file name without its extension."""
    match = _HEADING.search(content)
    if match:
        title = match.group(1).strip(_JS_TRIM)
        if title in ("📝 Notes", "Notes"):
            second = _H2.search(content)
            if second and second.group(1):
                return second.group(1).strip(_JS_TRIM)
        if title:
            return title
    stem = re.sub(r"\.[^.]+$", "", path).split("/")[-1]
    return stem or path


@LEXICAL_BACKENDS.register("qmd-documents")
@stage
class QmdDocumentIndex:
    """QMD's lexical index: one FTS5 row per whole document, columns filepath (collection/path), title
    (first H1 or H2) and body (the whole file), each through the tokenizer's index_text, ranked by
    bm25(t, filepath_weight, title_weight, body_weight) = QMD's bm25(t, 1.5, 4.0, 1.0).

    unit = "document": the pipeline adds whole files (add_documents) and hits are file paths, which only a
    document-level fusion (`qmd-documents`) can fuse.  unit = "chunk": each chunk is a row (its file's
    path, its own title line), for chunk-level fusions.  Empty files (whitespace only) are skipped, as
    QMD skips them.  Executes MATCH plans only (a LIKE plan, from the trigram tokenizers, is refused)."""

    tokenizer: SkipJsonSchema[Tokenizer]
    """the run's tokenizer (from the pipeline); QMD's is `qmd`"""
    conn: SkipJsonSchema[apsw.Connection | None] = None
    """the run's SQLite connection (from the pipeline); None: a new in-memory database"""
    unit: Literal["document", "chunk"] = "document"
    """"document" (QMD: whole files, hits are paths) or "chunk" (one row per chunk)"""
    collection: str = Field("workspace", min_length=1)
    """QMD's collection name, the first segment of the filepath column (`qmd collection add DIR --name`)"""
    filepath_weight: float = Field(1.5, ge=0, allow_inf_nan=False)
    """bm25 weight of the filepath column"""
    title_weight: float = Field(4.0, ge=0, allow_inf_nan=False)
    """bm25 weight of the title column"""
    body_weight: float = Field(1.0, ge=0, allow_inf_nan=False)
    """bm25 weight of the body column"""

    table: ClassVar[str] = "documents_fts"

    def __post_init__(self) -> None:
        if "trigram" in self.tokenizer.fts5_tokenize:
            raise ValueError(f"tokenizer {self.tokenizer.name!r} plans LIKE searches, which qmd-documents does not "
                             "run; use qmd, unicode61, jieba, cjk-char or cjk-bigram")
        self.ids: list[str] = []
        if self.conn is None:
            self.conn = connect(load_vec=False)
        tokenize = self.tokenizer.fts5_tokenize.replace("'", "''")
        # doc_id is UNINDEXED: no tokens, so bm25() is unchanged; it lets SQL break ties by id
        self.conn.execute(f"CREATE VIRTUAL TABLE {self.table} USING fts5(filepath, title, body, doc_id UNINDEXED, "
                          f"tokenize='{tokenize}')")

    def _insert(self, rows: Sequence[tuple[str, str, str]]) -> None:
        index = self.tokenizer.index_text
        with self.conn:  # one transaction
            for ident, path, text in rows:
                self.ids.append(ident)
                self.conn.execute(f"INSERT INTO {self.table}(rowid, filepath, title, body, doc_id) VALUES (?, ?, ?, ?, ?)",
                                  (len(self.ids), index(f"{self.collection}/{path}"), index(qmd_title(text, path)),
                                   index(text), ident))

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Each chunk as a row (id = chunk id)."""
        self._insert([(c.id, c.path, c.text) for c in chunks if c.text.strip(_JS_TRIM)])

    def add_documents(self, documents: Sequence[tuple[str, str]]) -> None:
        """Whole files (path, text) as rows (id = path); the pipeline calls this when unit = "document"."""
        self._insert([(path, path, text) for path, text in documents if text.strip(_JS_TRIM)])

    def search(self, query: str, k: int) -> Hits:
        """Top-k (id, -bm25), best first, ties by id (QMD leaves ties to SQLite)."""
        plan = self.tokenizer.query_plan(query)
        if plan.like or plan.fallback_like:
            raise ValueError(f"qmd-documents runs MATCH only; tokenizer {self.tokenizer.name!r} planned LIKE terms")
        return self.match(plan.match, k) if plan.match is not None else []

    def match(self, expression: str, k: int) -> Hits:
        """Top-k files of a ready FTS5 MATCH expression (the query plan's, or query expansion's terms)."""
        if k <= 0:
            return []
        score = f"bm25({self.table}, {self.filepath_weight!r}, {self.title_weight!r}, {self.body_weight!r})"
        rows = self.conn.execute(f"SELECT doc_id, {score} FROM {self.table} WHERE {self.table} MATCH ? "
                                 f"ORDER BY {score}, doc_id LIMIT ?", (expression, k)).fetchall()
        return top_k([(ident, -raw) for ident, raw in rows], k)
