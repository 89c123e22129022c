"""An example study kind: one experiment with several presets, and each preset's suite pass rate.

The whole kind is one spec (a pydantic model), one `cells`, one `analyse` (-> a Document) and one
`render(document, out_dir)`; the base class's `run` loads the file, runs the cells, writes NAME.json and
calls `render`.  A file of it:

    kind = "preset-passes"
    name = "passes"
    experiment = "experiments/round3.toml"
    presets = ["openclaw-2026.02", "qmd"]

`harness study FILE` runs it (`--dry-run`: its cells), `harness schema --kind preset-passes` is its schema.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.studies.document import Document
from harness.study_kinds import StudyKind


class PresetPassesSpec(BaseModel):
    """One experiment run with each of several presets: the suite's pass rate per preset."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["preset-passes"]
    name: str = Field(min_length=1)
    experiment: str
    presets: list[str] = Field(min_length=1)
    overrides: dict[str, Any] = {}


class PresetPasses(StudyKind):
    """The suite's pass rate of one experiment under each of several presets."""

    what = "preset-passes spec"
    model = PresetPassesSpec

    def cells(self, spec: PresetPassesSpec, *, preset: str | None = None) -> list[Any]:
        from harness.config import load_experiment
        from harness.inputs.layout import project_path
        from harness.studies.spec.cells import StudyCell

        return [StudyCell(p, load_experiment(project_path(spec.experiment), preset=p, **spec.overrides), (p,))
                for p in ([preset] if preset else spec.presets)]

    def analyse(self, spec: PresetPassesSpec, cells: Any, results: Any) -> Document:
        rows = [{"preset": cell.label, "queries": r.summary["suite"]["queries"], "passed": r.summary["suite"]["passed"]}
                for cell, r in zip(cells, results)]
        return Document(self.name, {"name": spec.name, "experiment": spec.experiment, "rows": rows}, spec.model_dump())

    def render(self, document: Any, out_dir: Path) -> Path:
        lines = [f"# {document['name']}\n", "| preset | passed |", "|---|---|"]
        lines += [f"| {row['preset']} | {row['passed']}/{row['queries']} |" for row in document["rows"]]
        page = out_dir / f"{document['name']}.md"
        page.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return page
