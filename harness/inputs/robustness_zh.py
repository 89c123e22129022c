"""king78-forms: the Chinese robustness suite (datasets/robustness-zh/) over the king78 memory.

Each question of `questions.jsonl` (hand-written: the king78 T-queries and a new set R1-R24 over the same
records) is asked in one form per run:

    clean        the question as the other king78 studies ask it (simplified script)
    traditional  the same in traditional script, Taiwan phrasing (OpenCC s2twp over the clean form)
    english      an English rewording (hand-written)
    colloquial   a colloquial Chinese rewording (hand-written: 挂了 for 崩溃, 小鸡 for VPS ...)
    fullwidth    the clean form with its ASCII in full-width forms (ＶＰＳ内存ＯＯＭ); only questions with ASCII

and the memory is the king78 records as written (`memory = "simplified"`) or converted to traditional
script (`memory = "traditional"`, records-traditional.jsonl, OpenCC s2twp).  Every form of a question keeps
the question's id, so a run of one form pairs query by query with the clean run (harness matrix compares
values on the queries both have).  `queries.jsonl` and `traditional/records.jsonl` are generated from the
hand-written files by `python -m harness.inputs.robustness_zh` (needs the opencc package) and committed,
so reading the suite needs no converter.
"""
from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any, Literal

from harness.errors import DataError
from harness.inputs.dataset import Provenance
from harness.inputs.king78 import load_records, render_king78, select_records
from harness.inputs.layout import DATASETS, Layout, Query, jsonl_objects, project_path
from harness.registry import stage

FORMS = ("clean", "traditional", "english", "colloquial", "fullwidth")
Form = Literal["clean", "traditional", "english", "colloquial", "fullwidth"]
Script = Literal["simplified", "traditional"]
HAND_WRITTEN_FORMS = ("clean", "english", "colloquial")
TRADITIONAL_CONFIG = "s2twp"  # simplified -> traditional with Taiwan phrases (记忆体 for 内存): what a Taiwan user writes


def load_forms(path: Path) -> list[dict[str, Any]]:
    """queries.jsonl of the suite: {id, relevant, clean, traditional, english, colloquial[, fullwidth]} a line."""
    out, seen = [], set()
    for lineno, obj in jsonl_objects(path):
        for key in ("id", *HAND_WRITTEN_FORMS, "traditional"):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                raise DataError(path, lineno, key, "must be a non-empty string")
        if "fullwidth" in obj and (not isinstance(obj["fullwidth"], str) or not obj["fullwidth"].strip()):
            raise DataError(path, lineno, "fullwidth", "must be a non-empty string when given")
        relevant = obj.get("relevant")
        if not isinstance(relevant, list) or not relevant or not all(isinstance(r, str) for r in relevant):
            raise DataError(path, lineno, "relevant", "must be a non-empty list of record ids")
        if obj["id"] in seen:
            raise DataError(path, lineno, "id", f"duplicate question id {obj['id']!r}")
        seen.add(obj["id"])
        out.append(obj)
    return out


def fullwidth(text: str) -> str | None:
    """ASCII letters, digits and punctuation as their full-width forms (U+FF01-FF5E), spaces as U+3000;
    None when the text has no ASCII to widen."""
    if not any("!" <= ch <= "~" for ch in text):
        return None
    return "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else "\u3000" if ch == " " else ch for ch in text)


def converter(config: str) -> Any:
    """An OpenCC converter (package opencc; opencc-python-reimplemented has the same class)."""
    try:
        import opencc
    except ImportError as exc:  # pragma: no cover - a dependency of the harness
        raise DataError("opencc", None, None, f"the opencc package is needed to convert scripts ({exc})") from None
    return opencc.OpenCC(config)


def generated_files(suite: Path, king78: Path) -> dict[str, str]:
    """{relative path: text} of what the generator writes: queries.jsonl (every form of every hand-written
    question) and traditional/records.jsonl (the king78 records in traditional script)."""
    to_traditional = converter(TRADITIONAL_CONFIG)
    lines = []
    for lineno, obj in jsonl_objects(suite / "questions.jsonl"):
        for key in ("id", *HAND_WRITTEN_FORMS):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                raise DataError(suite / "questions.jsonl", lineno, key, "must be a non-empty string")
        row = {"id": obj["id"], "relevant": obj["relevant"], "clean": obj["clean"],
               "traditional": to_traditional.convert(obj["clean"]), "english": obj["english"],
               "colloquial": obj["colloquial"]}
        wide = fullwidth(obj["clean"])
        if wide is not None:
            row["fullwidth"] = wide
        lines.append(json.dumps(row, ensure_ascii=False))
    records = []
    for record in load_records(king78 / "records.jsonl"):
        records.append(json.dumps(_converted(record, to_traditional.convert), ensure_ascii=False))
    return {"queries.jsonl": "\n".join(lines) + "\n", "traditional/records.jsonl": "\n".join(records) + "\n"}


IDENTIFIERS = ("record_id", "link", "captured_on", "rating", "type", "source_platform")  # kept as written


def _converted(value: Any, convert: Any, key: str | None = None) -> Any:
    if key in IDENTIFIERS:
        return value
    if isinstance(value, str):
        return convert(value)
    if isinstance(value, list):
        return [_converted(v, convert) for v in value]
    if isinstance(value, dict):
        return {k: _converted(v, convert, k) for k, v in value.items()}
    return value


@DATASETS.register("king78-forms")
@stage
class King78Forms:
    """The Chinese robustness suite (datasets/robustness-zh/): the king78 memory (as written or in
    traditional script) and one form of every question of the suite.  Queries are independent draws
    (each question its own resampling unit); every form of a question has the question's id."""

    RESAMPLING_UNIT = "query"
    PROVENANCE = Provenance("the project's own text, under its licence", ("datasets/robustness-zh", "datasets/king78"),
                            ("datasets/robustness-zh/README.md", "datasets/king78/README.md"))

    suite: str | Path = "datasets/robustness-zh"
    """the suite's folder (queries.jsonl, traditional/records.jsonl)"""
    king78: str | Path = "datasets/king78"
    """the king78 folder whose records are the memory"""
    form: Form = "clean"
    """which form of every question is asked: clean, traditional, english, colloquial or fullwidth"""
    memory: Script = "simplified"
    """the memory's script: "simplified" (the records as written) or "traditional\""""

    def __post_init__(self) -> None:
        self.suite = project_path(self.suite)
        self.king78 = project_path(self.king78)

    @property
    def records_dir(self) -> Path:
        return Path(self.king78) if self.memory == "simplified" else Path(self.suite) / "traditional"

    def files(self) -> list[Path]:
        return [Path(self.suite) / "queries.jsonl", self.records_dir / "records.jsonl"]

    def queries(self) -> list[Query]:
        out = []
        for obj in load_forms(Path(self.suite) / "queries.jsonl"):
            if self.form in obj:
                out.append(Query(obj["id"], obj[self.form], {r: 1 for r in obj["relevant"]}, "suite", None,
                                 {"form": self.form}))
        return out

    def render(self, dest: Path | str | None = None, **layout_options: Any) -> Layout:
        return render_king78(self.records_dir, dest=dest, **layout_options)

    def check_layout(self, options: dict[str, Any]) -> None:
        try:
            inspect.signature(render_king78).bind(self.records_dir, **options)
        except TypeError as exc:
            raise TypeError(f"{exc} (king78's layout options: daily_logs, combined, records, keywords, tags)") from None
        if options.get("daily_logs"):
            raise ValueError("daily_logs: the robustness suite's memory is the records alone (daily_logs = false)")
        select_records(load_records(self.records_dir / "records.jsonl"), options.get("records", "all"))


def main(argv: list[str] | None = None) -> int:
    """python -m harness.inputs.robustness_zh [SUITE [KING78]]: regenerate the suite's derived files."""
    args = sys.argv[1:] if argv is None else argv
    suite = Path(args[0] if args else "datasets/robustness-zh")
    king78 = Path(args[1] if len(args) > 1 else "datasets/king78")
    for name, text in generated_files(suite, king78).items():
        (suite / name).parent.mkdir(parents=True, exist_ok=True)
        (suite / name).write_text(text, encoding="utf-8")
        print(f"wrote {suite / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
