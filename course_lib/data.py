"""Where the course's data live, found from anywhere.

A notebook may run from ``book/`` (Jupyter, ``make sync``), from the
repository root (a script, VS Code, ``pytest --nbval``) or from an installed
copy of ``course_lib``. Every file the course reads is therefore located
through :func:`data_path`, never through a relative path such as
``../data/…``. The data and their provenance are listed in ``data/README.md``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "data_dir", "data_path", "checkpoint_dir"]

#: Environment variable that overrides where ``data/`` is.
DATA_ENV = "COURSE_DATA"


def data_dir() -> Path:
    """The course's ``data/`` folder.

    Looked up, in order: the environment variable ``COURSE_DATA``; the
    ``data/`` folder next to the ``course_lib`` package (a clone of the
    repository, whatever the working directory).

    Raises:
        FileNotFoundError: if neither exists, with both places named.
    """
    env = os.environ.get(DATA_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"{DATA_ENV} must name a folder, got {env!r}, which does not exist")
        return path
    path = Path(__file__).resolve().parent.parent / "data"
    if not path.is_dir():
        raise FileNotFoundError(f"the course's data/ folder was not found at {path}; "
                                f"set {DATA_ENV} to the folder that holds data/README.md")
    return path


def data_path(*parts: str, must_exist: bool = True) -> Path:
    """The path of a file under ``data/``, e.g. ``data_path("sentiment_bilingual.tsv")``.

    Args:
        parts: path components below ``data/`` (strings, no ``..``).
        must_exist: raise ``FileNotFoundError`` if the file is missing.
    """
    if not parts or not all(isinstance(p, str) and p for p in parts):
        raise TypeError("parts must be one or more non-empty strings, e.g. data_path('checkpoints', 'x.json')")
    if any(".." in Path(p).parts for p in parts):
        raise ValueError(f"parts must stay inside data/, got {'/'.join(parts)!r}")
    path = data_dir().joinpath(*parts)
    if must_exist and not path.exists():
        raise FileNotFoundError(f"{'/'.join(parts)!r} is not in {data_dir()} (see data/README.md)")
    return path


def checkpoint_dir() -> Path:
    """``data/checkpoints/``: the trained weights that ``make train`` writes."""
    return data_dir() / "checkpoints"
