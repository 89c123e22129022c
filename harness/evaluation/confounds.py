"""The confound guard: two arms of a comparison that differ in what the comparison is not about.

Swapping only the embedder moves LongMemEval-S accuracy by 6 points and flips system rankings (MemDelta); a
provider returning 30 results beside others returning 10 decides a benchmark (memorybench#64).  So `harness
diff`, `harness gate` and the matrix reports compare the resolved configurations of their arms on four
things and refuse (diff, gate) or flag (a matrix's comparisons) a difference that is not declared the point:

    embedder        the [embedder] table (model and parameters: another model's vectors)
    result-count    [search] max_results (what a metric at k can see)
    candidate-pool  the candidates per leg (max_results x candidate_multiplier, or candidates; capped at 200)
    corpus          the [dataset] and [layout] tables (what is indexed and asked)

`--allow-confound NAME` (repeatable, or `all`) says a difference is the point; the comparison then runs and
names it.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from harness.errors import ConfigError

CONFOUNDS = ("embedder", "result-count", "candidate-pool", "corpus")
CANDIDATE_CAP = 200  # as harness.pipeline.CANDIDATE_CAP (OpenClaw's cap); evaluation may not import the pipeline


def _table(config: Mapping[str, Any], key: str) -> Any:
    value = config.get(key)
    return dict(value) if isinstance(value, Mapping) else value


def _candidates(config: Mapping[str, Any]) -> int | None:
    search = config.get("search")
    if not isinstance(search, Mapping):
        return None
    try:
        results = int(search.get("max_results", 6))
        fixed = search.get("candidates")
        return min(CANDIDATE_CAP, int(fixed) if fixed else results * int(search.get("candidate_multiplier", 4)))
    except (TypeError, ValueError):
        return None


def _shown(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}={_shown(v)}" for k, v in value.items()) + "}"
    return "none" if value is None else str(value)


def config_confounds(base: Mapping[str, Any], now: Mapping[str, Any]) -> dict[str, str]:
    """{confound: "base vs now"} for every one of CONFOUNDS in which two resolved configurations differ."""
    out: dict[str, str] = {}
    pairs = {
        "embedder": (_table(base, "embedder"), _table(now, "embedder")),
        "result-count": ((base.get("search") or {}).get("max_results"), (now.get("search") or {}).get("max_results")),
        "candidate-pool": (_candidates(base), _candidates(now)),
        "corpus": ({"dataset": _table(base, "dataset"), "layout": _table(base, "layout")},
                   {"dataset": _table(now, "dataset"), "layout": _table(now, "layout")}),
    }
    for name, (a, b) in pairs.items():
        if a != b:
            out[name] = f"{_shown(a)} vs {_shown(b)}"
    return out


def allowed_confounds(names: Iterable[str] | None, option: str = "--allow-confound") -> frozenset[str]:
    """The names a user declared the point of a comparison; `all` allows every one.  An unknown name is refused."""
    out = set()
    for name in names or ():
        if name == "all":
            out.update(CONFOUNDS)
        elif name in CONFOUNDS:
            out.add(name)
        else:
            raise ConfigError(f"{option} {name!r}: not a confound; one of {', '.join(CONFOUNDS)} or all")
    return frozenset(out)


def check_confounds(arms: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any]]], allowed: frozenset[str],
                    what: str, option: str = "--allow-confound") -> list[str]:
    """`arms`: {label: (base config, now config)}.  Raises ConfigError (one line) naming the first arm and
    confounds not allowed; returns the allowed differences as lines to show beside the comparison."""
    flagged: list[str] = []
    for label, (base, now) in arms.items():
        found = config_confounds(base, now)
        refused = [name for name in found if name not in allowed]
        where = f"{label}: " if label else ""
        if refused:
            detail = "; ".join(f"{name} {found[name]}" for name in refused)
            flags = " ".join(f"{option} {name}" for name in refused)
            raise ConfigError(f"{what}: {where}the two runs differ in {detail}, so their figures are not comparable "
                              f"as they stand; pass {flags} if that difference is the point")
        flagged += [f"{where}differs in {name} ({found[name]}), allowed by {option}" for name in found]
    return flagged
