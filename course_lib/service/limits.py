"""Every bound the service puts on one request, in one place (chapter 8, ``ch08-service``).

A service must bound the work a single request can cause, or one client can
stall it for everyone. ``Limits`` holds every such bound; the app reads
nothing else. Environment variables override the defaults (the tests shrink
the time budget, ``make api`` takes the defaults)::

    COURSE_SERVICE_MAX_BODY_BYTES   whole request body, bytes           -> 413
    COURSE_SERVICE_MAX_TEXT_CHARS   one text (sentiment, similarity, search query) -> 422
    COURSE_SERVICE_MAX_DOC_CHARS    the document to summarise           -> 422
    COURSE_SERVICE_BUDGET_S         wall-clock seconds for the model work of one request -> 503

What counts as text: a JSON string, valid UTF-8, not empty or only
whitespace, no control characters except tab, newline and carriage return
(a NUL byte is refused), no lone surrogate (the JSON escape ``"\\ud800"``).
Emoji and any other printable character are accepted: the classifier maps
characters it never saw to ``<unk>`` and still answers (a text of emoji only
gets the model's answer for unknown tokens), MiniLM maps them to ``[UNK]``.
"""

from __future__ import annotations

import dataclasses
import os

from ..labs.serving import MAX_CHARS

__all__ = ["Limits"]

_ENV = {"max_body_bytes": "COURSE_SERVICE_MAX_BODY_BYTES", "max_text_chars": "COURSE_SERVICE_MAX_TEXT_CHARS",
        "max_document_chars": "COURSE_SERVICE_MAX_DOC_CHARS", "time_budget_s": "COURSE_SERVICE_BUDGET_S"}


@dataclasses.dataclass(frozen=True)
class Limits:
    """The bounds of one request (chapter 8).

    Attributes:
        max_body_bytes: longest request body; more gets 413 before any parsing.
        max_text_chars: longest text for sentiment, similarity and search
            (the same bound as :func:`course_lib.labs.serving.predict`).
        max_document_chars: longest document for ``/v1/summarize``.
        max_summary_sentences: largest ``k`` for ``/v1/summarize``.
        time_budget_s: wall-clock budget of the model work of one request;
            past it the client gets 503 (the computation finishes in its thread,
            its result is dropped).
    """

    max_body_bytes: int = 1_000_000
    max_text_chars: int = MAX_CHARS
    max_document_chars: int = 20_000
    max_summary_sentences: int = 10
    time_budget_s: float = 10.0

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"Limits.{f.name} must be a positive number, got {v!r}")

    @classmethod
    def from_env(cls, environ=None) -> "Limits":
        """Defaults, overridden by the ``COURSE_SERVICE_*`` variables of ``environ`` (``os.environ``)."""
        environ = os.environ if environ is None else environ
        kw = {}
        for name, var in _ENV.items():
            if var in environ:
                kind = float if name == "time_budget_s" else int
                try:
                    kw[name] = kind(environ[var])
                except ValueError:
                    raise ValueError(f"{var} must be a {kind.__name__}, got {environ[var]!r}") from None
        return cls(**kw)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)
