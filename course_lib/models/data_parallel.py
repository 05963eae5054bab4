"""Data parallelism, run for real: two processes give the same model as one full batch.

With distributed data parallelism (DDP) every process holds a full copy of
the model and gets its own slice of the batch. After the backward pass the
processes *average* their gradients (an all-reduce), so every copy takes the
same step. If the loss is a mean over the batch and the batch is split into
``N`` equal slices, the average of the ``N`` slice gradients **is** the
full-batch gradient:

.. math::

    \\frac{1}{N}\\sum_{r=1}^{N} \\nabla \\frac{1}{b}\\sum_{x \\in \\text{slice}_r} \\ell(x)
    = \\nabla \\frac{1}{N b}\\sum_{x \\in \\text{batch}} \\ell(x).

:func:`train_ddp` runs DDP with PyTorch's ``gloo`` backend (CPU) in
``world_size`` local processes, talking over TCP on ``127.0.0.1`` at a free
port chosen at run time; :func:`train_single` trains the same tiny model on
the full batch in this process. In float64 their final weights agree to
about ``1e-15`` (the sums are added in a different order, nothing more).

Chapter 11, *Attention today*.
"""

from __future__ import annotations

import datetime
import os
import socket
import tempfile
import time

import torch
from torch import nn

from .._validate import check_positive_int, check_positive_number

__all__ = ["make_model", "make_batch", "train_single", "train_ddp"]


def make_model(seed: int = 0) -> nn.Module:
    """The tiny float64 model both runs train: ``Linear(4, 8) → tanh → Linear(8, 1)``.

    Args:
        seed: seeds the initial weights (same seed, same weights).

    Chapter 11, *Attention today*.
    """
    seed = check_positive_int(seed, "seed", minimum=0)
    gen = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.5)
    return model


def make_batch(batch_size: int, seed: int = 0):
    """A regression batch ``(X (batch_size, 4), y (batch_size, 1))`` in float64.

    Args:
        batch_size: number of examples.
        seed: seeds the data.

    Chapter 11, *Attention today*.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    seed = check_positive_int(seed, "seed", minimum=0)
    gen = torch.Generator().manual_seed(seed + 1)
    X = torch.randn(batch_size, 4, generator=gen, dtype=torch.float64)
    y = torch.sin(X.sum(dim=1, keepdim=True))             # (batch_size, 1)
    return X, y


def _check_run(steps, lr, batch_size, seed):
    return (check_positive_int(steps, "steps"), check_positive_number(lr, "lr"),
            check_positive_int(batch_size, "batch_size"), check_positive_int(seed, "seed", minimum=0))


def _train(model, X, y, steps: int, lr: float) -> dict:
    """Plain SGD on the mean squared error; returns the final ``state_dict``."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(X) - y) ** 2).mean()               # a mean over this process's examples
        loss.backward()                                    # DDP all-reduces (averages) here
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def train_single(steps: int = 5, lr: float = 0.1, batch_size: int = 8, seed: int = 0) -> dict:
    """Train :func:`make_model` in this process on the whole batch.

    Args:
        steps: SGD steps, each on the full batch of :func:`make_batch`.
        lr: learning rate.
        batch_size: examples per step.
        seed: seeds the model and the data.

    Returns:
        The final ``state_dict`` (float64 tensors).

    Chapter 11, *Attention today*.
    """
    steps, lr, batch_size, seed = _check_run(steps, lr, batch_size, seed)
    torch.set_num_threads(1)
    X, y = make_batch(batch_size, seed)
    return _train(make_model(seed), X, y, steps, lr)


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that no one listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world_size, port, steps, lr, batch_size, seed, timeout, out_dir):
    """One DDP process: train on slice ``rank`` of the batch, save the final weights."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")     # stay on the loopback interface
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size, timeout=datetime.timedelta(seconds=timeout))
    try:
        X, y = make_batch(batch_size, seed)
        share = batch_size // world_size
        part = slice(rank * share, (rank + 1) * share)     # this process's examples
        model = DDP(make_model(seed))                      # broadcasts rank 0's weights
        state = _train(model, X[part], y[part], steps, lr)
        state = {k.removeprefix("module."): v for k, v in state.items()}
        torch.save(state, os.path.join(out_dir, f"rank{rank}.pt"))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def train_ddp(steps: int = 5, lr: float = 0.1, batch_size: int = 8, seed: int = 0,
              world_size: int = 2, timeout: float = 120.0) -> list[dict]:
    """Train :func:`make_model` with DDP (gloo, CPU) in ``world_size`` local processes.

    Each process gets ``batch_size / world_size`` consecutive examples of the
    batch of :func:`make_batch`; DDP averages the gradients after every
    backward pass. The processes are started with
    ``torch.multiprocessing`` (``spawn``) and meet at
    ``tcp://127.0.0.1:<port>`` on a free port picked at run time.

    Args:
        steps, lr, batch_size, seed: as in :func:`train_single`;
            ``batch_size`` must be a multiple of ``world_size``.
        world_size: number of processes (2 on the book's 2-core machine).
        timeout: seconds before the run is abandoned; the processes are
            then terminated and ``TimeoutError`` is raised.

    Returns:
        One final ``state_dict`` per process (rank 0 first); DDP keeps them
        identical, and equal to :func:`train_single`'s in float64.

    Raises:
        TypeError, ValueError: bad arguments (``batch_size`` not divisible by
            ``world_size``, say).
        TimeoutError: the processes did not finish within ``timeout``.
        RuntimeError: a process failed (its traceback is in the message).

    Chapter 11, *Attention today*.
    """
    steps, lr, batch_size, seed = _check_run(steps, lr, batch_size, seed)
    world_size = check_positive_int(world_size, "world_size")
    timeout = check_positive_number(timeout, "timeout")
    if batch_size % world_size:
        raise ValueError(f"batch_size={batch_size} must be a multiple of world_size={world_size} "
                         "(each process gets an equal slice, or the average is not the full-batch mean)")
    import torch.multiprocessing as mp
    from torch.multiprocessing.spawn import ProcessException

    with tempfile.TemporaryDirectory() as out_dir:
        ctx = mp.start_processes(_worker, nprocs=world_size, join=False, start_method="spawn",
                                 args=(world_size, _free_port(), steps, lr, batch_size, seed,
                                       timeout, out_dir))
        deadline = time.monotonic() + timeout
        try:
            while not ctx.join(timeout=max(0.1, min(1.0, deadline - time.monotonic()))):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"DDP run did not finish within timeout={timeout:g} s")
        except ProcessException as exc:          # raised, or exited with an error code
            raise RuntimeError(f"a DDP process failed:\n{exc}") from None
        finally:
            for p in ctx.processes:                        # only the processes started here
                if p.is_alive():
                    p.terminate()
                    p.join(5)
        return [torch.load(os.path.join(out_dir, f"rank{r}.pt")) for r in range(world_size)]
