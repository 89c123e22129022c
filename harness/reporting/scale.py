"""The scale experiment's report: scale.json, scale.md (headline, results, exponents, bandwidth,
corpus and method) and scale.png (log-log build, latency and memory against size)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from harness.reporting.documents import write_document


def _f(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def scale_markdown(result: dict[str, Any]) -> str:
    h = result["headline"]
    bw = result["bandwidth"]
    settings = result["settings"]
    lines = [
        "# Scale: build time, query latency and peak memory against corpus size",
        "",
        f"Produced by `harness.scale` ({'quick' if max(settings['sizes']) < 100_000 else 'full'} run, "
        f"{result['created']}, {result['duration_s']:.0f} s) on {result['machine']['cpus']} CPUs; load average "
        f"before {', '.join(f'{x:.1f}' for x in result['machine']['load_before'])}, after "
        f"{', '.join(f'{x:.1f}' for x in result['machine']['load_after'])} (other work on the machine shows up "
        "in latency, so the bandwidth and the backends are measured in the same run).",
        "",
        "## Headline",
        "",
    ]
    if "fastest_exact" in h:
        lines += [
            f"- Memory bandwidth measured in this run: **{h['bandwidth_gbps']:.1f} GB/s**; streaming "
            f"{h['size']:,} x {settings['dim']} float32 vectors ({h['size'] * settings['dim'] * 4 / 1e6:.1f} MB) once "
            f"takes **{h['stream_ms']:.2f} ms**.",
            f"- Fastest exact vector backend at {h['size']:,}: **{h['fastest_exact']}**, median "
            f"{h['fastest_exact_p50_ms']:.2f} ms = **{_f(h['fastest_exact_local_ratio'])}x** the time to stream "
            f"the same vectors measured between the vector queries of this size ({_f(h['local_stream_ms'])} ms), "
            f"{h['fastest_exact_ratio']:.2f}x the stream time at the run's best bandwidth "
            f"(best query {h['fastest_exact_ratio_min']:.2f}x): "
            f"{'within' if h['within_2x'] else 'NOT within'} 2x of the bandwidth limit"
            + ("" if h["within_2x"] == h["within_2x_of_best_bandwidth"] else
               f" ({'within' if h['within_2x_of_best_bandwidth'] else 'not within'} 2x of the best-bandwidth "
               "time: the machine was busier during the queries than at its best bandwidth reading)") + ".",
        ]
        if "sqlite_vec_p50_ms" in h:
            lines.append(
                f"- sqlite-vec (float, cosine) costs {h['sqlite_vec_p50_ms']:.2f} ms = "
                f"{_f(h['sqlite_vec_local_ratio'])}x that stream time ({h['sqlite_vec_ratio']:.2f}x the "
                f"best-bandwidth stream time), {h['sqlite_vec_vs_fastest']:.2f}x the fastest exact backend.")
    lines += ["", "## Results", "",
              "Latency is per query (k = 10, after one warm-up query). Build = add() of every chunk plus the "
              "warm-up query, setup (tokenizer, connection) excluded. Peak = resident-set high-water mark above "
              "the child's baseline (see Method). Own stream reads = median time of one streaming read of the "
              "corpus's float32 vectors, 10 reads right before and 10 right after that backend's queries; "
              "the stream time "
              "of a size is the fastest of these medians at that size, and 'ratio to stream' is the median "
              "latency over it (same machine load as the queries). 'Best-bandwidth stream' uses the run's "
              "best 512 MiB bandwidth reading instead; 'own bytes' divides by the best-bandwidth time to "
              "stream what the backend's scan reads (int8 1 byte, bit 1/8 byte per dimension). A ratio below 1 means the vectors were served from the CPU "
              "caches (10k x 384 float32 is 15 MB); the bandwidth limit holds once they exceed the last-level "
              "cache, as at 100k (154 MB).", ""]
    header = ("| size | backend | build s | setup s | p50 ms | p95 ms | peak MiB | recall@10 | own stream reads ms | "
              "ratio to stream | ratio to best-bandwidth stream | ratio to own bytes | mean hits |")
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    for row in sorted(result["rows"], key=lambda r: (r["size"], r["leg"] != "vector", r["label"])):
        lines.append(
            f"| {row['size']:,} | {row['label']}{'' if row['leg'] == 'lexical' or row.get('exact') else ' (approx.)'} "
            f"| {_f(row['build_s'])} | {_f(row['setup_s'])} | {_f(row['query_ms_p50'])} | "
            f"{_f(row['query_ms_p95'])} | {_f(row['peak_mib'], 1)} | {_f(row.get('recall_at_10'), 3)} | "
            f"{_f(row.get('paired_stream_ms'))} | {_f(row.get('ratio_to_local_stream_p50'))} | "
            f"{_f(row.get('ratio_to_stream_p50'))} | {_f(row.get('ratio_to_own_bytes_p50'))} | "
            f"{_f(row['mean_hits'], 1)} |")
    lines += ["", "## Fitted exponents (log-log slope over the sizes)", "",
              "| backend | leg | build | query p50 | peak memory |", "|---|---|---|---|---|"]
    for label, e in result["exponents"].items():
        lines.append(f"| {label} | {e['leg']} | {_f(e['build'])} | {_f(e['query_p50'])} | {_f(e['peak_mib'])} |")
    lines += ["", "## Memory bandwidth (streaming read, best of each kernel)", "",
              "| kernel | " + " | ".join(f"run {i + 1} GB/s" for i in range(len(bw["runs"]))) + " |",
              "|---|" + "---|" * len(bw["runs"])]
    for kernel in bw["runs"][0]["gbps"]:
        lines.append(f"| {kernel} | " + " | ".join(_f(r["gbps"].get(kernel), 1) for r in bw["runs"]) + " |")
    lines += ["", "Stream time of the float32 vectors at the best bandwidth: "
              + ", ".join(f"{int(n):,}: {t:.3f} ms" for n, t in bw["stream_ms"].items()) + "."]
    if result["skipped"] or result["messages"]:
        lines += ["", "## Skipped", ""]
        lines += [f"- {m}" for m in result["messages"]]
        lines += [f"- n={s['size']:,} {s['label']}: {s['reason']}" for s in result["skipped"]]
    vm = settings["vector_model"]
    voc = result["vocabulary"]
    lines += [
        "", "## Corpus", "",
        f"- Text: {voc['han_words']:,} Chinese words and {voc['latin_terms']:,} Latin terms from king78 "
        f"(segmented by jieba), Latin share of word tokens {voc['latin_share_of_word_tokens']:.3f}, "
        f"mean chunk length {settings['mean_chars']} characters (uniform 0.5x-1.5x). Script mix of the source "
        f"{voc['source_script_mix']}; of the generated text "
        + "; ".join(f"{int(n):,}: {c['script_mix_first_5000']}" for n, c in result["corpus"].items()) + ".",
        f"- Queries: {settings['queries']} per backend and size; text queries are "
        "two content words from one random chunk; vector queries are a random chunk's vector plus noise "
        f"(cosine ~{vm['query_cos']}).",
        f"- Vectors: {settings['dim']}-dim unit vectors, hierarchical topics (same sub-topic cosine "
        f"~{vm['subtopic_cos']}, same topic ~{vm['topic_cos']}, sub-topics of ~{vm['subtopic_size']:g} chunks, "
        f"topics of ~{vm['topic_size']:g} with Zipf({vm['zipf']}) popularity).",
        f"- Lexical backends other than FTS5 use the `{settings['bag_of_words_tokenizer']}` tokenizer.",
        "", "## Method", "",
        "- Each backend and size runs in its own forked child process. The child returns freed heap pages "
        "to the kernel (`malloc_trim`, so memory the parent freed cannot absorb the child's allocations), "
        "resets its resident-set high-water mark (`/proc/self/clear_refs`), builds the index and runs the queries; peak memory is "
        "VmHWM minus the resident set at the reset, i.e. what the backend allocated on top of the corpus it "
        "inherited (tokenizer dictionaries and SQLite pages included).",
        "- Stream time of a size: in each vector backend's child, 10 reads of the corpus's float32 vectors "
        "(n x dim x 4 bytes) right before and 10 right after its queries, each with np.max on one thread and "
        "on every core, the faster counted; the fastest backend median at that size is the reference (a "
        "numpy backend's own reads can be slowed by its BLAS threads still spinning after a query). On a "
        "shared machine the load changes within a run; these reads see the same load as the queries, "
        "seconds apart. They are not interleaved with the queries: that let BLAS worker threads fall "
        "asleep between queries and made the numpy backends ~20x slower at 10k.",
        "- Bandwidth: a 512 MiB buffer (far above the caches) read by several kernels on one thread and on "
        "every core, best of several repetitions each, at the start, before the largest size and at the end "
        "of the run; the best of all is the limit used for every ratio (other work on the machine can only "
        "lower a reading).",
        "- sqlite-vec int8/bit: the quantised vec0 table is scanned for k x oversample candidates, which are "
        "re-scored exactly from their float32 vectors (`vec_distance_cosine`); oversample "
        + ", ".join(sorted({f"{r['backend']} {r['oversample']}" for r in result["rows"] if r.get("oversample")}))
        + ". Recall@10 is against exact cosine search (ties by id).",
        "- Exponents: least-squares slope of log(value) on log(size).",
        "",
    ]
    return "\n".join(lines)


def write_scale_png(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    labels = list(dict.fromkeys(r["label"] for r in rows))
    fig, axes = plt.subplots(1, 3, figsize=(18, 6))
    panels = (("build_s", "index build (s)"), ("query_ms_p50", "query latency, median (ms)"),
              ("peak_mib", "peak memory above baseline (MiB)"))
    cmap = plt.get_cmap("tab20")
    for ax, (key, title) in zip(axes, panels):
        for i, label in enumerate(labels):
            mine = sorted((r for r in rows if r["label"] == label), key=lambda r: r["size"])
            xs = [r["size"] for r in mine]
            ys = [max(r[key], 1e-3) for r in mine]
            style = "-" if mine[0]["leg"] == "vector" else "--"
            exp = result["exponents"][label].get("query_p50" if key == "query_ms_p50" else
                                                 "build" if key == "build_s" else "peak_mib")
            ax.plot(xs, ys, style, marker="o" if mine[0]["leg"] == "vector" else "s", color=cmap(i % 20),
                    label=f"{label} ({_f(exp)})" if exp is not None else label)
        if key == "query_ms_p50":
            sizes = [int(n) for n in result["bandwidth"]["stream_ms"]]
            ax.plot(sizes, list(result["bandwidth"]["stream_ms"].values()), ":", color="black", linewidth=2,
                    label=f"stream float32 vectors at {result['bandwidth']['best_gbps']:.1f} GB/s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("chunks")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, title="backend (exponent)", title_fontsize=7, loc="best")
    fig.suptitle("Scale: solid = vector backends, dashed = lexical backends (log-log)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_scale_report(result: dict[str, Any], out_dir: Path | str) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_document(out_dir / "scale.json", "scale", result)
    (out_dir / "scale.md").write_text(scale_markdown(result), encoding="utf-8")
    write_scale_png(result, out_dir / "scale.png")
    return out_dir
