"""The evaluation boundary: Runs and Qrels in and out (TREC, ranx JSON), `harness eval` on a run written by
hand, an exported run of our own scoring to its results.json figures, and ranx agreeing with our metrics."""
import json
import math
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.config import load_experiment
from harness.errors import ConfigError, DataError
from harness.evaluation.metrics import (
    Measure,
    evaluate,
    recall_of_first_chunks,
    standard_metrics,
)
from harness.evaluation.run_files import (
    detect_format,
    read_qrels,
    read_run,
    write_ranx_json,
    write_trec_qrels,
    write_trec_run,
)
from harness.evaluation.runs import (
    JudgedRuns,
    chunk_run,
    cut,
    judged_runs,
    max_passage_run,
    ranked_ids,
)
from harness.reporting.documents import write_results
from harness.stages.fusion import Hit
from harness.studies.experiment import run_experiment
from tests.conftest import ROOT

runner = CliRunner()

# Written by hand: lines out of order, a tie (d2 and d3 at 0.8: d2 first by id), a query the qrels do
# not judge (q4), and a judged query absent from the run (q3).
HAND_RUN = """\
q1 Q0 d3 3 0.8 other-system
q1 Q0 d1 1 0.9 other-system
q1 Q0 d4 4 0.1 other-system
q1 Q0 d2 2 0.8 other-system
q2 Q0 e2 2 0.5 other-system
q2 Q0 e1 1 0.7 other-system
q2 Q0 e3 3 0.2 other-system
q4 Q0 x 1 1.0 other-system
"""
HAND_QRELS = """\
q1 0 d3 1
q2 0 e1 1
q2 0 e3 1
q3 0 z 1
"""
# q1: ranked d1 d2 d3 d4, the relevant d3 third: RR 1/3, nDCG@3 = (1/log2 4) / 1 = 0.5
# q2: ranked e1 e2 e3, relevant e1 and e3: RR 1; DCG@3 = 1 + 1/log2 4 = 1.5, IDCG@3 = 1 + 1/log2 3
# q3: judged, not in the run: 0 everywhere
HAND = {"q1": {"mrr@3": 1 / 3, "ndcg@3": 0.5, "recall@3": 1.0},
        "q2": {"mrr@3": 1.0, "ndcg@3": 1.5 / (1 + 1 / math.log2(3)), "recall@3": 1.0},
        "q3": {"mrr@3": 0.0, "ndcg@3": 0.0, "recall@3": 0.0}}


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_harness_eval_scores_a_hand_written_trec_run(tmp_path):
    run, qrels = write(tmp_path, "other.run", HAND_RUN), write(tmp_path, "my.qrels", HAND_QRELS)
    out = tmp_path / "scores.json"
    result = runner.invoke(app, ["eval", "--run", str(run), "--qrels", str(qrels), "--metric", "mrr@3",
                                 "--metric", "NDCG@3", "--metric", "recall@3", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "mean over 3 judged queries" in result.output
    assert "1 judged queries have no results" in result.output and "1 queries of the run are not in the qrels" in result.output
    scores = json.loads(out.read_text(encoding="utf-8"))
    assert scores["measures"] == ["mrr@3", "ndcg@3", "recall@3"]
    for qid, expected in HAND.items():
        assert scores["per_query"][qid] == pytest.approx(expected), qid
    assert scores["mean"]["mrr@3"] == pytest.approx((1 / 3 + 1) / 3)
    assert scores["mean"]["ndcg@3"] == pytest.approx((0.5 + HAND["q2"]["ndcg@3"]) / 3)
    assert f"{(1 / 3 + 1) / 3:.4f}" in result.output  # the table shows the means
    assert scores["judged_without_results"] == ["q3"] and scores["unjudged_in_run"] == ["q4"]


def test_the_same_run_as_ranx_json_scores_the_same(tmp_path):
    write_ranx_json(read_run(write(tmp_path, "a.run", HAND_RUN)), tmp_path / "a.json")
    write_ranx_json(read_qrels(write(tmp_path, "a.qrels", HAND_QRELS)), tmp_path / "q.json")
    assert detect_format(tmp_path / "a.json") == "json"
    result = runner.invoke(app, ["eval", "--run", str(tmp_path / "a.json"), "--qrels", str(tmp_path / "q.json"),
                                 "--metric", "mrr@3", "--json", str(tmp_path / "s.json")])
    assert result.exit_code == 0, result.output
    per_query = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["per_query"]
    assert {q: v["mrr@3"] for q, v in per_query.items()} == pytest.approx({q: v["mrr@3"] for q, v in HAND.items()})


@pytest.mark.parametrize("name, text, expected", [
    ("bad.run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\nq1 Q0 d3 3 0.3\n", "bad.run:3: 5 columns; a TREC run line has 6"),
    ("bad.run", "q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 high t\n", "bad.run:3: field 'score': not a number: 'high'"),
    ("bad.run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 x 0.4 t\n", "bad.run:2: field 'rank': not an integer: 'x'"),
    ("bad.run", "q1 Q0 d1 1 nan t\n", "bad.run:1: field 'score': not a finite number"),
    ("bad.run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", "bad.run:2: field 'docid': 'd1' is listed twice"),
    ("bad.run", "q1 0 d1 1\n", "this is TREC qrels (4 columns), not a run"),
    ("bad.run", "q1 d1 0.5\n", "bad.run:1: 3 columns: neither a TREC run"),
    ("bad.run", "{\n \"q1\": {\"d1\": 0.5,}\n}\n", "bad.run:2: invalid JSON"),
    ("bad.run", '{"q1": {"d1": "high"}}', "bad.run: field 'q1.d1': score must be a finite number"),
    ("bad.run", "", "bad.run: empty file"),
])
def test_a_malformed_run_names_file_line_and_field(tmp_path, name, text, expected):
    path = write(tmp_path, name, text)
    with pytest.raises(DataError) as err:
        read_run(path)
    assert str(err.value).endswith(expected) or expected in str(err.value), str(err.value)
    assert str(err.value).startswith(str(path))
    qrels = write(tmp_path, "ok.qrels", "q1 0 d1 1\n")
    result = runner.invoke(app, ["eval", "--run", str(path), "--qrels", str(qrels)])
    assert result.exit_code == 2 and expected in result.output.replace("\n", "")  # one line, no traceback
    assert "Traceback" not in result.output


def test_malformed_qrels_and_unknown_metrics_are_clear_errors(tmp_path):
    with pytest.raises(DataError, match=r"q\.qrels:2: field 'grade': not an integer: '0\.5'"):
        read_qrels(write(tmp_path, "q.qrels", "q1 0 d1 1\nq1 0 d2 0.5\n"))
    with pytest.raises(DataError, match="q.qrels:2: field 'docid': 'd1' is judged twice"):
        read_qrels(write(tmp_path, "q.qrels", "q1 0 d1 1\nq1 0 d1 2\n"))
    with pytest.raises(DataError, match="this is a TREC run"):
        read_qrels(write(tmp_path, "q.qrels", HAND_RUN))
    with pytest.raises(DataError, match="grade must be an integer"):
        read_qrels(write(tmp_path, "q.json", '{"q1": {"d1": 1.5}}'))
    with pytest.raises(DataError, match="no such file"):
        read_run(tmp_path / "missing.run")
    with pytest.raises(ConfigError, match="unknown metric 'mrrr@3'"):
        Measure.parse("mrrr@3")
    with pytest.raises(ConfigError, match="needs a cut-off"):
        Measure.parse("precision")
    result = runner.invoke(app, ["eval", "--run", str(write(tmp_path, "a.run", HAND_RUN)),
                                 "--qrels", str(write(tmp_path, "a.qrels", HAND_QRELS)), "--metric", "mrr@0"])
    assert result.exit_code == 2 and "the cut-off must be at least 1" in result.output


def test_trec_and_ranx_json_round_trips_are_exact(tmp_path):
    run = {"q1": {"a": 0.1 + 0.2, "b": 1e-300, "c": 0.30000000000000004, "d": -2.5},
           "q_2": {"文档": 7.0}}
    qrels = {"q1": {"a": 2, "d": 0, "z": 1}, "q_2": {"文档": 1}}
    assert read_run(write_trec_run(run, tmp_path / "r.run", tag="my run")) == run
    assert read_qrels(write_trec_qrels(qrels, tmp_path / "r.qrels")) == qrels
    assert read_run(write_ranx_json(run, tmp_path / "r.json")) == run
    assert read_qrels(write_ranx_json(qrels, tmp_path / "q.json")) == qrels
    lines = (tmp_path / "r.run").read_text(encoding="utf-8").splitlines()
    # (score desc, id): a (0.30000000000000004) and c tie and break by id
    assert lines[:2] == ["q1 Q0 a 1 0.30000000000000004 my_run", "q1 Q0 c 2 0.30000000000000004 my_run"]
    with pytest.raises(DataError, match="holds whitespace"):
        write_trec_run({"q1": {"memory/my notes.md:1-3": 1.0}}, tmp_path / "x.run")


GRADED_RUN = {"q1": {f"d{i}": 1.0 - i / 17 for i in range(12)},
              "q2": {f"d{i}": (i * 7 % 11) / 10 + i / 1000 for i in range(9)},  # no ties: ranx leaves them unordered
              "q3": {"d1": 0.4, "d2": 0.3}}
GRADED_QRELS = {"q1": {"d2": 2, "d5": 1, "d11": 3, "d40": 1}, "q2": {"d3": 1, "d8": 2}, "q3": {"d9": 1}}


@pytest.mark.slow  # ranx compiles its metrics with numba on first use: minutes on a loaded 2-core machine
def test_metrics_agree_with_ranx_reading_our_files_and_we_read_theirs(tmp_path):
    from ranx import Qrels as RanxQrels
    from ranx import Run as RanxRun
    from ranx import evaluate as ranx_evaluate

    measures = ["mrr@5", "ndcg@5", "ndcg@10", "recall@5", "precision@5", "hit_rate@1", "hit_rate@5", "map@10"]
    ours = evaluate(GRADED_RUN, GRADED_QRELS, measures)
    write_trec_run(GRADED_RUN, tmp_path / "ours.trec")
    write_trec_qrels(GRADED_QRELS, tmp_path / "ours-qrels.trec")
    write_ranx_json(GRADED_RUN, tmp_path / "ours.json")
    their_qrels = RanxQrels.from_file(str(tmp_path / "ours-qrels.trec"), kind="trec")
    for run_file, kind in (("ours.trec", "trec"), ("ours.json", "json")):
        theirs = ranx_evaluate(their_qrels, RanxRun.from_file(str(tmp_path / run_file), kind=kind), measures,
                               return_mean=False)
        for i, q in enumerate(sorted(GRADED_QRELS)):
            for m in measures:
                assert ours[q][m] == pytest.approx(float(theirs[m][i])), (run_file, q, m)
    # ranx's own writers, in a process where its numba kernels are compiled: the suite runs them uncompiled
    # (tests/conftest.py), and uncompiled ranx keeps numpy string keys that its JSON writer refuses
    (tmp_path / "graded.json").write_text(json.dumps([GRADED_RUN, GRADED_QRELS]), encoding="utf-8")
    writer = ("import json, sys; from ranx import Qrels, Run; out = sys.argv[1]; "
              "run, qrels = json.load(open(out + '/graded.json')); "
              "Run(run, name='theirs').save(out + '/theirs.trec', kind='trec'); "
              "Qrels(qrels).save(out + '/theirs-qrels.json', kind='json')")
    subprocess.run([sys.executable, "-W", "ignore", "-c", writer, str(tmp_path)], check=True, timeout=600,
                   env={**os.environ, "NUMBA_DISABLE_JIT": "0"})
    theirs = read_run(tmp_path / "theirs.trec")
    assert list(theirs) == list(GRADED_RUN)
    for q, scores in GRADED_RUN.items():
        assert theirs[q] == pytest.approx(scores)
    assert read_qrels(tmp_path / "theirs-qrels.json") == GRADED_QRELS


def test_a_run_keeps_the_order_the_agent_saw():
    ranked = [Hit("b", 0.9), Hit("a", 0.5), Hit("c", 0.5)]
    assert chunk_run({"q": ranked})["q"] == {"b": 0.9, "a": 0.5, "c": 0.5}  # already (score desc, id): kept
    mmr = [Hit("b", 0.9), Hit("c", 0.5), Hit("a", 0.7)]  # a diversity stage's own order, scores unchanged
    run = chunk_run({"q": mmr})
    assert ranked_ids(run["q"]) == ["b", "c", "a"] and run["q"]["c"] == 0.5
    assert evaluate(run, {"q": {"a": 1}}, ["mrr@3"])["q"]["mrr@3"] == pytest.approx(1 / 3)
    assert cut(run, 2) == {"q": {"b": 1.0, "c": 0.5}}


def test_recall_counts_the_documents_of_the_first_chunks():
    # c1 mixes three records: Recall@1 counts them all; a standard recall@1 on documents would not
    docs_of = {"c1": frozenset({"D1", "D2", "D3"}), "c2": frozenset({"D4"}), "c3": frozenset()}
    hits = {"q": [Hit("c1", 0.9), Hit("c2", 0.8), Hit("c3", 0.7)], "n": []}
    runs = judged_runs(hits, docs_of, {"q": {"c1": 1, "c2": 1}}, {"q": {"D3": 1, "D4": 2}})
    assert ranked_ids(runs.document_run["q"]) == ["D1", "D2", "D3", "D4"]
    assert runs.document_run["n"] == {}
    assert recall_of_first_chunks(runs.chunk_run, runs.chunk_documents, runs.document_qrels, 1) == {"q": 0.5}
    assert evaluate(runs.document_run, runs.document_qrels, ["recall@1"])["q"]["recall@1"] == 0.0
    chunk_level = {"chunk_recall@1": 0.5, "chunk_mrr@1": 1.0, "chunk_ndcg@1": 1.0, "chunk_recall@2": 1.0,
                   "chunk_mrr@2": 1.0, "chunk_ndcg@2": 1.0, "chunk_recall@4": 1.0, "chunk_mrr@4": 1.0,
                   "chunk_ndcg@4": 1.0}
    # records (MaxP, cut at k records, graded): D1 D2 D3 tie on c1 at positions 1-3, D4 (grade 2) follows.
    # Expected over the 3! orders: D3 (grade 1) holds each of positions 1-3 with probability 1/3; pure
    # recall counts D3 1/3 (its chunk holds three records); chunk-level figures as the chunks rank
    ideal2 = 2 / math.log2(2) + 1 / math.log2(3)
    expected = standard_metrics(runs, [1, 2, 4])
    assert expected == {"q": pytest.approx({
        "recall@1": 1 / 6, "mrr@1": 1 / 3, "ndcg@1": (1 / 3) / 2, "pure_recall@1": (1 / 3 * 1 / 3) / 2,
        "recall@2": 1 / 3, "mrr@2": 1 / 3 + 1 / 6, "ndcg@2": (1 + 1 / math.log2(3)) / 3 / ideal2,
        "pure_recall@2": (1 / 3 * 2 / 3) / 2,
        "recall@4": 1.0, "mrr@4": (1 + 1 / 2 + 1 / 3) / 3,
        "ndcg@4": ((1 + 1 / math.log2(3) + 1 / math.log2(4)) / 3 + 2 / math.log2(5)) / ideal2,
        "pure_recall@4": (1 / 3 + 1) / 2, **chunk_level})}
    ranges: dict = {}
    standard_metrics(runs, [1, 2, 4], tie_ranges=ranges)
    assert ranges["q"]["mrr@4"] == [1 / 3, 1.0] and "recall@4" not in ranges["q"]  # ties cannot move recall@4
    metrics = standard_metrics(runs, [1, 2, 4], ties="id_order")  # trec_eval's rule: D1 D2 D3 by id
    dcg4 = 1 / math.log2(4) + 2 / math.log2(5)
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert metrics == {"q": pytest.approx({
        "recall@1": 0.0, "mrr@1": 0.0, "ndcg@1": 0.0, "pure_recall@1": 0.0,
        "chunk_recall@1": 0.5, "chunk_mrr@1": 1.0, "chunk_ndcg@1": 1.0,
        "recall@2": 0.0, "mrr@2": 0.0, "ndcg@2": 0.0, "pure_recall@2": 0.0,
        "chunk_recall@2": 1.0, "chunk_mrr@2": 1.0, "chunk_ndcg@2": 1.0,
        "recall@4": 1.0, "mrr@4": 1 / 3, "ndcg@4": dcg4 / ideal, "pure_recall@4": (1 / 3 + 1) / 2,
        "chunk_recall@4": 1.0, "chunk_mrr@4": 1.0, "chunk_ndcg@4": 1.0})}
    assert max_passage_run(runs.chunk_run, docs_of) == runs.document_run
    assert JudgedRuns.from_dict(json.loads(json.dumps(runs.to_dict()))) == runs
    with pytest.raises(DataError, match="results.json: field 'runs': missing"):
        JudgedRuns.from_dict({"queries": {}}, "results.json")


def _exported_figures(tmp_path, results_path, *, suite_only, level, measures, ties="id_order"):
    out = tmp_path / ("suite" if suite_only else "all")
    args = ["export", str(results_path), "--out", str(out)] + (["--suite-only"] if suite_only else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    scores = {}
    for run_file, qrels_file in ((f"{level}.run", f"{level}.qrels"), (f"{level}-run.json", f"{level}-qrels.json")):
        json_out = out / f"scores-{run_file}.json"
        result = runner.invoke(app, ["eval", "--run", str(out / run_file), "--qrels", str(out / qrels_file),
                                     "--json", str(json_out), "--ties", ties,
                                     *[a for m in measures for a in ("--metric", m)]])
        assert result.exit_code == 0, result.output
        scores[run_file] = json.loads(json_out.read_text(encoding="utf-8"))
    trec, ranx_json = scores.values()
    assert trec["per_query"] == ranx_json["per_query"]  # the two formats hold the same run
    return trec


def _check_export_reproduces(tmp_path, results_path, *, one_record_per_file):
    doc = json.loads(results_path.read_text(encoding="utf-8"))
    suite = doc["summary"]["suite"]
    # what results.json stores is enough to rebuild every figure of its rows
    for qid, vals in standard_metrics(JudgedRuns.from_dict(doc, str(results_path)), [6]).items():
        assert vals == pytest.approx({k: doc["queries"][qid][k] for k in vals}, abs=1e-9), qid
    chunk = _exported_figures(tmp_path, results_path, suite_only=True, level="chunk", measures=["mrr@6", "ndcg@6"])
    assert chunk["queries"] == suite["queries"]
    assert chunk["mean"]["mrr@6"] == pytest.approx(suite["chunk_mrr@6"], abs=1e-12)
    assert chunk["mean"]["ndcg@6"] == pytest.approx(suite["chunk_ndcg@6"], abs=1e-12)
    # the headline Recall/MRR/nDCG@6 are the document run's at 6 records; chunk_recall@6 counts the
    # documents of the 6 returned chunks: the whole document run
    document = _exported_figures(tmp_path, results_path, suite_only=True, level="document",
                                 measures=["recall", "recall@6", "mrr@6", "ndcg@6"], ties="expected")
    assert document["mean"]["recall"] == pytest.approx(suite["chunk_recall@6"], abs=1e-12)
    for name in ("recall@6", "mrr@6", "ndcg@6"):
        assert document["mean"][name] == pytest.approx(suite[name], abs=1e-12)
    if one_record_per_file:  # the document run has at most 6 documents when no chunk mixes records
        assert suite["recall@6"] == pytest.approx(suite["chunk_recall@6"], abs=1e-12)
    # every judged query, against its row (rows hold 10 decimals)
    chunk = _exported_figures(tmp_path, results_path, suite_only=False, level="chunk",
                              measures=["mrr@6", "ndcg@6", "mrr", "hit_rate@1", "hit_rate@3"])
    for qid, vals in chunk["per_query"].items():
        row = doc["queries"][qid]
        assert vals["mrr@6"] == pytest.approx(row["chunk_mrr@6"], abs=1e-9)
        assert vals["ndcg@6"] == pytest.approx(row["chunk_ndcg@6"], abs=1e-9)
        assert vals["mrr"] == pytest.approx(row["reciprocal_rank"], abs=1e-9)
        assert (bool(vals["hit_rate@1"]), bool(vals["hit_rate@3"])) == (row["hit@1"], row["hit@3"])
    document = _exported_figures(tmp_path, results_path, suite_only=False, level="document", measures=["recall"])
    for qid, vals in document["per_query"].items():  # the documents of all returned chunks
        assert vals["recall"] == pytest.approx(doc["queries"][qid]["chunk_recall@6"], abs=1e-9)
    return doc


@pytest.mark.parametrize("round_no", [1, 3])
def test_an_exported_run_scores_like_its_results_json(tmp_path, round_no):
    """Hash embedder: fast; round 1's chunks mix records, round 3 has one record per file."""
    from harness.stages.embedders import EmbeddingCache

    config = load_experiment(ROOT / f"experiments/round{round_no}.toml", embedder={"name": "hash"})
    result = run_experiment(config, cache=EmbeddingCache(tmp_path / "cache.sqlite"), progress=False)
    path = write_results(result, tmp_path / "results.json")
    _check_export_reproduces(tmp_path, path, one_record_per_file=round_no == 3)


@pytest.mark.slow
def test_our_round3_exported_and_scored_by_harness_eval_gives_its_figures(tmp_path):
    result = run_experiment(load_experiment(ROOT / "experiments/round3.toml"), progress=False)
    doc = _check_export_reproduces(tmp_path, write_results(result, tmp_path / "results.json"), one_record_per_file=True)
    committed = json.loads((ROOT / "reports/round3/results.json").read_text(encoding="utf-8"))["summary"]["suite"]
    for name in ("mrr@6", "ndcg@6", "recall@6", "passed"):
        assert doc["summary"]["suite"][name] == committed[name], name


def test_graded_judgments_reach_chunks_and_the_headline_ndcg():
    """A BEIR-style grade (2) stays a grade: on the record and on every chunk overlapping it."""
    from harness.evaluation.judgments import chunk_qrels, document_qrels
    from harness.inputs.layout import Query

    docs_of = {"c1": frozenset({"A"}), "c2": frozenset({"A", "B"}), "c3": frozenset({"C"})}
    queries = [Query("q", "text", {"A": 1, "B": 2})]
    assert chunk_qrels(docs_of, queries) == {"q": {"c1": 1, "c2": 2}}
    assert document_qrels(queries) == {"q": {"A": 1, "B": 2}}
    runs = judged_runs({"q": [Hit("c3", 0.9), Hit("c2", 0.8)]}, docs_of, chunk_qrels(docs_of, queries),
                       document_qrels(queries))
    # records: C, then A and B tied on c2: by id, gains 0, 1, 2 against the ideal 2, 1; expected over
    # both orders of the tie, each of A (1) and B (2) holds rank 2 or 3 half the time
    ideal = 2 + 1 / math.log2(3)
    by_id = (1 / math.log2(3) + 2 / math.log2(4)) / ideal
    assert standard_metrics(runs, [3], ties="id_order")["q"]["ndcg@3"] == pytest.approx(by_id)
    expected = (1 + 2) / 2 * (1 / math.log2(3) + 1 / math.log2(4)) / ideal
    assert standard_metrics(runs, [3])["q"]["ndcg@3"] == pytest.approx(expected)
