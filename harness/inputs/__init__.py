"""Inputs: what a run indexes and asks, each reduced to a layout (Markdown files + provenance spans)
and queries with graded relevant documents.

    layout.py           Layout, Span, Query, LayoutWriter; reading text inputs; the DATASETS registry
    dataset.py          the Dataset protocol every registered data set keeps (provenance, files, queries,
                        render) and the shared base of the published-file ones
    king78.py           the project's 78-record corpus and the four rounds' layouts
    public.py           BEIR folders and SQuAD-style JSON (CMRC 2018)
    locomo.py           LoCoMo conversations as dated memory files, one workspace per conversation
    t2ranking.py        the 100-query T2Ranking sample (pos relevant, neg judged non-relevant)
    longmemeval.py      LongMemEval from the user's copy: one haystack of dated sessions per question
    conversation_dates.py  dates as people write them (Chinese, ISO 8601, LoCoMo's, LongMemEval's)
    published.py        the public files in datasets/ and the sha256 check of what a loader reads
    workspace.py        your own OpenClaw workspace as a data set
    workspace_files.py  which of its files are indexed, and their texts
    workspace_targets.py  a queries file's targets resolved on them (doc ids, provenance spans)
    openclaw_config.py  openclaw.json -> settings (openclaw_snippets.py: settings -> openclaw.json)
    openclaw_sessions.py  an agent's session transcripts read (openclaw_session_entries.py: what they hold)
    query_files.py      queries in YAML or JSONL
    workspace_init.py   `harness init`
"""
