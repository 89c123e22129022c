"""Running a case through the real CLI, and judging what came out.

A case runs `harness ARGS` in its own process, in its own folder, with its own environment.  Starting a
fresh interpreter costs 1-2 s of imports on a loaded 2-core machine, so by default the cases run in
*fork servers*: a few long-lived processes that import the harness once and fork one child per case;
the child sets its folder, environment and file descriptors, calls the CLI's entry point exactly as
`harness` does, and exits with its exit code.  `exec` mode starts `python -m harness.cli` instead, and
the campaign runs a share of its cases both ways to check that the two agree.

Each child gets an alarm: a case still running after its timeout is killed and counted as a hang.
"""
from __future__ import annotations

import io
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

NOBODY = 65534  # the uid/gid a case that needs an unreadable file runs as, when the campaign runs as root


@dataclass
class Outcome:
    """What one case did: its exit code (None: killed at its timeout), what it printed, how long."""

    code: int | None
    stdout: str
    stderr: str
    seconds: float
    mode: str  # "fork" or "exec"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _preload() -> None:
    """What every case would import: loaded once in the server, shared by its forked children."""
    import harness.cli  # noqa: F401
    import harness.evaluation.run_files  # noqa: F401
    import harness.inputs.workspace_init  # noqa: F401
    import harness.reporting.gate_report  # noqa: F401
    import harness.reporting.markdown  # noqa: F401
    import harness.studies.experiment  # noqa: F401
    import harness.gate.run  # noqa: F401
    from harness.catalog import registries

    for registry in registries().values():
        registry.names()  # imports every built-in stage


def _child(spec: dict[str, Any]) -> int:
    """In the forked child: become the case's process, run the CLI, return its exit code."""
    os.setpgid(0, 0)
    os.chdir(spec["cwd"])
    os.environ.clear()
    os.environ.update(spec["env"])
    out = os.open(spec["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    err = os.open(spec["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
    if spec.get("as_nobody"):
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    signal.alarm(int(spec["timeout"]))
    from harness.cli.common import app

    try:
        app(args=list(spec["args"]), prog_name="harness")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # what an uncaught exception does to `harness`: a traceback and exit 1
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def serve() -> None:
    """The fork server: one JSON case spec per line on stdin, one JSON outcome per line on stdout."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _preload()
    reply = sys.stdout
    for line in sys.stdin:
        spec = json.loads(line)
        reply.flush()
        sys.stderr.flush()
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _child(spec)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        seconds = time.perf_counter() - start
        try:
            os.killpg(pid, signal.SIGKILL)  # whatever the case started and left behind
        except (ProcessLookupError, PermissionError):
            pass
        code = os.waitstatus_to_exitcode(status)
        reply.write(json.dumps({"code": None if code == -signal.SIGALRM else code, "seconds": seconds}) + "\n")
        reply.flush()


class ForkServer:
    """A `python -m tests.campaign serve` process, fed one case at a time."""

    def __init__(self, root: Path):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.campaign", "serve"], cwd=root, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def run(self, spec: dict[str, Any], budget: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(spec) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], budget)
        if not ready:  # the alarm did not stop it: the server itself is stuck
            self.proc.kill()
            raise RuntimeError(f"fork server gave no answer within {budget:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("fork server died")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _drop_to_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def run_exec(args: list[str], cwd: Path, env: dict[str, str], timeout: float, as_nobody: bool) -> Outcome:
    """The case as a user runs it: a fresh `python -m harness.cli` process."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env, capture_output=True,
                              timeout=timeout, preexec_fn=_drop_to_nobody if as_nobody else None,
                              start_new_session=True)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code = None
        out, err = exc.stdout or b"", exc.stderr or b""
    return Outcome(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                   time.perf_counter() - start, "exec")


@dataclass
class Job:
    index: int
    args: list[str]
    cwd: Path
    env: dict[str, str]
    timeout: float
    as_nobody: bool = False
    mode: str = "fork"
    result: Outcome | None = None
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def run_jobs(jobs: list[Job], root: Path, workers: int, on_done: Any = None) -> None:
    """Run every job (fork jobs on `workers` fork servers, exec jobs as fresh processes)."""
    todo: queue.Queue[Job] = queue.Queue()
    for job in jobs:
        todo.put(job)

    def work() -> None:
        server: ForkServer | None = None
        try:
            while True:
                try:
                    job = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    if job.mode == "exec":
                        job.result = run_exec(job.args, job.cwd, job.env, job.timeout, job.as_nobody)
                    else:
                        if server is None:
                            server = ForkServer(root)
                        spec = {"args": job.args, "cwd": str(job.cwd), "env": job.env, "timeout": job.timeout,
                                "stdout": str(job.cwd / ".stdout"), "stderr": str(job.cwd / ".stderr"),
                                "as_nobody": job.as_nobody}
                        answer = server.run(spec, job.timeout + 120)
                        job.result = Outcome(answer["code"], _read(job.cwd / ".stdout"), _read(job.cwd / ".stderr"),
                                             answer["seconds"], "fork")
                except Exception as exc:  # the runner's own trouble: reported with the case, never hidden
                    job.error = f"{type(exc).__name__}: {exc}"
                    if server is not None:
                        server.close()
                        server = None
                if on_done is not None:
                    on_done(job)
        finally:
            if server is not None:
                server.close()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _read(path: Path) -> str:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    path.unlink()
    return text
