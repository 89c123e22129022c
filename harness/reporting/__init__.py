"""The documents the harness writes (JSON, Markdown, HTML, figures) from what the studies computed.

A regular package, not a namespace one, so that import-linter (pyproject.toml's layers contract) sees its
modules: reporting sits above studies/ and below harness.study and the command line.
"""
