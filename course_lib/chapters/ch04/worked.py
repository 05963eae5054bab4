"""Chapter 4's worked examples: the source documents' positional-encoding numbers, recomputed.

Each ``*_steps`` function returns a dict whose keys match the ``claims`` of
its data in ``source.py`` (``PE_TEST``, ``PE_DEMO``, ``PE_REF10``,
``PE_D4``), so ``course_lib.chapters.compare`` can set every printed number
beside the computed one. ``course_lib.chapters.EXAMPLES`` registers them.

Exact values come from :func:`course_lib.scratch.sinusoidal_positional_encoding`
(``float64``); the source's "model" columns were printed from a ``float32``
PyTorch module and are compared with :func:`~course_lib.analysis.positional.sinusoidal_float32`
(every ``float32`` step correctly rounded), except test 6 (position 5,
``d_model = 512``), whose model and error columns are PyTorch's own ``float32``
recipe, :func:`torch_float32_table`: its ``sin`` is not correctly rounded,
and the source printed its last digit.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import source
from ..._validate import check_positive_int
from ...display import fmt
from ...analysis.positional import cosine_similarity, euclidean_distance, sinusoidal_float32
from ...scratch.positional import sinusoidal_positional_encoding

__all__ = ["torch_float32_table", "pe_test_steps", "pe_demo_steps", "pe_ref10_steps", "pe_d4_steps", "pe_test_dims", "matching_d_models",
           "ref10_d_model", "EXAMPLES"]


#: The base of the sinusoidal frequencies, ``omega_i = BASE^(-2i/d_model)``, in the source's recipe.
BASE = 10000.0


def torch_float32_table(max_len: int, d_model: int) -> np.ndarray:
    """The table of the source's ``positional_encoding_test.py``, computed by PyTorch in ``float32``.

    The usual recipe, step by step in ``torch.float32``::

        position = arange(max_len).unsqueeze(1)
        div_term = exp(arange(0, d_model, 2) * (-log(10000) / d_model))
        pe[:, 0::2] = sin(position * div_term); pe[:, 1::2] = cos(position * div_term)

    PyTorch's ``float32`` ``sin``/``cos`` are not always correctly rounded, so
    a few entries sit one ``float32`` step from
    :func:`~course_lib.analysis.positional.sinusoidal_float32`; the
    ``default``, ``avx2`` and ``avx512`` CPU kernels give the same bits
    (``tests/chapters/test_errata.py`` checks the first two).

    Returns:
        ``(max_len, d_model)`` ``float32`` array. Chapter 4.
    """
    import torch
    max_len = check_positive_int(max_len, "max_len")
    d_model = check_positive_int(d_model, "d_model", minimum=2)
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin/cos pairs), got {d_model}")
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)          # (max_len, 1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(BASE) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)                                  # (max_len, d_model/2)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.numpy()


def pe_test_steps(d_model: int = 512) -> dict:
    """``positional_encoding_test.py``: tests 1, 2, 3, 5, 6 and 7 of the source log.

    Args:
        d_model: width of the table (the log's: 512). Test 7 uses its own
            list of widths, ``source.PE_TEST["d_models"]``.

    Returns:
        dict with ``length_changed ()`` (bool), ``cosine5 (5, 5)``,
        ``dims (10, 6)`` (positions 0–9, dims 0, 1, 2, 3, 10, 11),
        ``pair_euclid (7,)``, ``pair_cosine (7,)``, ``pos5_manual (8,)``
        (exact), ``pos5_model (8,)`` (PyTorch ``float32``, :func:`torch_float32_table`),
        ``pos5_error (8,)``, ``pos5_ideal (8,)`` (correctly rounded ``float32``) and
        ``d_model_cmp (4, 4)`` (position 10, dims 0–3). Chapter 4.
    """
    d_model = check_positive_int(d_model, "d_model", minimum=12)
    data = source.PE_TEST
    pe = sinusoidal_positional_encoding(data["max_len"], d_model)
    L, B, _ = data["input_shape"]
    x = np.zeros((B, L, d_model))                        # (B, L, d_model), batch-first
    out = x + pe[:L]
    a, b = np.array(data["pairs"]).T
    manual = pe[5, :8]
    model = torch_float32_table(data["max_len"], d_model)[5, :8].astype(np.float64)
    ideal = sinusoidal_float32(data["max_len"], d_model)[5, :8].astype(np.float64)
    return {
        "length_changed": out.shape[1] != x.shape[1],
        "cosine5": cosine_similarity(pe[:5]),
        "dims": pe_test_dims(d_model)["dims"],
        "pair_euclid": np.linalg.norm(pe[a] - pe[b], axis=1),
        "pair_cosine": np.diag(cosine_similarity(pe[a], pe[b])),
        "pos5_manual": manual,
        "pos5_model": model,
        "pos5_error": np.abs(manual - model),
        "pos5_ideal": ideal,
        "d_model_cmp": np.array([sinusoidal_positional_encoding(11, d)[10, :4]
                                 for d in data["d_models"]]),
    }


def pe_test_dims(d_model: int) -> dict:
    """Test 3 alone: ``{"dims": (10, 6)}``, positions 0–9 at dims 0, 1, 2, 3, 10, 11.

    Cheap enough to try many widths with :func:`matching_d_models`. Chapter 4.
    """
    d_model = check_positive_int(d_model, "d_model", minimum=12)
    return {"dims": sinusoidal_positional_encoding(10, d_model)[:, source.PE_TEST["dims"]]}


def pe_demo_steps() -> dict:
    """``simple_pe_demo.py`` (d_model = 8, max_len = 10).

    Returns:
        dict with ``table (10, 8)`` (exact), ``pos3_manual (8,)`` (exact),
        ``pos3_model (8,)`` (float32 recipe) and ``word_sums (3, 8)``: the
        source's ``float32`` word embedding plus the ``float32`` position
        vectors of positions 0, 2 and 5, added in ``float32``. Chapter 4.
    """
    d = source.PE_DEMO
    pe = sinusoidal_positional_encoding(d["max_len"], d["d_model"])
    pe32 = sinusoidal_float32(d["max_len"], d["d_model"])
    return {"table": pe, "pos3_manual": pe[3], "pos3_model": pe32[3].astype(np.float64),
            "word_sums": (d["word"] + pe32[d["word_positions"]]).astype(np.float64)}


def pe_ref10_steps(d_model: int | None = None, max_len: int = 20) -> dict:
    """Positions 0–19 against position 10: Euclidean distance and cosine.

    Args:
        d_model: width (default: :func:`ref10_d_model`, the width that
            reproduces the source's table).
        max_len: rows of the table (at least 20; the values do not depend on it).

    Returns:
        dict with ``euclid (19,)`` and ``cosine (19,)``. Chapter 4.
    """
    d_model = ref10_d_model() if d_model is None else check_positive_int(d_model, "d_model")
    max_len = check_positive_int(max_len, "max_len", minimum=20)
    d = source.PE_REF10
    pe = sinusoidal_positional_encoding(max_len, d_model)
    ref, others = pe[[d["reference"]]], pe[d["positions"]]
    return {"euclid": euclidean_distance(others, ref)[:, 0],
            "cosine": cosine_similarity(others, ref)[:, 0]}


def pe_d4_steps() -> dict:
    """The d_model = 4 example: angles and values for positions 0, 1 and 2.

    Returns:
        dict with ``angles (2, 4)`` and ``values (2, 4)`` for positions 0
        and 1 (what the source works out), and ``angles3``, ``values3``
        ``(3, 4)`` for positions 0, 1, 2. Chapter 4.
    """
    d_model = source.PE_D4["d_model"]
    two_i = np.arange(d_model) // 2 * 2
    angles = np.arange(3)[:, None] / 10000.0 ** (two_i / d_model)
    values = sinusoidal_positional_encoding(3, d_model)
    return {"angles": angles[:2], "values": values[:2], "angles3": angles, "values3": values}


def _all_match(claim, values) -> bool:
    values = np.atleast_1d(np.asarray(values, dtype=float)).ravel()
    return values.size == len(claim.printed) and all(
        p == fmt(v, dec) for p, dec, v in zip(claim.printed, claim.decimals(), values))


def matching_d_models(steps_fn, claims: dict, candidates) -> list[int]:
    """The widths ``d_model`` for which ``steps_fn(d_model)`` reproduces every claim.

    Args:
        steps_fn: e.g. :func:`pe_ref10_steps`, called as ``steps_fn(d_model)``.
        claims: name -> ``source.Claim``; a width matches when every
            printed value of every claim equals the computed one rounded
            the same way.
        candidates: the widths to try.

    Returns:
        The matching widths, in the order tried. Chapter 4.
    """
    found = []
    for d in candidates:
        steps = steps_fn(int(d))
        if all(_all_match(c, steps[name]) for name, c in claims.items()):
            found.append(int(d))
    return found


@lru_cache(maxsize=None)
def ref10_d_model() -> int:
    """The one even ``d_model`` in 2–1024 that reproduces the reference-10 table.

    Raises:
        RuntimeError: if none or several widths match.
    """
    found = matching_d_models(pe_ref10_steps, source.PE_REF10["claims"], range(2, 1025, 2))
    if len(found) != 1:
        raise RuntimeError(f"expected exactly one matching d_model, found {found}")
    return found[0]


#: name -> (steps function, source data), merged into ``course_lib.chapters.EXAMPLES``.
EXAMPLES = {
    "pe_test": (pe_test_steps, source.PE_TEST),
    "pe_demo": (pe_demo_steps, source.PE_DEMO),
    "pe_ref10": (pe_ref10_steps, source.PE_REF10),
    "pe_d4": (pe_d4_steps, source.PE_D4),
}
