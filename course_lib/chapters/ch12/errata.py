"""Errata of chapter 12 (speech): the source's ``SpeechTransformer`` listing, run."""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import torch
from torch import nn

from ...display import Table
from ...models.speech import SpeechTransformer
from ...scratch.positional import sinusoidal_positional_encoding
from .._errata import Erratum
from .source import SourceSpeechTransformer

__all__ = ["ERRATA", "SMALL", "source_model", "source_error", "future_dependence", "frame_order_dependence"]

CH10 = "book/ch12_speech"

#: A small configuration of the source's class (its 6 + 6 layers and 8 heads kept), cheap on a CPU.
SMALL = dict(input_dim=40, vocab_size=15, d_model=64)


def source_model(embed_text: bool = False, positions: bool = False) -> SourceSpeechTransformer:
    """The source's model (``SMALL``, seed 0, float64, eval mode), optionally patched (chapter 12).

    Args:
        embed_text: add the missing ``embed_text`` as a plain ``nn.Embedding``, and nothing else.
        positions: also add sinusoidal positions to the projected frames (the fix of
            ``ch10-speech-no-positions``).
    """
    with warnings.catch_warnings(), torch.random.fork_rng():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = SourceSpeechTransformer(**SMALL)
        if embed_text:
            model.embed_text = nn.Embedding(SMALL["vocab_size"], SMALL["d_model"])
    if positions:
        model.input_proj = _WithPositions(model.input_proj)
    return model.double().eval()


class _WithPositions(nn.Module):
    """``proj(x) + PE``: sinusoidal positions (chapter 4) on sequence-first frames ``(T, B, ·)``."""

    def __init__(self, proj: nn.Linear):
        super().__init__()
        self.proj = proj
        self.register_buffer("pe", torch.from_numpy(sinusoidal_positional_encoding(64, proj.out_features)))

    def forward(self, x):                                        # (T, B, input_dim)
        return self.proj(x) + self.pe[:x.shape[0], None, :]      # (T, B, d_model) + (T, 1, d_model)


def _inputs(T: int = 12, B: int = 2, L: int = 5):
    g = torch.Generator().manual_seed(0)
    frames = torch.randn(T, B, SMALL["input_dim"], generator=g, dtype=torch.float64)   # (T, B, n_mels)
    tokens = torch.randint(3, SMALL["vocab_size"], (L, B), generator=g)               # (L, B)
    return frames, tokens


@lru_cache(maxsize=None)
def source_error(with_tokens: bool) -> str:
    """The exception the source's model raises, in training mode (tokens given) or inference mode."""
    frames, tokens = _inputs()
    try:
        with torch.no_grad():
            source_model()(frames, tokens if with_tokens else None)
    except AttributeError as err:
        return f"AttributeError: {err}"
    return "no error"


@torch.no_grad()
def future_dependence(masked: bool) -> bool:
    """Does the decoder's output at position 0 change when only the token at position 3 changes?

    The source's model with ``embed_text`` added; ``masked=True`` passes the causal
    ``tgt_mask`` the listing forgets.
    """
    model = source_model(embed_text=True)
    frames, tokens = _inputs()
    other = tokens.clone()
    other[3] = (other[3] + 1 - 3) % (SMALL["vocab_size"] - 3) + 3                      # a different token at t = 3
    mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[0], dtype=torch.float64) if masked else None

    def out(tok):                                                                     # (L, B, vocab)
        if not masked:
            return model(frames, tok)                                                 # the source's forward
        return model.output_proj(model.decoder(model.embed_text(tok), model.encoder(model.input_proj(frames)),
                                               tgt_mask=mask))
    return not torch.allclose(out(tokens)[0], out(other)[0], rtol=0, atol=1e-9)


@torch.no_grad()
def frame_order_dependence(positions: bool) -> bool:
    """Do the logits change when the speech frames are shuffled? (source's model, ``embed_text`` added)."""
    model = source_model(embed_text=True, positions=positions)
    frames, tokens = _inputs()
    perm = torch.randperm(frames.shape[0], generator=torch.Generator().manual_seed(1))
    return not torch.allclose(model(frames, tokens), model(frames[perm], tokens), rtol=0, atol=1e-9)


@lru_cache(maxsize=1)
@torch.no_grad()
def course_model_checks() -> dict:
    """The same three checks on the course's :class:`~course_lib.models.speech.SpeechTransformer` (random weights)."""
    torch.manual_seed(0)
    model = SpeechTransformer(n_mels=SMALL["input_dim"], vocab_size=SMALL["vocab_size"], d_model=64,
                              num_heads=8).double().eval()
    frames, tokens = _inputs(T=24)
    frames, tokens = frames.transpose(0, 1), tokens.T                                  # (B, T, n_mels), (B, L)
    lengths = torch.full((frames.shape[0],), frames.shape[1])
    other = tokens.clone()
    other[:, 3] = (other[:, 3] + 1 - 3) % (SMALL["vocab_size"] - 3) + 3
    perm = torch.randperm(frames.shape[1], generator=torch.Generator().manual_seed(1))
    a = model(frames, lengths, tokens)
    return {"methods": hasattr(model, "embed_text") and hasattr(model, "generate_text"),
            "future": not torch.allclose(a[:, 0], model(frames, lengths, other)[:, 0], rtol=0, atol=1e-9),
            "order": not torch.allclose(a, model(frames[:, perm], lengths, tokens), rtol=0, atol=1e-9)}


def _yes_no(flag: bool) -> str:
    """A fact that may be "no" in words (CONTRIBUTING.md, *What the reader sees*): never a bare True/False."""
    return "yes · 是" if flag else "no · 否"


def _methods_evidence() -> Table:
    return Table(["call (small config) · 调用（小配置）", "what happens · 结果"], [
        ["model(frames, tokens)  # training · 训练", source_error(True)],
        ["model(frames)  # inference · 推理", source_error(False)],
        ["course SpeechTransformer has both · 本书的 SpeechTransformer 两者都有",
         _yes_no(course_model_checks()["methods"])]])


def _mask_evidence() -> Table:
    return Table(["decoder · 解码器", "output at t = 0 changes with the token at t = 3 · 位置 0 的输出随位置 3 的词元变化"], [
        ["as printed (embed_text added) · 原始资料的写法（补上 embed_text）", _yes_no(future_dependence(False))],
        ["with tgt_mask (causal) · 加上因果 tgt_mask", _yes_no(future_dependence(True))],
        ["course SpeechTransformer · 本书的 SpeechTransformer", _yes_no(course_model_checks()["future"])]])


def _positions_evidence() -> Table:
    return Table(["model · 模型", "logits change when the frames are shuffled · 打乱帧后 logits 改变"], [
        ["as printed (embed_text added) · 原始资料的写法（补上 embed_text）", _yes_no(frame_order_dependence(False))],
        ["with sinusoidal positions on the frames · 给帧加上正弦位置编码", _yes_no(frame_order_dependence(True))],
        ["course SpeechTransformer · 本书的 SpeechTransformer", _yes_no(course_model_checks()["order"])]])


def _sizes() -> dict:
    frames, tokens = _inputs()
    return {"T": frames.shape[0], "L": tokens.shape[0], "d_k": SMALL["d_model"] // 8,
            "perm": f"{math.factorial(frames.shape[0]):,}"}


ERRATA = [
    Erratum(
        "ch10-speech-missing-methods", CH10, None, None,
        "the source's SpeechTransformer calls embed_text and generate_text, which it never defines",
        "原始资料中的 SpeechTransformer 调用了从未定义的 embed_text 和 generate_text",
        "forward uses self.embed_text(text_tokens) in training and self.generate_text(speech_encoded) "
        "in inference, but the class defines neither (nn.Module does not provide them), so both modes "
        "stop with an AttributeError before any attention is computed. A fix needs a token embedding "
        "(scaled by sqrt(d_model), plus positions) and a decoding loop that feeds each predicted token "
        "back in until <eos>; the course's SpeechTransformer has embed_text and generate_text (greedy).",
        "forward 在训练时调用 self.embed_text(text_tokens)，在推理时调用 self.generate_text(speech_encoded)，"
        "但这个类两者都没有定义（nn.Module 也不提供），所以两种模式都在计算任何注意力之前就以 AttributeError "
        "终止。修正需要一个词元嵌入（乘以 sqrt(d_model) 再加上位置编码），以及一个把每个预测出的词元喂回解码器、"
        "直到 <eos> 的解码循环；本书的 SpeechTransformer 提供了 embed_text 和 generate_text（贪心解码）。",
        _sizes, evidence=_methods_evidence),
    Erratum(
        "ch10-speech-no-mask", CH10, None, None,
        "the source's decoder has no causal mask: in training each position sees the tokens after it",
        "原始资料中的解码器没有因果掩码：训练时每个位置都能看到它后面的词元",
        "self.decoder(text_embedded, speech_encoded) passes no tgt_mask, so the decoder's self-attention "
        "lets position t read every target token, including t + 1, the very token it must predict. With "
        "embed_text added, the output at position 0 changes when only the token at position 3 changes "
        "(above, {L} tokens). Teacher-forced training can then copy the answer and its loss says nothing "
        "about decoding, where the future tokens do not exist yet. Fix: "
        "tgt_mask=nn.Transformer.generate_square_subsequent_mask(L), as in chapter 5.",
        "self.decoder(text_embedded, speech_encoded) 没有传入 tgt_mask，解码器的自注意力于是让位置 t "
        "读到所有目标词元，包括它要预测的 t + 1。补上 embed_text 后，只改变位置 3 的词元，位置 0 的输出就会改变"
        "（上表，{L} 个词元）。教师强制训练因此可以直接抄答案，它的损失对解码毫无意义——解码时后面的词元还不存在。"
        "修正：像第 5 章那样传入 tgt_mask=nn.Transformer.generate_square_subsequent_mask(L)。",
        _sizes, evidence=_mask_evidence),
    Erratum(
        "ch10-speech-no-positions", CH10, None, None,
        "nothing tells the source's model the order of the frames",
        "原始资料中的模型不知道帧的先后顺序",
        "The frames go through input_proj and straight into the encoder, with no positional encoding. "
        "Self-attention without positions is permutation-equivariant: shuffling the {T} frames shuffles the "
        "encoder's outputs the same way, and the decoder's cross-attention, a weighted sum over frames, does "
        "not see the order at all. So the logits are the same for all {perm} orders of the frames: '3 1' and "
        "'1 3' sound alike to this model. Fix: add positions to the projected frames (sinusoidal, chapter 4); "
        "the course's model also subsamples with strided convolutions, which see neighbouring frames in order.",
        "帧经过 input_proj 后直接进入编码器，没有任何位置编码。没有位置信息的自注意力是置换等变的："
        "把 {T} 个帧打乱，编码器的输出也以同样方式被打乱；而解码器的交叉注意力是对帧的加权求和，完全看不到顺序。"
        "因此这 {T} 个帧的全部 {perm} 种排列给出相同的 logits：对这个模型来说，“3 1”和“1 3”听起来一样。"
        "修正：给投影后的帧加上位置编码（正弦位置编码，第 4 章）；本书的模型还用带步幅的卷积做下采样，"
        "卷积按顺序看相邻的帧。",
        _sizes, evidence=_positions_evidence),
]
