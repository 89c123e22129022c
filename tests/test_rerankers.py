"""The reranker stage: QMD's and memory-lancedb-pro's blends on hand-worked numbers, and the `http` backend
end to end against a real reranking server on loopback (http.server in a thread, scoring by a fixed
function): request shapes, cache, retries, key hygiene, failures, and a whole run of the qmd preset."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.config import load_experiment
from harness.errors import ConfigError, RerankError
from harness.inputs.layout import project_path
from harness.stages.embedders import EmbeddingCache
from harness.stages.fusion import Hit
from harness.stages.postprocess import POSTPROCESSORS, SearchContext
from harness.stages.rerankers import (
    RERANKERS,
    CachedReranker,
    build_reranker,
    lancedb_rerank_blend,
    lancedb_rerank_floor,
    qmd_best_chunk,
    qmd_blend,
    qmd_position_weight,
)

KEY = "sk-test-secret-0123456789"


# --- the blends, hand-worked -----------------------------------------------------------------------

def test_qmd_position_aware_blend():
    assert [qmd_position_weight(r) for r in (1, 3, 4, 10, 11, 40)] == [0.75, 0.75, 0.60, 0.60, 0.40, 0.40]
    assert qmd_blend(1, 0.5) == pytest.approx(0.75 * 1 + 0.25 * 0.5)  # 0.875
    assert qmd_blend(2, 0.9) == pytest.approx(0.75 * 0.5 + 0.25 * 0.9)  # 0.6
    assert qmd_blend(4, 1.0) == pytest.approx(0.60 * 0.25 + 0.40 * 1.0)  # 0.55
    assert qmd_blend(20, 0.8) == pytest.approx(0.40 * 0.05 + 0.60 * 0.8)  # 0.5
    with pytest.raises(ValueError):
        qmd_position_weight(0)


def test_qmd_best_chunk_counts_query_terms_longer_than_two():
    chunks = ["nothing here", "tello esim plan", "esim only", "Tello ESIM and the eSIM plan"]
    assert qmd_best_chunk("Tello eSIM", chunks) == 1  # two terms; the first chunk with the most wins
    assert qmd_best_chunk("eSIM", ["a", "b"]) == 0  # no match: the first chunk
    assert qmd_best_chunk("Tello eSIM", []) == -1
    assert qmd_best_chunk("普通人逆袭 AI", ["AI 普通人", "县城会计普通人逆袭"]) == 1  # "AI" is too short
    assert qmd_best_chunk("𠀀𠀀 x", ["a", "b 𠀀𠀀"]) == 1  # an astral character counts 2 UTF-16 units


def test_lancedb_pro_blend_with_floors():
    # strong BM25 (b >= 0.75): 0.6 x 0.1 + 0.4 x 0.8 = 0.38 < floor 0.95 x 0.8 = 0.76
    assert lancedb_rerank_blend(0.8, 0.8, 0.1) == pytest.approx(0.76)
    # medium BM25 (0.6 <= b < 0.75): floor 0.9 x 0.5 = 0.45 < 0.6 x 0.9 + 0.4 x 0.5 = 0.74
    assert lancedb_rerank_blend(0.5, 0.7, 0.9) == pytest.approx(0.74)
    # no BM25 hit: floor 0.5 x fused = 0.3 > 0.6 x 0 + 0.4 x 0.6 = 0.24
    assert lancedb_rerank_blend(0.6, 0.0, 0.0) == pytest.approx(0.30)
    # not returned by the reranker: 0.8 fused = 0.64 vs floors 1.0 / 0.95 / 0.8 x fused
    assert lancedb_rerank_blend(0.8, 0.8, None) == pytest.approx(0.8)
    assert lancedb_rerank_blend(0.8, 0.65, None) == pytest.approx(0.76)
    assert lancedb_rerank_blend(0.8, 0.1, None) == pytest.approx(0.64)
    assert lancedb_rerank_floor(1.0, 0.75) == 0.95 and lancedb_rerank_floor(1.0, 0.6, returned=False) == 0.95
    assert lancedb_rerank_blend(0.9, 0.0, 2.5) == 1.0  # clamped to 1


# --- a reranking server on loopback --------------------------------------------------------------

def score_of(query: str, text: str) -> float:
    """The server's deterministic relevance: the share of the query's characters found in the text."""
    chars = [c for c in query if not c.isspace()]
    return sum(c in text for c in chars) / len(chars) if chars else 0.0


class RerankServer:
    """POST /rerank in the Cohere/Jina shape or TEI's (decided by the body), with scripted failures."""

    def __init__(self):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.fail_next: list[int] = []  # statuses to answer with before answering properly
        self.drop_index = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if server.fail_next:
                    status = server.fail_next.pop(0)
                    self.send_response(status)
                    if status == 429:
                        self.send_header("Retry-After", "0")
                    payload = json.dumps({"error": {"message": f"boom {status}"}}).encode()
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                texts = body.get("documents", body.get("texts"))
                results = [{"index": i, ("score" if "texts" in body else "relevance_score"): score_of(body["query"], t)}
                           for i, t in enumerate(texts)]
                results.sort(key=lambda r: -list(r.values())[1])  # servers answer best first
                if server.drop_index:
                    results = results[1:]
                payload = json.dumps(results if "texts" in body else {"results": results}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = RerankServer()
    yield s
    s.close()


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv("RERANK_TEST_KEY", KEY)


def make(server, **params):
    return RERANKERS.create("http", {"base_url": server.url, "model": "test-reranker", "backoff_base": 0.0,
                                     **params})


def test_cohere_shape_with_key_and_tei_shape(server, keyed):
    cohere = make(server, api_key_env="RERANK_TEST_KEY", batch_size=2)
    texts = ["美国手机号 Tello", "无关内容", "美国"]
    assert cohere.rerank("美国手机号", texts) == [score_of("美国手机号", t) for t in texts]
    assert server.requests[0] == {"query": "美国手机号", "documents": texts[:2], "top_n": 2, "model": "test-reranker"}
    assert len(server.requests) == 2  # batches of 2
    assert server.headers[0]["Authorization"] == f"Bearer {KEY}"
    tei = make(server, api="tei", model=None, params={"truncate": True})
    assert tei.rerank("美国", texts) == [score_of("美国", t) for t in texts]
    assert server.requests[-1] == {"truncate": True, "query": "美国", "texts": texts, "raw_scores": False}
    assert "Authorization" not in server.headers[-1]


def test_the_cache_scores_a_pair_once_and_keeps_float32(server, tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    cached = CachedReranker(make(server), cache)
    first = cached.rerank("美国手机号", ["美国手机号 Tello", "无关"])
    assert len(server.requests) == 1
    again = CachedReranker(make(server), EmbeddingCache(tmp_path / "cache.sqlite"))
    assert again.rerank("美国手机号", ["无关", "美国手机号 Tello"]) == first[::-1]
    assert len(server.requests) == 1 and again.stats == {"hits": 2, "computed": 0}
    assert first == [float(__import__("numpy").float32(score_of("美国手机号", "美国手机号 Tello"))), 0.0]


def test_retries_then_success_and_failures_that_stop_at_once(server, keyed, tmp_path):
    reranker = make(server, api_key_env="RERANK_TEST_KEY", max_retries=3)
    server.fail_next = [503, 429]
    assert reranker.rerank("q", ["q"]) == [1.0]
    assert reranker.stats["retries"] == 2
    server.fail_next = [401]
    with pytest.raises(RerankError) as info:
        reranker.rerank("q", ["x"])
    assert "HTTP 401" in str(info.value) and "not retried" in str(info.value) and KEY not in str(info.value)
    server.fail_next = [500] * 5
    with pytest.raises(RerankError, match="max_retries = 3"):
        reranker.rerank("q", ["y"])
    server.drop_index = True
    with pytest.raises(RerankError, match="sent 2 texts, got scores for 1"):
        reranker.rerank("q", ["a", "b"])
    server.drop_index = False
    # behind the cache: what was scored before the failure is kept, the error says so
    cached = CachedReranker(make(server, batch_size=1, max_retries=0), EmbeddingCache(tmp_path / "c.sqlite"))
    cached.rerank("q", ["a"])  # scored and kept; "b" below fails
    server.fail_next = [400]
    with pytest.raises(RerankError, match="kept in"):
        cached.rerank("q", ["a", "b"])


def test_key_hygiene_and_configuration_errors(server, keyed, monkeypatch):
    reranker = make(server, api_key_env="RERANK_TEST_KEY")
    assert KEY not in reranker.model_id and "RERANK_TEST_KEY" not in reranker.model_id
    with pytest.raises(ConfigError, match="api_key is never read from a config file"):
        make(server, api_key=KEY)
    monkeypatch.delenv("RERANK_TEST_KEY")
    with pytest.raises(ConfigError, match="RERANK_TEST_KEY is not set"):
        make(server, api_key_env="RERANK_TEST_KEY")
    with pytest.raises(ConfigError) as info:
        RERANKERS.create("http", {"base_url": f"http://user:{KEY}@127.0.0.1:1", "model": "m"})
    assert KEY not in str(info.value)
    with pytest.raises(ConfigError, match="needs a model name"):
        RERANKERS.create("http", {"base_url": server.url, "api": "jina"})
    with pytest.raises(ConfigError, match="must not set"):
        make(server, params={"documents": []})


def test_stages_without_a_reranker_fall_back_and_with_one_blend(server):
    hits = [Hit("m/a.md", 0.2), Hit("m/b.md", 0.1), Hit("m/c.md", 0.05)]
    chunks = {"m/a.md": ["无关", "也无关"], "m/b.md": ["美国手机号 Tello", "美国"], "m/c.md": ["美国"]}
    ctx = SearchContext("美国手机号", 6, 0.5, 0.5, chunk_text=lambda i: chunks[i][0],
                        document_chunks=lambda p: chunks[p])
    stage = POSTPROCESSORS.create("qmd_rerank")
    assert [h.score for h in stage(hits, ctx)] == [1.0, 0.5, 1 / 3]
    ctx.reranker = make(server)
    out = stage(hits, ctx)
    # b: rank 2, its best chunk holds the whole query (score 1): 0.75 x 0.5 + 0.25 x 1 = 0.625
    # a: rank 1, score 0: 0.75;  c: rank 3, "美国" = 2/5: 0.75/3 + 0.25 x 0.4 = 0.35
    assert [(h.id, round(h.score, 6)) for h in out] == [("m/a.md", 0.75), ("m/b.md", 0.625), ("m/c.md", 0.35)]
    assert server.requests[-1]["documents"] == ["无关", "美国手机号 Tello", "美国"]


def test_a_reranker_nobody_reads_is_refused(server):
    config = load_experiment(project_path("experiments/round3.toml"), reranker={"name": "http", "base_url": server.url,
                                                                               "model": "m"})
    from harness.pipeline import build_stages
    from harness.stages.embedders import HashEmbedder

    with pytest.raises(ConfigError, match="no postprocess stage of this configuration reranks"):
        build_stages(config, embedder=HashEmbedder(), progress=False)


def test_the_qmd_preset_end_to_end_with_a_reranker(server, tmp_path):
    from harness.pipeline import build_stages
    from harness.stages.embedders import HashEmbedder
    from harness.studies.experiment import run_experiment

    table = {"name": "http", "base_url": server.url, "model": "m", "backoff_base": 0.0}
    config = load_experiment(project_path("experiments/round3.toml"), preset="qmd", reranker=table)
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    stages = build_stages(config, embedder=HashEmbedder(), cache=cache, progress=False)
    result = run_experiment(config, stages=stages)
    assert server.requests, "the reranker was asked"
    t3 = result.hits["T3"]
    assert t3 and all("memory/" in h["chunk"] and ":" not in h["chunk"] for h in t3)  # files, not chunks
    assert t3[0]["score"] != 1.0  # blended, not 1/rank
    asked = len(server.requests)
    stages = build_stages(config, embedder=HashEmbedder(), cache=EmbeddingCache(tmp_path / "cache.sqlite"),
                          progress=False)
    assert run_experiment(config, stages=stages).hits == result.hits and len(server.requests) == asked
    assert build_reranker(table, "[reranker]", cache).model_id.startswith("rerank-cohere:127.0.0.1:")
