"""Chapter 3's lab (course_lib.labs.heads): the task that makes eight heads specialise.

The recipe's pieces only; retraining the checkpoint is ``tools/train.py --check``.
"""

import pytest
import torch

from course_lib import repro
from course_lib.labs import heads


def test_targets_name_the_word_of_each_slot_and_mask_the_edges():
    x = torch.arange(heads.L_TOY)[None] + 3                     # word ids 3 … 10: each names its position
    y = heads.targets(x)[0]                                     # (L, slots)
    slots = list(heads.SLOTS)
    assert y.shape == (heads.L_TOY, len(slots))
    at = lambda pos, slot: y[pos, slots.index(slot)].item()     # noqa: E731
    assert at(4, "previous · 前一个") == 3 + 3 and at(4, "next · 后一个") == 3 + 5
    assert at(4, "3 back · 前第 3 个") == 3 + 1 and at(5, "2 ahead · 后第 2 个") == 3 + 7
    assert at(6, "first · 第一个") == 3 and at(0, "last · 最后一个") == 3 + heads.L_TOY - 1
    assert at(0, "previous · 前一个") == heads.IGNORE and at(2, "3 back · 前第 3 个") == heads.IGNORE
    assert at(heads.L_TOY - 1, "next · 后一个") == heads.IGNORE and at(5, "3 ahead · 后第 3 个") == heads.IGNORE
    assert (y == heads.IGNORE).sum() == 2 * (1 + 2 + 3)


def test_data_are_seeded_and_the_test_set_is_fresh():
    xs, x_test = heads.heads_data(steps=3, batch_size=4, n_test=5)
    again, again_test = heads.heads_data(steps=3, batch_size=4, n_test=5)
    assert all(torch.equal(a, b) for a, b in zip(xs, again)) and torch.equal(x_test, again_test)
    assert [x.shape for x in xs] == [(4, heads.L_TOY)] * 3 and x_test.shape == (5, heads.L_TOY)
    full, full_test = heads.heads_data()
    assert len(full) == heads.HEADS["steps"] and full_test.shape == (heads.HEADS["n_test"], heads.L_TOY)
    train_rows = {tuple(r) for x in full for r in x.tolist()}
    assert sum(tuple(r) in train_rows for r in full_test.tolist()) == 0


def test_model_shapes_loss_and_metrics():
    model = heads.heads_model()
    assert torch.equal(model.embed.weight, heads.heads_model().embed.weight)
    x = heads.heads_data(steps=1, batch_size=2, n_test=6)[1]
    logits, weights = model(x, need_weights=True)
    assert logits.shape == (6, heads.L_TOY, len(heads.SLOTS), len(heads.WORDS))
    assert weights.shape == (6, heads.NUM_HEADS, heads.L_TOY, heads.L_TOY)
    assert torch.allclose(weights.sum(-1), torch.ones(()))
    loss = heads.heads_loss(model, x)
    assert loss.ndim == 0 and 2.0 < loss.item() < 4.0          # ≈ ln 16 before training
    acc = heads.slot_accuracy(model, x)
    assert acc.shape == (len(heads.SLOTS),) and ((0 <= acc) & (acc <= 1)).all()
    metrics = heads.heads_metrics(model, x)
    assert set(metrics) == set(repro.RECIPES["ch03-heads"].tolerance)
    assert next(model.parameters()).dtype == torch.float32     # evaluated on a float64 copy


def test_a_model_that_reads_the_answers_scores_one():
    class Oracle(torch.nn.Module):
        def forward(self, x, need_weights=False):
            y = heads.targets(x).clamp(min=0)
            return torch.nn.functional.one_hot(y, len(heads.WORDS)).double(), None

    x = heads.heads_data(steps=1, batch_size=2, n_test=20)[1]
    assert heads.slot_accuracy(Oracle(), x).min().item() == 1.0


@pytest.mark.parametrize("bad", [torch.zeros(2, 5, dtype=torch.long), torch.zeros(8, dtype=torch.long), "x"])
def test_targets_bad_input(bad):
    with pytest.raises(ValueError, match=r"x must be a \(B, 8\) tensor of word ids"):
        heads.targets(bad)
