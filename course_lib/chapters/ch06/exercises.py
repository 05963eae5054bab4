"""Checkers for chapter 6's exercises (``ch06_vit``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`.
"""

from __future__ import annotations

import numpy as np

from .._check import Case, Verdict, check_by_hand, recognise, run_checker

__all__ = ["HAND_CONFIG", "check_patchify", "check_hand_count", "check_pos_embedding_shape",
           "check_clip_loss", "RETRIEVAL", "check_retrieval_by_hand"]

#: The by-hand exercise: ViT-B/16 fine-tuned on larger images.
HAND_CONFIG = {"image_size": 384, "patch_size": 16, "in_channels": 3, "d_model": 768}


def _patchify(images: np.ndarray, P: int) -> np.ndarray:
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 2, 4, 3, 5, 1)
    return x.reshape(B, (H // P) * (W // P), P * P * C)


def _channel_first(images: np.ndarray, P: int) -> np.ndarray:
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // P) * (W // P), C * P * P)


def _column_major(images: np.ndarray, P: int) -> np.ndarray:
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 4, 2, 3, 5, 1)
    return x.reshape(B, (H // P) * (W // P), P * P * C)


def check_patchify(fn) -> Verdict:
    """Check a learner's ``patchify(images, P)`` (chapter 6).

    Args:
        fn: ``fn(images, P)`` with ``images`` a NumPy array ``(B, C, H, W)``,
            returning ``(B, N, P * P * C)``: patches in raster order (left to
            right, then top to bottom), each flattened row by row with the
            ``C`` channel values of a pixel together, as
            :func:`course_lib.models.vit.patchify`.
    """
    rng = np.random.default_rng(6)
    one = np.arange(16.0).reshape(1, 1, 4, 4)
    rgb = rng.normal(size=(2, 3, 6, 6))
    wide = rng.normal(size=(1, 3, 4, 8))

    def typical(images, P):
        def check(got):
            got, right = np.asarray(got, dtype=float), _patchify(images, P)
            if got.shape == right.shape and np.allclose(got, right):
                return None
            swapped = right.transpose(0, 2, 1)
            if got.shape == swapped.shape and np.allclose(got, swapped):
                return ("the last two axes are swapped: return (B, N, P·P·C), one patch per row",
                        "最后两个轴互换了：应返回 (B, N, P·P·C)，每行一个块")
            for wrong, en, zh in (
                    (_channel_first, "each patch is flattened channel first (C, P, P): put the "
                     "C values of one pixel together (P, P, C)",
                     "每个块按通道优先 (C, P, P) 展平了：应把同一像素的 C 个值放在一起 (P, P, C)"),
                    (_column_major, "the patches are in column order: go left to right first, "
                     "then top to bottom", "块的顺序是按列排的：应先从左到右，再从上到下")):
                if got.shape == right.shape and np.allclose(got, wrong(images, P)):
                    return en, zh
            return None
        return check

    cases = [
        Case("one 4 × 4 greyscale image, P = 2", "一张 4 × 4 灰度图，P = 2", (one, 2),
             _patchify(one, 2), "patch 1 is the top-left 2 × 2 block: pixels 0, 1, 4, 5",
             "第 1 个块是左上角的 2 × 2 区域：像素 0、1、4、5", diagnose=typical(one, 2)),
        Case("two RGB 6 × 6 images, P = 3", "两张 RGB 6 × 6 图像，P = 3", (rgb, 3),
             _patchify(rgb, 3), "flatten each patch as (row, column, channel)",
             "每个块按（行、列、通道）展平", diagnose=typical(rgb, 3)),
        Case("a 4 × 8 image (not square), P = 2", "一张 4 × 8 图像（非正方形），P = 2", (wide, 2),
             _patchify(wide, 2), "use H / P rows and W / P columns of patches",
             "块有 H / P 行、W / P 列", diagnose=typical(wide, 2)),
        Case("P = 1: every pixel is a patch", "P = 1：每个像素是一个块", (rgb, 1),
             _patchify(rgb, 1), "with P = 1 there are H · W patches of C values",
             "P = 1 时有 H · W 个块，每块 C 个值", diagnose=typical(rgb, 1)),
    ]
    return run_checker("patchify · 切块", fn, cases)


def check_hand_count(answer) -> Verdict:
    """Check ``[N, sequence length, patch-embedding parameters]`` for ``HAND_CONFIG``.

    Args:
        answer: three numbers computed by hand for a 384 x 384 RGB image cut
            into 16 x 16 patches and projected to ``d_model = 768``: the number
            of patches ``N``, the number of tokens the encoder sees, and the
            parameters (weights and biases) of the patch projection;
            ``...`` means "not answered yet".
    """
    c = HAND_CONFIG
    N = (c["image_size"] // c["patch_size"]) ** 2
    proj = c["patch_size"] ** 2 * c["in_channels"] * c["d_model"] + c["d_model"]
    expected = np.array([N, N + 1, proj], dtype=float)

    def typical(got):
        got = np.asarray(got, dtype=float).ravel()
        if got.size != 3:
            return None
        if got[1] == N:
            return ("the encoder also sees the [CLS] token: the sequence is one longer than N",
                    "编码器还会看到 [CLS] 词元：序列长度比 N 多一")
        if got[2] == proj - c["d_model"]:
            return ("the projection also has a bias of d_model numbers",
                    "投影层还有 d_model 个偏置")
        if got[0] == c["image_size"] // c["patch_size"]:
            return ("that is the number of patches per side; N counts the whole grid",
                    "这是每边的块数；N 是整个网格的块数")
        return None

    case = Case("384 × 384 RGB, 16 × 16 patches, d_model = 768",
                "384 × 384 RGB，16 × 16 的块，d_model = 768", (), expected,
                "N = (384/16)², then add [CLS]; the projection is a (P·P·C) → d_model linear layer",
                "N = (384/16)²，再加上 [CLS]；投影是 (P·P·C) → d_model 的线性层",
                diagnose=typical, atol=0.5, reveal=False)
    return check_by_hand("counting by hand · 手算计数", answer, case)


def check_pos_embedding_shape(fn) -> Verdict:
    """Check ``pos_embedding_shape(image_size, patch_size, d_model)`` (chapter 6).

    Args:
        fn: returns the shape ``(N + 1, d_model)`` of ViT's learned position
            table for a square image, as a tuple of two ints.
    """
    def typical(args):
        image_size, patch_size, d_model = args
        N = (image_size // patch_size) ** 2

        def check(got):
            got = tuple(np.asarray(got).ravel().tolist())
            if got == (N, d_model):
                return ("the [CLS] token has a position too: N + 1 rows",
                        "[CLS] 词元也有位置：共 N + 1 行")
            if got == (image_size // patch_size + 1, d_model):
                return ("N is the number of patches in the whole grid, (H / P)²",
                        "N 是整个网格的块数，(H / P)²")
            if got == (d_model, N + 1):
                return ("rows are positions, columns are features: (N + 1, d_model)",
                        "行是位置，列是特征：(N + 1, d_model)")
            return None
        return check

    configs = [(224, 16, 768), (8, 2, 64), (32, 4, 192), (384, 16, 1024)]
    cases = [Case(f"image {s}, patch {p}, d_model {d}", f"图像 {s}，块 {p}，d_model {d}",
                  (s, p, d), np.array([(s // p) ** 2 + 1, d], dtype=float),
                  "one row per token: the N patches and [CLS]", "每个词元一行：N 个块加 [CLS]",
                  diagnose=typical((s, p, d)))
             for s, p, d in configs]
    return run_checker("position-embedding shape · 位置嵌入的形状", fn, cases)


# ---------------------------------------------------------------- images and words (CLIP)

def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _cross_entropy_rows(S: np.ndarray) -> float:
    """Mean over rows of -log softmax(row)[diagonal], stably."""
    m = S.max(axis=1, keepdims=True)
    logz = (m + np.log(np.exp(S - m).sum(axis=1, keepdims=True))).ravel()
    return float(np.mean(logz - np.diag(S)))


def _clip_parts(u, v, tau):
    S = _unit(u) @ _unit(v).T / tau
    return _cross_entropy_rows(S), _cross_entropy_rows(S.T)


def check_clip_loss(fn) -> Verdict:
    """Check a learner's symmetric InfoNCE loss ``fn(u, v, tau)`` (chapter 6).

    Args:
        fn: takes NumPy arrays ``u`` ``(B, D)`` (images) and ``v`` ``(B, D)``
            (texts, row ``i`` belongs with image ``i``), not yet normalised,
            and the temperature ``tau``; returns the loss of
            :func:`course_lib.models.clip.clip_loss` as one number.
    """
    rng = np.random.default_rng(6)
    hand = (np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.6, 0.8]]), 0.5)
    small = (rng.normal(size=(4, 3)) * 3, rng.normal(size=(4, 3)), 0.1)
    larger = (rng.normal(size=(6, 5)), rng.normal(size=(6, 5)) * 0.2, 0.07)

    def typical(u, v, tau):
        rows, cols = _clip_parts(u, v, tau)
        raw = u @ v.T / tau
        mistakes = [
            (rows, "only the image → text direction: average it with the text → image one (the columns)",
             "只算了图像 → 文本这一个方向：还要与文本 → 图像方向（按列）取平均"),
            (cols, "only the text → image direction: average it with the image → text one (the rows)",
             "只算了文本 → 图像这一个方向：还要与图像 → 文本方向（按行）取平均"),
            (rows + cols, "the two directions are added, not averaged: divide by 2",
             "两个方向相加了，而不是取平均：要除以 2"),
            (0.5 * (_cross_entropy_rows(raw) + _cross_entropy_rows(raw.T)),
             "the embeddings are not normalised: the similarity is the cosine, u and v divided by their lengths",
             "没有把嵌入归一化：相似度是余弦，u 和 v 要先除以各自的长度"),
            (0.5 * sum(_clip_parts(u, v, 1 / tau)),
             "the cosines are multiplied by τ: divide by the temperature",
             "余弦乘以了 τ：应除以温度"),
            (len(u) * (rows + cols) / 2, "the losses of the B pairs are summed: take their mean",
             "把 B 对样本的损失加起来了：应取平均"),
        ]
        return recognise(np.float64(0.5 * (rows + cols)), mistakes, atol=1e-6)

    cases = [Case(en, zh, args, np.float64(0.5 * sum(_clip_parts(*args))), hint_en, hint_zh, diagnose=typical(*args))
             for en, zh, args, hint_en, hint_zh in (
                 ("two pairs, unit vectors, τ = 0.5", "两对，单位向量，τ = 0.5", hand,
                  "S = u vᵀ / τ = [[2, 1.2], [0, 1.6]]; cross-entropy of each row and each column",
                  "S = u vᵀ / τ = [[2, 1.2], [0, 1.6]]；对每一行和每一列求交叉熵"),
                 ("four pairs, not normalised, τ = 0.1", "四对，未归一化，τ = 0.1", small,
                  "normalise the rows of u and v first", "先把 u 和 v 的每一行归一化"),
                 ("six pairs, τ = 0.07", "六对，τ = 0.07", larger,
                  "logits up to 1 / 0.07 ≈ 14: use a stable log-sum-exp",
                  "logits 最大约为 1 / 0.07 ≈ 14：用数值稳定的 log-sum-exp"))]
    return run_checker("symmetric InfoNCE · 对称 InfoNCE", fn, cases)


#: The by-hand retrieval exercise: 3 images, 4 prompts, their similarities (row = image, column = prompt).
RETRIEVAL = {
    "images": ["7", "1", "7"],
    "prompts": ["seven", "一", "七", "one"],
    "image_digits": [7, 1, 7],
    "prompt_digits": [7, 1, 7, 1],
    "similarity": [[0.6, 0.1, 0.8, 0.3],
                   [0.2, 0.7, 0.1, 0.5],
                   [0.4, 0.6, 0.3, 0.55]],
}


def _recall(S: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[float, float]:
    return float(np.mean(cols[S.argmax(1)] == rows)), float(np.mean(rows[S.argmax(0)] == cols))


def check_retrieval_by_hand(answer) -> Verdict:
    """Check ``[image → text recall@1, text → image recall@1]`` for :data:`RETRIEVAL` (chapter 6).

    Args:
        answer: two fractions computed by hand: the share of images whose most
            similar prompt names their digit, and the share of prompts whose
            most similar image shows their digit; ``...`` means "not answered yet".
    """
    S = np.array(RETRIEVAL["similarity"])
    rows, cols = np.array(RETRIEVAL["image_digits"]), np.array(RETRIEVAL["prompt_digits"])
    i2t, t2i = _recall(S, rows, cols)
    by_index = float(np.mean(S.argmax(1) == np.arange(len(S))))
    diagnose = recognise(np.array([i2t, t2i]), [
        ([t2i, i2t], "the two directions are swapped: image → text first, one answer per image (row)",
         "两个方向顺序反了：先写图像 → 文本，每张图像（每一行）一个结果"),
        ([by_index, t2i], "a prompt counts as right when it names the image's digit, not only when it has the "
         "image's index", "只要提示说的是图像中的数字就算对，不必与图像的序号相同"),
        ([i2t, float(np.mean(rows[S.argmin(0)] == cols))], "text → image: take each column's largest similarity",
         "文本 → 图像：取每一列中最大的相似度"),
    ], atol=0.005)
    case = Case("3 images × 4 prompts", "3 张图像 × 4 条提示", (), np.array([i2t, t2i]),
                "for each row take the column with the largest similarity, then for each column the row; "
                "count the matches of digits", "每一行找相似度最大的列，每一列找相似度最大的行；数一数数字相同的有几个",
                diagnose=diagnose, atol=0.005, reveal=False)
    return check_by_hand("retrieval recall@1 by hand · 手算检索 recall@1", answer, case)
