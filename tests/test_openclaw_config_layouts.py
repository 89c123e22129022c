"""The release table of openclaw.json layouts (harness.inputs.openclaw_releases) against the releases' own
code, when the packages are on this machine: `make conformance` installs 2026.2.22, 2026.8.1 and 2026.9.6
in the user cache (HARNESS_CONFORMANCE_DIR), and HARNESS_OPENCLAW_PACKAGES may name a folder of unpacked
`npm pack openclaw@VERSION` trees (<folder>/<version>/package).  Without them the test says so and skips.

Read from each release's dist/: the memory-search block's zod schema (which keys `query` and `store`
accept, whether `chunking` exists) and resolveMemorySearchConfig (which block it reads, and whether the
hybrid values come from the file or are constants)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from harness.inputs.openclaw_releases import LAYOUTS


def package_dirs(version: str) -> list[Path]:
    roots = []
    conformance = Path(os.environ.get("HARNESS_CONFORMANCE_DIR") or
                       Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "harness" / "conformance")
    roots.append(conformance / f"openclaw-{version}" / "node_modules" / "openclaw")
    if os.environ.get("HARNESS_OPENCLAW_PACKAGES"):
        roots.append(Path(os.environ["HARNESS_OPENCLAW_PACKAGES"]) / version / "package")
    return [r for r in roots if (r / "dist").is_dir()]


def schema_block(dist: Path) -> str:
    """The text of `const MemorySearchSchema = ...` up to the schema's closing `.strict().optional();`."""
    for path in sorted(dist.glob("*.js")) + sorted(dist.glob("*.mjs")):
        text = path.read_text(encoding="utf-8", errors="replace")
        match = re.search(r"const MemorySearchSchema = (?:z\.)?object\(\{", text)
        if match:
            end = text.index("}).strict().optional();", match.end())
            return text[match.end():end]
    raise AssertionError(f"no MemorySearchSchema in {dist}")


def resolver(dist: Path) -> str:
    for path in sorted(dist.glob("*.js")) + sorted(dist.glob("*.mjs")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if re.search(r"function resolveMemorySearchConfig\(cfg, agentId\)", text):
            return text
    raise AssertionError(f"no resolveMemorySearchConfig in {dist}")


def object_keys(block: str, name: str) -> set[str]:
    """The keys of `name: (z.)object({...})` inside a schema block (one level)."""
    match = re.search(rf"\b{name}: (?:z\.)?object\(\{{", block)
    if not match:
        return set()
    depth, i = 1, match.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(block[i], 0)
        i += 1
    body = block[match.end():i - 1]
    keys, depth = set(), 0
    for token in re.finditer(r"[{}]|\b([A-Za-z]+):", body):
        if token.group(0) in "{}":
            depth += 1 if token.group(0) == "{" else -1
        elif depth == 0:
            keys.add(token.group(1))
    return keys


@pytest.mark.parametrize("preset", sorted({p for p, layout in LAYOUTS.items() if not p.endswith("-fts")}))
def test_the_release_table_says_what_the_release_reads(preset):
    layout = LAYOUTS[preset]
    dirs = package_dirs(layout.release)
    if not dirs:
        pytest.skip(f"OpenClaw {layout.release} is not installed here (make conformance installs it; or set "
                    "HARNESS_OPENCLAW_PACKAGES to a folder of unpacked `npm pack` trees)")
    dist = dirs[0] / "dist"
    block = schema_block(dist)
    query = object_keys(block, "query")
    store = object_keys(block, "store")
    reads = layout.reads
    assert ("hybrid" in query) == bool({"vector_weight", "mmr_enabled", "decay_enabled"} & reads)
    assert {"maxResults", "minScore"} <= query
    assert ("fts" in store) == ("tokenizer" in reads)
    assert bool(re.search(r"\bchunking: ", block)) == bool({"chunk_tokens", "chunk_overlap"} & reads)
    code = resolver(dist)
    if layout.block == "memory.search":
        assert re.search(r"cfg\.memory\?\.search", code)
        assert re.search(r"vectorWeight: DEFAULT_HYBRID_VECTOR_WEIGHT", code)  # a constant, not read from the file
    else:
        assert re.search(r"cfg\.agents\?\.defaults\?\.memorySearch", code)
        assert re.search(r"overrides\?\.query\?\.hybrid\?\.vectorWeight", code)
