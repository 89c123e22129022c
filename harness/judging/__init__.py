"""`harness judge`: pooled labelling (pool.py) in a local page (page.py) or by an LLM (llm.py), labels in
judge/labels.sqlite (store.py), qrels and a judged experiment out (export.py); run.py ties them together."""
