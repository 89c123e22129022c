"""Chunkers: a file's text -> chunks with 1-based line ranges and a sha256 of the chunk text.

Registered chunkers (chosen by name in the TOML `[chunker]` table):

  openclaw   OpenClaw's chunkMarkdown: line-packed, line-granular overlap (SPEC.md section 2), with
             each release's size estimate, long-line cut and overlap carry as options
  record     OpenClaw's newer per-entry mode: the same packing, restarted at every list entry / heading
  qmd        QMD's break-point chunker: 900-token target, 15% overlap, scored breaks (SPEC.md section 3)
  file       one file, one chunk (optionally truncated to an embedder's input limit)
  fixed      N tokens with M overlap, blind to lines and structure
  recursive  headings -> paragraphs -> lines -> sentence ends (。！？.!?) -> characters

Conventions shared by every chunker here (SPEC.md is silent on them):
  * Lines are split on "\\n" only, as OpenClaw and QMD do (a "\\r" stays in the text), and a final
    newline does not start an extra, empty line (except `openclaw`/`record` with final_empty_line, as
    OpenClaw counts it).  Files are read with read_markdown (below).
  * The slicing chunkers (qmd, fixed, recursive, file) return slices of "\\n".join(lines); the line
    packers (openclaw, record) join whole lines, or the pieces of an over-long line, with "\\n".
  * A chunk that cuts inside lines records the lines its text touches; a newline character that only
    ends the previous line (QMD cuts *before* "\\n# heading") does not count as touching that line.
  * Whitespace-only chunks are dropped, as OpenClaw's indexer does before embedding.
  * When several chunks of a file share one line range (pieces of an over-long line), `piece`
    numbers them 0, 1, 2 ... in order, so every chunk id is unique.
  * "Estimated tokens" are OpenClaw's cjk-weighted estimate: a CJK character is one token, any other
    character a quarter of one (CHARS_PER_TOKEN = 4).
  * `token_count` parameters take a callable str -> int, e.g. E5SmallQ4.token_count (which counts the
    model's special tokens and "passage: " prefix too: 5 tokens for an empty text).  A TOML file
    cannot hold a callable: it says `token_count = "embedder"` and the pipeline passes the run's
    embedder's counter (pipeline.build_chunker; in code a runtime argument of the registry:
    `CHUNKERS.create("qmd", token_count=embedder.token_count)`).

Modules: base (Chunk, the Chunker protocol, read_markdown, sizing, line helpers), openclaw (openclaw,
record), qmd, file, generic (fixed, recursive).
"""
from harness.stages.chunkers.base import (
    CHARS_PER_TOKEN,
    CHUNKERS,
    SIZINGS,
    Chunk,
    Chunker,
    LineIndex,
    MarkdownDecodingWarning,
    Sizing,
    TokenCount,
    chunks_from_offsets,
    cjk_weighted_2026_08_length,
    cjk_weighted_length,
    cost_prefix,
    cut_to_budget,
    document_of,
    estimate_tokens,
    number_pieces,
    raw_length,
    read_markdown,
    split_lines,
    utf16_length,
)
from harness.stages.chunkers.file import FileChunker
from harness.stages.chunkers.generic import (
    FixedChunker,
    OffsetChunker,
    RecursiveChunker,
    fixed_windows,
    recursive_boundaries,
)
from harness.stages.chunkers.openclaw import (
    CURATED_ENTRY_FILES,
    OpenClawChunker,
    RecordChunker,
    entry_starts,
    tail_within,
    utf16_prefix,
    utf16_slices,
)
from harness.stages.chunkers.qmd import (
    QmdChunker,
    qmd_best_cutoff,
    qmd_break_points,
    qmd_code_fences,
    qmd_cut,
)

__all__ = ["CHARS_PER_TOKEN", "CHUNKERS", "SIZINGS", "Chunk", "Chunker", "LineIndex", "MarkdownDecodingWarning",
           "Sizing", "TokenCount", "chunks_from_offsets", "cjk_weighted_2026_08_length", "cjk_weighted_length",
           "cost_prefix", "cut_to_budget", "document_of", "estimate_tokens", "number_pieces", "raw_length",
           "read_markdown", "split_lines", "utf16_length",
           "FileChunker", "FixedChunker", "OffsetChunker", "RecursiveChunker", "fixed_windows",
           "recursive_boundaries", "CURATED_ENTRY_FILES", "OpenClawChunker", "RecordChunker", "entry_starts",
           "tail_within", "utf16_prefix", "utf16_slices",
           "QmdChunker", "qmd_best_cutoff", "qmd_break_points", "qmd_code_fences", "qmd_cut"]
