"""The light build's fallback (vitbench/models/materialize.py): a constructor that computes with
its parameters cannot run with them on meta, so it runs with real ones, and every random
initialiser fills zeros instead of drawing numbers (most of such a build's cost: timm's hybrid
ViTs); only in the building thread, and nothing else changes."""

from __future__ import annotations

import threading

import torch
from torch import nn

from vitbench.models.materialize import light_build, zero_init


def test_random_fills_and_initialisers_give_zeros_and_return_their_tensor():
    with zero_init():
        tensors = [torch.empty(64).uniform_(), torch.empty(64).normal_(3.0, 1.0), torch.empty(64).bernoulli_(0.5)]
        weight = torch.empty(32, 16)
        assert nn.init.trunc_normal_(weight, std=0.02) is weight
        kaiming = torch.empty(32, 16)
        nn.init.kaiming_uniform_(tensor=kaiming, a=5 ** 0.5)  # by keyword, as some libraries call it
        tensors += [weight, kaiming, nn.init.orthogonal_(torch.empty(8, 8)), nn.init.xavier_normal_(torch.empty(8, 4))]
        plain = torch.ones(3) + 1  # not a fill: as always
    assert all(t.count_nonzero() == 0 for t in tensors)
    assert plain.tolist() == [2.0, 2.0, 2.0]
    assert torch.empty(64).uniform_(1.0, 2.0).min() >= 1.0  # after the block, random again


def test_another_thread_draws_random_numbers_meanwhile():
    drawn = {}

    def draw():
        drawn["values"] = torch.empty(64).uniform_(1.0, 2.0)

    with zero_init():
        worker = threading.Thread(target=draw)
        worker.start()
        worker.join()
        assert torch.empty(4).uniform_(1.0, 2.0).count_nonzero() == 0
    assert drawn["values"].min() >= 1.0


class _DummyForward(nn.Module):
    """Computes with its own parameters in the constructor (as a hybrid ViT runs its backbone to
    find the feature size) and reads a value (as timm's mixed-RoPE ViTs do): cannot be built with
    them on meta."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2)
        nn.init.normal_(self.stem.weight)
        with torch.no_grad():
            features = self.stem(torch.zeros(1, 3, 16, 16)).shape[1:]
            self.gain = float(self.stem.weight.abs().sum())  # a value read: no meta tensor has one
        self.head = nn.Linear(features.numel(), 5)
        self.register_buffer("index", torch.arange(7))  # a buffer computed in the constructor stays real


def test_a_constructor_that_computes_with_its_parameters_is_built_real_with_zeros():
    module = light_build(_DummyForward)
    assert module.head.in_features == 8 * 7 * 7
    parameters = dict(module.named_parameters())
    assert set(parameters) == {"stem.weight", "stem.bias", "head.weight", "head.bias"}
    assert all(p.device.type == "cpu" and p.count_nonzero() == 0 for p in parameters.values())
    assert module.index.tolist() == list(range(7))
    assert module.gain == 0.0  # what the constructor read was a zero fill, not a random draw
