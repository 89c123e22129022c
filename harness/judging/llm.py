"""The LLM judge: each pooled chunk graded 0-3 by a chat model through the harness's chat stage (an
OpenAI-compatible endpoint behind the completion cache: a rerun asks nothing again).  Its grades are stored as
`by: llm` with the model's id and the prompt's version, beside (never instead of) a person's, and reported
with their agreement with the person's grades on the items both judged.

The prompt is versioned (PROMPT_VERSION): changing its text must change the version, so that a cached answer
or a stored grade is never taken for the answer to another prompt.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from harness.errors import ConfigError
from harness.judging.pool import Pool
from harness.judging.store import LabelStore
from harness.stages.chat import CHATS, CachedChat, CompletionCache

PROMPT_VERSION = "judge-v1"
SYSTEM = ("You judge search results from a person's own notes. Given their question and one passage, answer "
          "with one digit: 0 = not relevant, 1 = marginally relevant (on the topic, does not answer), 2 = relevant "
          "(answers part of it), 3 = highly relevant (answers it). Answer with the digit only.")
DIGIT = re.compile(r"[0-3]")


def messages(query: str, path: str, start: int, end: int, text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question: {query}\n\nPassage ({path}, lines {start}-{end}):\n{text}\n\nGrade (0-3):"}]


def parse_grade(reply: str) -> int | None:
    """The first digit 0-3 of the reply (None: the model said something else)."""
    m = DIGIT.search(reply or "")
    return int(m.group(0)) if m else None


def build_chat(table: dict[str, Any] | None) -> Any:
    """The [chat] table (pool.toml, or the --chat-* options) behind the completion cache."""
    if not table:
        raise ConfigError("the LLM judge needs a chat model: a [chat] table in pool.toml (name = \"openai-compatible\", "
                          "base_url, model, api_key_env) or --chat-url and --chat-model")

    table = dict(table)
    name = table.pop("name", "openai-compatible")
    return CachedChat(CHATS.create(name, table, where="[chat] of the pool"), CompletionCache())


def llm_judge(pool: Pool, store: LabelStore, chat: Any, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Grade every pooled item the LLM has not graded with this prompt and model; returns counts."""
    done = {(g.query_id, g.key) for g in store.grades("llm") if g.prompt == PROMPT_VERSION and g.judge == chat.model_id}
    asked = unparsed = 0
    for qid, q in pool.queries.items():
        for item in q.items:
            if (qid, item.key) in done:
                continue
            reply = chat.complete(messages(q.text, item.path, item.start, item.end, item.text))
            grade = parse_grade(reply)
            asked += 1
            if grade is None:
                unparsed += 1
                continue
            store.put(qid, item.path, item.start, item.end, grade, by="llm", judge=chat.model_id, prompt=PROMPT_VERSION)
    log(f"LLM judge {chat.model_id} (prompt {PROMPT_VERSION}): {asked} items graded now"
        + (f", {unparsed} replies without a grade 0-3 (left ungraded)" if unparsed else ""))
    return {"model": chat.model_id, "prompt": PROMPT_VERSION, "asked": asked, "unparsed": unparsed,
            "cache_hits": chat.stats.get("hits", 0)}
