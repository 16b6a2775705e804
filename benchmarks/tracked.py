"""Tracked values: numbers of the project's own, stored per commit and judged across commits.

A `track_*` function (or `@regress.track`) returns a number measured at that
commit; `regress compare BASE HEAD --metric tracked` judges them.
"""

import torch

import regress


def track_mlp_parameters():
    """The example model's parameter count: exact, one round decides."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    return sum(p.numel() for p in model.parameters())


@regress.track(unit="loss", better="lower")
def loss_after_20_steps():
    """A tiny regression fit from a fixed seed: the same code gives the same loss."""
    torch.manual_seed(0)
    x = torch.randn(256, 8)
    y = x @ torch.arange(8.0) + 0.1 * torch.randn(256)
    w = torch.zeros(8, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.05)
    for _ in range(20):
        opt.zero_grad()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        opt.step()
    return float(loss)
