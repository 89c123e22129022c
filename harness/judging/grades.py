"""`harness judge ... --import FILE`: grades written in a file, applied to the pool as explicit judgments.

The grades file (YAML) maps a query's text, as the pool holds it, to the files that answer it and their grade:

    "Atlas kickoff decision": {memory/2026-01-12.md: 3, memory/projects/atlas.md: 2}
    "张磊 借书": {memory/2026-01-12.md: 3, MEMORY.md: 2}

Grades are 0-3 as in the page (0 not relevant, 1 marginally, 2 relevant, 3 answers it).  A file's grade applies
to every pooled chunk of that file; every other pooled chunk of a listed query is graded 0; a pooled query the
file does not list stays ungraded.  Query texts match after the mining's normalisation (case, width, spaces), so
a text copied from `queries.yaml` or the page matches.  `make openclaw-home` grades the example installation's
pool this way (datasets/example-openclaw-home-labels/grades.yaml).  Every grade is recorded with the file it came
from as its judge, beside (never instead of) the page's grades of other chunks.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.errors import DataError
from harness.inputs.session_mining import dedupe_key, normalise


def grader_name(grades_file: Path | str) -> str:
    """The judge recorded with each imported grade: `grades file (PATH)`."""
    return f"grades file ({Path(grades_file).as_posix()})"


def load_grades(path: Path | str) -> dict[str, dict[str, int]]:
    """{query text: {display path: grade}}; a wrong entry is one error naming the file, the line and the field."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, None, None, f"not UTF-8 (byte {exc.start})") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DataError(path, mark.line + 1 if mark else None, None,
                        f"not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise DataError(path, root.start_mark.line + 1, None, "expected a mapping {query text: {file: grade}}")
    out: dict[str, dict[str, int]] = {}
    for key, value in root.value:
        line = key.start_mark.line + 1
        if not isinstance(key, yaml.ScalarNode) or not str(key.value).strip():
            raise DataError(path, line, None, "a query's text must be a non-empty string")
        query = str(key.value)
        if not isinstance(value, yaml.MappingNode):
            raise DataError(path, line, query, "expected {file: grade, ...}")
        files: dict[str, int] = {}
        for fkey, fvalue in value.value:
            fline = fkey.start_mark.line + 1
            name = str(fkey.value) if isinstance(fkey, yaml.ScalarNode) else ""
            grade = fvalue.value if isinstance(fvalue, yaml.ScalarNode) else None
            if not name.strip():
                raise DataError(path, fline, query, "a file must be a display path (memory/2026-01-12.md)")
            if grade not in ("0", "1", "2", "3"):
                raise DataError(path, fline, f"{query}: {name}", f"a grade must be 0, 1, 2 or 3, got {grade!r}")
            files[name] = int(grade)
        key_text = dedupe_key(normalise(query))
        if key_text in out:
            raise DataError(path, line, query, "listed twice (after normalising case and spaces)")
        out[key_text] = files
    return out


def apply_grades(pool: Any, store: Any, grades_file: Path | str) -> dict[str, int]:
    """Grade the pool from a grades file (this module's docstring); returns counts: `graded` chunks, `queries`
    listed and pooled, `unlisted` pooled queries the file does not list, `unmatched` entries of the file that
    match no pooled query."""
    by_key = load_grades(grades_file)
    judge = grader_name(grades_file)
    counts = {"graded": 0, "queries": 0, "unlisted": 0, "unmatched": 0}
    seen = set()
    for qid, q in pool.queries.items():
        key = dedupe_key(normalise(q.text))
        files = by_key.get(key)
        if files is None:
            counts["unlisted"] += 1
            continue
        seen.add(key)
        counts["queries"] += 1
        for item in q.items:
            store.put(qid, item.path, item.start, item.end, int(files.get(item.path, 0)), judge=judge)
            counts["graded"] += 1
    counts["unmatched"] = len(set(by_key) - seen)
    return counts
