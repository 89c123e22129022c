"""Inputs: what a run indexes and asks, each reduced to a layout (Markdown files + provenance spans)
and queries with graded relevant documents.

    layout.py           Layout, Span, Query, LayoutWriter; reading text inputs; the DATASETS registry
    king78.py           the project's 78-record corpus and the four rounds' layouts
    public.py           BEIR folders and SQuAD-style JSON (CMRC 2018)
    locomo.py           LoCoMo conversations as dated memory files, one workspace per conversation
    t2ranking.py        the 100-query T2Ranking sample (pos relevant, neg judged non-relevant)
    longmemeval.py      LongMemEval from the user's copy: one haystack of dated sessions per question
    conversation_dates.py  dates as people write them (Chinese, ISO 8601, LoCoMo's, LongMemEval's)
    published.py        the public files in datasets/ and the sha256 check of what a loader reads
    workspace.py        your own OpenClaw workspace (which files are indexed, your queries)
    openclaw_config.py  openclaw.json both ways
    query_files.py      queries in YAML or JSONL
    workspace_init.py   `harness init`
"""
