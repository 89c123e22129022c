"""An example plugin: one chunker and one fusion, each declared once with typed parameters (and, in
study_kind.py, a kind of study file)."""
from __future__ import annotations

from pydantic import Field

from harness.registry import stage
from harness.stages.chunkers import Chunk
from harness.stages.fusion import Hit, Legs, rank_hits


@stage
class ParagraphChunker:
    """One chunk per paragraph (lines between blank lines), at most `max_lines` lines each."""

    max_lines: int = Field(40, ge=1)
    """a longer paragraph is cut every max_lines lines"""

    def chunk(self, path: str, text: str) -> list[Chunk]:
        chunks, start, buf = [], None, []
        lines = text.split("\n")
        for number, line in enumerate(lines + [""], start=1):
            if line.strip() and len(buf) < self.max_lines:
                start = number if start is None else start
                buf.append(line)
                continue
            if buf:
                chunks.append(Chunk(path, start, start + len(buf) - 1, "\n".join(buf)))
            start, buf = (number, [line]) if line.strip() else (None, [])
        return chunks


@stage
class MaxLegFusion:
    """A chunk scores its better leg: the cosine, or BM25 mapped to s/(1+s)."""

    text_floor: float = Field(0.0, ge=0, le=1)
    """lexical scores below this are ignored"""

    leg_weights = (0.5, 0.5)  # what post-processing reads of the fusion (the Fusion protocol)

    def __call__(self, legs: Legs) -> list[Hit]:
        hits: dict[str, Hit] = {}
        for cid, cosine in legs.vector:
            hits[cid] = Hit(cid, cosine, vector_score=cosine)
        for cid, bm25 in legs.lexical:
            text = bm25 / (1 + bm25)
            if text < self.text_floor:
                continue
            hit = hits.setdefault(cid, Hit(cid, 0.0))
            hit.text_score, hit.keyword_hit = text, True
            hit.score = max(hit.score, text)
        return rank_hits(list(hits.values()))
