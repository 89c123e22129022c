"""QMD's query side (stages/expansion): the BM25 probe, extra lists fused by RRF at their own weights,
the LLM-free expansions (RM3-style terms, the results' centroid) and the LLM expansion through a chat
server on loopback, cached."""
import pytest

from harness.config import load_experiment
from harness.errors import ConfigError
from harness.stages.expansion import RankedList, parse_expansion, strong_signal
from harness.stages.fusion import FUSIONS, Legs
from harness.studies.experiment import run_experiment
from tests.chat_server import ChatServer


def test_the_probe_needs_a_high_top_score_and_a_clear_lead():
    assert strong_signal([("a", 9.0), ("b", 0.5)])  # 0.900 leads 0.333
    assert not strong_signal([("a", 5.0), ("b", 0.1)])  # 0.833 < 0.85
    assert not strong_signal([("a", 9.0), ("b", 4.0)])  # 0.900 - 0.800 < 0.15
    assert strong_signal([("a", 6.0)])  # alone: the second counts 0
    assert not strong_signal([])


def test_rrf_sums_extra_lists_at_their_own_weight():
    rrf = FUSIONS.create("rrf", {"variant": "qmd"})
    plain = Legs(vector=[("a", 0.9), ("b", 0.8)], lexical=[("b", 5.0), ("c", 4.0)])
    expanded = Legs(plain.vector, plain.lexical, extra=[RankedList([("c", 3.0), ("d", 1.0)], 1.0, "lexical", "rm3"),
                                                        RankedList([("d", 0.7)], 1.0, "vector", "centroid")])
    base = {h.id: h.score for h in rrf(plain)}
    scores = {h.id: h for h in rrf(expanded)}
    assert scores["a"].score == pytest.approx(base["a"])  # in no extra list
    # c was second in the lexical list (bonus 0.02); first in the rm3 list, its bonus becomes 0.05
    assert scores["c"].score == pytest.approx(base["c"] - 0.02 + 1.0 / 61 + 0.05)
    assert scores["d"].score == pytest.approx(1.0 / 62 + 1.0 / 61 + 0.05)
    assert scores["d"].vector_score == pytest.approx(1.0 / 61) and scores["d"].text_score == pytest.approx(1.0 / 62)


@pytest.fixture()
def offline_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))


def test_prf_adds_lists_unless_the_probe_finds_a_strong_signal(offline_cache):
    config = load_experiment("experiments/round4.toml", preset="qmd", embedder={"name": "hash"},
                             expansion={"name": "prf"})
    result = run_experiment(config, progress=False)
    frame = result.per_query
    assert {"expansion_skipped", "expansion_lists", "ms_expansion"} <= set(frame.columns)
    skipped = frame["expansion_skipped"].astype(bool)
    assert skipped.any() and (~skipped).any()
    assert (frame.loc[skipped, "expansion_lists"] == 0).all()
    assert (frame.loc[~skipped, "expansion_lists"] >= 1).all()
    no_probe = run_experiment(load_experiment("experiments/round4.toml", preset="qmd", embedder={"name": "hash"},
                                              expansion={"name": "prf", "probe": False}), progress=False)
    assert not no_probe.per_query["expansion_skipped"].astype(bool).any()


def test_expansion_needs_a_fusion_that_fuses_extra_lists(offline_cache):
    from harness.pipeline import build_stages

    config = load_experiment("experiments/round4.toml", preset="openclaw-2026.02", embedder={"name": "hash"},
                             expansion={"name": "prf"})
    with pytest.raises(ConfigError, match="cannot fuse; use fusion rrf"):
        build_stages(config, progress=False)


def test_llm_expansion_lines_are_parsed():
    reply = "lex: 美国 手机号\nvec: 怎么办美国号码\nnoise\nHYDE: 用 Tello eSIM 保号\nlex: 美国 手机号"
    assert parse_expansion(reply) == [("lex", "美国 手机号"), ("vec", "怎么办美国号码"), ("hyde", "用 Tello eSIM 保号")]


def test_llm_expansion_through_the_chat_stage_is_cached(offline_cache):
    def answer(messages):
        query = messages[-1]["content"].splitlines()[0].removeprefix("Query: ")
        return f"lex: {query} eSIM\nvec: {query}?\nhyde: a note about {query}"

    table = {"name": "llm", "probe": False}
    with ChatServer(answer=answer) as server:
        chat = {"name": "openai-compatible", "base_url": server.base_url, "model": "qwen-test"}
        config = load_experiment("experiments/round4.toml", preset="qmd", embedder={"name": "hash"},
                                 expansion=table, chat=chat)
        online = run_experiment(config, progress=False)
        asked = len(server.requests)
    assert asked == len(online.per_query) and (online.per_query["expansion_lists"] == 3).all()
    offline_chat = {**chat, "max_retries": 0}  # the server is gone: every expansion from the cache
    offline = run_experiment(load_experiment("experiments/round4.toml", preset="qmd", embedder={"name": "hash"},
                                             expansion=table, chat=offline_chat), progress=False)
    assert offline.per_query["top1_chunk"].tolist() == online.per_query["top1_chunk"].tolist()
    assert offline.per_query["expansion_terms"].tolist() == online.per_query["expansion_terms"].tolist()


def test_llm_expansion_without_a_chat_table_is_a_config_error(offline_cache):
    from harness.pipeline import build_stages

    config = load_experiment("experiments/round4.toml", preset="qmd", embedder={"name": "hash"},
                             expansion={"name": "llm"})
    with pytest.raises(ConfigError, match=r"\[chat\]"):
        build_stages(config, progress=False)
