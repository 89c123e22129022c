"""No dead definitions in harness/: every top-level function and class of the package is used by the package
(named in code: called, imported, subclassed, passed, put in a table), or is an entry point the outside
reaches by name.  A test of a function nothing else calls does not make it alive: the function is then
kept for its test alone, and goes (issue 39 removed seven such; the AST scan below replaces vulture,
which would be one more dependency for this one check).

What counts as reached from outside, without a use in the package:
  * a decorated definition: a registered implementation (`@CHUNKERS.register`, `@STUDY_KINDS.register`),
    a typer command or callback (`@app.command`), a cached or wrapped function: the decorator is its use;
  * a name in its module's `__all__`, in pyproject.toml (scripts, entry points) or in docs/src (public API
    the documentation shows);
  * ALLOWED below, each with why.
"""
from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "harness"

# Kept on purpose, though nothing in harness/ names them.
ALLOWED = {
    # in files another branch of issue 39 is reworking now (studies/ moves to rooms; sweep becomes a kind):
    # used by their tests only, to be removed with that work
    "harness/studies/distributed.py": {"sweep_state"},  # tests/test_executor.py: the sweep state a worker gets
    "harness/studies/executor.py": {"map_partitioned"},  # tests/test_executor.py
    "harness/studies/matrix.py": {"matrix_configs"},  # tests/test_matrix.py
    "harness/studies/sweep_grid.py": {"setting_tables"},
    # the lancedb-pro preset's BM25 as whole score vectors (over scan_hits / index_hits), for its tests to compare
    "harness/stages/lexical/lancedb_fts.py": {"scan_scores", "index_scores"},
    "harness/studies/sweep_scoring.py": {"headline_summary"},
}


def _names_used(tree: ast.AST) -> set[str]:
    """Every name a module's code uses: names read, attributes, imported names, and identifier-like strings
    (a registry's "module:object", getattr by name, `__all__`)."""
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.alias):
            used.add(node.name.rsplit(".", 1)[-1])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and re.fullmatch(r"[\w.:]+", node.value):
            used.add(re.split(r"[.:]", node.value)[-1])
    return used


def dead_definitions(package: Path, outside: str, allowed: dict[str, set[str]]) -> list[str]:
    """`path:line: name` of each top-level function or class of `package` that no module of it uses and
    that is neither decorated, nor named in `outside` (the text of pyproject and the docs), nor allowed."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(package.rglob("*.py"))}
    # a definition's own name is no Name node: any use of it, in its module or another, is one
    used = set().union(*(_names_used(tree) for tree in trees.values()))
    dead = []
    for path, tree in trees.items():
        rel = path.relative_to(package.parent).as_posix()
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            name = node.name
            if node.decorator_list or name.startswith("__") or name in allowed.get(rel, ()):
                continue
            if name in used:
                continue
            if re.search(rf"\b{re.escape(name)}\b", outside):
                continue
            dead.append(f"{rel}:{node.lineno}: {name}")
    return dead


def _outside() -> str:
    texts = [(ROOT / "pyproject.toml").read_text(encoding="utf-8")]
    texts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs" / "src").rglob("*")) if p.is_file()]
    return "\n".join(texts)


@cache
def _unused() -> tuple[str, ...]:
    """The scan of harness/ without the allowances (once per session: it parses every module)."""
    return tuple(dead_definitions(PACKAGE, _outside(), {}))


def _allowed(entry: str) -> bool:
    rel, _, name = entry.partition(":")
    return name.rsplit(": ", 1)[-1] in ALLOWED.get(rel, ())


def test_no_top_level_definition_is_dead():
    dead = [d for d in _unused() if not _allowed(d)]
    assert dead == [], "used by nothing in harness/: remove it (and a test that only tests it), or say in ALLOWED " \
                       "why it stays:\n" + "\n".join(dead)


def test_every_allowed_definition_still_exists_and_is_still_unused():
    """An allowance outlives its reason when the definition is gone or has found a use: drop it then."""
    stale = []
    for rel, names in ALLOWED.items():
        source = (ROOT / rel).read_text(encoding="utf-8") if (ROOT / rel).is_file() else ""
        for name in names:
            if not re.search(rf"^(def|class) {name}\b", source, re.M):
                stale.append(f"{rel}: {name} is gone")
    still_dead = set(_unused())
    stale += [f"{rel}: {name} is used now" for rel, names in ALLOWED.items() for name in names
              if not any(d.startswith(f"{rel}:") and d.endswith(f": {name}") for d in still_dead)
              and (ROOT / rel).is_file()]
    assert stale == []


def test_the_scan_finds_an_unused_function_and_not_a_used_one(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("def used():\n    pass\n\ndef unused():\n    pass\n\n@register\ndef plugin():\n"
                                  "    pass\n\ndef documented():\n    pass\n\ndef helper():\n    pass\n\n"
                                  "def caller():\n    helper()\n")
    (package / "b.py").write_text("from pkg.a import used\n\nused()\n")
    assert dead_definitions(package, "see documented()", {}) == ["pkg/a.py:4: unused", "pkg/a.py:17: caller"]
    assert dead_definitions(package, "documented caller", {"pkg/a.py": {"unused"}}) == []
