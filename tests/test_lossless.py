"""lossless-claw against SPEC.md section 7, on hand-made conversations: the token estimator, lcm_grep's
regex and full_text modes (sorts, limits, the scan cap), the CJK paths on messages and summaries, leaf
formation, condensation fan-ins, the fresh tail, the assembled context, and DAGs that replay."""
from datetime import datetime, timedelta

import pytest

from harness.stages.lossless import (
    ChatSummarizer,
    Compactor,
    ExtractiveSummarizer,
    LosslessSettings,
    LosslessStore,
    SummaryRequest,
    assemble,
    estimate_tokens,
    lcm_grep,
    target_tokens,
    tool_text,
    truncate_to_tokens,
)
from harness.stages.lossless.grep import (
    like_terms,
    sanitize_fts5_query,
    trigram_expression,
)
from harness.stages.lossless.recall_policy import (
    agent_pattern,
    document_frequencies,
    key_terms,
)
from tests.chat_server import ChatServer

T0 = datetime(2026, 3, 1, 9, 0)


def store_of(texts, step=timedelta(minutes=1)):
    store = LosslessStore()
    for i, text in enumerate(texts):
        store.add_message("user" if i % 2 == 0 else "assistant", text, T0 + i * step, ref=f"m{i + 1}")
    return store


# --- the estimator ------------------------------------------------------------------------------------

def test_token_estimate_weights_code_points():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2  # 0.25 each, ceil
    assert estimate_tokens("测试") == 3  # 1.5 each
    assert estimate_tokens("テスト한") == 6  # kana and Hangul 1.5
    assert estimate_tokens("ＡＢ") == 3  # full-width forms 1.5
    assert estimate_tokens("😀") == 2  # an astral code point 2
    assert estimate_tokens("𠀀") == 2  # CJK Extension B counts 1.5 -> ceil 2
    assert estimate_tokens("ab测😀") == 4  # 0.5 + 1.5 + 2
    assert truncate_to_tokens("测试测试", 3) == "测试" and truncate_to_tokens("abcdefgh", 1) == "abcd"


# --- lcm_grep: regex ----------------------------------------------------------------------------------

def test_regex_is_case_sensitive_newest_first_and_limited():
    store = store_of(["Redis cache TTL 1h", "redis again", "nothing here", "Redis cluster", "Redis tuning"])
    hits = lcm_grep(store, "Redis", "regex", "messages").messages
    assert [h.ident for h in hits] == [5, 4, 1]  # newest first; "redis" does not match
    assert [h.snippet for h in hits] == ["Redis"] * 3  # the matched text
    assert [h.ident for h in lcm_grep(store, "Redis", "regex", "messages", limit=2).messages] == [5, 4]
    assert [h.ident for h in lcm_grep(store, r"TTL \d+h", "regex", "messages").messages] == [1]


def test_regex_stops_after_ten_thousand_rows():
    store = LosslessStore()
    with store.conn:  # bulk: 10,005 messages, only the 3 oldest say "needle"
        for i in range(10_005):
            store.add_message("user", "needle" if i < 3 else f"hay {i}", T0 + timedelta(seconds=i))
    assert lcm_grep(store, "needle", "regex", "messages").messages == []  # the scan ends before them
    assert len(lcm_grep(store, "hay", "regex", "messages").messages) == 50  # limit 50


def test_unsafe_or_invalid_patterns_return_nothing():
    store = store_of(["aaaa", "(unbalanced"])
    assert lcm_grep(store, "(a+)+", "regex", "messages").total == 0  # nested quantifier
    assert lcm_grep(store, "a" * 501, "regex", "messages").total == 0  # too long
    assert lcm_grep(store, "(unbalanced", "regex", "messages").total == 0  # does not compile


# --- lcm_grep: full_text --------------------------------------------------------------------------------

def test_full_text_quotes_tokens_and_ands_them_with_porter_stemming():
    assert sanitize_fts5_query('sub-agent OR crash "exact phrase"') == '"sub-agent" "OR" "crash" "exact phrase"'
    store = store_of(["we were running the migration", "the migration failed", "runs nightly", "OR gate"])
    ids = lambda q: sorted(h.ident for h in lcm_grep(store, q, "full_text", "messages").messages)  # noqa: E731
    assert ids("migration") == [1, 2]
    assert ids("running migration") == [1]  # implicit AND
    assert ids("run") == [1, 3]  # porter: running, runs -> run
    assert ids("OR") == [4]  # an operator word is just a token once quoted


def test_full_text_sorts_recency_relevance_and_hybrid():
    texts = ["cache cache cache cache decision", "other words", "a cache mention among many many other words here"]
    for step in (timedelta(minutes=1), timedelta(days=40), timedelta(days=4000)):
        store = store_of(texts, step=step)
        order = lambda sort: [h.ident for h in lcm_grep(store, "cache", "full_text", "messages", sort=sort).messages]  # noqa: E731
        assert order("recency") == [3, 1]
        relevance = lcm_grep(store, "cache", "full_text", "messages", sort="relevance").messages
        assert [h.ident for h in relevance] == [1, 3]  # bm25: message 1 says it four times
        # hybrid: bm25 / (1 + age_hours x 0.001), ages against the newest message
        now = T0 + 2 * step
        decayed = {h.ident: h.rank / (1 + (now - (T0 + (h.ident - 1) * step)).total_seconds() / 3600 * 0.001)
                   for h in relevance}
        assert order("hybrid") == sorted(decayed, key=decayed.get)
    assert order("hybrid") == [3, 1]  # 8,000 days: the decay overtakes message 1's bm25 lead


def test_cjk_query_on_messages_takes_the_like_path_with_verbatim_terms():
    store = store_of(["我们讨论了端到端测试结果", "测试 结果 分开写", "静默模式 Silent Mode"])
    result = lcm_grep(store, "端到端测试结果", "full_text", "messages")
    assert result.routes["messages"] == "like-cjk" and [h.ident for h in result.messages] == [1]
    assert lcm_grep(store, "测试结果怎么样", "full_text", "messages").total == 0  # one term, not verbatim
    assert sorted(h.ident for h in lcm_grep(store, "测试 结果", "full_text", "messages").messages) == [1, 2]
    assert [h.ident for h in lcm_grep(store, "静默 silent", "full_text", "messages").messages] == [3]  # ASCII folded
    assert like_terms('  (静默)  "silent mode" 静默 ') == ["静默", "silent mode"]


def test_cjk_query_on_summaries_ors_four_character_chunks_on_the_trigram_table():
    assert trigram_expression("端到端测试结果") == '("端到端测" OR "到端测试" OR "端测试结" OR "测试结果")'
    assert trigram_expression("端到端测试 部署方案") == '("端到端测" OR "到端测试") AND ("部署方案")'
    assert trigram_expression("部署方案 测试") is None  # a segment under 3 characters: the LIKE path
    store = store_of(["x"])
    store.add_summary("leaf", 0, "上周的测试结果显示延迟下降", [1], "normal", store.messages[1].created_at)
    store.add_summary("leaf", 0, "部署 Redis 集群的方案", [1], "normal", store.messages[1].created_at)
    found = lcm_grep(store, "端到端测试结果", "full_text", "summaries")  # #219: only "测试结果" occurs
    assert found.routes["summaries"] == "trigram" and found.total == 1
    short = lcm_grep(store, "部署 redis", "full_text", "summaries")  # a 2-character segment + a Latin token
    assert short.routes["summaries"] == "like-cjk" and short.total == 1
    assert lcm_grep(store, "部署 mysql", "full_text", "summaries").total == 0  # the Latin token must occur


def test_the_tool_text_lists_hits_one_line_each():
    store = store_of(["alpha " + "x" * 300, "beta"])
    text = tool_text(store, "alpha", "regex", "both", lcm_grep(store, "alpha"))
    assert "**Total matches:** 1" in text and "- [msg#1] (user, 2026-03-01 09:00 UTC): alpha" in text
    assert "No matches found." in tool_text(store, "zeta", "regex", "both", lcm_grep(store, "zeta"))


# --- leaves, condensation, the fresh tail --------------------------------------------------------------

def words(n, tag):
    """A message of exactly n tokens by the estimator (4 ASCII characters a token)."""
    return (f"{tag} " + "word " * n)[: 4 * n].ljust(4 * n, "w")


class Fixed:
    """A summarizer whose output has a fixed size (tokens), to test the DAG's mechanics alone."""

    name = "fixed"

    def __init__(self, tokens):
        self.tokens, self.calls = tokens, []

    def summarize(self, text, aggressive, request):
        self.calls.append(request)
        return ("s" * (4 * self.tokens - 1))[: 4 * self.tokens]


def test_a_leaf_takes_the_oldest_messages_outside_the_tail_up_to_leaf_chunk_tokens():
    store = store_of([words(100, f"m{i}") for i in range(10)])
    compactor = Compactor(store, LosslessSettings(leaf_chunk_tokens=350, fresh_tail_count=3), Fixed(10))
    assert compactor.tail_start() == 7  # the last 3 raw messages are protected
    assert compactor.oldest_leaf_chunk() == [0, 1, 2]  # 300 tokens; a fourth would pass 350
    summary = compactor.leaf_pass(compactor.oldest_leaf_chunk())
    assert summary.kind == "leaf" and summary.depth == 0 and list(summary.sources) == [1, 2, 3]
    assert store.context[0] == ("summary", summary.summary_id) and len(store.context) == 8
    big = store_of([words(500, "huge"), words(10, "a"), words(10, "b")])
    one = Compactor(big, LosslessSettings(leaf_chunk_tokens=100, fresh_tail_count=1), Fixed(5))
    assert one.oldest_leaf_chunk() == [0]  # at least one message, even above the cap


def test_the_fresh_tail_is_never_compacted():
    store = LosslessStore()
    compactor = Compactor(store, LosslessSettings(token_budget=400, leaf_chunk_tokens=100, fresh_tail_count=4),
                          Fixed(20))
    for i in range(30):
        store.add_message("user", words(50, f"m{i}"), T0 + timedelta(minutes=i))
        compactor.after_turn()
    raw = [i for kind, i in store.context if kind == "message"]
    assert raw[-4:] == [27, 28, 29, 30] and len(store.summaries) > 0
    assert all(store.context[-k][0] == "message" for k in range(1, 5))


def test_condensation_needs_the_fan_in_and_the_minimum_size():
    settings = LosslessSettings(leaf_chunk_tokens=2000, fresh_tail_count=1, condensed_target_tokens=100)
    store = store_of([words(40, f"m{i}") for i in range(9)])
    compactor = Compactor(store, settings, Fixed(30))
    for _ in range(7):  # seven leaves of one message each
        compactor.leaf_pass(compactor.oldest_leaf_chunk()[:1])
    assert compactor.condensation_candidate(hard=False) is None  # fan-in 8 at depth 0
    assert compactor.condensation_candidate(hard=True)[0] == 0  # 2 under pressure
    compactor.leaf_pass(compactor.oldest_leaf_chunk()[:1])
    depth, run = compactor.condensation_candidate(hard=False)
    assert depth == 0 and len(run) == 8
    node = compactor.condensed_pass(depth, run)
    assert node.kind == "condensed" and node.depth == 1 and node.descendant_count == 8
    assert sorted(store.descendant_messages(node.summary_id)) == list(range(1, 9))
    # the run must hold at least max(condensed_target_tokens, 0.1 x leaf_chunk_tokens) tokens
    small = Compactor(store_of([words(40, f"m{i}") for i in range(9)]),
                      LosslessSettings(leaf_chunk_tokens=2000, fresh_tail_count=1, condensed_target_tokens=2000),
                      Fixed(30))
    for _ in range(8):
        small.leaf_pass(small.oldest_leaf_chunk()[:1])
    assert small.condensation_candidate(hard=False) is None  # 8 x 30 = 240 < 2,000


def test_depth_one_and_above_condense_at_four():
    settings = LosslessSettings(leaf_chunk_tokens=1000, fresh_tail_count=1, condensed_target_tokens=50)
    store = store_of([words(10, f"m{i}") for i in range(33)])
    compactor = Compactor(store, settings, Fixed(30))  # runs of 8 x 30 and 4 x 30 tokens pass the 100 minimum
    for _ in range(4):
        for _ in range(8):
            compactor.leaf_pass(compactor.oldest_leaf_chunk()[:1])
        compactor.condensed_pass(*compactor.condensation_candidate(hard=False))
    depth, run = compactor.condensation_candidate(hard=False)
    assert depth == 1 and len(run) == 4


def test_summary_targets_and_escalation_to_truncation():
    assert target_tokens(10_000, False, False) == 2400 and target_tokens(1000, False, False) == 350
    assert target_tokens(100, False, False) == 192 and target_tokens(1000, True, False) == 200
    assert target_tokens(100_000, True, False) == 1320 and target_tokens(10, False, True) == 2000
    store = store_of([words(20, "short")])
    compactor = Compactor(store, LosslessSettings(fresh_tail_count=0), Fixed(500))  # never shorter
    summary = compactor.leaf_pass([0])
    source = f"[2026-03-01 09:00 UTC]\n{store.messages[1].content}"
    assert summary.level == "fallback"
    assert summary.content == f"{source}\n[Truncated from {estimate_tokens(source)} tokens]"
    assert compactor.passes["escalated"] == 1 and compactor.passes["fallback"] == 1


# --- the assembled context ------------------------------------------------------------------------------

def test_assembly_keeps_the_tail_and_the_newest_items_that_fit():
    store = store_of([words(100, f"m{i}") for i in range(6)])
    context = assemble(store, token_budget=350, fresh_tail_count=2)
    assert context.message_ids() == {4, 5, 6} and context.tokens == 300 and context.dropped == 3
    over = assemble(store, token_budget=50, fresh_tail_count=2)
    assert over.message_ids() == {5, 6}  # the tail stays even over the budget
    uneven = store_of([words(n, f"m{i}") for i, n in enumerate([100, 100, 100, 400, 100, 100])])
    stopped = assemble(uneven, token_budget=450, fresh_tail_count=2)
    assert stopped.message_ids() == {5, 6}  # m4 does not fit, so m1-m3 are dropped too, though they would


# --- summaries and replay -------------------------------------------------------------------------------

def test_extractive_summaries_keep_whole_sentences_within_the_target_and_end_with_the_footer():
    source = "\n\n".join(f"[2026-03-01 09:0{i} UTC]\nCaroline: Sentence {i} about the museum trip. It had dinosaurs {i}."
                         for i in range(8))
    for strategy in ("term-density", "first-last"):
        summary = ExtractiveSummarizer(strategy).summarize(source, False, SummaryRequest(60))
        assert estimate_tokens(summary) <= 60
        assert summary.splitlines()[-1].startswith("Expand for details about: ")
        body = " ".join(summary.splitlines()[:-1])
        kept = [s for i in range(8) for s in (f"Caroline: Sentence {i} about the museum trip.", f"It had dinosaurs {i}.")
                if s in body]
        assert kept and all(s in source for s in kept)
    first_last = ExtractiveSummarizer("first-last").summarize(source, False, SummaryRequest(60))
    assert "Sentence 0" in first_last and "dinosaurs 7." in first_last


def session_texts():
    return [f"Speaker {i % 2}: On day {i} we talked about topic {i % 7} and the {['cat', 'garden', 'car'][i % 3]}. "
            f"It was fine." for i in range(120)]


def replay(summarizer):
    store = LosslessStore()
    compactor = Compactor(store, LosslessSettings(token_budget=1500, leaf_chunk_tokens=300, fresh_tail_count=8),
                          summarizer)
    for i, text in enumerate(session_texts()):
        store.add_message("user", text, T0 + timedelta(minutes=i))
        compactor.after_turn()
    return store.export()


def test_a_dag_replays_identically():
    first, second = replay(ExtractiveSummarizer()), replay(ExtractiveSummarizer())
    assert first == second and first["summaries"]


def test_llm_summaries_are_cached_and_replay_offline(tmp_path):
    from harness.stages.chat import CachedChat, CompletionCache, OpenAICompatibleChat

    with ChatServer() as server:
        chat = CachedChat(OpenAICompatibleChat(server.base_url, "m"), CompletionCache(tmp_path / "c.sqlite"))
        online = replay(ChatSummarizer(chat))
        asked = len(server.requests)
    assert asked > 0 and any("Expand for details about" in s["content"] for s in online["summaries"])
    offline_chat = CachedChat(OpenAICompatibleChat(server.base_url, "m", max_retries=0),
                              CompletionCache(tmp_path / "c.sqlite"))
    assert replay(ChatSummarizer(offline_chat)) == online  # the server is gone: every answer from the cache
    assert offline_chat.stats["computed"] == 0


# --- the agent's query ------------------------------------------------------------------------------------

def test_key_terms_are_the_rarest_content_words_seen_in_the_conversation():
    messages = ["Caroline: I went to the LGBTQ support group.", "Melanie: Caroline, how was the group?",
                "Caroline: The support was great.", "Melanie: I painted a sunrise."]
    df = document_frequencies(messages)
    question = "When did Caroline go to the LGBTQ support group?"
    assert key_terms(question, df, 1) == ["LGBTQ"]
    assert key_terms(question, df, 3) == ["LGBTQ", "support", "group"]  # df 1, 2, 2 (ties: question order)
    assert key_terms("What did Caroline research?", df, 2) == ["Caroline"]  # "research" was never said
    assert agent_pattern(["LGBTQ", "support"], "regex") == "LGBTQ|support"
    assert agent_pattern(["LGBTQ", "support"], "full_text") == "LGBTQ support"


@pytest.mark.parametrize("mode", ["regex", "full_text"])
def test_the_question_as_typed_rarely_matches(mode):
    store = store_of(["Caroline: I went to the LGBTQ support group yesterday."])
    assert lcm_grep(store, "When did Caroline go to the LGBTQ support group?", mode, "messages").total == 0
