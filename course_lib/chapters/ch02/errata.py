"""Errata of chapter 2 (worked Q/K/V examples)."""

from __future__ import annotations

import numpy as np

from ...display import fmt
from .worked import EXAMPLES
from .._errata import Erratum

__all__ = ["ERRATA"]


def _context_details():
    steps_fn, data = EXAMPLES["single_query"]
    c = steps_fn()["context"]
    terms = data["claims"]["terms"].printed                 # rows: the 3 states, 4 columns each
    n = data["H"].shape[1]
    col = [terms[i * n + 2] for i in range(data["H"].shape[0])]
    step = np.unique(np.round(np.diff(data["H"], axis=1), 12))
    if step.size != 1:
        raise RuntimeError(f"the columns of H no longer differ by one constant step: {step}")
    return {"c": ", ".join(fmt(v, 4) for v in c), "sum": " + ".join(col), "step": f"{step[0]:g}"}


def _terms_details():
    steps_fn, data = EXAMPLES["single_query"]
    alpha, h = steps_fn()["weights"][2], data["H"][2, 2]
    printed = data["claims"]["weights"].printed[2]
    return {"rounded": f"{printed} × {h:g} = {fmt(float(printed) * h, 4)}",
            "exact": f"{fmt(alpha, 5)} × {h:g} = {fmt(alpha * h, 4)}"}


def _softmax_details():
    steps = EXAMPLES["two_head"][0]()
    gap = (float(steps["QKt1"][0, 2]) - float(steps["QKt1"][0, 1])) / np.sqrt(2)
    return {"gap": fmt(gap, 1), "tiny": f"{np.exp(-gap):.0e}"}


def _q1_details():
    from .._errata import mismatches
    X, W = EXAMPLES["two_head"][1]["X"], EXAMPLES["two_head"][1]["W1"]
    wrong = [tuple(int(i) for i in pos.strip("[]").split(",")) for pos, _, _ in mismatches("two_head", "Q1")]
    rows, cols = sorted({r for r, _ in wrong}), sorted({c for _, c in wrong})
    if len(cols) != 1:
        raise RuntimeError(f"expected the slips in one column of Q1, got {wrong}")
    r, c = rows[0] - 1, cols[0] - 1
    terms = " + ".join(f"{X[r, k]:g}·{W[k, c]:g}" for k in range(X.shape[1]))
    return {"rows": " and ".join(map(str, rows)), "rows_zh": "、".join(map(str, rows)),
            "col": str(cols[0]), "row": str(rows[0]),
            "expansion": f"{terms} = {fmt(X[r] @ W[:, c], 1)}"}


def _scores_details():
    claims = EXAMPLES["two_head"][1]["claims"]
    a, b = (float(v) for v in claims["Q1"].printed[2:4])
    printed = claims["QKt1"].printed[4]
    return {"own": f"{a:g}² + {b:g}² = {fmt(a * a + b * b, 2)} ≠ {printed}"}


CH02 = "book/ch02_worked_qkv"

ERRATA = [
    Erratum(
        "ch02-terms", CH02, "single_query", "terms",
        "weighted term computed from a rounded weight", "加权项用了取整后的权重",
        "The source multiplies the *rounded* weight by the state: {rounded}. With the "
        "unrounded weight the product is {exact}, which rounds differently.",
        "原始资料用**取整后**的权重乘以状态：{rounded}。用未取整的权重，乘积为 {exact}，"
        "取整结果不同。",
        _terms_details,
        practice="ch02-ex-hand"),
    Erratum(
        "ch02-context", CH02, "single_query", "context",
        "context vector rounded too early", "上下文向量过早取整",
        "The source adds the *rounded* terms (e.g. {sum}) instead of the "
        "unrounded ones, so rounding errors pile up in the last digit. Unrounded, "
        "c = ({c}). Because each column of H is the previous one plus {step} and the weights "
        "sum to 1, every component is the previous one plus exactly {step}.",
        "原始资料把**已取整**的各项相加（例如 {sum}），而不是用未取整的值，"
        "舍入误差在最后一位累积。不取整时 c = ({c})。由于 H 的每一列都比前一列大 {step}，"
        "且权重之和为 1，c 的每个分量恰好比前一个大 {step}。",
        _context_details,
        practice="ch02-ex-hand"),
    Erratum(
        "ch02-q1", CH02, "two_head", "Q1",
        "Q₁ = XW₁ multiplied wrongly", "Q₁ = XW₁ 乘错",
        "Column {col} of rows {rows} is wrong. Row {row}, column {col} is {expansion}. "
        "Every later step of the source's head 1 inherits this slip.",
        "第 {rows_zh} 行的第 {col} 列算错了。第 {row} 行第 {col} 列为 {expansion}。"
        "原始资料头 1 之后的每一步都继承了这个错误。",
        _q1_details,
        practice="ch02-ex-attention"),
    Erratum(
        "ch02-scores", CH02, "two_head", "QKt1",
        "scores Q₁K₁ᵀ wrong", "分数 Q₁K₁ᵀ 错误",
        "These products use the wrong Q₁ above, and some are not even the products of the "
        "source's own Q₁ (for instance {own}).",
        "这些乘积用的是上面错误的 Q₁，而且有些连原始资料自己的 Q₁ 都对不上（例如 {own}）。",
        _scores_details),
    Erratum(
        "ch02-softmax", CH02, "two_head", "A1",
        "softmax of huge scores is one-hot, not spread out",
        "巨大分数的 softmax 是独热的，而不是分散的",
        "Neighbouring scaled scores in each row differ by tens (row 1: {gap} between the "
        "last two). softmax turns a gap of g into a weight ratio of e^g, so the smaller "
        "weights are about {tiny}: the rows are one-hot to three decimals. The source's "
        "matrix is not the softmax of any of these rows. Chapter 3 shows why this "
        "saturation is exactly what dividing by √d_k is meant to prevent — and why it "
        "is not enough when inputs are this large.",
        "每行相邻的缩放分数相差几十（第 1 行最后两个相差 {gap}）。softmax 把差值 g 变成 e^g "
        "的权重比，所以较小的权重约为 {tiny}：保留三位小数时每行都是独热的。原始资料的矩阵"
        "不是其中任何一行的 softmax。第 3 章说明：除以 √d_k 正是为了避免这种饱和——"
        "而当输入这么大时，仅靠它还不够。",
        _softmax_details,
        practice="ch02-ex-softmax"),
]

# --- Found by running the source documents' listings (appendix "Source listings") ---
from .. import listings_evidence as _lx  # noqa: E402

LISTINGS = "book/appendix/listings"

ERRATA += [
    Erratum(
        "ch02-rust-softmax-axis", LISTINGS, None, None,
        "the Rust self-attention normalises each column, not each row",
        "Rust 版自注意力按列而不是按行归一化",
        "softmax in the multi-representation source's Rust listing loops over the columns j of "
        "the score matrix and divides by the sum down column j. Row i of the scores belongs to "
        "query i, so each query's weights must sum to 1 along its row; here the columns do, and "
        "the {n} row sums of head 1 (run through the line-by-line port) range from {lo} to {hi}. "
        "The output differs from attention with a row-wise softmax by up to {diff}. Taking the "
        "max and the sum over x.row(i) instead fixes it, and the port then agrees with "
        "course_lib.scratch.scaled_dot_product_attention.",
        "多表征示例的 Rust 代码里，softmax 遍历分数矩阵的列 j，并除以第 j 列之和。分数的第 i 行属于"
        "查询 i，每个查询的注意力权重应当沿这一行求和为 1；这里求和为 1 的却是列，头 1 的 {n} 个行和"
        "（用逐行移植的代码运行）从 {lo} 到 {hi} 不等。输出与按行做 softmax 的注意力最多相差 {diff}。"
        "改为对 x.row(i) 取最大值并求和即可修正，修正后的移植与 "
        "course_lib.scratch.scaled_dot_product_attention 一致。",
        _lx.rust_softmax_details, evidence=_lx.rust_softmax, kind="code",
        practice="ch02-ex-softmax"),
    Erratum(
        "ch02-haskell-softmax-exp", LISTINGS, None, None,
        "the Haskell softmax applies exp twice", "Haskell 版 softmax 取了两次指数",
        "normalized already holds exp(x − max), and the result maps exp x / sum over normalized, "
        "so each weight is exp(exp(x − max)) / Σ exp(x − max). The weights no longer sum to 1: "
        "on {v} they sum to {sum123}, and in the listing's own example every row sums to "
        "{rowsum}, which is e = {e} (all scores are equal there, so each weight is e/n). The "
        "last line should be V.map (/ sum) normalized.",
        "normalized 里已经是 exp(x − max)，结果却又对 normalized 做 exp x / sum，所以每个权重是 "
        "exp(exp(x − max)) / Σ exp(x − max)。权重之和不再为 1：对 {v} 求和为 {sum123}，在原始资料自己的"
        "示例里每一行之和都是 {rowsum}，即 e = {e}（那里所有分数相等，每个权重都是 e/n）。最后一行应为 "
        "V.map (/ sum) normalized。",
        _lx.haskell_softmax_details, evidence=_lx.haskell_softmax, kind="code",
        practice="ch02-ex-softmax"),
    Erratum(
        "ch02-haskell-compile", LISTINGS, None, None,
        "the Haskell module does not compile as written", "Haskell 模块按原样无法编译",
        "A record field is a top-level function in Haskell, so one module cannot declare the same "
        "field in two records, and a name defined in the module that an unqualified import also "
        "exports is ambiguous where it is used. The listing has {n} such clashes, listed above "
        "(found by scanning its text). Renaming the fields (or DuplicateRecordFields) and "
        "import Data.Matrix hiding (transpose) fix them; the port runs the rest.",
        "在 Haskell 中记录字段是顶层函数，同一模块的两个记录不能声明同名字段；模块里定义的名字若也被"
        "非限定导入的模块导出，使用处就会产生歧义。这段代码有 {n} 处这样的冲突，见上（通过扫描原始资料得到）。"
        "给字段改名（或启用 DuplicateRecordFields）并写 import Data.Matrix hiding (transpose) 即可；"
        "其余部分由移植代码运行。",
        _lx.haskell_names_details, evidence=_lx.haskell_names, kind="code"),
]
