"""Tests that kill mutants of course_lib.training's Muon and weight average (make mutate, tools/mutate.py).

Expected values are worked out by hand from the formulas in the modules' docstrings.
"""

import torch

from course_lib.training.averaging import ExponentialAverage


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
