"""The contrastive image-text model of chapter 6: course_lib.models.clip and course_lib.labs.clip."""

import math

import pytest
import torch

from course_lib.labs import clip as lab
from course_lib.models.clip import CLIP, CLIPConfig, TextEncoder, clip_loss, recall_at_1

TINY = dict(vocab_size=12, max_len=8, image_size=4, patch_size=2, in_channels=1, d_model=8, num_heads=2,
            d_ff=16, image_layers=1, text_layers=1, embed_dim=4)


def _ce(logits, right):
    """Cross-entropy of one row of logits, by hand."""
    return -logits[right] + math.log(sum(math.exp(s) for s in logits))


def test_loss_equals_the_formula_by_hand():
    u = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    v = torch.tensor([[1.0, 0.0], [0.6, 0.8]], dtype=torch.float64)        # unit vectors already
    tau = 0.5
    # S = u v^T / tau = [[1, 0.6], [0, 0.8]] / 0.5
    S = [[2.0, 1.2], [0.0, 1.6]]
    rows = _ce(S[0], 0) + _ce(S[1], 1)                                     # image -> text
    cols = _ce([S[0][0], S[1][0]], 0) + _ce([S[0][1], S[1][1]], 1)         # text -> image
    expected = (rows + cols) / 4
    assert clip_loss(u, v, tau).item() == pytest.approx(expected, abs=1e-12)
    # the embeddings are normalised inside: lengths do not matter
    assert clip_loss(3 * u, torch.tensor([[2.0, 0.0], [0.3, 0.4]], dtype=torch.float64), tau).item() \
        == pytest.approx(expected, abs=1e-12)


def test_loss_is_symmetric_and_keeps_the_temperature_gradient():
    g = torch.Generator().manual_seed(0)
    u, v = torch.randn(5, 3, generator=g), torch.randn(5, 3, generator=g)
    assert clip_loss(u, v, 0.1).item() == pytest.approx(clip_loss(v, u, 0.1).item(), abs=1e-6)
    # a one-directional loss would differ here: the two directions are not equal on their own
    S = torch.nn.functional.normalize(u, dim=-1) @ torch.nn.functional.normalize(v, dim=-1).T / 0.1
    one_way = torch.nn.functional.cross_entropy(S, torch.arange(5)).item()
    assert abs(one_way - clip_loss(u, v, 0.1).item()) > 1e-3
    tau = torch.tensor(0.2, requires_grad=True)
    clip_loss(u, v, tau).backward()
    assert tau.grad is not None and tau.grad.item() != 0


def test_perfect_pairs_give_a_low_loss_and_swapped_pairs_a_high_one():
    u = torch.eye(4)
    assert clip_loss(u, u, 0.01).item() < 1e-6
    # every image paired with the wrong text: the right entries are 0, the wrong ones 1/tau
    assert clip_loss(u, u[[1, 2, 3, 0]], 0.01).item() == pytest.approx(100.0, abs=1e-3)


def test_temperature_is_learned_and_clamped():
    model = CLIP(**TINY, temperature=0.07, min_temperature=0.01)
    assert model.temperature().item() == pytest.approx(0.07, rel=1e-6)
    with torch.no_grad():
        model.log_inv_temperature.fill_(math.log(1 / 0.05))
    assert model.temperature().item() == pytest.approx(0.05, rel=1e-6)
    with torch.no_grad():
        model.log_inv_temperature.fill_(10.0)                             # tau = e^-10 asked for
    assert model.temperature().item() == pytest.approx(0.01, rel=1e-6)
    ids = torch.tensor([[1, 5, 2, 0]])
    images = torch.randn(1, 1, 4, 4)
    logits = model(images, ids)
    cos = (model.encode_image(images) * model.encode_text(ids)).sum()
    assert logits.item() == pytest.approx(cos.item() * 100, rel=1e-5)     # at most 100 x the cosine


def test_model_logits_and_loss_agree_with_clip_loss():
    torch.manual_seed(0)
    model = CLIP(**TINY)
    images, ids = torch.randn(3, 1, 4, 4), torch.tensor([[1, 4, 2, 0], [1, 5, 6, 2], [1, 7, 2, 0]])
    u, v = model.encode_image(images), model.encode_text(ids)
    assert u.shape == (3, 4) and torch.allclose(u.norm(dim=-1), torch.ones(3))
    assert torch.allclose(model(images, ids), u @ v.T / model.temperature())
    assert model.loss(images, ids).item() == pytest.approx(clip_loss(u, v, model.temperature()).item(), abs=1e-6)


def test_text_encoder_ignores_padding():
    torch.manual_seed(0)
    enc = TextEncoder(vocab_size=10, max_len=8, d_model=8, num_heads=2, d_ff=16, num_layers=2).eval()
    short = torch.tensor([[1, 4, 5, 2]])
    padded = torch.tensor([[1, 4, 5, 2, 0, 0, 0]])
    assert torch.allclose(enc(short), enc(padded), atol=1e-6)


def test_recall_at_1_on_a_case_built_by_hand():
    image_labels = torch.tensor([0, 1, 2])
    text_labels = torch.tensor([0, 1, 2, 2])
    S = torch.tensor([[0.9, 0.1, 0.0, 0.2],      # image 0 -> text 0 (digit 0): right
                      [0.0, 0.3, 0.8, 0.95],     # image 1 -> text 3 (digit 2): wrong
                      [0.1, 0.5, 0.9, 0.1]])     # image 2 -> text 2 (digit 2): right
    # columns: text 0 -> image 0 right; text 1 -> image 2 wrong; text 2 -> image 2 right; text 3 -> image 1 wrong
    assert recall_at_1(S, image_labels, text_labels) == (pytest.approx(2 / 3), pytest.approx(2 / 4))


@pytest.mark.parametrize("call, error, match", [
    (lambda: clip_loss([[1.0]], torch.ones(2, 2), 0.1), TypeError, "image_emb must be a torch.Tensor"),
    (lambda: clip_loss(torch.ones(2, 3), torch.ones(2, 2), 0.1), ValueError, "image_emb and text_emb must have"),
    (lambda: clip_loss(torch.ones(2, 2), torch.ones(2), 0.1), ValueError, "text_emb must have 2 dimensions"),
    (lambda: clip_loss(torch.ones(1, 2), torch.ones(1, 2), 0.1), ValueError, "at least B = 2"),
    (lambda: clip_loss(torch.ones(2, 2), torch.ones(2, 2), 0.0), ValueError, "temperature must be a positive"),
    (lambda: clip_loss(torch.ones(2, 2), torch.ones(2, 2), "0.1"), TypeError, "temperature must be a positive"),
    (lambda: clip_loss(torch.ones(2, 2), torch.ones(2, 2), torch.ones(2)), TypeError, "temperature must be"),
    (lambda: recall_at_1(torch.ones(2, 3), torch.tensor([0, 1]), torch.tensor([0, 1])), ValueError,
     "text_labels must have one label per column"),
    (lambda: recall_at_1(torch.ones(2, 3), torch.tensor([0.0, 1.0]), torch.tensor([0, 1, 2])), TypeError,
     "image_labels must be an integer tensor"),
    (lambda: CLIPConfig(temperature=0.005), ValueError, "CLIPConfig.temperature = 0.005 must be >="),
    (lambda: CLIPConfig(d_model=30, num_heads=4), ValueError, "d_model=30 must be divisible by num_heads=4"),
    (lambda: CLIP(**TINY).encode_text(torch.tensor([[1, 99]])), ValueError, r"ids must hold ids in \[0, vocab_size\)"),
    (lambda: lab.prompt("{en}", 10), ValueError, "digit must be 0-9"),
])
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_lab_prompts_batches_and_held_out_templates():
    assert lab.prompt("数字{zh}", 7) == "数字七" and lab.prompt("a handwritten {num}", 7) == "a handwritten 7"
    for lang in ("en", "zh"):
        assert not set(lab.HELDOUT_TEMPLATES[lang]) & set(lab.TRAIN_TEMPLATES[lang])
    y = torch.tensor([d for d in range(10) for _ in range(3)])
    image_idx, text_idx = lab.make_batches(y, 7, seed=0)
    assert image_idx.shape == text_idx.shape == (7, 10)
    _, labels = lab.prompts(lab.TRAIN_TEMPLATES["en"] + lab.TRAIN_TEMPLATES["zh"])
    assert (y[image_idx] == torch.arange(10)).all() and (labels[text_idx] == torch.arange(10)).all()
    assert lab.learning_rate(lab.WARMUP - 1) == pytest.approx(
        lab.LR * 0.5 * (1 + math.cos(math.pi * (lab.WARMUP - 1) / lab.STEPS)))
