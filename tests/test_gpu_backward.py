"""A GPU's training step traced on a machine without a GPU (vitbench/timemodel/gpu_backward.py):
autograd's engine runs a CUDA tensor's backward on a device thread that needs a CUDA device, so
the backward is run node by node in this thread (``backward_in_this_thread``), and the fused
attention kernel a GPU would pick is taken where PyTorch cannot ask the device
(``gpu_attention``). Judged against autograd's own engine: the same gradients, the same
operators; and against what PyTorch's attention dispatch does on a GPU."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from vitbench.timemodel.gpu_backward import backward_in_this_thread, gpu_attention


class _Double(torch.autograd.Function):
    """A Python autograd function: its backward node is not callable, it has ``apply``."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad


class _Net(nn.Module):
    """What the engine must get right: a broadcast bias (the gradient summed to its shape), a
    tensor used twice (two gradients summed), an output left unused (an undefined gradient), a
    Python function, and an fp32 parameter under autocast (the gradient cast to its dtype)."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(6, 8)
        self.scale = nn.Parameter(torch.randn(8))
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        h = self.first(x)
        used, unused = h.split([4, 4], dim=-1)
        twice = _Double.apply(used) * used
        return (self.norm(twice).sum(-1) + (h * self.scale).mean(-1)).sum()


def _grads(backward, autocast: bool) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    net = _Net()
    x = torch.randn(3, 6)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss = net(x)
    backward(loss)
    return {name: p.grad for name, p in net.named_parameters()}


@pytest.mark.parametrize("autocast", [False, True])
def test_the_gradients_are_the_engines(autocast):
    ours = _grads(backward_in_this_thread, autocast)
    engine = _grads(lambda loss: loss.backward(), autocast)
    assert set(ours) == set(engine) == {"first.weight", "first.bias", "scale", "norm.weight", "norm.bias"}
    for name, grad in engine.items():
        assert ours[name].dtype == grad.dtype == torch.float32 and ours[name].shape == grad.shape
        torch.testing.assert_close(ours[name], grad, rtol=0, atol=0)


class _Names(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func._overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def test_the_operators_are_the_engines_in_its_order():
    """A parameter's gradient is handed over as the engine hands it (no copy into ``.grad``)."""
    def operators(backward) -> list[str]:
        torch.manual_seed(0)
        net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 36, 5))
        loss = net(torch.randn(2, 3, 8, 8)).logsumexp(-1).sum()
        with _Names() as seen:
            backward(loss)
        return seen.names

    ours = operators(backward_in_this_thread)
    assert ours == operators(lambda loss: loss.backward())
    assert "copy_" not in ours and "convolution_backward" in ours


def _kernels(dtype, mask=None, dims=4) -> list[str]:
    from torch._subclasses.fake_tensor import FakeTensorMode

    shape = (2, 3, 5, 16) if dims == 4 else (2, 3, 2, 5, 16)
    with FakeTensorMode(), gpu_attention(), _Names() as seen:
        q, k, v = (torch.randn(*shape, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
        attn_mask = None if mask is None else torch.ones(5, 5, device="cuda", dtype=mask)
        torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    return [n for n in seen.names if "attention" in n or n in ("bmm", "matmul", "_safe_softmax", "_softmax")]


def test_a_gpu_picks_flash_in_half_precision_and_memory_efficient_with_a_mask_or_in_float32():
    """PyTorch's CUDA choice (sdp_utils: flash needs half precision, no mask, at most 256
    channels a head; memory-efficient takes float32 and masks), made without a device."""
    assert _kernels(torch.bfloat16) == ["_scaled_dot_product_flash_attention"]
    assert _kernels(torch.float16, mask=torch.float16) == ["_scaled_dot_product_efficient_attention"]
    assert _kernels(torch.float16, mask=torch.bool) == ["_scaled_dot_product_efficient_attention"]
    assert _kernels(torch.float32) == ["_scaled_dot_product_efficient_attention"]


def test_five_dimensional_attention_is_left_to_pytorch():
    """No fused kernel takes 5-D tensors (NesT): PyTorch's own dispatch, the math path."""
    assert "_scaled_dot_product_flash_attention" not in _kernels(torch.bfloat16, dims=5)
    assert "_scaled_dot_product_efficient_attention" not in _kernels(torch.bfloat16, dims=5)


def test_a_loss_without_a_graph_is_refused_as_the_engine_refuses_it():
    loss = torch.ones(())
    with pytest.raises(RuntimeError, match="does not require grad") as engine:
        loss.backward()
    with pytest.raises(RuntimeError, match="does not require grad") as ours:
        backward_in_this_thread(loss)
    assert str(ours.value) == str(engine.value)
