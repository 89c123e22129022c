"""openclaw.json's `${VAR}` substitution and SecretRef objects, as OpenClaw reads them.

OpenClaw (src/config/env-substitution.ts, the same in 2026.2.22 to 2026.9.6) substitutes environment
variables in every string value of the parsed config, before its schema sees it:
    ${NAME}    NAME matching [A-Z_][A-Z0-9_]*: the variable's value; unset or empty is an error naming the
               config path (MissingEnvVarError)
    $${NAME}   the literal text ${NAME}
    anything else with a $ (lower-case names, no closing brace) stays as written
Keys are not substituted.  The harness does the same, with one difference: a variable missing in the harness's
shell is refused (naming the field and the variable) only where the harness reads the value, the memory-search
blocks and the agents' ids and workspaces; elsewhere (channel tokens, gateway settings) it is left alone, so that
a config is not refused for a secret of a part the harness never reads.

A SecretRef ({source: "env" | "file" | "exec", provider, id}) stands where OpenClaw takes a credential (an
apiKey); the harness never reads a credential from openclaw.json, so a SecretRef is only looked at to name the
environment variable it points to (source "env"); found where a plain string is read (a baseUrl, a model, a
path), it is refused by name, never pasted as text.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from harness.errors import DataError

NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
TEMPLATE = re.compile(r"\$\{([A-Z][A-Z0-9_]{0,127})\}|\$([A-Z][A-Z0-9_]{0,127})")  # an apiKey written as a reference
SECRET_SOURCES = ("env", "file", "exec")
# the field paths whose values the harness reads (a missing variable there is refused)
READ_PATHS = re.compile(r"^(?:memorySearch|memory\.search|agents\.defaults\.(?:memorySearch|workspace|memory\.search)"
                        r"|agents\.list\[\d+\]\.(?:id|default|workspace|memorySearch|memory\.search))(?:[.\[]|$)")


@dataclass
class Substituted:
    """The config after substitution; where a variable was missing (path -> name); where a string was
    exactly one reference (path -> name: an apiKey given as ${NAME} names the variable that holds it)."""

    doc: Any
    missing: dict[str, str] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)


def _substitute_string(value: str, env: Mapping[str, str], where: str, out: Substituted) -> str:
    if "$" not in value:
        return value
    whole = TEMPLATE.fullmatch(value.strip())
    if whole:
        out.references[where] = whole[1] or whole[2]
    chunks: list[str] = []
    i, n = 0, len(value)
    while i < n:
        c = value[i]
        if c != "$":
            chunks.append(c)
            i += 1
            continue
        escaped = value.startswith("$${", i)
        start = i + (3 if escaped else 2)
        if escaped or value.startswith("${", i):
            end = value.find("}", start)
            name = value[start:end] if end != -1 else ""
            if end != -1 and NAME.fullmatch(name):
                if escaped:
                    chunks.append("${" + name + "}")
                else:
                    got = env.get(name)
                    if not got:
                        out.missing.setdefault(where, name)
                        chunks.append("${" + name + "}")
                    else:
                        chunks.append(got)
                i = end + 1
                continue
        chunks.append(c)
        i += 1
    return "".join(chunks)


def substitute(doc: Any, env: Mapping[str, str] | None = None) -> Substituted:
    """Every string value of `doc` with ${NAME} replaced as OpenClaw replaces it (keys untouched)."""
    env = os.environ if env is None else env
    out = Substituted(None)

    def visit(node: Any, where: str) -> Any:
        if isinstance(node, str):
            return _substitute_string(node, env, where, out)
        if isinstance(node, list):
            return [visit(v, f"{where}[{i}]") for i, v in enumerate(node)]
        if isinstance(node, dict):
            return {k: visit(v, f"{where}.{k}" if where else str(k)) for k, v in node.items()}
        return node

    out.doc = visit(doc, "")  # depth is bounded by the parser's check (text_files.MAX_DEPTH)
    return out


def refuse_missing(sub: Substituted, path: Path | str) -> None:
    """A DataError for the first variable missing where the harness reads the value."""
    for where, name in sub.missing.items():
        if READ_PATHS.match(where):
            raise DataError(path, None, where, f"refers to ${{{name}}}, which is not set (or empty) in this shell; "
                                               f"OpenClaw substitutes it when it loads the config: export {name} "
                                               "before running the harness, or write the value itself")


def is_secret_ref(value: Any) -> bool:
    return isinstance(value, dict) and value.get("source") in SECRET_SOURCES and isinstance(value.get("id"), str) \
        and set(value) <= {"source", "provider", "id"}


def secret_env_name(value: Any, reference: str | None = None) -> str | None:
    """The environment variable a credential field points to: a SecretRef of source env, or a string that was
    one ${NAME} (or $NAME) reference; None for an inline key, a file or exec SecretRef, or nothing."""
    if is_secret_ref(value) and value["source"] == "env" and NAME.fullmatch(value["id"]):
        return value["id"]
    return reference


def plain_string(value: Any, path: Path | str, where: str) -> str | None:
    """A value read as a string: a SecretRef there is refused by name (OpenClaw takes them only for credentials)."""
    if is_secret_ref(value):
        raise DataError(path, None, where, f"is a SecretRef (source {value['source']!r}); OpenClaw takes SecretRefs "
                                           "only for credentials such as apiKey, so write the value itself here")
    return value if isinstance(value, str) else None
