import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
KING78 = ROOT / "datasets" / "king78"
DATA = ROOT / "datasets"  # the public data sets, copied verbatim (each folder has its SOURCE.md)

# Property tests run on 2-core CI machines: no per-example deadline, a fixed example budget.
settings.register_profile("default", deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("default")


def pytest_configure(config):
    """The session's own embedding cache, seeded with the test corpora's committed e5 vectors
    (tests/vectors.py): <cache folder>/test-session/, so the user's cache, which the make targets that
    write reports/ read, never holds a seeded vector.  HARNESS_TEST_VECTORS=off: neither."""
    from tests import vectors

    if os.environ.get(vectors.OFF) == "off":
        return
    from harness.db import cache_dir

    session = cache_dir() / vectors.SESSION_FOLDER
    try:
        session.mkdir(parents=True, exist_ok=True)
    except OSError:  # a cache folder that cannot be written: a folder for this session only
        import tempfile

        session = Path(tempfile.mkdtemp(prefix="harness-tests-")) / vectors.SESSION_FOLDER
        session.mkdir()
    os.environ["HARNESS_CACHE_DIR"] = str(session)  # the CLI subprocesses the tests start inherit it
    vectors.seed(session / "embeddings.sqlite")


@pytest.fixture(scope="session")
def king78_path() -> Path:
    return KING78


@pytest.fixture()
def tmp_cache(tmp_path):
    from harness.stages.embedders import EmbeddingCache

    return EmbeddingCache(tmp_path / "cache.sqlite")
