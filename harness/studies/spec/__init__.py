"""Study files by kind: each kind of TOML file in experiments/ is a registered StudyKind (its command,
its typed model, its cells, how it runs), and every file says which with a top-level `kind` key.  The
cells a file expands into: harness.studies.plan.plan (the dry run); running any file as its kind's
command does: harness.study.run.

    >>> from harness.studies.spec import kind_of_file, study_kind
    >>> from harness.studies.plan import plan
    >>> from harness.study import run
    >>> kind_of_file("experiments/tokenizers.toml")
    'matrix'
    >>> study_kind("matrix").command, study_kind("matrix").takes_executor
    ('matrix', True)
    >>> [cell.label for cell in plan("experiments/tokenizers.toml").cells]     # nothing is run
    >>> run("experiments/tokenizers.toml", out="out/tokenizers")               # = harness matrix ... --out ...

The kinds are a registry like the stages' (STUDY_KINDS; harness.registry): the built-in ones are
registered by harness.study_kinds, and a plugin adds one through the entry-point group
`harness.study_kinds` (tests/plugin_example shows one).  The built-in kinds and the command each one's
file is run by: experiment (`harness run`), matrix (`harness matrix`), benchmark (`harness benchmark`),
abstention (`harness abstention`), lossless (`harness lossless`), expansion (`harness expansion`),
language-pairs (`harness language-pairs`), grid (a sweep grid: `harness sweep EXPERIMENT --grid
FILE`) and scale (experiments/scale.toml; `harness scale` takes the same settings as options); a
plugin's kind, and scale, are run by `harness study FILE`.  The ablation has no file (`harness
ablation`).

How a file's kind is known (`kind_of`): its top-level `kind = "..."` key, which every study file in
experiments/ has and every study spec must have (a loader refuses a spec without one, or whose kind is
another's).  A file without the key is an experiment (the files `harness init` writes and a user's own
experiments need not say so); one whose tables make it look like another kind is refused, with one line
naming the kind to declare.  What a file looks like (`looks_like`; it only words that error):

1. a [grid] table: grid;
2. a [pairing] table: language-pairs;
3. [[runs]] with [[values]] or `values_from`: matrix;
4. [[runs]] with [[variants]]: expansion;
5. [[runs]] with a `weight`, or a run with `without`: abstention;
6. any other [[runs]]: benchmark (experiments/context-budget.toml is one);
7. `experiment` and `presets` (no [[runs]]): lossless;
8. anything else: an experiment.

A grid file names no experiment (the same grid sweeps many): `harness study GRID --experiment
EXPERIMENT` is `harness sweep EXPERIMENT --grid GRID`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.registry import Registry
from harness.errors import ConfigError
from harness.text_files import shown
from harness.config import load_toml
from harness.inputs.layout import project_path
from harness.inputs.file_relative import spec_paths
from harness.registry import format_validation_error
from harness.studies.spec.models import GridRefused

# kind name -> its StudyKind class (harness.study_kinds.StudyKind); the built-ins are registered by
# harness.study_kinds, which the first lookup imports, plugins by the entry-point group
STUDY_KINDS: Registry[Any] = Registry("study kind", builtins="harness.study_kinds", group="harness.study_kinds",
                                      table="kind")
KIND_MEANING = "the file's kind (required in a study spec; a file without it is an experiment)"


def kind_names() -> list[str]:
    """Every registered kind, the built-ins first in the order they are documented, then plugins'."""
    return STUDY_KINDS.registered()


def study_kind(name: str) -> Any:
    """The registered kind `name` (a harness.study_kinds.StudyKind)."""
    return STUDY_KINDS.get(name)()


def looks_like(doc: dict[str, Any]) -> str:
    """The kind a file's tables suggest (the rule of this module's docstring): only for the error that
    asks a file to declare its kind."""
    if "grid" in doc:
        return "grid"
    if "pairing" in doc:
        return "language-pairs"
    if "runs" in doc:
        runs = doc["runs"] if isinstance(doc["runs"], list) else []
        if "values" in doc or "values_from" in doc:
            return "matrix"
        if "variants" in doc:
            return "expansion"
        if "weight" in doc or any(isinstance(run, dict) and "without" in run for run in runs):
            return "abstention"
        return "benchmark"
    if "experiment" in doc and "presets" in doc:
        return "lossless"
    return "experiment"


def kind_of(doc: dict[str, Any], source: str | Path = "<study file>") -> str:
    """The kind of a parsed study file: its `kind` key; a file without one is an experiment, unless its
    tables make it look like another kind (then one ConfigError naming the kind to declare)."""
    if "kind" in doc:
        if not isinstance(doc["kind"], str) or doc["kind"] not in STUDY_KINDS:
            raise ConfigError(f"{source} kind: {shown(doc['kind'])} is not a kind of study file; one of "
                              f"{', '.join(kind_names())}")
        return doc["kind"]
    guess = looks_like(doc)
    if guess != "experiment":
        raise ConfigError(_undeclared(source, guess))
    return "experiment"


def _undeclared(source: str | Path, kind: str) -> str:
    return (f"{source}: no `kind` key; a study file says its kind (by its tables it looks like a {kind} file: "
            f'add kind = "{kind}")')


def kind_of_file(path: Path | str) -> str:
    """The kind of a study file (read as the commands read it: a relative path from the working
    directory, else from the files the harness ships)."""
    path = project_path(path)
    return kind_of(load_toml(path, "study file"), path)


def validated(kind: str, doc: dict[str, Any], path: Path | str) -> Any:
    """The model of a parsed file of this kind (its StudyKind's spec_model); anything wrong, a missing
    `kind` key included, is one ConfigError naming the file and the key.  The loaders return it (frozen;
    a study's model knows its `source` file); the relative paths it holds (experiment, file, spec, path
    ...) are read from the file's own folder first (harness.inputs.file_relative)."""
    from pydantic import ValidationError

    spec_paths(doc, path)
    study = study_kind(kind)
    model = study.spec_model()
    if "kind" not in doc:  # the command says the kind, but the file must too (`harness study` reads it)
        raise ConfigError(f'{path}: no `kind` key; a {study.what} says kind = "{kind}" (every study file '
                          "says its kind)")
    if doc["kind"] != kind:
        raise ConfigError(f"{path} kind: the file says {shown(doc['kind'])}, but `harness {study.command}` reads a "
                          f"{kind} file (`harness study {path}` runs a file by its kind)")
    known = list(model.model_fields)
    if model.model_config.get("extra") == "forbid":
        unknown = sorted(set(doc) - set(known))
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) {unknown} for a {study.what}; known: {sorted(known)}")
    try:
        spec = model.model_validate(doc, context={"path": str(path)})
    except GridRefused as exc:
        raise ConfigError(str(exc)) from None
    except ValidationError as exc:
        errors = exc.errors()
        if all(not err["loc"] for err in errors):  # the whole file's check (names the keys itself)
            raise ConfigError(f"{path}: " + "; ".join(err["msg"].removeprefix("Value error, ")
                                                      for err in errors)) from None
        raise ConfigError(format_validation_error(exc, str(path), f"a {study.what}", known)) from None
    if "_source" in (getattr(spec, "__private_attributes__", None) or {}):
        spec._source = str(path)  # the file, for the errors of the study that reads it
    return spec


def study_schema(kind: str) -> dict[str, Any]:
    """JSON schema (draft 2020-12) of one kind of study file (the kind's own: StudyKind.schema)."""
    if kind not in STUDY_KINDS:
        raise ConfigError(f"--kind {kind!r}: one of {', '.join(kind_names())}")
    return study_kind(kind).schema()


def studies_reference() -> str:
    """Markdown: every kind of study file, the command that runs it and its keys (type, default and
    documentation) from its model, nested tables included: the docs' reference of study files."""
    parts = []
    for kind in kind_names():
        study = study_kind(kind)
        model = study.spec_model()
        given = (" EXPERIMENT --grid FILE", " --experiment EXPERIMENT") if study.takes_experiment else (" FILE", "")
        run_by = f"`harness {study.command}{given[0]}` or " if study.command != "study" else ""
        parts.append(f"## {kind}\n\n{_plain(model.__doc__)}\n\nRun by {run_by}`harness study FILE{given[1]}`; "
                     f"schema: `harness schema --kind {kind}`.\n")
        parts.append(_fields_table(model, ""))
        for name, nested in _nested_models(model):
            each = "each" if "list[" in _type_text(model.model_fields[name].annotation) else "a table"
            parts.append(f"\n`{name}` ({each}):\n\n" + _fields_table(nested, f"{name}."))
    return "\n".join(parts)


def _plain(text: str | None) -> str:
    return " ".join((text or "").split())


def _type_text(annotation: Any) -> str:
    """A field's type as a reader writes it in TOML: `list[table]`, `str or none`, `'matrix'`."""
    import types
    import typing

    from pydantic import BaseModel

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_text(args[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_text(a) for a in args)
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(_type_text(a) for a in args)}]"
    if annotation is type(None):
        return "none"
    if annotation is Any:
        return "any"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return getattr(annotation, "__name__", str(annotation))


def _fields_table(model: Any, prefix: str) -> str:
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        default = "required" if info.is_required() else (
            "" if info.default is PydanticUndefined else
            f"`{info.default.model_dump()!r}`" if isinstance(info.default, BaseModel) else f"`{info.default!r}`")
        meaning = KIND_MEANING if name == "kind" and not prefix else _plain(info.description)
        rows.append(f"| `{prefix}{name}` | {_type_text(info.annotation)} | {default} | {meaning.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def _nested_models(model: Any) -> list[tuple[str, Any]]:
    """The fields whose type is (a list or union of) another model with fields of its own, one level down."""
    out = []
    for name, info in model.model_fields.items():
        found = _model_in(info.annotation)
        if found is not None and found.model_fields:
            out.append((name, found))
    return out


def _model_in(annotation: Any) -> Any:
    import typing

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, typing.get_args(annotation)) if m is not None), None)
