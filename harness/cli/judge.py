"""`harness judge`: pooled labelling of an experiment's queries (harness.judging)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from harness.cli.common import command
from harness.errors import ConfigError


@command()
def judge(experiments: list[Path] = typer.Argument(..., help="experiment TOML(s) whose queries to pool, e.g. "
                                                              "evals/openclaw-main/experiment.toml holdout.toml"),
          pool: Optional[Path] = typer.Option(None, help="pool file (default: pool.toml beside the first experiment)"),
          port: int = typer.Option(0, help="port of the page on 127.0.0.1 (default: any free one)"),
          page: bool = typer.Option(True, help="serve the labelling page (--no-page: pool and export only)"),
          import_: Optional[Path] = typer.Option(None, "--import", help="grade the pool from a grades file (YAML: "
                                                 "{query text: {file: grade 0-3}}; harness.judging.grades), "
                                                 "then export without serving the page"),
          labeller: Optional[str] = typer.Option(None, help="who grades: stored with every grade (default: your "
                                                            "login name)"),
          llm: bool = typer.Option(False, "--llm", help="also grade every pooled chunk with an LLM judge (\\[chat] in "
                                                        "the pool file, or --chat-url/--chat-model)"),
          chat_url: Optional[str] = typer.Option(None, help="the LLM judge's OpenAI-compatible API root"),
          chat_model: Optional[str] = typer.Option(None, help="the LLM judge's model name"),
          chat_key_env: Optional[str] = typer.Option(None, help="environment variable holding the LLM judge's key"),
          extend: Optional[Path] = typer.Option(None, help="add these configurations' chunks to the pool (a file "
                                                           "`harness sweep` writes for a setting it would not "
                                                           "recommend while its top-k is mostly unjudged)"),
          redact: Optional[bool] = typer.Option(None, help="mask numbers, e-mail addresses, URLs and key-like strings "
                                                           "in the page and the report (default: the experiment's "
                                                           "redact setting in \\[evaluation])")) -> None:
    """Pool the top-k chunks of several configurations per query and grade them 0-3 in a local page (or by an
    LLM); writes TREC qrels, a judged queries file and a judged experiment for run, sweep, gate and diff."""
    from harness.judging.lock import JudgeLock
    from harness.judging.page import check_port
    from harness.judging.run import judge_dir_of

    check_port(port)
    who = labeller.strip() if labeller and labeller.strip() else _login()
    # one `harness judge` per folder: a second one refuses before it pools or opens a page (lock.py says why)
    with JudgeLock(judge_dir_of(experiments), who) as lock:
        _judge(experiments, pool, port, page, import_, llm, chat_url, chat_model, chat_key_env, extend, redact, who,
               lock)


def _login() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return "page"


def _judge(experiments: list[Path], pool: Optional[Path], port: int, page: bool, import_: Optional[Path], llm: bool,
           chat_url: Optional[str],
           chat_model: Optional[str], chat_key_env: Optional[str], extend: Optional[Path], redact: Optional[bool],
           who: str, lock: Any) -> None:
    from harness.reporting.judge import write_judge_report
    from harness.judging.run import finish, prepare

    session = prepare(experiments, pool_file=pool, extend=extend, redact=redact, log=typer.echo)
    if import_ is not None:
        from harness.judging.grades import apply_grades

        counts = apply_grades(session.pool, session.store, import_)
        typer.echo(f"imported {import_}: {counts['graded']} chunks of {counts['queries']} queries graded; "
                   f"{counts['unlisted']} pooled queries not in the file, {counts['unmatched']} of its queries not "
                   "pooled")
        page = False
    llm_doc = None
    if llm:
        from harness.judging.llm import build_chat, llm_judge
        from harness.judging.pool import load_pool_spec

        table = load_pool_spec(pool or Path(experiments[0]).resolve().parent / "pool.toml").chat
        if chat_url or chat_model:
            if not (chat_url and chat_model):
                raise ConfigError("--chat-url and --chat-model go together")
            table = {"name": "openai-compatible", "base_url": chat_url, "model": chat_model,
                     **({"api_key_env": chat_key_env} if chat_key_env else {})}
        llm_doc = llm_judge(session.pool, session.store, build_chat(table), log=typer.echo)
    if page:
        from harness.judging.page import JudgePage

        server = JudgePage(session.pool, session.store, redact=session.redact, port=port, who=who)
        lock.note(url=server.url)
        typer.echo(f"labelling page: {server.url}  (127.0.0.1 only; each grade is saved as you press it, with "
                   f"your name, {who}; Ctrl-C when you are done, reopen any time to resume)")
        ended = server.serve()
        if ended == "SIGHUP":  # the terminal is gone: export all the same, printing nowhere
            _detach_output()
        typer.echo(f"{server.saved} grades saved in this session (ended by {ended}); exporting them")
    doc = write_judge_report(finish(session, llm_doc), session.judge_dir, session.redact)
    typer.echo(f"graded {doc['graded']} of {doc['items']} pooled chunks ({doc['queries_fully_graded']} of "
               f"{doc['queries']} queries fully)")
    for a in doc["agreement"]:
        low, high = a["kappa_ci95"]
        interval = "n too small" if low != low else f"[{low:.3f}, {high:.3f}]"
        typer.echo(f"agreement {a['name']}: kappa {a['kappa']:.3f} {interval} on {a['items']} items")
    for name, path in doc["files"].items():
        typer.echo(f"wrote {name}: {path}")


def _detach_output() -> None:
    import os
    import sys

    sink = open(os.devnull, "w", encoding="utf-8")
    sys.stdout = sys.stderr = sink
