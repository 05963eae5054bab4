"""``attention_explorer``: hover a token, see where it attends (chapters 3 and 7).

The widget is one self-contained ``<div>``: its data (the weights, inlined as
JSON) and its code (plain JavaScript drawing SVG lines) travel inside the
notebook output, so it works in the built book, served or opened from disk,
with no network. Its text form lists, for every input, layer and head, the
key each query attends to most, with the weight: the numbers nbval compares.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_real_array, shape_str
from ._html import Widget, check_digits, compact, esc, show

__all__ = ["attention_explorer", "AttentionExplorer"]

ROW_SUM_TOL = 1e-6


class AttentionExplorer(Widget):
    """The object :func:`attention_explorer` returns (display it, or print it)."""

    kind = "explorer"


def _is_token_list(x) -> bool:
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(t, str) for t in x)


def _check_tokens(tokens_by_input) -> list[list[str]]:
    if _is_token_list(tokens_by_input):  # one input given as a plain list of tokens
        return [list(tokens_by_input)]
    if not isinstance(tokens_by_input, (list, tuple)) or not tokens_by_input:
        raise TypeError("tokens_by_input must be a non-empty list of token lists "
                        "(one list of strings per input), got "
                        f"{type(tokens_by_input).__name__} {tokens_by_input!r:.60}")
    for i, toks in enumerate(tokens_by_input):
        if not _is_token_list(toks):
            raise TypeError(f"tokens_by_input[{i}] must be a non-empty list of strings, "
                            f"got {type(toks).__name__} {toks!r:.60}")
    return [list(t) for t in tokens_by_input]


def _ndim(w) -> int:
    if hasattr(w, "ndim"):
        return int(w.ndim)
    try:
        return int(np.ndim(w))
    except Exception:  # a ragged list
        return -1


def _check_weights(weights, n_inputs: int) -> list[np.ndarray]:
    if isinstance(weights, (list, tuple)) and weights and all(_ndim(w) == 4 for w in weights):
        if len(weights) != n_inputs:
            raise ValueError(f"weights holds {len(weights)} arrays (one per input) but "
                             f"tokens_by_input has {n_inputs} input(s)")
        return [as_real_array(w, f"weights[{i}]") for i, w in enumerate(weights)]
    arr = as_real_array(weights, "weights")
    if arr.ndim == 5:
        if arr.shape[0] != n_inputs:
            raise ValueError(f"weights has {arr.shape[0]} inputs (shape {shape_str(arr.shape)} = "
                             "(num_inputs, num_layers, num_heads, L, L)) but tokens_by_input "
                             f"has {n_inputs}")
        return [arr[i] for i in range(n_inputs)]
    if arr.ndim == 4 and n_inputs == 1:
        return [arr]
    raise ValueError("weights must be (num_inputs, num_layers, num_heads, L, L), a list of "
                     "(num_layers, num_heads, L, L) arrays (one per input, lengths may differ), "
                     f"or (num_layers, num_heads, L, L) for a single input; got shape "
                     f"{shape_str(arr.shape)} for {n_inputs} input(s)")


def _check_names(names, n: int, name: str, what: str, zh: str) -> list[str]:
    if names is None:
        return [f"{what.capitalize()} {i + 1} · {zh} {i + 1}" for i in range(n)]
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise TypeError(f"{name} must be a list of {n} strings, got {type(names).__name__}")
    if len(names) != n:
        raise ValueError(f"{name} must have one name per {what}: weights has {n}, "
                         f"got {len(names)} name(s)")
    return [str(x) for x in names]


def attention_explorer(tokens_by_input, weights, *, title: str, layer_names=None,
                       head_names=None, digits: int = 2) -> AttentionExplorer:
    """An interactive view of attention weights: pick an input, a layer and a head,
    hover a query token, and see the keys it attends to.

    Args:
        tokens_by_input: one list of token strings per input (a single list of
            strings is one input).
        weights: the attention weights, rows summing to 1 (softmax over keys):
            ``(num_inputs, num_layers, num_heads, L, L)``, or a list with one
            ``(num_layers, num_heads, L_i, L_i)`` array per input (inputs may
            have different lengths), or ``(num_layers, num_heads, L, L)`` for
            one input. ``L_i`` must equal ``len(tokens_by_input[i])``.
            NumPy arrays or torch tensors.
        title: shown above the widget (bilingual is good).
        layer_names, head_names: labels (default ``Layer 1 · 层 1``, ``Head 1 · 头 1``…).
        digits: decimals shown for the weights (0-8).

    Returns:
        An :class:`AttentionExplorer`: Jupyter and the book show its HTML
        (plain JavaScript + SVG, data inlined, no network); ``print`` or the
        text/plain output lists the most-attended key of every query.

    Raises:
        TypeError, ValueError: with a message naming the argument at fault.

    Meant for chapter 3 (one view per head) and chapter 7 (BERT, GPT).
    """
    if not isinstance(title, str) or not title.strip():
        raise TypeError(f"title must be a non-empty string, got {type(title).__name__} {title!r:.40}")
    digits = check_digits(digits)
    tokens = _check_tokens(tokens_by_input)
    arrays = _check_weights(weights, len(tokens))
    n_layers, n_heads = arrays[0].shape[:2]
    for i, (toks, w) in enumerate(zip(tokens, arrays)):
        where = f"weights[{i}]" if len(arrays) > 1 else "weights"
        L = len(toks)
        if w.ndim != 4 or w.shape[2:] != (L, L):
            raise ValueError(f"{where} must have shape (num_layers, num_heads, L, L) with "
                             f"L = len(tokens_by_input[{i}]) = {L}; got {shape_str(w.shape)}")
        if w.shape[:2] != (n_layers, n_heads):
            raise ValueError(f"{where} has {w.shape[0]} layers and {w.shape[1]} heads, but "
                             f"weights[0] has {n_layers} and {n_heads}: every input needs the "
                             "same (num_layers, num_heads)")
        if not np.isfinite(w).all():
            idx = tuple(int(j) for j in np.argwhere(~np.isfinite(w))[0])
            raise ValueError(f"{where} must be finite; found {w[idx]} at index {idx}")
        if (w < 0).any():
            idx = tuple(int(j) for j in np.argwhere(w < 0)[0])
            raise ValueError(f"{where} must be non-negative (softmax weights); found {w[idx]} "
                             f"at index {idx}")
        err = np.abs(w.astype(np.float64).sum(axis=-1) - 1.0)
        if (err > ROW_SUM_TOL).any():
            idx = tuple(int(j) for j in np.argwhere(err > ROW_SUM_TOL)[0])
            raise ValueError(f"{where}: every row (one query, all keys) must sum to 1 within "
                             f"{ROW_SUM_TOL:g}; row (layer, head, query) = {idx} sums to "
                             f"{w[idx].sum():.8f}. Pass softmax weights, not scores")
    if n_layers < 1 or n_heads < 1:
        raise ValueError(f"weights must have at least one layer and one head, got "
                         f"{n_layers} layer(s) and {n_heads} head(s)")
    layers = _check_names(layer_names, n_layers, "layer_names", "layer", "层")
    heads = _check_names(head_names, n_heads, "head_names", "head", "头")

    inputs = [{"tokens": toks,
               "weights": [[[[compact(x, digits) for x in row] for row in head] for head in layer]
                           for layer in w.astype(np.float64).tolist()]}
              for toks, w in zip(tokens, arrays)]
    payload = {"title": title, "digits": digits, "layers": layers, "heads": heads, "inputs": inputs}
    text = _text(payload)
    body = (f'<div class="cw-title">{esc(title)}</div>'
            f'<div class="cw-controls">{_select("input", "Input · 输入", [" ".join(t)[:40] for t in tokens])}'
            f'{_select("layer", "Layer · 层", layers)}{_select("head", "Head · 头", heads)}</div>'
            '<div class="cw-stage"></div><div class="cw-readout"></div>'
            f'<pre class="cw-static">{esc(text)}</pre>')
    return AttentionExplorer(payload, body, ["explorer.js"], "courseAttentionExplorer", text)


def _select(role: str, label: str, options: list[str]) -> str:
    opts = "".join(f'<option value="{i}">{esc(o)}</option>' for i, o in enumerate(options))
    hidden = ' style="display:none"' if len(options) < 2 else ""
    return f'<label{hidden}>{label} <select data-role="{role}">{opts}</select></label>'


def top_keys(payload: dict) -> list[tuple[int, int, int, list[tuple[int, float]]]]:
    """For each (input, layer, head): per query, (index of the top key, its weight)."""
    out = []
    for i, inp in enumerate(payload["inputs"]):
        for l_, layer in enumerate(inp["weights"]):
            for h, head in enumerate(layer):
                out.append((i, l_, h, [(int(np.argmax(row)), max(row)) for row in head]))
    return out


def _text(payload: dict) -> str:
    d = payload["digits"]
    n_in, n_l, n_h = len(payload["inputs"]), len(payload["layers"]), len(payload["heads"])
    lines = [f"Attention explorer · 注意力浏览器: {payload['title']}",
             f"{n_in} input(s) · 输入, {n_l} layer(s) · 层, {n_h} head(s) · 头; "
             "each query -> its most-attended key (weight) · 每个查询 -> 权重最大的键"]
    for i, l_, h, tops in top_keys(payload):
        toks = payload["inputs"][i]["tokens"]
        if l_ == 0 and h == 0:
            lines.append(f"input {i + 1}: {' '.join(toks)}")
        pairs = " | ".join(f"{toks[q]}->{toks[k]} {show(w, d)}" for q, (k, w) in enumerate(tops))
        lines.append(f"  L{l_ + 1} H{h + 1}: {pairs}")
    return "\n".join(lines)
