"""`harness diff` output: the console table, Markdown and a self-contained HTML page (diff.html.j2).

Each moved query shows both runs' returned chunks side by side: rank, score, whether the chunk is
relevant, and the snippet (its first line in the console and Markdown, the whole text in HTML).
"""
from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.studies.query_diff import DiffResult, HitView, QueryDiff, Side
from harness.reporting.html import templates
from harness import __version__

HEAD = 60  # characters of a snippet's first line in the console and Markdown


def first_line(text: str, width: int = HEAD) -> str:
    line = next((s.strip() for s in (text or "").splitlines() if s.strip()), "(empty)")
    return line if len(line) <= width else line[:width] + "…"


def direction(q: QueryDiff) -> str:
    if q.now.reciprocal_rank != q.base.reciprocal_rank:
        return "better" if q.now.reciprocal_rank > q.base.reciprocal_rank else "worse"
    if q.base.passed != q.now.passed:
        return "better" if q.now.passed else "worse"
    return "other"


def _side_head(side: Side) -> str:
    text = side.rank_text() + (" · passed" if side.passed else " · not passed")
    if side.margin is not None:
        text += f" · margin {side.margin:+.4f}" + (" (near tie)" if side.near_tie else "")
    return text


def _hit_line(h: HitView) -> str:
    mark = "✓" if h.relevant else " "
    score = f"{h.score:.4f}" if h.score is not None else "—"
    return f"{h.rank}. {mark} {score} {h.chunk}\n     {first_line(h.snippet)}"


def print_diff(d: DiffResult, hits: int = 3, limit: int | None = None, console: Console | None = None) -> None:
    console = console or Console()
    console.print(f"baseline {d.base_path} ({d.base_label})\nnow      {d.now_path} ({d.now_label})")
    if d.config_changes:
        console.print(f"configuration: {len(d.config_changes)} difference(s)", highlight=False)
        for change in d.config_changes:
            console.print(f"  {change}", highlight=False, markup=False)
    else:
        console.print("configuration: the same (what moved comes from the data, the queries or the versions)")
    console.print(f"{len(d.moved)} of {d.compared} queries moved (rank of the relevant chunk, pass or top-1), "
                  "largest change of reciprocal rank first")
    for note in d.notes:
        console.print(f"note: {note}")
    for q in d.moved[:limit]:
        table = Table(title=f"{q.key} {q.text}  ({q.kind}; {'; '.join(q.changes)}; moved {q.moved:.3f})",
                      title_justify="left", show_lines=False, expand=True)
        table.add_column("baseline: " + _side_head(q.base), ratio=1, overflow="fold")
        table.add_column("now: " + _side_head(q.now), ratio=1, overflow="fold")
        rows = max(min(hits, len(q.base.hits)), min(hits, len(q.now.hits)), 1)
        for i in range(rows):
            table.add_row(*(_hit_line(s.hits[i]) if i < len(s.hits) else ("nothing returned" if i == 0 else "")
                            for s in (q.base, q.now)))
        for s_index, side in enumerate((q.base, q.now)):  # the relevant chunk when it ranked below the shown
            if side.rank and side.rank > rows and side.rank <= len(side.hits):
                cells = ["", ""]
                cells[s_index] = "…\n" + _hit_line(side.hits[side.rank - 1])
                table.add_row(*cells)
        console.print(table)
    if limit is not None and len(d.moved) > limit:
        console.print(f"... and {len(d.moved) - limit} more (--limit)")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def diff_markdown(d: DiffResult, hits: int = 3) -> str:
    lines = [f"### Per-query diff: {len(d.moved)} of {d.compared} queries moved", "",
             f"Baseline `{d.base_path}` ({_md(d.base_label)}) against `{d.now_path}` ({_md(d.now_label)}); "
             "ordered by how much the reciprocal rank of the first relevant chunk changed.", ""]
    if d.config_changes:
        lines += ["Configuration differences:", "", *(f"- `{_md(c)}`" for c in d.config_changes), ""]
    else:
        lines += ["Configuration: the same in both runs.", ""]
    lines += [f"> note: {n}" for n in d.notes]
    if d.moved:
        lines += ["| query | text | kind | what changed | moved |", "|---|---|---|---|---:|"]
        lines += [f"| {q.key} | {_md(q.text)} | {q.kind} | {_md('; '.join(q.changes))} | {q.moved:.3f} |"
                  for q in d.moved]
    for q in d.moved:
        lines += ["", f"#### {q.key} {_md(q.text)}", "",
                  f"| # | baseline: {_md(_side_head(q.base))} | now: {_md(_side_head(q.now))} |", "|---|---|---|"]
        rows = max(min(hits, len(q.base.hits)), min(hits, len(q.now.hits)), 1)
        extra = sorted({s.rank for s in (q.base, q.now) if s.rank and s.rank > rows})
        for rank in list(range(1, rows + 1)) + extra:
            cells = []
            for side in (q.base, q.now):
                h = side.hits[rank - 1] if rank <= len(side.hits) else None
                cells.append("" if h is None else
                             f"{'✓ ' if h.relevant else ''}{h.score:.4f} `{h.chunk}` {_md(first_line(h.snippet))}"
                             if h.score is not None else f"`{h.chunk}`")
            lines.append(f"| {rank} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def diff_html(d: DiffResult) -> str:
    env = templates()
    template = env.get_template("diff.html.j2")

    return template.render(version=__version__, command="harness diff", title=f"Per-query diff: {d.base_label} -> {d.now_label}", d=d,
                           notes=d.notes, direction=direction, first_line=first_line)


def write_text(path: Path | str, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
