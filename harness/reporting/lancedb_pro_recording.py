"""reports/conformance/lancedb-pro/recorded.json: what memory-lancedb-pro returned in the full conformance run,
and the vectors it was answered with, which the default size replays (harness.conformance.lancedb_pro_replay says what it holds and why)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from harness.conformance.lancedb_pro_replay import dumps, fresh_recording, read_recording, recording_path


def write_recording(out: Path) -> list[Path]:
    """OUT/lancedb-pro/recorded.json from this full run's plugin outputs (after a complete run that passed);
    the date it was recorded stays as long as what it records does not change, so a rerun rewrites nothing."""
    recording = fresh_recording()
    if recording is None:
        return []
    path = recording_path(out)
    old = read_recording(path) if path.is_file() else None
    same = old is not None and {**old, "recorded": None} == recording
    recording["recorded"] = old["recorded"] if same and old else datetime.now(timezone.utc).date().isoformat()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(dumps(recording), encoding="utf-8")
    tmp.replace(path)
    return [path]
