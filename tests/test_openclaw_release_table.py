"""The one table of OpenClaw releases (harness.inputs.openclaw_releases.RELEASES) is complete: every openclaw-*
preset, every OpenClaw driver and every release install.sh pins is in it, and everything it names exists."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.inputs.openclaw_releases import LAYOUTS, RELEASES, first_release, release_of, rules_of, version_tuple
from harness.systems import real

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ROOT / "experiments" / "presets"
DRIVERS = ROOT / "harness" / "systems" / "drivers"


def test_every_openclaw_preset_is_in_the_table_and_every_preset_it_names_exists():
    on_disk = {p.stem for p in PRESETS.glob("openclaw-*.toml")}
    named = [p for r in RELEASES.values() for p in r.presets]
    assert len(named) == len(set(named)), "a preset named by two releases"
    assert set(named) == on_disk
    assert set(LAYOUTS) == on_disk


@pytest.mark.parametrize("release", list(RELEASES.values()), ids=list(RELEASES))
def test_each_preset_names_the_release_it_models(release):
    for preset in release.presets:
        text = (PRESETS / f"{preset}.toml").read_text(encoding="utf-8")
        assert release.version in text, f"{preset}.toml does not name {release.version}"
        assert release_of(preset) is release
        assert release.config.release == release.version


def test_every_openclaw_driver_is_in_the_table_and_every_driver_it_names_exists():
    on_disk = {p.name for p in DRIVERS.glob("openclaw*")}
    named = {f for r in RELEASES.values() for f in (r.driver, r.agent_preload, r.settings_driver)}
    assert named == on_disk


def test_install_sh_pins_the_tables_releases():
    text = real.INSTALL_SH.read_text(encoding="utf-8")
    pinned = re.search(r"^OPENCLAW_VERSIONS=\(([^)]*)\)", text, re.M)
    assert pinned is not None
    assert pinned.group(1).split() == list(RELEASES) == list(real.OPENCLAW_VERSIONS)


def test_versions_order_as_numbers_and_unlisted_releases_follow_the_newest_before_them():
    assert list(RELEASES) == sorted(RELEASES, key=version_tuple)
    assert version_tuple("2026.10.1") > version_tuple("2026.9.6") > version_tuple("2026.8.1-beta.2")
    assert version_tuple("2026.8.1-beta.2") == (2026, 8, 1)
    assert version_tuple("2026.9.7-beta.1", prerelease=True) > version_tuple("2026.9.6", prerelease=True)
    assert rules_of("2026.9.6").version == "2026.9.6"
    assert rules_of("2026.5.1").version == rules_of("2026.2.22").version  # between two: the earlier one
    assert rules_of("2025.1.1") is min(RELEASES.values(), key=lambda r: version_tuple(r.version))
    assert rules_of("2027.1.1") is max(RELEASES.values(), key=lambda r: version_tuple(r.version))
    for capability in ("input_types", "fts_only", "user_md"):  # a capability, once there, stays
        first = version_tuple(first_release(capability))
        assert all(getattr(r, capability) == (version_tuple(r.version) >= first) for r in RELEASES.values())


def test_a_preset_of_another_system_has_no_release():
    with pytest.raises(KeyError, match="qmd"):
        release_of("qmd")
    assert "qmd" not in LAYOUTS
