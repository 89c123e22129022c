"""Paths written in a study file are read from the file's own folder.

An experiment's [dataset] path, queries and config (and a tokenizer's user_dict, a preset given as a .toml
path), a study file's experiment, values_from, file, spec and path: a relative one names a file beside the
study file, as its author sees it, whatever folder the command is run from.

The rule, and how an ambiguity is settled (files that worked before keep working):
  1. an absolute path (or ~/...) is used as it is;
  2. a relative path that exists under the study file's folder is that file: the study file's folder wins
     when the same relative path also exists under the working folder;
  3. otherwise the path is left as written and read as before: from the working folder, else from the files
     the harness ships, else from the repository (harness.inputs.layout.project_path).  So the shipped
     experiments, which name `datasets/king78` relative to the repository's top, read it as before.
The path is rewritten to the study file's folder joined with it (relative when the study file's path was).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

EXPERIMENT_PATH_KEYS = ("path", "queries", "config")  # [dataset]
TABLE_PATH_KEYS = ("user_dict",)  # in any stage table
SPEC_PATH_KEYS = ("experiment", "values_from", "file", "spec", "path")


def beside(value: Any, folder: Path) -> Any:
    """`value` read from `folder` when it is a relative path that exists there, else `value` unchanged."""
    if not isinstance(value, str) or not value.strip() or "://" in value:
        return value
    path = Path(value)
    if path.is_absolute() or value.startswith("~"):
        return value
    candidate = folder / path
    try:
        return str(candidate) if candidate.exists() else value
    except (OSError, ValueError):  # a name the file system cannot hold: left for the reader's own error
        return value


def experiment_paths(doc: dict[str, Any], path: Path | str) -> dict[str, Any]:
    """An experiment document with its relative paths read from its file's folder (in place; returned)."""
    folder = Path(path).parent
    dataset = doc.get("dataset")
    if isinstance(dataset, dict):
        for key in EXPERIMENT_PATH_KEYS:
            if key in dataset:
                dataset[key] = beside(dataset[key], folder)
    for table in doc.values():
        if isinstance(table, dict):
            for key in TABLE_PATH_KEYS:
                if key in table:
                    table[key] = beside(table[key], folder)
    preset = doc.get("preset")
    if isinstance(preset, str) and preset.endswith(".toml"):
        doc["preset"] = beside(preset, folder)
    return doc


def spec_paths(doc: Any, path: Path | str) -> Any:
    """A study file's document with the relative paths at SPEC_PATH_KEYS (at any depth) read from its file's
    folder (in place; returned)."""
    folder = Path(path).parent

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in SPEC_PATH_KEYS and isinstance(value, str):
                    node[key] = beside(value, folder)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(doc)
    return doc
