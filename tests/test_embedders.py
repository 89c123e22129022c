"""The embedding cache: persistent, transactional, resumable; the real e5 model is deterministic."""
import numpy as np
import pytest

from harness.errors import ConfigError, EmbeddingError
from harness.stages.embedders import (
    EMBEDDERS,
    CachedEmbedder,
    E5SmallQ4,
    EmbeddingCache,
    HashEmbedder,
)


class FlakyEmbedder(HashEmbedder):
    """Fails on the n-th call, like a server dropping mid-run."""

    def __init__(self, fail_on_call):
        super().__init__()
        self.calls, self.fail_on_call, self.texts_embedded = 0, fail_on_call, 0

    def embed(self, texts, role):
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise ConnectionError("server went away")
        self.texts_embedded += len(texts)
        return super().embed(texts, role)


def test_failed_call_keeps_computed_vectors_and_rerun_resumes(tmp_path):
    texts = [f"记忆片段 {i}" for i in range(10)]
    flaky = FlakyEmbedder(fail_on_call=3)
    embedder = CachedEmbedder(flaky, EmbeddingCache(tmp_path / "c.sqlite"), batch_size=2, progress=False)
    with pytest.raises(EmbeddingError, match="after 4 of 10"):
        embedder.embed(texts, "passage")
    reopened = EmbeddingCache(tmp_path / "c.sqlite")  # a new process would see the committed batches
    assert reopened.count("hash-v1") == 4
    healthy = FlakyEmbedder(fail_on_call=-1)
    out = CachedEmbedder(healthy, reopened, batch_size=2, progress=False).embed(texts, "passage")
    assert healthy.texts_embedded == 6  # only the missing ones
    assert np.allclose(out, HashEmbedder().embed(texts, "passage"))


def test_cache_keys_on_model_role_and_text(tmp_cache):
    inner = FlakyEmbedder(fail_on_call=-1)
    embedder = CachedEmbedder(inner, tmp_cache, progress=False)
    embedder.embed(["同一句话", "同一句话"], "query")
    embedder.embed(["同一句话"], "passage")
    embedder.embed(["同一句话"], "query")
    assert inner.texts_embedded == 2  # one per role; duplicates and repeats come from the cache


@pytest.fixture(scope="module")
def e5():
    return E5SmallQ4()


def test_e5_is_deterministic_normalised_and_prefix_aware(e5):
    a = e5.embed(["美国手机号", "Tello eSIM 零月租保号"], "query")
    b = e5.embed(["美国手机号", "Tello eSIM 零月租保号"], "query")
    assert a.shape == (2, 384) and np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)
    p = e5.embed(["美国手机号"], "passage")
    assert not np.allclose(p[0], a[0])  # "query: " and "passage: " prefixes differ
    assert "multilingual-e5-small" in e5.model_id


def test_every_embedder_states_what_the_pipeline_reads(e5):
    http = EMBEDDERS.create("openai-compatible", base_url="http://127.0.0.1:9/v1", model="m", dimensions=8)
    from harness.bundled import REPOSITORY

    index = EMBEDDERS.create("openclaw-index", index=str(REPOSITORY / "datasets/example-openclaw-home/memory/main.sqlite"),
                             model="multilingual-e5-small-q4", dims=384)
    built = {"hash": EMBEDDERS.create("hash", dim=8), "e5-small-q4": e5, "openai-compatible": http,
             "none": EMBEDDERS.create("none"), "openclaw-index": index,
             "use-multilingual-v3": EMBEDDERS.create("use-multilingual-v3")}  # tests/test_use_embedder.py embeds
    assert set(built) == set(EMBEDDERS.names())
    for name, embedder in built.items():
        assert isinstance(embedder.batch_size, int) and embedder.batch_size >= 1, name
        assert embedder.max_tokens is None or embedder.max_tokens > 0, name
        assert embedder.token_count is None or callable(embedder.token_count), name
        assert EMBEDDERS.json_schema(name)["title"] == f"embedder {name}"
    assert (e5.batch_size, e5.max_tokens, e5.token_count("美国手机号") > 2) == (16, 512, True)
    assert (http.batch_size, http.max_tokens, http.token_count, http.dim) == (64, None, None, 8)
    assert EMBEDDERS.create("none").embed(["a", "b"], "query").shape == (2, 0)  # no provider: no vectors
    cached = CachedEmbedder(e5, EmbeddingCache(":memory:"), progress=False)
    assert cached.max_tokens == 512 and cached.token_count("美国手机号") == e5.token_count("美国手机号")


def test_bad_parameters_name_table_and_key():
    with pytest.raises(ConfigError, match=r"^\[embedder\] threads: Input should be greater than or equal to 1 \(got 0\)$"):
        EMBEDDERS.create("e5-small-q4", threads=0)
    with pytest.raises(ConfigError, match=r"^\[embedder\] dim: Input should be a valid integer"):
        EMBEDDERS.create("hash", dim="384")


def test_token_counts_are_kept_in_the_cache_so_a_rerun_does_not_count_again(tmp_path):
    from harness.stages.embedders import CachedEmbedder, EmbeddingCache

    class Counting(HashEmbedder):
        calls: list[str] = []

        def token_count(self, text: str) -> int:
            Counting.calls.append(text)
            return len(text) + 2

    path = tmp_path / "cache.sqlite"
    first = CachedEmbedder(Counting(), EmbeddingCache(path))
    assert first.token_count is not None and first.cached_token_count("美国手机号") == 7
    again = CachedEmbedder(Counting(), EmbeddingCache(path))  # a new process would open it like this
    assert again.cached_token_count("美国手机号") == 7 and again.cached_token_count("其他") == 4
    assert Counting.calls == ["美国手机号", "其他"]  # the second run counted only the new text
