"""The capstone as an HTTP service: FastAPI routes over chapter 8's models (chapter 8, ``ch08-service``).

Run it with ``make api`` (uvicorn on 127.0.0.1, ``PORT ?= 8001``), or
``python -m course_lib.service`` (uvicorn with :mod:`~course_lib.service.protocol`). A request travels::

    client -> BodyGuard (content type 415, size 413, UTF-8 400) -> FastAPI/pydantic (JSON 400, types 422)
           -> route checks (empty, too long, control characters, k: 422) -> model in a thread,
              within the time budget (503) -> JSON

Routes: ``GET /`` (the try-it page), ``GET /v1/health``, ``POST /v1/sentiment``,
``/v1/similarity``, ``/v1/search``, ``/v1/summarize``; ``/openapi.json``
describes them. FastAPI's ``/docs`` pages fetch their JavaScript from a CDN,
so they are switched off: the service makes no request to another host.
Every refusal has the envelope of :mod:`course_lib.service.errors`.
The schema declares what each route answers: its 200 body, and for a POST route
400, 413, 415, 422 and 503 in that envelope; its request bounds come from the
app's :class:`~course_lib.service.limits.Limits` (:func:`~course_lib.service.schemas.bound_schema`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .errors import ERROR_RESPONSES, ServiceError, error_response, from_validation
from .limits import Limits
from .models import SEARCH_CORPUS, Served, load_models
from . import models as tasks
from .page import page_html
from .schemas import (HealthResponse, SearchRequest, SearchResponse, SentimentRequest, SentimentResponse,
                      SimilarityRequest, SimilarityResponse, SummarizeRequest, SummarizeResponse, bound_schema,
                      check_k, check_text)

__all__ = ["create_app", "app", "POST_ROUTES"]

POST_ROUTES = ("/v1/sentiment", "/v1/similarity", "/v1/search", "/v1/summarize")


class BodyGuard:
    """ASGI middleware: checks a POST body before anything parses it.

    415 unless ``Content-Type: application/json`` (charset utf-8 if given);
    413 when ``Content-Length`` or the bytes received pass ``limits.max_body_bytes``
    (reading stops there); 400 when the body is not valid UTF-8, not JSON, or
    nested so deeply that Python's parser would overflow its stack.
    """

    def __init__(self, app, limits: Limits):
        self.app, self.limits = app, limits

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in POST_ROUTES:
            return await self.app(scope, receive, send)
        try:
            body = await self._read(scope, receive)
        except ServiceError as err:
            return await error_response(err)(scope, receive, send)
        done = False

        async def replay():
            nonlocal done
            if not done:
                done = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()
        await self.app(scope, replay, send)

    async def _read(self, scope, receive) -> bytes:
        headers = {k.lower(): v for k, v in scope["headers"]}
        ctype = headers.get(b"content-type", b"").decode("latin-1")
        mime, _, params = ctype.partition(";")
        charset = params.strip().lower().removeprefix("charset=").strip('"') if params.strip() else "utf-8"
        if mime.strip().lower() != "application/json" or charset not in ("utf-8", "utf8"):
            raise ServiceError(415, "unsupported_media_type", "content-type",
                               f"send Content-Type: application/json (UTF-8), got {ctype or 'none'!r}",
                               f"请使用 Content-Type: application/json（UTF-8），收到的是 {ctype or '无'!r}")
        limit = self.limits.max_body_bytes
        too_big = ServiceError(413, "body_too_large", "body", f"the body is larger than {limit} bytes",
                               f"请求体超过 {limit} 字节")
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise too_big
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ServiceError(400, "client_disconnected", "body", "the client went away", "客户端已断开")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise too_big
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            json.loads(body.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise ServiceError(400, "invalid_utf8", "body", f"the body is not valid UTF-8 (byte {e.start})",
                               f"请求体不是合法的 UTF-8（第 {e.start} 个字节）") from None
        except ValueError as e:
            raise ServiceError(400, "invalid_json", "body", f"the body is not valid JSON: {e}",
                               f"请求体不是合法的 JSON：{e}") from None
        except RecursionError:
            raise ServiceError(400, "json_too_deep", "body", "the body's JSON is nested too deeply",
                               "请求体的 JSON 嵌套过深") from None
        return body


async def _within_budget(request: Request, fn, *args):
    """Run ``fn(served, *args)`` in a worker thread; 503 if it overruns the time budget."""
    budget = request.app.state.limits.time_budget_s
    try:
        with anyio.fail_after(budget):
            return await anyio.to_thread.run_sync(functools.partial(fn, request.app.state.served, *args),
                                                  abandon_on_cancel=True)
    except TimeoutError:
        raise ServiceError(503, "time_budget_exceeded", "body",
                           f"the request needed more than its time budget of {budget} s; try a shorter text",
                           f"请求超出了 {budget} 秒的时间预算；请换一段更短的文本") from None


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, str(default))
    if not value.isdigit():
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def create_app(served: Served | None = None, limits: Limits | None = None,
               precision: str | None = None, threads: int | None = None) -> FastAPI:
    """The FastAPI app (chapter 8).

    Args:
        served: already loaded models (tests share one); None loads them at start-up.
        limits: the request bounds; None reads :meth:`Limits.from_env`.
        precision: ``float64`` (default), ``float32`` or ``int8``; None reads
            ``COURSE_SERVICE_PRECISION``.
        threads: torch threads; None reads ``COURSE_SERVICE_THREADS`` (default 1).
    """
    limits = Limits.from_env() if limits is None else limits
    precision = os.environ.get("COURSE_SERVICE_PRECISION", "float64") if precision is None else precision
    threads = _env_int("COURSE_SERVICE_THREADS", 1) if threads is None else threads

    @contextlib.asynccontextmanager
    async def lifespan(app):
        app.state.served = served if served is not None else load_models(precision, threads)
        yield

    app = FastAPI(title="course_lib capstone service · 文本处理服务", version="1",
                  docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.limits = limits
    default_openapi = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = default_openapi()
            bound_schema(schema["components"]["schemas"], limits, len(SEARCH_CORPUS))
        return app.openapi_schema

    app.openapi = openapi
    app.add_middleware(BodyGuard, limits=limits)

    @app.exception_handler(ServiceError)
    async def _service_error(request, err):
        return error_response(err)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request, exc):
        return error_response(from_validation(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request, exc):
        if exc.status_code == 404:
            err = ServiceError(404, "not_found", "path", f"no route {request.url.path}; see GET /openapi.json",
                               f"没有路由 {request.url.path}；见 GET /openapi.json")
        elif exc.status_code == 405:
            err = ServiceError(405, "method_not_allowed", "method",
                               f"{request.method} is not allowed on {request.url.path}",
                               f"{request.url.path} 不接受 {request.method} 请求")
        else:
            err = ServiceError(exc.status_code, f"http_{exc.status_code}", "body", str(exc.detail), str(exc.detail))
        return error_response(err)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page():
        return page_html()

    def answers(model, summary: str) -> dict:
        return {200: {"model": model, "description": summary}, **ERROR_RESPONSES}

    @app.get("/v1/health",
             responses={200: {"model": HealthResponse, "description": "models, versions, limits · 模型与限制"}})
    async def health(request: Request):
        return {**request.app.state.served.health, "limits": request.app.state.limits.as_dict()}

    @app.post("/v1/sentiment", responses=answers(SentimentResponse, "label and probabilities · 标签与概率"))
    async def sentiment(body: SentimentRequest, request: Request):
        """Label, confidence and probabilities of the ch08-sentiment classifier · 情感分类"""
        text = check_text(body.text, "text", limits.max_text_chars)
        return await _within_budget(request, tasks.sentiment, text)

    @app.post("/v1/similarity", responses=answers(SimilarityResponse, "cosine · 余弦"))
    async def similarity(body: SimilarityRequest, request: Request):
        """Cosine of the MiniLM embeddings of a and b · 两段文本的余弦相似度"""
        a, b = (check_text(getattr(body, f), f, limits.max_text_chars) for f in ("a", "b"))
        return await _within_budget(request, tasks.similarity, a, b)

    @app.post("/v1/search",
              responses=answers(SearchResponse, "the nearest sentences, best first · 最相近的句子"))
    async def search(body: SearchRequest, request: Request):
        """The k nearest sentences of the corpus · 语料中最相近的 k 句"""
        text = check_text(body.text, "text", limits.max_text_chars)
        k = check_k(body.k, "k", len(SEARCH_CORPUS))
        return await _within_budget(request, tasks.search, text, k)

    @app.post("/v1/summarize",
              responses=answers(SummarizeResponse, "the kept sentences in document order · 摘要句"))
    async def summarize(body: SummarizeRequest, request: Request):
        """Extractive summary: the k sentences nearest the centroid · 抽取式摘要"""
        text = check_text(body.text, "text", limits.max_document_chars)
        k = check_k(body.k, "k", limits.max_summary_sentences)
        return await _within_budget(request, tasks.summarize, text, k)

    return app


app = create_app()
"""The app ``make api`` serves (settings from the ``COURSE_SERVICE_*`` environment)."""
