"""LoCoMo as an agent's memory (issue 15): rendering, evidence mapping, scoping per conversation and the
evidence metrics, checked by hand on a tiny conversation; the real file's counts against its SOURCE."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import resolve
from harness.errors import ConfigError, DataError
from harness.evaluation.evidence import recall_all, recall_any
from harness.inputs.layout import DATASETS
from harness.inputs.locomo import normalise_evidence
from harness.pipeline import dataset_parts, load_dataset
from harness.studies.experiment import run_experiment

TINY = [
    {"sample_id": "conv-a", "qa": [
        {"question": "What is the name of the cat?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
        {"question": "Where does Miso sleep, what grows in garden?", "answer": "sofa; tomatoes",
         "evidence": ["D1:3; D3:1"], "category": 1},
        {"question": "When did Bob go running?", "answer": "8 May 2023", "evidence": ["D:2:01"], "category": 2},
        {"question": "Which book?", "answer": "none", "evidence": ["D9:9", "D"], "category": 3},
        {"question": "What is Bob's dog called?", "adversarial_answer": "Rex", "evidence": ["D1:2"], "category": 5},
    ], "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! Send a picture."},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Here she is.\nMiso likes to sleep on the sofa.\n",
             "img_url": ["https://example.org/x.jpg"], "blip_caption": "a photo of a grey cat", "query": "grey cat"}],
        "session_2_date_time": "7:30 pm on 8 May, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "I went running tonight."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "How far?"}],
        "session_3_date_time": "10:00 am on 1 June, 2023",
        "session_3": [
            {"speaker": "Ann", "dia_id": "D3:1", "text": "Tomatoes grow in my garden now."},
            {"speaker": "Bob", "dia_id": "D3:2", "text": "Wow, how many?"}],
        "session_4_date_time": "9:00 am on 2 June, 2023",  # a date without a session, as in conv-26
    }},
    {"sample_id": "conv-b", "qa": [
        {"question": "Which cat named Miso?", "answer": "none here", "evidence": ["D1:1"], "category": 4},
        {"question": "What does Rex eat?", "answer": "carrots", "evidence": ["D1:1"], "category": 4},
    ], "conversation": {
        "speaker_a": "Bob", "speaker_b": "Ann",
        "session_1_date_time": "3:00 pm on 2 February, 2022",
        "session_1": [
            {"speaker": "Bob", "dia_id": "D1:1", "text": "My dog Rex eats carrots."},
            {"speaker": "Ann", "dia_id": "D1:2", "text": "Cute!"}],
    }},
]


@pytest.fixture()
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY, indent=1), encoding="utf-8")
    return path


def part(dataset, scope):
    return dict(dataset_parts(dataset))[scope]


# --- rendering and provenance -------------------------------------------------------------------

def test_each_session_is_a_dated_file_and_each_turn_a_line_with_its_id(tiny, tmp_path):
    layout = part(DATASETS.create("locomo", path=str(tiny)), "conv-a").render(tmp_path / "a")
    # the second session of 8 May keeps apart under -s2; the dangling session_4 date holds nothing
    assert layout.files == ["memory/2023-05-08-s2.md", "memory/2023-05-08.md", "memory/2023-06-01.md"]
    assert layout.read("memory/2023-05-08.md") == (
        "# 2023-05-08 13:56 · Ann and Bob · session 1\n"
        "\n"
        "- [D1:1] Ann: I adopted a cat named Miso.\n"
        "- [D1:2] Bob: Lovely! Send a picture.\n"
        "- [D1:3] Ann: Here she is.\n"
        "  Miso likes to sleep on the sofa. [shares a photo of a grey cat]\n")
    assert layout.read("memory/2023-05-08-s2.md").startswith("# 2023-05-08 19:30 · Ann and Bob · session 2\n")
    spans = {s.doc_id: (s.path, s.start, s.end) for s in layout.spans}
    assert spans["D1:1"] == ("memory/2023-05-08.md", 3, 3)
    assert spans["D1:3"] == ("memory/2023-05-08.md", 5, 6)  # a two-line turn: both lines
    assert spans["D2:2"] == ("memory/2023-05-08-s2.md", 4, 4)
    assert layout.docs_overlapping("memory/2023-05-08.md", 1, 2) == set()  # the heading is no turn's
    assert layout.description["conversation"] == "conv-a" and layout.description["turns"] == 7


def test_session_granularity_makes_the_session_file_the_document(tiny, tmp_path):
    dataset = DATASETS.create("locomo", path=str(tiny), granularity="session")
    layout = part(dataset, "conv-a").render(tmp_path / "a")
    spans = [(s.doc_id, s.path, s.start, s.end) for s in layout.spans]
    assert spans == [("session_1", "memory/2023-05-08.md", 1, 6), ("session_2", "memory/2023-05-08-s2.md", 1, 4),
                     ("session_3", "memory/2023-06-01.md", 1, 4)]  # one span per session, heading included
    queries = {q.id: q for q in part(dataset, "conv-a").queries()}
    assert queries["conv-a/qa001"].relevant == {"session_1": 1, "session_3": 1}
    assert queries["conv-a/qa002"].relevant == {"session_2": 1}


# --- evidence mapping ---------------------------------------------------------------------------

def test_evidence_ids_are_normalised_and_counted():
    turns = {"D8:6", "D9:17", "D11:26", "D30:5", "D1:1"}
    assert normalise_evidence(["D8:6; D9:17"], turns)[0] == ["D8:6", "D9:17"]
    assert normalise_evidence(["D:11:26", "D30:05"], turns)[0] == ["D11:26", "D30:5"]
    ids, counts = normalise_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D10:19", "D", "D1:1", "D1:1"], turns)
    assert ids == ["D8:6", "D9:17", "D11:26", "D30:5", "D1:1"]
    assert counts == {"items": 7, "kept": 5, "split": 1, "reformatted": 2, "dropped_absent": 1, "dropped_empty": 1,
                      "dropped_unreadable": 0}


def test_questions_become_suite_negative_or_skipped(tiny):
    dataset = DATASETS.create("locomo", path=str(tiny))
    queries = {q.id: q for q in dataset.queries()}
    assert list(queries) == ["conv-a/qa000", "conv-a/qa001", "conv-a/qa002", "conv-a/qa004",
                             "conv-b/qa000", "conv-b/qa001"]
    assert queries["conv-a/qa000"].relevant == {"D1:1": 1} and queries["conv-a/qa000"].kind == "suite"
    assert queries["conv-a/qa001"].relevant == {"D1:3": 1, "D3:1": 1}  # split on ';'
    assert queries["conv-a/qa002"].relevant == {"D2:1": 1}  # 'D:2:01' reformatted
    adversarial = queries["conv-a/qa004"]
    assert (adversarial.kind, adversarial.relevant) == ("negative", {})
    # its evidence was said on 8 May 2023 1:56 pm, the question is asked after the last session with
    # turns (1 June 2023 10:00 am; session 4 has none): 23 days and 20 hours before
    assert adversarial.extra == {"category": 5, "category_name": "adversarial", "conversation": "conv-a",
                                 "answer": "Rex", "evidence": ["D1:2"], "evidence_age_days": 23}
    assert adversarial.cluster == "conv-a" and queries["conv-b/qa000"].cluster == "conv-b"
    described = dataset.describe()
    assert described["skipped"] == {"no_evidence": ["conv-a/qa003"]}  # D9:9 absent, 'D' empty
    assert described["evidence"] == {"items": 8, "kept": 7, "split": 1, "reformatted": 1, "dropped_absent": 1,
                                     "dropped_empty": 1, "dropped_unreadable": 0}
    assert described["same_day_sessions"] == 1 and described["queries"]["by_category"]["4"] == 3


def test_bad_files_name_the_json_path(tmp_path):
    bad = json.loads(json.dumps(TINY))
    bad[0]["conversation"]["session_2"][1]["dia_id"] = "D3:2"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(DataError, match="not a turn id of session 2") as err:
        DATASETS.create("locomo", path=str(path)).queries()
    assert err.value.field == "[0].conversation.session_2[1].dia_id"
    bad[0]["conversation"]["session_2_date_time"] = "yesterday"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(DataError, match="not a date"):
        DATASETS.create("locomo", path=str(path)).queries()
    with pytest.raises(ConfigError, match="granularity"):
        DATASETS.create("locomo", path=str(path), granularity="word")
    with pytest.raises(DataError, match="unknown ids"):
        DATASETS.create("locomo", path=str(tiny_path(tmp_path)), conversations=["conv-z"]).queries()


def tiny_path(tmp_path: Path) -> Path:
    path = tmp_path / "tiny2.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


# --- the metrics, by hand -----------------------------------------------------------------------

def test_recall_any_and_recall_all_by_hand():
    qrels = {"q1": {"D1:1": 1}, "q2": {"D1:3": 1, "D3:1": 1}, "q3": {"D2:1": 0}}  # q3 judged nothing relevant
    run = {"q1": {"D1:2": 0.9, "D1:1": 0.8}, "q2": {"D1:3": 0.9, "D2:1": 0.7, "D3:1": 0.5}, "q3": {"D2:1": 1.0}}
    assert recall_any(run, qrels, 1) == {"q1": 0.0, "q2": 1.0}
    assert recall_all(run, qrels, 1) == {"q1": 0.0, "q2": 0.0}
    assert recall_any(run, qrels, 2) == {"q1": 1.0, "q2": 1.0}
    assert recall_all(run, qrels, 2) == {"q1": 1.0, "q2": 0.0}  # D3:1 is third
    assert recall_all(run, qrels, 3) == {"q1": 1.0, "q2": 1.0}
    assert recall_any({}, qrels, 5) == {"q1": 0.0, "q2": 0.0}  # an empty result counts as a miss


# --- one workspace per conversation, end to end -------------------------------------------------

def tiny_config(path: Path, granularity: str = "turn") -> dict:
    """Lexical-only, OR-joined, no minScore: a hit is exactly a session file sharing a query word, so the
    ranks below follow from the texts (every tiny session is one chunk)."""
    return resolve({"preset": "openclaw-2026.08", "postprocess": [],
                    "dataset": {"name": "locomo", "path": str(path), "granularity": granularity},
                    "tokenizer": {"name": "unicode61", "join": "or"}, "fusion": {"name": "lexical-only"},
                    "embedder": {"name": "hash"}, "search": {"max_results": 10},
                    "evaluation": {"cutoffs": [1, 2], "evidence_cutoffs": [1, 2]}})


def test_a_scoped_run_searches_each_conversation_apart(tiny, tmp_cache):
    result = run_experiment(tiny_config(tiny), cache=tmp_cache, progress=False)
    rows = result.per_query.set_index("query_id")
    assert list(rows["scope"]) == ["conv-a"] * 4 + ["conv-b"] * 2
    assert result.summary["index"]["scopes"] == 2 and result.summary["index"]["files"] == 4
    # "cat" and "Miso" are only in conv-a: asked in conv-b, nothing comes back (one shared index would
    # return conv-a's first session)
    assert rows.loc["conv-b/qa000", "returned"] == 0
    assert rows.loc["conv-b/qa001", "recall_any@1"] == 1.0
    # "name", "cat": only session 1 matches; its chunk holds D1:1
    assert rows.loc["conv-a/qa000", ["recall_any@1", "recall_all@1"]].tolist() == [1.0, 1.0]
    # the evidence lies in sessions 1 and 3, the only two files sharing a word with the question
    assert rows.loc["conv-a/qa001", ["recall_any@1", "recall_all@1", "recall_all@2"]].tolist() == [1.0, 0.0, 1.0]
    assert result.summary["by_category"]["1"]["recall_all@2"] == 1.0
    assert result.summary["negative"]["queries"] == 1
    assert result.dataset["dataset"] == "locomo" and result.dataset["skipped"] == {"no_evidence": ["conv-a/qa003"]}
    stats = result.summary["index"]["chunk_stats"]
    assert stats["files"] == 4 and stats["coverage"]["uncovered_nonblank_lines"] == 0


def test_a_scoped_run_at_session_granularity(tiny, tmp_cache):
    result = run_experiment(tiny_config(tiny, "session"), cache=tmp_cache, progress=False)
    rows = result.per_query.set_index("query_id")
    assert rows.loc["conv-a/qa001", ["recall_all@1", "recall_all@2"]].tolist() == [0.0, 1.0]
    assert result.summary["index"]["mixed_chunks"] == 0  # a chunk never crosses a session file


def test_the_sweep_refuses_a_scoped_data_set(tiny):
    from harness.studies.spec.models import Grid
    from harness.studies.sweep import run_sweep

    with pytest.raises(ConfigError, match="one per scope"):
        run_sweep(tiny_config(tiny), Grid(vector_weight=[0.5]), progress=False)


# --- the real file ------------------------------------------------------------------------------

def test_real_locomo_counts_match_its_source():
    described = DATASETS.create("locomo").describe()
    assert described["sha256_check"] == "published"
    assert (described["conversations"], described["sessions"], described["turns"]) == (10, 272, 5882)
    assert described["turns_with_image"] == 1226 and described["same_day_sessions"] == 0
    assert described["questions"] == 1986
    assert described["queries"] == {"suite": 1536, "negative": 446,
                                    "by_category": {"1": 282, "2": 321, "3": 92, "4": 841, "5": 446}}
    assert described["evidence"] == {"items": 2815, "kept": 2820, "split": 4, "reformatted": 2,
                                     "dropped_absent": 2, "dropped_empty": 1, "dropped_unreadable": 0}
    assert len(described["skipped"]["no_evidence"]) == 4


def test_real_locomo_renders_as_dated_daily_files(tmp_path):
    dataset = DATASETS.create("locomo", conversations=["conv-26"])
    (scope, conversation), = dataset_parts(dataset)
    layout = conversation.render(tmp_path / scope)
    assert len(layout.files) == 19 and layout.files[0] == "memory/2023-05-08.md"
    text = layout.read("memory/2023-05-08.md").splitlines()
    assert text[0] == "# 2023-05-08 13:56 · Caroline and Melanie · session 1"
    assert text[6] == ("- [D1:5] Caroline: The transgender stories were so inspiring! I was so happy and thankful "
                       "for all the support. [shares a photo of a dog walking past a wall with a painting of a woman]")
    assert len(layout.spans) == 419


def test_temporal_decay_dates_each_conversation_from_its_last_session(tiny, tmp_cache):
    """openclaw-2026.08 decays dated memory files; a LoCoMo workspace's questions are asked right after its
    last session, so each conversation is its own reference time unless evaluation.now says otherwise."""
    plain = run_experiment(tiny_config(tiny), cache=tmp_cache, progress=False).hits
    config = tiny_config(tiny).with_overrides({"postprocess": [{"name": "temporal_decay", "half_life_days": 30.0}]})
    decayed = run_experiment(config, cache=tmp_cache, progress=False).hits
    before = {h["chunk"]: h["score"] for h in plain["conv-a/qa001"]}
    after = {h["chunk"]: h["score"] for h in decayed["conv-a/qa001"]}
    # conv-a's last session: 2023-06-01 10:00, so its 2023-06-01 file is 10 hours old, 2023-05-08's 24 days
    for chunk, days in (("memory/2023-06-01.md", 10 / 24), ("memory/2023-05-08.md", 24 + 10 / 24)):
        cid = next(c for c in after if c.startswith(chunk))
        assert after[cid] == pytest.approx(before[cid] * 0.5 ** (days / 30))
    parts = dict(dataset_parts(load_dataset(tiny_config(tiny))))
    assert parts["conv-b"].reference_time.isoformat() == "2022-02-02T15:00:00"
    config = config.with_overrides({"evaluation": {"now": "2023-06-01"}})  # an explicit date wins
    fixed = run_experiment(config, cache=tmp_cache, progress=False).hits
    cid = next(c for c in after if c.startswith("memory/2023-06-01.md"))
    assert {h["chunk"]: h["score"] for h in fixed["conv-a/qa001"]}[cid] == pytest.approx(before[cid])
