"""king78: the records validate, bad files fail loudly, rounds render deterministically with provenance."""
import json
import re
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config import load_experiment
from harness.errors import DataError
from harness.inputs.king78 import (
    CAPTURE_DATES,
    RECORD_FIELDS,
    King78,
    load_queries,
    load_records,
    record_body_length,
    render_king78,
    validate_king78,
)
from tests.conftest import KING78, ROOT

RECORDS = load_records(KING78 / "records.jsonl")
BY_ID = {r["record_id"]: r for r in RECORDS}
TELLO = "rec6wBc33Xcxr"
EVOMAP = "reczie7JbTmRs"


def test_records_validate():
    assert len(RECORDS) == 78
    assert len(BY_ID) == 78
    for r in RECORDS:
        for key, typ in RECORD_FIELDS:
            assert isinstance(r[key], typ), (r["record_id"], key)
        assert r["captured_on"] in CAPTURE_DATES
        assert 300 <= record_body_length(r) <= 900, r["record_id"]


def test_corpus_is_mostly_chinese_with_english_terms():
    text = "".join(r["summary"] + "".join(r["facts"] + r["insights"] + r["thoughts"]) for r in RECORDS)
    han = len(re.findall(r"[\u4e00-\u9fff]", text))
    latin = len(re.findall(r"[A-Za-z]", text))
    assert han > 2 * latin
    for term in ("MCP", "VPS", "OOM", "eSIM", "N26"):
        assert term in text


def _body(record):
    return json.dumps({k: v for k, v in record.items() if k != "search_keywords"}, ensure_ascii=False)


def test_tello_record_never_says_the_query_words_outside_its_keywords():
    body = _body(BY_ID[TELLO])
    assert "美国" not in body and "手机号" not in body
    assert "美国手机号" in BY_ID[TELLO]["search_keywords"]


def test_evomap_has_its_own_record_only_after_round_one_and_is_first_met_in_a_daily_log():
    assert [r["record_id"] for r in RECORDS if "EvoMap" in _body(r)] == [EVOMAP]
    logs = [json.loads(line) for line in (KING78 / "daily_logs.jsonl").read_text(encoding="utf-8").splitlines()]
    first_mention = min((e["date"], e["time"]) for e in logs if "EvoMap" in e["text"])
    assert first_mention[0] < BY_ID[EVOMAP]["captured_on"]
    first16 = King78(KING78).render(daily_logs=False, combined=True, records=16)
    try:
        assert EVOMAP not in {s.doc_id for s in first16.spans}
    finally:
        first16.cleanup()


def test_validate_counts():
    counts = validate_king78(KING78)
    assert counts["records"] == 78
    assert counts["heartbeat_share"] >= 0.9
    assert counts["queries"]["negative"] >= 8
    assert counts["queries"]["suite"] == 12


def _write_lines(tmp_path, lines):
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = [json.dumps(r, ensure_ascii=False) for r in RECORDS[:3]]


def test_bad_json_line_names_file_and_line(tmp_path):
    path = _write_lines(tmp_path, [GOOD[0], '{"record_id": "recBROKEN", ', GOOD[2]])
    with pytest.raises(DataError) as err:
        load_records(path)
    assert err.value.line == 2 and str(path) in str(err.value) and "invalid JSON" in str(err.value)


def test_missing_field_names_the_field(tmp_path):
    rec = dict(RECORDS[1])
    del rec["rating"]
    path = _write_lines(tmp_path, [GOOD[0], json.dumps(rec, ensure_ascii=False)])
    with pytest.raises(DataError) as err:
        load_records(path)
    assert (err.value.line, err.value.field) == (2, "rating")


def test_wrong_type_and_out_of_range_date(tmp_path):
    rec = dict(RECORDS[0], rating="5")
    with pytest.raises(DataError) as err:
        load_records(_write_lines(tmp_path, [json.dumps(rec, ensure_ascii=False)]))
    assert err.value.field == "rating" and "int" in str(err.value)
    rec = dict(RECORDS[0], captured_on="2026-03-01")
    with pytest.raises(DataError) as err:
        load_records(_write_lines(tmp_path, [json.dumps(rec, ensure_ascii=False)]))
    assert err.value.field == "captured_on"


def test_duplicate_id_names_both_lines(tmp_path):
    path = _write_lines(tmp_path, [GOOD[0], GOOD[1], GOOD[0]])
    with pytest.raises(DataError) as err:
        load_records(path)
    assert (err.value.line, err.value.field) == (3, "record_id") and "line 1" in str(err.value)


def test_bad_query_file(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_text('{"id": "T1", "text": "x", "kind": "suite", "relevant": ["recA"]}\n', encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_queries(path)
    assert err.value.field == "joined_round"


def _render_bytes(layout):
    return {p: (layout.root / p).read_bytes() for p in layout.files}


@pytest.mark.parametrize("round_no", [1, 2, 3, 4])
def test_rounds_render_deterministically_with_full_provenance(round_no):
    options = load_experiment(ROOT / f"experiments/round{round_no}.toml").layout
    a, b = King78(KING78).render(**options), King78(KING78).render(**options)
    try:
        assert a.root != b.root
        assert _render_bytes(a) == _render_bytes(b)
        assert (a.root / "provenance.json").read_bytes() == (b.root / "provenance.json").read_bytes()
        knowledge = [p for p in a.files if not re.search(r"memory/\d{4}-\d\d-\d\d\.md$", p)]
        assert knowledge
        for path in knowledge:
            for lineno, line in enumerate(a.read(path).split("\n"), start=1):
                if line.strip():
                    assert a.docs_overlapping(path, lineno, lineno), (path, lineno, line)
    finally:
        a.cleanup()
        b.cleanup()


def test_round_layout_options_are_data():
    r1 = King78(KING78).render(**load_experiment(ROOT / "experiments/round1.toml").layout)
    r4 = King78(KING78).render(**load_experiment(ROOT / "experiments/round4.toml").layout)
    try:
        assert len([p for p in r1.files if re.search(r"\d{4}-\d\d-\d\d", p)]) == 8
        assert len({s.doc_id for s in r1.spans if s.path == "memory/ai-knowledge-base.md"}) == 16
        assert len(r4.files) == 78
        assert "搜索关键词" in r4.read(f"memory/{TELLO}.md") and "美国手机号" in r4.read(f"memory/{TELLO}.md")
    finally:
        r1.cleanup()
        r4.cleanup()


@settings(max_examples=25)
@given(ids=st.lists(st.sampled_from(sorted(BY_ID)), min_size=1, max_size=12, unique=True),
       combined=st.booleans(), keywords=st.booleans(), logs=st.booleans())
def test_provenance_covers_every_knowledge_line_for_any_subset(ids, combined, keywords, logs):
    layout = render_king78(KING78, daily_logs=logs, combined=combined, records=ids, keywords=keywords, tags=keywords)
    try:
        covered = {s.doc_id for s in layout.spans}
        assert set(ids) <= covered
        for path in layout.files:
            if re.search(r"\d{4}-\d\d-\d\d\.md$", path):
                continue
            lines = layout.read(path).split("\n")
            for lineno, line in enumerate(lines, start=1):
                if line.strip():
                    docs = layout.docs_overlapping(path, lineno, lineno)
                    assert len(docs) == 1 and docs <= set(ids)
    finally:
        shutil.rmtree(layout.root)


def test_read_utf8_names_the_file_and_the_bad_byte(tmp_path):
    from harness.inputs.layout import read_utf8

    bad = tmp_path / "notes.md"
    bad.write_bytes("记忆".encode("utf-8") + b"\xff tail")
    with pytest.raises(DataError, match=r"notes\.md.*not UTF-8 at byte 6"):
        read_utf8(bad)
    with pytest.raises(DataError, match="no such queries file"):
        read_utf8(tmp_path / "absent.yaml", missing="no such queries file")
