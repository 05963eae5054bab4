"""``course_lib.training.averaging.ExponentialAverage`` (chapter 7) and its use by the long runs' loop,
``course_lib.labs.language_model_long.run_long``: the average against the formula written out, in the
loop and alone, and bad input."""

import pytest
import torch

from course_lib.training.averaging import ExponentialAverage
from course_lib.labs import language_model_long as lm_long
from course_lib.labs import language_model_long_zh as zh_long


def _weights(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def test_three_updates_against_the_formula_written_out():
    lin = torch.nn.Linear(3, 2).double()
    seen = []
    for k in range(4):                                   # four sets of weights W0 … W3
        with torch.no_grad():
            for p in lin.parameters():
                p.copy_(torch.arange(p.numel(), dtype=torch.float64).reshape(p.shape) * (k + 1) - k ** 2)
        seen.append(_weights(lin))
        if k == 0:
            avg = ExponentialAverage(lin, 0.75)
        else:
            avg.update(lin)
    # W̄ = W0, then β W̄ + (1 − β) W_k: 0.75³ W0 + 0.75² · 0.25 W1 + 0.75 · 0.25 W2 + 0.25 W3
    weights = [0.75 ** 3, 0.75 ** 2 * 0.25, 0.75 * 0.25, 0.25]
    assert sum(weights) == 1.0 and avg.updates == 3
    for n in seen[0]:
        expected = sum(w * s[n] for w, s in zip(weights, seen))
        torch.testing.assert_close(avg.average[n], expected, rtol=0, atol=1e-13)
    twin = avg.averaged_copy(lin)
    for n, p in twin.named_parameters():
        torch.testing.assert_close(p.detach(), avg.average[n], rtol=0, atol=0)
    for n, p in lin.named_parameters():                  # the copy leaves the model as it is
        assert torch.equal(p.detach(), seen[3][n])
    avg.copy_to(lin)
    assert all(torch.equal(p.detach(), avg.average[n]) for n, p in lin.named_parameters())


def test_the_average_is_a_copy_not_a_view():
    lin = torch.nn.Linear(2, 2)
    avg = ExponentialAverage(lin, 0.5)
    before = {n: t.clone() for n, t in avg.average.items()}
    with torch.no_grad():
        lin.weight.add_(1.0)
    assert all(torch.equal(avg.average[n], before[n]) for n in before)


def test_bad_input():
    lin = torch.nn.Linear(2, 2)
    for decay in (0, 1, 1.5, -0.1, True, "0.9", None):
        with pytest.raises(ValueError, match="decay"):
            ExponentialAverage(lin, decay)
    with pytest.raises(TypeError, match="model"):
        ExponentialAverage(lin.state_dict(), 0.9)
    with pytest.raises(ValueError, match="floating-point"):
        ExponentialAverage(torch.nn.Identity(), 0.9)
    avg = ExponentialAverage(lin, 0.9)
    with pytest.raises(ValueError, match="parameters"):
        avg.update(torch.nn.Linear(2, 3, bias=False))
    with pytest.raises(ValueError, match="shape"):
        avg.copy_to(torch.nn.Linear(3, 2))


def _tiny_run(train_cfg, steps, on_step_weights=None):
    corpus = zh_long.zh_long_corpus()
    torch.manual_seed(0)
    model = zh_long.build_zh_long_gpt(corpus.vocab_size)
    return lm_long.run_long(model, corpus, ctx=16, batch=2, train_cfg=train_cfg, steps=steps, log_every=None,
                            held_out_every=1000, curve_every=1, loss_fn=zh_long.flat_cross_entropy)


def test_run_long_returns_the_average_of_the_weights_from_its_start_step(monkeypatch):
    """Five steps with β = 0.5 from step 3: the result is 0.25 W3 + 0.25 W4 + 0.5 W5, where W_k are the
    weights after step k of the same run without an average (averaging does not change training)."""
    plain = dict(zh_long.ZH_LONG_TRAIN, steps=5, warmup=2)
    seen = {}
    corpus = zh_long.zh_long_corpus()
    model = zh_long.build_zh_long_gpt(corpus.vocab_size)
    from course_lib import training
    real_train = training.train

    def spy(model_, *args, on_step=None, **kw):
        def record(step, loss):
            on_step(step, loss)
            seen[step + 1] = _weights(model_)
        return real_train(model_, *args, on_step=record, **kw)

    monkeypatch.setattr(lm_long, "train", spy)
    run_plain = lm_long.run_long(model, corpus, ctx=16, batch=2, train_cfg=plain, steps=5, log_every=None,
                                 held_out_every=1000, curve_every=1, loss_fn=zh_long.flat_cross_entropy)
    monkeypatch.setattr(lm_long, "train", real_train)
    assert "held_out_average" not in run_plain
    averaged = _tiny_run(dict(plain, average={"decay": 0.5, "start": 3}), 5)
    assert averaged["losses"] == run_plain["losses"]                     # the same training
    assert set(averaged["held_out_average"]) == {5} and set(averaged["held_out"]) == {5}
    for n, p in averaged["model"].named_parameters():
        expected = 0.25 * seen[3][n] + 0.25 * seen[4][n] + 0.5 * seen[5][n]
        torch.testing.assert_close(p.detach(), expected, rtol=0, atol=1e-6)
    assert averaged["held_out_average"][5] != averaged["held_out"][5]   # the average differs from the last step


def test_run_long_rejects_a_bad_average():
    cfg = dict(zh_long.ZH_LONG_TRAIN, steps=3, warmup=1)
    for bad in (0.998, {"decay": 0.998}, {"decay": 0.998, "start": 10, "every": 1}, {"decay": 0.998, "start": 4},
                {"decay": 1.0, "start": 2}, {"decay": True, "start": 2}, {"decay": 0.998, "start": 0}):
        with pytest.raises(ValueError, match="average"):
            _tiny_run(dict(cfg, average=bad), 1)
