"""Errata of chapter 3 (multi-head attention): found by running the source documents' listings."""

from __future__ import annotations

from .. import listings_evidence as _lx
from .._errata import Erratum

__all__ = ["ERRATA"]

LISTINGS = "book/appendix/listings"

ERRATA = [
    Erratum(
        "ch03-haskell-one-head", LISTINGS, None, None,
        "the Haskell multi-head attention keeps only its first head",
        "Haskell 版多头注意力只用了第一个头",
        "multiHeadForward takes head headOutputs, the first head's ({rows} × {d_k}) output, and "
        "multiplies it by the ({d_model} × {d_model}) W_O. The hand-written multiply sums over "
        "ncols a = {d_k} and never checks the shapes, so it silently uses only the first {d_k} "
        "rows of W_O and the other {others} heads are never computed (Haskell is lazy). The "
        "comment calls it a simplification, but the result is not multi-head attention: with the "
        "listing's constant inputs the three rows above differ. The heads must be concatenated "
        "side by side (a {rows} × {d_model} matrix) before W_O. Moreover replicate makes every "
        "head the same value, with one constant for every weight, so even concatenated heads would all compute "
        "the same thing; heads need different projections.",
        "multiHeadForward 取 head headOutputs，即第一个头的 ({rows} × {d_k}) 输出，再乘以 "
        "({d_model} × {d_model}) 的 W_O。手写的 multiply 按 ncols a = {d_k} 求和且不检查形状，于是悄悄地只用了 "
        "W_O 的前 {d_k} 行，另外 {others} 个头根本没有计算（Haskell 是惰性求值的）。注释称之为简化，但结果已"
        "不是多头注意力：在原始资料的常数输入上，上表三行各不相同。应先把各头并排拼接（{rows} × {d_model} 的矩阵）"
        "再乘 W_O。此外 replicate 让每个头都是同一个值、所有权重都是同一个常数，即使拼接，各头也算出同样的东西；"
        "多个头需要不同的投影。",
        _lx.haskell_heads_details, evidence=_lx.haskell_heads, kind="code",
        practice="ch03-ex-merge"),
]

# --- The multi-head diagram of the ch24 document (issue 20: a complete reading) ------------
import numpy as np  # noqa: E402

from ...display import Table, fmt  # noqa: E402
from .._claims import SOURCES  # noqa: E402

CH03 = "book/ch03_multi_head"


def _source_mha():
    """The ch24 document's ``MultiHeadAttention`` class, from its listing, verbatim (block 5;
    it has no imports of its own and runs after the document's earlier listings, which import NumPy)."""
    from ..listings import text
    ns = {"np": np, "__name__": "ch24_block_5"}          # not "__main__": the demo does not run
    exec(compile(text("ch24", 5), "<ch24 block 5>", "exec"), ns)
    return ns["MultiHeadAttention"]


def trace_source_mha(L: int = 4, d_model: int = 8, num_heads: int = 2, seed: int = 0) -> dict:
    """Run the source's ``MultiHeadAttention.forward`` once and record, in order, the methods it
    calls and what they receive. NumPy's global RNG is restored afterwards.

    Returns:
        dict with ``calls`` (method names in call order), ``projected_first`` (the first
        ``reshape_for_multihead`` receives ``x @ W_q``), ``output_is_concat_Wo``,
        ``head_diff`` (max |A_1 − A_2| of the two heads' weights), ``drawn_diff`` (the same
        when no per-head map precedes the softmax, as drawn) and ``num_heads``. Chapter 3.
    """
    MHA = _source_mha()
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        mha = MHA(d_model, num_heads)
        x = np.random.randn(L, d_model)
    finally:
        np.random.set_state(state)
    calls, seen = [], {}
    for name in ("reshape_for_multihead", "scaled_dot_product_attention", "concat_heads"):
        method = getattr(mha, name)

        def wrapped(*args, _name=name, _method=method):
            calls.append(_name)
            seen.setdefault(_name, []).append(args)
            out = _method(*args)
            seen.setdefault(_name + "_out", []).append(out)
            return out
        setattr(mha, name, wrapped)
    output, weights = mha.forward(x)
    concat = seen["concat_heads_out"][0]
    softmax = mha.softmax
    drawn = [softmax(x @ x.T / np.sqrt(d_model)) for _ in range(num_heads)]   # X itself in every head
    return {"calls": calls, "num_heads": num_heads,
            "projected_first": bool(np.allclose(seen["reshape_for_multihead"][0][0], x @ mha.W_q)),
            "output_is_concat_Wo": bool(np.allclose(output, concat @ mha.W_o)),
            "head_diff": float(np.abs(weights[0] - weights[1]).max()),
            "drawn_diff": float(np.abs(drawn[0] - drawn[1]).max())}


def _runs(calls):
    out = []
    for c in calls:
        if out and out[-1][0] == c:
            out[-1][1] += 1
        else:
            out.append([c, 1])
    return " → ".join(c if n == 1 else f"{c} ×{n}" for c, n in out)


def _diagram_path() -> str:
    labels, edges = _lx.mermaid_graph("ch24", 4)
    start, first_head = edges[0]                          # 输入X fans out; follow its first head
    nxt = {a: b for a, b in edges if a != start}
    path = [start, first_head]
    while path[-1] in nxt:
        path.append(nxt[path[-1]])
    return " → ".join(labels[n] for n in path)


def _yes_no(fact: bool) -> str:
    """A traced fact in words, not a bare True/False (tests/book/test_checks_are_assertions.py)."""
    return "yes · 是" if fact else "no · 否"


def _order_evidence() -> Table:
    t = trace_source_mha()
    return Table(["", "ch24 document · 第24章资料"], [
        ["diagram, one head · 图中的一个头", _diagram_path()],
        ["code, MultiHeadAttention.forward as run · 代码运行时的调用顺序",
         "x·W_q, x·W_k, x·W_v → " + _runs(t["calls"]) + " → ·W_o"],
        ["reshape_for_multihead receives x·W_q · 拆分成头之前已经投影", _yes_no(t["projected_first"])],
        ["output = concat_heads(…)·W_o · 输出等于拼接后乘 W_o", _yes_no(t["output_is_concat_Wo"])],
        ["max |A₁ − A₂|, the code's two heads · 代码中两个头的权重之差", fmt(t["head_diff"], 3)],
        ["max |A₁ − A₂|, X itself into each head, as drawn · 按图把 X 直接送进各头",
         fmt(t["drawn_diff"], 3)],
    ], f"d_model = 8, {t['num_heads']} heads, seeded · 设定了随机种子")


def _order_details():
    t = trace_source_mha()
    return {"h": str(t["num_heads"]), "diff": fmt(t["head_diff"], 3),
            "attention": SOURCES["attention"].split(" / ")[0],
            "attention_zh": SOURCES["attention"].split(" / ")[1]}


ERRATA += [
    Erratum(
        "ch03-diagram-linear-order", CH03, None, None,
        "the multi-head diagram puts each head's linear transformation after the head",
        "多头注意力图把每个头的线性变换画在了头之后",
        "The diagram sends the input X straight into heads 1 … h and passes each head's output "
        "through its own linear transformation (线性变换) on the way to Concat and the output "
        "projection. The order is reversed. In multi-head attention the per-head linear maps come "
        "first, head_i = Attention(X W_i^Q, X W_i^K, X W_i^V), as “{attention}” writes in §3.2, "
        "and the diagram's own document codes it that way: its MultiHeadAttention, run above, multiplies x by "
        "W_q, W_k and W_v, splits the products into heads, attends in each head, concatenates and "
        "multiplies by W_o. The order matters: the projections before the softmax are what let the "
        "heads attend differently (the weights of the code's two heads differ by up to {diff}). "
        "A linear map after the attention cannot change where a head looks: fed X itself, as drawn, "
        "every head computes the same weights. Chapter 3's diagram draws the projections first.",
        "这张图把输入 X 直接送进头 1 … h，再让每个头的输出经过各自的线性变换，然后拼接（Concat）、做输出"
        "投影。顺序画反了。多头注意力中，每个头的线性映射在前：head_i = Attention(X W_i^Q, X W_i^K, "
        "X W_i^V)，《{attention_zh}》§3.2 就是这样写的。这张图所在的资料自己的 MultiHeadAttention 代码"
        "（上面运行过）也正是这样做的：先把 x 分别乘以 W_q、W_k、W_v，把乘积拆成多个头，在每个头里做注意力，再拼接、"
        "乘以 W_o。顺序很要紧：softmax 之前的投影，正是让各个头关注不同位置的原因（代码中两个头的权重最多"
        "相差 {diff}）。注意力之后的线性映射改变不了一个头看向哪里：如果像图中那样把 X 本身送进每个头，"
        "所有头算出的权重都一样。第 3 章的图把投影画在前面。",
        _order_details, evidence=_order_evidence, kind="claim"),
]
