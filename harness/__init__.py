"""Evaluation harness for agent-memory retrieval: hybrid vector + BM25 search over Markdown memory files.

A run is a pipeline of stages, each chosen by name from a TOML experiment:
layout -> chunker -> lexical index (with a tokenizer) -> embedder + vector index -> fusion
-> post-processing -> metrics -> report.  See docs/reference/library.md for the one-screen tour.
"""

__version__ = "0.1.0"
