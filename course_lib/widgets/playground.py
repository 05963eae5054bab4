"""``qkv_playground``: edit one query vector and watch attention respond (chapter 2).

The reader changes the components of ``q`` (a number box and a slider each);
the scores ``q·k_i/√d_k``, the softmax weights and the context vector
``Σ w_i v_i`` are recomputed in the browser (plain JavaScript, stable
softmax). The first numbers are computed in Python by ``course_lib.scratch``;
they are printed in the text form (what nbval compares) and written into the
HTML, and the JavaScript reproduces them to the digits shown.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import as_real_array, check_finite, shape_str
from ..scratch.attention import attention_scores, scaled_dot_product_attention
from ._html import Widget, check_digits, esc, show

__all__ = ["qkv_playground", "QKVPlayground", "playground_numbers"]


class QKVPlayground(Widget):
    """The object :func:`qkv_playground` returns (display it, or print it)."""

    kind = "playground"


def playground_numbers(q, K, V) -> dict:
    """Scores, weights and context for one query, by ``course_lib.scratch``.

    Args:
        q: ``(d_k,)`` query; K: ``(L_k, d_k)`` keys; V: ``(L_k, d_v)`` values.

    Returns:
        ``{"scores": (L_k,), "weights": (L_k,), "context": (d_v,)}`` arrays.
    """
    Q = np.asarray(q, dtype=np.float64)[None, :]
    scores = attention_scores(Q, K)[0]
    context, weights = scaled_dot_product_attention(Q, K, V)
    return {"scores": scores, "weights": weights[0], "context": context[0]}


def _vec(x, d: int) -> str:
    return "[" + ", ".join(show(v, d) for v in x) + "]"


def _shortest(x: float) -> str:
    return np.format_float_positional(float(x), trim="-")


def qkv_playground(Q_init, K, V, *, digits: int = 3, key_names=None) -> QKVPlayground:
    """A query you can edit, its scores, softmax weights and context vector, live.

    Args:
        Q_init: the starting query, ``(d_k,)`` or ``(1, d_k)``.
        K: keys, ``(L_k, d_k)``.
        V: values, ``(L_k, d_v)``.
        digits: decimals shown (0-8).
        key_names: optional labels of the keys (default ``k1``, ``k2``, …).

    Returns:
        A :class:`QKVPlayground`: Jupyter and the book show the interactive
        HTML; its text form prints the starting scores, weights and context,
        computed by ``course_lib.scratch``.

    Raises:
        TypeError, ValueError: with a message naming the argument at fault.

    Chapter 2 computes one such query by hand.
    """
    digits = check_digits(digits)
    q = as_real_array(Q_init, "Q_init").astype(np.float64)
    if q.ndim == 2 and q.shape[0] == 1:
        q = q[0]
    if q.ndim != 1 or q.shape[0] < 1:
        raise ValueError(f"Q_init must be one query, shape (d_k,) or (1, d_k); got {shape_str(q.shape)}")
    check_finite(q, "Q_init")
    d_k = q.shape[0]
    K = as_real_array(K, "K").astype(np.float64)
    if K.ndim != 2 or K.shape[1] != d_k or K.shape[0] < 1:
        raise ValueError(f"K must have shape (L_k, d_k) with d_k = {d_k} to match Q_init; "
                         f"got {shape_str(K.shape)}")
    check_finite(K, "K")
    V = as_real_array(V, "V").astype(np.float64)
    if V.ndim != 2 or V.shape[0] != K.shape[0] or V.shape[1] < 1:
        raise ValueError(f"V must have shape (L_k, d_v) with L_k = {K.shape[0]} rows like K; "
                         f"got {shape_str(V.shape)}")
    check_finite(V, "V")
    L_k, d_v = V.shape
    if key_names is None:
        names = [f"k{i + 1}" for i in range(L_k)]
    elif isinstance(key_names, str) or not isinstance(key_names, (list, tuple)) or len(key_names) != L_k:
        raise ValueError(f"key_names must be a list of {L_k} labels, one per row of K; got {key_names!r:.60}")
    else:
        names = [str(n) for n in key_names]

    nums = playground_numbers(q, K, V)
    payload = {"q": q.tolist(), "K": K.tolist(), "V": V.tolist(), "digits": digits, "keys": names}
    text = _text(q, K, V, nums, names, digits)
    return QKVPlayground(payload, _body(q, K, V, nums, names, digits), ["playground.js"],
                         "courseQKVPlayground", text)


def _text(q, K, V, nums, names, d) -> str:
    d_k = q.shape[0]
    lines = [f"Q/K/V playground · Q/K/V 演练场: d_k = {d_k}, scores divided by "
             f"√d_k = {show(math.sqrt(d_k), d)} · 分数除以 √d_k",
             f"q = {_vec(q, d)}",
             "key · 键  k_i  v_i  score · 分数  weight · 权重"]
    for i, n in enumerate(names):
        lines.append(f"{n}  {_vec(K[i], d)}  {_vec(V[i], d)}  {show(nums['scores'][i], d)}  "
                     f"{show(nums['weights'][i], d)}")
    lines.append(f"context · 上下文向量 = {_vec(nums['context'], d)}")
    return "\n".join(lines)


def _body(q, K, V, nums, names, d) -> str:
    d_k, (L_k, d_v) = q.shape[0], V.shape
    lim = float(max(3.0, math.ceil(np.abs(q).max() * 2)))
    boxes = "".join(
        f'<label>q<sub>{c + 1}</sub>'
        f'<input type="range" data-q="{c}" min="{-lim:g}" max="{lim:g}" step="0.1" value="{_shortest(v)}" '
        f'aria-label="q{c + 1} slider">'
        f'<input type="number" data-q="{c}" step="any" value="{_shortest(v)}" aria-label="q{c + 1}"></label>'
        for c, v in enumerate(q))
    rows = "".join(
        f"<tr><td>{esc(n)}</td><td>{_vec(K[i], d)}</td><td>{_vec(V[i], d)}</td>"
        f'<td data-cell="score-{i}">{show(nums["scores"][i], d)}</td>'
        f'<td data-cell="weight-{i}">{show(nums["weights"][i], d)}</td>'
        f'<td><div class="cw-barbox"><div class="cw-bar" data-cell="bar-{i}" '
        f'style="width:{100 * nums["weights"][i]:.1f}%"></div></div></td></tr>'
        for i, n in enumerate(names))
    ctx = ", ".join(f'<span data-cell="context-{c}">{show(v, d)}</span>'
                    for c, v in enumerate(nums["context"]))
    return (f'<div class="cw-title">Q/K/V playground · Q/K/V 演练场 '
            f'<span class="cw-dim">(d_k = {d_k}, √d_k = {show(math.sqrt(d_k), d)})</span></div>'
            f'<div class="cw-dim">Edit the query q; scores q·k<sub>i</sub>/√d<sub>k</sub>, softmax '
            f'weights and the context Σ w<sub>i</sub>v<sub>i</sub> follow · 修改查询向量 q，'
            f'分数、softmax 权重与上下文向量随之更新</div>'
            f'<div class="cw-qin">{boxes}</div>'
            '<table class="cw-table"><thead><tr><th>key · 键</th><th>k<sub>i</sub></th>'
            '<th>v<sub>i</sub></th><th>score · 分数</th><th>weight · 权重</th><th></th></tr></thead>'
            f'<tbody>{rows}</tbody></table>'
            f'<div class="cw-context">context · 上下文向量 = [{ctx}]</div>')
