"""Malformed requests to the capstone service get a clear 4xx in one envelope (chapter 10, ``ch10-service``).

In-process through FastAPI's TestClient (fast); tests/unit/test_service_load.py
sends a few of the same over a real socket to uvicorn. Every case asserts
the status, the envelope's exact shape, its code and the field it names.
"""

import json

import pytest

import fastapi  # noqa: E402,F401  pinned in requirements.txt: a broken install fails, never skips
from fastapi.testclient import TestClient  # noqa: E402

from course_lib.labs.serving import load_classifier, predict  # noqa: E402
from course_lib.service.app import create_app  # noqa: E402
from course_lib.service.limits import Limits  # noqa: E402
from course_lib.service.models import SEARCH_CORPUS, load_models  # noqa: E402

JSON = {"content-type": "application/json"}
OK_TEXT = "质量很好，物流也快，非常满意！"


@pytest.fixture(scope="module")
def served():
    return load_models("float64")


@pytest.fixture(scope="module")
def client(served):
    with TestClient(create_app(served=served, limits=Limits())) as c:
        yield c


def raw(body):
    return body if isinstance(body, bytes) else json.dumps(body).encode()


# (name, method, path, body (bytes, or JSON-able), headers, status, code, field)
CASES = [
    ("truncated JSON", "POST", "/v1/sentiment", b'{"text": "good"', JSON, 400, "invalid_json", "body"),
    ("trailing garbage", "POST", "/v1/sentiment", b'{"text": "good"} x', JSON, 400, "invalid_json", "body"),
    ("empty body", "POST", "/v1/sentiment", b"", JSON, 400, "invalid_json", "body"),
    ("single quotes", "POST", "/v1/sentiment", b"{'text': 'good'}", JSON, 400, "invalid_json", "body"),
    ("NaN literal", "POST", "/v1/search", b'{"text": "a", "k": NaN}', JSON, 422, "wrong_type", "k"),
    ("deep nesting", "POST", "/v1/sentiment", b"[" * 200_000, JSON, 400, "json_too_deep", "body"),
    ("invalid UTF-8", "POST", "/v1/sentiment", b'{"text": "\xff\xfe good"}', JSON, 400, "invalid_utf8", "body"),
    ("lone surrogate bytes", "POST", "/v1/sentiment", b'{"text": "\xed\xa0\x80"}', JSON, 400, "invalid_utf8", "body"),
    ("10 MB body", "POST", "/v1/sentiment", b'{"text": "' + b"a" * 10_000_000 + b'"}', JSON, 413,
     "body_too_large", "body"),
    ("text is a number", "POST", "/v1/sentiment", {"text": 42}, JSON, 422, "wrong_type", "text"),
    ("text is null", "POST", "/v1/sentiment", {"text": None}, JSON, 422, "wrong_type", "text"),
    ("text is a list", "POST", "/v1/sentiment", {"text": ["good"]}, JSON, 422, "wrong_type", "text"),
    ("text is an object", "POST", "/v1/sentiment", {"text": {"inner": "good"}}, JSON, 422, "wrong_type", "text"),
    ("missing text", "POST", "/v1/sentiment", {}, JSON, 422, "missing_field", "text"),
    ("unknown extra field", "POST", "/v1/sentiment", {"text": "good", "lang": "en"}, JSON, 422,
     "unknown_field", "lang"),
    ("empty text", "POST", "/v1/sentiment", {"text": ""}, JSON, 422, "text_empty", "text"),
    ("whitespace only", "POST", "/v1/sentiment", {"text": " \t\n　 "}, JSON, 422, "text_empty", "text"),
    ("100k-character text", "POST", "/v1/sentiment", {"text": "好" * 100_000}, JSON, 422, "text_too_long", "text"),
    ("NUL byte", "POST", "/v1/sentiment", {"text": "good\u0000bad"}, JSON, 422, "control_character", "text"),
    ("bell character", "POST", "/v1/search", {"text": "ring\u0007", "k": 1}, JSON, 422, "control_character",
     "text"),
    ("JSON array", "POST", "/v1/sentiment", ["good"], JSON, 422, "not_an_object", "body"),
    ("JSON null", "POST", "/v1/sentiment", None, JSON, 422, "not_an_object", "body"),
    ("JSON string", "POST", "/v1/sentiment", "good", JSON, 422, "not_an_object", "body"),
    ("text/plain", "POST", "/v1/sentiment", {"text": "good"}, {"content-type": "text/plain"}, 415,
     "unsupported_media_type", "content-type"),
    ("no content type", "POST", "/v1/sentiment", {"text": "good"}, {"content-type": ""}, 415,
     "unsupported_media_type", "content-type"),
    ("form encoded", "POST", "/v1/sentiment", b"text=good", {"content-type": "application/x-www-form-urlencoded"},
     415, "unsupported_media_type", "content-type"),
    ("latin-1 charset", "POST", "/v1/sentiment", {"text": "good"},
     {"content-type": "application/json; charset=latin-1"}, 415, "unsupported_media_type", "content-type"),
    ("unknown route", "POST", "/v1/translate", {"text": "good"}, JSON, 404, "not_found", "path"),
    ("unknown GET route", "GET", "/v2/health", None, {}, 404, "not_found", "path"),
    ("docs are off (CDN)", "GET", "/docs", None, {}, 404, "not_found", "path"),
    ("GET on a POST route", "GET", "/v1/sentiment", None, {}, 405, "method_not_allowed", "method"),
    ("POST on health", "POST", "/v1/health", {}, JSON, 405, "method_not_allowed", "method"),
    ("DELETE", "DELETE", "/v1/search", None, {}, 405, "method_not_allowed", "method"),
    ("similarity: b missing", "POST", "/v1/similarity", {"a": "good"}, JSON, 422, "missing_field", "b"),
    ("similarity: a is a number", "POST", "/v1/similarity", {"a": 1, "b": "good"}, JSON, 422, "wrong_type", "a"),
    ("similarity: b empty", "POST", "/v1/similarity", {"a": "good", "b": ""}, JSON, 422, "text_empty", "b"),
    ("similarity: b too long", "POST", "/v1/similarity", {"a": "x", "b": "y" * 1001}, JSON, 422, "text_too_long",
     "b"),
    ("search: k = -1", "POST", "/v1/search", {"text": "food", "k": -1}, JSON, 422, "out_of_range", "k"),
    ("search: k = 0", "POST", "/v1/search", {"text": "food", "k": 0}, JSON, 422, "out_of_range", "k"),
    ("search: k = 10**9", "POST", "/v1/search", {"text": "food", "k": 10**9}, JSON, 422, "out_of_range", "k"),
    ("search: k = 10**30", "POST", "/v1/search", {"text": "food", "k": 10**30}, JSON, 422, "out_of_range", "k"),
    ("search: k corpus + 1", "POST", "/v1/search", {"text": "food", "k": len(SEARCH_CORPUS) + 1}, JSON, 422,
     "out_of_range", "k"),
    ("search: k as string", "POST", "/v1/search", {"text": "food", "k": "3"}, JSON, 422, "wrong_type", "k"),
    ("search: k as float", "POST", "/v1/search", {"text": "food", "k": 2.0}, JSON, 422, "wrong_type", "k"),
    ("search: k as bool", "POST", "/v1/search", {"text": "food", "k": True}, JSON, 422, "wrong_type", "k"),
    ("search: k null", "POST", "/v1/search", {"text": "food", "k": None}, JSON, 422, "wrong_type", "k"),
    ("summarize: k = 11", "POST", "/v1/summarize", {"text": "A b c. D e f.", "k": 11}, JSON, 422,
     "out_of_range", "k"),
    ("summarize: empty", "POST", "/v1/summarize", {"text": "   "}, JSON, 422, "text_empty", "text"),
    ("summarize: too long", "POST", "/v1/summarize", {"text": "Words. " * 3000}, JSON, 422, "text_too_long",
     "text"),
]


def check_envelope(r, status, code, field):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert list(body) == ["error"]
    assert list(body["error"]) == ["code", "field", "message_en", "message_zh"]
    assert body["error"]["code"] == code, body
    assert body["error"]["field"] == field, body
    assert body["error"]["message_en"] and body["error"]["message_zh"]
    assert body["error"]["message_en"] != body["error"]["message_zh"]      # a translation, not a copy
    return body["error"]


def test_at_least_thirty_malformed_requests():
    assert len(CASES) >= 30


@pytest.mark.parametrize("name, method, path, body, headers, status, code, field", CASES, ids=[c[0] for c in CASES])
def test_bad_request_gets_its_envelope(client, name, method, path, body, headers, status, code, field):
    content = None if (method in ("GET", "DELETE") and body is None) else raw(body)
    r = client.request(method, path, content=content, headers=headers)
    check_envelope(r, status, code, field)


def test_messages_say_what_was_expected(client):
    e = check_envelope(client.post("/v1/search", json={"text": "food", "k": 10**9}), 422, "out_of_range", "k")
    assert e["message_en"] == f"'k' must be between 1 and {len(SEARCH_CORPUS)}, got {10**9}"
    e = check_envelope(client.post("/v1/sentiment", json={"text": "好" * 1001}), 422, "text_too_long", "text")
    assert "1001" in e["message_en"] and "1000" in e["message_en"] and "1001" in e["message_zh"]
    e = check_envelope(client.post("/v1/sentiment", json={"text": 42}), 422, "wrong_type", "text")
    assert e["message_en"] == "'text' must be a JSON string, got int"


def test_emoji_only_is_accepted_with_the_models_answer(client):
    """Documented choice (course_lib/service/limits.py): printable text is accepted; the classifier
    sees only <unk> tokens and answers what predict() answers."""
    r = client.post("/v1/sentiment", json={"text": "😀🎉👍"})
    assert r.status_code == 200, r.text
    direct = predict("😀🎉👍", **load_classifier("ch08-sentiment"))
    assert r.json()["label"] == direct["label"]
    assert r.json()["confidence"] == pytest.approx(direct["confidence"], abs=1e-12)


def test_time_budget_gives_503_in_the_envelope(served):
    with TestClient(create_app(served=served, limits=Limits(time_budget_s=1e-6))) as c:
        check_envelope(c.post("/v1/sentiment", json={"text": OK_TEXT}), 503, "time_budget_exceeded", "body")
        check_envelope(c.post("/v1/summarize", json={"text": "One two three. Four five six."}), 503,
                       "time_budget_exceeded", "body")
        assert c.get("/v1/health").status_code == 200          # the budget bounds model work only


def test_limits_come_from_one_place(served):
    small = Limits(max_body_bytes=100, max_text_chars=5)
    with TestClient(create_app(served=served, limits=small)) as c:
        check_envelope(c.post("/v1/sentiment", json={"text": "123456"}), 422, "text_too_long", "text")
        check_envelope(c.post("/v1/sentiment", json={"text": "1" * 200}), 413, "body_too_large", "body")
        assert c.post("/v1/sentiment", json={"text": "很好"}).status_code == 200
        assert c.get("/v1/health").json()["limits"]["max_text_chars"] == 5


@pytest.mark.parametrize("bad", [{"max_body_bytes": 0}, {"time_budget_s": -1}, {"max_text_chars": True},
                                 {"max_document_chars": "big"}])
def test_limits_refuse_nonsense(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        Limits(**bad)


def test_limits_from_env():
    assert Limits.from_env({"COURSE_SERVICE_BUDGET_S": "0.5"}).time_budget_s == 0.5
    with pytest.raises(ValueError, match="COURSE_SERVICE_MAX_BODY_BYTES"):
        Limits.from_env({"COURSE_SERVICE_MAX_BODY_BYTES": "lots"})


def test_public_functions_name_their_bad_argument():
    from course_lib.service.loadtest import review_texts, run_load
    from course_lib.service.models import split_sentences
    from course_lib.service.server import running_server
    with pytest.raises(ValueError, match="precision"):
        load_models("float16")
    with pytest.raises(ValueError, match="threads"):
        load_models("float64", threads=0)
    with pytest.raises(ValueError, match="workers"):
        with running_server(workers=0):
            pass
    with pytest.raises(ValueError, match="concurrency"):
        run_load("http://127.0.0.1:9", [{"text": "a"}], 10, 0)
    with pytest.raises(ValueError, match="requests"):
        run_load("http://127.0.0.1:9", [{"text": "a"}], True, 1)
    with pytest.raises(ValueError, match="bodies"):
        run_load("http://127.0.0.1:9", {"text": "a"}, 10, 1)
    with pytest.raises(ValueError, match="n must be"):
        review_texts(0)
    with pytest.raises(TypeError, match="text must be a str"):
        split_sentences(["a"])


def test_split_sentences_english_and_chinese():
    from course_lib.service.models import split_sentences
    assert split_sentences("One. Two! Three? Four; five") == ["One.", "Two!", "Three?", "Four;", "five"]
    assert split_sentences("好。真的吗？是的！") == ["好。", "真的吗？", "是的！"]
    assert split_sentences("Version 3.5 works.  Next") == ["Version 3.5 works.", "Next"]


def test_connection_refused_counts_as_errors_not_a_crash():
    from course_lib.service.loadtest import run_load
    from course_lib.service.server import free_port
    r = run_load(f"http://127.0.0.1:{free_port()}", [{"text": "a"}], 4, 2, timeout_s=5)
    assert r["errors"] == 4 and r["requests"] == 4
