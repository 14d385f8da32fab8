"""Calibration probes: two small synthetic networks, never one of the models a user benchmarks,
that between them run the operators vision models are made of, forward and backward:

- a token network: patch embedding, class token, position embedding, LayerNorm, fused and
  explicit (softmax) attention, attention with dropout, GELU MLP, dropout, residual adds, a shifted window (roll, pad, gather),
  pooling and a classifier head;
- a convolution network: 3x3 and 1x1 convolutions, BatchNorm, ReLU, max and average pooling, a
  depthwise 7x7 convolution with a channels-last LayerNorm (ConvNeXt), hardswish, SiLU and a
  sigmoid gate (MobileNet), global pooling and a head.

Each runs at three sizes, inference and training (cross-entropy, backward, AdamW), for real,
under :class:`OpTimer`: a dispatch mode that runs every aten operator again on its own, in
blocks, and keeps its CPU time per thread with the operator's :class:`~vitbench.timemodel.ops.Op`.
The step's own time (timed without the mode) less the sum of its operators' times is the
framework's cost (Python, dispatch, autograd) per operator.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vitbench.timemodel.ops import COMPUTE_KERNELS, describe

#: (batch, image size, patch, dim, heads) of the token network; (batch, channels, image size) of the conv one
TOKEN_SIZES = ((1, 32, 8, 32, 2), (2, 64, 8, 96, 4), (4, 224, 16, 256, 4))
CONV_SIZES = ((1, 16, 32), (2, 32, 64), (2, 64, 112))


@dataclass(frozen=True)
class StepTiming:
    probe: str
    mode: str
    step_s: float
    ops_s: float
    ops: int
    optimizer_ops: int = 0
    compute_s: float = 0.0  # of ops_s: the matrix products, convolutions and attention kernels

    @property
    def framework_per_op_s(self) -> float:
        return max(0.0, self.step_s - self.ops_s) / self.ops


def token_network(img: int, patch: int, dim: int, heads: int, classes: int = 10):
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Block(nn.Module):
        def __init__(self, fused: bool, attn_drop: float = 0.0) -> None:
            super().__init__()
            self.fused, self.attn_drop = fused, attn_drop
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, heads, c // heads).permute(2, 0, 3, 1, 4).unbind(0)
            if self.fused:
                a = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop if self.training else 0.0)
            else:
                a = ((q * (c // heads) ** -0.5) @ k.transpose(-2, -1)).softmax(-1) @ v
            x = x + F.dropout(self.proj(a.transpose(1, 2).reshape(b, n, c)), 0.1, self.training)
            return x + F.dropout(self.fc2(F.gelu(self.fc1(self.norm2(x)))), 0.1, self.training)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            tokens = (img // patch) ** 2
            self.embed = nn.Conv2d(3, dim, patch, stride=patch)
            self.cls = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos = nn.Parameter(torch.zeros(1, tokens + 1, dim))
            self.blocks = nn.ModuleList([Block(True), Block(True, 0.1), Block(False)])
            self.bias_table = nn.Parameter(torch.zeros(tokens, heads))
            self.register_buffer("bias_index", torch.randint(0, tokens, (tokens,)))
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)
            side = int(x.shape[1] ** 0.5)
            shifted = torch.roll(x.reshape(x.shape[0], side, side, -1), shifts=(1, 1), dims=(1, 2))
            x = F.pad(shifted, (0, 0, 0, 1)).reshape(x.shape[0], -1, x.shape[2])[:, : side * side]
            x = x + self.bias_table[self.bias_index].mean(-1, keepdim=True)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            for block in self.blocks:
                x = block(x)
            x = self.norm(x)
            return self.head((x[:, 0] + x[:, 1:].mean(1)) / 2)

    return Net()


def conv_network(channels: int, classes: int = 10):
    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            c = channels
            self.stem = nn.Conv2d(3, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.expand = nn.Conv2d(c, 2 * c, 1)
            self.dw = nn.Conv2d(2 * c, 2 * c, 7, padding=3, groups=2 * c)
            self.ln = nn.LayerNorm(2 * c)
            self.pw = nn.Linear(2 * c, 2 * c)
            self.gate = nn.Conv2d(2 * c, 2 * c, 1)
            self.head = nn.Linear(2 * c, classes)

        def forward(self, x):
            x = F.relu(self.bn1(self.stem(x)))
            x = F.max_pool2d(x, 3, stride=2, padding=1)
            x = x + F.relu(self.bn2(self.conv(x)))
            x = F.hardswish(self.expand(x))
            y = self.dw(x).permute(0, 2, 3, 1)
            y = self.pw(F.gelu(self.ln(y))).permute(0, 3, 1, 2)
            x = F.silu(x + y)
            x = x * self.gate(F.adaptive_avg_pool2d(x, 1)).sigmoid()
            x = F.avg_pool2d(x, 2)
            return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))

    return Net()


def probes() -> list[tuple[str, Callable[[], Any], tuple[int, ...]]]:
    """(name, network factory, input shape) of every probe, smallest first."""
    out = []
    for batch, img, patch, dim, heads in TOKEN_SIZES:
        out.append((f"tokens-{img}px-d{dim}", lambda i=img, p=patch, d=dim, h=heads: token_network(i, p, d, h), (batch, 3, img, img)))
    for batch, channels, img in CONV_SIZES:
        out.append((f"conv-{img}px-c{channels}", lambda c=channels: conv_network(c), (batch, 3, img, img)))
    return out


#: a call lasting this many blocks or more is timed once after its warm-up call, not in ``blocks``
#: blocks: one such call already averages over 25 blocks' worth of work (the largest matrix
#: products of the grid: over half of a calibration's time went to timing them four times)
LONG_CALL_BLOCKS = 25


def median_seconds(run: Callable[[], Any], clock: Callable[[], float], threads: int, block_s: float,
                   blocks: int = 3, long_once: bool = True) -> float:
    """Median seconds of one ``run()`` over ``blocks`` blocks of calls lasting ``block_s`` or more,
    after one warm-up call; a call whose warm-up lasted :data:`LONG_CALL_BLOCKS` blocks or more
    (with ``long_once``): the seconds of one more call."""
    start = clock()
    run()
    once = max((clock() - start) / threads, 1e-7)
    if long_once and once >= LONG_CALL_BLOCKS * block_s:
        blocks = 1
    per_block = max(1, int(block_s / once))
    samples = []
    for _ in range(blocks):
        start = clock()
        for _ in range(per_block):
            run()
        samples.append((clock() - start) / threads / per_block)
    return statistics.median(samples)


def call_key(func: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    """What an operator call's time depends on: the operator, each tensor's shape, strides, dtype
    and device, every other argument's value. Two calls with one key do the same work."""
    import torch

    def of(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return ("tensor", tuple(value.shape), tuple(value.stride()), value.dtype, value.device.type)
        if isinstance(value, (list, tuple)):
            return (type(value).__name__, tuple(of(v) for v in value))
        return repr(value)

    return str(func), of(args), tuple(sorted((name, of(v)) for name, v in kwargs.items()))


class OpTimer:
    """A dispatch mode factory: ``with timer.mode():`` runs a step and times each operator. With
    ``reuse``, a call like one already timed (:func:`call_key`: the same operator on tensors of
    the same shapes, strides and dtypes, the same other arguments) takes that time again instead
    of being timed anew: a training step repeats two thirds of its operators (its blocks, the
    optimizer's update per parameter), and timing each copy again was most of the probes' time.
    An inference step repeats few, and its operators' sum is what the per-operator framework
    cost is fitted against (the step less that sum, :func:`~vitbench.timemodel.calibration.fitting.fit_steps`):
    one timing counted three times would triple its error there, so its copies are timed anew."""

    def __init__(self, clock: Callable[[], float], threads: int, block_s: float, reuse: bool = True) -> None:
        self.clock, self.threads, self.block_s, self.reuse = clock, threads, block_s, reuse
        self.samples: list[tuple[Any, float]] = []  # (Op, seconds)
        self.in_optimizer = False
        self._timed: dict[Any, float] = {}

    def mode(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        timer = self

        class Timed(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                op = describe(func, args, kwargs, out, timer.in_optimizer)
                if op is not None:
                    key = call_key(func, args, kwargs) if timer.reuse else None
                    seconds = timer._timed.get(key) if key is not None else None
                    if seconds is None:
                        seconds = median_seconds(lambda: func(*args, **kwargs), timer.clock, timer.threads, timer.block_s)
                        if key is not None:
                            timer._timed[key] = seconds
                    timer.samples.append((op, seconds))
                return out

        return Timed()


def run_probe(factory: Callable[[], Any], shape: tuple[int, ...], mode: str, clock: Callable[[], float],
              threads: int, block_s: float) -> tuple[list[tuple[Any, float]], float]:
    """Every operator of one step of the probe with its seconds, and the step's own seconds
    (median of steps timed without the mode, after a warm-up step)."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    model = factory()
    images = torch.randn(*shape)
    labels = torch.randint(0, 10, (shape[0],))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4) if mode == "train" else None
    timer = OpTimer(clock, threads, block_s, reuse=mode == "train")

    def step(timed: bool = False) -> None:
        if mode == "infer":
            model.eval()
            with torch.inference_mode():
                if timed:
                    with timer.mode():
                        model(images)
                else:
                    model(images)
            return
        model.train()
        context = timer.mode() if timed else _null()
        with context:
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            timer.in_optimizer = True
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            timer.in_optimizer = False

    step()
    step()  # the optimizer's state exists from here on: steady state
    # the whole step in 5 blocks even when long: the framework cost is fitted to the step less its
    # operators' sum, a difference that would carry one call's noise whole
    step_s = median_seconds(step, clock, threads, block_s * 4, blocks=5, long_once=False)
    step(timed=True)
    return timer.samples, step_s


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def probe_steps() -> list[str]:
    """The labels of :func:`time_probes`' steps, in order (for progress)."""
    return [f"probe {name}, {mode}" for name, _, _ in probes() for mode in ("infer", "train")]


def time_probes(clock: Callable[[], float] = time.process_time, threads: int = 1, block_s: float = 0.002,
                on_step: Callable[[str], None] | None = None):
    """Operator samples and step timings of every probe, inference and training; ``on_step(label)``
    as each starts (:func:`probe_steps`)."""
    samples: list[tuple[Any, float]] = []
    steps: list[StepTiming] = []
    for name, factory, shape in probes():
        for mode in ("infer", "train"):
            if on_step is not None:
                on_step(f"probe {name}, {mode}")
            ops, step_s = run_probe(factory, shape, mode, clock, threads, block_s)
            samples.extend(ops)
            steps.append(StepTiming(name, mode, step_s, sum(s for _, s in ops), len(ops),
                                    sum(op.component == "optimizer" for op, _ in ops),
                                    sum(s for op, s in ops if op.kernel in COMPUTE_KERNELS and op.macs)))
    return samples, steps


#: (batch x heads, tokens, head dim) of the attention grid
ATTENTION_GRID = tuple((batch_heads, tokens, head_dim) for tokens in (16, 64, 256, 1024) for head_dim in (16, 64, 128)
                       for batch_heads in ((8, 96) if tokens <= 256 else (8,)))
#: (batch, in channels, size, out channels, kernel, stride, groups) of the convolution list:
#: stems, patch embeddings, 3x3 and 1x1 layers from 16 to 1024 channels, depthwise 3x3, 5x5 and 7x7
CONV_LIST = (
    (2, 3, 224, 64, 7, 2, 1), (2, 3, 224, 192, 16, 16, 1), (4, 3, 32, 64, 3, 1, 1), (2, 3, 224, 96, 4, 4, 1),
    (2, 16, 56, 16, 3, 1, 1), (2, 64, 56, 64, 3, 1, 1), (2, 64, 56, 256, 1, 1, 1), (2, 256, 56, 64, 1, 1, 1),
    (2, 128, 28, 128, 3, 1, 1), (2, 256, 14, 256, 3, 1, 1), (2, 1024, 14, 256, 1, 1, 1), (2, 512, 7, 512, 3, 1, 1),
    (2, 128, 56, 128, 3, 2, 1), (2, 96, 56, 96, 7, 1, 96), (2, 384, 14, 384, 7, 1, 384), (4, 64, 56, 64, 3, 1, 64),
    # CIFAR networks: 3x3 layers at 32, 16 and 8 px
    (8, 64, 32, 64, 3, 1, 1), (8, 128, 16, 128, 3, 1, 1), (8, 256, 8, 256, 3, 1, 1),
    # mobile networks: narrow 1x1 convolutions at high resolution, depthwise 3x3 and 5x5, with stride
    (4, 16, 112, 16, 1, 1, 1), (4, 72, 28, 24, 1, 1, 1), (4, 16, 112, 16, 3, 2, 16), (4, 96, 28, 96, 5, 2, 96),
)


def kernel_steps() -> list[str]:
    """The labels of :func:`time_kernels`' steps, in order (for progress)."""
    return [f"attention kernels ({len(ATTENTION_GRID)} shapes, forward and backward)",
            f"convolutions ({len(CONV_LIST)} layers, forward and backward)"]


def time_kernels(clock: Callable[[], float] = time.process_time, threads: int = 1, block_s: float = 0.002,
                 on_step: Callable[[str], None] | None = None):
    """Operator samples of the designed grids: attention (fused kernel, forward and backward) and
    convolutions (forward and backward), each run for real under :class:`OpTimer`; ``on_step(label)``
    as each grid starts (:func:`kernel_steps`)."""
    import torch
    import torch.nn.functional as F

    timer = OpTimer(clock, threads, block_s)
    torch.manual_seed(0)
    attention, convolutions = kernel_steps()
    if on_step is not None:
        on_step(attention)
    for batch_heads, tokens, head_dim in ATTENTION_GRID:
        q, k, v = (torch.randn(batch_heads, tokens, head_dim, requires_grad=True) for _ in range(3))
        with timer.mode():
            out = F.scaled_dot_product_attention(q, k, v)
            out.backward(torch.ones_like(out))
        with torch.inference_mode(), timer.mode():
            F.scaled_dot_product_attention(q.detach(), k.detach(), v.detach())
    if on_step is not None:
        on_step(convolutions)
    for batch, channels, size, out_channels, kernel, stride, groups in CONV_LIST:
        x = torch.randn(batch, channels, size, size, requires_grad=channels > 3)
        w = torch.randn(out_channels, channels // groups, kernel, kernel, requires_grad=True)
        with timer.mode():
            padding = 0 if kernel == stride else kernel // 2  # a patch embedding has none
            out = F.conv2d(x, w, stride=stride, padding=padding, groups=groups)
            out.backward(torch.ones_like(out))
    return timer.samples
