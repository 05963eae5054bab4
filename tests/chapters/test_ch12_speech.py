"""Chapter 12's errata are confirmed by running the source's SpeechTransformer, and the fixes remove each bug."""

import torch

from course_lib.chapters.ch12 import errata
from course_lib.chapters.ch12.source import SourceSpeechTransformer


def test_missing_methods_raise_attribute_errors():
    assert errata.source_error(True) == ("AttributeError: 'SourceSpeechTransformer' object has no attribute "
                                         "'embed_text'")
    assert errata.source_error(False) == ("AttributeError: 'SourceSpeechTransformer' object has no attribute "
                                          "'generate_text'")
    assert not hasattr(SourceSpeechTransformer, "embed_text") and not hasattr(SourceSpeechTransformer, "generate_text")


def test_without_a_mask_position_0_reads_position_3_and_the_causal_mask_stops_it():
    assert errata.future_dependence(masked=False) is True
    assert errata.future_dependence(masked=True) is False


def test_without_positions_shuffled_frames_give_identical_logits():
    assert errata.frame_order_dependence(positions=False) is False
    assert errata.frame_order_dependence(positions=True) is True
    # By hand: the encoder of the source maps shuffled frames to shuffled outputs (permutation-equivariant).
    model = errata.source_model(embed_text=True)
    frames = torch.randn(10, 2, 40, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        enc = model.encoder(model.input_proj(frames))
        enc_perm = model.encoder(model.input_proj(frames[perm]))
    torch.testing.assert_close(enc_perm, enc[perm], rtol=0, atol=1e-12)


def test_the_course_model_has_none_of_the_three_bugs():
    assert errata.course_model_checks() == {"methods": True, "future": False, "order": True}
