"""The date of a dated memory file (memory/YYYY-MM-DD.md), which the decay stages and the lexical backend that
orders by when a memory was written (lancedb-fts's substring fallback) both read; a module of its own so that
neither imports the other's package."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from functools import lru_cache

_DATED_MEMORY_PATH = re.compile(r"(?:^|/)memory/(?:[^/]+/)*(\d{4})-(\d{2})-(\d{2})\.md$")
# OpenClaw 2026.8.1's DATED_MEMORY_PATH_RE also takes a name suffix: memory/2026-02-19-standup.md
_DATED_MEMORY_PATH_SUFFIX = re.compile(r"(?:^|/)memory/(?:[^/]+/)*(\d{4})-(\d{2})-(\d{2})(?:-[^/]+)?\.md$")


@lru_cache(maxsize=65_536)
def memory_date(path: str, name_suffix: bool = False) -> datetime | None:
    """OpenClaw's dated memory file: memory/YYYY-MM-DD.md (sub-folders allowed, e.g.
    memory/2026-02/2026-02-15.md; with `name_suffix`, as OpenClaw 2026.8.1, also
    memory/YYYY-MM-DD-anything.md) -> that day's UTC midnight; anything else, or an impossible date
    such as 2026-02-30, -> None."""
    normalised = path.replace("\\", "/")
    if normalised.startswith("./"):
        normalised = normalised[2:]
    match = (_DATED_MEMORY_PATH_SUFFIX if name_suffix else _DATED_MEMORY_PATH).search(normalised)
    if not match:
        return None
    try:
        return datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=timezone.utc)
    except ValueError:
        return None
