"""Fused attention's backward MACs in the time model's trace, worked out by hand: the scores
recomputed (Q K^T), dO V^T, P^T dO, dS K and dS^T Q, B h n m (3 d_h + 2 d_v). Before this, a
training step traced on torch 2.14 or older priced the backward of the CPU flash kernel (the one a
trace dispatches) at 0 MACs, torch 2.15 at the right count, so the same fit gave different
predictions on the two releases. And what the installed FlopCounterMode does with that kernel."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from vitbench.counters.formulas import sdpa_backward_macs
from vitbench.counters.peers import release
from vitbench.models.references import resolve
from vitbench.timemodel.trace_cache import cached_trace

# batch 2, 3 heads, 5 tokens attending to 5, 8 channels a head
BATCH, HEADS, TOKENS, HEAD_DIM = 2, 3, 5, 8
FORWARD = BATCH * HEADS * TOKENS * TOKENS * (HEAD_DIM + HEAD_DIM)  # Q K^T + P V: 2,400
BACKWARD = BATCH * HEADS * TOKENS * TOKENS * 5 * HEAD_DIM  # five products of the same size: 6,000


class _Attention(torch.nn.Module):
    """An image of HEADS x HEAD_DIM channels, 1 x TOKENS pixels: one token a pixel."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(HEADS * HEAD_DIM, 3 * HEADS * HEAD_DIM)

    def forward(self, image):
        x = image.flatten(2).transpose(1, 2)
        q, k, v = self.qkv(x).reshape(x.shape[0], TOKENS, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v).mean((1, 2, 3))[:, None]


def test_the_formula_by_hand():
    assert sdpa_backward_macs((BATCH, HEADS, TOKENS, HEAD_DIM), (BATCH, HEADS, TOKENS, HEAD_DIM),
                              (BATCH, HEADS, TOKENS, HEAD_DIM)) == BACKWARD == 6000
    # values of another width: 2 x 3 x 5 x 7 x (3 x 8 + 2 x 4), keys 7 long
    assert sdpa_backward_macs((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)) == 2 * 3 * 5 * 7 * 32


# "cuda": traced on fake CUDA tensors, as the GPU model does (no device needed)
@pytest.mark.parametrize("device_type", ["cpu", "cuda"], ids=["cpu", "fake-gpu"])
def test_a_traced_training_step_prices_the_attention_backward(device_type):
    target = resolve(_Attention(), input_size=(HEADS * HEAD_DIM, 1, TOKENS))
    ops = cached_trace(target, BATCH, "train", "fp32", "sgd", device_type, use_cache=False)
    assert [op.macs for op in ops if op.kernel == "attention"] == [FORWARD]
    assert [op.macs for op in ops if op.kernel == "attention_backward"] == [BACKWARD]


def test_flop_counter_on_the_cpu_flash_backward():
    """The installed FlopCounterMode on SDPA's CPU flash kernel and its backward (what a trace
    dispatches): torch 2.15 counts both (forward 2,400 MACs, backward 6,000, as by hand); 2.13
    and 2.14 count neither (0 MACs: vitbench's own formulas stand in)."""
    from torch.utils.flop_counter import FlopCounterMode

    q, k, v = (torch.randn(BATCH, HEADS, TOKENS, HEAD_DIM, requires_grad=True) for _ in range(3))
    with FlopCounterMode(display=False) as counter:
        F.scaled_dot_product_attention(q, k, v).sum().backward()
    counted = counter.get_total_flops() // 2
    if release(torch.__version__) >= (2, 15):
        assert counted == FORWARD + BACKWARD
    else:
        assert counted == 0
