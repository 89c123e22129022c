"""Machine profiles: the resources a run may use, enforced rather than only reported.

`vps` mirrors the study's 3.8 GB VPS: the process's address space is capped at 3.8 GiB with
RLIMIT_AS (the kernel refuses any allocation beyond it, so a run that would not fit on the VPS fails
here too), and the embedder and BLAS get 2 threads.  `laptop` sets no cap.  A run measured here with
`vps` peaks far below the cap (see README), so the cap is a guard, not a handicap.
"""
from __future__ import annotations

import os
import resource
from dataclasses import asdict, dataclass
from typing import Any

from harness.errors import ConfigError

GIB = 1024 ** 3
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass(frozen=True)
class Profile:
    name: str
    memory_cap_bytes: int | None
    threads: int | None
    description: str


PROFILES = {
    "vps": Profile("vps", int(3.8 * GIB), 2, "the study's VPS: 3.8 GiB address-space cap, 2 threads"),
    "laptop": Profile("laptop", None, None, "no cap; threads as the libraries choose"),
}



def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown profile {name!r}; available: {', '.join(sorted(PROFILES))}") from None


def profile_from_config(table: dict[str, Any] | None) -> Profile:
    """`[profile] name = "vps"`, optionally with `memory_cap_gib` / `threads` overrides (e.g. a 2 GiB VPS)."""
    table = dict(table or {})
    base = get_profile(table.pop("name", "laptop"))
    cap_gib = table.pop("memory_cap_gib", None)
    threads = table.pop("threads", base.threads)
    if table:
        raise ConfigError(f"[profile]: unknown key(s) {sorted(table)}; known: name, memory_cap_gib, threads")
    cap = base.memory_cap_bytes if cap_gib is None else int(float(cap_gib) * GIB)
    if cap_gib is None and threads == base.threads:
        return base
    return Profile(base.name, cap, threads, base.description + " (overridden)")


def apply_profile(profile: Profile) -> dict[str, Any]:
    """Set thread counts and the memory cap for this process; returns what was applied (for results).

    Thread variables only take effect for libraries that start their pools after this call, which is
    why the CLI applies the profile before it imports numpy.  The cap is a soft RLIMIT_AS, lowered
    only (never raised above an existing lower limit).
    """
    applied: dict[str, Any] = asdict(profile)
    if profile.threads:
        for var in THREAD_ENV:
            os.environ[var] = str(profile.threads)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if profile.memory_cap_bytes is not None:
        cap = profile.memory_cap_bytes
        if soft != resource.RLIM_INFINITY:
            cap = min(cap, soft)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        applied["enforced_address_space_limit"] = cap
    else:
        applied["enforced_address_space_limit"] = None if soft == resource.RLIM_INFINITY else soft
    return applied


def near_memory_cap(probe_bytes: int = 32 * 1024 ** 2) -> bool:
    """True when a modest allocation is refused: an error raised just before was the cap's doing
    (SQLite, for one, reports a refused mmap as a disk I/O error, not as MemoryError)."""
    try:
        bytearray(probe_bytes)
    except MemoryError:
        return True
    return False


def limit_message(profile_name: str, stage: str, cap: int | None) -> str:
    cap_text = f"{cap / GIB:.1f} GiB" if cap else "its memory cap"
    return (f"the run exceeded the {profile_name!r} profile's {cap_text} during {stage}; stopped. "
            "Embeddings computed so far are kept in the cache and finished results were written.")
