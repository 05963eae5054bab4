"""Chapter 12's code from the source documents: the ``SpeechTransformer`` listing
(source ``"attention"``, §4.3 "Speech Processing: Speech Transformer")."""

from __future__ import annotations

from torch import nn

__all__ = ["SourceSpeechTransformer"]


class SourceSpeechTransformer(nn.Module):
    """The source's ``SpeechTransformer`` (§4.3), verbatim apart from comments.

    Kept as printed so that chapter 12 can run it. It calls ``self.embed_text``
    and ``self.generate_text``, which it never defines; its decoder gets no
    causal mask; nothing gives the frames a position; its layers use PyTorch's
    defaults (``batch_first=False``: inputs ``(T, B, d_model)``). Constructing
    it makes PyTorch warn about nested tensors, so build it inside
    ``warnings.catch_warnings()`` (see :func:`course_lib.chapters.ch12.errata.source_model`).
    """

    def __init__(self, input_dim, vocab_size, d_model=512):
        super().__init__()
        self.input_proj = nn.Linear(input_dim, d_model)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model, nhead=8),
            num_layers=6
        )
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d_model, nhead=8),
            num_layers=6
        )
        self.output_proj = nn.Linear(d_model, vocab_size)

    def forward(self, speech_features, text_tokens=None):
        speech_encoded = self.encoder(self.input_proj(speech_features))

        if text_tokens is not None:  # Training mode
            text_embedded = self.embed_text(text_tokens)
            decoded = self.decoder(text_embedded, speech_encoded)
            return self.output_proj(decoded)
        else:  # Inference mode
            return self.generate_text(speech_encoded)
