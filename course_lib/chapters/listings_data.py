"""The verdict on every fenced block of the source documents (see ``listings``).

One ``Listing`` per block of ``data/sources/listings.json``, in snapshot order.
``tests/book/test_source_coverage.py`` fails when a block has no entry here.
"""

from __future__ import annotations

from .listings_verdicts import Listing

__all__ = ["LISTINGS"]

T = "tests/chapters/test_listings.py::"
PORTS = "course_lib/chapters/listings_ports.py"

LISTINGS = (
    # ---- multirep: "Attention Mechanism Multi-Representation Example"
    Listing("multirep", 0, "erratum", ("book/appendix/listings.md#listings-rust",),
            ("ch02-rust-softmax-axis",), evidence=T + "test_rust_port_softmax_by_column",
            note_en="Rust with nalgebra: Debian has no nalgebra package, so it runs as a "
                    "line-by-line NumPy port; with the softmax taken by row, the port equals "
                    "course_lib's multi-head attention.",
            note_zh="Rust + nalgebra：Debian 没有 nalgebra 包，因此以逐行移植的 NumPy 代码运行；"
                    "把 softmax 改为按行之后，移植结果与 course_lib 的多头注意力一致。"),
    Listing("multirep", 1, "erratum", ("book/appendix/listings.md#listings-haskell",),
            ("ch02-haskell-compile", "ch02-haskell-softmax-exp", "ch03-haskell-one-head"),
            evidence=T + "test_haskell_port_example",
            note_en="Haskell with Data.Matrix: Debian has no package for Data.Matrix (and the "
                    "module would not compile); it runs as a line-by-line NumPy port.",
            note_zh="Haskell + Data.Matrix：Debian 没有 Data.Matrix 的包（而且该模块本身无法编译）；"
                    "以逐行移植的 NumPy 代码运行。"),
    Listing("multirep", 2, "erratum", ("book/appendix/listings.md#listings-multirep-python",),
            ("ch05-multirep-block-autograd",), evidence=T + "test_multirep_attention_matches_scratch",
            note_en="SelfAttention and MultiHeadAttention are right (same as course_lib); the "
                    "TransformerBlock is not. Its 'PyTorch verification' compares shapes only.",
            note_zh="SelfAttention 与 MultiHeadAttention 是对的（与 course_lib 相同）；TransformerBlock 不对。"
                    "它的“用 PyTorch 验证”只比较了形状。"),
    Listing("multirep", 3, "diagram", ("book/ch02_worked_qkv.md#The formula",)),
    Listing("multirep", 4, "diagram", ("book/ch03_multi_head.md#A team of experts",)),
    Listing("multirep", 5, "erratum", ("book/ch05_transformer.md#The architecture",),
            ("ch05-diagram-decoder",),
            note_en="The encoder is chained into the first decoder block, and the decoder gets no "
                    "target; chapter 5's diagram connects the memory to every decoder layer.",
            note_zh="编码器被串接到第一个解码器块上，解码器也没有目标序列输入；第 5 章的图把记忆连到"
                    "每个解码器层。"),
    Listing("multirep", 6, "erratum", ("book/appendix/listings.md#listings-multirep-python",),
            ("ch05-multirep-encoder-standalone",), evidence=T + "test_multirep_encoder_alone_raises_after_mha_matches_scratch",
            note_en="Needs the §1.2 listing's MultiHeadAttention; after it, the encoder layer "
                    "equals course_lib.scratch.encoder_layer and the positional encoding equals "
                    "course_lib's.",
            note_zh="需要 §1.2 代码中的 MultiHeadAttention；在它之后运行，编码器层与 "
                    "course_lib.scratch.encoder_layer 相同，位置编码也与 course_lib 的相同。"),
    # ---- ch24: "第24章：Transformer架构详解"
    Listing("ch24", 0, "diagram", ("book/intro.md#Chapter map",),
            note_en="The chapter's topics as an institute's departments; the book's own map is "
                    "the intro's chapter map.",
            note_zh="把本章主题画成研究院的各个部门；本书自己的地图是前言中的章节地图。"),
    Listing("ch24", 1, "ok", ("book/ch02_worked_qkv.md#The formula",),
            evidence=T + "test_ch24_attention_matches_scratch"),
    Listing("ch24", 2, "diagram", ("book/ch02_worked_qkv.md#The formula",)),
    Listing("ch24", 3, "ok", ("book/ch02_worked_qkv.md#The formula",),
            evidence=T + "test_ch24_attention_matches_scratch"),
    Listing("ch24", 4, "erratum", ("book/ch03_multi_head.md#A team of experts",),
            ("ch03-diagram-linear-order",),
            note_en="Each head's linear transformation is drawn after the head; chapter 3's diagram "
                    "puts the projections first.",
            note_zh="每个头的线性变换被画在头之后；第 3 章的图把投影画在前面。"),
    Listing("ch24", 5, "ok", ("book/ch03_multi_head.md#ch03-split-merge",),
            evidence=T + "test_ch24_multi_head_matches_scratch",
            note_en="Has no import of its own: it runs after the chapter's earlier listings.",
            note_zh="自身没有 import：需在本章前面的代码之后运行。"),
    Listing("ch24", 6, "diagram", ("book/ch05_transformer.md#The architecture",)),
    Listing("ch24", 7, "ok", ("book/ch04_positional_encoding.md#The code",),
            evidence=T + "test_ch24_positional_encoding_matches_scratch"),
    Listing("ch24", 8, "ok", ("book/ch05_transformer.md#Building it piece by piece",),
            evidence=T + "test_ch24_encoder_matches_scratch",
            note_en="Post-LN encoder without a padding mask; runs after the earlier listings.",
            note_zh="后归一化的编码器，没有填充掩码；需在前面的代码之后运行。"),
    Listing("ch24", 9, "diagram", ("book/ch10_capstone.md#Capstone: a text-processing platform",)),
    Listing("ch24", 10, "erratum", ("book/ch10_capstone.md#A Transformer sentiment classifier",
                                    "book/ch10_capstone.md#ch10-service"),
            ("ch07-tokenizer", "ch08-untrained"), evidence=T + "test_ch24_platform_runs_as_printed"),
    Listing("ch24", 11, "erratum", ("book/ch10_capstone.md#Quantisation, measured",
                                    "book/ch10_capstone.md#Pruning, measured",
                                    "book/ch10_capstone.md#ch10-service"),
            ("ch08-float32-quant", "ch08-prune-two-arrays", "ch08-size-claims",
             "ch08-benchmark-latency"),
            evidence=T + "test_ch24_optimizer_and_deployment_run"),
    Listing("ch24", 12, "diagram", ("book/intro.md#Chapter map",),
            note_en="A map of another book's chapters 19–27; this book's map is in the intro.",
            note_zh="另一本书第 19–27 章的路线图；本书的路线图在前言中。"),
    Listing("ch24", 13, "ok", (), evidence=T + "test_ch24_skills_dict",
            note_en="A dictionary literal listing skills; it runs and prints nothing.",
            note_zh="一个列出技能的字典字面量；可运行，不打印任何内容。"),
    # ---- pe_tests: the translation and positional-encoding test logs
    Listing("pe_tests", 0, "output", ("book/ch05_transformer.md#The source's translation test",),
            ("ch05-sos-token", "ch05-epochs-advice")),
    Listing("pe_tests", 1, "output", ("book/ch04_positional_encoding.md#Checking the source's logs",),
            ("ch04-length", "ch04-test3-rows", "ch04-pos5-error")),
    Listing("pe_tests", 2, "output", ("book/ch04_positional_encoding.md#Checking the source's logs",),
            ("ch04-demo-frequency", "ch04-ref10-settings", "ch04-ref10-monotone")),
    # ---- attention: "Attention Mechanisms and Transformers"
    Listing("attention", 0, "diagram",
            ("book/ch01_why_attention.md#The encoder-decoder and its bottleneck",),
            note_en="A text illustration: one context vector for the whole sentence.",
            note_zh="文字示意：整个句子只有一个上下文向量。"),
    Listing("attention", 1, "diagram", ("book/ch01_why_attention.md#What attention learned",),
            note_en="A text illustration of alignment; chapter 1 trains a model and shows the "
                    "alignment it learned for this sentence.",
            note_zh="对齐的文字示意；第 1 章训练了一个模型，并展示它为这句话学到的对齐。"),
    Listing("attention", 2, "ok", ("book/ch05_transformer.md#Three masks",),
            ("ch05-encoder-no-mask",), evidence="course_lib/chapters/ch05/source.py::SourceEncoderLayer",
            note_en="Right as an illustration (a note, not an error): it takes no padding mask.",
            note_zh="作为示意是对的（只是说明，不是错误）：它不接受填充掩码。"),
    Listing("attention", 3, "ok", ("book/ch07_bert.md#Fine-tuning from [CLS]",),
            ("ch07-bert-768",), evidence="course_lib/chapters/ch07/source.py::SourceBERTClassifier"),
    Listing("attention", 4, "erratum", ("book/ch08_gpt.md#The source's GPT",),
            ("ch07-gpt-decoder",), evidence="course_lib/chapters/ch08/source.py::SourceGPTGenerator"),
    Listing("attention", 5, "erratum", ("book/ch06_vit.md#The source's code",),
            ("ch06-batch-first", "ch06-code-size"),
            evidence="course_lib/chapters/ch06/source.py::SourceVisionTransformer"),
    Listing("attention", 6, "erratum", ("book/ch12_speech.md",),
            ("ch10-speech-missing-methods", "ch10-speech-no-mask", "ch10-speech-no-positions"),
            evidence="course_lib/chapters/ch12/source.py::SourceSpeechTransformer",
            note_en="Examined and trained from in chapter 12 (speech).",
            note_zh="在第 12 章（语音）中检验，并以它为起点训练模型。"),
)
