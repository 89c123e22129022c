"""The TOML files a user writes (experiments, presets, grids, gates): reading one with every failure named,
and finding a preset by name.  Below harness.config, so that the readers of openclaw.json and of a
workspace's settings can load presets without importing the experiment loader that imports them."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from harness.bundled import bundled_dir
from harness.errors import ConfigError, DataError
from harness.text_files import parse_bounded, read_text

MAX_CONFIG_BYTES = 16 * 1024 * 1024  # no experiment, preset, grid or gate file is larger

PRESETS_DIR = bundled_dir("experiments") / "presets"  # experiments/presets/ of the repository, shipped in the wheel


def load_toml(path: Path | str, what: str = "experiment file") -> dict[str, Any]:
    """A TOML file a user wrote (UTF-8, a BOM allowed); every way it can be unreadable or invalid is a
    ConfigError naming the file (and line)."""
    path = Path(path)
    try:
        text = read_text(path, what, limit=MAX_CONFIG_BYTES)
        return parse_bounded(tomllib.loads, text, path, what)
    except DataError as exc:
        raise ConfigError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def preset_path(name: str) -> Path:
    path = Path(name)
    if path.suffix == ".toml" and path.exists():
        return path
    candidate = PRESETS_DIR / f"{name}.toml"
    if not candidate.exists():
        available = sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(available)}")
    return candidate


def list_presets() -> dict[str, str]:
    """Every preset's name -> the first line of its description."""
    return {p.stem: load_toml(p).get("description", "").strip().splitlines()[0]
            for p in sorted(PRESETS_DIR.glob("*.toml"))}
