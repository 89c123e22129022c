"""Chinese conversation memory (issue 29): dates as people write them, a hand-made Chinese conversation that
loads and runs as written, the conversation headline (recall_any / recall_all first), the vendored Chinese
LoCoMo and its pairing with English LoCoMo."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.config import resolve
from harness.errors import DataError
from harness.inputs.conversation_dates import UnreadableDate, parse_when
from harness.inputs.layout import DATASETS
from harness.pipeline import dataset_parts
from harness.studies.experiment import run_experiment

from .conftest import ROOT

HANDMADE = ROOT / "datasets" / "handmade" / "locomo-zh-dates.json"


# --- dates --------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, when", [
    ("下午3:10 2026年3月2日", datetime(2026, 3, 2, 15, 10)),
    ("晚上8:40 2026年3月24日", datetime(2026, 3, 24, 20, 40)),
    ("2026年3月2日", datetime(2026, 3, 2)),
    ("2026年3月2日 15:10", datetime(2026, 3, 2, 15, 10)),
    ("2026年3月2日 星期一 下午3点半", datetime(2026, 3, 2, 15, 30)),
    ("2026年3月2号下午3点10分", datetime(2026, 3, 2, 15, 10)),
    ("上午9:05 2026年3月2日", datetime(2026, 3, 2, 9, 5)),
    ("凌晨12:05 2026年3月2日", datetime(2026, 3, 2, 0, 5)),  # 12 a.m. is midnight, as in English
    ("中午12:30 2026年3月2日", datetime(2026, 3, 2, 12, 30)),
    ("中午1:00 2026年3月2日", datetime(2026, 3, 2, 13, 0)),
    ("下午12:30 2026年3月2日", datetime(2026, 3, 2, 12, 30)),
    ("下午15:10 2026年3月2日", datetime(2026, 3, 2, 15, 10)),  # a 24-hour figure after 下午, as written
    ("２０２６年３月２日 下午３：１０", datetime(2026, 3, 2, 15, 10)),  # full-width digits and colon
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
    ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9)),
    ("10:00 AM on 1 Jun 2023", datetime(2023, 6, 1, 10, 0)),
    ("8 May, 2023", datetime(2023, 5, 8)),
    ("2023-05-08", datetime(2023, 5, 8)),
    ("2023-05-08T13:56", datetime(2023, 5, 8, 13, 56)),
    ("2023-05-08 13:56:07+08:00", datetime(2023, 5, 8, 13, 56, 7)),  # the wall clock, offset dropped
    ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21)),  # LongMemEval
    ("2023/05/20", datetime(2023, 5, 20)),
])
def test_dates_are_read_as_people_write_them(raw, when):
    assert parse_when(raw) == when


@pytest.mark.parametrize("raw", ["yesterday", "2026年2月30日", "上午15:00 2026年3月2日", "夜里2点 2026年3月2日",
                                 "2023-13-01", "13:56 pm on 8 May, 2023", "8 Mai, 2023", "3月2日"])
def test_an_unreadable_date_is_one_line(raw):
    with pytest.raises(UnreadableDate) as err:
        parse_when(raw)
    message = str(err.value)
    assert "\n" not in message and repr(raw) in message


def test_the_error_for_an_unknown_form_lists_the_accepted_forms():
    with pytest.raises(UnreadableDate) as err:
        parse_when("next Tuesday")
    for form in ("'1:56 pm on 8 May, 2023'", "'2023-05-08'", "'2026年3月2日'", "'下午3:10 2026年3月2日'",
                 "'2023/05/20 (Sat) 02:21'"):
        assert form in str(err.value)


def test_every_english_locomo_date_reads_as_before():
    """The loader read locomo10.json with strptime('%I:%M %p on %d %B, %Y'); the new reader gives the same."""
    data = json.loads((ROOT / "datasets/locomo/locomo10.json").read_text(encoding="utf-8"))
    dates = [v for s in data for k, v in s["conversation"].items() if k.endswith("_date_time")]
    assert len(dates) == 288
    assert all(parse_when(v) == datetime.strptime(v.strip(), "%I:%M %p on %d %B, %Y") for v in dates)


# --- a hand-made Chinese conversation, read as written ------------------------------------------

def test_a_chinese_conversation_with_chinese_dates_renders_as_dated_files(tmp_path):
    parts = dict(dataset_parts(DATASETS.create("locomo", path=str(HANDMADE))))
    layout = parts["zh-a"].render(tmp_path / "a")
    assert layout.files == ["memory/2026-03-02.md", "memory/2026-03-24.md", "memory/2026-04-05.md",
                            "memory/2026-04-20.md"]
    assert layout.read("memory/2026-03-02.md").splitlines()[:4] == [
        "# 2026-03-02 15:10 · 小林 and 阿梅 · session 1", "",
        "- [D1:1] 小林: 阿梅，好久不见！我上周末去收容所领养了一只橘猫。", "- [D1:2] 阿梅: 太好了！它叫什么名字？"]
    assert layout.read("memory/2026-03-24.md").startswith("# 2026-03-24 20:40 ·")
    assert layout.read("memory/2026-04-05.md").startswith("# 2026-04-05 00:00 ·")  # a date alone: midnight
    assert parts["zh-a"].reference_time == datetime(2026, 4, 20, 9, 30)  # the ISO session, the last
    b = parts["zh-b"].render(tmp_path / "b")  # '2026年5月1日' and '2026年5月1日 晚上9点半': one day, two files
    assert b.files == ["memory/2026-05-01-s2.md", "memory/2026-05-01.md"]
    assert b.read("memory/2026-05-01-s2.md").startswith("# 2026-05-01 21:30 ·")


def _handmade_experiment(tmp_path: Path, path: Path = HANDMADE) -> Path:
    """Lexical-only with jieba, OR-joined, no minScore, hash vectors: every figure follows from the words."""
    experiment = tmp_path / "zh.toml"
    experiment.write_text(f'''
name = "zh-dates"
preset = "openclaw-2026.02"
postprocess = []
[dataset]
name = "locomo"
path = "{path.as_posix()}"
[tokenizer]
name = "jieba"
join = "or"
[fusion]
name = "lexical-only"
[embedder]
name = "hash"
[search]
max_results = 5
''', encoding="utf-8")
    return experiment


def test_the_chinese_conversation_runs_and_the_console_leads_with_recall_any(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(app, ["run", str(_handmade_experiment(tmp_path)), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if ln.startswith("zh-dates: "))
    assert line.startswith("zh-dates: recall_any@5 ") and "recall_all@5 " in line
    assert line.index("recall_any@5") < line.index("turn-level Recall@5") < line.index("passed")
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    suite = doc["summary"]["suite"]
    # no [evaluation] evidence_cutoffs: conversation data gets recall_any / recall_all at the result cut-off
    assert suite["queries"] == 6 and suite["recall_any@5"] is not None and suite["recall_all@5"] is not None
    rows = doc["queries"]
    # '猫', '名字' are in session 1 only, whose chunk holds D1:3
    assert rows["zh-a/qa000"]["recall_any@5"] == 1.0
    # the multi-hop question's evidence (D3:1, D1:3) lies in two sessions, both sharing its words
    assert rows["zh-a/qa002"]["recall_all@5"] == 1.0
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8").splitlines()
    headline = next(ln for ln in report if ln and not ln.startswith("#"))
    assert headline.startswith("recall_any@5 ") and headline.index("recall_all@5") < headline.index("turn-level")
    assert "## By category" in report


def test_the_tie_caveat_is_shown_only_when_a_chunk_holds_several_turns():
    from harness.reporting.markdown import evidence_headline_text, tie_caveat

    block = {"recall_any@5": 1.0, "recall_all@5": 0.5, "recall@5": 0.1, "mrr@5": 0.1, "ndcg@5": 0.1,
             "chunk_mrr@5": 1.0}
    assert tie_caveat(1.0) == "" and "expectation over their orders" in tie_caveat(8.6, "turn")
    assert "ordered by id" in tie_caveat(8.6, "turn", "id_order")
    shown = evidence_headline_text(block, unit="turn", docs_per_chunk=8.6)
    assert shown.startswith("recall_any@5 1.000 · recall_all@5 0.500 · turn-level Recall@5 0.100")
    assert "8.6 turns on average" in shown
    assert "tie" not in evidence_headline_text(block, unit="session", docs_per_chunk=1.0)


def test_a_bad_chinese_date_is_a_one_line_error_naming_the_field(tmp_path, monkeypatch):
    data = json.loads(HANDMADE.read_text(encoding="utf-8"))
    data[0]["conversation"]["session_2_date_time"] = "三月二十四日晚上"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DataError) as err:
        DATASETS.create("locomo", path=str(bad)).queries()
    assert err.value.field == "[0].conversation.session_2_date_time"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(app, ["run", str(_handmade_experiment(tmp_path, bad)), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "session_2_date_time" in lines[0]
    assert "'下午3:10 2026年3月2日'" in lines[0] and "'1:56 pm on 8 May, 2023'" in lines[0]


def test_a_scoped_chinese_run_in_process(tmp_path, tmp_cache):
    config = resolve({"preset": "openclaw-2026.02", "postprocess": [],
                      "dataset": {"name": "locomo", "path": str(HANDMADE)},
                      "tokenizer": {"name": "jieba", "join": "or"}, "fusion": {"name": "lexical-only"},
                      "embedder": {"name": "hash"}, "search": {"max_results": 5}})
    result = run_experiment(config, cache=tmp_cache, progress=False)
    assert result.summary["index"]["scopes"] == 2
    assert set(result.per_query["scope"]) == {"zh-a", "zh-b"}
    assert result.summary["negative"]["queries"] == 1
    assert "recall_any@5" in result.summary["by_category"]["4"]


# --- the vendored Chinese LoCoMo and its pairing with English LoCoMo ----------------------------

ZH = ROOT / "datasets" / "locomo_zh" / "medium_locomo_zh.json"
EN = ROOT / "datasets" / "locomo" / "locomo10.json"


def test_the_chinese_locomo_is_read_as_published_with_its_source_counts():
    described = DATASETS.create("locomo", path=str(ZH)).describe()
    assert described["sha256_check"] == "published"
    assert (described["conversations"], described["sessions"], described["turns"]) == (2, 38, 788)
    assert described["questions"] == 304 and described["turns_with_image"] == 188
    assert described["queries"] == {"suite": 231, "negative": 71,
                                    "by_category": {"1": 43, "2": 63, "3": 11, "4": 114, "5": 71}}
    assert described["skipped"] == {"no_evidence": ["conv-26/qa030", "conv-26/qa046"]}
    queries = DATASETS.create("locomo", path=str(ZH)).queries()
    assert {q.cluster for q in queries} == {"conv-26", "conv-30"}  # the resampling unit: the conversation


def test_a_changed_copy_of_the_chinese_locomo_fails_its_sha256(tmp_path):
    copy = tmp_path / "medium_locomo_zh.json"
    copy.write_text(ZH.read_text(encoding="utf-8").replace("Caroline", "Karoline", 1), encoding="utf-8")
    with pytest.raises(DataError, match="sha256 mismatch"):
        DATASETS.create("locomo", path=str(copy)).queries()


def test_every_chinese_question_pairs_with_its_english_original():
    from harness.studies.language_pairs import pair_locomo

    pairing = pair_locomo(EN, ZH, ["conv-26", "conv-30"])
    total = pairing["total"]
    assert pairing["mismatch_count"] == 0
    assert total["questions"] == [304, 304] and total["questions_paired"] == 304
    assert total["turns"] == [788, 788] and total["turns_matched"] == 788 and total["sessions_matched"] == 38
    assert total["questions_with_the_same_text"] == 0  # every question is translated
    assert total["turns_with_the_same_text"] == 1  # conv-30's ';)'
    assert pairing["paired"]["conv-26/qa000"] == {"category": 2, "evidence": ["D1:3"]}


def test_the_pairing_names_what_does_not_pair(tmp_path):
    from harness.studies.language_pairs import pair_locomo

    data = json.loads(ZH.read_text(encoding="utf-8"))
    data[0]["qa"][5]["evidence"] = ["D1:1"]
    data[1]["conversation"]["session_2"][0]["speaker"] = "Someone"
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    pairing = pair_locomo(EN, changed, ["conv-26", "conv-30"])
    assert pairing["total"]["questions_paired"] == 303 and "conv-26/qa005" not in pairing["paired"]
    assert pairing["total"]["turns_matched"] == 787
    assert any("conv-26 question 5" in m for m in pairing["mismatches"])
    assert any("conv-30 session 2 turn 0" in m for m in pairing["mismatches"])


def test_paired_differences_and_the_stage_that_lost_each_question():
    """Four questions, by hand: English finds all four, Chinese two; q2's evidence left the vector top 10,
    q3's left both legs' top 10."""
    from harness.studies.language_pairs import System, compare_systems

    def row(found, vec, lex, candidates=5):
        return {"recall_any@10": found, "vector_rank": vec, "lexical_rank": lex, "lexical_candidates": candidates}

    en = {"c/qa000": row(1.0, 1, 2), "c/qa001": row(1.0, 3, None), "c/qa002": row(1.0, 2, None),
          "c/qa003": row(1.0, 4, 6)}
    zh = {"c/qa000": row(1.0, 1, None, 0), "c/qa001": row(1.0, 5, None, 0), "c/qa002": row(0.0, 30, None, 0),
          "c/qa003": row(0.0, None, 12)}
    columns = frozenset(["recall_any@10", "vector_rank", "lexical_rank", "lexical_candidates"])
    system = System("hybrid", "test", en, zh, ("lexical", "vector"), {}, columns)
    paired = {q: {"category": 4 if q != "c/qa003" else 1, "evidence": []} for q in en}
    doc = compare_systems([system], paired, ["recall_any@10"])
    (r,) = doc["tables"]["recall_any@10"]
    assert (r["mean_a"], r["mean_b"], r["queries"]) == (1.0, 0.5, 4)
    assert r["difference"]["estimate"] == pytest.approx(0.5)
    (stage,) = doc["stages"]
    assert (stage["lost"], stage["gained"]) == (2, 0)
    assert stage["lost_by_stage"] == {"vector only": 1, "lexical only": 0, "both legs": 1, "neither leg": 0}
    assert stage["diagnostics"]["lexical_hit"]["mean_a"] == 1.0 and stage["diagnostics"]["lexical_hit"]["mean_b"] == 0.25
    assert stage["diagnostics"]["vector_top10"]["mean_b"] == 0.5
    by_category = {c["category"]: c for c in doc["by_category"]}
    assert by_category[1]["mean_b"] == 0.0 and by_category[4]["mean_b"] == pytest.approx(2 / 3)


def test_language_pairs_names_the_study_to_run_when_a_source_is_missing(tmp_path):
    spec = (ROOT / "experiments/paired-locomo-zh.toml").read_text(encoding="utf-8")
    spec = spec.replace('file = "reports/locomo-zh/locomo-zh.json"', f'file = "{(tmp_path / "none.json").as_posix()}"')
    path = tmp_path / "paired.toml"
    path.write_text(spec, encoding="utf-8")
    result = CliRunner().invoke(app, ["language-pairs", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "none.json: no benchmark document; run `harness benchmark experiments/benchmark-locomo-zh.toml" in result.output

