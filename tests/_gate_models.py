"""A model for tests/test_measure_gate_e2e.py, referenced as ``py:_gate_models:repeated`` (with
tests/ on PYTHONPATH): a convolution stem, then ONE 64-channel 3x3 convolution block applied
``VITBENCH_TEST_REPEATS`` times (default 4), then a linear head, on 32x32 images.

Five repeats instead of four is 25% more of the same work under the same name and parameters
(1 + 37.7 / 152.6 MMACs per image = 1.247x): a real slowdown, as a code change would make one,
that the gate must catch."""

from __future__ import annotations

import os

from torch import nn


class Repeated(nn.Module):
    image_size = 32

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 3, padding=1)
        self.block = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        x = self.stem(x)
        for _ in range(int(os.environ.get("VITBENCH_TEST_REPEATS", "4"))):
            x = self.block(x)
        return self.head(x.mean((2, 3)))


def repeated() -> nn.Module:
    return Repeated()
