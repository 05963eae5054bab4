"""The service's one error envelope (chapter 8, ``ch08-service``).

Every refused request, whatever refused it (the body guard, FastAPI's request
validation, the router, a route's own checks, the time budget), gets the same
JSON shape and a 4xx (503 for a blown time budget)::

    {"error": {"code": "text_empty", "field": "text",
               "message_en": "...", "message_zh": "..."}}

``field`` names what was wrong: a JSON field (``text``, ``k``, ``a``), or
``body``, ``content-type``, ``path``, ``method`` for the request itself.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

__all__ = ["ServiceError", "ErrorEnvelope", "envelope", "error_response", "from_validation", "ERROR_RESPONSES"]


class ServiceError(Exception):
    """A refused request: HTTP ``status``, a stable ``code``, the ``field`` at fault, both messages."""

    def __init__(self, status: int, code: str, field: str, message_en: str, message_zh: str):
        super().__init__(message_en)
        self.status, self.code, self.field = status, code, field
        self.message_en, self.message_zh = message_en, message_zh


class ErrorDetail(BaseModel):
    """The inside of the envelope: what the OpenAPI schema promises every refusal carries."""

    model_config = ConfigDict(extra="forbid")
    code: str
    field: str
    message_en: str
    message_zh: str


class ErrorEnvelope(BaseModel):
    """``{"error": {code, field, message_en, message_zh}}``, the body of every refusal."""

    model_config = ConfigDict(extra="forbid")
    error: ErrorDetail


ERROR_RESPONSES = {
    400: {"model": ErrorEnvelope,
          "description": "not JSON, not UTF-8, or nested too deeply · 请求体不是合法的 JSON/UTF-8"},
    413: {"model": ErrorEnvelope, "description": "body larger than limits.max_body_bytes · 请求体过大"},
    415: {"model": ErrorEnvelope,
          "description": "not Content-Type: application/json (UTF-8) · 媒体类型不受支持"},
    422: {"model": ErrorEnvelope, "description": "a field missing, unknown, of the wrong type or out of its "
                                                 "bounds · 字段不合法"},
    503: {"model": ErrorEnvelope, "description": "the model work overran limits.time_budget_s · 超出时间预算"},
}
"""The refusals a POST route can answer, declared in its OpenAPI schema (all in the one envelope)."""


def envelope(code: str, field: str, message_en: str, message_zh: str) -> dict:
    return {"error": {"code": code, "field": field, "message_en": message_en, "message_zh": message_zh}}


def error_response(err: ServiceError) -> JSONResponse:
    return JSONResponse(envelope(err.code, err.field, err.message_en, err.message_zh), status_code=err.status)


_TYPE_ZH = {"string": "字符串", "integer": "整数", "object": "JSON 对象"}


def from_validation(errors: list) -> ServiceError:
    """The first of FastAPI's (pydantic's) validation errors, as a :class:`ServiceError`."""
    e = errors[0]
    kind, loc = e.get("type", ""), [str(p) for p in e.get("loc", ()) if p != "body"]
    field = loc[0] if loc and kind != "json_invalid" else "body"
    if kind == "json_invalid":
        detail = (e.get("ctx") or {}).get("error", "")
        return ServiceError(400, "invalid_json", "body", f"the body is not valid JSON: {detail}",
                            f"请求体不是合法的 JSON：{detail}")
    if kind == "missing":
        return ServiceError(422, "missing_field", field, f"the field '{field}' is required",
                            f"缺少必填字段 '{field}'")
    if kind == "extra_forbidden":
        return ServiceError(422, "unknown_field", field, f"unknown field '{field}': remove it",
                            f"未知字段 '{field}'：请删除")
    if kind in ("model_attributes_type", "dict_type", "model_type"):
        return ServiceError(422, "not_an_object", "body", "the body must be a JSON object, e.g. {\"text\": \"...\"}",
                            "请求体必须是 JSON 对象，例如 {\"text\": \"...\"}")
    expected = {"string_type": "string", "int_type": "integer"}.get(kind)
    if expected:
        got = type(e.get("input")).__name__.replace("NoneType", "null")
        return ServiceError(422, "wrong_type", field, f"'{field}' must be a JSON {expected}, got {got}",
                            f"'{field}' 必须是 JSON {_TYPE_ZH[expected]}，收到的是 {got}")
    return ServiceError(422, "invalid_field", field, f"'{field}': {e.get('msg', 'invalid')}",
                        f"字段 '{field}' 不合法：{e.get('msg', 'invalid')}")
