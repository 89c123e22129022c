"""Loaded at interpreter start while `python -m tests.vectors record` runs the tests (it puts this folder
on PYTHONPATH, so the CLI subprocesses the tests start load it too): every text a cached embedder is
asked to embed, and every passage whose token count the cache is asked for, is appended to
$HARNESS_TEST_VECTORS_RECORD as one JSON line (kind, model, role, text or sha256, the test asking).
Nothing is imported until harness.stages.embedders.cache is, so start-up stays as it was."""
import importlib.abc
import importlib.util
import json
import os
import sys

_RECORD = os.environ.get("HARNESS_TEST_VECTORS_RECORD")
_MODULE = "harness.stages.embedders.cache"


def _write(entries) -> None:
    test = os.environ.get("PYTEST_CURRENT_TEST", "-").split(" ")[0]
    lines = "".join(json.dumps({**e, "test": test}, ensure_ascii=False) + "\n" for e in entries)
    with open(_RECORD, "a", encoding="utf-8") as out:  # one write per call: lines stay whole across processes
        out.write(lines)


def _patch(module) -> None:
    embed, get_token_count = module.CachedEmbedder.embed, module.EmbeddingCache.get_token_count

    def recorded_embed(self, texts, role):
        if module.provides_vectors(self.inner):
            _write({"kind": "vector", "model": self.model_id, "role": role, "text": t} for t in dict.fromkeys(texts))
        return embed(self, texts, role)

    def recorded_get_token_count(self, model, sha):
        _write([{"kind": "tokens", "model": model, "role": "passage", "sha": sha}])
        return get_token_count(self, model, sha)

    module.CachedEmbedder.embed = recorded_embed
    module.EmbeddingCache.get_token_count = recorded_get_token_count


class _AfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


if _RECORD:
    sys.meta_path.insert(0, _AfterImport())
