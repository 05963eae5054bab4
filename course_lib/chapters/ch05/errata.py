"""Errata of chapter 5 (the full Transformer)."""

from __future__ import annotations

import torch

from ...display import Table
from ...labs.translation import TGT_VOCAB
from .source import TRANSLATION, SourceEncoderLayer
from .._errata import Erratum

__all__ = ["ERRATA", "padding_changes_outputs"]

CH05 = "book/ch05_transformer"


def _token_evidence() -> Table:
    vocab = set(TGT_VOCAB.values())
    printed = []
    for _, tokens in TRANSLATION["test_cases"]:
        printed += [t for t in tokens if t not in printed]
    rows = [[repr(t), "✓" if t in vocab else "✗ not in vocabulary · 不在词表中"] for t in printed]
    return Table(["printed token · 打印的词元", "in the target vocabulary? · 在目标词表中？"], rows,
                 "tokens of 测试用例 1–4 against {0: <PAD>, 1: A, …, 6: <SOS>, 7: <EOS>}")


@torch.no_grad()
def padding_changes_outputs(n_real: int = 3, n_pad: int = 2, d_model: int = 16, seed: int = 0) -> float:
    """Largest change of the real tokens' outputs of :class:`SourceEncoderLayer`
    when ``n_pad`` padding vectors (zeros, as ``nn.Embedding(padding_idx=0)``
    gives) are appended to a sequence of ``n_real`` tokens."""
    torch.manual_seed(seed)
    layer = SourceEncoderLayer(d_model, 2, 2 * d_model).eval()
    x = torch.randn(n_real, 1, d_model)                       # (L, B, d_model)
    padded = torch.cat([x, torch.zeros(n_pad, 1, d_model)])
    return float((layer(padded)[:n_real] - layer(x)).abs().max())


def _mask_evidence(n_real: int = 3, n_pad: int = 2) -> str:
    delta = padding_changes_outputs(n_real, n_pad)
    return (f"SourceEncoderLayer: {n_real} real tokens, then {n_pad} padding vectors appended\n"
            f"源代码的编码器层：{n_real} 个真实词元，再追加 {n_pad} 个填充向量\n"
            f"outputs of the {n_real} real tokens change · 真实词元的输出改变了: {delta > 1e-3}")


def _vocab_details():
    ids = {t: i for i, t in TGT_VOCAB.items()}
    return {"sos": str(ids["<SOS>"]), "eos": str(ids["<EOS>"])}


ERRATA = [
    Erratum(
        "ch05-sos-token", CH05, None, None,
        "the log prints '< SOS >', a token that is not in its vocabulary",
        "日志打印的 '< SOS >' 不在它自己的词表中",
        "The target vocabulary maps id {sos} to <SOS> and id {eos} to <EOS>, and decoding maps ids "
        "back to those strings, so every printed translation must start with '<SOS>' — as it ends "
        "with '<EOS>'. '< SOS >', with spaces, cannot come out of that vocabulary: the log "
        "was edited by hand or printed from another vocabulary. Our reproduction prints "
        "'<SOS>'.",
        "目标词表把 id {sos} 映射为 <SOS>、id {eos} 映射为 <EOS>，解码时把 id 映射回这些字符串，所以每个打印的译文都应以 "
        "'<SOS>' 开头——正如它们以 '<EOS>' 结尾。带空格的 '< SOS >' 不可能出自这个词表：日志要么被手工"
        "改过，要么来自另一个词表。我们的重现打印 '<SOS>'。",
        _vocab_details, evidence=_token_evidence, kind="claim"),
    Erratum(
        "ch05-encoder-no-mask", CH05, None, None,
        "the source's encoder layer is a simplified illustration: it takes no padding mask",
        "原文的编码器层是简化的示意：它不接受填充掩码",
        "The encoder layer of the source's §3.4 shows the structure of a layer (attention, then "
        "the feed-forward network, each with a residual connection and layer normalisation), and "
        "it is right as such. It is deliberately minimal: self_attn(src, src, src) gets no "
        "key_padding_mask, and its forward has no mask argument. So it is fine for one sentence "
        "or sentences of equal length, but in a batch of sentences of "
        "different lengths the real tokens attend to the padding, and a sentence's "
        "encoding changes with the amount of padding around it (shown above on a seeded "
        "layer). The fix is a padding mask, True on real tokens: course_lib's EncoderLayer "
        "takes one, and the chapter shows the outputs no longer change. A caveat, not an error.",
        "原文 §3.4 的编码器层展示了一层的结构（先注意力，再前馈网络，各带残差连接与层归一化），"
        "就此而言它是对的。它有意写得很简洁：调用 self_attn(src, src, src) 时没有传 key_padding_mask，其 forward "
        "也没有掩码参数。因此它适用于单个句子或等长的句子，但在一批长度不同的句子里，真实词元会关注填充位置，一个句子的编码会随它周围"
        "填充的多少而改变（上面在一个设定了种子的层上演示）。解决办法是填充掩码，真实词元处为 True："
        "course_lib 的 EncoderLayer 接受掩码，本章展示了加掩码后输出不再改变。这是一个提醒，而不是错误。",
        evidence=_mask_evidence, kind="note"),
]

# --- Found by running the source documents' listings (appendix "Source listings") ---
from .. import listings_evidence as _lx  # noqa: E402

LISTINGS = "book/appendix/listings"

ERRATA += [
    Erratum(
        "ch05-multirep-block-autograd", LISTINGS, None, None,
        "the multi-representation TransformerBlock computes attention outside autograd",
        "多表征原文的 TransformerBlock 在 autograd 之外计算注意力",
        "TransformerBlock (the source's §1.2 Python listing) mixes a NumPy MultiHeadAttention into a "
        "PyTorch block: x.detach().numpy() cuts the graph, and torch.FloatTensor(attn_output) "
        "comes back as a constant. Its {arrays} attention matrices are NumPy arrays that no "
        "optimiser can reach, and the gradient with respect to the input misses the attention "
        "path: along one direction autograd gives {auto}, finite differences {fd}. The class is "
        "not an nn.Module either, so .eval() does not exist and its dropout stays on: two calls "
        "on one input differ. Write the attention with torch operations inside an nn.Module "
        "(course_lib.models.attention.MultiHeadAttention).",
        "TransformerBlock（原文 §1.2 的 Python 代码）把 NumPy 实现的 MultiHeadAttention 混进 PyTorch 模块："
        "x.detach().numpy() 切断了计算图，torch.FloatTensor(attn_output) 回来时只是一个常量。它的 {arrays} 个"
        "注意力矩阵是任何优化器都碰不到的 NumPy 数组，对输入的梯度也漏掉了注意力这条路径：沿同一方向，"
        "autograd 给出 {auto}，有限差分给出 {fd}。这个类也不是 nn.Module，没有 .eval()，dropout 一直开着："
        "同一输入调用两次结果不同。应在 nn.Module 里用 torch 运算写注意力"
        "（course_lib.models.attention.MultiHeadAttention）。",
        _lx.block_autograd_details, evidence=_lx.block_autograd, kind="code"),
    Erratum(
        "ch05-multirep-encoder-standalone", LISTINGS, None, None,
        "the multi-representation encoder listing uses a class it does not define",
        "多表征原文的编码器代码用到了它没有定义的类",
        "The §2.2 listing starts with its own imports, as if complete, but "
        "TransformerEncoderLayer builds a MultiHeadAttention that only the §1.2 listing defines. "
        "Run alone it stops with {error}. Run after §1.2 in one session it works, and its layer "
        "then computes the same as course_lib.scratch.encoder_layer (tested in "
        "tests/chapters/test_listings.py).",
        "§2.2 的代码以自己的 import 开头，看上去是完整的，但 TransformerEncoderLayer 构造的 "
        "MultiHeadAttention 只在 §1.2 的代码里定义。单独运行会停在 {error}。在同一会话中先运行 §1.2 再运行它"
        "则可以运行，其编码器层的结果与 course_lib.scratch.encoder_layer 相同（见 "
        "tests/chapters/test_listings.py）。",
        _lx.encoder_standalone_details, evidence=_lx.encoder_standalone, kind="code"),
]
