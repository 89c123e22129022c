"""The scale experiment: synthetic corpus, exponent fit, the new vector backends against exact search,
the memory measurement, and a small end-to-end run."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from harness.errors import ConfigError
from harness.reporting.scale import write_scale_report
from harness.stages.vector import VECTOR_BACKENDS, NumpyIndex, VectorIndex, unit_rows
from harness.studies import scale
from harness.studies.scale.corpus import _LATIN_WORD

NEW_EXACT = ("sqlite-vec-l2", "numpy-colmajor")
QUANTISED = ("sqlite-vec-int8", "sqlite-vec-bit")


@pytest.fixture(scope="module")
def vocab() -> scale.Vocabulary:
    return scale.build_vocabulary(isolate=False)


# --- text ---------------------------------------------------------------------------------------


def test_vocabulary_classifies_words_and_marks():
    words = {"a": ["我们", "用", "Python", "，", "写", "n8n", "。", "(", "AI化"]}
    vocab = scale.vocabulary_from_texts(["a"], lambda text: words[text])
    assert set(vocab.han) == {"我们", "用", "写"}
    assert set(vocab.latin) == {"Python", "n8n"}
    assert vocab.latin_share == pytest.approx(2 / 5)
    assert vocab.clause_rate == pytest.approx(1 / 5) and vocab.sentence_rate == pytest.approx(1 / 5)


def test_vocabulary_comes_from_king78(vocab):
    assert len(vocab.han) > 1000 and len(vocab.latin) > 100
    assert "内存" in vocab.han and "Python" in vocab.latin
    assert 0.05 < vocab.latin_share < 0.5
    assert list(vocab.han_counts) == sorted(vocab.han_counts, reverse=True)


def test_synthetic_text_is_deterministic(vocab):
    a = scale.synthetic_texts(300, vocab, seed=3)
    b = scale.synthetic_texts(300, vocab, seed=3)
    c = scale.synthetic_texts(300, vocab, seed=4)
    assert a.texts == b.texts and a.words == b.words
    assert a.texts != c.texts
    assert scale.lexical_queries(a, vocab, 10, seed=3) == scale.lexical_queries(b, vocab, 10, seed=3)


def test_synthetic_text_keeps_king78_proportions(vocab):
    corpus = scale.synthetic_texts(3000, vocab, seed=0, mean_chars=160)
    assert len(corpus.texts) == 3000
    lengths = np.array([len(t) for t in corpus.texts])
    assert 140 < lengths.mean() < 180 and lengths.min() >= 60
    words = [w for doc in corpus.words for w in doc]
    latin_share = sum(1 for w in words if _LATIN_WORD.fullmatch(w)) / len(words)
    assert latin_share == pytest.approx(vocab.latin_share, abs=0.02)
    generated, source = scale.script_mix("".join(corpus.texts)), vocab.source_mix
    assert generated["cjk"] == pytest.approx(source["cjk"], abs=0.05)
    assert generated["latin"] == pytest.approx(source["latin"], abs=0.05)
    # Chinese runs without spaces, Latin terms space-separated, as in king78
    assert any(" Python " in t or t.startswith("Python ") for t in corpus.texts)


def test_lexical_queries_come_from_one_chunk(vocab):
    corpus = scale.synthetic_texts(200, vocab, seed=1)
    stop = set(vocab.han[:30])
    for query in scale.lexical_queries(corpus, vocab, 20, seed=1):
        assert query.strip() and not any(w in query.split() for w in stop)


# --- vectors ------------------------------------------------------------------------------------


def test_synthetic_vectors_are_deterministic_unit_vectors():
    a = scale.synthetic_vectors(500, 384, seed=1)
    assert a.shape == (500, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1, atol=1e-5)
    assert np.array_equal(a, scale.synthetic_vectors(500, 384, seed=1))
    assert not np.array_equal(a, scale.synthetic_vectors(500, 384, seed=2))


def test_synthetic_vectors_have_the_requested_neighbourhoods():
    v = scale.synthetic_vectors(4000, 384, seed=0, topic_cos=0.4, subtopic_cos=0.7)
    q = scale.query_vectors(v, 20, seed=0, query_cos=0.85)
    sims = q @ v.T
    assert np.median(sims.max(axis=1)) == pytest.approx(0.85, abs=0.05)
    assert np.median(np.sort(sims, axis=1)[:, -5]) == pytest.approx(0.85 * 0.7, abs=0.08)  # sub-topic mates
    assert abs(float(np.median(sims))) < 0.1  # unrelated chunks
    iso = scale.synthetic_vectors(2000, 384, seed=0, topic_cos=0.0, subtopic_cos=0.0)
    assert np.sort(iso @ iso[0])[-2] < 0.3
    with pytest.raises(ValueError):
        scale.synthetic_vectors(10, 8, topic_cos=0.8, subtopic_cos=0.5)


@pytest.fixture(scope="module")
def small_vectors():
    vectors = scale.synthetic_vectors(3000, 384, seed=7)
    ids = [f"c{i:05d}" for i in range(len(vectors))]
    queries = scale.query_vectors(vectors, 30, seed=7)
    exact = NumpyIndex(dim=384)
    exact.add(ids, vectors)
    return ids, vectors, queries, [exact.search(q, 10) for q in queries]


@pytest.mark.parametrize("name", NEW_EXACT)
def test_new_exact_backends_agree_with_numpy(name, small_vectors):
    ids, vectors, queries, truth = small_vectors
    index = VECTOR_BACKENDS.create(name, dim=384)
    index.add(ids, vectors * 3.0)  # not unit length: the score must still be the cosine
    assert index.exact
    for q, expected in zip(queries, truth):
        hits = index.search(q * 0.5, 10)
        assert [h[0] for h in hits] == [h[0] for h in expected]
        assert np.allclose([h[1] for h in hits], [h[1] for h in expected], atol=1e-5)


@pytest.mark.parametrize("name", QUANTISED)
def test_quantised_backends_recall_and_rescore_exactly(name, small_vectors):
    ids, vectors, queries, truth = small_vectors
    index = VECTOR_BACKENDS.create(name, dim=384)
    index.add(ids, vectors)
    assert not index.exact and index.oversample >= 1
    found = [index.search(q, 10) for q in queries]
    recall = scale.recall_at_k([[h[0] for h in f] for f in found], [[h[0] for h in t] for t in truth])
    assert recall >= 0.9
    by_id = dict(zip(ids, unit_rows(vectors)))
    for q, hits in zip(queries, found):
        assert len(hits) == 10
        # re-scored from the float vectors: every score is the exact cosine
        assert np.allclose([s for _, s in hits], [float(by_id[cid] @ unit_rows(q)) for cid, _ in hits], atol=1e-5)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_quantised_recall_grows_with_oversample(small_vectors):
    ids, vectors, queries, truth = small_vectors
    recalls = []
    for oversample in (1, 16):
        index = VECTOR_BACKENDS.create("sqlite-vec-bit", dim=384, oversample=oversample)
        index.add(ids, vectors)
        recalls.append(scale.recall_at_k([[h[0] for h in index.search(q, 10)] for q in queries],
                                         [[h[0] for h in t] for t in truth]))
    assert recalls[0] < recalls[1]


@pytest.mark.parametrize("name", NEW_EXACT + QUANTISED)
def test_ties_break_by_id(name):
    rng = np.random.default_rng(0)
    base = unit_rows(rng.standard_normal(16, dtype=np.float32))
    others = unit_rows(rng.standard_normal((20, 16), dtype=np.float32))
    index = VECTOR_BACKENDS.create(name, dim=16)
    index.add(["d", "b", "c", "a"], np.stack([base] * 4))
    index.add([f"x{i:02d}" for i in range(20)], others)
    hits = index.search(base, 3)
    assert [h[0] for h in hits] == ["a", "b", "c"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert index.search(base, 0) == []


def test_quantised_backend_rejects_bad_parameters():
    with pytest.raises(ConfigError, match=r"^\[vector\] oversample: Input should be greater than or equal to 1 \(got 0\)$"):
        VECTOR_BACKENDS.create("sqlite-vec-int8", dim=8, oversample=0)
    with pytest.raises(ConfigError, match=r"^\[vector\]: dim cannot be set in a configuration file$"):
        VECTOR_BACKENDS.create("numpy", {"dim": 8})
    with pytest.raises(ValueError, match="expected 2 vectors of dim 8"):
        VECTOR_BACKENDS.create("sqlite-vec-bit", dim=8).add(["a", "b"], np.ones((2, 4)))


@pytest.mark.parametrize("name", sorted(VECTOR_BACKENDS.names()))
def test_every_backend_states_the_protocol_and_its_schema(name):
    index = VECTOR_BACKENDS.create(name, dim=16)
    assert isinstance(index, VectorIndex) and index.scan_bytes_per_vector > 0
    assert index.exact == (name not in QUANTISED) and index.uses_blas == name.startswith("numpy")
    schema = VECTOR_BACKENDS.json_schema(name)
    assert not {"dim", "conn"} & set(schema["properties"])  # runtime arguments, not configuration
    assert ("oversample" in schema["properties"]) == (name in QUANTISED)


# --- fitting, specs, memory -----------------------------------------------------------------------


def test_fit_exponent_recovers_the_slope():
    rng = np.random.default_rng(0)
    sizes = [1_000, 3_000, 10_000, 30_000, 100_000]
    for slope in (0.5, 1.0, 1.3):
        times = [2e-6 * n ** slope * math.exp(rng.normal(0, 0.03)) for n in sizes]
        assert scale.fit_exponent(sizes, times) == pytest.approx(slope, abs=0.05)
    assert scale.fit_exponent([1_000, 10_000], [1.0, 10.0]) == pytest.approx(1.0)
    assert scale.fit_exponent([1_000], [1.0]) is None
    assert scale.fit_exponent([1_000, 10_000], [1.0, 0.0]) is None  # a zero cannot be on a log scale


def test_default_specs_skip_unregistered_names_with_a_message():
    specs, messages = scale.default_specs(vector=["sqlite-vec", "no-such-index"], tokenizers=["unicode61"],
                                          lexical=["fts5", "no-such-bm25"])
    assert [s.label for s in specs] == ["sqlite-vec", "fts5/unicode61"]
    assert any("no-such-index" in m for m in messages) and any("no-such-bm25" in m for m in messages)


def test_blas_backends_also_run_on_one_thread():
    specs, _ = scale.default_specs(vector=["numpy", "sqlite-vec"], lexical=[])
    assert [s.label for s in specs] == ["numpy", "numpy [1 BLAS thread]", "sqlite-vec"]


def test_peak_memory_sees_the_index(vocab):
    corpus = scale.make_corpus(20_000, vocab, queries=3, mean_chars=40)
    row = scale.run_in_child(scale.measure_backend, scale.BackendSpec("vector", "numpy"), corpus, 10)
    assert not isinstance(row, scale.ChildError), row
    matrix_mib = corpus.vectors.nbytes / 2 ** 20
    assert row["peak_mib"] >= 0.9 * matrix_mib  # the normalised copy NumpyIndex keeps
    assert row["recall_at_10"] == 1.0 and row["exact"]


def test_run_in_child_reports_errors():
    result = scale.run_in_child(int, "not a number")
    assert isinstance(result, scale.ChildError) and "ValueError" in result.text


def test_summarize_headline_and_ratios():
    rows = [
        {"label": "fast", "leg": "vector", "backend": "numpy", "size": n, "exact": True, "query_ms_p50": 2e-5 * n,
         "query_ms_min": 1.5e-5 * n, "build_s": 1e-5 * n, "peak_mib": 1e-3 * n, "scan_bytes": n * 384 * 4,
         "paired_stream_ms": 1.6e-5 * n}
        for n in (1_000, 100_000)
    ] + [
        {"label": "sqlite-vec", "leg": "vector", "backend": "sqlite-vec", "size": 100_000, "exact": True,
         "query_ms_p50": 40.0, "query_ms_min": 35.0, "build_s": 1.0, "peak_mib": 150.0,
         "scan_bytes": 100_000 * 384 * 4, "paired_stream_ms": 2.0},
        {"label": "bit", "leg": "vector", "backend": "sqlite-vec-bit", "size": 100_000, "exact": False,
         "query_ms_p50": 0.1, "query_ms_min": 0.1, "build_s": 1.0, "peak_mib": 150.0,
         "scan_bytes": 100_000 * 48},
    ]
    result = scale.summarize(rows, [{"best_gbps": 10.0}, {"best_gbps": 20.0}], sizes=(1_000, 100_000), dim=384)
    h = result["headline"]
    stream = 100_000 * 384 * 4 / 20e9 * 1e3  # the best bandwidth reading counts
    assert h["stream_ms"] == pytest.approx(stream)
    assert h["fastest_exact"] == "fast"  # the approximate bit index is faster but not exact
    assert h["fastest_exact_ratio"] == pytest.approx(2.0 / stream)
    assert h["within_2x_of_best_bandwidth"] == (2.0 / stream <= 2)  # 2.60x: not within
    assert h["local_stream_ms"] == pytest.approx(1.6)  # the fastest stream reads at that size
    assert h["fastest_exact_local_ratio"] == pytest.approx(2.0 / 1.6)
    assert h["within_2x"]  # judged against the stream reads taken between that size's queries
    assert h["sqlite_vec_local_ratio"] == pytest.approx(40.0 / 1.6)
    assert h["sqlite_vec_vs_fastest"] == pytest.approx(20.0)
    assert result["exponents"]["fast"]["query_p50"] == pytest.approx(1.0)


# --- end to end -----------------------------------------------------------------------------------


@pytest.mark.slow  # the scale study end to end
def test_run_scale_smoke(tmp_path):
    write_scale_report(scale.run_scale((1_000,), queries=5, bandwidth_mib=64,
                                       tokenizers=["unicode61", "trigram"], lexical=None), tmp_path)
    for name in ("scale.json", "scale.md", "scale.png"):
        assert (tmp_path / name).stat().st_size > 0
    doc = json.loads((tmp_path / "scale.json").read_text(encoding="utf-8"))
    labels = {r["label"] for r in doc["rows"]}
    assert set(VECTOR_BACKENDS.names()) <= labels
    assert {r["blas_threads"] for r in doc["rows"] if r["label"] == "numpy [1 BLAS thread]"} == {1}
    assert {"fts5/unicode61", "fts5/trigram"} <= labels
    assert all(r["size"] == 1_000 and r["queries"] == 5 for r in doc["rows"])
    assert doc["bandwidth"]["best_gbps"] > 0
    assert doc["headline"]["fastest_exact"] in labels
    for row in doc["rows"]:
        assert row["query_ms_p50"] <= row["query_ms_p95"] and row["build_s"] > 0
        if row["leg"] == "vector":
            assert row["recall_at_10"] >= (1.0 - 1e-9 if row["exact"] else 0.9)
            assert row["paired_stream_ms"] > 0 and row["ratio_to_local_stream_p50"] > 0
    md = (tmp_path / "scale.md").read_text(encoding="utf-8")
    assert doc["headline"]["fastest_exact"] in md and "within 2x of the bandwidth limit" in md
