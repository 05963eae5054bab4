"""Request and response shapes of the service, and the checks on a text (chapter 8, ``ch08-service``).

Types are strict (``"5"``, ``5.0`` and ``true`` are not an integer ``k``;
``null`` and ``123`` are not a text) and unknown fields are refused, so a
typo in a field name gets an answer instead of a silent default.
"""

from __future__ import annotations

import unicodedata

from pydantic import BaseModel, ConfigDict, Field

from .errors import ServiceError

__all__ = ["SentimentRequest", "SimilarityRequest", "SearchRequest", "SummarizeRequest",
           "check_text", "check_k"]

_STRICT = ConfigDict(strict=True, extra="forbid")


class SentimentRequest(BaseModel):
    model_config = _STRICT
    text: str = Field(description="a review, English or Chinese · 一条评论，中文或英文",
                      examples=["质量很好，物流也快，非常满意！"])


class SimilarityRequest(BaseModel):
    model_config = _STRICT
    a: str = Field(description="first text · 第一段文本", examples=["How long does the phone battery last?"])
    b: str = Field(description="second text · 第二段文本", examples=["The battery of this phone lasts two days."])


class SearchRequest(BaseModel):
    model_config = _STRICT
    text: str = Field(description="the query · 查询", examples=["Where can I eat good food?"])
    k: int = Field(3, description="how many sentences, 1 to the corpus size · 返回句数")


class SummarizeRequest(BaseModel):
    model_config = _STRICT
    text: str = Field(description="the document, sentences ending in . ! ? ; or 。！？； · 文档")
    k: int = Field(3, description="how many sentences to keep · 保留的句数")


def check_text(value: str, field: str, max_chars: int) -> str:
    """``value`` if it is a usable text, else a 422 :class:`ServiceError` naming ``field``.

    Refused: empty or only whitespace; longer than ``max_chars``; a control
    character other than tab, newline, carriage return (e.g. NUL).
    """
    if not value.strip():
        raise ServiceError(422, "text_empty", field, f"'{field}' is empty or only whitespace",
                           f"'{field}' 为空或只有空白字符")
    if len(value) > max_chars:
        raise ServiceError(422, "text_too_long", field,
                           f"'{field}' has {len(value)} characters, the limit is {max_chars}",
                           f"'{field}' 有 {len(value)} 个字符，上限是 {max_chars}")
    bad = next((c for c in value if c not in "\t\n\r" and unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise ServiceError(422, "control_character", field,
                           f"'{field}' contains the control character U+{ord(bad):04X}",
                           f"'{field}' 含有控制字符 U+{ord(bad):04X}")
    return value


def check_k(k: int, field: str, largest: int) -> int:
    """``k`` if ``1 <= k <= largest``, else a 422 :class:`ServiceError` naming ``field``."""
    if not 1 <= k <= largest:
        raise ServiceError(422, "out_of_range", field, f"'{field}' must be between 1 and {largest}, got {k}",
                           f"'{field}' 必须在 1 到 {largest} 之间，收到的是 {k}")
    return k
