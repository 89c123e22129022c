"""What the committed reports may not say: an interval collapsed to a point ([x, x] for a sample that happens
to be constant), or a p-value below the smallest its test can give (its floor).  Every JSON under reports/
is read (benchmarks' per-run results.json included); timing baselines (reports/bench) are not reports."""
from __future__ import annotations

import json
import math
import re

import pytest

from tests.conftest import ROOT

REPORTS = ROOT / "reports"
FILES = sorted(p for p in REPORTS.rglob("*.json") if "bench" not in p.relative_to(REPORTS).parts)
INTERVAL_KEY = re.compile(r"(^|_)ci(95)?$")
POINT = re.compile(r"\[(\d+\.\d+), \1\]")  # "[0.750, 0.750]" in a Markdown report


def walk(node, path=""):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk(value, f"{path}/{i}")


def problems(doc) -> list[str]:
    out = []
    for path, node in walk(doc):
        for key, value in node.items():
            if INTERVAL_KEY.search(str(key)) and isinstance(value, list) and len(value) == 2 and \
                    all(isinstance(v, (int, float)) and math.isfinite(v) for v in value) and value[0] == value[1]:
                estimate = node.get(key[:-5]) if str(key).endswith("_ci95") else node.get("estimate", node.get("mean"))
                out.append(f"{path}/{key}: the interval {value} is a point (estimate {estimate})")
        floor = node.get("p_floor")
        for key in ("p_value", "p"):
            p = node.get(key)
            if isinstance(p, (int, float)) and isinstance(floor, (int, float)) and p < floor * (1 - 1e-9):
                out.append(f"{path}/{key}: p = {p} is below its test's floor {floor}")
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(REPORTS).as_posix())
def test_no_degenerate_interval_and_no_p_below_its_floor(path):
    found = problems(json.loads(path.read_text(encoding="utf-8")))
    assert not found, "\n".join(found[:20])


@pytest.mark.parametrize("path", sorted(REPORTS.rglob("*.md")), ids=lambda p: p.relative_to(REPORTS).as_posix())
def test_no_markdown_report_prints_a_point_interval(path):
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if POINT.search(line)]
    assert not lines, "\n".join(lines[:10])


def test_the_checks_catch_what_they_are_for():
    assert problems({"suite": {"recall@6": 1.0, "recall@6_ci95": [1.0, 1.0]}})
    assert problems({"cv": {"p_value": 0.0001, "p_floor": 0.00195}})
    assert not problems({"suite": {"recall@6": 1.0, "recall@6_ci95": [0.692, 1.0]}, "p_value": 0.002,
                         "p_floor": 0.00195})
    assert POINT.search("| 0.750 [0.750, 0.750] |") and not POINT.search("| 0.750 [0.650, 0.750] |")
