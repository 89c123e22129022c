"""Study files by kind: what kind a TOML file of experiments/ is and its typed model.  The cells it
expands into: harness.studies.plan.plan (the dry run); running any of them as the kind's own command
does: harness.study.run.

    >>> from harness.studies.spec import kind_of_file
    >>> from harness.studies.plan import plan
    >>> from harness.study import run
    >>> kind_of_file("experiments/tokenizers.toml")
    'matrix'
    >>> [cell.label for cell in plan("experiments/tokenizers.toml").cells]     # nothing is run
    >>> run("experiments/tokenizers.toml", out="out/tokenizers")               # = harness matrix ... --out ...

The kinds (KINDS) and the command each one's file is run by: experiment (`harness run`), matrix
(`harness matrix`), benchmark (`harness benchmark`), abstention (`harness abstention`), lossless
(`harness lossless`), expansion (`harness expansion`), language-pairs (`harness language-pairs`) and
grid (a sweep grid: `harness sweep EXPERIMENT --grid FILE`).  The ablation and the scale study have no
file (`harness ablation`, `harness scale`).

How a file's kind is known (`kind_of`): a top-level `kind = "..."` key says it (every loader accepts
the key, and refuses a file whose kind is another's); without one it is read from the tables, in this
order:

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

KINDS = ("experiment", "matrix", "benchmark", "abstention", "lossless", "expansion", "language-pairs", "grid")
COMMANDS = {"experiment": "run", "matrix": "matrix", "benchmark": "benchmark", "abstention": "abstention",
            "lossless": "lossless", "expansion": "expansion", "language-pairs": "language-pairs", "grid": "sweep"}
WHAT = {"experiment": "experiment file", "matrix": "matrix spec", "benchmark": "benchmark spec",
        "abstention": "abstention spec", "lossless": "lossless spec", "expansion": "expansion spec",
        "language-pairs": "language-pairs spec", "grid": "grid file"}
# the options of `harness study` each kind's command takes
PRESET_KINDS = ("experiment", "grid", "matrix", "benchmark")
EXECUTOR_KINDS = ("grid", "matrix")
KIND_MEANING = "the file's kind; optional (else read from its tables, as above)"


def kind_of(doc: dict[str, Any], source: str | Path = "<study file>") -> str:
    """The kind of a parsed study file: its `kind` key, else the rule of this module's docstring."""
    from harness.errors import ConfigError
    from harness.text_files import shown

    if "kind" in doc:
        if doc["kind"] not in KINDS:
            raise ConfigError(f"{source} kind: {shown(doc['kind'])} is not a kind of study file; one of "
                              f"{', '.join(KINDS)}")
        return doc["kind"]
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


def kind_of_file(path: Path | str) -> str:
    """The kind of a study file (read as the commands read it: a relative path from the working
    directory, else from the files the harness ships)."""
    from harness.config import load_toml
    from harness.inputs.layout import project_path

    path = project_path(path)
    return kind_of(load_toml(path, "study file"), path)


def validated(kind: str, doc: dict[str, Any], path: Path | str) -> Any:
    """The model of a parsed file of this kind (harness.studies.spec.models); anything wrong is one
    ConfigError naming the file and the key.  The loaders call it and go on with the dictionary, whose
    relative paths (experiment, file, spec, path ...) it reads from the file's own folder first, in place
    (harness.inputs.file_relative)."""
    from pydantic import ValidationError

    from harness.errors import ConfigError
    from harness.inputs.file_relative import spec_paths
    from harness.registry import format_validation_error
    from harness.studies.spec.models import MODELS, GridRefused
    from harness.text_files import shown

    spec_paths(doc, path)
    model = MODELS[kind]
    declared = doc.get("kind", kind)
    if declared != kind:
        raise ConfigError(f"{path} kind: the file says {shown(declared)}, but `harness {COMMANDS[kind]}` reads a "
                          f"{kind} file (`harness study {path}` runs a file by its kind)")
    known = list(model.model_fields)
    if model.model_config.get("extra") == "forbid":
        unknown = sorted(set(doc) - set(known))
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) {unknown} for a {WHAT[kind]}; known: {sorted(known)}")
    try:
        return model.model_validate(doc, context={"path": str(path)})
    except GridRefused as exc:
        raise ConfigError(str(exc)) from None
    except ValidationError as exc:
        errors = exc.errors()
        if all(not err["loc"] for err in errors):  # the whole file's check (names the keys itself)
            raise ConfigError(f"{path}: " + "; ".join(err["msg"].removeprefix("Value error, ")
                                                      for err in errors)) from None
        raise ConfigError(format_validation_error(exc, str(path), f"a {WHAT[kind]}", known)) from None


def study_schema(kind: str) -> dict[str, Any]:
    """JSON schema (draft 2020-12) of one kind of study file: an experiment's from the stage registries
    (harness.catalog.experiment_schema, with its `kind` key), any other kind's from its model."""
    from harness.errors import ConfigError
    from harness.studies.spec.models import MODELS

    if kind not in KINDS:
        raise ConfigError(f"--kind {kind!r}: one of {', '.join(KINDS)}")
    if kind == "experiment":
        from harness.catalog import experiment_schema

        schema = experiment_schema()
        schema["properties"] = {"kind": {"const": "experiment", "default": "experiment"}, **schema["properties"]}
        return schema
    schema = MODELS[kind].model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema,
            "title": f"harness {kind} file"}


def studies_reference() -> str:
    """Markdown: every kind of study file, the command that runs it and its keys (type, default and
    documentation) from its model, nested tables included: the docs' reference of study files."""
    from harness.studies.spec.models import MODELS

    parts = []
    for kind in KINDS:
        model = MODELS[kind]
        parts.append(f"## {kind}\n\n{_plain(model.__doc__)}\n\nRun by `harness {COMMANDS[kind]}"
                     f"{' EXPERIMENT --grid FILE' if kind == 'grid' else ' FILE'}` or `harness study FILE"
                     f"{' --experiment EXPERIMENT' if kind == 'grid' else ''}`; schema: `harness schema --kind {kind}`.\n")
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
    from pydantic_core import PydanticUndefined

    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        default = "required" if info.is_required() else (
            "" if info.default is PydanticUndefined else f"`{info.default!r}`")
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
