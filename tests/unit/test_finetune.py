"""Chapter 7's fine-tuning lab (course_lib.labs.finetune): the frozen-base model,
its pieces, the metrics, the baseline, and checkpoints that hold only the
trained parameters."""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from torch.nn import functional as F

from course_lib import repro
from course_lib.labs import finetune as ft
from course_lib.labs import folio
from course_lib.models import BERT
from course_lib.models.pretrained import minilm_dir

TEXTS = ["To be, or not to be, that is the question:", "Now is the winter of our discontent",
         "If music be the food of love, play on"]


@pytest.fixture(scope="module")
def pretrained64():
    return ft.build_model("pretrained", torch.float64)


@pytest.fixture(scope="module")
def data():
    return folio.load_folio()


def test_only_the_top_is_trained_and_saved(pretrained64):
    m = pretrained64
    keys = set(m.state_dict())
    assert all(k.split(".")[0] in ("top", "pooler", "classifier") for k in keys)
    assert any(k.startswith("top.0.") for k in keys) and not any(k.startswith("top.1.") for k in keys)
    assert {id(p) for p in m.parameters()}.isdisjoint({id(p) for p in m.base.parameters()})
    assert not any(p.requires_grad for p in m.base.parameters())
    assert m.num_lower == 5


def test_lower_then_top_is_the_whole_pretrained_encoder(pretrained64):
    m = pretrained64
    ids, mask = ft.encode(TEXTS)
    h = m.lower(ids, mask)
    for layer in m.top:
        h, _ = layer(h, mask=mask.bool()[:, None, None, :])
    full = m.base(ids, attention_mask=mask)
    assert torch.allclose(h[mask.bool()], full[mask.bool()], rtol=0, atol=1e-12)


def test_the_pooler_is_minilms_and_the_head_is_seeded(pretrained64):
    state = load_file(str(minilm_dir() / "model.safetensors"))
    assert torch.equal(pretrained64.pooler.weight, state["pooler.dense.weight"].double())
    again = ft.build_model("pretrained", torch.float64)
    assert torch.equal(again.classifier.weight, pretrained64.classifier.weight)
    assert pretrained64.classifier.weight.std().item() == pytest.approx(0.02, rel=0.2)


def test_the_scratch_base_is_berts_initialisation_the_same_every_time():
    a, _ = ft.load_base("scratch")
    b, _ = ft.load_base("scratch")
    assert ft.base_sha256(a) == ft.base_sha256(b)
    assert ft.base_sha256(ft.load_base("scratch", seed=1)[0]) != ft.base_sha256(a)
    assert a.tok_emb.weight.std().item() == pytest.approx(0.02, rel=0.01)
    assert torch.equal(a.layers[0].norm1.weight, torch.ones(384, dtype=torch.float64))
    assert torch.equal(a.layers[0].linear1.bias, torch.zeros(1536, dtype=torch.float64))
    pretrained, _ = ft.load_base("pretrained")
    assert [p.shape for p in a.parameters()] == [p.shape for p in pretrained.parameters()]


def test_a_different_minilm_file_is_refused(monkeypatch):
    monkeypatch.setattr(ft, "MINILM_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="sha256"):
        ft.load_base("pretrained")


def test_encode_cuts_at_max_tokens():
    ids, mask = ft.encode(TEXTS + ["word " * 100])
    assert ids.shape == mask.shape == (4, ft.MAX_TOKENS)
    assert ids[0, 0].item() == 101 and mask[-1].sum().item() == ft.MAX_TOKENS      # [CLS] first


def test_train_batches_are_seeded_epochs():
    b = ft.train_batches(10, 7, batch_size=4)
    assert [x.tolist() for x in b] == [x.tolist() for x in ft.train_batches(10, 7, batch_size=4)]
    flat = torch.cat(b).tolist()
    assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:20]) == list(range(10))
    assert all(len(x) == 4 for x in b)


def test_head_loss_is_the_cross_entropy_of_the_rows(pretrained64):
    h = torch.randn(5, 6, 384, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(5, 6, dtype=torch.int64)
    labels = torch.tensor([0, 1, 2, 1, 0])
    rows = torch.tensor([4, 1])
    pretrained64.eval()
    got = ft.head_loss(h, mask, labels)(pretrained64, rows)
    want = F.cross_entropy(pretrained64.head(h[rows], mask[rows]), labels[rows])
    assert got.item() == pytest.approx(want.item(), abs=1e-12)


def test_predict_batches_by_length_without_changing_results(pretrained64):
    p = ft.predict(pretrained64, TEXTS, batch_size=2)
    assert p.shape == (3, 3) and torch.allclose(p.sum(1), torch.ones(3, dtype=torch.float64))
    for i, t in enumerate(TEXTS):
        assert torch.allclose(ft.predict(pretrained64, [t])[0], p[i], rtol=0, atol=1e-12)


def test_bad_input(pretrained64):
    with pytest.raises(ValueError, match="kind"):
        ft.load_base("random")
    with pytest.raises(TypeError, match="dtype"):
        ft.load_base("scratch", torch.float16)
    with pytest.raises(TypeError, match="base"):
        ft.TopTuned(torch.nn.Linear(2, 2), 3)
    with pytest.raises(ValueError, match="trainable"):
        ft.TopTuned(pretrained64.base, 3, trainable=7)
    with pytest.raises(TypeError, match="texts"):
        ft.encode("one string")
    with pytest.raises(TypeError, match="texts"):
        ft.encode([])
    with pytest.raises(ValueError, match="steps"):
        ft.train_batches(10, 0)
    ids, mask = ft.encode(TEXTS)
    with pytest.raises(ValueError, match="attention_mask"):
        pretrained64.lower(ids, mask[:, :3])
    with pytest.raises(ValueError, match="h"):
        pretrained64.head(torch.zeros(1, 4, 7, dtype=torch.float64), torch.ones(1, 4))


def test_checkpoint_round_trip_holds_only_the_trained_parameters(tmp_path):
    model = ft.build_model("scratch", torch.float32)
    with torch.no_grad():
        model.classifier.bias.add_(1.0)
    path = repro.save_checkpoint("t", model, metrics={"x": 0.0}, directory=tmp_path)
    stored = load_file(str(path))
    assert set(stored) == set(model.state_dict())
    assert sum(v.numel() for v in stored.values()) == sum(p.numel() for p in model.parameters())
    assert path.stat().st_size < 8_000_000
    fresh = ft.build_model("scratch", torch.float32)
    repro.load_checkpoint("t", fresh, directory=tmp_path, dtype=torch.float64)
    assert fresh.classifier.bias.dtype == torch.float64
    assert all(torch.equal(a.double(), b) for a, b in zip(model.state_dict().values(), fresh.state_dict().values()))


def test_recipes_are_registered():
    for name in ("ch07-minilm-genre", "ch07-scratch-genre"):
        rec = repro.RECIPES[name]
        assert rec.chapter == "ch07" and set(rec.tolerance) == {"test_accuracy", "test_macro_f1"}


@pytest.mark.parametrize("name,kind", [("ch07-minilm-genre", "pretrained"), ("ch07-scratch-genre", "scratch")])
def test_the_stored_checkpoints_fit_and_keep_their_metrics(name, kind, data):
    meta = repro.checkpoint_meta(name)
    assert meta["config"]["train"] == ft.TRAIN and meta["config"]["base"] == kind
    assert meta["config"]["max_tokens"] == ft.MAX_TOKENS
    assert [int(k) for k in meta["curve"]] == list(range(ft.LOG_EVERY, ft.TRAIN["steps"] + 1, ft.LOG_EVERY))
    model, loaded = ft.load_trained(name, kind)            # checks the base's SHA-256
    assert loaded == meta and model.pooler.weight.dtype == torch.float64 and not model.training
    pred = ft.predict(model, data.test_texts).argmax(-1).numpy()
    s = folio.scores(data.test_labels, pred)
    assert s["accuracy"] == meta["metrics"]["test_accuracy"]
    assert s["macro_f1"] == pytest.approx(meta["metrics"]["test_macro_f1"], abs=1e-12)


def test_a_checkpoint_on_the_wrong_base_is_refused():
    with pytest.raises(ValueError, match="sha256"):
        ft.load_trained("ch07-scratch-genre", "pretrained")
