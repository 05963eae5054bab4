"""``course_lib.training.muon`` (chapter 7): the Newton–Schulz iteration against its definition through the SVD,
a Muon step against the update rule written out by hand, against PyTorch's own ``torch.optim.Muon``,
the split of a GPT's parameters, ``train(optimizer="muon")`` against a loop written here, and bad input."""

import math

import pytest
import torch
from torch.nn import functional as F

from course_lib.models import GPT, GPTConfig
from course_lib.training.muon import Muon, muon_scale, newton_schulz, split_for_muon
from course_lib.training import build_optimizers, train

A, B, C = 3.4445, -4.7750, 2.0315          # Jordan et al.'s quintic, written out here


def by_svd(D, steps=5, eps=1e-7):
    """U p^steps(S / (||D||_F + eps)) V^T: what the iteration does to the singular values, one scalar at a time."""
    U, S, Vh = torch.linalg.svd(D, full_matrices=False)
    s = S / (D.norm() + eps)
    for _ in range(steps):
        s = A * s + B * s ** 3 + C * s ** 5
    return U @ torch.diag(s) @ Vh


@pytest.mark.parametrize("shape", [(6, 6), (4, 9), (9, 4)])
@pytest.mark.parametrize("steps", [1, 5])
def test_newton_schulz_is_the_quintic_applied_to_each_singular_value(shape, steps):
    D = torch.randn(*shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    torch.testing.assert_close(newton_schulz(D, steps, eps=0.0), by_svd(D, steps, eps=0.0), rtol=0, atol=1e-12)


def test_five_steps_on_a_far_from_orthogonal_matrix():
    D = torch.randn(64, 256, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    D[:, :3] *= 50                                          # three dominant directions
    before = torch.linalg.svdvals(D)
    assert before.max() / before.min() > 20                 # far from orthogonal, as a gradient is
    s = before / (D.norm() + 1e-7)                          # the quintic, one singular value at a time
    for _ in range(5):
        s = A * s + B * s ** 3 + C * s ** 5
    torch.testing.assert_close(torch.linalg.svdvals(newton_schulz(D)), torch.sort(s, descending=True).values,
                               rtol=0, atol=1e-10)
    assert newton_schulz(D).dtype == torch.float64 and newton_schulz(D.float()).dtype == torch.float32


def test_the_step_scale():
    assert muon_scale((128, 512)) == muon_scale((512, 128)) == 0.2 * math.sqrt(512)
    assert muon_scale((9, 4)) == 0.2 * 3.0


def test_two_muon_steps_against_the_update_rule_by_hand():
    g = torch.Generator().manual_seed(3)
    W0 = torch.randn(5, 3, generator=g, dtype=torch.float64)
    grads = [torch.randn(5, 3, generator=g, dtype=torch.float64) for _ in range(2)]
    lr, wd, mu = 0.01, 0.1, 0.9
    W = torch.nn.Parameter(W0.clone())
    opt = Muon([W], lr=lr, weight_decay=wd, momentum=mu)
    for G in grads:
        W.grad = G.clone()
        opt.step()
    M1 = grads[0]                                           # M <- mu M + G from zero
    W1 = W0 * (1 - lr * wd) - lr * 0.2 * math.sqrt(5) * by_svd(grads[0] + mu * M1)
    M2 = mu * M1 + grads[1]
    W2 = W1 * (1 - lr * wd) - lr * 0.2 * math.sqrt(5) * by_svd(grads[1] + mu * M2)
    torch.testing.assert_close(W.detach(), W2, rtol=0, atol=1e-10)


def test_muon_takes_the_steps_of_pytorchs_muon_up_to_its_bfloat16():
    """torch.optim.Muon (adjust_lr_fn="match_rms_adamw") keeps an average of the gradients where this one
    keeps their sum; after the normalisation inside the iteration the two differ only by the rounding
    of its bfloat16 products."""
    g = torch.Generator().manual_seed(4)
    W0 = torch.randn(32, 96, generator=g)
    grads = [torch.randn(32, 96, generator=g) for _ in range(4)]
    W_ours, W_torch = torch.nn.Parameter(W0.clone()), torch.nn.Parameter(W0.clone())
    ours = Muon([W_ours], lr=0.02, weight_decay=0.1, momentum=0.95)
    theirs = torch.optim.Muon([W_torch], lr=0.02, weight_decay=0.1, momentum=0.95, adjust_lr_fn="match_rms_adamw")
    for G in grads:
        W_ours.grad, W_torch.grad = G.clone(), G.clone()
        ours.step()
        theirs.step()
    moved_ours, moved_torch = W_ours.detach() - W0, W_torch.detach() - W0
    assert (moved_ours - moved_torch).norm() / moved_torch.norm() < 0.02
    assert moved_torch.norm() > 0.5                          # and the steps are not tiny


def test_split_for_muon_on_a_gpt():
    model = GPT(GPTConfig(vocab_size=11, d_model=8, num_heads=2, num_layers=2, d_ff=16, max_len=6, dropout=0.0))
    matrices, rest = split_for_muon(model)
    name = {id(p): n for n, p in model.named_parameters()}
    expected = [f"layers.{i}.{m}.weight" for i in range(2)
                for m in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
                          "linear1", "linear2")]
    assert [name[id(p)] for p in matrices] == expected
    assert {name[id(p)] for p in rest} == {n for n, _ in model.named_parameters()} - set(expected)
    assert "tok_emb.weight" in {name[id(p)] for p in rest} and "pos_emb.embedding.weight" in {name[id(p)] for p in rest}


def test_build_optimizers():
    model = GPT(GPTConfig(vocab_size=11, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=6, dropout=0.0))
    muon, adamw = build_optimizers(model, "muon", 0.01, weight_decay=0.1, muon_ratio=2.0)
    matrices, rest = split_for_muon(model)
    assert isinstance(muon, Muon) and type(adamw) is torch.optim.AdamW
    assert muon.param_groups[0]["params"] == matrices and adamw.param_groups[0]["params"] == rest
    assert (muon.param_groups[0]["lr"], adamw.param_groups[0]["lr"]) == (0.02, 0.01)
    assert muon.param_groups[0]["weight_decay"] == adamw.param_groups[0]["weight_decay"] == 0.1
    (only,) = build_optimizers(model, "adam", 0.01)
    assert type(only) is torch.optim.Adam and only.param_groups[0]["params"] == list(model.parameters())
    with pytest.raises(ValueError, match="optimizer"):
        build_optimizers(model, "sgd", 0.01)


def test_train_with_muon_is_muon_on_the_matrices_and_adamw_on_the_rest():
    def make():
        torch.manual_seed(0)
        return GPT(GPTConfig(vocab_size=13, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=5, dropout=0.0))

    data = torch.randint(13, (4, 2, 6), generator=torch.Generator().manual_seed(5))

    def loss_fn(m, batch):
        logits = m(batch[:, :-1])                            # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, 13), batch[:, 1:].reshape(-1))

    def rate(step):
        return 1e-2 * (0.5 + 0.1 * step)

    model = make()
    losses = train(model, data.__getitem__, loss_fn, 4, rate, optimizer="muon", weight_decay=0.1, clip=1.0,
                   muon_ratio=2.0)
    ref = make()
    matrices, rest = split_for_muon(ref)
    opts = [Muon(matrices, lr=2 * rate(0), weight_decay=0.1), torch.optim.AdamW(rest, lr=rate(0), weight_decay=0.1)]
    ref.train()
    mine = []
    for step in range(4):
        opts[0].param_groups[0]["lr"] = 2 * rate(step)      # Muon at twice AdamW's rate
        opts[1].param_groups[0]["lr"] = rate(step)
        loss = loss_fn(ref, data[step])
        for opt in opts:
            opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(ref.parameters()), 1.0)
        for opt in opts:
            opt.step()
        mine.append(float(loss.detach()))
    assert losses == mine
    for (n, p), q in zip(model.named_parameters(), ref.parameters()):
        assert torch.equal(p, q), n
    assert losses[-1] < losses[0]


def test_bad_input():
    with pytest.raises(ValueError, match="D must be a floating-point matrix"):
        newton_schulz(torch.ones(3))
    with pytest.raises(ValueError, match="D must be a floating-point matrix"):
        newton_schulz(torch.ones(3, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="steps"):
        newton_schulz(torch.ones(3, 3), steps=0)
    with pytest.raises(ValueError, match="matrices only; got a parameter of shape \\(4,\\)"):
        Muon([torch.nn.Parameter(torch.ones(4))], lr=0.1)
    for kw, msg in ((dict(lr=0), "lr must be a positive number"), (dict(lr=0.1, momentum=1.0), "momentum"),
                    (dict(lr=0.1, weight_decay=-1), "weight_decay"), (dict(lr=0.1, ns_steps=0), "ns_steps")):
        with pytest.raises(ValueError, match=msg):
            Muon([torch.nn.Parameter(torch.ones(2, 2))], **kw)
    with pytest.raises(ValueError, match="shape must be that of a matrix"):
        muon_scale((3,))
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        split_for_muon("gpt")
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="scheduler drives one optimizer"):
        train(model, lambda s: None, lambda m, b: m.weight.sum(), 1, 0.1, optimizer="muon",
              scheduler=lambda opt: torch.optim.lr_scheduler.StepLR(opt, 1))
    with pytest.raises(ValueError, match="optimizer"):
        train(model, lambda s: None, lambda m, b: m.weight.sum(), 1, 0.1, optimizer="muons")
    with pytest.raises(ValueError, match="muon_ratio is for optimizer='muon'"):
        train(model, lambda s: None, lambda m, b: m.weight.sum(), 1, 0.1, optimizer="adamw", muon_ratio=2.0)
    with pytest.raises(ValueError, match="needs a weight matrix outside the embeddings"):
        train(torch.nn.Embedding(3, 2), lambda s: None, lambda m, b: m.weight.sum(), 1, 0.1, optimizer="muon")
    no_bias = torch.nn.Linear(2, 2, bias=False)                 # matrices only: Muon alone, no AdamW
    before = no_bias.weight.detach().clone()
    train(no_bias, lambda s: None, lambda m, b: (m.weight ** 2).sum(), 1, 0.1, optimizer="muon", clip=None)
    G = 2 * before                                               # the gradient of the sum of squares
    expected = before - 0.1 * muon_scale((2, 2)) * newton_schulz(G + 0.95 * G)   # M = G, D = G + μ M
    torch.testing.assert_close(no_bias.weight.detach(), expected, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="muon_ratio"):
        train(model, lambda s: None, lambda m, b: m.weight.sum(), 1, 0.1, optimizer="muon", muon_ratio=0)
