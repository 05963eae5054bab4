"""Schema-driven fuzzing of the capstone service (chapter 8, ``ch08-service``).

Schemathesis reads the app's own OpenAPI schema (``/openapi.json``) and
generates requests for every operation: bodies the schema admits (each must
get a 200 that matches its declared shape) and bodies it does not (each must
get a declared 4xx in the error envelope). Requests go to the FastAPI app in
process (ASGI, no socket). Every response is checked by schemathesis's
built-in checks: no 5xx, a declared status code, a declared content type,
the body valid against its declared schema (the envelope for every refusal),
schema-valid data accepted, schema-invalid data refused, other methods 405.
After the run the service still answers: its health, and a known request
whose answer equals the one it gave before the run.

Reproducible: hypothesis is derandomized (the same cases on every run) and
keeps no example database (nothing is written into the repository).
``make test`` runs ``CASES_PER_MODE`` cases per operation and generation mode
(at least 1,000 requests in all); ``make fuzz`` sets ``COURSE_FUZZ_SCALE=10``
and prints the figures (requests, seconds, failures).
"""

import collections
import os
import re
import time
import unicodedata

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import schemathesis  # pinned in requirements.txt: a broken install fails, never skips
from schemathesis import GenerationMode
from fastapi.testclient import TestClient

from course_lib.service.app import create_app
from course_lib.service.errors import ServiceError
from course_lib.service.limits import Limits
from course_lib.service.models import load_models
from course_lib.service.schemas import TEXT_PATTERN, check_text

SCALE = int(os.environ.get("COURSE_FUZZ_SCALE", "1"))
CASES_PER_MODE = 130 * SCALE
"""Cases per operation and generation mode (positive, negative); health has only positive ones."""
MIN_REQUESTS = 1000 * SCALE
KNOWN = {"text": "质量很好，物流也快，非常满意！"}


@pytest.fixture(scope="module")
def served():
    return load_models("float64")


@pytest.fixture(scope="module")
def app(served):
    return create_app(served=served, limits=Limits())


def integral_float_free(case):
    """False for a body whose ``k`` is a float such as ``4.0``.

    JSON Schema counts ``4.0`` as an integer (a number with no fraction), and
    no keyword can tell it from ``4``; the service's request models are strict
    and refuse it (``wrong_type``, as ``"4"`` and ``true``; tests/unit/test_service_bad_input.py).
    So schema-valid cases drop it; schema-invalid ones keep every float.
    """
    return not (isinstance(case.body, dict) and isinstance(case.body.get("k"), float))


def fuzz_operation(operation, mode, counts):
    """Run ``CASES_PER_MODE`` generated cases of one operation; the failure (shrunk), or None."""
    strategy = operation.as_strategy(mode)
    if mode == GenerationMode.POSITIVE:
        strategy = strategy.filter(integral_float_free)

    @settings(max_examples=CASES_PER_MODE, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate, Phase.shrink], print_blob=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large])
    @given(case=strategy)
    def run(case):
        response = case.call()
        counts[operation.label, mode.value, response.status_code] += 1
        case.validate_response(response)
    try:
        run()
    except (Exception, ExceptionGroup) as e:   # schemathesis raises a group of the checks that failed
        return f"{operation.label} ({mode.value}): {e}"
    return None


def test_fuzz_every_operation_from_the_schema(app):
    with TestClient(app) as client:
        before = client.post("/v1/sentiment", json=KNOWN)
        assert before.status_code == 200, before.text
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert sorted(op.label for op in operations) == [
        "GET /v1/health", "POST /v1/search", "POST /v1/sentiment", "POST /v1/similarity", "POST /v1/summarize"]
    counts, failures, start = collections.Counter(), [], time.perf_counter()
    for op in operations:
        modes = [GenerationMode.POSITIVE] if op.method.upper() == "GET" else list(GenerationMode)
        failures += [f for f in (fuzz_operation(op, mode, counts) for mode in modes) if f]
    seconds = time.perf_counter() - start
    requests = sum(counts.values())
    by_status = collections.Counter()
    for (_, _, status), n in counts.items():
        by_status[status] += n
    print(f"\nfuzz: {requests} requests in {seconds:.1f} s ({requests / seconds:.0f}/s), "
          f"{len(failures)} failures; statuses {dict(sorted(by_status.items()))}")
    for (label, mode, status), n in sorted(counts.items()):
        print(f"  {label:22} {mode:8} {status}: {n}")
    assert not failures, "\n\n".join(failures)
    assert requests >= MIN_REQUESTS, (requests, MIN_REQUESTS)
    # every operation got both answers it can give: a 200 and (POST) a refusal
    for op in operations:
        statuses = {s for (label, _, s), n in counts.items() if label == op.label}
        assert 200 in statuses, (op.label, statuses)
        if op.method.upper() == "POST":
            assert statuses & {400, 413, 415, 422}, (op.label, statuses)
    # the server keeps answering, and answers the same
    with TestClient(app) as client:
        assert client.get("/v1/health").json()["status"] == "ok"
        after = client.post("/v1/sentiment", json=KNOWN)
        assert after.status_code == 200 and after.json() == before.json()


# The schema's pattern for a text and check_text must agree on every character: the fuzzing
# generates from the pattern, the route refuses with check_text. Surrogates aside: no pattern can
# name them (the validators' regex engines refuse the range); check_text refuses them (below).
SAMPLE = [chr(c) for c in [*range(0x3000), *range(0xD7F0, 0xD800), *range(0xE000, 0xE010)]] + [
    "\ufeff", "\uffff", "\U0001F600", "\U000E0001", "\U0010FFFF", "\u200b", "\u3000"]


def accepted(text):
    try:
        check_text(text, "text", 10)
    except ServiceError:
        return False
    return True


@pytest.mark.parametrize("template", ["{c}", "a{c}", "{c}a", "{c}\n"])
def test_text_pattern_agrees_with_check_text(template):
    pattern = re.compile(TEXT_PATTERN)
    disagree = [(hex(ord(c)), unicodedata.category(c)) for c in SAMPLE
                if bool(pattern.search(template.format(c=c))) != accepted(template.format(c=c))]
    assert not disagree, disagree[:20]


def test_text_pattern_refuses_what_the_rules_say():
    pattern = re.compile(TEXT_PATTERN)
    for ok in ["good", " 好 ", "a\tb\nc\r", "😀", "\u0301"]:
        assert pattern.search(ok), repr(ok)
    for bad in ["", " ", "\t\n\r", "\u3000\u2028", "a\x00", "\x7f", "ok\x85"]:
        assert not pattern.search(bad), repr(bad)


def test_lone_surrogate_is_refused_in_the_envelope(app):
    """Found by probing what the schema allowed: the JSON escape "\\ud800" decodes to a lone surrogate,
    which MiniLM's tokenizer cannot encode (500 before the fix)."""
    with TestClient(app) as client:
        for path, body in [("/v1/sentiment", b'{"text": "\\ud800"}'), ("/v1/similarity", b'{"a": "x", "b": "\\udfff"}'),
                           ("/v1/search", b'{"text": "a\\ud83d", "k": 1}'),
                           ("/v1/summarize", b'{"text": "One. Two \\ude00."}')]:
            r = client.post(path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 422, (path, r.text)
            assert r.json()["error"]["code"] == "lone_surrogate"
            assert r.json()["error"]["field"] == ("b" if path == "/v1/similarity" else "text")


def test_schema_carries_the_limits(served):
    small = Limits(max_text_chars=7, max_document_chars=50, max_summary_sentences=4)
    components = create_app(served=served, limits=small).openapi()["components"]["schemas"]
    assert components["SentimentRequest"]["properties"]["text"]["maxLength"] == 7
    assert components["SimilarityRequest"]["properties"]["b"]["maxLength"] == 7
    assert components["SummarizeRequest"]["properties"]["text"]["maxLength"] == 50
    assert components["SummarizeRequest"]["properties"]["k"]["maximum"] == 4
    assert components["SearchRequest"]["properties"]["k"]["maximum"] == 10      # the search corpus's size
