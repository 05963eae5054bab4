"""One visit of each page of the built book, shared by the browser test modules.

Loading a page in Chromium (its scripts, MathJax, mermaid) is most of what a browser test spends
on it, and three modules read every notebook page over http: ``test_browser`` (is it rendered,
offline?), ``test_language_switch_outputs`` (does a language hide a number?) and
``test_visible_text`` (does the page show what the notebook printed?). Each registers what it reads
as a *step* (:func:`visit_step`); the session fixture :func:`page_visits` opens each page once, in a
fresh browser context, runs every registered step on it in the order of their ranks, and keeps
what each returned (or the exception it raised) for the tests that ask.

The ranks put the steps that only read before those that change the page: rendering is read first
(rank 0), then the language switch is worked (rank 1: it clicks the switch, ending on both
languages), and last the outputs' text is read after opening every dropdown and rewriting the
Markdown (rank 2). A test module run alone registers only its own step.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable

import pytest

VISIT_TIMEOUT_MS = 30000
STEPS: dict[str, tuple[int, Callable]] = {}
"""name → (rank, ``step(page) -> result``), filled by :func:`visit_step` when a module is imported."""


def visit_step(name: str, rank: int):
    """Decorator: run ``step(page)`` on every page visit, after the steps of lower rank."""
    def register(step):
        STEPS[name] = (rank, step)
        return step
    return register


class Visit:
    """What one visit of a page saw: each step's result, the console errors, the foreign requests."""

    def __init__(self, url: str):
        self.url, self.results, self.errors, self.foreign = url, {}, [], []

    def step(self, name: str):
        """The result of step ``name``; the exception it raised (or the page's load raised) is raised."""
        if name not in self.results:
            raise KeyError(f"no step {name!r} ran on {self.url}: registered are {sorted(STEPS)}")
        result = self.results[name]
        if isinstance(result, BaseException):
            raise result
        return result


def visit(browser, url: str) -> Visit:
    """Open ``url`` in a fresh context of ``browser`` and run every registered step on it."""
    from conftest import watch

    seen = Visit(url)
    context = browser.new_context()
    context.set_default_timeout(VISIT_TIMEOUT_MS)
    try:
        page = context.new_page()
        watch(page, seen.errors, seen.foreign)
        try:
            page.goto(url, wait_until="load")
        except Exception as e:  # every step reports the failed load
            seen.results = dict.fromkeys(STEPS, e)
            return seen
        for name, (_, step) in sorted(STEPS.items(), key=lambda item: item[1][0]):
            try:
                seen.results[name] = step(page)
            except Exception as e:  # kept for the test that reads this step
                seen.results[name] = e
    finally:
        context.close()
    return seen


@pytest.fixture(scope="session")
def page_visits():
    """``visit(html, path) -> Visit``: page ``path`` (no suffix) of the book built at ``html``, served
    from 127.0.0.1, visited once a session. Each visit borrows the browser of the module that asks
    (conftest's ``chromium``: a module holds it while its tests run), so ask from inside one."""
    from conftest import chromium, serve

    cache: dict[tuple[str, str], Visit] = {}
    servers: dict[str, str] = {}
    with contextlib.ExitStack() as stack:

        def get(html: Path, path: str) -> Visit:
            key = (str(html), path)
            if key not in cache:
                if key[0] not in servers:
                    servers[key[0]] = stack.enter_context(serve(html))
                with chromium() as browser:
                    cache[key] = visit(browser, f"{servers[key[0]]}/{path}.html")
            return cache[key]

        yield get
