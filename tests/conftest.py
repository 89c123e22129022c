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


@pytest.fixture(scope="session")
def king78_path() -> Path:
    return KING78


@pytest.fixture()
def tmp_cache(tmp_path):
    from harness.stages.embedders import EmbeddingCache

    return EmbeddingCache(tmp_path / "cache.sqlite")
