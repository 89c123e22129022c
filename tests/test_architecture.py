"""The package's layering, read from the source (nothing of the harness is imported, so this runs in a
fraction of a second):

* the floors of pyproject.toml's import-linter contract (core < stages < inputs < evaluation < config <
  pipeline, catalog < studies < reporting < study < cli): no import reaches up a floor, counting imports
  inside functions, except the named exceptions there;
* no import cycle among harness modules, counting imports inside functions (a function-local import
  hides a cycle from the interpreter, not from the design) and imports of a parent package;
* no private name (`_name`) imported from another harness module: what another module needs is public;
* no report writer in the rooms that compute (harness/studies/, conformance/, gate/, judging/, systems/): they
  compute, harness/reporting/ writes their documents (JSON, Markdown, PNG).  The files they write that are not
  reports are listed in WRITES_ALLOWED, each with the reason;
* reporting renders and computes nothing: no module of harness/reporting/ imports the statistics, the
  cross-validation, the paired comparisons or the reproduction checks (ANALYSIS_MODULES; a study's
  Document, harness.studies.document, carries what they computed);
* the readers of inputs write no document: nothing under harness/inputs/ imports harness.reporting or the
  Document, or calls a document writer.

Each checker is a plain function of a package folder (the floors: import-linter), and each has a test that
plants a violation in a package made under tmp_path and sees it reported.
"""
from __future__ import annotations

import ast
import functools
import re
import textwrap
from pathlib import Path
from typing import Iterator

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "harness"

# the rooms that compute and leave writing a report to harness/reporting/
COMPUTING_ROOMS = ("studies", "conformance", "gate", "judging", "systems")
# (file under harness/, enclosing function or class.method) -> why the file it writes is not a report
WRITES_ALLOWED = {
    ("studies/sweep_scoring.py", "_write_legs"): "the cache of searched sweep legs (~/.cache/harness), not a report",
    ("conformance/base.py", "RealRuns.keep"): "the cache of the real systems' runs, one per input",
    ("systems/real.py", "_write_queries"): "the query file handed to the real QMD/OpenClaw process",
    ("systems/real.py", "render_cmrc_sample"): "a workspace rendered for the real systems to index",
    ("systems/real.py", "run_study"): "the real systems' raw driver documents, read back by conformance.summary",
    ("systems/real.py", "_main"): "the driver's answer printed on stdout (json.dump to sys.stdout), no file",
    ("studies/scale/process.py", "reset_peak_rss"): "writes /proc/self/clear_refs (resets the kernel's peak-memory mark)",
    ("systems/openclaw_agent.py", "OpenClawHome.write_config"): "openclaw.json of a home made for the real agent",
    ("systems/openclaw_agent.py", "OpenClawHome._reset_main_session"): "the session store the real agent reads",
    ("systems/openclaw_agent.py", "publish"): "the example installation (a data set under datasets/), not a report",
    ("conformance/lancedb_pro.py", "install_dependencies"): "the plugin's npm install in the conformance cache",
    ("conformance/lancedb_pro.py", "plugin_run"): "the cache of the plugin's runs and the memory and query files it reads",
    ("conformance/real_home/home.py", "cached_home"): "the cache of the homes the real release wrote, one per input",
    ("conformance/real_home/home.py", "write_home"): "the workspace and openclaw.json of a home the real release writes",
    ("conformance/real_home/home.py", "point_provider"): "openclaw.json of a working copy of such a home (its provider)",
    ("conformance/real_home/variations.py", "changed_model"): "openclaw.json of a working copy (the variation's model)",
    ("conformance/real_home/variations.py", "edited_after_judged"): "MEMORY.md of a working copy (the variation's edit)",
    ("conformance/real_home/variations.py", "edited_run_as_asked"): "MEMORY.md of a working copy (the variation's edit)",
    ("conformance/real_home/variations.py", "jsonl_beside_database"): "a transcript in a working copy (the variation's JSONL)",
    ("studies/embed_threads.py", "measure"): "the batch of passages handed to each measuring process (a temporary folder)",
    ("conformance/upgrade_scenario.py", "run_upgrade"): "openclaw.json of the homes the real releases write and upgrade",
    ("studies/openclaw_home_speed.py", "generate_sessions"): "synthetic session files, the input the speed study mines",
    ("studies/openclaw_home_report.py", "validate_snippet"): "a temporary openclaw.json for the real CLI to validate",
    ("judging/pool.py", "Pool.save"): "the judge page's pool, the state the user's labels refer to",
    ("judging/export.py", "export"): "the user's labels as qrels, the input of later judged runs",
    ("systems/npm_releases.py", "_write_cache"): "the cache of the npm registry's list of OpenClaw releases",
}


# modules whose work is analysis: harness/reporting/ imports none of them (a type named under TYPE_CHECKING aside)
ANALYSIS_MODULES = ("harness.evaluation.statistics", "harness.evaluation.cross_validation",
                    "harness.evaluation.comparison", "harness.evaluation.reproduction")
DOCUMENT_MODULES = ("harness.reporting", "harness.studies.document")  # what writes or makes a study's document
DOCUMENT_WRITERS = {"write_document", "write_study_document", "write_results"}


# --- the package's modules and their imports -------------------------------------------------------------


def modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under `package` (a package is its __init__.py)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


@functools.lru_cache(maxsize=None)
def _parsed(path: Path, mtime: float) -> ast.Module:
    """A file's syntax tree, parsed once per version of the file (the checks share them)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def parsed(path: Path) -> ast.Module:
    return _parsed(path, path.stat().st_mtime)


def _resolved(name: str, known: dict[str, Path]) -> str | None:
    """The module of the package that `name` is, or is in (a name imported from it)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[int, str, str | None]]:
    """(line, imported module of the package, name imported from it or None), for every import statement of
    the file, at any depth (inside functions, classes, `if` blocks)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolved(alias.name, known)
                if target:
                    yield node.lineno, target, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:  # `from harness.studies import scale`: the module harness.studies.scale
                    yield node.lineno, full, None
                else:
                    target = _resolved(base, known)
                    if target:
                        yield node.lineno, target, alias.name


def import_graph(package: Path) -> dict[str, set[str]]:
    known = modules(package)
    graph: dict[str, set[str]] = {m: set() for m in known}
    for module, path in known.items():
        graph[module] |= {target for _, target, _ in imports(module, path, known) if target != module}
    return graph


def import_cycles(package: Path) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    graph = import_graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_aliases(path: Path, known: dict[str, Path]) -> dict[str, str]:
    """Local names bound to a module of the package: `import harness.x as y`, `from harness import x`."""
    aliases = {}
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in known:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in known:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def private_imports(package: Path) -> list[str]:
    """`from harness.x import _name` in another module than harness.x (multi-line imports included), and
    `x._name` where x is another module of the package bound by an import."""
    known = modules(package)
    found = []
    for module, path in known.items():
        for line, target, name in imports(module, path, known):
            if name and _private(name) and target != module:
                found.append(f"{path.relative_to(package.parent)}:{line}: {name} from {target}")
        aliases = _module_aliases(path, known)
        for node in ast.walk(parsed(path)):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr)
                    and aliases.get(node.value.id, module) != module):
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}: {node.value.id}.{node.attr} "
                             f"from {aliases[node.value.id]}")
    return found


# --- analysis and documents -------------------------------------------------------------------------------


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """The lines inside `if TYPE_CHECKING:` blocks (imports there name types, they run nothing)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _under(module: str, roots: tuple[str, ...]) -> bool:
    return any(module == root or module.startswith(root + ".") for root in roots)


def forbidden_imports(package: Path, folder: str, forbidden: tuple[str, ...]) -> list[str]:
    """Imports, at any depth, by a module under `folder` of the package (e.g. "reporting") of a module in
    or under `forbidden`; an import under `if TYPE_CHECKING:` aside."""
    known = modules(package)
    prefix = f"{package.name}.{folder}"
    found = []
    for module, path in known.items():
        if not _under(module, (prefix,)):
            continue
        typing_only = _type_checking_lines(parsed(path))
        for line, target, _ in imports(module, path, known):
            if _under(target, forbidden) and line not in typing_only:
                found.append(f"{path.relative_to(package.parent)}:{line}: {target}")
    return found


def document_writers(folder: Path) -> list[str]:
    """Every call under `folder` of a document writer (DOCUMENT_WRITERS)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for scope, call in _calls_by_scope(parsed(path)):
            func = call.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in DOCUMENT_WRITERS:
                found.append(f"{path.relative_to(folder).as_posix()}:{call.lineno} in {scope}: {name}()")
    return found


# --- report writers ----------------------------------------------------------------------------------------

WRITE_METHODS = {"write_text", "write_bytes", "savefig", "to_csv", "to_parquet", "to_excel"}
WRITE_FUNCTIONS = {"write_text_atomic", "write_document", "write_results"}
MODE = re.compile(r"[rwxabt+]{1,4}")  # a file mode, not a URL given to a browser's open()


def _writes(call: ast.Call) -> str | None:
    """What a call writes to a file, or None."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in WRITE_METHODS:
            return f".{func.attr}()"
        if func.attr == "dump" and isinstance(func.value, ast.Name) and func.value.id == "json":
            return "json.dump()"
        if func.attr == "to_json" and (call.args or any(k.arg == "path_or_buf" for k in call.keywords)):
            return ".to_json(path)"
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name in WRITE_FUNCTIONS:
        return f"{name}()"
    if name == "open":
        positional = 1 if isinstance(func, ast.Name) else 0  # open(path, mode) / path.open(mode)
        modes = [a for a in call.args[positional:positional + 1]] + [k.value for k in call.keywords if k.arg == "mode"]
        for mode in modes:
            if (isinstance(mode, ast.Constant) and isinstance(mode.value, str) and MODE.fullmatch(mode.value)
                    and set(mode.value) & set("wax+")):
                return f"open(mode {mode.value!r})"
    return None


def _calls_by_scope(tree: ast.AST) -> Iterator[tuple[str, ast.Call]]:
    """(enclosing function as `name` or `Class.name`, call) for every call of a module."""
    def visit(node: ast.AST, scope: str, in_class: str | None) -> Iterator[tuple[str, ast.Call]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from visit(child, scope, child.name)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = child.name if scope == "<module>" else scope
                yield from visit(child, f"{in_class}.{name}" if in_class and scope == "<module>" else name, None)
            else:
                if isinstance(child, ast.Call):
                    yield scope, child
                yield from visit(child, scope, in_class)
    yield from visit(tree, "<module>", None)


def report_writers(package: Path, room: str, allowed: dict[tuple[str, str], str]) -> list[str]:
    """Every call under the package's folder `room` that writes a file, outside the allowed (file under the
    package, function) places."""
    found = []
    for path in sorted((package / room).rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        for scope, call in _calls_by_scope(parsed(path)):
            what = _writes(call)
            if what and (relative, scope) not in allowed:
                found.append(f"{relative}:{call.lineno} in {scope}: {what}")
    return found


# --- the package ---------------------------------------------------------------------------------------------


def test_the_package_has_no_import_cycle():
    assert import_cycles(PACKAGE) == []


def test_no_private_name_is_imported_from_another_module():
    assert private_imports(PACKAGE) == []


def test_computing_rooms_write_no_report():
    assert [f for room in COMPUTING_ROOMS for f in report_writers(PACKAGE, room, WRITES_ALLOWED)] == []


def test_reporting_imports_no_analysis():
    """A renderer lays out its Document; statistics, cross-validation, comparisons and reproduction checks
    run in the study layer (harness/studies/, a kind's analyse) before it."""
    assert forbidden_imports(PACKAGE, "reporting", ANALYSIS_MODULES) == []


def test_inputs_write_no_document():
    """The readers of data sets, workspaces and homes make inputs; a document is written above them (e.g.
    init.json by harness.reporting.home_report.write_init)."""
    assert forbidden_imports(PACKAGE, "inputs", DOCUMENT_MODULES) == []
    assert document_writers(PACKAGE / "inputs") == []


def test_no_import_reaches_up_a_floor():
    """pyproject.toml's layers contract (studies below reporting: a study that imported reporting would be
    drawing its own report; harness.study below the command line only).  On failure lint-imports' report,
    printed above, names each upward import with its line."""
    assert lint_imports(str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_every_allowed_write_is_still_there():
    """An allowance whose write moved or went away is removed, so that the list says what is true."""
    written = {(path.relative_to(PACKAGE).as_posix(), scope)
               for room in COMPUTING_ROOMS for path in (PACKAGE / room).rglob("*.py")
               for scope, call in _calls_by_scope(parsed(path))
               if _writes(call)}
    assert sorted(set(WRITES_ALLOWED) - written) == []


# --- each checker catches what it is for -----------------------------------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_a_cycle_through_a_function_local_import_is_found(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from pkg.b import g\n",
        "b.py": "def g():\n    from pkg import a\n    return a\n",
        "c.py": "from pkg.a import g\n",  # depends on the cycle, is not in it
    })
    assert import_cycles(root) == [["pkg.a", "pkg.b"]]


def test_a_cycle_through_a_parent_package_and_a_relative_import_is_found(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "scale/__init__.py": "from .run import main\n",
        "scale/run.py": "def main():\n    from pkg import scale\n    return scale.__doc__\n",
    })
    assert import_cycles(root) == [["pkg.scale", "pkg.scale.run"]]


def test_no_cycle_is_reported_for_a_layered_package(tmp_path):
    root = _package(tmp_path, {"__init__.py": "", "a.py": "import pkg.b\n", "b.py": "from pkg import c\n",
                               "c.py": "import json\n"})
    assert import_cycles(root) == []


def test_a_private_name_in_a_parenthesised_or_relative_import_is_found(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "_hidden = 1\npublic = 2\n",
        "b.py": "from pkg.a import (\n    public,\n    _hidden,\n)\n",
        "c.py": "def f():\n    from .a import _hidden\n    return _hidden\n",
        "d.py": "from pkg.a import public, __doc__\n",  # public and dunder names are fine
    })
    assert private_imports(root) == ["pkg/b.py:1: _hidden from pkg.a", "pkg/c.py:2: _hidden from pkg.a"]


def test_a_private_name_reached_through_an_imported_module_is_found(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "_hidden = 1\n\ndef own():\n    return _hidden\n",
        "b.py": "def f():\n    from pkg import a as m\n    return m._hidden, m.own\n",
        "c.py": "import pkg.a as alias\nimport json\nx = alias.own, json._default_encoder\n",  # not the package's
    })
    assert private_imports(root) == ["pkg/b.py:3: m._hidden from pkg.a"]


def test_an_upward_import_inside_a_function_breaks_the_layers(tmp_path, monkeypatch, capsys):
    root = _package(tmp_path, {
        "__init__.py": "",
        "low.py": "def f():\n    from pkg import high\n    return high\n",
        "high.py": "from pkg import low\n",
    })
    config = root.parent / "layers.toml"
    config.write_text(textwrap.dedent("""\
        [tool.importlinter]
        root_package = "pkg"

        [[tool.importlinter.contracts]]
        name = "floors"
        type = "layers"
        containers = ["pkg"]
        layers = ["high", "low"]
        """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert lint_imports(str(config), no_cache=True, no_logo=True) == 1
    assert "pkg.low -> pkg.high (l.2)" in capsys.readouterr().out


def test_an_analysis_import_in_reporting_is_found_and_a_typing_import_is_not(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "", "evaluation/__init__.py": "", "evaluation/statistics.py": "LEVEL = 0.95\n",
        "evaluation/formatting.py": "", "reporting/__init__.py": "",
        "reporting/page.py": "from typing import TYPE_CHECKING\nfrom pkg.evaluation import formatting\n"
                             "if TYPE_CHECKING:\n    from pkg.evaluation.statistics import LEVEL\n"
                             "def draw():\n    from pkg.evaluation.statistics import LEVEL\n    return LEVEL\n",
    })
    assert forbidden_imports(root, "reporting", ("pkg.evaluation.statistics",)) == [
        "pkg/reporting/page.py:6: pkg.evaluation.statistics"]


def test_a_document_written_in_inputs_is_found(tmp_path):
    root = _package(tmp_path, {"inputs/__init__.py": "", "inputs/reader.py": """\
        from pathlib import Path

        def read(path):
            return Path(path).read_text()

        def init(out, doc):
            from pkg.reporting.documents import write_document
            write_document(Path(out, "init.json"), "init", doc)
        """})
    assert document_writers(root / "inputs") == ["reader.py:8 in init: write_document()"]


def test_a_report_written_in_studies_is_found_and_an_allowed_write_is_not(tmp_path):
    root = _package(tmp_path, {"studies/__init__.py": "", "studies/study.py": """\
        import json
        from pathlib import Path

        def write_report(doc, out, fig):
            Path(out, "r.md").write_text("# r")
            with open(Path(out, "r.json"), "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
            fig.savefig(Path(out, "r.png"))
            with Path(out, "log").open(mode="a") as fh:
                fh.write("done")

        class Cache:
            def put(self, path, text):
                path.write_text(text)

        def read(path):
            with open(path, encoding="utf-8") as fh:
                return json.load(fh), path.read_text()
        """})
    found = report_writers(root, "studies", {("studies/study.py", "Cache.put"): "a cache"})
    assert found == ["studies/study.py:5 in write_report: .write_text()",
                     "studies/study.py:6 in write_report: open(mode 'w')",
                     "studies/study.py:7 in write_report: json.dump()",
                     "studies/study.py:8 in write_report: .savefig()",
                     "studies/study.py:9 in write_report: open(mode 'a')"]
    assert "Cache.put" in " ".join(report_writers(root, "studies", {}))


def test_every_module_of_the_package_imports():
    # a module no test imports can keep a path that a move broke (conformance/summary.py kept `.real` after
    # real.py went to systems/): import each one
    import importlib

    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if name.endswith("__main__"):
            continue
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure to import is the finding
            broken.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not broken, "\n".join(broken)
