"""The table of SPEC.md behaviours per preset (harness/conformance/spec_table.toml): it holds,
and it fails when a preset uses a stage whose behaviour is marked missing or hides a deviation."""
from __future__ import annotations

import shutil

from harness.config import PRESETS_DIR
from harness.conformance import spec_table


def test_the_committed_table_holds_for_the_committed_presets():
    assert spec_table.problems() == []


def test_every_openclaw_preset_has_a_row_per_behaviour():
    rows = spec_table.load()
    ids = {r.behaviour for r in rows if r.behaviour.startswith("openclaw.")}
    for preset in ("openclaw-2026.02", "openclaw-2026.08", "openclaw-2026.08-fts"):
        assert {r.behaviour for r in rows if r.preset == preset} == ids


def _copy_presets(tmp_path):
    dest = tmp_path / "presets"
    shutil.copytree(PRESETS_DIR, dest)
    return dest


def test_a_preset_using_a_stage_marked_missing_fails(tmp_path):
    presets = _copy_presets(tmp_path)
    rows = spec_table.load()
    assert not any("qmd.expansion" in p for p in spec_table.problems(rows, presets))
    path = presets / "qmd.toml"
    path.write_text(path.read_text(encoding="utf-8") + '\n[expansion]\nname = "llm"\n', encoding="utf-8")
    found = spec_table.problems(rows, presets)
    assert found == ["qmd.expansion / qmd: the preset uses expansion, whose SPEC behaviour is marked missing"]


def test_a_deviation_the_description_does_not_state_fails(tmp_path):
    presets = _copy_presets(tmp_path)
    path = presets / "openclaw-2026.02.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("no relaxed keyword floor", "no floor"), encoding="utf-8")
    assert spec_table.problems(spec_table.load(), presets) == [
        "openclaw.min_score.relaxed / openclaw-2026.02: the description does not say 'no relaxed keyword floor'"]


def test_rows_must_be_complete_and_known(tmp_path):
    bad = [spec_table.Row("openclaw.x", "2 x", "decoder", "openclaw-2026.02", "maybe"),
           spec_table.Row("openclaw.y", "2 y", "chunker", "nope", "implemented"),
           spec_table.Row("openclaw.z", "2 z", "chunker", "openclaw-2026.08", "deviates")]
    found = "\n".join(spec_table.problems(bad))
    assert "status 'maybe'" in found and "stage 'decoder'" in found and "no preset 'nope'" in found
    assert "needs `mentions`" in found and "openclaw-2026.08-fts: no row for openclaw.x, openclaw.y, openclaw.z" in found


def test_markdown_lists_each_preset():
    text = "\n".join(spec_table.markdown())
    assert "#### openclaw-2026.08-fts" in text and "| deviates |" in text
