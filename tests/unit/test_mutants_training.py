"""Tests that kill mutants of course_lib.training's Muon and weight average (make mutate, tools/mutate.py).

Expected values are worked out by hand from the formulas in the modules' docstrings.
"""

import pytest
import torch

from course_lib.training.averaging import ExponentialAverage
from course_lib.training.muon import Muon, muon_scale, newton_schulz, split_for_muon


def test_average_counts_its_updates_and_copy_to_writes_the_average():
    model = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(2.0)
    avg = ExponentialAverage(model, decay=0.5)
    with torch.no_grad():
        model.weight.fill_(4.0)
    avg.update(model)                     # 0.5 * 2 + 0.5 * 4 = 3
    avg.update(model)                     # 0.5 * 3 + 0.5 * 4 = 3.5
    assert avg.updates == 2
    avg.copy_to(model)
    assert model.weight.item() == 3.5


def test_averaged_copy_holds_the_average_and_leaves_the_model_alone():
    model = torch.nn.Linear(2, 1, bias=False)
    model.register_parameter("count", torch.nn.Parameter(torch.tensor([7]), requires_grad=False))
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 3.0]]))
    avg = ExponentialAverage(model, decay=0.75)
    assert avg.names == ["weight"]                                 # the integer parameter is not averaged
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[5.0, 7.0]]))
    avg.update(model)                                              # 0.75 * [1, 3] + 0.25 * [5, 7] = [2, 4]
    twin = avg.averaged_copy(model)
    assert twin is not model
    assert twin.weight.tolist() == [[2.0, 4.0]]
    assert model.weight.tolist() == [[5.0, 7.0]]                   # the run's own weights go on unchanged
    assert twin.count.tolist() == [7]


def test_average_says_what_came_instead_of_a_module():
    with pytest.raises(TypeError, match="^model must be a torch.nn.Module, got OrderedDict$"):
        ExponentialAverage(torch.nn.Linear(2, 2).state_dict(), 0.9)
    with pytest.raises(ValueError, match="^model has no floating-point parameters to average"):
        ExponentialAverage(torch.nn.Identity(), 0.9)


def test_muon_accepts_zero_momentum_and_weight_decay_and_its_bounds():
    W = torch.nn.Parameter(torch.eye(2, dtype=torch.float64))
    Muon([W], lr=0.1, momentum=0.0, weight_decay=0.0)             # [0, 1) and >= 0 include 0
    Muon([W], lr=1, momentum=0.5)                                 # an int learning rate is a number
    for name, kw in (("momentum", dict(lr=0.1, momentum=-0.1)), ("momentum", dict(lr=0.1, momentum=True)),
                     ("lr", dict(lr=True)), ("weight_decay", dict(lr=0.1, weight_decay=True)),
                     ("lr", dict(lr=-0.1)), ("lr", dict(lr="0.1")), ("momentum", dict(lr=0.1, momentum=False)),
                     ("ns_steps", dict(lr=0.1, ns_steps=0))):
        with pytest.raises(ValueError, match=f"^{name} must be"):       # the message starts with the argument
            Muon([W], **kw)


def test_muon_skips_a_matrix_without_gradient_and_steps_the_next():
    frozen = torch.nn.Parameter(torch.eye(2, dtype=torch.float64))
    W = torch.nn.Parameter(torch.eye(2, dtype=torch.float64))
    opt = Muon([frozen, W], lr=0.1, momentum=0.0)
    G = torch.tensor([[1.0, 0.0], [0.0, 3.0]], dtype=torch.float64)
    W.grad = G.clone()
    opt.step()
    assert torch.equal(frozen.detach(), torch.eye(2, dtype=torch.float64))
    # momentum 0: D = G; the step is -lr * muon_scale * NS(G)
    expected = torch.eye(2, dtype=torch.float64) - 0.1 * muon_scale((2, 2)) * newton_schulz(G)
    torch.testing.assert_close(W.detach(), expected, rtol=0, atol=1e-12)


def test_muon_step_returns_the_closures_loss():
    W = torch.nn.Parameter(torch.ones(2, 2, dtype=torch.float64))
    opt = Muon([W], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (W ** 2).sum()                                    # 4 at W = 1
        loss.backward()
        return loss

    assert opt.step(closure).item() == 4.0
    assert W.grad is not None                                    # the closure ran with gradients on
    assert opt.step() is None


def test_split_for_muon_leaves_out_frozen_parameters():
    model = torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    model[2].weight.requires_grad_(False)
    matrices, rest = split_for_muon(model)
    assert [tuple(p.shape) for p in matrices] == [(4, 3)]
    assert [tuple(p.shape) for p in rest] == [(5, 3), (4,), (2,)]


def test_newton_schulz_of_a_zero_matrix_stays_zero_and_a_tall_one_keeps_its_shape():
    assert torch.equal(newton_schulz(torch.zeros(3, 2, dtype=torch.float64)), torch.zeros(3, 2, dtype=torch.float64))
    D = torch.tensor([[3.0, 0.0], [0.0, 4.0], [0.0, 0.0]], dtype=torch.float64)
    out = newton_schulz(D, steps=1, eps=0.0)
    # one step on the singular values 3/5 and 4/5 of D / ||D||_F = 5: p(s) = a s + b s^3 + c s^5
    a, b, c = 3.4445, -4.7750, 2.0315
    p = [a * s + b * s ** 3 + c * s ** 5 for s in (0.6, 0.8)]
    expected = torch.tensor([[p[0], 0.0], [0.0, p[1]], [0.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)


def test_muon_scale_of_a_single_row_or_column():
    # 0.2 * sqrt(max(m, n)): a (1, 4) or (4, 1) matrix is a matrix; (0, 4) is not
    assert muon_scale((1, 4)) == muon_scale((4, 1)) == 0.2 * 2.0
    with pytest.raises(ValueError, match=r"^shape must be that of a matrix \(m, n\), got \(0, 4\)"):
        muon_scale((0, 4))
    with pytest.raises(TypeError, match="^model must be a torch.nn.Module, got str$"):
        split_for_muon("gpt")


def test_newton_schulz_and_muon_say_what_came_and_where_it_belongs():
    with pytest.raises(ValueError, match=r"^D must be a floating-point matrix \(m, n\), got \(3,\)$"):
        newton_schulz(torch.ones(3))
    with pytest.raises(ValueError, match=r"^D must be a floating-point matrix \(m, n\), got list$"):
        newton_schulz([[1.0]])
    with pytest.raises(ValueError, match="^steps must be"):
        newton_schulz(torch.ones(2, 2), steps=0)
    with pytest.raises(ValueError) as e:
        Muon([torch.nn.Parameter(torch.ones(4))], lr=0.1)
    assert str(e.value).endswith("(give it to AdamW: split_for_muon)")
