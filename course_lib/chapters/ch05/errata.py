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


def _mask_evidence() -> str:
    delta = padding_changes_outputs()
    return ("SourceEncoderLayer: 3 real tokens, then 2 padding vectors appended\n"
            "源代码的编码器层：3 个真实词元，再追加 2 个填充向量\n"
            f"outputs of the 3 real tokens change · 真实词元的输出改变了: {delta > 1e-3}")


ERRATA = [
    Erratum(
        "ch05-sos-token", CH05, None, None,
        "the log prints '< SOS >', a token that is not in its vocabulary",
        "日志打印的 '< SOS >' 不在它自己的词表中",
        "The target vocabulary maps id 6 to <SOS> and id 7 to <EOS>, and decoding maps ids "
        "back to those strings, so every printed translation must start with '<SOS>' — as it ends "
        "with '<EOS>'. '< SOS >', with spaces, cannot come out of that vocabulary: the log "
        "was edited by hand or printed from another vocabulary. Our reproduction prints "
        "'<SOS>'.",
        "目标词表把 id 6 映射为 <SOS>、id 7 映射为 <EOS>，解码时把 id 映射回这些字符串，所以每个打印的译文都应以 "
        "'<SOS>' 开头——正如它们以 '<EOS>' 结尾。带空格的 '< SOS >' 不可能出自这个词表：日志要么被手工"
        "改过，要么来自另一个词表。我们的重现打印 '<SOS>'。",
        evidence=_token_evidence),
    Erratum(
        "ch05-encoder-no-mask", CH05, None, None,
        "the source's encoder layer takes no padding mask",
        "原文的编码器层不接受填充掩码",
        "The encoder layer of the source's §3.4 calls self_attn(src, src, src) with no "
        "key_padding_mask, and its forward has no mask argument. In a batch of sentences of "
        "different lengths, the real tokens then attend to the padding, and a sentence's "
        "encoding changes with the amount of padding around it (shown above on a seeded "
        "layer). The fix is a padding mask, True on real tokens: course_lib's EncoderLayer "
        "takes one, and the chapter shows the outputs no longer change.",
        "原文 §3.4 的编码器层调用 self_attn(src, src, src) 时没有传 key_padding_mask，其 forward "
        "也没有掩码参数。在一批长度不同的句子里，真实词元于是会关注填充位置，一个句子的编码会随它周围"
        "填充的多少而改变（上面在一个设定了种子的层上演示）。解决办法是填充掩码，真实词元处为 True："
        "course_lib 的 EncoderLayer 接受掩码，本章展示了加掩码后输出不再改变。",
        evidence=_mask_evidence),
]
