"""The service's try-it page (``GET /``) in Chromium, against uvicorn on 127.0.0.1 (chapter 10, ``ch10-service``).

Types a Chinese and an English review, reads the labels the page shows and
compares them with course_lib called directly; runs the other three forms;
asserts no console error and no request to a host other than 127.0.0.1
(the page inlines everything). Skips without Chromium, except under CI.
"""

import copy

import pytest

from conftest import chromium, need_chromium, page_opener
from course_lib.labs.serving import load_classifier, predict
from course_lib.models.pretrained import cosine_similarity_matrix, load_minilm, sentence_embeddings

pytestmark = pytest.mark.browser

need_chromium("service page browser test")
import fastapi  # noqa: E402,F401  pinned in requirements.txt: a broken install fails, never skips
from course_lib.service.models import SEARCH_CORPUS  # noqa: E402
from course_lib.service.server import running_server  # noqa: E402

REVIEWS = ["这家酒店很干净，服务也很热情，下次还来。", "The delivery was late and the box was broken."]


def run_form(page, name):
    page.click(f"#{name}-go")
    page.wait_for_selector(f"#{name}-answer[data-done='1']")
    answer = page.inner_text(f"#{name}-answer")
    page.eval_on_selector(f"#{name}-answer", "e => delete e.dataset.done")
    return answer


def test_page_classifies_chinese_and_english_like_course_lib():
    served = load_classifier("ch08-sentiment")
    bert, tok = load_minilm()
    bert64 = copy.deepcopy(bert).double()
    with running_server(precision="float64") as server, chromium() as browser, \
            page_opener(browser, server.url) as open_page:
        page = open_page("")
        assert "文本处理服务" in page.title() and "Text-processing service" in page.title()
        for text in REVIEWS:
            page.fill("#sentiment-text", text)
            want = predict(text, **served)
            assert run_form(page, "sentiment") == f"{want['label']} ({want['confidence']:.3f})"
        a, b = page.input_value("#similarity-a"), page.input_value("#similarity-b")
        cos = float(cosine_similarity_matrix(sentence_embeddings([a, b], bert64, tok))[0, 1])
        assert run_form(page, "similarity") == f"cosine · 余弦 = {cos:.4f}"
        q = page.input_value("#search-text")
        S = cosine_similarity_matrix(sentence_embeddings(list(SEARCH_CORPUS) + [q], bert64, tok))[-1, :-1]
        top = sorted(range(len(SEARCH_CORPUS)), key=lambda j: -float(S[j]))[:3]
        assert run_form(page, "search") == " | ".join(f"{SEARCH_CORPUS[j]} ({float(S[j]):.3f})" for j in top)
        page.fill("#summarize-text", "Attention mixes tokens. The soup was cold. Heads attend in parallel.")
        page.fill("#summarize-k", "3")                    # three sentences, k = 3: the whole text, in order
        assert run_form(page, "summarize") == ("[1] Attention mixes tokens. [2] The soup was cold. "
                                              "[3] Heads attend in parallel.")
