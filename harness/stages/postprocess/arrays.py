"""Post-processing on query x candidate arrays, for the fast sweep scorer (harness.evaluation.fast_scoring).

OpenClaw's stages between the fusion and the minScore selection, each built from a configured stage
object (harness.stages.postprocess) and reproducing its __call__ on every row of the candidate matrix.
The scorer applies each step through its own methods (`kind`, Rescale.factor, Diversify.order), so it
imports nothing from the stages:

    stage            array step   what it does on the arrays
    temporal_decay   Rescale      score x the stage's own multiplier(age of the chunk's file), re-ranked
    importance       Rescale      score x the stage's own multiplier(curated importance of the chunk), re-ranked
    mmr              Diversify    the stage's own greedy selection (openclaw.mmr_array_order, which its call
                                  runs on one row): lambda x relevance - (1 - lambda) x the max Jaccard
                                  similarity (the stage's snippet_similarity) to the picked ones, exact
                                  ties to the higher score, then to the earlier candidate

The factors and similarities are computed by the stages' own functions, once per chunk (or pair of
chunks) of a sweep, and multiplied in the stages' order, so every score is the same float as the
pipeline's; tests/test_fast_postprocess.py checks every figure against the stages on random inputs.
A stage these steps do not model (the memory-lancedb-pro and QMD stages) raises ValueError naming it,
and the sweep scores such settings through the pipeline's stages instead.

    >>> steps = array_steps(stages, legs, chunk_path=..., chunk_text=..., now=...)
    >>> score_settings(legs, fusions, thresholds, post=steps, max_results=6)   # harness.evaluation.fast_scoring
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from harness.stages.chunkers.openclaw import utf16_prefix
from harness.stages.postprocess.base import (
    SearchContext,
    age_days,
    memory_date,
    reference_time,
)
from harness.stages.postprocess.openclaw import (
    MMR,
    MMR_TOKENIZERS,
    ImportanceMultiplier,
    TemporalDecay,
    curated_importance,
    jaccard,
    mmr_array_order,
    snippet_similarity,
)

Need = tuple[np.ndarray, np.ndarray]  # (mask over candidates, how many of them must have been picked) per row


@dataclass(frozen=True)
class Rescale:
    """A stage that multiplies each candidate's score by a per-chunk factor and re-ranks (score desc, id)."""

    name: str
    factor: np.ndarray  # queries x candidates

    kind = "rescale"


@dataclass(frozen=True)
class Diversify:
    """OpenClaw's MMR: the candidates reordered, scores unchanged."""

    name: str
    lambda_: float
    similarity: np.ndarray  # queries x candidates x candidates (0 for padding columns)

    kind = "diversify"

    def order(self, score: np.ndarray, present: np.ndarray, rank: np.ndarray, query: np.ndarray,
              needs: Sequence[Need] | None = None, score_ordered: bool = False) -> np.ndarray:
        """mmr_order with this step."""
        return mmr_order(score, present, rank, query, self, needs, score_ordered)


ArrayStep = Rescale | Diversify
SUPPORTED = (TemporalDecay, ImportanceMultiplier, MMR)


def supported(stage: Any) -> bool:
    """Whether array_steps can model this post-processing stage object."""
    return isinstance(stage, SUPPORTED)


def array_steps(stages: Sequence[Any], chunk_ids: Sequence[Sequence[str]], *, chunk_path: Callable[[str], str],
                chunk_text: Callable[[str], str], now: Any = None,
                cache: dict | None = None) -> list[ArrayStep]:
    """The array steps of post-processing stage objects (in their order) over candidate columns
    `chunk_ids` (per query, its candidates in column order; the matrix is padded to the widest row).
    `now`: the run's reference time (evaluation.now) for stages without their own.  `cache` keeps
    per-chunk factors and similarity matrices between calls on the same columns."""
    cache = {} if cache is None else cache
    width = max([len(row) for row in chunk_ids] + [1])
    out: list[ArrayStep] = []
    for stage in stages:
        if isinstance(stage, TemporalDecay):
            if stage.half_life_days <= 0:
                continue  # off: the stage returns its input as it is
            key = ("decay", stage.half_life_days, None if stage.now is None else stage.now.isoformat(),
                   None if now is None else str(now))
            if key not in cache:
                cache[key] = _factors(chunk_ids, width, lambda cid: _decay_factor(stage, chunk_path(cid), now))
            out.append(Rescale("temporal_decay", cache[key]))
        elif isinstance(stage, ImportanceMultiplier):
            key = ("importance",)
            if key not in cache:
                cache[key] = _factors(chunk_ids, width, lambda cid: stage.multiplier(
                    curated_importance(chunk_path(cid), chunk_text(cid))))
            out.append(Rescale("importance", cache[key]))
        elif isinstance(stage, MMR):
            key = ("mmr", stage.tokens, stage.snippet_chars)
            if key not in cache:
                cache[key] = _similarities(chunk_ids, width, stage, chunk_text)
            out.append(Diversify("mmr", float(stage.lambda_), cache[key]))
        else:
            raise ValueError(f"fast scoring: post-processing stage {type(stage).__name__} is not supported "
                             "(use the slow path)")
    return out


def _decay_factor(stage: TemporalDecay, path: str, now: Any) -> float:
    if memory_date(path, True) is None:
        return 1.0  # undated: evergreen (the stage needs no reference time for it)
    when = reference_time(stage.now, SearchContext("", 0, 0.0, 0.0, now=now), "temporal_decay")
    return stage.multiplier(age_days(path, when, True))


def _factors(chunk_ids: Sequence[Sequence[str]], width: int, factor: Callable[[str], float]) -> np.ndarray:
    seen: dict[str, float] = {}
    out = np.ones((len(chunk_ids), width))
    for q, row in enumerate(chunk_ids):
        for c, cid in enumerate(row):
            if cid not in seen:
                seen[cid] = float(factor(cid))
            out[q, c] = seen[cid]
    return out


def _similarities(chunk_ids: Sequence[Sequence[str]], width: int, stage: MMR,
                  chunk_text: Callable[[str], str]) -> np.ndarray:
    """Each query's candidates' pairwise snippet similarities, as the stage computes them: Jaccard of the
    stage's token sets (its own tokenizer and `jaccard`), and for two token-less snippets the stage's
    snippet_similarity (its rule for them); each pair computed once however many queries share it."""
    tokenize = MMR_TOKENIZERS[stage.tokens]
    snippets: dict[str, str] = {}
    tokens: dict[str, frozenset[str]] = {}
    pairs: dict[tuple[str, str], float] = {}
    out = np.zeros((len(chunk_ids), width, width))
    for q, row in enumerate(chunk_ids):
        for cid in row:
            if cid not in snippets:
                snippets[cid] = utf16_prefix(chunk_text(cid), stage.snippet_chars)
                tokens[cid] = tokenize(snippets[cid])
        for i, a in enumerate(row):
            for j in range(i + 1, len(row)):
                b = row[j]
                key = (a, b) if a < b else (b, a)
                value = pairs.get(key)
                if value is None:
                    ta, tb = tokens[a], tokens[b]
                    value = jaccard(ta, tb) if ta or tb else snippet_similarity(stage.tokens, snippets[a], snippets[b])
                    pairs[key] = value
                out[q, i, j] = out[q, j, i] = value
    return out


# --- the greedy MMR order, on many rows at once -----------------------------------------------------------



def mmr_order(score: np.ndarray, present: np.ndarray, rank: np.ndarray, query: np.ndarray, step: Diversify,
              needs: Sequence[Need] | None = None, score_ordered: bool = False) -> np.ndarray:
    """The MMR stage's own greedy selection (openclaw.mmr_array_order) with a Diversify step's lambda and
    similarities."""
    return mmr_array_order(score, present, rank, query, step.lambda_, step.similarity, needs, score_ordered)
