"""What an experiment file can say: every registry, its implementations with their typed parameters
(`harness stages`), and a JSON schema of experiment files for editors (`harness schema`).

    >>> from harness.catalog import registries, describe, experiment_schema
    >>> [p.name for p in registries()["fusion"].parameters("weighted")]
    ['vector_weight', 'text_weight', 'bm25_to_score']

Plugins registered by entry point appear here like built-ins (see harness.registry).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from harness.config import SETTINGS_TABLES
from harness.inputs.layout import DATASETS
from harness.registry import Parameter, Registry, settings_json_schema
from harness.stages.chat import CHATS
from harness.stages.chunkers import CHUNKERS
from harness.stages.embedders import EMBEDDERS
from harness.stages.expansion import EXPANSIONS
from harness.stages.fusion import FUSIONS
from harness.stages.lexical import LEXICAL_BACKENDS
from harness.stages.postprocess import POSTPROCESSORS
from harness.stages.rerankers import RERANKERS
from harness.stages.tokenizers import TOKENIZERS
from harness.stages.vector import VECTOR_BACKENDS


def registries() -> dict[str, Registry]:
    """TOML table -> the registry that table names an implementation of, in pipeline order."""

    return {"dataset": DATASETS, "chunker": CHUNKERS, "tokenizer": TOKENIZERS, "lexical": LEXICAL_BACKENDS,
            "embedder": EMBEDDERS, "vector": VECTOR_BACKENDS, "expansion": EXPANSIONS, "fusion": FUSIONS,
            "reranker": RERANKERS, "postprocess": POSTPROCESSORS, "chat": CHATS}


@dataclasses.dataclass(frozen=True)
class Implementation:
    table: str
    name: str
    doc: str
    module: str
    parameters: list[Parameter]


def describe(table: str | None = None) -> list[Implementation]:
    """Every registered implementation (of one table, or all), with its parameters and documentation."""
    out = []
    for tbl, registry in registries().items():
        if table is not None and tbl != table:
            continue
        for name in registry.names():
            cls = registry.get(name)
            out.append(Implementation(tbl, name, registry.doc(name), cls.__module__, registry.parameters(name)))
    return out


def _table_schema(registry: Registry) -> dict[str, Any]:
    """A stage table: with a `name`, that implementation's parameters exactly; without one (overriding
    a preset's table), any parameter some implementation has."""
    branches, union = [], {}
    for name in registry.names():
        schema = registry.json_schema(name)
        branches.append({"if": {"properties": {"name": {"const": name}}, "required": ["name"]}, "then": schema})
        union.update({k: v for k, v in schema.get("properties", {}).items() if k != "name"})
    return {"type": "object", "properties": {"name": {"enum": registry.names()}, **union},
            "allOf": branches, "description": f"a {registry.kind}: set `name` to choose the implementation"}


def experiment_schema() -> dict[str, Any]:
    """JSON schema (draft 2020-12) of an experiment or preset TOML file."""
    tables = registries()
    props: dict[str, Any] = {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "preset": {"type": "string", "description": "a preset name (experiments/presets/NAME.toml) or a path"},
        "layout": {"type": "object", "description": "options of the data set's renderer (e.g. king78 rounds)"},
    }
    for table, model in SETTINGS_TABLES.items():
        props[table] = settings_json_schema(model)
    for table, registry in tables.items():
        schema = _table_schema(registry)
        props[table] = {"type": "array", "items": schema} if table == "postprocess" else schema
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "harness experiment file",
            "type": "object", "properties": props, "additionalProperties": False}
