"""Post-processing stages: worked examples of the formulas in SPEC.md sections 2-4 and properties
every stage keeps (no new chunks, no mutation, finite scores)."""
from __future__ import annotations

import copy
import math
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config import resolve
from harness.errors import ConfigError
from harness.pipeline import Stages
from harness.stages.fusion import FUSIONS, Hit, Legs, rank_hits
from harness.stages.postprocess import (
    MMR,
    POSTPROCESSORS,
    CosineDiversity,
    CosineRerank,
    HardMinScore,
    ImportanceWeight,
    LengthNorm,
    MinScore,
    PostProcessor,
    RecencyBoost,
    ReciprocalRank,
    SearchContext,
    TemporalDecay,
    TimeDecay,
    ascii_tokens,
    cjk_tokens,
    jaccard,
    memory_date,
)

NOW = "2026-03-31"


def hit(cid, score, keyword=False):
    return Hit(cid, score, keyword_hit=keyword)


def context(texts=None, paths=None, vectors=None, query_vector=None, now=NOW, max_results=6, tw=0.3):
    texts, paths, vectors = texts or {}, paths or {}, vectors or {}
    return SearchContext("q", max_results, 1 - tw, tw,
                         chunk_text=lambda cid: texts.get(cid, ""),
                         chunk_path=lambda cid: paths.get(cid, cid),
                         chunk_vector=lambda cid: vectors.get(cid),
                         query_vector=query_vector, now=now)


def scores(hits):
    return [(h.id, h.score) for h in hits]


# --- SearchContext ----------------------------------------------------------------------------------

def test_search_context_keeps_its_positional_constructor():
    ctx = SearchContext("query", 6, 0.7, 0.3)
    assert (ctx.query, ctx.max_results, ctx.vector_weight, ctx.text_weight) == ("query", 6, 0.7, 0.3)
    assert ctx.chunk_text is None and ctx.now is None


@pytest.mark.parametrize("value", ["2026-03-31", date(2026, 3, 31), datetime(2026, 3, 31),
                                   datetime(2026, 3, 31, 8, tzinfo=timezone(timedelta(hours=8)))])
def test_now_accepts_dates_datetimes_and_iso_strings(value):
    assert SearchContext("q", 6, 0.7, 0.3, now=value).now == datetime(2026, 3, 31, tzinfo=timezone.utc)


def test_bad_now_and_missing_lookups_are_clear_errors():
    with pytest.raises(ValueError, match="SearchContext.now"):
        SearchContext("q", 6, 0.7, 0.3, now="last tuesday")
    with pytest.raises(ValueError, match="'mmr' needs SearchContext.chunk_text"):
        MMR()([hit("a", 0.9), hit("b", 0.8)], SearchContext("q", 6, 0.7, 0.3))
    with pytest.raises(ConfigError, match=r"'temporal_decay' ages dated memories .* \[evaluation\] now"):
        TemporalDecay()([hit("a", 0.9)], SearchContext("q", 6, 0.7, 0.3, chunk_path=lambda c: "memory/2026-01-02.md"))
    # nothing dated: no reference time needed
    assert TemporalDecay()([hit("a", 0.9)], SearchContext("q", 6, 0.7, 0.3, chunk_path=str))[0].score == 0.9


def test_unknown_stage_parameter_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"^\[postprocess\] lamda: unknown key for postprocess stage 'mmr'; "
                                          r"known: lambda, tokens, snippet_chars$"):
        POSTPROCESSORS.create("mmr", lamda=0.5)
    assert POSTPROCESSORS.create("mmr", **{"lambda": 0.5}).lambda_ == 0.5  # OpenClaw's key, a Python keyword
    with pytest.raises(ConfigError, match=r"lambda: Input should be less than or equal to 1 \(got 3\)"):
        POSTPROCESSORS.create("mmr", {"lambda": 3})  # openclaw.json's schema refuses it too (issue 30)
    with pytest.raises(ConfigError, match=r"\[postprocess\] tokens: Input should be 'cjk' or 'ascii' \(got 'jieba'\)"):
        POSTPROCESSORS.create("mmr", tokens="jieba")


@pytest.mark.parametrize(("name", "params", "message"), [
    ("mmr", {"lambda": float("nan")}, r"lambda: Input should be a finite number"),
    ("mmr", {"snippet_chars": 0}, r"snippet_chars: Input should be greater than 0"),
    ("min_score", {"keyword_fallback": "always"}, r"keyword_fallback: Input should be 'relaxed', 'fill' or 'none'"),
    ("min_score", {"min_score": "0.35"}, r"min_score: Input should be a valid number"),
    ("temporal_decay", {"half_life_days": -1}, r"half_life_days: Input should be greater than or equal to 0"),
    ("temporal_decay", {"now": "last tuesday"}, r"now: not an ISO-8601 date or date-time \(got 'last tuesday'\)"),
    ("cosine_rerank", {"weight": 1.5}, r"weight: Input should be less than or equal to 1"),
    ("cosine_rerank", {"window_factor": 0}, r"window_factor: Input should be greater than or equal to 1"),
    ("importance_weight", {"importance": -0.1}, r"importance: Input should be greater than or equal to 0"),
    ("time_decay", {"half_life_days": float("inf")}, r"half_life_days: Input should be a finite number"),
])
def test_bad_parameters_name_the_table_and_key(name, params, message):
    with pytest.raises(ConfigError, match=r"^x\.toml \[postprocess 2\] " + message):
        POSTPROCESSORS.create(name, params, where="x.toml [postprocess 2]")


def test_stage_now_accepts_toml_dates_and_iso_strings():
    midnight = datetime(2026, 3, 31, tzinfo=timezone.utc)
    for value in ("2026-03-31", date(2026, 3, 31), datetime(2026, 3, 31)):
        assert POSTPROCESSORS.create("time_decay", now=value).now == midnight
    assert POSTPROCESSORS.create("recency_boost").now is None  # the context's `now` is used


def test_every_stage_documents_its_parameters_and_has_a_schema():
    for name in POSTPROCESSORS.names():
        assert POSTPROCESSORS.doc(name)
        assert all(p.doc for p in POSTPROCESSORS.parameters(name)), name
        assert set(POSTPROCESSORS.json_schema(name)["properties"]) == \
            {"name", *(p.name for p in POSTPROCESSORS.parameters(name))}
    assert "lambda" in POSTPROCESSORS.json_schema("mmr")["properties"]


def test_every_stage_states_its_pass_threshold():
    """The score a query's top hit must reach: minScore for min_score, 0.0 for every other stage
    (hard_min_score filters before time_decay lowers the survivors, so it sets no bar either)."""
    for name in POSTPROCESSORS.names():
        stage = POSTPROCESSORS.create(name)
        assert isinstance(stage, PostProcessor)
        assert stage.pass_threshold == (0.35 if name == "min_score" else 0.0), name
    assert POSTPROCESSORS.create("min_score", min_score=0.5).pass_threshold == 0.5
    assert POSTPROCESSORS.create("hard_min_score", threshold=0.5).pass_threshold == 0.0


def test_a_runs_pass_threshold_is_the_highest_its_stages_state():
    def stages(*post):
        return Stages(resolve({"preset": "openclaw-2026.08"}), None, None, None, None, list(post), 6, 24)

    assert stages().pass_threshold == 0.0
    assert stages(MMR(), MinScore(0.4)).pass_threshold == 0.4
    assert stages(HardMinScore(0.5), TimeDecay()).pass_threshold == 0.0
    assert stages(MinScore(0.2), ReciprocalRank(), MinScore(0.3)).pass_threshold == 0.3


# --- OpenClaw minScore + maxResults (SPEC.md section 2) ---------------------------------------------

def test_min_score_plain_threshold_and_max_results():
    hits = [hit(c, s) for c, s in [("a", 0.9), ("b", 0.5), ("c", 0.35), ("d", 0.3499)]]
    assert [h.id for h in MinScore(0.35, "none")(hits, context(max_results=2))] == ["a", "b"]
    assert [h.id for h in MinScore(0.35, "none")(hits, context())] == ["a", "b", "c"]


def test_min_score_relaxed_keyword_fallback():
    """Nothing clears 0.35, but keyword hits scoring >= min(0.35, tw = 0.3) are kept."""
    hits = [hit("v", 0.33), hit("k1", 0.3, keyword=True), hit("k2", 0.2, keyword=True)]
    assert [h.id for h in MinScore(0.35, "relaxed")(hits, context(tw=0.3))] == ["k1"]
    assert MinScore(0.35, "none")(hits, context()) == []
    # the fallback only applies when nothing passes
    assert [h.id for h in MinScore(0.35, "relaxed")([hit("v", 0.4)] + hits, context())] == ["v"]


def test_min_score_fill_keyword_fallback():
    hits = [hit("a", 0.8), hit("v", 0.33), hit("k1", 0.2, keyword=True), hit("k2", 0.1, keyword=True)]
    assert [h.id for h in MinScore(0.35, "fill")(hits, context(max_results=2))] == ["a", "k1"]
    assert [h.id for h in MinScore(0.35, "fill")(hits, context(max_results=6))] == ["a", "k1", "k2"]


# --- OpenClaw MMR -----------------------------------------------------------------------------------

def test_mmr_tokenizers():
    assert cjk_tokens("我喜欢hello你好") == {"hello", "我", "喜", "欢", "你", "好", "我喜", "喜欢", "你好"}
    assert "欢你" not in cjk_tokens("我喜欢hello你好")  # bigrams only from adjacent characters
    assert cjk_tokens("Tello eSIM 美国") == {"tello", "esim", "美", "国", "美国"}
    assert ascii_tokens("Tello eSIM 美国手机号") == {"tello", "esim"}
    assert ascii_tokens("普通人逆袭") == frozenset()
    assert cjk_tokens("カタカナ한글") >= {"カ", "タカ", "한", "한글"}


def test_jaccard_rules():
    assert jaccard(frozenset(), frozenset()) == 1.0  # two empty sets count as identical
    assert jaccard(frozenset(), frozenset({"a"})) == 0.0
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)


# A: Chinese, top; B: Chinese, unrelated to A; C: English
MMR_TEXTS = {"A": "普通人逆袭案例", "B": "海外银行开户流程", "C": "VPS memory OOM fix"}
MMR_HITS = [hit("A", 0.9), hit("B", 0.84), hit("C", 0.8)]


def test_mmr_cjk_tokens_keep_an_unrelated_chinese_result_in_place():
    # relevance (1, 0.4, 0); after A: B = 0.7*0.4 - 0.3*0 = 0.28 > C = 0
    out = MMR(0.7, "cjk")(MMR_HITS, context(texts=MMR_TEXTS))
    assert [h.id for h in out] == ["A", "B", "C"]
    assert scores(out) == scores(MMR_HITS)  # MMR reorders, never rescores


def test_mmr_ascii_tokens_reproduce_the_cjk_bug():
    # ASCII tokens: A and B are both empty sets -> Jaccard 1 -> B = 0.28 - 0.3 = -0.02 < C = 0
    out = MMR(0.7, "ascii")(MMR_HITS, context(texts=MMR_TEXTS))
    assert [h.id for h in out] == ["A", "C", "B"]


def test_mmr_demotes_a_near_duplicate():
    texts = {"A": "美国手机号 Tello eSIM 虚拟号码", "A2": "美国手机号 Tello eSIM 虚拟号码。", "C": "三层提炼 方法"}
    hits = [hit("A", 0.9), hit("A2", 0.89), hit("C", 0.85)]
    # "。" is no token, so A2's token set equals A's (Jaccard 1).  Relevance (1, 0.8, 0); after A:
    # lambda 0.7: A2 = 0.56 - 0.3 = 0.26 > C = 0 - 0.3 * 0 = 0, so the duplicate survives ...
    assert [h.id for h in MMR(0.7, "cjk")(hits, context(texts=texts))] == ["A", "A2", "C"]
    # ... and at lambda 0.5: A2 = 0.4 - 0.5 = -0.1 < C = 0
    assert [h.id for h in MMR(0.5, "cjk")(hits, context(texts=texts))] == ["A", "C", "A2"]


def test_mmr_uses_only_the_700_character_snippet():
    same_start = "记录" * 350  # 700 characters
    texts = {"A": same_start + "甲乙丙", "B": same_start + "丁戊己", "C": "完全不同的内容"}
    hits = [hit("A", 0.9), hit("B", 0.85), hit("C", 0.8)]
    # B's snippet equals A's: B = 0.7*0.5 - 0.3*1 = 0.05 > C = 0 - 0.3*J(C, A) (J = 0) = 0
    assert [h.id for h in MMR(0.7)(hits, context(texts=texts))] == ["A", "B", "C"]
    # lambda 0.55: on the snippet B = 0.275 - 0.45 < 0 = C; on the whole text (Jaccard 4/16 = 0.25)
    # B = 0.275 - 0.1125 > 0 and would stay second
    assert [h.id for h in MMR(0.55)(hits, context(texts=texts))] == ["A", "C", "B"]
    assert [h.id for h in MMR(0.55, snippet_chars=2000)(hits, context(texts=texts))][1] == "B"


def test_mmr_equal_scores_and_lambda_one():
    texts = {"a": "alpha", "b": "alpha", "c": "gamma"}
    tied = [hit("a", 0.5), hit("b", 0.5), hit("c", 0.5)]  # relevance all 1; b duplicates a
    assert [h.id for h in MMR(0.7)(tied, context(texts=texts))] == ["a", "c", "b"]
    unsorted = [hit("b", 0.2), hit("a", 0.9)]
    assert [h.id for h in MMR(1.0)(unsorted, context(texts=texts))] == ["a", "b"]


# --- OpenClaw temporal decay ------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "expected"), [
    ("memory/2026-03-01.md", datetime(2026, 3, 1, tzinfo=timezone.utc)),
    ("memory/2026-03/2026-03-01.md", datetime(2026, 3, 1, tzinfo=timezone.utc)),
    ("./memory/2026-03-01.md", datetime(2026, 3, 1, tzinfo=timezone.utc)),
    ("memory\\2026-03-01.md", datetime(2026, 3, 1, tzinfo=timezone.utc)),
    ("memory/2026-02-30.md", None),  # no such day
    ("memory/2026-03-01-notes.md", None),
    ("notes/2026-03-01.md", None),
    ("MEMORY.md", None),
    ("memory/rec_T4.md", None),
])
def test_memory_date_from_path(path, expected):
    assert memory_date(path) == expected


def test_temporal_decay_thirty_day_half_life():
    paths = {"old": "memory/2026-03-01.md", "mid": "memory/2026-03-16.md", "ever": "MEMORY.md",
             "rec": "memory/rec_T4.md", "future": "memory/2026-04-10.md"}
    hits = [hit("old", 0.8), hit("mid", 0.6), hit("ever", 0.5), hit("rec", 0.4), hit("future", 0.3)]
    out = dict(scores(TemporalDecay()(hits, context(paths=paths))))
    assert out["old"] == pytest.approx(0.4)  # 30 days: x 0.5
    assert out["mid"] == pytest.approx(0.6 * 2 ** -0.5)  # 15 days
    assert (out["ever"], out["rec"]) == (0.5, 0.4)  # evergreen
    assert out["future"] == 0.3  # age clamped at 0


def test_temporal_decay_re_ranks_and_takes_now_from_its_parameter():
    paths = {"old": "memory/2026-01-30.md", "new": "memory/2026-03-30.md"}
    hits = [hit("old", 0.8), hit("new", 0.5)]
    ctx = context(paths=paths, now=None)
    out = TemporalDecay(now="2026-03-31")(hits, ctx)  # old: 60 days -> x 0.25 = 0.2
    assert [h.id for h in out] == ["new", "old"]
    assert out[1].score == pytest.approx(0.2)
    assert TemporalDecay(half_life_days=0)(hits, ctx) == hits  # off


# --- QMD: 1/rank ------------------------------------------------------------------------------------

def test_reciprocal_rank_after_qmd_rrf():
    legs = Legs([("a", 0.9), ("b", 0.8), ("c", 0.7)], [("b", 9.0)])
    fused = FUSIONS.create("rrf", variant="qmd")(legs)
    out = ReciprocalRank()(fused, context())
    assert [h.id for h in out] == [h.id for h in fused] == ["b", "a", "c"]
    assert [h.score for h in out] == [1.0, 0.5, pytest.approx(1 / 3)]
    assert out[0].text_score == fused[0].text_score  # leg scores are kept for reports
    # a minScore of 0.35 after 1/rank keeps exactly the first two
    assert [h.id for h in MinScore(0.35, "none")(out, context())] == ["b", "a"]


# --- memory-lancedb-pro (SPEC.md section 4) ---------------------------------------------------------

LANCE_PATHS = {"today": "memory/2026-03-31.md", "d14": "memory/2026-03-17.md", "d60": "memory/2026-01-30.md",
               "undated": "memory/rec_T4.md"}


def test_recency_boost():
    hits = [hit("d60", 0.6), hit("d14", 0.5), hit("today", 0.95), hit("undated", 0.2)]
    out = dict(scores(RecencyBoost()(hits, context(paths=LANCE_PATHS))))
    assert out["today"] == 1.0  # 0.95 + 0.1, capped at 1
    assert out["d14"] == pytest.approx(0.5 + 0.1 / math.e)  # exp(-14/14)
    assert out["d60"] == pytest.approx(0.6 + 0.1 * math.exp(-60 / 14))
    assert out["undated"] == pytest.approx(0.3)  # no timestamp -> treated as now, as the code does


def test_importance_weight_default():
    out = ImportanceWeight()([hit("a", 0.5), hit("b", 0.38)], context())
    assert scores(out) == [("a", pytest.approx(0.455)), ("b", pytest.approx(0.3458))]
    assert ImportanceWeight(1.0)([hit("a", 0.5)], context())[0].score == 0.5


def test_length_normalisation():
    texts = {"short": "x" * 300, "anchor": "x" * 500, "k1": "字" * 1000, "k2": "x" * 2000}
    hits = [hit(c, 0.6) for c in texts]
    out = dict(scores(LengthNorm()(hits, context(texts=texts))))
    assert out == pytest.approx({"short": 0.6, "anchor": 0.6, "k1": 0.4, "k2": 0.3})
    assert [h.id for h in LengthNorm()(hits, context(texts=texts))] == ["anchor", "short", "k1", "k2"]


def test_hard_min_score_drops_without_cutting():
    hits = [hit(f"h{i}", 0.9 - i * 0.01) for i in range(10)] + [hit("eq", 0.35), hit("low", 0.3499)]
    out = HardMinScore()(hits, context(max_results=3))
    assert len(out) == 11 and out[-1].id == "eq"


def test_time_decay_sixty_days():
    hits = [hit("d60", 0.8), hit("today", 0.6), hit("undated", 0.5)]
    out = dict(scores(TimeDecay()(hits, context(paths=LANCE_PATHS))))
    assert out["d60"] == pytest.approx(0.8 * (0.5 + 0.5 / math.e))  # x 0.684
    assert (out["today"], out["undated"]) == (0.6, 0.5)
    very_old = TimeDecay(now="2036-01-01")([hit("d60", 0.8)], context(paths=LANCE_PATHS))
    assert very_old[0].score == pytest.approx(0.4, abs=1e-6)  # never below half


def test_cosine_diversity_moves_near_duplicates_to_the_end():
    vectors = {"a": [1.0, 0.0], "a2": [0.99, 0.141], "b": [0.0, 1.0], "b2": [0.6, 0.8], "novec": None}
    hits = [hit("a", 0.9), hit("a2", 0.8), hit("novec", 0.75), hit("b", 0.7), hit("b2", 0.6)]
    out = CosineDiversity()(hits, context(vectors=vectors))
    # a2 ~ a (cos 0.99) deferred; b2 vs b cos 0.8 <= 0.85 kept; a chunk without a vector is kept
    assert [h.id for h in out] == ["a", "novec", "b", "b2", "a2"]
    assert scores(sorted(out, key=lambda h: h.id)) == scores(sorted(hits, key=lambda h: h.id))


def test_cosine_diversity_threshold_is_strict():
    vectors = {"a": [1.0, 0.0], "b": [3.0, 4.0]}  # cosine exactly 3/5
    hits = [hit("a", 0.9), hit("b", 0.8), hit("c", 0.7)]
    assert [h.id for h in CosineDiversity(0.6)(hits, context(vectors=vectors))] == ["a", "b", "c"]
    assert [h.id for h in CosineDiversity(0.59)(hits, context(vectors=vectors))] == ["a", "c", "b"]


def test_cosine_rerank_window_and_blend():
    vectors = {f"h{i}": [1.0, 0.0] if i % 2 else [0.0, 1.0] for i in range(6)}
    hits = [hit(f"h{i}", 0.9 - 0.1 * i) for i in range(6)]
    out = CosineRerank()(hits, context(vectors=vectors, query_vector=[1.0, 0.0], max_results=2))
    assert len(out) == 4  # 2 x limit
    assert dict(scores(out)) == pytest.approx({"h0": 0.63, "h1": 0.56 + 0.3, "h2": 0.49, "h3": 0.42 + 0.3})
    assert [h.id for h in out] == ["h1", "h3", "h0", "h2"]


def test_lancedb_pro_pipeline_in_code_order():
    """Fusion then every stage, by hand: two chunks, one a long old daily log with a strong keyword
    hit, one a short undated record found by the vector leg only."""
    legs = Legs([("rec", 0.8), ("log", 0.3)], [("log", 15.0)])
    texts = {"rec": "r" * 400, "log": "l" * 1000}
    paths = {"rec": "memory/rec_T4.md", "log": "memory/2026-01-30.md"}
    vectors = {"rec": [0.8, 0.6], "log": [0.3, math.sqrt(1 - 0.09)]}
    ctx = context(texts=texts, paths=paths, vectors=vectors, query_vector=[1.0, 0.0], max_results=6)
    hits = FUSIONS.create("lancedb-pro")(legs)
    b = 1 / (1 + math.exp(-3))
    expected = {"rec": 0.7 / 1.2, "log": 0.92 * b}
    assert dict(scores(hits)) == pytest.approx(expected)
    stages = [POSTPROCESSORS.create(n) for n in ("cosine_rerank", "recency_boost", "importance_weight",
                                                  "length_norm", "hard_min_score", "time_decay",
                                                  "cosine_diversity")]
    for stage in stages:
        hits = stage(hits, ctx)
    rec = (0.7 * expected["rec"] + 0.3 * 0.8 + 0.1) * 0.91  # undated: age 0, no length penalty
    log = (0.7 * expected["log"] + 0.3 * 0.3 + 0.1 * math.exp(-60 / 14)) * 0.91 / 1.5 * (0.5 + 0.5 / math.e)
    assert dict(scores(hits)) == pytest.approx({"rec": rec, "log": log})
    assert [h.id for h in hits] == ["rec", "log"]


# --- properties of every stage ----------------------------------------------------------------------

IDS = [f"c{i}" for i in range(8)]
PROPERTY_TEXTS = {c: t for c, t in zip(IDS, ["普通人逆袭", "普通人逆袭。", "Tello eSIM 美国手机号", "", "x" * 1500,
                                              "海外开户 N26", "VPS内存OOM", "三层提炼"])}
PROPERTY_PATHS = {c: p for c, p in zip(IDS, ["memory/2026-03-01.md", "MEMORY.md", "memory/2026-03-30.md",
                                              "memory/rec_1.md", "memory/2025-12-01.md", "memory/x.md",
                                              "memory/2026-02-28.md", "memory/2026-03-31.md"])}
PROPERTY_VECTORS = {c: [math.cos(i), math.sin(i), 0.1 * i] for i, c in enumerate(IDS)}
PROPERTY_VECTORS["c3"] = None
ALL_STAGES = [
    MinScore(), MinScore(0.2, "fill"), MMR(), MMR(tokens="ascii"), MMR(0.0), TemporalDecay(), ReciprocalRank(),
    CosineRerank(), RecencyBoost(), ImportanceWeight(), LengthNorm(), HardMinScore(), TimeDecay(), CosineDiversity(),
]
RE_RANKING = (MinScore, TemporalDecay, CosineRerank, RecencyBoost, ImportanceWeight, LengthNorm, HardMinScore,
              TimeDecay)

hit_lists = st.dictionaries(st.sampled_from(IDS), st.tuples(st.floats(0.0, 1.0), st.booleans()),
                            max_size=len(IDS)).map(
    lambda d: rank_hits([Hit(c, s, keyword_hit=k) for c, (s, k) in d.items()]))


@pytest.mark.parametrize("stage", ALL_STAGES, ids=lambda s: type(s).__name__)
@settings(max_examples=50, deadline=None)
@given(hits=hit_lists, max_results=st.integers(1, 8))
def test_stages_add_nothing_mutate_nothing_and_stay_finite(stage, hits, max_results):
    ctx = context(texts=PROPERTY_TEXTS, paths=PROPERTY_PATHS, vectors=PROPERTY_VECTORS,
                  query_vector=[1.0, 0.0, 0.0], max_results=max_results)
    before = copy.deepcopy(hits)
    out = stage(hits, ctx)
    assert hits == before
    ids = [h.id for h in out]
    assert len(ids) == len(set(ids)) and set(ids) <= {h.id for h in hits}
    assert all(math.isfinite(h.score) for h in out)
    if isinstance(stage, RE_RANKING):
        assert out == rank_hits(out)
    if isinstance(stage, (MMR, CosineDiversity, ReciprocalRank, TemporalDecay, RecencyBoost, ImportanceWeight,
                          LengthNorm, TimeDecay)):
        assert len(out) == len(hits)
    if isinstance(stage, MMR) and hits:
        assert out[0] == hits[0]  # the top hit is always picked first
