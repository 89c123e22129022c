"""Chunkers: properties every registered chunker must keep, OpenClaw and QMD worked examples,
malformed input, read_markdown, and chunk statistics."""
from __future__ import annotations

import math
import random
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import ConfigError, DataError
from harness.evaluation.chunk_stats import chunk_stats, input_limit_stats, text_coverage
from harness.inputs.layout import LayoutWriter
from harness.stages.chunkers import (
    CHARS_PER_TOKEN,
    CHUNKERS,
    SIZINGS,
    FileChunker,
    MarkdownDecodingWarning,
    OpenClawChunker,
    QmdChunker,
    cjk_weighted_length,
    estimate_tokens,
    read_markdown,
    split_lines,
)

# --- every registered chunker: properties ------------------------------------------------------

# Small budgets so that generated documents are cut many times.
PROPERTY_CONFIGS: list[tuple[str, dict]] = [
    ("openclaw", {"tokens": 8, "overlap": 2}),
    ("openclaw", {"tokens": 9, "overlap": 4, "sizing": "cjk_weighted", "overlap_cap": True}),
    ("openclaw", {"tokens": 8, "overlap": 2, "sizing": "utf16", "final_empty_line": True, "long_lines": "2026.02"}),
    ("openclaw", {"tokens": 9, "overlap": 4, "sizing": "cjk_weighted_2026.08", "final_empty_line": True,
                  "long_lines": "2026.08", "curated_entries": True}),
    ("openclaw", {"tokens": 9, "overlap": 4, "sizing": "cjk_weighted_2026.08", "final_empty_line": True,
                  "long_lines": "2026.09", "overlap_cap": True}),
    ("record", {"tokens": 8, "overlap": 2}),
    ("record", {"tokens": 10, "overlap": 0, "sizing": "raw_length", "overlap_cap": False}),
    ("qmd", {"tokens": 20, "window": 6}),
    ("qmd", {"tokens": 12, "window": 4, "token_count": estimate_tokens}),
    ("file", {}),
    ("fixed", {"tokens": 6, "overlap": 2}),
    ("fixed", {"tokens": 5, "overlap": 0, "sizing": "raw_length"}),
    ("recursive", {"tokens": 10, "overlap": 3}),
    ("recursive", {"tokens": 7, "overlap": 0, "sizing": "raw_length"}),
]
CONFIG_IDS = [f"{name}-{i}" for i, (name, _) in enumerate(PROPERTY_CONFIGS)]

ALPHABET = "ab xyz Q1 中文汉字记录。！？.!?#-*`_\t\r𠀀📌"
_words = st.text(alphabet=ALPHABET, max_size=50)
_line = st.one_of(
    _words,
    st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 7), _words),
    st.builds(lambda w: "- " + w, _words),
    st.sampled_from(["", "", "   ", "```", "```python", "---", "1. item", "* star"]),
    st.text(alphabet=ALPHABET, min_size=80, max_size=300),  # longer than the small budgets
)
documents = st.builds(lambda lines, nl: "\n".join(lines) + ("\n" if nl else ""),
                      st.lists(_line, max_size=40), st.booleans())


def test_every_registered_chunker_has_property_configs():
    assert {name for name, _ in PROPERTY_CONFIGS} == set(CHUNKERS.names())


def _carried_prefix(prev_segments: list[str], segments: list[str]) -> int:
    """Most leading segments of a chunk that repeat the previous chunk's trailing ones (its carry)."""
    for k in range(min(len(prev_segments), len(segments)), 0, -1):
        if prev_segments[-k:] == segments[:k]:
            return k
    return 0


def assert_budget(name: str, chunker, chunks) -> None:
    """Each chunker's budget; the documented exceptions are spelled out per chunker."""
    if name in ("openclaw", "record"):
        # A chunk may pass the budget only by the overlap it carries from the previous chunk
        # (OpenClaw appends the incoming line after the carry unconditionally); with overlap_cap (2026.9.3's
        # window) the carry leaves room for the incoming line, so no chunk passes the budget.
        size, limit = chunker.size, chunker.max_chars
        # documented exceptions: 2026.2.22 slices by UTF-16 units (a cut moved past a surrogate pair: +1),
        # 2026.8.1 cuts an over-estimate line into `tokens`-unit pieces whatever they cost
        piece_limit = {"2026.02": limit + 1, "2026.08": math.inf}.get(chunker.long_lines, limit)
        prev: list[str] = []
        for c in chunks:
            segments = c.text.split("\n")
            assert all(size(s) <= piece_limit for s in segments)
            if chunker.overlap_cap and piece_limit == limit:
                assert size(c.text) <= limit
            rest = segments[_carried_prefix(prev, segments):]
            while rest and not rest[0].strip():  # the carry of a dropped whitespace-only chunk: blank lines
                rest = rest[1:]
            assert size("\n".join(rest)) <= max(limit, piece_limit)
            prev = segments
    elif name == "qmd":
        for c in chunks:
            if chunker.token_count is None:
                assert len(c.text) <= chunker.max_chars
            else:
                assert chunker.token_count(c.text) <= chunker.tokens or len(c.text) <= 1
    elif name in ("fixed", "recursive"):
        for c in chunks:
            assert SIZINGS[chunker.sizing](c.text) <= chunker.tokens * CHARS_PER_TOKEN
    elif name == "file":
        assert len(chunks) <= 1  # one file, one chunk; no budget (the documented over-long case)
    else:  # pragma: no cover - a new chunker must say what its budget is
        raise AssertionError(f"no budget rule for chunker {name!r}")


def assert_well_formed(name: str, text: str, chunks, path: str = "m.md", chunker=None) -> None:
    lines = chunker.lines(text) if hasattr(chunker, "lines") else split_lines(text)
    covered = set()
    for c in chunks:
        assert c.path == path
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        covered.update(range(c.start_line, c.end_line + 1))
        # the range is the lines the text touches: first segment on start_line, last on end_line
        # (line packers join whole lines, blank ones included; slicers' edge newlines touch nothing)
        whole_lines = name in ("openclaw", "record", "file")
        segments = c.text.split("\n") if whole_lines else c.text.strip("\n").split("\n")
        if c.text.strip("\n"):
            assert segments[0] in lines[c.start_line - 1]
            assert segments[-1] in lines[c.end_line - 1]
            assert all(any(s in lines[n - 1] for n in range(c.start_line, c.end_line + 1)) for s in segments)
        assert c.text.strip()  # whitespace-only chunks are dropped
    missing = [n for n, line in enumerate(lines, start=1) if line.strip() and n not in covered]
    assert not missing, f"non-blank lines in no chunk: {missing}"
    ranges = [(c.start_line, c.end_line) for c in chunks]
    assert ranges == sorted(ranges)
    assert len({c.id for c in chunks}) == len(chunks)
    assert all(len(c.hash) == 64 for c in chunks)


@pytest.mark.parametrize(("name", "params"), PROPERTY_CONFIGS, ids=CONFIG_IDS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents)
def test_chunker_properties(name, params, text):
    chunker = CHUNKERS.create(name, **params)
    chunks = chunker.chunk("m.md", text)
    assert_well_formed(name, text, chunks, chunker=chunker)
    assert_budget(name, chunker, chunks)
    # deterministic: the same instance again, and a fresh one
    assert chunker.chunk("m.md", text) == chunks
    assert CHUNKERS.create(name, **params).chunk("m.md", text) == chunks


@pytest.mark.parametrize(("name", "params"), [c for c in PROPERTY_CONFIGS if c[0] in ("qmd", "fixed", "recursive")])
@settings(max_examples=60, deadline=None)
@given(text=documents)
def test_slicing_chunkers_tile_the_file(name, params, text):
    """qmd, fixed and recursive cut the text into ordered, overlapping-or-touching slices that cover
    all of it; the chunks are exactly the slices that are not whitespace-only."""
    chunker = CHUNKERS.create(name, **params)
    body = "\n".join(split_lines(text))
    offsets = chunker.offsets(body)
    if body:
        assert offsets[0][0] == 0 and max(e for _, e in offsets) == len(body)
    if getattr(chunker, "token_count", None) is None:
        for (s1, e1), (s2, e2) in zip(offsets, offsets[1:]):
            assert s1 < s2 <= e1 < e2  # no gap, always advancing
    else:  # QMD's token path: re-split pieces sorted by position, no gap, no repeat
        assert offsets == sorted(set(offsets))
        reach = 0
        for s1, e1 in offsets:
            assert s1 <= reach
            reach = max(reach, e1)
    texts = [c.text for c in chunker.chunk("m.md", text)]
    assert sorted(texts) == sorted(body[s:e] for s, e in offsets if body[s:e].strip())


# --- malformed input ---------------------------------------------------------------------------

DEFAULT_CONFIGS = [(name, {}) for name in CHUNKERS.names()]


@pytest.mark.parametrize(("name", "params"), DEFAULT_CONFIGS, ids=[n for n, _ in DEFAULT_CONFIGS])
def test_empty_file_gives_no_chunks(name, params):
    assert CHUNKERS.create(name, **params).chunk("m.md", "") == []


@pytest.mark.parametrize(("name", "params"), DEFAULT_CONFIGS, ids=[n for n, _ in DEFAULT_CONFIGS])
def test_only_blank_lines(name, params):
    assert CHUNKERS.create(name, **params).chunk("m.md", "\n\n   \n\t\n\n") == []


_HANZI = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面"
          "而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把")


def _chinese(n_chars: int, seed: int) -> str:
    """Pseudo-random Chinese characters only (every one costs 4 under cjk_weighted)."""
    rng = random.Random(seed)
    return "".join(rng.choice(_HANZI) for _ in range(n_chars))


def _mixed(n_chars: int, seed: int) -> str:
    """Pseudo-random mostly-Chinese text with sentence ends, Latin letters and spaces, no newline."""
    rng = random.Random(seed)
    pool = _HANZI + "。！？abc .,"
    return "".join(rng.choice(pool) for _ in range(n_chars))


@pytest.mark.parametrize(("name", "params"), DEFAULT_CONFIGS, ids=[n for n, _ in DEFAULT_CONFIGS])
def test_single_100kb_line(name, params):
    line = _mixed(100_000, seed=6)
    chunker = CHUNKERS.create(name, **params)
    chunks = chunker.chunk("m.md", line + "\n")
    assert chunks and all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert len({c.id for c in chunks}) == len(chunks)
    assert [c.piece for c in chunks] == list(range(len(chunks)))
    assert_budget(name, chunker, chunks)
    # every character of the line is in some chunk, in order (openclaw joins carried pieces with "\n")
    reach = 0
    for c in chunks:
        for segment in c.text.split("\n"):
            at = line.find(segment, max(0, reach - len(segment)))
            assert 0 <= at <= reach
            reach = max(reach, at + len(segment))
    assert reach == len(line)


def test_read_markdown_replaces_invalid_utf8_and_says_where(tmp_path):
    path = tmp_path / "bad.md"
    path.write_bytes("# 标题\n".encode() + b"ok \xff\xfe end\n" + "第三行 文\n".encode() + b"cut \xe4\xb8")
    with pytest.warns(MarkdownDecodingWarning, match=r"bad\.md:2: byte column 4"):
        text = read_markdown(path)
    assert split_lines(text) == ["# 标题", "ok \ufffd\ufffd end", "第三行 文", "cut \ufffd"]
    for name in CHUNKERS.names():  # nothing is lost when the replaced text is chunked
        assert_well_formed(name, text, CHUNKERS.create(name).chunk("bad.md", text), path="bad.md")


def test_read_markdown_strict_raises_data_error_naming_file_and_line(tmp_path):
    path = tmp_path / "bad.md"
    path.write_bytes(b"line one\nline two\n\xc3\x28 broken\n")
    with pytest.raises(DataError, match=r"bad\.md:3:.*invalid UTF-8 at byte column 1"):
        read_markdown(path, errors="strict")


def test_read_markdown_keeps_crlf_and_drops_bom(tmp_path):
    path = tmp_path / "win.md"
    path.write_bytes(b"\xef\xbb\xbf# Title\r\nbody\r\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = read_markdown(path)
    assert text == "# Title\r\nbody\r\n"  # "\r" kept: lines are numbered on "\n" as OpenClaw and QMD do
    with pytest.raises(ValueError, match="errors must be"):
        read_markdown(path, errors="ignore")


# --- OpenClaw ----------------------------------------------------------------------------------


def _lines(n: int, width: int = 9) -> str:
    return "\n".join(chr(ord("a") + i % 26) * width for i in range(n))


def test_openclaw_overlap_carries_trailing_whole_lines():
    # budget 10 tokens = 40 chars; each line costs 9 + 1; overlap 3 tokens = 12 chars -> two lines
    chunks = OpenClawChunker(tokens=10, overlap=3).chunk("m.md", _lines(10))
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4), (3, 6), (5, 8), (7, 10)]
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.text.split("\n")[:2] == prev.text.split("\n")[-2:]


def test_openclaw_overlap_cap_carries_within_the_window():
    text = _lines(8)
    # overlap 8 tokens = 32 chars: the carry takes 4 lines (the whole flushed chunk) and the next
    # chunk passes the budget by it, as OpenClaw up to 2026.9.2 does
    uncapped = OpenClawChunker(tokens=10, overlap=8).chunk("m.md", text)
    assert [(c.start_line, c.end_line) for c in uncapped][:3] == [(1, 4), (1, 5), (2, 6)]
    assert len(uncapped[1].text) > 40
    # 2026.9.3+: the window is min(32, 40 - 10 for the incoming line) = 30, three lines
    capped = OpenClawChunker(tokens=10, overlap=8, overlap_cap=True).chunk("m.md", text)
    assert [(c.start_line, c.end_line) for c in capped] == [(1, 4), (2, 5), (3, 6), (4, 7), (5, 8)]
    assert max(len(c.text) for c in capped) < 40


@pytest.mark.parametrize(("sizing", "piece_chars"), [("raw_length", 1600), ("cjk_weighted", 400)])
def test_openclaw_over_long_line_keeps_its_line_number(sizing, piece_chars):
    long_line = _chinese(3 * piece_chars + 200, seed=1)  # 400 CJK characters cost 1600 weighted
    text = f"short\n{long_line}\nend\n"
    chunks = OpenClawChunker(tokens=400, overlap=0, sizing=sizing).chunk("m.md", text)
    assert [(c.start_line, c.end_line, c.piece) for c in chunks] == [
        (1, 1, 0), (2, 2, 0), (2, 2, 1), (2, 2, 2), (2, 3, 0)]
    pieces = [c.text for c in chunks[1:4]] + [chunks[4].text.split("\n")[0]]
    assert "".join(pieces) == long_line
    assert all(len(p) == piece_chars for p in pieces[:3])
    assert chunks[2].id.endswith("000002-000002~1")


def test_openclaw_cjk_sizing_raw_length_vs_cjk_weighted():
    chinese = "\n".join(_chinese(99, seed=i) for i in range(30))
    raw = OpenClawChunker(sizing="raw_length").chunk("m.md", chinese)
    weighted = OpenClawChunker(sizing="cjk_weighted").chunk("m.md", chinese)
    # raw length: a line costs 100, so 16 lines (1600) fill a chunk: ~1600 Chinese characters
    assert (raw[0].start_line, raw[0].end_line) == (1, 16)
    assert len(raw[0].text) == 16 * 100 - 1
    # cjk weighted: a Chinese character is a token, a line costs 99 x 4 + 1 = 397 -> 4 lines
    assert (weighted[0].start_line, weighted[0].end_line) == (1, 4)
    assert max(estimate_tokens(c.text) for c in weighted) <= 400 + 80  # budget + carried overlap
    latin = "\n".join("word " * 19 for _ in range(30))
    assert OpenClawChunker(sizing="raw_length").chunk("m.md", latin) == \
        OpenClawChunker(sizing="cjk_weighted").chunk("m.md", latin)
    assert cjk_weighted_length("中a") == 5 and cjk_weighted_length("𠀀") == 4


# --- record (OpenClaw per-entry) ---------------------------------------------------------------


def test_record_splits_at_list_entries_and_headings():
    text = "# 标题\n\n- 记录一\n  续行\n- 记录二\n\n摘要：一段话\n## 小节\n正文\n* 星号不算条目\n"
    chunks = CHUNKERS.create("record").chunk("m.md", text)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (3, 4), (5, 7), (8, 10)]
    assert chunks[2].text == "- 记录二\n\n摘要：一段话"  # a paragraph belongs to the entry above it


def test_record_packs_a_long_entry_without_carrying_across_entries():
    # one entry of 12 lines of 30 CJK characters (121 weighted chars each with the newline); budget
    # 100 tokens = 400, overlap 20 tokens = 80 -> three lines a chunk, one line carried
    entry = "- " + "\n".join(["长" * 30] * 12)
    chunks = CHUNKERS.create("record", tokens=100, overlap=20).chunk("m.md", entry + "\n- 下一条\n")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (3, 5), (5, 7), (7, 9), (9, 11),
                                                            (11, 12), (13, 13)]  # no carry into line 13


# --- QMD ---------------------------------------------------------------------------------------


def test_qmd_defaults_follow_spec():
    q = QmdChunker()
    assert (q.tokens, q.overlap, q.window, q.chars_per_token) == (900, 135, 200, 4)
    assert (q.max_chars, q.overlap_chars, q.window_chars) == (3600, 540, 800)
    assert QmdChunker(token_count=len).chars_per_token == 3


def test_qmd_heading_150_tokens_back_beats_newline_at_target():
    # "\n## ..." at 3000 (150 tokens = 600 chars before the 3600 target): 90 x (1 - 0.7 x 0.75^2) = 54.6
    # a plain newline exactly at the target: 1 x 1 = 1
    line2 = "## 小节标题 " + "b" * (599 - len("## 小节标题 "))
    text = "a" * 3000 + "\n" + line2 + "\n" + "c" * 2000
    assert text.index("\n", 3001) == 3600
    chunks = QmdChunker().chunk("m.md", text)
    assert chunks[0].text == "a" * 3000 and (chunks[0].start_line, chunks[0].end_line) == (1, 1)
    # the next chunk starts 540 characters (15%) before the cut, inside line 1
    assert chunks[1].text.startswith("a" * 540 + "\n## 小节标题")
    assert (chunks[1].start_line, chunks[1].end_line) == (1, 3)


def test_qmd_heading_beats_blank_line_at_target_but_not_an_h6_at_the_window_edge():
    def first_cut(prefix_len: int, heading: str) -> int:
        # a heading `prefix_len` chars in, then a blank line ending exactly at the target 3600
        head = heading + " t"
        filler = "b" * (3600 - prefix_len - 1 - len(head) - 1)
        text = "a" * prefix_len + "\n" + head + "\n" + filler + "\n\n" + "c" * 2000
        assert text.index("\n\n", prefix_len + 1) == 3600
        return len(QmdChunker().chunk("m.md", text)[0].text)

    assert first_cut(3000, "##") == 3000        # 54.6 beats the blank line's 20
    assert first_cut(2800, "######") == 3600    # H6 at the window edge: 50 x 0.3 = 15 < 20


def test_qmd_does_not_cut_inside_a_code_fence_when_a_break_exists_outside():
    code = "\n".join(["# a comment line that looks like an H1, inside the fence"] + ["x = 1"] * 200)
    text = "a" * 3000 + "\n\n```python\n" + code + "\n```\n\nafter the fence " + "d" * 3000
    fence_start, fence_end = text.index("\n```python"), text.index("\n```\n\n") + 4
    assert fence_start < 3600 < fence_end  # the target falls inside the fence
    chunks = QmdChunker().chunk("m.md", text)
    # the H1-like line near the target would score ~100; it is inside the fence, so QMD cuts at the
    # fence line's own break point (80, not strictly inside), just before the fence
    assert chunks[0].text == "a" * 3000 + "\n"
    cuts = [end for _, end in QmdChunker().offsets(text)][:-1]
    assert cuts and not any(fence_start < cut < fence_end for cut in cuts)


def test_qmd_cuts_at_the_target_when_every_break_is_inside_a_fence():
    text = "start\n```\n" + "\n".join(["y" * 99] * 80)  # unclosed fence: no usable break point
    chunks = QmdChunker().chunk("m.md", text)
    assert len(chunks[0].text) == 3600


def test_qmd_token_path_with_the_embedders_tokenizer():
    from harness.stages.embedders import E5SmallQ4

    count = E5SmallQ4().token_count
    text = "\n\n".join(_mixed(700, seed=i) for i in range(12))  # ~8400 mostly Chinese characters
    by_chars = QmdChunker().chunk("m.md", text)
    assert max(count(c.text) for c in by_chars) > 900  # 3600 Chinese characters are far over 900 tokens
    by_tokens = QmdChunker(token_count=count).chunk("m.md", text)
    assert all(count(c.text) <= 900 for c in by_tokens)
    assert_well_formed("qmd", text, [c for c in by_tokens])
    assert len(by_tokens) > len(by_chars)


# --- file --------------------------------------------------------------------------------------


def test_file_truncates_only_when_asked():
    text = "# 标题\n" + "长" * 600 + "\n尾行\n"
    assert FileChunker().chunk("m.md", text)[0].text == text.rstrip("\n")
    kept = FileChunker(input_limit=512).chunk("m.md", text)[0]
    assert kept.text == text[: len(kept.text)] and (kept.start_line, kept.end_line) == (1, 2)
    assert estimate_tokens(kept.text) <= 512 < estimate_tokens(text[: len(kept.text) + 1])
    assert kept.text.count("长") == (512 * 4 - len("# ") - 2 * 4 - 1) // 4  # "# 标题\n" then 509 x 长
    whole = FileChunker(input_limit=10_000).chunk("m.md", text)[0]
    assert (whole.start_line, whole.end_line, whole.text) == (1, 3, text.rstrip("\n"))


def test_file_truncation_with_a_token_counter_keeps_the_longest_prefix():
    from harness.stages.embedders import E5SmallQ4

    count = E5SmallQ4().token_count
    text = "\n".join(_mixed(300, seed=i) for i in range(6))
    chunk = FileChunker(input_limit=512, token_count=count).chunk("m.md", text)[0]
    assert text.startswith(chunk.text) and count(chunk.text) <= 512 < count(text[: len(chunk.text) + 1])
    assert chunk.end_line == chunk.text.count("\n") + 1  # the line of the last kept character


def test_bad_parameters_are_named():
    with pytest.raises(ConfigError, match=r"\[chunker\] overlap: must be smaller than tokens \(10\) \(got 10\)"):
        CHUNKERS.create("fixed", tokens=10, overlap=10)
    with pytest.raises(ConfigError, match=r"\[chunker\] overlap: must be smaller than tokens \(20\) \(got 25\)"):
        CHUNKERS.create("qmd", tokens=20, overlap=25)
    with pytest.raises(ConfigError, match=r"\[chunker\] sizing: Input should be 'raw_length', 'cjk_weighted', 'utf16' or"):
        CHUNKERS.create("recursive", sizing="words")
    with pytest.raises(ConfigError, match=r"\[chunker\] input_limit: Input should be greater than 0 \(got 0\)"):
        CHUNKERS.create("file", input_limit=0)
    with pytest.raises(ConfigError, match=r"\[chunker\] tokens: Input should be greater than 0"):
        CHUNKERS.create("openclaw", tokens=0)
    with pytest.raises(ConfigError, match=r"\[chunker\] decay: Input should be less than or equal to 1"):
        CHUNKERS.create("qmd", decay=1.5)
    with pytest.raises(ConfigError, match=r"\[chunker\] size: unknown key for chunker .qmd."):
        CHUNKERS.create("qmd", size=3)
    with pytest.raises(ConfigError, match=r"\[chunker\] token_count: Input should be callable \(got 'embedder'\)"):
        CHUNKERS.create("qmd", token_count="embedder")
    # the embedder's counter is a runtime argument: a TOML table cannot set it
    with pytest.raises(ConfigError, match=r"\[chunker\]: token_count cannot be set in a configuration file"):
        CHUNKERS.create("qmd", {"token_count": "embedder"})


def test_every_chunker_documents_its_parameters_and_has_a_schema():
    for name in CHUNKERS.names():
        assert CHUNKERS.doc(name)
        assert all(p.doc for p in CHUNKERS.parameters(name)), name  # inherited fields too
        schema = CHUNKERS.json_schema(name)
        assert "token_count" not in schema["properties"]  # a runtime argument, not a TOML key
        assert all(p.name in schema["properties"] for p in CHUNKERS.parameters(name))


# --- recursive / fixed -------------------------------------------------------------------------


def test_recursive_prefers_headings_then_paragraphs_then_sentences():
    sec1 = "# 一\n\n" + "甲" * 30 + "。" + "乙" * 30 + "。\n\n" + "丙" * 20
    sec2 = "# 二\n" + "丁" * 20
    chunks = CHUNKERS.create("recursive", tokens=40, overlap=0).chunk("m.md", sec1 + "\n" + sec2)
    texts = [c.text.strip("\n") for c in chunks]
    # section 1 is too big: its paragraphs are packed, the big paragraph is cut after "。"
    assert texts == ["# 一", "甲" * 30 + "。", "乙" * 30 + "。", "丙" * 20, "# 二\n" + "丁" * 20]


def test_recursive_does_not_cut_latin_numbers_or_dotted_names():
    text = "Version 3.5 of Next.js shipped. It is fast! Really?"
    chunks = CHUNKERS.create("recursive", tokens=10, overlap=0, sizing="raw_length").chunk("m.md", text)
    assert [c.text for c in chunks] == ["Version 3.5 of Next.js shipped.", " It is fast! Really?"]
    # a sentence longer than the budget falls through to characters
    chunks = CHUNKERS.create("recursive", tokens=5, overlap=0, sizing="raw_length").chunk("m.md", text)
    assert [c.text for c in chunks] == ["Version 3.5 of Next.", "js shipped.", " It is fast! Really?"]


def test_fixed_ignores_lines():
    text = "\n".join(["短行"] * 50)
    chunks = CHUNKERS.create("fixed", tokens=10, overlap=2).chunk("m.md", text)
    assert all(cjk_weighted_length(c.text) <= 40 for c in chunks)
    assert len({c.text.strip("\n")[:1] for c in chunks}) == 2  # cuts fall inside lines ("短" or "行" first)
    body = "\n".join(split_lines(text))
    for (s1, e1), (s2, e2) in zip(CHUNKERS.create("fixed", tokens=10, overlap=2).offsets(body)[:-1],
                                  CHUNKERS.create("fixed", tokens=10, overlap=2).offsets(body)[1:-1]):
        assert cjk_weighted_length(body[s2:e1]) <= 8 < cjk_weighted_length(body[s2 - 1:e1])  # 2-token overlap


# --- chunk statistics --------------------------------------------------------------------------


@pytest.fixture
def two_record_layout(tmp_path):
    writer = LayoutWriter(tmp_path)
    writer.add_lines("memory/kb.md", ["## 甲", "", "- 事实一" + "甲" * 40, "- 事实二"], ["A"])
    writer.add_lines("memory/kb.md", [""])
    writer.add_lines("memory/kb.md", ["## 乙", "", "- 事实三" + "乙" * 40], ["B"])
    writer.add_lines("memory/B.md", ["# 乙 单独", "正文"], ["B"])
    writer.add_lines("memory/log.md", ["- 09:00 [HEARTBEAT] ok"])
    return writer.finish()


def test_chunk_stats_counts_mixed_chunks_and_sizes(two_record_layout):
    layout = two_record_layout
    texts = {p: layout.read(p) for p in layout.files}
    chunker = CHUNKERS.create("openclaw", tokens=20, overlap=0, sizing="cjk_weighted")
    chunks = [c for p in layout.files for c in chunker.chunk(p, texts[p])]
    stats = chunk_stats(chunks, layout, token_count=len, input_limit=30, texts=texts)
    expected_mixed = sum(len(layout.docs_overlapping(c.path, c.start_line, c.end_line)) >= 2 for c in chunks)
    assert expected_mixed >= 1
    assert stats["chunks"] == len(chunks) and stats["files"] == 3
    assert stats["mixed"]["chunks"] == expected_mixed
    assert stats["mixed"]["share"] == pytest.approx(expected_mixed / len(chunks))
    assert stats["no_document"]["chunks"] == 1  # the heartbeat line belongs to no record
    assert stats["real_tokens"]["max"] == max(len(c.text) for c in chunks)
    assert stats["est_tokens"]["max"] == max(estimate_tokens(c.text) for c in chunks)
    assert stats["input_limit"]["counted_with"] == "real tokens"
    assert stats["coverage"]["lost_chars"] == 0 and stats["coverage"]["uncovered_nonblank_lines"] == 0
    # one file, one chunk: both files' records mixed in kb.md
    whole = [c for p in layout.files for c in CHUNKERS.create("file").chunk(p, texts[p])]
    assert chunk_stats(whole, layout, texts=texts)["mixed"]["chunks"] == 1


def test_chunk_stats_reports_text_lost_to_truncation(two_record_layout):
    layout = two_record_layout
    texts = {p: layout.read(p) for p in layout.files}
    chunks = [c for p in layout.files for c in FileChunker(input_limit=20).chunk(p, texts[p])]
    coverage = chunk_stats(chunks, layout, input_limit=20, texts=texts)["coverage"]
    assert coverage["truncated_files"] == 1 and coverage["examples"] == ["memory/kb.md"]
    assert 0 < coverage["share_text_lost"] < 1
    assert coverage["uncovered_nonblank_lines"] >= 1


def test_input_limit_stats():
    stats = input_limit_stats([100, 600, 512, 1024], 512)
    assert stats["chunks_over"] == 2 and stats["tokens_beyond"] == 88 + 512
    assert stats["share_tokens_beyond"] == pytest.approx(600 / 2236)


def test_text_coverage_sees_a_missing_line():
    text = "one\ntwo\nthree"
    chunks = CHUNKERS.create("openclaw").chunk("m.md", "one\ntwo")
    assert text_coverage(chunks, {"m.md": text})["uncovered_nonblank_lines"] == 1
