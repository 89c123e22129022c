"""jieba word segmentation at index and query time, words stored space-separated in a unicode61
table (seed 002)."""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import field_validator

from harness.bundled import project_path
from harness.errors import DataError
from harness.registry import stage
from harness.stages.tokenizers.base import (
    NORMALIZERS,
    TOKENIZERS,
    Join,
    Normalize,
    QueryTermsTokenizer,
    has_token_char,
)

_jieba_lock = threading.Lock()
_jieba_instances: dict[tuple[str | None, float | None], Any] = {}


def _jieba_tokenizer(user_dict: Path | None):
    """One jieba.Tokenizer per user dictionary (and its mtime), never jieba's global one, so a user
    dictionary of one run cannot leak into another.  Loading the main dictionary takes ~1 s once."""
    import jieba

    jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict..." chatter on stderr
    key = (str(user_dict), user_dict.stat().st_mtime) if user_dict else (None, None)
    with _jieba_lock:
        tok = _jieba_instances.get(key)
        if tok is None:
            tok = jieba.Tokenizer()
            tok.initialize()
            if user_dict is not None:
                try:
                    tok.load_userdict(str(user_dict))
                except (ValueError, UnicodeDecodeError) as exc:
                    raise DataError(user_dict, None, "user_dict", f"not a jieba user dictionary: {exc}") from None
            _jieba_instances[key] = tok
    return tok


def _user_dict_path(user_dict: str) -> Path:
    return project_path(user_dict)


@TOKENIZERS.register("jieba")
@stage
class Jieba(QueryTermsTokenizer):
    """jieba words written space-separated into a unicode61 table; the query is segmented the same way
    and its words quoted and joined (seed 002)."""

    mode: Literal["precise", "search"] = "precise"
    """"precise" (jieba.cut) or "search" (cut_for_search: 内存不足 -> 内存 不足 内存不足), at index and query time"""
    user_dict: str | None = None
    """a jieba user dictionary ("word [freq] [tag]" per line), e.g. to make 美国手机号 one word"""
    hmm: bool = True
    """jieba's HMM for unknown words"""
    join: Join = "and"
    """how query words combine: "and" or "or\""""
    normalize: Normalize = "nfkc"
    """"nfkc" (full-width ＡＰＩ matches API) or "none\""""

    name: ClassVar[str] = "jieba"
    fts5_tokenize: ClassVar[str] = "unicode61"

    @field_validator("user_dict")
    @classmethod
    def _user_dict_exists(cls, user_dict: str | None) -> str | None:
        if user_dict is not None and not _user_dict_path(user_dict).is_file():
            raise ValueError("no such file")
        return user_dict

    def __post_init__(self) -> None:
        self._norm = NORMALIZERS[self.normalize]
        self._jieba = _jieba_tokenizer(None if self.user_dict is None else _user_dict_path(self.user_dict))

    def words(self, text: str) -> list[str]:
        text = self._norm(text)
        if self.mode == "search":
            return list(self._jieba.cut_for_search(text, HMM=self.hmm))
        return list(self._jieba.cut(text, HMM=self.hmm))

    def index_text(self, text: str) -> str:
        return " ".join(self.words(text))

    def query_terms(self, query: str) -> list[str]:
        # punctuation, spaces and emoji come back from jieba as words of their own; FTS5 indexes none of them
        return [w for w in self.words(query) if has_token_char(w)]
