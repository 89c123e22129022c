"""Machine profiles: the resources a run may use, enforced rather than only reported.

`vps` mirrors the study's 3.8 GB VPS: the process's address space is capped at 3.8 GiB with
RLIMIT_AS (the kernel refuses any allocation beyond it, so a run that would not fit on the VPS fails
here too), and the embedder and BLAS get 2 threads.  `laptop` sets no cap.  A run measured here with
`vps` peaks far below the cap (docs/findings/speed.md), so the cap is a guard, not a handicap.
"""
from __future__ import annotations

import os
import resource
import signal
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any, Callable

from harness.errors import ConfigError, EmbeddingError, ProfileLimitExceeded

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


def profile_from_config(table: Any) -> Profile:
    """`[profile] name = "vps"`, optionally with `memory_cap_gib` / `threads` overrides (e.g. a 2 GiB VPS);
    `table` is the written table or the experiment's ProfileSettings (whose unset overrides are None)."""
    if is_dataclass(table):
        table = {k: v for k, v in asdict(table).items() if v is not None}
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


def gib_text(size: int) -> str:
    """Bytes as GiB with the digits the user wrote: 0.25 GiB stays 0.25, 3.8 GiB stays 3.8."""
    return f"{round(size / GIB, 3):g} GiB"


def cap_words(profile_name: str, cap: int | None, cap_gib: float | None = None) -> str:
    """The cap as the user set it: "the 'vps' profile's 3.8 GiB", or "the 0.3 GiB of [profile]
    memory_cap_gib (on the 'laptop' profile)" when the experiment set it."""
    cap_text = gib_text(cap) if cap else "memory cap"
    if cap_gib is not None:
        return f"the {cap_text} of [profile] memory_cap_gib = {cap_gib:g} (on the {profile_name!r} profile)"
    return f"the {profile_name!r} profile's {cap_text}"


def limit_message(profile_name: str, stage: str, cap: int | None, cap_gib: float | None = None) -> str:
    return (f"the run exceeded {cap_words(profile_name, cap, cap_gib)} during {stage}; stopped before writing "
            "results (embeddings computed so far are kept in the cache). Raise [profile] memory_cap_gib, or "
            "lower [profile] threads")


def vm_peak() -> int | None:
    """This process's peak address space (VmPeak, bytes): what RLIMIT_AS limits; None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def trial_peak(action: Callable[[], Any]) -> tuple[int | None, str | None]:
    """Run `action` in a forked child whose address-space cap is lifted: (its peak address space in
    bytes, None), or (None, how it failed).  A model that does not fit under a cap does not fail
    politely: its runtime segfaults or aborts when a thread or a mapping is refused (libgomp: "Thread
    creation failed"), which no handler in this process could report.  The fork has exactly this
    process's address space, so the child's peak is what this process would reach."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers
        code = 1
        try:
            os.close(read_end)
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
            action()
            os.write(write_end, f"peak {vm_peak() or 0}".encode())
            code = 0
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, whatever it was
            os.write(write_end, f"error {type(exc).__name__}: {exc}".encode()[:4000])
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        report = fh.read().decode("utf-8", "replace")
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return None, f"the trial process was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    if report.startswith("peak "):
        peak = int(report.split()[1])
        return (peak or None), None
    return None, report.removeprefix("error ") or f"the trial process exited with status {os.WEXITSTATUS(status)}"


def check_model_fits(profile_name: str, cap: int, what: str, load: Callable[[], Any], batch_bytes: int,
                     cap_gib: float | None = None) -> None:
    """Before a model is loaded under a memory cap: load it once in a trial child (trial_peak) and refuse
    the run, naming the cap and the model's need, when that peak plus the working memory of the
    largest batch it will be given (`batch_bytes`) would not fit."""
    if not hasattr(os, "fork"):
        return
    peak, failure = trial_peak(load)
    if failure is not None:
        raise EmbeddingError(f"loading {what} failed in a trial process, even without the memory cap: {failure}")
    if peak is not None and peak + batch_bytes > cap:
        raise ProfileLimitExceeded(
            f"the run would exceed {cap_words(profile_name, cap, cap_gib)} with {what}: loading it and "
            f"starting its threads takes this process to {gib_text(peak)} of address space, and its largest "
            f"batch needs up to {gib_text(batch_bytes)} more; stopped before loading it. Raise [profile] "
            "memory_cap_gib, or lower [profile] threads (each thread reserves address space).")
