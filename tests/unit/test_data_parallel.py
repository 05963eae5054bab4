"""DDP on two gloo processes gives the full-batch model; bad input; a bounded timeout."""

import pytest
import torch

from course_lib.models.data_parallel import make_batch, make_model, train_ddp, train_single


@pytest.fixture(scope="module")
def runs():
    return train_single(steps=6, batch_size=8), train_ddp(steps=6, batch_size=8, world_size=2)


def test_ddp_equals_full_batch_training(runs):
    single, per_rank = runs
    assert len(per_rank) == 2
    for state in per_rank:
        assert state.keys() == single.keys()
        for k in single:
            assert state[k].dtype == torch.float64
            torch.testing.assert_close(state[k], single[k], atol=1e-6, rtol=0)    # the brief's tolerance
            torch.testing.assert_close(state[k], single[k], atol=1e-13, rtol=0)   # what float64 gives
    for k in single:   # DDP keeps the replicas identical, bit for bit
        assert torch.equal(per_rank[0][k], per_rank[1][k])


def test_training_moved_the_weights_and_half_a_batch_differs(runs):
    single, per_rank = runs
    start = make_model(0).state_dict()
    assert max((single[k] - start[k]).abs().max().item() for k in single) > 1e-3
    # a single process on one half of the batch is *not* what DDP computes
    X, y = make_batch(8)
    half = make_model(0)
    opt = torch.optim.SGD(half.parameters(), lr=0.1)
    for _ in range(6):
        opt.zero_grad()
        ((half(X[:4]) - y[:4]) ** 2).mean().backward()
        opt.step()
    assert max((half.state_dict()[k] - per_rank[0][k]).abs().max().item() for k in single) > 1e-6


def test_full_batch_gradient_is_the_mean_of_half_batch_gradients():
    """The identity DDP relies on, checked directly in one process."""
    X, y = make_batch(8)
    model = make_model(0)

    def grads(Xb, yb):
        model.zero_grad()
        ((model(Xb) - yb) ** 2).mean().backward()
        return [p.grad.clone() for p in model.parameters()]

    full = grads(X, y)
    halves = [grads(X[:4], y[:4]), grads(X[4:], y[4:])]
    for g, a, b in zip(full, *halves):
        torch.testing.assert_close(g, (a + b) / 2, atol=1e-14, rtol=0)


def test_timeout_is_bounded():
    with pytest.raises(TimeoutError, match="timeout=0.2"):
        train_ddp(steps=1, timeout=0.2)


BAD = [
    (lambda: train_ddp(batch_size=7), ValueError, "batch_size=7 must be a multiple of world_size=2"),
    (lambda: train_ddp(world_size=0), ValueError, "world_size must be an integer >= 1"),
    (lambda: train_ddp(timeout=0), ValueError, "timeout must be a positive number"),
    (lambda: train_ddp(steps="5"), TypeError, "steps must be an integer"),
    (lambda: train_single(steps=0), ValueError, "steps must be an integer >= 1"),
    (lambda: train_single(lr=-0.1), ValueError, "lr must be a positive number"),
    (lambda: train_single(batch_size=2.0), TypeError, "batch_size must be an integer"),
    (lambda: make_model(-1), ValueError, "seed must be an integer >= 0"),
    (lambda: make_model("0"), TypeError, "seed must be an integer"),
    (lambda: make_model(None), TypeError, "seed must be an integer"),
    (lambda: make_batch(0), ValueError, "batch_size must be an integer >= 1"),
    (lambda: make_batch(4, seed=1.5), TypeError, "seed must be an integer"),
    (lambda: make_batch(True), TypeError, "batch_size must be an integer"),
]


@pytest.mark.parametrize("call,exc,message", BAD)
def test_bad_input_names_the_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
