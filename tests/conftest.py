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


# The session's cache folder, set by the first process that seeds it: the pytest-xdist workers `make test`
# starts inherit it and use the same seeded folder instead of nesting a new one under it.
SESSION_CACHE = "HARNESS_TEST_SESSION_CACHE"


def pytest_configure(config):
    """The session's own embedding cache, seeded with the test corpora's committed e5 vectors
    (tests/vectors.py): <cache folder>/test-session/, so the user's cache, which the make targets that
    write reports/ read, never holds a seeded vector.  HARNESS_TEST_VECTORS=off: neither.

    ranx (the reference the metric and fusion tests compare with) runs its numba kernels as plain Python
    here: a fresh environment spends over a minute compiling them (69 s measured on a quiet 2-core machine,
    against 3 s uncompiled for the same evaluate and fuse calls), while the harness itself never imports
    ranx.  The benchmarks (`make bench`, --benchmark-enable) keep the compiled kernels they time."""
    if not config.getoption("benchmark_enable", default=False):
        os.environ.setdefault("NUMBA_DISABLE_JIT", "1")
    from tests import vectors

    if os.environ.get(vectors.OFF) == "off":
        return
    if os.environ.get(SESSION_CACHE):  # an xdist worker: the controller has seeded it
        os.environ["HARNESS_CACHE_DIR"] = os.environ[SESSION_CACHE]
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
    os.environ[SESSION_CACHE] = str(session)
    vectors.seed(session / "embeddings.sqlite")


@pytest.fixture(scope="session")
def king78_path() -> Path:
    return KING78


@pytest.fixture()
def tmp_cache(tmp_path):
    from harness.stages.embedders import EmbeddingCache

    return EmbeddingCache(tmp_path / "cache.sqlite")
