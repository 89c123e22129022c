"""Registries: every stage kind (chunker, tokenizer, lexical, embedder, vector, fusion, postprocess) and
the data sets are chosen by name from a TOML table, and each name maps to one implementation class.

An implementation is declared once: a class decorated with `@stage` is a dataclass whose typed fields
are its parameters, validated by pydantic when it is built (unknown keys refused, types and bounds
checked, defaults in one place), and `@REGISTRY.register("name")` gives it its TOML name:

    @FUSIONS.register("weighted")
    @stage
    class WeightedFusion:
        \"\"\"OpenClaw's merge: union by chunk id, missing side scores 0, score = vw*vector + tw*text.\"\"\"
        vector_weight: float = Field(0.7, ge=0)
        \"\"\"weight of the vector leg (clamped to [0, 1], then both weights scaled to sum 1)\"\"\"

Errors name the TOML table and key (`experiments/round3.toml [fusion] vector_weight: Input should be
a valid number (got 'x')`).  Some constructor arguments are not configuration but come from the
pipeline (a lexical backend's tokenizer and SQLite connection, a vector index's dimension); a registry
lists them as `runtime`, and a TOML table may not set them.

Where implementations come from, without side-effect imports elsewhere:
  * built-ins: the first lookup imports the registry's `builtins` package, whose modules register;
  * plugins: every Python entry point in the group `harness.<kind>` (e.g. `harness.chunkers`) of any
    installed package.  The entry point's name is the TOML name and its object the class (or a module
    that registers its classes itself).  docs/how-to/extend.md, "Writing a plugin", shows a complete example.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import textwrap
import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, Mapping, TypeVar

from harness.errors import ConfigError, UnknownStageError
from harness.text_files import shown

if TYPE_CHECKING:
    from pydantic import ConfigDict, ValidationError

T = TypeVar("T")

# extra="forbid": a misspelled key is an error, not a silently ignored setting.
# strict: TOML already gives typed values, so "0.5" (a string) is refused rather than coerced.
# allow_inf_nan off: TOML's nan and inf are no parameter's value (a weight, a threshold, a half-life).
# (A plain dict, the same as pydantic's ConfigDict, so that importing the registry imports no pydantic.)
# The attribute docstrings are not pydantic's to read (use_attribute_docstrings): on Python < 3.13 it
# finds a class's source by walking the call stack at every decoration, which cost about 0.2 s of every
# command's start-up for the ~80 stage classes.  They are read here, from the source, only when the
# parameters are documented (`harness stages`, `harness schema`, the docs): attribute_docs below.
STAGE_CONFIG: dict[str, Any] = dict(extra="forbid", strict=True, arbitrary_types_allowed=True, allow_inf_nan=False)


def stage(cls: type[T] | None = None, *, config: ConfigDict | None = None, **dataclass_options: Any) -> Any:
    """Declare a stage implementation: its fields are its typed, validated parameters.  `config` adds
    to STAGE_CONFIG, e.g. `hide_input_in_errors=True` for a stage whose inputs may hold a credential
    (its errors then never echo a value, here or in pydantic's own messages)."""
    import pydantic.dataclasses

    def wrap(c: type[T]) -> type[T]:
        return pydantic.dataclasses.dataclass(c, config={**STAGE_CONFIG, **(config or {})}, **dataclass_options)

    return wrap(cls) if cls is not None else wrap


@cache
def attribute_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings a class's own source gives its fields: the string right after an
    annotated assignment (`x: float = 0.5` then `\"\"\"what x is\"\"\"`), cleaned like a docstring.
    Inherited fields are not in it (they are documented by the class that declares them); a class
    without source (built at run time) has none."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
        tree = ast.parse(source if not source.startswith((" ", "\t")) else f"if True:\n{source}")
    except (OSError, TypeError, SyntaxError):
        return {}
    node = tree.body[0]
    if isinstance(node, ast.If):  # the wrapper of a class indented deeper than its first line
        node = node.body[0]
    if not isinstance(node, ast.ClassDef):
        return {}
    docs: dict[str, str] = {}
    for assignment, following in zip(node.body, node.body[1:]):
        if (isinstance(assignment, ast.AnnAssign) and isinstance(assignment.target, ast.Name)
                and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            docs[assignment.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _own_description(cls: type, name: str) -> str | None:
    """A field's description as the class declares it: Field(description=...), else its own docstring."""
    info = getattr(cls, "__pydantic_fields__", {}).get(name)
    if info is not None and info.description is not None:
        return info.description
    return attribute_docs(cls).get(name) if info is not None or dataclasses.is_dataclass(cls) else None


def _field_doc(cls: type, name: str) -> str:
    """A field's attribute docstring, from a class's own source, so a field a subclass inherits is
    documented by the class that declares it."""
    for klass in cls.__mro__:
        if name not in getattr(klass, "__pydantic_fields__", {}):
            continue
        doc = _own_description(klass, name)
        if doc:
            return doc
    return ""


@dataclass(frozen=True)
class Parameter:
    """One parameter of a registered implementation, as `harness stages` lists it."""

    name: str
    type: str
    default: Any
    required: bool
    doc: str


@cache
def _schema_generators() -> tuple[type, type]:
    """The JSON schema generators (built on first use, so that the registry imports no pydantic):
    one that documents each field by its attribute docstring, and one that also leaves out the
    parameters a TOML file cannot hold (callables)."""
    import pydantic
    from pydantic.json_schema import GenerateJsonSchema

    class Documented(GenerateJsonSchema):
        """A field's description is its attribute docstring (attribute_docs) unless it has its own,
        where pydantic's use_attribute_docstrings would have put it (the schema's keys are sorted)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._classes: list[type] = []

        def dataclass_schema(self, schema: Any) -> Any:
            self._classes.append(schema["cls"])
            try:
                return super().dataclass_schema(schema)
            finally:
                self._classes.pop()

        def dataclass_field_schema(self, schema: Any) -> Any:
            json_schema = super().dataclass_field_schema(schema)
            cls = self._classes[-1] if self._classes else None
            info = getattr(cls, "__pydantic_fields__", {}).get(schema["name"])
            if cls is not None and (info is None or info.description is None):
                doc = attribute_docs(cls).get(schema["name"])
                if doc is not None:
                    json_schema = {**json_schema, "description": doc}
            return json_schema

    class SkipUnrepresentable(Documented):
        """JSON schema for editors: parameters a TOML file cannot hold (callables) are left out."""

        def handle_invalid_for_json_schema(self, schema: Any, error_info: str) -> Any:
            raise pydantic.errors.PydanticOmit

    return Documented, SkipUnrepresentable


def settings_json_schema(model: type) -> dict[str, Any]:
    """JSON schema of a settings table declared with @stage (e.g. [search]), its fields documented."""
    from pydantic import TypeAdapter

    return TypeAdapter(model).json_schema(schema_generator=_schema_generators()[0])


def _type_name(annotation: Any) -> str:
    """A readable type: 'min-max' | 'zscore', float | None, list[int]."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None and args:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(_type_name(a) for a in args)}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def _takes_any_keyword(obj: Any) -> bool:
    try:
        return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return True


def _first_line(doc: str | None) -> str:
    """The first paragraph of a docstring as one line."""
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split()) if doc else ""


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "bytes", "none", "list", "dict", "tuple", "set",
                        "date", "datetime", "decimal", "is-instance", "function-after", "function-before",
                        "function-plain", "function-wrap", "lax-or-strict", "json-or-python", "literal"})


def _real_loc(loc: tuple) -> tuple:
    """An error's location without pydantic's union-member tags (`path.str`, `path.lax-or-strict[...]`):
    the first part is always a field; a later part is a tag when it is a type's name or holds brackets."""
    out = list(loc[:1])
    for part in loc[1:]:
        text = str(part)
        if isinstance(part, str) and (text in _TYPE_TAGS or "[" in text):
            continue
        out.append(part)
    return tuple(out)


def format_validation_error(exc: ValidationError, where: str, what: str, known: list[str], *,
                            show_input: bool = True) -> str:
    """pydantic's errors as one clause per problem, each naming the TOML table and key (and the value
    given, unless `show_input` is False).  The members of a union (`str | Path`) tried in turn are one
    clause: "Input should be a valid string or an instance of Path"."""
    grouped: dict[tuple, list[dict]] = {}
    for err in exc.errors():
        grouped.setdefault(_real_loc(tuple(err["loc"])), []).append(err)
    parts = []
    for loc, errs in grouped.items():
        key = ".".join(str(p) for p in loc)
        if any(err["type"] == "unexpected_keyword_argument" for err in errs):
            parts.append(f"{where} {key}: unknown key for {what}; known: {', '.join(known) or '(none)'}")
            continue
        messages = list(dict.fromkeys(err["msg"].removeprefix("Value error, ") for err in errs))
        if len(messages) > 1 and all(m.startswith("Input should be ") for m in messages):
            message = "Input should be " + " or ".join(m.removeprefix("Input should be ") for m in messages)
        else:
            message = "; ".join(messages)
        err = errs[0]
        if show_input and "input" in err and err["type"] != "missing" and key:
            message += f" (got {shown(err['input'])})"
        parts.append(f"{where} {key}: {message}" if key else f"{where} ({what}): {message}")
    return "; ".join(parts)


class Registry(Generic[T]):
    """Name -> implementation for one kind of stage (or data set)."""

    def __init__(self, kind: str, *, builtins: str | tuple[str, ...] = (), group: str | None = None,
                 runtime: tuple[str, ...] = (), table: str | None = None):
        self.kind = kind  # "chunker", "fusion", ...
        self.table = table or kind  # the TOML table that configures it, e.g. [chunker] or [[postprocess]]
        # modules whose import registers the built-in implementations
        self.builtins = (builtins,) if isinstance(builtins, str) else tuple(builtins)
        self.group = group or f"harness.{kind}s"  # entry-point group of plugins
        self.runtime = runtime  # constructor arguments the pipeline supplies, never a TOML file
        self._classes: dict[str, type] = {}
        self._loaded = False

    # --- registration ------------------------------------------------------------------------------

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def decorate(cls: type[T]) -> type[T]:
            existing = self._classes.get(name)
            if existing is not None and existing is not cls:
                raise ValueError(f"{self.kind} {name!r} is registered twice ({existing.__module__}, {cls.__module__})")
            self._classes[name] = cls
            cls.registered_name = name  # type: ignore[attr-defined]
            return cls

        return decorate

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True  # set first: a plugin module importing this registry must not recurse
        for module in self.builtins:
            importlib.import_module(module)
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            if ep.name in self._classes:
                continue  # a module entry point may already have registered its names
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin must say which one it is
                raise ConfigError(f"plugin {ep.value!r} (entry point {ep.name!r} in {self.group}) "
                                  f"failed to load: {type(exc).__name__}: {exc}") from exc
            if inspect.isclass(obj) and ep.name not in self._classes:
                self.register(ep.name)(obj)

    # --- lookup -------------------------------------------------------------------------------------

    def names(self) -> list[str]:
        self._load()
        return sorted(self._classes)

    def registered(self) -> list[str]:
        """The names in the order they were registered: the built-ins in their modules' order, then the
        plugins' (for a listing whose order is the documentation's, e.g. the study kinds)."""
        self._load()
        return list(self._classes)

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> type[T]:
        """The class registered under `name`."""
        self._load()
        try:
            return self._classes[name]
        except KeyError:
            raise UnknownStageError(
                f"unknown {self.kind} {name!r}; available: {', '.join(sorted(self._classes))}") from None

    def create(self, name: str, params: Mapping[str, Any] | None = None, /, *, where: str | None = None,
               **kwargs: Any) -> T:
        """Build implementation `name` from a TOML table's parameters (`params`, without "name"; keyword
        arguments are parameters too) and the pipeline's runtime arguments (keywords named in
        `runtime`).  Bad parameters raise ConfigError naming `where` (the file and table) and the key.

            >>> FUSIONS.create("weighted", {"vector_weight": 0.6, "text_weight": 0.4})
            >>> LEXICAL_BACKENDS.create("fts5", tokenizer=tok, conn=conn)
        """
        where = where or f"[{self.table}]"
        try:
            cls = self.get(name)
        except UnknownStageError as exc:
            raise UnknownStageError(f"{where} name: {exc}") from None
        params = dict(params or {})
        what = f"{self.kind} {name!r}"
        forbidden = sorted(set(params) & set(self.runtime))
        if forbidden:
            raise ConfigError(f"{where}: {', '.join(forbidden)} cannot be set in a configuration file")
        runtime = {k: v for k, v in kwargs.items() if k in self.runtime}
        params.update({k: v for k, v in kwargs.items() if k not in self.runtime})
        known = [p.name for p in self._parameters(name, documented=False)]
        if not hasattr(cls, "__pydantic_fields__") and not _takes_any_keyword(cls):
            unknown = sorted(set(params) - set(known))
            if unknown:
                raise ConfigError(f"{where} {unknown[0]}: unknown key for {what}; known: {', '.join(known) or '(none)'}")
        from pydantic import ValidationError

        try:
            return cls(**params, **runtime)
        except ValidationError as exc:
            show_input = not (getattr(cls, "__pydantic_config__", None) or {}).get("hide_input_in_errors", False)
            raise ConfigError(format_validation_error(exc, where, what, known, show_input=show_input)) from None

    # --- documentation ------------------------------------------------------------------------------

    def doc(self, name: str) -> str:
        return _first_line(self.get(name).__doc__)

    def parameters(self, name: str) -> list[Parameter]:
        """Typed parameters with defaults and their one-line documentation (runtime arguments left out)."""
        return self._parameters(name, documented=True)

    def _parameters(self, name: str, *, documented: bool) -> list[Parameter]:
        """The parameters; their docs only when `documented` (reading the source is for documentation,
        not for every build of a stage)."""
        cls = self.get(name)
        out = []
        if dataclasses.is_dataclass(cls):
            pyd_fields = getattr(cls, "__pydantic_fields__", {})
            hints = typing.get_type_hints(cls, include_extras=True) if pyd_fields else {}
            for f in dataclasses.fields(cls):
                if not f.init or f.name in self.runtime or f.name.startswith("_"):
                    continue
                info = pyd_fields.get(f.name)
                default: Any = dataclasses.MISSING
                if info is not None:  # pydantic knows a `x: T = Field(...)` is required
                    if not info.is_required():
                        default = info.get_default(call_default_factory=True)
                elif f.default is not dataclasses.MISSING:
                    default = f.default
                elif f.default_factory is not dataclasses.MISSING:
                    default = f.default_factory()
                required = default is dataclasses.MISSING
                key = (info.alias if info is not None else None) or f.name  # MMR's `lambda` is field lambda_
                out.append(Parameter(key, _type_name(hints.get(f.name, f.type)), None if required else default,
                                     required, _field_doc(cls, f.name) if documented else ""))
        else:
            for p in inspect.signature(cls).parameters.values():
                if p.name in self.runtime or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                    continue
                required = p.default is inspect.Parameter.empty
                out.append(Parameter(p.name, _type_name(p.annotation), None if required else p.default, required, ""))
        return out

    def json_schema(self, name: str) -> dict[str, Any]:
        """JSON schema of the TOML table for `name` (with its "name" key), for editors."""
        from pydantic import TypeAdapter

        cls = self.get(name)
        try:
            schema = TypeAdapter(cls).json_schema(schema_generator=_schema_generators()[1])
        except Exception:  # a plain plugin class: describe what the signature says
            schema = {"type": "object", "properties": {p.name: {} for p in self.parameters(name)}}
        props = {k: v for k, v in schema.get("properties", {}).items() if k not in self.runtime}
        for p in self.parameters(name):  # inherited fields: pydantic left their docstrings out
            if p.name in props and p.doc and "description" not in props[p.name]:
                props[p.name]["description"] = p.doc
        schema["properties"] = {"name": {"const": name}, **props}
        schema["required"] = ["name", *[r for r in schema.get("required", []) if r not in self.runtime]]
        schema["title"] = f"{self.kind} {name}"
        schema["description"] = self.doc(name)
        schema["additionalProperties"] = False
        return schema
