"""The source documents and the ``Claim`` of a printed value."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SOURCES", "Claim"]

SOURCES = {
    "attention": "Attention Mechanisms and Transformers / 注意力机制与Transformer",
    "ch24": "第24章：Transformer架构详解 (Transformer architecture in depth)",
    "multirep": "Attention Mechanism Multi-Representation Example / 注意力机制多表征示例",
    "pe_tests": "Translation test and positional-encoding test logs / 翻译与位置编码测试输出",
}

@dataclass(frozen=True)
class Claim:
    """What a source document printed for one step of a worked example.

    Attributes:
        source: key into ``SOURCES``.
        section: where in that document, e.g. ``"§2.3 step 2"``.
        printed: the printed values as strings, in reading order (a scalar
            is a 1-tuple); their decimals set how the book rounds.
    """

    source: str
    section: str
    printed: tuple

    def decimals(self) -> list[int]:
        """Number of decimals of each printed value (``"0.60"`` -> 2)."""
        return [len(p.split(".")[1]) if "." in p else 0 for p in self.printed]
