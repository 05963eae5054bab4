"""Request and response shapes of the service, and the checks on a text (chapter 8, ``ch08-service``).

Types are strict (``"5"``, ``5.0`` and ``true`` are not an integer ``k``;
``null`` and ``123`` are not a text) and unknown fields are refused, so a
typo in a field name gets an answer instead of a silent default.

The OpenAPI schema says what the checks accept (:func:`bound_schema`): each
text has ``minLength`` 1, ``maxLength`` from :class:`~course_lib.service.limits.Limits`
and :data:`TEXT_PATTERN` (something besides white space, no control
character); each ``k`` has its ``minimum`` and ``maximum``. The refusals
themselves stay with :func:`check_text` and :func:`check_k` (their codes and
messages), so the schema and the checks must agree: ``tests/unit/test_service_fuzz.py``
sends what the schema admits and what it does not, and checks the answers.
"""

from __future__ import annotations

import unicodedata

from pydantic import BaseModel, ConfigDict, Field

from .limits import Limits

from .errors import ServiceError

__all__ = ["SentimentRequest", "SimilarityRequest", "SearchRequest", "SummarizeRequest",
           "SentimentResponse", "SimilarityResponse", "SearchResponse", "SummarizeResponse", "HealthResponse",
           "TEXT_PATTERN", "bound_schema", "check_text", "check_k"]

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


_CLOSED = ConfigDict(extra="forbid")


class SentimentResponse(BaseModel):
    model_config = _CLOSED
    label: str
    confidence: float = Field(ge=0, le=1)
    probabilities: dict[str, float]


class SimilarityResponse(BaseModel):
    model_config = _CLOSED
    cosine: float = Field(ge=-1, le=1)


class SearchHit(BaseModel):
    model_config = _CLOSED
    index: int = Field(ge=0)
    sentence: str = Field(min_length=1)
    cosine: float = Field(ge=-1, le=1)


class SearchResponse(BaseModel):
    model_config = _CLOSED
    results: list[SearchHit] = Field(min_length=1)


class SummarySentence(BaseModel):
    model_config = _CLOSED
    index: int = Field(ge=0)
    sentence: str = Field(min_length=1)
    score: float


class SummarizeResponse(BaseModel):
    model_config = _CLOSED
    n_sentences: int = Field(ge=1)
    summary: list[SummarySentence] = Field(min_length=1)


class HealthResponse(BaseModel):
    model_config = _CLOSED
    status: str
    precision: str
    models: list[dict]
    versions: dict[str, str]
    search_corpus_size: int = Field(ge=1)
    limits: dict[str, float]


# Characters check_text refuses anywhere: the control characters (category Cc) but tab, newline
# and carriage return. White space as str.strip() sees it (str.isspace), written out, so that
# Python's and ECMAScript's regular expressions read the pattern alike. Lone surrogates (a JSON
# escape such as "\ud800" decodes to one; MiniLM's tokenizer cannot encode it) are refused by
# check_text too, but a pattern cannot name them: the schema validators' regex engines refuse
# a surrogate range.
_REFUSED = r"\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f"
_REFUSED_OR_SPACE = r"\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
TEXT_PATTERN = f"^[^{_REFUSED}]*[^{_REFUSED_OR_SPACE}][^{_REFUSED}]*$"
"""What :func:`check_text` accepts (length aside), as a JSON Schema ``pattern``."""

# (request model, field) -> the Limits attribute that bounds it; ``k`` of search is bounded by the corpus
_TEXT_BOUNDS = {("SentimentRequest", "text"): "max_text_chars", ("SimilarityRequest", "a"): "max_text_chars",
                ("SimilarityRequest", "b"): "max_text_chars", ("SearchRequest", "text"): "max_text_chars",
                ("SummarizeRequest", "text"): "max_document_chars"}
_K_BOUNDS = {"SearchRequest": "search_corpus_size", "SummarizeRequest": "max_summary_sentences"}


def bound_schema(components: dict, limits: Limits, search_corpus_size: int) -> dict:
    """Write the request bounds into OpenAPI ``components.schemas`` (in place; returned).

    Args:
        components: the ``components["schemas"]`` dict of the app's OpenAPI schema.
        limits: the app's :class:`~course_lib.service.limits.Limits`.
        search_corpus_size: how many sentences ``/v1/search`` searches (the largest ``k``).
    """
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
    for (model, field), bound in _TEXT_BOUNDS.items():
        components[model]["properties"][field].update(
            minLength=1, maxLength=getattr(limits, bound), pattern=TEXT_PATTERN)
    for model, bound in _K_BOUNDS.items():
        largest = search_corpus_size if bound == "search_corpus_size" else getattr(limits, bound)
        components[model]["properties"]["k"].update(minimum=1, maximum=largest)
    return components


def check_text(value: str, field: str, max_chars: int) -> str:
    """``value`` if it is a usable text, else a 422 :class:`ServiceError` naming ``field``.

    Refused: empty or only whitespace; longer than ``max_chars``; a control
    character other than tab, newline, carriage return (e.g. NUL); a lone
    surrogate (the JSON escape ``"\\ud800"``, which no UTF-8 text can hold).
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
    bad = next((c for c in value if "\ud800" <= c <= "\udfff"), None)
    if bad is not None:
        raise ServiceError(422, "lone_surrogate", field,
                           f"'{field}' contains the lone surrogate U+{ord(bad):04X}, which is not a character",
                           f"'{field}' 含有孤立的代理码位 U+{ord(bad):04X}，它不是字符")
    return value


def check_k(k: int, field: str, largest: int) -> int:
    """``k`` if ``1 <= k <= largest``, else a 422 :class:`ServiceError` naming ``field``."""
    if not 1 <= k <= largest:
        raise ServiceError(422, "out_of_range", field, f"'{field}' must be between 1 and {largest}, got {k}",
                           f"'{field}' 必须在 1 到 {largest} 之间，收到的是 {k}")
    return k
