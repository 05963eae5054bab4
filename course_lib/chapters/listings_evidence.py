"""Evidence, computed, for the errata found by running the source documents' listings.

Used by the ``Erratum`` entries whose keys the registry ``listings_data`` names
(``ch02-rust-softmax-axis``, ``ch02-haskell-softmax-exp``, ``ch02-haskell-compile``,
``ch03-haskell-one-head``, ``ch05-multirep-block-autograd``,
``ch05-multirep-encoder-standalone``) and shown in the appendix "Source listings".
Each function runs the listing (Python, verbatim) or its port (``listings_ports``).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from ..display import Table, fmt

__all__ = ["rust_softmax", "rust_softmax_details", "haskell_softmax", "haskell_softmax_details",
           "mermaid_graph", "mermaid_inputs",
           "haskell_names", "haskell_names_details", "haskell_heads", "haskell_heads_details",
           "block_autograd", "block_autograd_details", "encoder_standalone",
           "encoder_standalone_details"]


@lru_cache(maxsize=None)  # deterministic: a box renders twice (text and Markdown)
def _rust():
    from ..scratch.attention import scaled_dot_product_attention
    from .listings_ports import rust_main
    x, mha, _ = rust_main(seed=0)
    head = mha.attention_heads[0]
    out = head.forward(x)
    right, _ = scaled_dot_product_attention(x @ head.w_q, x @ head.w_k, x @ head.w_v)
    return head.last_weights, out, right


def rust_softmax() -> Table:
    """Row and column sums of the Rust port's weights (head 1 of ``main``), and its error."""
    w, out, right = _rust()
    rows = [[f"query {i + 1} · 查询 {i + 1}", fmt(w[i].sum(), 3), fmt(w[:, i].sum(), 3)]
            for i in range(w.shape[0])]
    return Table(["row / column · 行 / 列", "row sum · 行和 (should be 1 · 应为 1)",
                  "column sum · 列和"], rows,
                 f"Rust SelfAttention, head 1 of main(): max |output − softmax-by-row output| = "
                 f"{fmt(np.abs(out - right).max(), 3)}")


def rust_softmax_details() -> dict:
    w, out, right = _rust()
    s = w.sum(axis=1)
    return {"lo": fmt(s.min(), 3), "hi": fmt(s.max(), 3), "n": w.shape[0],
            "diff": fmt(np.abs(out - right).max(), 3)}


@lru_cache(maxsize=None)  # deterministic: a box renders twice (text and Markdown)
def _hs_weights():
    from .listings_ports import hs_example
    x, mha, out = hs_example()
    return mha["attentionHeads"][0]["last_weights"], out


def haskell_softmax() -> Table:
    """The Haskell ``softmax`` beside softmax, on (1, 2, 3) and on the listing's own example."""
    from ..scratch.attention import softmax
    from .listings_ports import hs_softmax
    v = np.array([1.0, 2.0, 3.0])
    w, _ = _hs_weights()
    hs, ok = hs_softmax(v), softmax(v)
    return Table(["input · 输入", "Haskell softmax", "softmax", "sum · 和 (Haskell)"], [
        ["(1, 2, 3)", ", ".join(fmt(a, 4) for a in hs), ", ".join(fmt(a, 4) for a in ok),
         fmt(hs.sum(), 4)],
        ["example, row 1 · 示例第 1 行", f"{w.shape[1]} × {fmt(w[0, 0], 4)}",
         f"{w.shape[1]} × {fmt(1 / w.shape[1], 4)}", fmt(w[0].sum(), 4)],
    ])


def haskell_softmax_details() -> dict:
    from .listings_ports import hs_softmax
    w, _ = _hs_weights()
    v = [1.0, 2.0, 3.0]
    return {"v": "(" + ", ".join(f"{a:g}" for a in v) + ")", "sum123": fmt(hs_softmax(v).sum(), 4), "rowsum": fmt(w[0].sum(), 4),
            "e": fmt(np.e, 4)}


def _hs_source() -> list[str]:
    from .listings import text
    return text("multirep", 1).splitlines()


def haskell_names() -> str:
    """The lines of the Haskell listing that declare one name twice in the module."""
    lines = _hs_source()
    out = []
    records = {}
    current = None
    for no, line in enumerate(lines, start=1):
        m = re.match(r"data (\w+) = \w+ \{", line)
        if m:
            current = m.group(1)
        f = re.match(r"\s+(\w+) :: ", line)
        if current and f:
            records.setdefault(f.group(1), []).append((current, no))
        if line.startswith("}"):
            current = None
    for name, where in records.items():
        if len(where) > 1:
            out.append(f"record field {name!r} declared in " + " and ".join(
                f"{r} (listing line {n})" for r, n in where))
    imports = [no for no, l in enumerate(lines, 1) if l.strip() == "import Data.Matrix"]
    defs = [no for no, l in enumerate(lines, 1) if l.startswith("transpose ::")]
    uses = [no for no, l in enumerate(lines, 1) if "(transpose " in l]
    if imports and defs:
        out.append(f"'transpose' defined on listing line {defs[0]}, also exported by "
                   f"Data.Matrix (imported whole on line {imports[0]}), used on line "
                   f"{', '.join(map(str, uses))}")
    return "\n".join(out)


def haskell_names_details() -> dict:
    return {"n": len(haskell_names().splitlines())}


@lru_cache(maxsize=None)  # deterministic: a box renders twice (text and Markdown)
def _heads():
    from ..scratch.attention import softmax
    from ..scratch.multihead import multi_head_attention
    from .listings_ports import hs_example
    x, mha, out = hs_example()
    head = mha["attentionHeads"][0]
    d_k = head["wQ"].shape[1]
    v = x @ head["wV"]
    one_head = softmax((x @ head["wQ"]) @ (x @ head["wK"]).T / np.sqrt(d_k)) @ v @ mha["wO"][:d_k]
    W = np.hstack([h["wQ"] for h in mha["attentionHeads"]])      # (d_model, num_heads·d_k)
    right, _ = multi_head_attention(x, x, W, W, W, mha["wO"], mha["numHeads"])
    return out, one_head, right, d_k, mha


def haskell_heads() -> Table:
    """The Haskell example's output beside one head with a correct softmax and all heads."""
    out, one_head, right, d_k, mha = _heads()
    return Table(["computation · 计算", "output[1, 1] · 输出[1, 1]"], [
        ["the listing (port) · 原始资料中的代码（移植）", fmt(out[0, 0], 4)],
        [f"first head only, rows 1–{d_k} of W_O, correct softmax · 只用第一个头和 W_O 的前 {d_k} 行，softmax 正确",
         fmt(one_head[0, 0], 4)],
        [f"all {mha['numHeads']} heads concatenated, then W_O · 拼接全部 {mha['numHeads']} 个头再乘 W_O",
         fmt(right[0, 0], 4)],
    ])


def haskell_heads_details() -> dict:
    out, one_head, right, d_k, mha = _heads()
    return {"h": mha["numHeads"], "others": mha["numHeads"] - 1, "d_k": d_k, "d_model": mha["dModel"],
            "rows": out.shape[0]}


@lru_cache(maxsize=None)  # deterministic: a box renders twice (text and Markdown)
def _block():
    import torch
    from .listings import run
    ns = run("multirep", 2).namespace
    np.random.seed(0)
    torch.manual_seed(0)
    blk = ns["TransformerBlock"](64, 8, 256)
    g = torch.Generator().manual_seed(1)
    x, c, d = (torch.randn(10, 64, generator=g) for _ in range(3))
    y1, y2 = blk.forward(x), blk.forward(x)                  # dropout is on: two calls differ
    blk.dropout_layer.eval()
    xr = x.clone().requires_grad_(True)
    (blk.forward(xr) * c).sum().backward()
    auto = float((xr.grad * d).sum())
    eps = 1e-2
    with torch.no_grad():
        fd = float(((blk.forward(x + eps * d) - blk.forward(x - eps * d)) * c).sum()) / (2 * eps)
    mha = blk.multi_head_attn
    arrays = 3 * len(mha.attention_heads) + 1
    params = len(list(blk.feed_forward.parameters()) + list(blk.norm1.parameters())
                 + list(blk.norm2.parameters()))
    return {"module": isinstance(blk, torch.nn.Module), "arrays": arrays, "params": params,
            "auto": auto, "fd": fd, "dropout": float((y1 - y2).detach().abs().max())}


def block_autograd() -> Table:
    """What autograd sees of the multi-representation ``TransformerBlock`` (§1.2 listing)."""
    b = _block()
    return Table(["check · 检查", "result · 结果"], [
        ["TransformerBlock is an nn.Module · 是 nn.Module", "yes · 是" if b["module"] else "no · 否"],
        ["weight tensors autograd can train · autograd 能训练的权重张量", str(b["params"])],
        ["attention matrices kept as NumPy arrays · 注意力矩阵为 NumPy 数组", str(b["arrays"])],
        ["d(loss)/dx along a direction: autograd · 方向导数：autograd", fmt(b["auto"], 1)],
        ["the same by finite differences · 有限差分", fmt(b["fd"], 1)],
        ["max |difference| of two calls on one input · 同一输入两次调用的最大差", fmt(b["dropout"], 2)],
    ])


def block_autograd_details() -> dict:
    b = _block()
    return {"arrays": b["arrays"], "auto": fmt(b["auto"], 1), "fd": fmt(b["fd"], 1)}


@lru_cache(maxsize=None)
def _encoder_runs():
    from .listings import run
    return run("multirep", 6), run("multirep", [2, 6])


def encoder_standalone() -> str:
    """Running the §2.2 listing alone, then after the §1.2 listing."""
    alone, after = _encoder_runs()
    err = f"{type(alone.error).__name__}: {alone.error}"
    tail = after.stdout.strip().splitlines()[-3:]
    ok = "ran to the end · 运行到结尾" if after.error is None else f"raised {after.error!r}"
    return "\n".join([f"§2.2 alone · 单独运行: {err}", f"§1.2 then §2.2 · 先 §1.2 再 §2.2: {ok}"]
                     + ["  " + t for t in tail])


def encoder_standalone_details() -> dict:
    e = _encoder_runs()[0].error
    return {"error": f"{type(e).__name__}: {e}"}


# --- Diagrams (mermaid) -----------------------------------------------------------------------

_NODE = r"(\w+)(?:\[([^\]]*)\])?"
_EDGE = re.compile(rf"^\s*{_NODE}\s*-->\s*{_NODE}\s*$")


def mermaid_graph(source: str, index: int) -> tuple[dict, list]:
    """The nodes and edges of a mermaid ``graph`` block of the source documents, as printed.

    Returns:
        ``(labels, edges)``: ``labels`` maps a node id to its label (``"F"`` ->
        ``"解码器块1"``); ``edges`` lists ``(from_id, to_id)`` in reading order.
        Used by the errata of the source documents' diagrams (chapters 3 and 5).
    """
    from .listings import text
    labels, edges = {}, []
    for line in text(source, index).splitlines():
        m = _EDGE.match(line)
        if m:
            a, la, b, lb = m.groups()
            for node, label in ((a, la), (b, lb)):
                if label is not None:
                    labels[node] = label.strip()
                labels.setdefault(node, node)
            edges.append((a, b))
    return labels, edges


def mermaid_inputs(source: str, index: int, label: str) -> list[str]:
    """Labels of the nodes with an arrow into the node labelled ``label``."""
    labels, edges = mermaid_graph(source, index)
    node = next(n for n, lab in labels.items() if lab == label)
    return [labels[a] for a, b in edges if b == node]
