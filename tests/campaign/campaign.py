"""The campaign: make the fixtures, write each case's folder, run it, judge what came out, report.

    python -m tests.campaign                       # the default size (what `make test` runs)
    python -m tests.campaign --size 1200 --out reports/reliability     # `make reliability`
    python -m tests.campaign --seed 30 --case 17   # replay one case, keep its folder, show its output

A case *fails* when it ends in an internal error (exit 3), prints a traceback, hangs (killed at its
timeout), accepts a value outside its declared domain (exit 0 where the case says `refuse`), refuses a
valid input, prints an exit-2 error that does not name the file or option, or echoes the canary secret
(anywhere it prints or writes).  Every failure is printed with the command that replays it.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.campaign import cases as C
from tests.campaign.runner import Job, Outcome, run_jobs

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SIZE = 300  # what `make test` runs; HARNESS_CAMPAIGN_SIZE=N for more
REPORT_SIZE = 1200  # `make reliability`
DEFAULT_SEED = 30
EXEC_EVERY = 25  # every 25th case also runs as a fresh `python -m harness.cli` process: the two must agree
TRACEBACK = "Traceback (most recent call last)"


def open_to_others(path: Path) -> bool:
    """Whether another user (nobody) can reach `path`: every folder on the way searchable by others."""
    path = path.resolve()
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def nobody_can_run() -> bool:
    """As root, a case that needs an unreadable file runs as nobody, who must reach the checkout and the
    interpreter; elsewhere (a checkout under /root) such cases are skipped and counted as skipped."""
    if os.geteuid() != 0:
        return True
    return open_to_others(ROOT) and open_to_others(Path(sys.executable).parent)


def base_env(folder: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder), "LANG": "C.UTF-8",
           "LC_ALL": "C.UTF-8", "HARNESS_CACHE_DIR": str(folder / "cache"), "HARNESS_PROGRESS_SECONDS": "3600",
           "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "400", "PYTHONDONTWRITEBYTECODE": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return env


# --- fixtures -------------------------------------------------------------------------------------------

def make_fixtures(base: Path) -> Path:
    """A workspace, its experiment, a valid results.json with its TREC export, and cache files (a good one,
    one of another schema, one with a row of the wrong length), made by the real CLI once."""
    fx = base / "fixtures"
    for name, text in C.MEMORY.items():
        (fx / name).parent.mkdir(parents=True, exist_ok=True)
        (fx / name).write_text(text, encoding="utf-8")
    (fx / "ws" / "queries.yaml").write_text(C.queries_yaml(C.QUERIES), encoding="utf-8")
    (fx / "x.toml").write_text(C.to_toml(C.experiment_dict()), encoding="utf-8")
    env = {**os.environ, **base_env(fx)}
    for args in (["run", "x.toml", "--out", "fxrun"], ["export", "fxrun/results.json", "--out", "fx"]):
        proc = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=fx, env=env, capture_output=True,
                              text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"making the fixtures failed: harness {' '.join(args)}: {proc.stderr[-2000:]}")
    shutil.copy(fx / "fxrun" / "results.json", fx / "fx" / "results.json")
    shutil.rmtree(fx / "fxrun")
    cache = fx / "cache" / "embeddings.sqlite"
    conn = sqlite3.connect(cache)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    C.FIXTURE_BYTES["embeddings.sqlite"] = cache.read_bytes()
    bad = base / "bad-row.sqlite"
    shutil.copy(cache, bad)
    conn = sqlite3.connect(bad)
    conn.execute("UPDATE vectors SET vector = zeroblob(100) WHERE sha256 IN (SELECT sha256 FROM vectors LIMIT 3)")
    conn.commit()
    conn.close()
    C.FIXTURE_BYTES["bad-row.sqlite"] = bad.read_bytes()
    other = base / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE vectors (id INTEGER PRIMARY KEY, payload TEXT)")
    conn.execute("INSERT INTO vectors VALUES (1, 'not ours')")
    conn.commit()
    conn.close()
    C.FIXTURE_BYTES["other.sqlite"] = other.read_bytes()
    for name in ("chunk.run", "chunk.qrels", "results.json"):
        C.FIXTURE_TEXT[name] = (fx / "fx" / name).read_text(encoding="utf-8")
    return fx


def load_fixture_texts(fx: Path) -> None:
    for name in ("chunk.run", "chunk.qrels", "results.json"):
        C.FIXTURE_TEXT[name] = (fx / "fx" / name).read_text(encoding="utf-8")
    C.FIXTURE_BYTES["embeddings.sqlite"] = (fx / "cache" / "embeddings.sqlite").read_bytes()
    for name in ("bad-row.sqlite", "other.sqlite"):
        C.FIXTURE_BYTES[name] = (fx.parent / name).read_bytes()


# --- one case's folder ---------------------------------------------------------------------------------------

def materialise(case: C.Case, folder: Path, fx: Path) -> None:
    if case.fixtures:
        shutil.copytree(fx, folder, symlinks=True)
    else:
        folder.mkdir(parents=True)
    for rel in case.remove:
        target = folder / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
    for rel in case.dirs:
        if (folder / rel).is_file():
            (folder / rel).unlink()
        (folder / rel).mkdir(parents=True, exist_ok=True)
    for rel, body in case.files.items():
        target = folder / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass"))
    for link, target in case.symlinks:
        (folder / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, folder / link)
    if case.as_nobody and os.geteuid() == 0:
        for path in [folder, *folder.rglob("*")]:
            if path.is_symlink():
                continue
            os.chmod(path, 0o777 if path.is_dir() else 0o666)
    for rel, mode in case.modes.items():
        os.chmod(folder / rel, mode)


def case_env(case: C.Case, folder: Path) -> dict[str, str]:
    env = base_env(folder)
    for key, value in case.env.items():
        env[key] = str(folder / value) if key.endswith("_DIR") and not os.path.isabs(value) else value
    return env


# --- judging --------------------------------------------------------------------------------------------

def error_lines(outcome: Outcome) -> list[str]:
    """The one-line errors the command printed (`error: ...`), or click's usage error."""
    lines = [line for line in outcome.stderr.splitlines() if line.startswith("error: ")]
    if not lines:
        usage = [line.strip(" │|╭╰─") for line in outcome.stderr.splitlines()
                 if "Error" in line or "Invalid value" in line or "No such option" in line or "Missing" in line]
        lines = [" ".join(usage)] if usage else []
    return lines


def judge(case: C.Case, outcome: Outcome, folder: Path) -> list[str]:
    problems = []
    printed = outcome.stdout + outcome.stderr
    if outcome.code is None:
        return [f"hang: still running after {case.timeout:g} s"]
    if TRACEBACK in printed:
        problems.append("traceback printed")
    if outcome.code == 3 or "internal error:" in printed:
        problems.append("internal error (exit 3)")
    if case.secret:
        leaks = [str(p.relative_to(folder)) for p in folder.rglob("*")
                 if p.is_file() and not p.is_symlink() and str(p.relative_to(folder)) not in case.files
                 and _holds_secret(p)]
        if C.SECRET in printed:
            leaks.insert(0, "the console")
        if leaks:
            problems.append(f"secret echoed: in {', '.join(leaks)}")
    allowed = {"error": {2}, "refuse": {2}, "ok": {0}, "either": {0, 2}, "verdict": {0, 1, 2}}[case.expect]
    if outcome.code not in allowed and outcome.code != 3:
        if case.expect == "refuse" and outcome.code == 0:
            problems.append("silent acceptance: a value outside its declared domain was accepted")
        elif case.expect == "ok" and outcome.code == 2:
            problems.append("valid input refused")
        else:
            problems.append(f"exit {outcome.code}, expected {' or '.join(map(str, sorted(allowed)))}")
    if outcome.code == 2:
        lines = error_lines(outcome)
        if len(lines) != 1:
            problems.append(f"exit 2 with {len(lines)} error lines, not one")
        elif case.names:
            line = lines[0]
            missing = [alts for alts in case.names if alts and not any(a.lower() in line.lower() for a in alts)]
            if missing:
                problems.append("vague error: names none of " + "; ".join(" / ".join(m) for m in missing))
    if outcome.code == 0 and case.note and case.note.lower() not in outcome.stdout.lower():
        problems.append(f"accepted without the note naming {case.note!r}")
    return problems


def _holds_secret(path: Path) -> bool:
    try:
        return C.SECRET.encode() in path.read_bytes()
    except OSError:
        return False


# --- the campaign -------------------------------------------------------------------------------------------

@dataclass
class Result:
    index: int
    case: C.Case
    outcome: Outcome | None
    problems: list[str]
    twin: Outcome | None = None  # the same case as a fresh process (every EXEC_EVERY-th case)

    def error(self) -> str:
        if self.outcome is None:
            return ""
        lines = error_lines(self.outcome)
        return lines[0][:300] if lines else ""


@dataclass
class Campaign:
    seed: int
    size: int
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 2
    skipped: list[tuple[int, str, str]] = field(default_factory=list)  # (case, label, why)

    def failures(self) -> list[Result]:
        return [r for r in self.results if r.problems]

    def count(self, word: str) -> int:
        return sum(any(p.startswith(word) for p in r.problems) for r in self.results)

    def summary(self) -> dict[str, Any]:
        codes = Counter("hang" if r.outcome is None or r.outcome.code is None else str(r.outcome.code)
                        for r in self.results)
        kinds: dict[str, Counter] = {}
        for r in self.results:
            code = "hang" if r.outcome is None or r.outcome.code is None else str(r.outcome.code)
            kinds.setdefault(r.case.kind, Counter())[code] += 1
        twins = [r for r in self.results if r.twin is not None]
        return {
            "command": f"python -m tests.campaign --seed {self.seed} --size {self.size}",
            "seed": self.seed, "cases": len(self.results), "seconds": round(self.seconds, 1),
            "skipped": [{"case": i, "label": label, "why": why} for i, label, why in self.skipped],
            "workers": self.workers,
            "exit_codes": dict(sorted(codes.items())),
            "by_kind": {k: dict(sorted(v.items())) for k, v in sorted(kinds.items())},
            "by_family": dict(sorted(Counter(r.case.label.split("]")[0][1:] for r in self.results).items())),
            "expected": dict(sorted(Counter(r.case.expect for r in self.results).items())),
            "internal_errors": self.count("internal error"), "tracebacks": self.count("traceback"),
            "hangs": self.count("hang"), "silent_acceptances": self.count("silent acceptance"),
            "valid_refused": self.count("valid input refused"), "vague_errors": self.count("vague error"),
            "secrets_echoed": self.count("secret echoed"), "other_failures": sum(
                1 for r in self.failures() if not any(p.startswith(w) for p in r.problems for w in (
                    "internal error", "traceback", "hang", "silent", "valid input", "vague", "secret"))),
            "failures": len(self.failures()),
            "fresh_process_twins": {"cases": len(twins), "agree": sum(
                1 for r in twins if r.outcome is not None and r.twin.code == r.outcome.code)},
            "slowest_case_s": round(max((r.outcome.seconds for r in self.results if r.outcome), default=0.0), 1),
        }


def replay_command(seed: int, index: int) -> str:
    return f"python -m tests.campaign --seed {seed} --case {index}"


def run_campaign(size: int = DEFAULT_SIZE, seed: int = DEFAULT_SEED, workers: int = 2, only: list[int] | None = None,
                 keep: Path | None = None, progress: bool = False) -> Campaign:
    base = Path(tempfile.mkdtemp(prefix="harness-campaign-")) if keep is None else keep
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)  # a case run as nobody must reach its folder
    started = time.perf_counter()
    campaign = Campaign(seed, size, workers=workers)
    nobody = nobody_can_run()
    try:
        fx = make_fixtures(base)
        indexes = list(only) if only is not None else list(range(size))
        jobs, by_job = [], {}
        for index in list(indexes):
            case = C.make_case(seed, index)
            if case.as_nobody and not nobody:
                campaign.skipped.append((index, case.label, "as root, the case runs as nobody, who cannot reach "
                                                            f"this checkout ({ROOT})"))
                indexes.remove(index)
                continue
            folder = base / f"case-{index:05d}"
            materialise(case, folder, fx)
            job = Job(index, case.args, folder, case_env(case, folder), case.timeout, case.as_nobody and os.geteuid() == 0)
            jobs.append(job)
            by_job[id(job)] = case
            if index % EXEC_EVERY == EXEC_EVERY - 1 or only is not None:
                twin_folder = base / f"case-{index:05d}-exec"
                materialise(case, twin_folder, fx)
                twin = Job(index, case.args, twin_folder, case_env(case, twin_folder), case.timeout,
                           job.as_nobody, mode="exec")
                twin.extra["twin"] = True
                jobs.append(twin)
                by_job[id(twin)] = case
        done = [0]

        def finished(job: Job) -> None:
            done[0] += 1
            if progress and done[0] % 50 == 0:
                print(f"  {done[0]}/{len(jobs)} runs, {time.perf_counter() - started:.0f} s", file=sys.stderr)

        run_jobs(jobs, ROOT, workers, finished)
        results: dict[int, Result] = {}
        for job in jobs:
            case = by_job[id(job)]
            if job.extra.get("twin"):
                continue
            problems = [f"runner: {job.error}"] if job.error else judge(case, job.result, job.cwd)
            results[job.index] = Result(job.index, case, job.result, problems)
        for job in jobs:
            if job.extra.get("twin") and job.index in results:
                r = results[job.index]
                r.twin = job.result
                if job.result is not None and r.outcome is not None and job.result.code != r.outcome.code:
                    r.problems.append(f"the fresh process exited {job.result.code}, the forked one {r.outcome.code}")
                twin_problems = judge(r.case, job.result, job.cwd) if job.result is not None else []
                r.problems += [f"(fresh process) {p}" for p in twin_problems if p not in r.problems]
        campaign.results = [results[i] for i in indexes]
    finally:
        campaign.seconds = time.perf_counter() - started
        if keep is None:
            _remove(base)
    return campaign


def _remove(base: Path) -> None:
    def unlock(func: Any, path: str, _: Any) -> None:
        os.chmod(path, stat.S_IRWXU)
        func(path)

    for path in base.rglob("*"):
        try:
            if not path.is_symlink():
                os.chmod(path, 0o777 if path.is_dir() else 0o666)
        except OSError:
            pass
    shutil.rmtree(base, onerror=unlock)


def failure_report(campaign: Campaign, limit: int = 40) -> str:
    lines = []
    for r in campaign.failures()[:limit]:
        code = "timeout" if r.outcome is None or r.outcome.code is None else r.outcome.code
        lines.append(f"case {r.index} {r.case.label}: {'; '.join(r.problems)}\n"
                     f"    harness {' '.join(r.case.args)}  (exit {code})\n"
                     f"    error: {r.error() or '-'}\n"
                     f"    replay: {replay_command(campaign.seed, r.index)}")
        if r.outcome is not None and (TRACEBACK in r.outcome.stderr or "internal error" in r.outcome.stderr):
            lines.append("    " + "\n    ".join(r.outcome.stderr.strip().splitlines()[-6:]))
    more = len(campaign.failures()) - limit
    return "\n".join(lines + ([f"... and {more} more"] if more > 0 else []))


def write_report(campaign: Campaign, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    import harness

    doc = {"description": "The bad-input campaign (tests/campaign): malformed and hostile inputs through the real "
                          "CLI; every case must end in exit 0 or in one exit-2 line naming the file or option, "
                          "never in exit 3, a traceback, a hang, a silent acceptance or an echoed secret.",
           "reproduce": f"make reliability (python -m tests.campaign --seed {campaign.seed} --size {campaign.size} "
                        f"--out {out})",
           **campaign.summary(),
           "failed_cases": [{"case": r.index, "label": r.case.label, "problems": r.problems,
                             "command": "harness " + " ".join(r.case.args), "error": r.error(),
                             "replay": replay_command(campaign.seed, r.index)} for r in campaign.failures()],
           "environment": {"harness": harness.__version__, "commit": _commit(), "python": platform.python_version(),
                           "platform": platform.platform(), "cpu_count": os.cpu_count(),
                           "as_root": os.geteuid() == 0}}
    doc.pop("seconds")
    doc["seconds"] = round(campaign.seconds, 1)
    json_path = out / "campaign.json"
    json_path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    s = campaign.summary()
    md = [f"# Bad-input campaign: {s['cases']} generated inputs", "",
          f"Seed {campaign.seed}, {s['cases']} cases through the real CLI in {campaign.seconds:.0f} s "
          f"({campaign.workers} workers). Reproduce: `{doc['reproduce']}`.", "",
          "| outcome | cases |", "|---|---:|",
          *(f"| {k} | {v} |" for k, v in (("exit 0", s["exit_codes"].get("0", 0)),
                                          ("exit 1 (gate verdict)", s["exit_codes"].get("1", 0)),
                                          ("exit 2 (one line naming the file or option)", s["exit_codes"].get("2", 0)),
                                          ("exit 3 (internal error)", s["internal_errors"]),
                                          ("tracebacks", s["tracebacks"]), ("hangs", s["hangs"]),
                                          ("silent acceptances", s["silent_acceptances"]),
                                          ("valid inputs refused", s["valid_refused"]),
                                          ("vague errors", s["vague_errors"]),
                                          ("secrets echoed", s["secrets_echoed"]),
                                          ("failed cases (any of the above)", s["failures"]))),
          "", "| kind of input | cases | exit codes |", "|---|---:|---|",
          *(f"| {k} | {sum(v.values())} | {', '.join(f'{c}: {n}' for c, n in v.items())} |"
            for k, v in s["by_kind"].items()), ""]
    md_path = out / "campaign.md"
    md_path.write_text("\n".join(md), encoding="utf-8")
    return [json_path, md_path]


def _commit() -> str | None:
    """The checkout's commit (and "+changes" when its tracked files differ from it), or None."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+changes" if dirty else "")) or None


def main(argv: list[str] | None = None) -> int:
    import argparse

    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["serve"]:
        from tests.campaign.runner import serve

        serve()
        return 0
    parser = argparse.ArgumentParser(prog="python -m tests.campaign", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=int(os.environ.get("HARNESS_CAMPAIGN_SIZE", DEFAULT_SIZE)))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("HARNESS_CAMPAIGN_SEED", DEFAULT_SEED)))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--case", type=int, action="append", help="replay these cases (keeps their folders)")
    parser.add_argument("--out", type=Path, help="write campaign.json and campaign.md here")
    parser.add_argument("--keep", type=Path, help="make the case folders here and keep them")
    args = parser.parse_args(argv)
    keep = args.keep
    if args.case and keep is None:
        keep = Path(tempfile.mkdtemp(prefix="harness-campaign-replay-"))
    campaign = run_campaign(args.size, args.seed, args.workers, args.case, keep, progress=True)
    if args.case:
        for r in campaign.results:
            print(f"case {r.index} {r.case.label}\n  folder: {keep / f'case-{r.index:05d}'}\n"
                  f"  harness {' '.join(r.case.args)}\n  expect: {r.case.expect}, naming {r.case.names}")
            for o in (r.outcome, r.twin):
                if o is not None:
                    print(f"  [{o.mode}] exit {o.code} in {o.seconds:.1f} s\n  stdout: {o.stdout[-1500:]}\n"
                          f"  stderr: {o.stderr[-3000:]}")
            print(f"  problems: {r.problems or 'none'}")
    s = campaign.summary()
    print(json.dumps({k: v for k, v in s.items() if k not in ("by_family",)}, indent=1))
    if campaign.failures():
        print(failure_report(campaign, 200))
    if args.out:
        for path in write_report(campaign, args.out):
            print(f"wrote {path}")
    return 1 if campaign.failures() else 0
