"""init.md: what `harness init --openclaw-home` read, mined and found, from its init.json document."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.redact import maybe
from harness.inputs.home_init import init_document
from harness.reporting.documents import write_document

LANGUAGES = ("zh", "en", "mixed", "other")


def shown(path: str | Path | None) -> str:
    """A path as the report prints it: relative to the working directory when inside it, ~ for the home folder."""
    if not path:
        return "none"
    p = Path(path)
    try:
        return os.path.relpath(p) if p.is_absolute() and Path.cwd() in p.parents else str(p).replace(str(Path.home()), "~", 1)
    except ValueError:
        return str(p)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


def init_markdown(doc: dict[str, Any], *, redact: bool = False) -> str:
    inst, s, q, imp = doc["installation"], doc["sessions"], doc["queries"], doc["implicit"]
    parts = [f"# Agent {inst['agent']!r}: the questions it asked its memory\n",
             f"OpenClaw home {shown(inst['home'])} · config {shown(inst['config'])} · workspace {shown(inst['workspace'])}"
             f" · memory index {shown(inst['index'])}" + (f" (the OpenClaw {doc['release']} format)" if doc.get("release")
                                                         else "") + f" · preset {doc['preset']}.\n",
             "## Sessions\n",
             f"{s['read']} sessions read ({', '.join(f'{n} in the {f} format' for f, n in s['formats'].items())}), "
             f"{s['with_memory_search']} of them with a memory search; {s['entries']:,} transcript entries, "
             f"{s['bytes']:,} bytes. Only the queries and the memory tool calls are kept; nothing else of a transcript "
             "is written anywhere.\n"]
    ignored = []
    if s["bad_lines"]:
        ignored.append(f"{s['bad_lines']} lines skipped as not JSON: " + "; ".join(s["bad_where"][:5]))
    if s["not_transcripts"]:
        ignored.append(f"{len(s['not_transcripts'])} files that are not OpenClaw transcripts")
    if s["other_harness"]:
        ignored.append(f"{s['other_harness']} sessions of other agent harnesses")
    others = {a: n for a, n in (s["other_agents"] or {}).items() if n}
    if others:
        ignored.append("other agents' sessions: " + ", ".join(f"{a} ({n})" for a, n in others.items()))
    if ignored:
        parts += ["Ignored: " + "; ".join(ignored) + ".\n"]
    parts += ["## Queries\n",
              f"{q['calls']} memory_search calls → {q['distinct']} distinct queries ({q['duplicates']} repeats of a query "
              f"already counted); {sum(q['dropped'].values())} dropped"
              + (": " + "; ".join(f"{n} {r} ({q['dropped_why'][r]})" for r, n in q["dropped"].items()) if q["dropped"] else "")
              + ".\n"]
    rows = []
    for lang in LANGUAGES:
        counts = [q["by_language"].get(lang, 0), q["tuning_by_language"].get(lang, 0), q["held_out_by_language"].get(lang, 0)]
        if any(counts) or lang != "other":
            rows.append([lang, *counts])
    rows.append(["all", q["distinct"], q["tuning"], q["held_out"]])
    cut = f"first asked before {q['cut'][:10]}" if q["cut"] else "all of them (too few sessions to hold any out)"
    parts += _table(["language", "queries", "tuning", "held out"], rows)
    parts += ["", f"Split by time at a session boundary: tuning = {cut}; held out = the later ones, to check a "
                  "recommendation on questions asked after the ones it was chosen on. Each query's cluster (the unit "
                  "intervals resample) is the session it was first asked in.\n",
              "Most asked:\n"]
    parts += _table(["id", "query", "asked", "sessions", "language", "split"],
                    [[t["id"], maybe(t["text"], redact), t["count"], t["sessions"], t["language"], t["split"]]
                     for t in q["top"]])
    parts += ["", "## Implicit judgments (what the agent did, not a person's grades)\n",
              f"{imp['positives']} returned chunks the agent then read (memory_get) or cited; {imp['not_satisfied']} "
              f"passed over before a reformulated search ({imp['reformulated_searches']} such searches); "
              f"{imp['queries_with_positive']} of {q['distinct']} queries have a positive, {imp['queries_without']} none. "
              "By evidence: " + ", ".join(f"{k} {v}" for k, v in imp["by_evidence"].items()) + ". They are labelled "
              "`by: implicit` in the queries files and counted only by experiments with judgments = \"implicit\".\n"]
    v = doc.get("vectors")
    if v:
        parts += ["## The index's vectors\n",
                  f"{v['imported']:,} chunk vectors imported into the embedding cache as `{v['model_id']}` in "
                  f"{v['seconds']:.2f} s: runs read the corpus vectors the agent's index holds and embed no chunk again "
                  f"(queries go to the provider). Not imported: {v['without_vector']} without a vector, "
                  f"{v['wrong_length']} of another length, {sum(v['other_models'].values())} of another model.\n"]
    parts += ["## The index\n", *(f"- {f}" for f in doc["index_findings"]), ""]
    if doc["notes"]:
        parts += ["## Notes\n", *(f"- {maybe(n, redact)}" for n in doc["notes"]), ""]
    files = doc["files"]
    # `harness judge` writes its qrels into judge/ beside the experiment (harness.judging.run.judge_dir_of)
    experiment = files.get("experiment.toml")
    qrels = shown(str(Path(experiment).parent / "judge" / "qrels.trec")) if experiment else "judge/qrels.trec"
    parts += ["## Next\n",
              f"- `harness run {shown(files.get('experiment.toml'))}`: your agent's questions against its own index",
              f"- `harness judge {shown(files.get('experiment.toml'))}`: grade the pooled results in a local page "
              "(explicit judgments)",
              f"- `harness sweep {shown(files.get('experiment.toml'))} --holdout {shown(files.get('holdout.toml'))}`: "
              "tune on the earlier questions, check on the later ones",
              f"- `harness eval --run {shown(files.get('agent-run.trec'))} --qrels {qrels}`: what the agent's own "
              "memory_search returned, scored against your grades", ""]
    return "\n".join(parts)


def write_init(result: Any, *, redact: bool = False) -> None:
    """init.json (the document of what `harness init --openclaw-home` read and mined:
    harness.inputs.home_init.init_document) and init.md beside the files init wrote (result: its HomeInit,
    whose `files` gain both)."""
    doc = init_document(result)
    result.files["init.json"] = write_document(result.out / "init.json", "openclaw-home", doc)
    result.files["init.md"] = result.out / "init.md"
    result.files["init.md"].write_text(init_markdown(doc, redact=redact), encoding="utf-8")
