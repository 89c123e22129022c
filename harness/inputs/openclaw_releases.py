"""The OpenClaw releases the harness models, drives and reads, one table (RELEASES): per release its presets,
its conformance driver, where its openclaw.json sets memory search and which keys a user can set there, and
what it can ask of its embedding provider.  Every other module reads it (tests/test_openclaw_release_table.py
checks that every openclaw-* preset, every OpenClaw driver and install.sh's pins are in it, and the reverse).

Where each OpenClaw release reads its memory-search settings in openclaw.json, and which of them it reads.

Read from the releases' own code (npm `openclaw@VERSION`, `dist/`): the zod schema of the memory-search
block (`MemorySearchSchema`, `.strict()`: an unknown key makes the config invalid) and
`resolveMemorySearchConfig` (`dist/memory-search-*.js`; 2026.2.22: `dist/manager-*.js`), which says what is
read from the file and what is built in:

    release    block (defaults; one agent's)                                   what openclaw.json can set
    2026.2.22  agents.defaults.memorySearch; agents.list[].memorySearch        query.maxResults, query.minScore,
                                                                               query.hybrid.{vectorWeight, textWeight,
                                                                               candidateMultiplier (1-20), mmr.{enabled,
                                                                               lambda}, temporalDecay.{enabled,
                                                                               halfLifeDays (whole, >= 1)}},
                                                                               chunking.{tokens, overlap}; no FTS
                                                                               tokenizer key (always unicode61)
    2026.8.1   memory.search; agents.list[].memory.search                      query.maxResults, query.minScore,
    2026.9.6   (the old blocks are reported as legacy: `openclaw doctor --fix`  store.fts.tokenizer (unicode61 |
               moves them; 2026.9 strips query.hybrid and chunking as           trigram); the hybrid block is built
               "retired tuning knobs")                                          in: weights 0.7/0.3, candidate
                                                                               multiplier 4, MMR on (lambda 0.7),
                                                                               temporal decay on (30 days), chunking
                                                                               400/80

So with 2026.8.1 and 2026.9.6 temporal decay and MMR cannot be turned off or tuned from openclaw.json:
a sweep shows such settings (what they would do) but never pastes them as keys.  `tests/
test_openclaw_releases_config.py` re-reads these facts from an installed package when one is there
(`make conformance` installs 2026.2.22, 2026.8.1 and 2026.9.6 in the user cache).

LAYOUTS is keyed by preset; a preset that models no OpenClaw release (qmd, lancedb-pro) has no entry.

What a release can ask of its embedding provider (memory.search.*, from 2026.8.1 on): inputType /
queryInputType / documentInputType, so that an OpenAI-compatible server can tell queries from passages
(2026.2.22 has no such key), and provider "none", FTS-only mode (2026.2.22 indexes nothing without a
provider).  A version the table does not list follows the newest listed release at or before it
(rules_of), the oldest before them all.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# harness setting -> its key path inside the memory-search block (the same in every release that reads it)
SETTING_KEYS = {
    "max_results": "query.maxResults",
    "min_score": "query.minScore",
    "vector_weight": "query.hybrid.vectorWeight",
    "text_weight": "query.hybrid.textWeight",
    "candidate_multiplier": "query.hybrid.candidateMultiplier",
    "mmr_enabled": "query.hybrid.mmr.enabled",
    "mmr_lambda": "query.hybrid.mmr.lambda",
    "decay_enabled": "query.hybrid.temporalDecay.enabled",
    "decay_half_life": "query.hybrid.temporalDecay.halfLifeDays",
    "tokenizer": "store.fts.tokenizer",
    "chunk_tokens": "chunking.tokens",
    "chunk_overlap": "chunking.overlap",
}
# what a release uses for a setting it does not read from openclaw.json (2026.8.1 and 2026.9.6)
BUILT_IN_2026_08 = {"vector_weight": 0.7, "text_weight": 0.3, "candidate_multiplier": 4, "mmr_enabled": True,
                    "mmr_lambda": 0.7, "decay_enabled": True, "decay_half_life": 30, "chunk_tokens": 400,
                    "chunk_overlap": 80}


@dataclass(frozen=True)
class ConfigLayout:
    """One release's memory-search block in openclaw.json."""

    release: str
    block: str  # the defaults' block, e.g. "memory.search"
    agent_block: str  # inside an agents.list[] entry, e.g. "memory.search"
    reads: frozenset[str]  # harness settings (SETTING_KEYS) the release reads from the file
    built_in: dict[str, Any] = field(default_factory=dict)  # settings it does not read: the value it uses
    source: str = ""

    def key(self, setting: str) -> str:
        return f"{self.block}.{SETTING_KEYS[setting]}"

    def cannot(self, setting: str, value: Any = None) -> str:
        """`query.hybrid.vectorWeight = 0.5: not a key of OpenClaw 2026.8.1's openclaw.json (built in: 0.7)`."""
        built = self.built_in.get(setting)
        head = SETTING_KEYS[setting] + ("" if value is None else f" = {json_value(value)}")
        return (f"{head}: not a key of OpenClaw {self.release}'s openclaw.json"
                + ("" if built is None else f" (built in: {json_value(built)})"))


def json_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def version_tuple(version: str, *, prerelease: bool = False) -> tuple[int, ...]:
    """A release's version for comparing: "2026.8.1-beta.2" -> (2026, 8, 1).  With prerelease, every number in
    it, (2026, 8, 1, 2): the order of the registry's list, 2026.9.6 < 2026.9.7-beta.1 < 2026.10.1."""
    if prerelease:
        return tuple(int(n) for n in re.findall(r"\d+", version))
    return tuple(int(p) for p in version.split("-")[0].split(".") if p.isdigit())


_ALL = frozenset(SETTING_KEYS)
_2026_08_READS = frozenset({"max_results", "min_score", "tokenizer"})
_NEW_SOURCE = ("dist/zod-schema.agent-runtime-*.js MemorySearchSchema (query: maxResults, minScore only; strict); "
               "dist/memory-search-*.js resolveMemorySearchConfig (cfg.memory.search; hybrid and chunking constants)")
_2026_09_SOURCE = _NEW_SOURCE + "; dist/legacy-*.js strips query.hybrid.* and chunking as retired"


@dataclass(frozen=True)
class Release:
    """One OpenClaw release: the presets that model it, how the harness drives it, what its users can set."""

    version: str
    presets: tuple[str, ...]  # the presets that model it, its hybrid-mode preset first
    config: ConfigLayout  # its openclaw.json: where memory search is set, which keys a user can set there
    input_types: bool  # provider capability: input types, telling the provider queries from passages
    fts_only: bool  # provider capability: provider "none", keyword search without an embedding provider
    user_md: bool  # indexes USER.md beside MEMORY.md at the workspace root (else MEMORY.md and memory.md)
    driver: str = "openclaw.mjs"  # its conformance driver (harness/systems/drivers/): index and search
    agent_preload: str = "openclaw_preload.cjs"  # what its CLI runs preloaded (harness/systems/drivers/)
    settings_driver: str = "openclaw_settings.mjs"  # reads back its resolved memory-search settings (conformance upgrade)

    @property
    def preset(self) -> str:
        return self.presets[0]


RELEASES: dict[str, Release] = {r.version: r for r in (
    Release("2026.2.22", ("openclaw-2026.02",),
            ConfigLayout("2026.2.22", "agents.defaults.memorySearch", "memorySearch", _ALL - {"tokenizer"},
                         {"tokenizer": "unicode61"},
                         "dist/config-*.js MemorySearchSchema; dist/manager-*.js resolveMemorySearchConfig "
                         "(cfg.agents.defaults.memorySearch, every query.hybrid and chunking key read)"),
            input_types=False, fts_only=False, user_md=False),
    Release("2026.8.1", ("openclaw-2026.08", "openclaw-2026.08-fts"),
            ConfigLayout("2026.8.1", "memory.search", "memory.search", _2026_08_READS, BUILT_IN_2026_08,
                         _NEW_SOURCE),
            input_types=True, fts_only=True, user_md=True),
    Release("2026.9.6", ("openclaw-2026.09", "openclaw-2026.09-fts"),
            ConfigLayout("2026.9.6", "memory.search", "memory.search", _2026_08_READS, BUILT_IN_2026_08,
                         _2026_09_SOURCE),
            input_types=True, fts_only=True, user_md=True),
)}
# preset -> the openclaw.json layout of the release it models
LAYOUTS: dict[str, ConfigLayout] = {p: r.config for r in RELEASES.values() for p in r.presets}


def release_of(preset: str) -> Release:
    """The release an openclaw-* preset models (KeyError for a preset of another system)."""
    found = next((r for r in RELEASES.values() if preset in r.presets), None)
    if found is None:
        raise KeyError(f"{preset}: no OpenClaw release in harness.inputs.openclaw_releases.RELEASES models it")
    return found


def rules_of(version: str) -> Release:
    """The listed release whose rules `version` follows: the newest at or before it, else the oldest."""
    ordered = sorted(RELEASES.values(), key=lambda r: version_tuple(r.version))
    earlier = [r for r in ordered if version_tuple(r.version) <= version_tuple(version)]
    return earlier[-1] if earlier else ordered[0]


def first_release(capability: str) -> str:
    """The oldest listed release that has a capability (a Release field): "2026.8.1" for "input_types"."""
    return min((r.version for r in RELEASES.values() if getattr(r, capability)), key=version_tuple)


# the blocks read, in the order they apply (a later one wins key by key), and the releases that use each
BLOCKS = ("memorySearch", "agents.defaults.memorySearch", "memory.search")
BLOCK_RELEASES = {"memorySearch": "an older location (2026.8.1 reports it as moved to memory.search)",
                  "agents.defaults.memorySearch": "2026.2.22", "memory.search": "2026.8.1 and 2026.9.6"}


# no release named (a preset of another system, or none): every key the harness reads, in 2026.2's block
ANY_RELEASE = ConfigLayout("(any)", "agents.defaults.memorySearch", "memorySearch", _ALL)


def layout_for(preset: str | None) -> ConfigLayout | None:
    """The openclaw.json layout of the release a preset models, or None for a preset of another system."""
    return LAYOUTS.get(preset or "")
