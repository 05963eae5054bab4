"""Chapter 6's lab (``ch06_vit``): small image classifiers on scikit-learn's 8 x 8 digits.

The digits data set (1797 greyscale images of the digits 0-9, 8 x 8 pixels
with values 0-16) ships with scikit-learn, so nothing is downloaded.
:func:`load_split` makes a fixed, stratified train/test split;
:func:`train_classifier` trains any image classifier with AdamW and a
one-cycle learning-rate schedule (through :func:`course_lib.training.train`),
printing a progress line every few epochs; :class:`SmallCNN` is the convolutional baseline that chapter 6 sets
against a small :class:`~course_lib.models.vit.ViT`.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_positive_int, check_positive_number, check_tensor
from ..training import train

__all__ = ["load_split", "SmallCNN", "train_classifier", "predict", "confusion_matrix"]


def load_split(test_size: float = 0.25, seed: int = 0):
    """The digits, standardised and split once for all (chapter 6).

    Args:
        test_size: fraction of images held out for testing.
        seed: ``random_state`` of the stratified split.

    Returns:
        ``(X_train, y_train, X_test, y_test)``: images ``(n, 1, 8, 8)``
        float32, standardised with the training set's mean and standard
        deviation, and labels ``(n,)`` int64.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0 < float(test_size) < 1:
        raise ValueError(f"test_size must be between 0 and 1, got {test_size!r}")
    d = load_digits()
    X = torch.tensor(d.images, dtype=torch.float32)[:, None]
    y = torch.tensor(d.target, dtype=torch.int64)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y)
    mean, std = X_train.mean(), X_train.std()
    return (X_train - mean) / std, y_train, (X_test - mean) / std, y_test


class SmallCNN(nn.Module):
    """Three 3 x 3 convolutions and a linear layer: the baseline of chapter 6.

    Args:
        channels: ``(c1, c2, c3)`` output channels of the three convolutions.
        num_classes: number of logits.

    ``forward`` maps ``(B, 1, 8, 8)`` to ``(B, num_classes)``: conv - ReLU -
    conv - ReLU - 2 x 2 max-pool (to 4 x 4) - conv - ReLU - flatten - linear.
    """

    def __init__(self, channels=(32, 64, 64), num_classes: int = 10):
        super().__init__()
        c1, c2, c3 = (check_positive_int(c, "channels") for c in channels)
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, 3, padding=1), nn.ReLU(),
            nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c2, c3, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(c3 * 4 * 4, check_positive_int(num_classes, "num_classes"))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images).flatten(1))


def train_classifier(model: nn.Module, X: torch.Tensor, y: torch.Tensor, epochs: int = 20,
                     batch_size: int = 64, lr: float = 5e-3, label_smoothing: float = 0.1,
                     seed: int = 0, log_every: int = 5, name: str = "") -> list[float]:
    """Train ``model`` on ``(X, y)`` with AdamW and a one-cycle schedule (chapter 6).

    :func:`course_lib.training.train` with shuffled mini-batches (``seed``
    shuffles them), AdamW (weight decay 0.01), PyTorch's ``OneCycleLR`` and no
    gradient clipping; PyTorch's global generator is left as it is. Call
    ``torch.manual_seed`` before building the model and
    ``torch.set_num_threads`` before training for results that repeat exactly.

    Args:
        model: maps images ``X[i:j]`` to logits ``(j - i, num_classes)``.
        X: images ``(n, C, H, W)``; y: labels ``(n,)``.
        epochs, batch_size, lr: training budget; ``lr`` is the schedule's peak.
        label_smoothing: of the cross-entropy loss.
        log_every: print ``name · epoch e/E · loss`` every this many epochs
            (the mean training loss of that epoch, 2 decimals); 0 prints nothing.

    Returns:
        The mean training loss of each epoch.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    check_tensor(X, "X", ndim=4, layout="(n, C, H, W)")
    check_tensor(y, "y", ndim=1, floating=False, layout="(n,)")
    if len(X) != len(y):
        raise ValueError(f"X and y must hold the same number of images, got {len(X)} and {len(y)}")
    epochs = check_positive_int(epochs, "epochs")
    batch_size = check_positive_int(batch_size, "batch_size")
    lr = check_positive_number(lr, "lr")
    log_every = check_positive_int(log_every, "log_every", minimum=0)
    g = torch.Generator().manual_seed(seed)
    batches = [idx for _ in range(epochs) for idx in torch.randperm(len(X), generator=g).split(batch_size)]
    steps_per_epoch = len(batches) // epochs
    losses, total = [], [0.0]

    def loss_fn(model, idx):
        return F.cross_entropy(model(X[idx]), y[idx], label_smoothing=label_smoothing)

    def end_of_epoch(step, loss):
        total[0] += loss * len(batches[step])
        if (step + 1) % steps_per_epoch == 0:
            losses.append(total[0] / len(X))
            total[0], epoch = 0.0, (step + 1) // steps_per_epoch
            if log_every and (epoch % log_every == 0 or epoch == epochs):
                print(f"{name} · epoch {epoch:>2}/{epochs} · loss {losses[-1]:.2f}".lstrip(" ·"))

    train(model, batches.__getitem__, loss_fn, len(batches), lr, optimizer="adamw", weight_decay=0.01,
          scheduler=lambda opt: torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=len(batches)),
          seed=None, clip=None, on_step=end_of_epoch)
    return losses


@torch.no_grad()
def predict(model: nn.Module, X: torch.Tensor) -> torch.Tensor:
    """Predicted classes ``(n,)`` of ``model`` (put in eval mode) for images ``X`` (chapter 6)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    check_tensor(X, "X", ndim=4, layout="(n, C, H, W)")
    return model.eval()(X).argmax(-1)


def confusion_matrix(y_true, y_pred, num_classes: int = 10) -> np.ndarray:
    """Counts ``(num_classes, num_classes)``: row = true class, column = predicted (chapter 6)."""
    t = np.asarray(y_true, dtype=np.int64).ravel()
    p = np.asarray(y_pred, dtype=np.int64).ravel()
    if t.shape != p.shape:
        raise ValueError(f"y_true and y_pred must have the same length, got {t.size} and {p.size}")
    k = check_positive_int(num_classes, "num_classes")
    if t.size and (min(t.min(), p.min()) < 0 or max(t.max(), p.max()) >= k):
        raise ValueError(f"labels must lie in 0..{k - 1}")
    return np.bincount(t * k + p, minlength=k * k).reshape(k, k)
