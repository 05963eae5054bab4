"""Errata of chapter 4 (positional encoding)."""

from __future__ import annotations

import numpy as np

from ...display import Table, fmt
from .worked import BASE, EXAMPLES
from .._errata import Erratum

__all__ = ["ERRATA"]


def _length_details():
    return {"shape": "(L, B, d_model) = ({}, {}, {})".format(*EXAMPLES["pe_test"][1]["input_shape"])}


def _pos5_columns():
    steps_fn, data = EXAMPLES["pe_test"]
    steps = steps_fn()
    ideal_err = np.abs(steps["pos5_manual"] - steps["pos5_ideal"])
    return steps, data["claims"]["pos5_error"].printed, ideal_err


def _pos5_error_evidence() -> Table:
    steps, printed, ideal_err = _pos5_columns()
    rows = []
    for j, (p, e, i) in enumerate(zip(printed, steps["pos5_error"], ideal_err)):
        torch_err = fmt(e, 8)
        rows.append([str(j), p, f"{torch_err} {'✓' if torch_err == p else '✗'}", fmt(i, 8)])
    return Table(["dim · 维度", "source 误差 · 原始资料", "PyTorch float32 recipe · PyTorch 写法",
                  "every step correctly rounded · 每步正确舍入"], rows,
                 "position 5, |exact − float32| · 位置 5")


def _pos5_error_details():
    steps, printed, ideal_err = _pos5_columns()
    differs = [j for j in range(len(printed)) if fmt(ideal_err[j], 8) != printed[j]]
    j = differs[0]
    torch32, ideal32 = np.float32(steps["pos5_model"][j]), np.float32(steps["pos5_ideal"][j])
    steps_apart = abs(int(torch32.view(np.int32)) - int(ideal32.view(np.int32)))
    return {"base": f"{BASE:g}", "dims": ", ".join(str(d) for d in differs), "torch": fmt(steps["pos5_error"][j], 8),
            "ideal": fmt(ideal_err[j], 8),
            "apart": "one float32 step" if steps_apart == 1 else f"{steps_apart} float32 steps",
            "apart_zh": "一个 float32 间隔" if steps_apart == 1 else f"{steps_apart} 个 float32 间隔",
            "ulp": f"{float(np.spacing(np.float32(abs(torch32)))):.1e}",
            "worst": fmt(steps["pos5_error"].max(), 8)}


def _d4_details():
    x = float(EXAMPLES["pe_d4"][0]()["angles"][1, 3])
    claim = EXAMPLES["pe_d4"][1]["claims"]["values"]
    dec = claim.decimals()[7]
    return {"x": f"{x:g}", "exact": f"{np.cos(x):.8f}", "approx": f"1 − {x * x / 2:g}",
            "printed": claim.printed[7], "rounded": fmt(np.cos(x), dec), "dec": str(dec)}


CH04 = "book/ch04_positional_encoding"

ERRATA = [
    Erratum(
        "ch04-length", CH04, "pe_test", "length_changed",
        "“did the length change? True” contradicts the shapes it prints",
        "“是否改变了序列长度: True”与它打印的形状矛盾",
        "The log prints the same shape before and after adding the positional encoding, "
        "{shape}: adding two arrays of one shape cannot change the length, so the answer "
        "to the printed question is no. The script probably printed a test for *equal* "
        "shapes under a label that asks the opposite.",
        "日志在加位置编码前后打印的形状相同，都是 {shape}：两个形状相同的数组相加不可能改变长度，"
        "所以这个问题的答案是“否”。脚本大概打印的是“形状是否*相同*”，标签却问的是相反的问题。",
        _length_details, kind="claim"),
    Erratum(
        "ch04-pos5-error", CH04, None, None,
        "the error column is what PyTorch prints in float32, last digit included",
        "误差列正是 PyTorch 在 float32 下打印的结果，连最后一位也对",
        "Run the source's recipe in PyTorch (torch.arange, div_term = exp(arange(0, d_model, 2) · "
        "(−log {base} / d_model)), sin and cos, all in float32) and every entry of the error column "
        "comes out as printed. These errors are float32 rounding: near 1, neighbouring float32 "
        "numbers are {ulp} apart, and the largest error is {worst}, far below the six printed "
        "decimals. An earlier version of this book marked dimension {dims} wrong: it compared with "
        "a float32 routine that rounds every step correctly, which gives {ideal} there, whereas "
        "PyTorch's float32 sin lands {apart} away and gives the printed {torch}. "
        "Digits this small belong to the maths library, not to the formula; PyTorch's default and "
        "AVX2 CPU kernels give the same bits.",
        "用 PyTorch 按原始资料的写法计算（torch.arange，div_term = exp(arange(0, d_model, 2) · "
        "(−log {base} / d_model))，再取 sin 和 cos，全部为 float32），误差列的每一项都与原始资料一致。这些误差"
        "来自 float32 舍入：在 1 附近，相邻两个 float32 数相差 {ulp}，最大的误差是 {worst}，远小于打印的"
        "六位小数。本书早先的版本把第 {dims} 维标为错误：它对照的是一个每一步都正确舍入的 float32 实现，"
        "在那里得到 {ideal}；而 PyTorch 的 float32 sin 落在相距{apart_zh}的数上，"
        "得到的正是原始资料的 {torch}。这么小的数字取决于数学库，而不是公式；PyTorch 的 default 与 AVX2 "
        "两种 CPU 内核给出的比特完全相同。",
        _pos5_error_details, evidence=_pos5_error_evidence, kind="note"),
    Erratum(
        "ch04-d4-cos", CH04, "pe_d4", "values",
        "cos({x}) is {rounded} to {dec} decimals, not {printed}",
        "cos({x}) 保留 {dec} 位小数是 {rounded}，不是 {printed}",
        "cos({x}) = {exact}. For a small angle x, cos x ≈ 1 − x²/2 = {approx}, far closer to "
        "1 than to {printed}: the source truncated instead of rounding. Rounded correctly, the "
        "entry shows the point of the example: in the slow dimensions the cosine stays "
        "almost exactly 1 for the first positions, and only the fast dimensions tell "
        "neighbouring positions apart.",
        "cos({x}) = {exact}。对很小的角 x，cos x ≈ 1 − x²/2 = {approx}，离 1 比离 {printed} 近得多："
        "原始资料是截断而不是四舍五入。正确取整后，这一项恰好说明了例子的要点：在慢变化的维度上，"
        "前几个位置的余弦几乎正好是 1，只有快变化的维度才能区分相邻位置。",
        _d4_details,
        practice="ch04-ex-hand"),
]


# --- What the scripts say about their own tables (issue 20: a complete reading) ------------

import re  # noqa: E402

from ...analysis.positional import frequencies  # noqa: E402
from ...scratch.positional import sinusoidal_positional_encoding  # noqa: E402
from . import source as _src  # noqa: E402
from .worked import matching_d_models, pe_ref10_steps, ref10_d_model  # noqa: E402

#: The widths ``ref10_d_model`` searches (every even d_model in this range).
REF10_WIDTHS = range(2, 1025, 2)


def _statement(line: str) -> str:
    """A printed observation without its list number: ``"3. 从左到右…"`` -> ``"从左到右…"``."""
    return re.sub(r"^\d+\.\s*", "", line)


def _printed(example: str, step: str, shape=None) -> np.ndarray:
    claim = EXAMPLES[example][1]["claims"][step]
    values = np.array([float(p) for p in claim.printed])
    return values if shape is None else values.reshape(shape)


def _demo_frequency_rows():
    d = _src.PE_DEMO["d_model"]
    table = _printed("pe_demo", "table", (_src.PE_DEMO["max_len"], d))
    omega = frequencies(d, BASE)
    swing = np.abs(np.diff(table[:, 0::2], axis=0)).sum(axis=0)      # sine column of each pair
    return d, table, omega, swing


def _demo_frequency_evidence() -> Table:
    d, table, omega, swing = _demo_frequency_rows()
    rows = [[f"{2 * i}, {2 * i + 1}", f"{w:g}", fmt(2 * np.pi / w, 1), fmt(s, 3)]
            for i, (w, s) in enumerate(zip(omega, swing))]
    return Table(["dims · 维度", "ω_i", "wavelength 2π/ω_i (positions) · 波长（位置数）",
                  f"sine column: Σ|Δ| over the printed positions 0–{len(table) - 1} · "
                  f"原始资料表中正弦列的总变化"], rows,
                 f"d_model = {d}, left to right · 从左到右")


def _demo_frequency_details():
    d, table, omega, swing = _demo_frequency_rows()
    return {"claim": _statement(_src.PE_DEMO_FREQUENCY), "d": str(d), "base": f"{BASE:g}",
            "last": str(len(omega) - 1), "omegas": ", ".join(f"{w:g}" for w in omega),
            "ratio": f"{omega[0] / omega[1]:g}", "wl0": fmt(2 * np.pi / omega[0], 1),
            "wl_last": fmt(2 * np.pi / omega[-1], 0), "p_last": str(len(table) - 1),
            "lo": fmt(table[:, 0].min(), 3), "hi": fmt(table[:, 0].max(), 3),
            "end": fmt(table[-1, 2 * (len(omega) - 1)], 3)}


def _settings() -> dict:
    """``{"d_model": 8, "max_len": 10}``, read from the demo's printed settings line."""
    found = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", _src.PE_DEMO_SETTINGS)}
    assert found == {"d_model": _src.PE_DEMO["d_model"], "max_len": _src.PE_DEMO["max_len"]}
    return found


def _index_error(max_len: int, d_model: int, row: int) -> str:
    try:
        sinusoidal_positional_encoding(max_len, d_model)[row]
    except IndexError as err:
        return f"IndexError: {err}"
    return ""


def _ref10_settings_rows():
    s, ref = _settings(), _src.PE_REF10["reference"]
    claims = _src.PE_REF10["claims"]
    last = max(_src.PE_REF10["positions"])
    printed_max = _printed("pe_ref10", "euclid").max()
    found = ref10_d_model()
    rows = []
    for d, n in ((s["d_model"], s["max_len"]), (s["d_model"], last + 1), (found, last + 1)):
        cap = 2 * np.sqrt(d / 2)                 # two vectors of length √(d/2), opposite
        if n <= last:
            verdict = f"✗ {_index_error(n, d, ref)}"
        else:
            ok = matching_d_models(pe_ref10_steps, claims, [d]) == [d]
            verdict = "✓ every value · 全部一致" if ok else "✗"
        rows.append([f"d_model = {d}, max_len = {n}", f"0–{n - 1}", fmt(cap, 3), fmt(printed_max, 3),
                     verdict])
    return rows, {"settings": _src.PE_DEMO_SETTINGS, "ref": str(ref), "last": str(last),
                  "rows": str(s["max_len"]), "last_row": str(s["max_len"] - 1),
                  "max_len": str(s["max_len"]), "d": str(s["d_model"]),
                  "error": _index_error(s["max_len"], s["d_model"], ref),
                  "cap": fmt(2 * np.sqrt(s["d_model"] / 2), 3), "printed_max": fmt(printed_max, 3),
                  "found": str(found), "need": str(last + 1),
                  "lo_w": str(REF10_WIDTHS[0]), "hi_w": str(REF10_WIDTHS[-1])}


def _ref10_settings_evidence() -> Table:
    rows, d = _ref10_settings_rows()
    return Table(["table · 表", "positions · 位置", "largest possible distance · 可能的最大距离",
                  "largest printed distance · 打印的最大距离", "reproduces the table · 重现该表"], rows,
                 f"positions 0–{d['last']} against position {d['ref']} · 位置 0–{d['last']} 与位置 {d['ref']} 比较")


def _ref10_settings_details():
    assert ref10_d_model() in REF10_WIDTHS
    return _ref10_settings_rows()[1]


def _ref10_breaks():
    """Steps toward position 10 after which the printed distance grows (or the cosine falls)."""
    ref = _src.PE_REF10["reference"]
    pos = _src.PE_REF10["positions"]
    dist = dict(zip(pos, _printed("pe_ref10", "euclid")))
    cos = dict(zip(pos, _printed("pe_ref10", "cosine")))
    ours = pe_ref10_steps()
    ours_d, ours_c = dict(zip(pos, ours["euclid"])), dict(zip(pos, ours["cosine"]))
    out = []
    for p in pos:
        q = p + 1 if p < ref else p - 1
        if q != ref and (dist[q] > dist[p] or cos[q] < cos[p]):
            out.append((p, q, dist, cos, ours_d, ours_c))
    return out


def _ref10_monotone_evidence() -> Table:
    ref = _src.PE_REF10["reference"]
    rows = [[f"{p} → {q}", f"{fmt(dist[p], 3)} → {fmt(dist[q], 3)}", f"{fmt(cos[p], 3)} → {fmt(cos[q], 3)}",
             f"{fmt(od[p], 3)} → {fmt(od[q], 3)}, {fmt(oc[p], 3)} → {fmt(oc[q], 3)}"]
            for p, q, dist, cos, od, oc in _ref10_breaks()]
    return Table([f"one step closer to {ref} · 向 {ref} 靠近一步", "distance (source) · 距离（原始资料）",
                  "cosine (source) · 余弦（原始资料）",
                  f"recomputed, d_model = {ref10_d_model()} · 重算"], rows,
                 f"closer to position {ref}, yet less similar · 离位置 {ref} 更近，相似度反而更低")


def _ref10_monotone_details():
    breaks = _ref10_breaks()
    (p0, p1, dist, cos, _, _), (q0, q1) = breaks[0], breaks[-1][:2]
    return {"claim": _statement(_src.PE_REF10_OBSERVATION), "ref": str(_src.PE_REF10["reference"]),
            "p0": str(p0), "p1": str(p1), "q0": str(q0), "q1": str(q1),
            "d0": fmt(dist[p0], 3), "d1": fmt(dist[p1], 3), "c0": fmt(cos[p0], 3), "c1": fmt(cos[p1], 3),
            "d": str(ref10_d_model())}


def _test3_rows():
    dims = _src.PE_TEST["dims"]
    printed_rows = len(EXAMPLES["pe_test"][1]["claims"]["dims"].printed) // len(dims)
    promised = int(re.search(r"前(\d+)个位置", _src.PE_TEST3_HEADING).group(1))
    return dims, printed_rows, promised


def _test3_evidence() -> Table:
    dims, printed_rows, promised = _test3_rows()
    d = _src.PE_TEST["d_model"]
    pe = sinusoidal_positional_encoding(promised, d)
    rows = [[f"pos_{p}"] + [fmt(pe[p, j], 3) for j in dims] for p in range(printed_rows, promised)]
    return Table(["position · 位置"] + [f"dim_{j}" for j in dims], rows,
                 f"rows printed: pos_0 … pos_{printed_rows - 1}; the rows the heading promises and the log "
                 f"leaves out, d_model = {d} · 标题承诺而日志缺少的行")


def _test3_details():
    dims, printed_rows, promised = _test3_rows()
    return {"heading": _src.PE_TEST3_HEADING.rstrip(":"), "rows": str(printed_rows),
            "promised": str(promised), "last": str(printed_rows - 1),
            "last_promised": str(promised - 1),
            "d": str(_src.PE_TEST["d_model"])}


ERRATA += [
    Erratum(
        "ch04-demo-frequency", CH04, None, None,
        "“{claim}” has it backwards: the frequency falls from left to right",
        "“{claim}”说反了：从左到右，频率越来越低",
        "The demo's table has d_model = {d}. Columns 2i and 2i+1 oscillate with the frequency "
        "ω_i = {base}^(−2i/d_model), which is {omegas} for i = 0, …, {last}: each pair turns "
        "{ratio} times more slowly than the pair before it. So from left to right the waves get "
        "slower, not faster, and the wavelength grows from {wl0} to {wl_last} positions. The "
        "source's own table shows it: over positions 0–{p_last} the first sine column swings "
        "between {lo} and {hi}, while the last one creeps from 0 to {end}. Read the right way "
        "round, this is the point of the encoding: the fast columns on the left tell neighbouring "
        "positions apart, the slow ones on the right tell distant ones apart.",
        "演示表的 d_model = {d}。第 2i 列和第 2i+1 列以频率 ω_i = {base}^(−2i/d_model) 振荡，"
        "i = 0, …, {last} 时依次为 {omegas}：每一对的频率都只有前一对的 1/{ratio}。所以从左到右，"
        "波动越来越慢，而不是越来越快，波长从 {wl0} 个位置增长到 {wl_last} 个位置。原始资料自己的表就说明了"
        "这一点：在位置 0–{p_last} 上，第一个正弦列在 {lo} 与 {hi} 之间来回摆动，最后一个正弦列只从 0 "
        "慢慢增加到 {end}。把方向读对，这正是这种编码的要点：左边变化快的列区分相邻位置，右边变化慢的列"
        "区分相距较远的位置。",
        _demo_frequency_details, evidence=_demo_frequency_evidence, kind="claim"),
    Erratum(
        "ch04-ref10-settings", CH04, None, None,
        "the table against position {ref} cannot come from the demo's “{settings}”",
        "与位置 {ref} 比较的表不可能出自演示的“{settings}”",
        "The demo announces “{settings}”, and its first table has {rows} rows, positions "
        "0–{last_row}. Its last table compares positions 0–{last} with position {ref}: with "
        "max_len = {max_len} those positions do not exist (taking row {ref} raises {error}). Nor can "
        "the numbers come from d_model = {d}, whatever the length: every sinusoidal vector has "
        "length √(d_model/2), so no two are more than {cap} apart, yet the table prints distances "
        "up to {printed_max}. Of all even widths from {lo_w} to {hi_w}, exactly one reproduces every "
        "printed distance and cosine: d_model = {found}, with at least {need} positions. The table "
        "is right for that width (chapter 4 compares it entry by entry); the settings printed "
        "above it are not the ones that made it.",
        "演示声明“{settings}”，它的第一张表也正好有 {rows} 行，即位置 0–{last_row}。可它最后一张表把"
        "位置 0–{last} 与位置 {ref} 比较：max_len = {max_len} 时这些位置根本不存在（取第 {ref} 行会抛出 "
        "{error}）。不管长度多少，这些数字也不可能来自 d_model = {d}：每个正弦位置向量的长度都是 "
        "√(d_model/2)，任意两个向量的距离都不超过 {cap}，表中打印的距离却高达 {printed_max}。在 {lo_w} 到 "
        "{hi_w} 的所有偶数宽度中，恰好只有一个能重现全部打印的距离和余弦：d_model = {found}，且至少要有 "
        "{need} 个位置。对这个宽度来说表是对的（第 4 章逐项比对过）；错的是表上方打印的参数，它们并不是"
        "生成这张表的参数。",
        _ref10_settings_details, evidence=_ref10_settings_evidence, kind="claim"),
    Erratum(
        "ch04-ref10-monotone", CH04, None, None,
        "“{claim}” is contradicted by the table it sums up",
        "“{claim}”与它所总结的表相矛盾",
        "Position {p1} is one step closer to position {ref} than position {p0}, yet the source's own "
        "table gives it a larger distance ({d1} against {d0}) and a smaller cosine ({c1} against "
        "{c0}); the same happens on the other side, from {q0} to {q1}. The numbers are right "
        "(recomputed at d_model = {d}, last column); the rule is not. The similarity of two "
        "positions k apart is a sum of cosines cos(kω_i) of different frequencies, and the fast "
        "ones have already turned past their minimum, so it does not fall monotonically with k. "
        "What holds is a trend: near positions are much more alike than far ones.",
        "位置 {p1} 比位置 {p0} 离位置 {ref} 近一步，原始资料自己的表却给它更大的距离（{d1}，位置 {p0} 是 "
        "{d0}）和更小的余弦（{c1}，位置 {p0} 是 {c0}）；另一侧从 {q0} 到 {q1} 也是如此。数字本身没错（在 d_model = {d} 下"
        "重算，见最后一列），错的是这条规律。相距 k 的两个位置的相似度是不同频率的余弦 cos(kω_i) 之和，"
        "其中频率高的几项早已越过了最低点，所以相似度并不随 k 单调下降。成立的只是一个趋势：近处的位置"
        "比远处的相似得多。",
        _ref10_monotone_details, evidence=_ref10_monotone_evidence, kind="claim"),
    Erratum(
        "ch04-test3-rows", CH04, None, None,
        "the heading “{heading}” stands over {rows} positions",
        "标题“{heading}”下只有 {rows} 个位置",
        "Test 3's heading promises the first {promised} positions, but the table under it stops at "
        "pos_{last}: {rows} rows. The values it does print are right (chapter 4 finds the width "
        "that reproduces them, d_model = {d}); only the count in the heading is not. A reader who "
        "looks for positions {rows} to {last_promised} will not find them; they are computed above.",
        "测试 3 的标题承诺给出前 {promised} 个位置，下面的表却在 pos_{last} 处结束，只有 {rows} 行。"
        "打印出来的值都是对的（第 4 章找到了能重现它们的宽度 d_model = {d}），不对的只是标题里的行数。"
        "读者在日志里找不到位置 {rows} 到 {last_promised}；上面把这些行算了出来。",
        _test3_details, evidence=_test3_evidence, kind="claim"),
]
