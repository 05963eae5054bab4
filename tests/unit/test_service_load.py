"""The capstone service over a real socket: uvicorn in a subprocess (chapter 10, ``ch10-service``).

- correctness across the boundary: every endpoint's JSON numbers equal
  course_lib called directly (float64 on both sides);
- a short loopback load test: 200 requests at concurrency 8, 0 errors,
  every answer equal to the direct call, bounded memory growth;
- a few malformed requests that FastAPI's TestClient could hide (raw bytes,
  a 10 MB upload, deep nesting), then the server still answers.
"""

import copy
import hashlib

import pytest

import fastapi  # noqa: E402,F401  pinned in requirements.txt: a broken install fails, never skips
import httpx  # noqa: E402

from course_lib.labs.serving import load_classifier, predict  # noqa: E402
from course_lib.models.pretrained import (cosine_similarity_matrix, load_minilm, minilm_dir,  # noqa: E402
                                          sentence_embeddings)
from course_lib.repro import checkpoint_dir  # noqa: E402
from course_lib.service.loadtest import review_texts, run_load  # noqa: E402
from course_lib.service.models import SEARCH_CORPUS  # noqa: E402
from course_lib.service.server import running_server  # noqa: E402

RSS_GROWTH_BOUND_KIB = 32 * 1024
"""200 requests after a warm-up must not grow the server's resident memory by 32 MiB or more."""
TOL = 1e-9          # float64 on both sides; only the order of sums may differ


@pytest.fixture(scope="module")
def server():
    with running_server(precision="float64") as s:
        yield s


@pytest.fixture(scope="module")
def classifier():
    return load_classifier("ch08-sentiment")            # float64


@pytest.fixture(scope="module")
def minilm64():
    bert, tok = load_minilm()
    return copy.deepcopy(bert).double(), tok


def post(server, path, body):
    r = httpx.post(server.url + path, json=body, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_health_names_the_models_and_their_checksums(server):
    h = httpx.get(server.url + "/v1/health").json()
    sha_ckpt = hashlib.sha256((checkpoint_dir() / "ch08-sentiment.safetensors").read_bytes()).hexdigest()
    sha_minilm = hashlib.sha256((minilm_dir() / "model.safetensors").read_bytes()).hexdigest()
    assert [(m["name"], m["sha256"]) for m in h["models"]] == [("ch08-sentiment", sha_ckpt),
                                                             ("all-MiniLM-L6-v2", sha_minilm)]
    assert h["precision"] == "float64" and h["versions"]["fastapi"] == "0.163.2"


@pytest.mark.parametrize("text", ["质量很好，物流也快，非常满意！", "快递太慢了，包装也坏了。", "The hotel was clean."])
def test_sentiment_equals_predict(server, classifier, text):
    got, want = post(server, "/v1/sentiment", {"text": text}), predict(text, **classifier)
    assert got["label"] == want["label"]
    assert got["confidence"] == pytest.approx(want["confidence"], abs=TOL)
    assert got["probabilities"] == pytest.approx(want["probabilities"], abs=TOL)


def test_similarity_equals_minilm_cosine(server, minilm64):
    a, b = "How long does the phone battery last?", "The battery of this phone lasts two days."
    want = float(cosine_similarity_matrix(sentence_embeddings([a, b], *minilm64))[0, 1])
    assert post(server, "/v1/similarity", {"a": a, "b": b})["cosine"] == pytest.approx(want, abs=TOL)


def test_search_equals_nearest_neighbours(server, minilm64):
    q = "Where can I eat good food?"
    S = cosine_similarity_matrix(sentence_embeddings(list(SEARCH_CORPUS) + [q], *minilm64))[-1, :-1]
    order = sorted(range(len(SEARCH_CORPUS)), key=lambda j: -float(S[j]))[:4]
    got = post(server, "/v1/search", {"text": q, "k": 4})["results"]
    assert [r["index"] for r in got] == order
    assert [r["sentence"] for r in got] == [SEARCH_CORPUS[j] for j in order]
    assert [r["cosine"] for r in got] == pytest.approx([float(S[j]) for j in order], abs=TOL)


def test_summarize_equals_centroid_scoring(server, minilm64):
    sentences = ["Attention lets every token look at every other token.", "The pizza was cold!",
                 "Each head learns its own projections of the queries and keys?",
                 "A Transformer stacks attention and feed-forward layers;", "注意力让每个词元都能看到其他词元。",
                 "Multi-head attention runs several attentions in parallel."]
    E = sentence_embeddings(sentences, *minilm64)
    c = E.mean(dim=0)
    scores = [float(s) for s in E @ c / c.norm()]
    keep = sorted(sorted(range(len(sentences)), key=lambda i: -scores[i])[:3])
    got = post(server, "/v1/summarize", {"text": " ".join(sentences), "k": 3})
    assert got["n_sentences"] == len(sentences)
    assert [s["index"] for s in got["summary"]] == keep
    assert [s["sentence"] for s in got["summary"]] == [sentences[i] for i in keep]
    assert [s["score"] for s in got["summary"]] == pytest.approx([scores[i] for i in keep], abs=TOL)


def test_load_200_requests_at_concurrency_8(server, classifier):
    texts = review_texts(60)
    want = [predict(t, **classifier) for t in texts]

    def expected(j, answer):
        return (answer["label"] == want[j]["label"]
                and abs(answer["confidence"] - want[j]["confidence"]) < TOL)
    run_load(server.url, [{"text": t} for t in texts], 60, 8)                     # warm-up
    before = server.rss_kib()
    r = run_load(server.url, [{"text": t} for t in texts], 200, 8, expected=expected)
    growth = server.rss_kib() - before
    assert r["requests"] == 200 and r["errors"] == 0, r["first_errors"]
    assert r["p99_ms"] >= r["p95_ms"] >= r["p50_ms"] > 0
    assert growth < RSS_GROWTH_BOUND_KIB, f"RSS grew by {growth} KiB"


def test_a_wrong_answer_counts_as_an_error(server):
    r = run_load(server.url, [{"text": "很好"}], 5, 2, expected=lambda j, a: a["label"] == "no such label")
    assert r["errors"] == 5


def envelope(r, status, code, field):
    assert r.status_code == status, r.text
    assert r.json() == {"error": {**r.json()["error"], "code": code, "field": field}}
    assert set(r.json()["error"]) == {"code", "field", "message_en", "message_zh"}


@pytest.mark.parametrize("body, headers, status, code, field", [
    (b'{"text": "\xff\xfe"}', {"content-type": "application/json"}, 400, "invalid_utf8", "body"),
    (b'{"text": "' + b"a" * 10_000_000 + b'"}', {"content-type": "application/json"}, 413, "body_too_large", "body"),
    (b"[" * 200_000, {"content-type": "application/json"}, 400, "json_too_deep", "body"),
    ('{"text": "%s"}' % ("好" * 100_000), {"content-type": "application/json"}, 422, "text_too_long", "text"),
    (b'{"text": "good"}', {"content-type": "text/plain"}, 415, "unsupported_media_type", "content-type"),
    (b'{"text": "a\\u0000b"}', {"content-type": "application/json"}, 422, "control_character", "text"),
], ids=["invalid-utf8", "10MB", "deep-nesting", "100k-chars", "text-plain", "nul"])
def test_bad_bytes_over_a_real_socket(server, body, headers, status, code, field):
    r = httpx.post(server.url + "/v1/sentiment", content=body, headers=headers, timeout=30)
    envelope(r, status, code, field)
    assert post(server, "/v1/sentiment", {"text": "很好"})["label"]             # still serving


def test_chunked_upload_over_the_limit_is_cut_off(server):
    def chunks():                                  # no Content-Length: the guard counts the bytes
        yield b'{"text": "'
        for _ in range(40):
            yield b"a" * 100_000
        yield b'"}'
    r = httpx.post(server.url + "/v1/sentiment", content=chunks(), headers={"content-type": "application/json"},
                   timeout=30)
    envelope(r, 413, "body_too_large", "body")


def test_unknown_route_over_a_real_socket(server):
    envelope(httpx.get(server.url + "/v1/nothing"), 404, "not_found", "path")
    envelope(httpx.get(server.url + "/docs"), 404, "not_found", "path")
    assert httpx.get(server.url + "/openapi.json").json()["paths"].keys() >= {"/v1/sentiment", "/v1/health"}
