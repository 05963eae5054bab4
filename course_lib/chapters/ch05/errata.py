"""Errata of chapter 5 (the full Transformer)."""

from __future__ import annotations

import torch

from ...display import Table
from ...labs.translation_data import TGT_VOCAB
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
            f"do the outputs of the {n_real} real tokens change (max |Δ| > 1e-3)? · "
            f"真实词元的输出改变了吗？ {'yes · 是' if delta > 1e-3 else 'no · 否'}")


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
        "原始资料的编码器层是简化的示意：它不接受填充掩码",
        "The encoder layer of the source's §3.4 shows the structure of a layer (attention, then "
        "the feed-forward network, each with a residual connection and layer normalisation), and "
        "it is right as such. It is deliberately minimal: self_attn(src, src, src) gets no "
        "key_padding_mask, and its forward has no mask argument. The source never runs it on a padded batch. It is fine for one sentence "
        "or sentences of equal length, but in a batch of sentences of "
        "different lengths the real tokens attend to the padding, and a sentence's "
        "encoding changes with the amount of padding around it (shown above on a seeded "
        "layer). The fix is a padding mask that marks the real tokens: course_lib's EncoderLayer "
        "takes one, and the chapter shows the outputs no longer change. A caveat, not an error.",
        "原始资料 §3.4 的编码器层展示了一层的结构（先注意力，再前馈网络，各带残差连接与层归一化），"
        "就此而言它是对的。它有意写得很简洁：调用 self_attn(src, src, src) 时没有传 key_padding_mask，其 forward "
        "也没有掩码参数。原始资料也从未在填充过的批次上运行它。它适用于单个句子或等长的句子，但在一批长度不同的句子里，真实词元会关注填充位置，一个句子的编码会随它周围"
        "填充的多少而改变（上面在一个设定了种子的层上演示）。解决办法是用填充掩码标出真实词元："
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
        "多表征示例的 TransformerBlock 在 autograd 之外计算注意力",
        "TransformerBlock (the source's §1.2 Python listing) mixes a NumPy MultiHeadAttention into a "
        "PyTorch block: x.detach().numpy() cuts the graph, and torch.FloatTensor(attn_output) "
        "comes back as a constant. Its {arrays} attention matrices are NumPy arrays that no "
        "optimiser can reach, and the gradient with respect to the input misses the attention "
        "path: along one direction autograd gives {auto}, finite differences {fd}. The class is "
        "not an nn.Module either, so .eval() does not exist and its dropout stays on: two calls "
        "on one input differ. Write the attention with torch operations inside an nn.Module "
        "(course_lib.models.attention.MultiHeadAttention).",
        "TransformerBlock（原始资料 §1.2 的 Python 代码）把 NumPy 实现的 MultiHeadAttention 混进 PyTorch 模块："
        "x.detach().numpy() 切断了计算图，torch.FloatTensor(attn_output) 回来时只是一个常量。它的 {arrays} 个"
        "注意力矩阵是任何优化器都碰不到的 NumPy 数组，对输入的梯度也漏掉了注意力这条路径：沿同一方向，"
        "autograd 给出 {auto}，有限差分给出 {fd}。这个类也不是 nn.Module，没有 .eval()，dropout 一直开着："
        "同一输入调用两次结果不同。应在 nn.Module 里用 torch 运算写注意力"
        "（course_lib.models.attention.MultiHeadAttention）。",
        _lx.block_autograd_details, evidence=_lx.block_autograd, kind="code"),
    Erratum(
        "ch05-multirep-encoder-standalone", LISTINGS, None, None,
        "the multi-representation encoder listing uses a class it does not define",
        "多表征示例的编码器代码用到了它没有定义的类",
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

# --- A complete reading of the sources (issue 20): the test's advice and the architecture diagram ---
import re  # noqa: E402

from .._claims import SOURCES  # noqa: E402
from .source import EPOCH_ADVICE  # noqa: E402


def _advice():
    quote = re.search(r"增加训练轮次（如(\d+)轮）", EPOCH_ADVICE)
    log = TRANSLATION["loss_log"]
    ran = TRANSLATION["epochs"]
    assert max(log) == ran
    return quote.group(0), int(quote.group(1)), ran, min(log)


def _advice_evidence() -> Table:
    quote, suggested, ran, first = _advice()
    return Table(["", "source · 原始资料"], [
        ["the log · 日志", f"Epoch {first}/{ran} … Epoch {ran}/{ran}"],
        ["epochs trained · 已训练的轮数", str(ran)],
        ["the advice · 建议", quote],
        ["epochs suggested · 建议的轮数", str(suggested)],
        ["suggested − trained · 建议 − 已训练",
         f"{suggested - ran} {'✗ fewer · 更少' if suggested <= ran else '✓'}"],
    ], "test.py: 用例说明 and its log · 用例说明与日志")


def _advice_details():
    quote, suggested, ran, first = _advice()
    return {"quote": quote, "suggested": str(suggested), "ran": str(ran), "first": str(first),
            "fewer": str(ran - suggested), "advice": EPOCH_ADVICE.rstrip("。")}


#: The decoder blocks of the two encoder–decoder diagrams, in order, as labelled.
_MULTIREP_DEC = ("解码器块1", "解码器块2", "解码器块N")
_CH24_DEC = ("解码器层1", "解码器层2", "解码器层N")


@torch.no_grad()
def torch_cross_attention_inputs(num_layers: int = len(_MULTIREP_DEC)) -> list[tuple[bool, bool]]:
    """For each decoder layer of a small ``torch.nn.Transformer``: do its cross-attention's keys
    and values equal the encoder output, and does layer 1's self-attention read the target?

    Returns ``[(cross K, V == memory, self-attention input == target), ...]`` (the second
    entry is only meaningful for layer 1). The global RNG state is left untouched.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=num_layers,
                                     num_decoder_layers=num_layers, dim_feedforward=16,
                                     dropout=0.0, batch_first=True).eval()
        src, tgt = torch.randn(1, 5, 8), torch.randn(1, 4, 8)
    seen, hooks = {}, []
    for i, layer in enumerate(model.decoder.layers):
        hooks.append(layer.multihead_attn.register_forward_hook(
            lambda m, args, out, i=i: seen.__setitem__(("cross", i), args)))
        hooks.append(layer.self_attn.register_forward_hook(
            lambda m, args, out, i=i: seen.__setitem__(("self", i), args)))
    try:
        memory = model.encoder(src)
        model(src, tgt)
    finally:
        for h in hooks:
            h.remove()
    return [(torch.equal(seen["cross", i][1], memory) and torch.equal(seen["cross", i][2], memory),
             torch.equal(seen["self", i][0], tgt)) for i in range(num_layers)]


def _diagram_evidence() -> Table:
    from ..listings_evidence import mermaid_graph, mermaid_inputs
    labels, edges = mermaid_graph("multirep", 5)
    ids = {lab: n for n, lab in labels.items()}
    torch_rows = torch_cross_attention_inputs()

    def into(node):
        return ", ".join(labels[a] for a, b in edges if b == node) or "nothing · 无"

    rows = []
    for k, (ours, theirs) in enumerate(zip(_MULTIREP_DEC, _CH24_DEC)):
        rows.append([ours, into(ids[ours]), ", ".join(mermaid_inputs("ch24", 6, theirs)),
                     f"cross-attention K, V = encoder output · 交叉注意力的 K、V 是编码器输出: "
                     f"{'yes · 是' if torch_rows[k][0] else 'no · 否'}"])
    cross = next(b for a, b in edges if a == ids[_MULTIREP_DEC[0]] and labels[b] == "多头注意力")
    rows.append([f"{_MULTIREP_DEC[0]} → {labels[cross]} (cross-attention · 交叉注意力)", into(cross),
                 "—", "queries from the decoder, K, V from the encoder · 查询来自解码器，K、V 来自编码器"])
    target = [lab for lab in labels.values() if "目标" in lab]
    labels24, _ = mermaid_graph("ch24", 6)
    rows.append(["target sequence · 目标序列", ", ".join(target) or "not drawn · 没有画出",
                 " → ".join(lab for lab in labels24.values() if lab in ("目标序列", "输出嵌入")),
                 f"tgt enters decoder layer 1 · 目标序列进入解码器第 1 层: "
                 f"{'yes · 是' if torch_rows[0][1] else 'no · 否'}"])
    return Table(["decoder · 解码器", "multi-representation diagram: arrows in · 多表征图：输入箭头",
                  "ch24 encoder–decoder diagram: arrows in · 第24章编码器–解码器图：输入箭头",
                  f"torch.nn.Transformer, {len(torch_rows)} decoder layers (hooks) · 用钩子检查"], rows,
                 "what feeds each decoder block · 每个解码器块的输入")


def _diagram_details():
    multirep_en, _, multirep_zh = SOURCES["multirep"].partition(" / ")
    return {"multirep": multirep_en, "multirep_zh": multirep_zh, "doc": SOURCES["ch24"],
            "doc_zh": SOURCES["ch24"].split(" (")[0]}


ERRATA += [
    Erratum(
        "ch05-epochs-advice", CH05, None, None,
        "“{quote}” would mean fewer epochs: the logged run already trained {ran}",
        "“{quote}”其实是减少：日志中的训练已经跑了 {ran} 轮",
        "The notes of the translation test advise: “{advice}” — if the output is not as expected, "
        "train for more epochs, e.g. {suggested}, or enlarge d_model. But the log printed with "
        "them counts “Epoch {first}/{ran}” up to “Epoch {ran}/{ran}”: the run had already trained "
        "{ran} epochs, so {suggested} would be {fewer} fewer. The advice was probably written for an "
        "earlier version of the script; against this log, more epochs means more than {ran}. "
        "Chapter 5 also shows that the noisy loss log comes from small batches, dropout and a "
        "constant learning rate, which more epochs alone do not fix.",
        "翻译测试的说明建议：“{advice}。”可是与它一起给出的日志从“Epoch {first}/{ran}”一直数到"
        "“Epoch {ran}/{ran}”：训练已经跑了 {ran} 轮，{suggested} 轮反而少了 {fewer} 轮。这条建议大概是为"
        "脚本的早期版本写的；对照这份日志，增加轮次应当是多于 {ran} 轮。第 5 章还表明，损失日志的跳动来自"
        "小批量、dropout 和恒定的学习率，单靠增加轮次解决不了。",
        _advice_details, evidence=_advice_evidence, kind="claim"),
    Erratum(
        "ch05-diagram-decoder", CH05, None, None,
        "the Transformer diagram chains the encoder into the first decoder block and gives the "
        "decoder no target",
        "Transformer 架构图把编码器串到第一个解码器块上，解码器也没有目标序列输入",
        "The architecture diagram of “{multirep}” draws one chain: input embedding, positional "
        "encoding, encoder blocks, then decoder blocks and the output layer. Read as drawn, the "
        "first decoder block takes the last encoder block's output as its input, the other "
        "decoder blocks never see the encoder, and no target sequence enters anywhere, although "
        "each decoder block is drawn with a second attention sublayer (多头注意力), the "
        "cross-attention, which needs the encoder's output. In the Transformer the decoder reads "
        "the target tokens written so far (embedding + positions), and the encoder's output, the "
        "memory, feeds the cross-attention of every decoder block. The other source document, "
        "“{doc}”, draws exactly that (编码器输出 → every 解码器层), and so does PyTorch: in "
        "torch.nn.Transformer every decoder layer's cross-attention gets the encoder output as "
        "keys and values (last column, checked with hooks). Chapter 5's diagram shows the "
        "connections.",
        "《{multirep_zh}》的架构图画成一条链：输入嵌入、位置编码、各编码器块，再接各解码器块和输出层。照图"
        "来读，第一个解码器块以最后一个编码器块的输出为输入，其余解码器块根本看不到编码器，任何地方也"
        "没有目标序列输入。可是图中每个解码器块都画了第二个注意力子层（多头注意力），即交叉注意力，它"
        "需要编码器的输出。在 Transformer 中，解码器读入已经生成的目标词元（嵌入 + 位置编码），编码器的"
        "输出（记忆）则送进每一个解码器块的交叉注意力。另一份原始资料《{doc_zh}》画的正是这样（编码器"
        "输出 → 每个解码器层），PyTorch 也是如此：torch.nn.Transformer 中每个解码器层的交叉注意力都以"
        "编码器输出作为键和值（见最后一列，用钩子检查）。第 5 章的图画出了这些连接。",
        _diagram_details, evidence=_diagram_evidence, kind="claim"),
]
