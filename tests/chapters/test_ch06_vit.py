"""Chapter 6: the ResNet-50 count, the digits helpers, the worked examples and
the source's ViT code, checked against published or hand-derived numbers."""

import re
import numpy as np
import pytest
import torch

from course_lib import chapters
from course_lib.labs import digits
from course_lib.models import PatchEmbedding, patchify
from course_lib.models.resnet import Bottleneck, ResNet, conv_macs
from course_lib.analysis.sizes import PUBLISHED, build_on_meta, count_parameters
from course_lib.chapters.ch06 import worked as w


def test_resnet50_matches_torchvision_exactly():
    model = build_on_meta("ResNet-50")
    assert all(p.is_meta for p in model.parameters())
    assert count_parameters(model) == 25_557_032            # torchvision resnet50 card
    assert conv_macs(model) == 4_089_184_256                  # torchvision: 4.09 GFLOPS
    assert abs(count_parameters(model) - PUBLISHED["ResNet-50"]["params"]) < 0.01 * 25.6e6


def test_original_resnet50_has_same_parameters_and_fewer_macs():
    with torch.device("meta"):
        v1 = ResNet(stride_in_3x3=False)
    assert count_parameters(v1) == 25_557_032
    assert 3.8e9 < conv_macs(v1) < 3.9e9                      # He et al. Table 1: 3.8e9


def test_resnet_runs_and_halves_resolution():
    torch.manual_seed(0)
    block = Bottleneck(64, 32, stride=2)
    assert block(torch.randn(1, 64, 8, 8)).shape == (1, 128, 4, 4)
    small = ResNet(blocks=(1, 1, 1, 1), num_classes=7).eval()
    assert small(torch.randn(2, 3, 64, 64)).shape == (2, 7)


@pytest.mark.parametrize("kwargs, err", [(dict(blocks=(3, 4, 6)), ValueError),
                                         (dict(blocks=(3, 4, 0, 3)), ValueError),
                                         (dict(num_classes=0), ValueError),
                                         (dict(blocks=(3, 4, 6, 3.5)), TypeError)])
def test_resnet_bad_arguments(kwargs, err):
    with pytest.raises(err):
        ResNet(**kwargs)


def test_conv_macs_rejects_non_modules():
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        conv_macs("resnet")


def test_patch_steps_and_table():
    s = w.patch_steps()
    assert list(s["per_side"]) == [14, 14] and s["num_patches"] == 196 and s["patch_dim"] == 768
    assert w.patch_steps(384, 16)["num_patches"] == 576
    with pytest.raises(ValueError, match="divisible"):
        w.patch_steps(224, 15)
    t = w.table_steps()
    np.testing.assert_allclose(t["params_m"], [25.557032, 86.567656, 304.326632])
    np.testing.assert_allclose(t["gflops"], [4.089184256, 17.563828224, 61.554712576])


def test_conv_patch_embedding_is_flatten_then_linear():
    torch.manual_seed(1)
    emb = PatchEmbedding(12, 4, 3, 10)
    x = torch.randn(3, 3, 12, 12)
    with torch.no_grad():
        lin = patchify(x, 4) @ emb.linear_weight().T + emb.proj.bias
        assert (emb(x) - lin).abs().max() < 1e-6


def test_errata_of_chapter_6_are_live():
    keys = {e.key for e in chapters.ERRATA if e.chapter == "book/ch06_vit"}
    assert keys == {"ch06-params", "ch06-batch-first", "ch06-code-size"}
    text = repr(chapters.show("ch06-batch-first"))
    # as printed: all images get the same logits and new pixels change nothing; fixed: the opposite
    # (the row, then its two cells: as printed, fixed; column widths follow the headers)
    assert re.search(r"the same logits\? · [^\n]*?\s+yes · 是\s+no · 否\n", text)
    assert re.search(r"change the logits\? · [^\n]*?\s+no · 否\s+yes · 是\n", text)
    assert "67,679,464" in repr(chapters.show("ch06-code-size"))


def test_source_vit_logits_ignore_the_image():
    from course_lib.chapters.ch06.errata import source_vit_logits
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(2, 3, 3, 32, 32, generator=g)
    assert torch.allclose(source_vit_logits(a), source_vit_logits(b))
    assert not torch.allclose(source_vit_logits(a, sequence_first=True),
                              source_vit_logits(b, sequence_first=True))


def test_load_split_is_fixed_and_standardised():
    X_tr, y_tr, X_te, y_te = digits.load_split()
    assert X_tr.shape == (1347, 1, 8, 8) and X_te.shape == (450, 1, 8, 8)
    assert abs(float(X_tr.mean())) < 1e-5 and abs(float(X_tr.std()) - 1) < 1e-4
    assert torch.equal(y_te, digits.load_split()[3])
    assert np.bincount(y_te.numpy()).min() >= 43               # stratified
    with pytest.raises(ValueError, match="test_size"):
        digits.load_split(test_size=1.5)


def test_confusion_matrix():
    cm = digits.confusion_matrix([0, 1, 1, 2], [0, 1, 2, 2], num_classes=3)
    assert cm.tolist() == [[1, 0, 0], [0, 1, 1], [0, 0, 1]]
    with pytest.raises(ValueError, match="same length"):
        digits.confusion_matrix([0, 1], [0])
    with pytest.raises(ValueError, match="labels must lie"):
        digits.confusion_matrix([0, 5], [0, 1], num_classes=3)


def test_train_classifier_learns_and_is_repeatable(capsys):
    X, y, _, _ = digits.load_split()
    X, y = X[:200], y[:200]
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = digits.SmallCNN(channels=(4, 8, 8))
        runs.append(digits.train_classifier(model, X, y, epochs=3, log_every=1, name="cnn"))
    assert len(runs[0]) == 3 * digits.steps_per_epoch(200) == 12
    assert runs[0] == runs[1] and runs[0][-1] < runs[0][0]
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" · loss")[0] for line in out] == [f"cnn · step {s:>2}/12" for s in (4, 8, 12)] * 2
    assert digits.predict(model, X).shape == (200,)


@pytest.mark.parametrize("args, err, match", [
    (("not a model",), TypeError, "model must be an nn.Module"),
    ((None, torch.zeros(4, 8, 8)), ValueError, "X must have 4 dimensions"),
    ((None, torch.zeros(4, 1, 8, 8), torch.zeros(4)), TypeError, "y must be an integer tensor"),
    ((None, torch.zeros(4, 1, 8, 8), torch.zeros(3, dtype=torch.int64)), ValueError, "same number"),
])
def test_train_classifier_bad_arguments(args, err, match):
    model = digits.SmallCNN()
    full = list(args) + [None] * (3 - len(args))
    full[0] = model if full[0] is None else full[0]
    X = full[1] if full[1] is not None else torch.zeros(4, 1, 8, 8)
    y = full[2] if full[2] is not None else torch.zeros(4, dtype=torch.int64)
    with pytest.raises(err, match=match):
        digits.train_classifier(full[0], X, y, epochs=1)


def test_the_chapter_models_and_their_recipes():
    from course_lib import repro
    from course_lib.models import ViT
    vit, cnn = digits.build_vit(), digits.build_cnn()
    assert isinstance(vit, ViT) and isinstance(cnn, digits.SmallCNN)
    assert vit.patch_embed.num_patches == 16 and vit.cls_token.shape == (1, 1, 64)
    # the same seed draws the same weights · 同一种子，同样的权重
    assert all(torch.equal(a, b) for a, b in zip(vit.state_dict().values(), digits.build_vit().state_dict().values()))
    for name in ("ch06-digits-vit", "ch06-digits-cnn"):
        rec = repro.RECIPES[name]
        assert rec.chapter == "ch06" and set(rec.tolerance) == {"accuracy"}
    assert digits.steps_per_epoch(1347) == 22 and digits.steps_per_epoch(128) == 2


def test_predict64_evaluates_a_float64_copy():
    X, _, _, _ = digits.load_split()
    cnn = digits.build_cnn()
    assert torch.equal(digits.predict64(cnn, X[:50]), digits.predict(cnn.double(), X[:50].double()))
    cnn = digits.build_cnn()
    digits.predict64(cnn, X[:5])
    assert next(cnn.parameters()).dtype == torch.float32                   # the model is not changed
