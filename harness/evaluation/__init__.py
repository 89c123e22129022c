"""Evaluation: judgments from the provenance map, runs, qrels, metrics and summaries.

    runs        Run = {query id: {doc id: score}}, Qrels = {query id: {doc id: grade}}; chunk and document
                (MaxP) runs from the returned hits; JudgedRuns, what results.json stores
    judgments   qrels at chunk and document level from the provenance map
    metrics     evaluate(run, qrels, ["mrr@6", "ndcg@10", ...]) (pytrec_eval), the reports' figures
                (standard_metrics) and per-query diagnostics (pass, purity, margins, leg ranks)
    run_files   TREC and ranx JSON in and out: `harness export`, `harness eval`
    per_query   one run's per-query rows; summary: their means and latency percentiles
    chunk_stats chunk sizes, purity, input-limit cuts
"""
