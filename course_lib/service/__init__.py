"""The capstone as an HTTP service (chapter 8, section ``ch08-service``).

Chapter 8's sentiment classifier (checkpoint ``ch08-sentiment``) and MiniLM
behind a FastAPI app served by uvicorn (``make api``)::

    limits.py    every bound on a request (body size, text length, k, time budget), one place
    errors.py    the one JSON error envelope {"error": {code, field, message_en, message_zh}}
    schemas.py   request shapes (strict types, no unknown fields) and the text checks
    models.py    the models, loaded once from stored weights, and the four tasks
    page.py      the bilingual try-it page at GET / (no external assets)
    app.py       the routes: create_app(), app
    server.py    start uvicorn in a subprocess on a free port, wait, stop; RSS of its processes
    loadtest.py  the loopback load test (make bench)

The app is imported lazily (``course_lib.service.app``) so that importing
this package does not need FastAPI.
"""

__all__ = ["limits", "errors", "schemas", "models", "page", "app", "server", "loadtest"]
