"""The harness's own error types.  The CLI prints these as one line (`error: ...`) and exits 2; any
other exception is a bug and is shown with its traceback under `harness --debug`.

    HarnessError
    ├── ConfigError        an experiment, preset, grid or gate file (or --set) is wrong: names file, table, key
    │   └── UnknownStageError   a stage name that no registry (or plugin) knows
    ├── DataError          input data is wrong: names the file, the line and the field
    ├── OutputExistsError  an output file or folder exists and the command would overwrite it
    ├── EmbeddingError     an embedding call failed; vectors computed before it are kept in the cache
    └── ProfileLimitExceeded   the run broke the machine profile's memory cap (names the stage)
    (and in harness.db: CacheFolderError, a file where the cache folder should be; CacheFullError, no space
    left for a cache, naming the folder and the space needed)

An OSError carrying a file name (a folder given where a file belongs, a file the user may not read, a
full disk under --out) is the user's or the machine's, not a bug: it is printed the same way, one line
naming the path and what to do (harness.text_files.os_problem).
"""
from __future__ import annotations

from pathlib import Path


class HarnessError(Exception):
    """Base of every error the harness reports to a user as a one-line message."""


class ConfigError(HarnessError, ValueError):
    """A configuration file or option is wrong; the message names the file, the table and the key."""


class UnknownStageError(ConfigError, KeyError):
    """A stage (or data set) name that is not registered."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


class DataError(HarnessError, ValueError):
    """Bad input data; the message names the file, the line and the field."""

    def __init__(self, path: Path | str, line: int | None, field_name: str | None, message: str):
        self.path, self.line, self.field = str(path), line, field_name
        where = self.path + (f":{line}" if line is not None else "")
        what = f" field {field_name!r}:" if field_name else ""
        super().__init__(f"{where}:{what} {message}")


class OutputExistsError(HarnessError, FileExistsError):
    """An output file or folder already exists (or is not empty) and would be overwritten."""


class EmbeddingError(HarnessError, RuntimeError):
    """An embedding call failed; vectors computed before the failure are already in the cache."""


class ProfileLimitExceeded(HarnessError, RuntimeError):
    """A run broke its machine profile's memory cap; the message names the profile, cap and stage."""


class RerankError(HarnessError, RuntimeError):
    """A reranker could not score (after any retries).  Its message names the URL, never the API key."""
