"""The synthetic corpus of the scale experiment: a vocabulary from king78's prose, mixed Chinese/Latin
chunk texts drawn from it, hierarchical-topic unit vectors, the queries of both legs and the exact
top-k each vector query should find."""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from harness.inputs.king78 import load_daily_logs, load_records
from harness.inputs.layout import project_path
from harness.stages.chunkers import Chunk
from harness.stages.cjk import is_cjk_char
from harness.stages.tokenizers import TOKENIZERS
from harness.stages.vector import top_k_exact, unit_rows
from harness.studies.scale.process import ChildError, run_in_child

DIM = 384  # multilingual-e5-small
K = 10  # the top-k every backend is asked for, and the exact top-k of the truth

# Mean chunk length in characters: about two king78 facts.  Real chunks run to ~500 characters, but
# every lexical build is linear in text length (jieba alone ~0.4 M chars/s), and 120 keeps the 100k
# run of all backends near 6 minutes on 2 cores; longer chunks scale the lexical build columns.
DEFAULT_MEAN_CHARS = 120

CLAUSE_MARKS = frozenset("，、；：,;:")
SENTENCE_MARKS = frozenset("。！？!?")
_LATIN_WORD = re.compile(r"[A-Za-z0-9]+")


# ---------------------------------------------------------------------------------------------
# Vocabulary from king78
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vocabulary:
    """Words and frequencies of the king78 prose, and how its text mixes them."""

    han: tuple[str, ...]  # Chinese words, most frequent first (ties by word)
    han_counts: tuple[int, ...]
    latin: tuple[str, ...]  # ASCII letter/digit terms (Python, n8n, API, 2025)
    latin_counts: tuple[int, ...]
    latin_share: float  # Latin terms / all word tokens
    clause_rate: float  # clause marks (，、；：) per word token
    sentence_rate: float  # sentence marks (。！？) per word token
    source_mix: dict[str, float] = field(default_factory=dict)  # script_mix of the source text

    def summary(self) -> dict[str, Any]:
        return {
            "source": "datasets/king78 records (title, summary, facts, insights, thoughts, actions) and daily logs",
            "segmenter": "registered tokenizer 'jieba' (precise mode, no normalisation)",
            "han_words": len(self.han), "latin_terms": len(self.latin),
            "han_tokens": int(sum(self.han_counts)), "latin_tokens": int(sum(self.latin_counts)),
            "latin_share_of_word_tokens": round(self.latin_share, 4),
            "clause_marks_per_word": round(self.clause_rate, 4),
            "sentence_marks_per_word": round(self.sentence_rate, 4),
            "top_han": list(self.han[:15]), "top_latin": list(self.latin[:15]),
            "source_script_mix": self.source_mix,
        }


def king78_prose(path: Path | str = "datasets/king78") -> list[str]:
    path = project_path(path)
    records = load_records(path / "records.jsonl")
    texts: list[str] = []
    for r in records:
        texts += [r["title"], r["summary"], *r["facts"], *r["insights"], *r["thoughts"], *r["actions"]]
    texts += [e["text"] for e in load_daily_logs(path / "daily_logs.jsonl")]
    return texts


def script_mix(text: str) -> dict[str, float]:
    """Shares of CJK letters, ASCII letters/digits and everything else among non-space characters."""
    cjk = latin = other = 0
    for ch in text:
        if ch.isspace():
            continue
        if is_cjk_char(ch):
            cjk += 1
        elif ch.isascii() and ch.isalnum():
            latin += 1
        else:
            other += 1
    total = max(1, cjk + latin + other)
    return {"cjk": round(cjk / total, 4), "latin": round(latin / total, 4), "other": round(other / total, 4)}


def _word_class(word: str) -> str:
    if all(is_cjk_char(ch) for ch in word):
        return "han"
    if _LATIN_WORD.fullmatch(word):
        return "latin"
    if word in CLAUSE_MARKS:
        return "clause"
    if word in SENTENCE_MARKS:
        return "sentence"
    return "other"  # mixed-script words, symbols, other punctuation: not used


def vocabulary_from_texts(texts: Sequence[str], segment: Callable[[str], list[str]]) -> Vocabulary:
    han: Counter = Counter()
    latin: Counter = Counter()
    clause = sentence = 0
    for text in texts:
        for word in segment(text):
            kind = _word_class(word)
            if kind == "han":
                han[word] += 1
            elif kind == "latin":
                latin[word] += 1
            elif kind == "clause":
                clause += 1
            elif kind == "sentence":
                sentence += 1
    if not han or not latin:
        raise ValueError("vocabulary: the source text needs both Chinese words and Latin terms")
    han_items = sorted(han.items(), key=lambda kv: (-kv[1], kv[0]))
    latin_items = sorted(latin.items(), key=lambda kv: (-kv[1], kv[0]))
    words = sum(han.values()) + sum(latin.values())
    return Vocabulary(
        han=tuple(w for w, _ in han_items), han_counts=tuple(c for _, c in han_items),
        latin=tuple(w for w, _ in latin_items), latin_counts=tuple(c for _, c in latin_items),
        latin_share=sum(latin.values()) / words, clause_rate=clause / words, sentence_rate=sentence / words,
        source_mix=script_mix("".join(texts)),
    )


def _jieba_segmenter() -> Callable[[str], list[str]]:
    if "jieba" not in TOKENIZERS:
        raise RuntimeError(f"tokenizer 'jieba' is not registered (have {TOKENIZERS.names()})")
    tokenizer = TOKENIZERS.create("jieba", normalize="none")  # keep full-width punctuation as written
    return lambda text: tokenizer.index_text(text).split()


def _build_vocabulary_here(path: str) -> Vocabulary:
    return vocabulary_from_texts(king78_prose(path), _jieba_segmenter())


def build_vocabulary(path: Path | str = "datasets/king78", *, isolate: bool = True) -> Vocabulary:
    """The king78 vocabulary.  With isolate (the default) jieba runs in a child process, so its ~70 MB
    dictionary is not inherited by the children that measure the backends."""
    if not isolate:
        return _build_vocabulary_here(str(path))
    result = run_in_child(_build_vocabulary_here, str(path))
    if isinstance(result, ChildError):
        raise RuntimeError(f"building the vocabulary failed:\n{result.text}")
    return result


# ---------------------------------------------------------------------------------------------
# Synthetic text
# ---------------------------------------------------------------------------------------------


@dataclass
class SyntheticText:
    texts: list[str]
    words: list[list[str]]  # each chunk's words (Chinese words and Latin terms), in order


def synthetic_texts(n: int, vocab: Vocabulary, *, seed: int = 0, mean_chars: int = DEFAULT_MEAN_CHARS) -> SyntheticText:
    """n chunks of mixed Chinese/English text, lengths uniform in [mean/2, 3 mean/2] characters."""
    if n < 1 or mean_chars < 4:
        raise ValueError("synthetic_texts: need n >= 1 and mean_chars >= 4")
    rng = np.random.default_rng([seed, 1])
    han = np.array(vocab.han, dtype=object)
    latin = np.array([f" {w} " for w in vocab.latin], dtype=object)
    han_p = np.asarray(vocab.han_counts, dtype=np.float64) / sum(vocab.han_counts)
    latin_p = np.asarray(vocab.latin_counts, dtype=np.float64) / sum(vocab.latin_counts)
    targets = rng.integers(mean_chars // 2, mean_chars * 3 // 2 + 1, size=n)
    mean_word = float((han_p * np.array([len(w) for w in vocab.han])).sum() * (1 - vocab.latin_share)
                      + (latin_p * np.array([len(w) + 1 for w in vocab.latin])).sum() * vocab.latin_share)
    mark_rate = vocab.clause_rate + vocab.sentence_rate
    words_needed = int(targets.sum() / (mean_word + mark_rate) * 1.1) + 64
    is_latin = rng.random(words_needed) < vocab.latin_share
    pieces = np.empty(words_needed, dtype=object)
    pieces[~is_latin] = han[rng.choice(len(han), size=int((~is_latin).sum()), p=han_p)]
    pieces[is_latin] = latin[rng.choice(len(latin), size=int(is_latin.sum()), p=latin_p)]
    # a mark after a word with king78's rate; 。 with its share of the marks
    marks = np.where(rng.random(words_needed) < mark_rate,
                     np.where(rng.random(words_needed) < vocab.sentence_rate / max(mark_rate, 1e-9), "。", "，"), "")
    lengths = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=words_needed) + (marks != "")
    ends = np.cumsum(lengths)
    texts: list[str] = []
    words: list[list[str]] = []
    start, used = 0, 0
    for target in targets:
        stop = int(np.searchsorted(ends, used + target)) + 1
        if stop > words_needed:  # ran out: generate more with a derived seed (deterministic)
            more = synthetic_texts(n - len(texts), vocab, seed=seed + 7919, mean_chars=mean_chars)
            return SyntheticText(texts + more.texts, words + more.words)
        chunk_words = list(pieces[start:stop])
        chunk_marks = marks[start:stop]
        text = "".join(w + m for w, m in zip(chunk_words, chunk_marks))
        text = re.sub(r" ?([，。]) ?", r"\1", re.sub(" {2,}", " ", text)).strip()
        if not text.endswith("。"):
            text = text.rstrip("，") + "。"
        texts.append(text)
        words.append([w.strip() for w in chunk_words])
        used = int(ends[stop - 1])
        start = stop
    return SyntheticText(texts, words)


def lexical_queries(corpus: SyntheticText, vocab: Vocabulary, count: int, *, seed: int = 0,
                    terms: int = 2, skip_top: int = 30) -> list[str]:
    """Queries of `terms` distinct content words taken from one random chunk each (so each query has at
    least one chunk containing all its words); the `skip_top` most frequent Chinese words (的, 了, 是 ...)
    and one-character words are not used as query words."""
    rng = np.random.default_rng([seed, 2])
    stop = set(vocab.han[:skip_top])
    queries: list[str] = []
    while len(queries) < count:
        doc = corpus.words[int(rng.integers(len(corpus.words)))]
        content = list(dict.fromkeys(w for w in doc if len(w) >= 2 and w not in stop))
        if not content:
            continue
        picked = [content[i] for i in sorted(rng.choice(len(content), size=min(terms, len(content)),
                                                         replace=False))]
        text = "".join(f" {w} " if _LATIN_WORD.fullmatch(w) else w for w in picked)
        queries.append(re.sub(" {2,}", " ", text).strip())
    return queries


# ---------------------------------------------------------------------------------------------
# Synthetic vectors
# ---------------------------------------------------------------------------------------------


def _random_units(rng: np.random.Generator, rows: int, dim: int) -> np.ndarray:
    return unit_rows(rng.standard_normal((rows, dim), dtype=np.float32))


def synthetic_vectors(n: int, dim: int = DIM, *, seed: int = 0, topic_cos: float = 0.4,
                      subtopic_cos: float = 0.7, subtopic_size: float = 8.0, topic_size: float = 200.0,
                      zipf: float = 1.0) -> np.ndarray:
    """n unit vectors (float32, n x dim) from a hierarchical topic model: v = a T + b S + c E with
    a^2 = topic_cos, a^2 + b^2 = subtopic_cos, a^2 + b^2 + c^2 = 1, where T, S, E are random unit
    directions of the chunk's topic, sub-topic and the chunk itself (nearly orthogonal in high dim).
    Sub-topics get ~subtopic_size chunks each; topics are drawn with Zipf(zipf) popularity.
    topic_cos = subtopic_cos = 0 gives isotropic random unit vectors."""
    if not 0 <= topic_cos <= subtopic_cos < 1:
        raise ValueError("synthetic_vectors: need 0 <= topic_cos <= subtopic_cos < 1")
    rng = np.random.default_rng([seed, 3])
    n_topics = max(1, math.ceil(n / topic_size))
    n_subtopics = max(1, math.ceil(n / subtopic_size))
    popularity = 1.0 / np.arange(1, n_topics + 1) ** zipf
    topic_of_subtopic = rng.choice(n_topics, size=n_subtopics, p=popularity / popularity.sum())
    subtopic = rng.integers(0, n_subtopics, size=n)
    a, b, c = math.sqrt(topic_cos), math.sqrt(subtopic_cos - topic_cos), math.sqrt(1 - subtopic_cos)
    topics = _random_units(rng, n_topics, dim)
    subtopics = _random_units(rng, n_subtopics, dim)
    vectors = _random_units(rng, n, dim)
    vectors *= c
    vectors += a * topics[topic_of_subtopic[subtopic]]
    vectors += b * subtopics[subtopic]
    return unit_rows(vectors)


def query_vectors(vectors: np.ndarray, count: int, *, seed: int = 0, query_cos: float = 0.85) -> np.ndarray:
    """Queries near random chunks: unit(v + noise) with cosine ~ query_cos to the chunk's vector v."""
    rng = np.random.default_rng([seed, 4])
    sources = rng.integers(0, len(vectors), size=count)
    noise = _random_units(rng, count, vectors.shape[1]) * math.sqrt(1 / query_cos ** 2 - 1)
    return unit_rows(vectors[sources] + noise)


def exact_top_ids(vectors: np.ndarray, queries: np.ndarray, ids: Sequence[str], k: int = K) -> list[list[str]]:
    """Exact top-k ids per query (cosine, ties by id): the ground truth for recall@k."""
    sims = unit_rows(queries) @ unit_rows(vectors).T
    return [[cid for cid, _ in top_k_exact(row, ids, k)] for row in sims]


# ---------------------------------------------------------------------------------------------
# The corpus of one size
# ---------------------------------------------------------------------------------------------


@dataclass
class ScaleCorpus:
    size: int
    chunks: list[Chunk]
    vectors: np.ndarray
    text_queries: list[str]  # [0] is the warm-up query
    vector_queries: np.ndarray  # [0] is the warm-up query
    truth: list[list[str]]  # exact top-k of vector_queries[1:]
    text_mix: dict[str, float]

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.chunks]


def make_corpus(n: int, vocab: Vocabulary, *, seed: int = 0, dim: int = DIM, queries: int = 50,
                mean_chars: int = DEFAULT_MEAN_CHARS, vector_options: dict[str, Any] | None = None) -> ScaleCorpus:
    text = synthetic_texts(n, vocab, seed=seed, mean_chars=mean_chars)
    chunks = [Chunk(path="memory/synthetic.md", start_line=i + 1, end_line=i + 1, text=t)
              for i, t in enumerate(text.texts)]
    vectors = synthetic_vectors(n, dim, seed=seed, **(vector_options or {}))
    qv = query_vectors(vectors, queries + 1, seed=seed)
    ids = [c.id for c in chunks]
    return ScaleCorpus(
        size=n, chunks=chunks, vectors=vectors,
        text_queries=lexical_queries(text, vocab, queries + 1, seed=seed),
        vector_queries=qv, truth=exact_top_ids(vectors, qv[1:], ids, K),
        text_mix=script_mix("".join(text.texts[: min(n, 5000)])),
    )
