"""Homes whose transcripts the release itself rewrites: sessions pruned into its archives (2026.8.1's default
maintenance) and a session it compacts (2026.9.6's auto-compaction)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable

import yaml

from harness.conformance.base import Check, Difference
from harness.conformance.real_home.checks import call_checks, home_check, judgment_check, mined
from harness.conformance.real_home.home import (
    HERE,
    Home,
    MEMORY,
    PRUNING_PRESET,
    PRUNING_VERSION,
    VERSION,
    cached_home,
    scenario,
)
from harness.inputs.openclaw_sessions import ReadStats, archive_session_id, read_sessions

# --- sessions pruned into the release's archives (OpenClaw 2026.8.1's default maintenance) -----------------------

PRUNE_AFTER = timedelta(days=30)  # 2026.8.1 dist/disk-budget-*.js DEFAULT_SESSION_PRUNE_AFTER_MS (mode "enforce")


def pruned_home(dest: Path, *, refresh: bool = False, log: Callable[[str], None] = print) -> Home:
    """The base scenario written by the real 2026.8.1 with its default session maintenance: at each turn it
    prunes the sessions last updated more than 30 days before (by the turn's clock) into
    sessions/<id>.jsonl.deleted.<time>[.zst] itself."""
    return cached_home(PRUNING_VERSION, "pruned", scenario(), MEMORY, dest, refresh=refresh, log=log)


def expected_pruned(script: dict[str, Any], agent: str = "main") -> set[str]:
    """The sessions the default maintenance prunes by the end of the script: last updated (their last turn)
    more than PRUNE_AFTER before the script's last turn."""
    last: dict[str, datetime] = {}
    for t in script["turns"]:
        if t.get("agent", "main") == agent:
            at = datetime.fromisoformat(t["at"])
            last[t["session"]] = max(last.get(t["session"], at), at)
    end = max(last.values())
    return {s for s, at in last.items() if end - at > PRUNE_AFTER}


def pruned_checks(home: Home) -> list[Check]:
    inst, calls, mining = mined(home.root)
    archives = list(inst.archives)
    archived = {archive_session_id(p) for p in archives}
    want = expected_pruned(home.script)
    checks = [home_check("pruned: the release archived the sessions older than 30 days (sessions/<id>.jsonl.deleted.*)",
                     "pruned", len(want & archived), len(want | archived),
                     [Difference(s, "", "archived" if s in archived else "(not archived)",
                                 "archived" if s in want else "(kept)", "the release's maintenance did otherwise")
                      for s in sorted(want ^ archived)])]

    stats = ReadStats(other_agents=dict(inst.other_agents))
    sessions = {s.id: s for s in read_sessions(inst.session_files, inst.agent_db, stats, inst.archives)}
    # an archive is read, or its session is read from a live copy the release kept (the complete copy wins)
    unread = [p for p in archives if archive_session_id(p) not in sessions]
    diffs = [Difference(p.name, "", "(not read)", "read", next((u for u in stats.archives_unreadable
                                                                 if u.startswith(p.name)), "not read in silence"))
             for p in unread]
    from_archive = sum(1 for s in sessions.values() if s.archived)
    if from_archive != stats.archives_read:
        diffs.append(Difference("archives", "", f"{stats.archives_read} counted", f"{from_archive} read",
                                "the archives read are not counted as such"))
    checks.append(home_check("pruned: init reads every archived session (and counts the archives read)", "pruned",
                         len(archives) - len(unread) - (from_archive != stats.archives_read), len(archives), diffs))
    checks += call_checks("pruned", home.script, calls)
    checks.append(judgment_check("pruned", home.script, mining))
    for c in checks:
        c.release, c.preset = f"openclaw {PRUNING_VERSION}", PRUNING_PRESET
    return checks


# --- a session the release compacts (2026.9.6's auto-compaction) ------------------------------------------------

COMPACTION = HERE / "compaction.yaml"


def compaction_home(dest: Path, *, refresh: bool = False, log: Callable[[str], None] = print) -> Home:
    spec = yaml.safe_load(COMPACTION.read_text(encoding="utf-8"))
    return cached_home(VERSION, "compaction", spec["sessions"], MEMORY, dest, config=spec["config"],
                       refresh=refresh, log=log)


@dataclass(frozen=True)
class Compaction:
    """A compaction entry of a transcript: where it is (after how many of the session's user turns), the
    entries before it that the transcript still holds, the first one the model still sees."""

    session: str
    seq: int
    turns_before: int  # user messages before it: it fell after turn turns_before - 1 (0-based)
    entries_before: int  # transcript entries before it, still in the transcript
    first_kept: str | None
    tokens_before: int | None
    tokens_after: int | None


def compactions(agent_db: Path) -> list[Compaction]:
    """The compaction entries of an agent database's transcripts (2026.9.6: plain or zstd-compressed rows), in
    transcript order (seq: the clock of a turn's process is not the order of its entries)."""
    import sqlite3

    conn = sqlite3.connect(f"{agent_db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(transcript_events)")}
        extra = ", event_zstd" if "event_zstd" in columns else ", NULL"
        rows = conn.execute(f"SELECT session_id, seq, event_json{extra} FROM transcript_events "
                            "ORDER BY session_id, seq").fetchall()
    finally:
        conn.close()
    out: list[Compaction] = []
    entries: dict[str, int] = {}
    users: dict[str, int] = {}
    for sid, seq, text, packed in rows:
        if text is None and packed is not None:
            import zstandard

            text = zstandard.ZstdDecompressor().decompressobj().decompress(packed)
        entry = json.loads(text) if text else {}
        if entry.get("type") == "compaction":
            out.append(Compaction(sid, seq, users.get(sid, 0), entries.get(sid, 0), entry.get("firstKeptEntryId"),
                                  entry.get("tokensBefore"), entry.get("tokensAfter")))
        if entry.get("type") == "message" and (entry.get("message") or {}).get("role") == "user":
            users[sid] = users.get(sid, 0) + 1
        if entry.get("type") != "session":
            entries[sid] = entries.get(sid, 0) + 1
    return out


def split_at_compaction(script: dict[str, Any], calls: list[Any], found: list[Compaction]
                        ) -> dict[str, tuple[dict[str, Any], list[Any]]]:
    """{"before" | "after": (the script's turns, the mined calls)} on either side of the first compaction of
    their session, by turn (a session never compacted is all "before")."""
    cut = {c.session: c.turns_before for c in sorted(found, key=lambda c: c.seq, reverse=True)}
    out = {}
    for side in ("before", "after"):
        def on(session: str, turn: int, side: str = side) -> bool:
            return (session not in cut or turn < cut[session]) == (side == "before")

        out[side] = ({**script, "turns": [t for t in script["turns"] if on(t["session"], int(t["turn"]))]},
                     [c for c in calls if on(c.session, c.turn)])
    return out


def compaction_checks(home: Home) -> list[Check]:
    """The release compacted the session after the turn whose reply reported a long conversation's usage; the
    memory_search calls mined before and after the compaction are the script's (the transcript keeps every
    entry before the compaction and appends a compaction entry: summary, firstKeptEntryId)."""
    inst, calls, mining = mined(home.root)
    found = compactions(inst.agent_db) if inst.agent_db else []
    crossed = {(t["session"], int(t["turn"])) for t in home.script["turns"] if any(d.get("usage") for d in t["did"])}
    fell = {(c.session, c.turns_before - 1) for c in found}
    diffs = [Difference(f"{s} turn {t}", "", "compacted after it" if (s, t) in fell else "(not compacted)",
                        "compacted after it" if (s, t) in crossed else "(not compacted)",
                        "the release compacted elsewhere than where the reported usage crossed its threshold")
             for s, t in sorted(crossed ^ fell)]
    checks = [home_check("compaction: the release compacted the session after the turn whose usage crossed its "
                     "threshold", "compaction", len(crossed & fell), len(crossed | fell), diffs)]
    for side, (script, got) in split_at_compaction(home.script, calls, found).items():
        for c in call_checks("compaction", script, got):
            c.what = c.what.replace("mined memory_search calls", f"compaction: mined memory_search calls {side} it"
                                    + (" (kept in the transcript, only summarised for the model)" if side == "before"
                                       else ""))
            checks.append(c)
    checks.append(judgment_check("compaction", home.script, mining))
    return checks
