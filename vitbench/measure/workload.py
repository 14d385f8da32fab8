"""The thing being measured: a model, a batch of inputs and one step (inference forward pass,
or a training step = forward, cross-entropy loss, backward, optimizer step, gradients set to
None), built for a device, precision and memory format."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vitbench.errors import SpecError
from vitbench.measure.target import resolve_measured
from vitbench.models.step import autocast_dtype, make_optimizer, step_loss
from vitbench.settings import RunSettings
from vitbench.specs import ModelSpec, ViTSpec, with_overrides


def effective_spec(spec: ModelSpec, settings: RunSettings) -> ModelSpec:
    """``spec`` with the run's attention implementation applied (ViTs only)."""
    if settings.attention and isinstance(spec, ViTSpec) and spec.attention != settings.attention:
        return with_overrides(spec, attention=settings.attention)
    return spec


def effective_target(target, settings: RunSettings):
    """``target`` with the run's attention implementation applied (vitbench's own ViTs only:
    a library's module is measured as the library builds it)."""
    if target.spec is None or target.target.source not in ("preset", "spec"):
        return target
    spec = effective_spec(target.spec, settings)
    return target if spec is target.spec else target.with_spec(spec)


def check_precision(device: str, precision: str) -> None:
    if precision == "fp16" and not device.startswith("cuda"):
        raise SpecError("precision", "fp16", "fp16 autocast needs --device cuda; use bf16 or fp32 on the CPU")


@dataclass
class Workload:
    model: Any
    inputs: Any
    targets: Any
    optimizer: Any
    device: str
    batch_size: int
    mode: str
    precision: str
    run: Callable[[int], None] = field(repr=False)
    extras: dict[str, Any] = field(default_factory=dict, repr=False)

    def close(self) -> None:
        """Drop every reference to tensors so their memory can be released."""
        self.model = self.inputs = self.targets = self.optimizer = None
        self.run = _closed
        self.extras.clear()


def _closed(steps: int) -> None:
    raise RuntimeError("workload already closed")


def build_workload(target, settings: RunSettings, batch_size: int, device: str) -> Workload:
    """Model, random inputs and labels on ``device``; ``run(n)`` performs n steps. ``target``:
    a :class:`vitbench.measure.target.Measured` (or anything that resolves to one)."""
    import torch

    check_precision(device, settings.precision)
    target = effective_target(resolve_measured(target), settings)
    torch.manual_seed(0)
    with torch.device(device):
        model = target.build()
    model = model.to(device)  # a live module built elsewhere
    memory_format = torch.channels_last if settings.channels_last else torch.contiguous_format
    if settings.channels_last:
        model = model.to(memory_format=torch.channels_last)
    c, (h, w) = target.in_chans, target.img_size
    inputs = torch.randn(batch_size, c, h, w, device=device).contiguous(memory_format=memory_format)
    targets = torch.randint(0, target.num_classes, (batch_size,), device=device) if target.num_classes else None
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    dtype = autocast_dtype(settings.precision)

    def autocast():
        return torch.autocast(device_type, dtype=dtype) if dtype is not None else contextlib.nullcontext()

    forward = torch.compile(model) if settings.compile else model
    optimizer = None
    extras: dict[str, Any] = {}

    if settings.mode == "infer":
        model.eval()

        def run(steps: int) -> None:
            with torch.inference_mode(), autocast():
                for _ in range(steps):
                    forward(inputs)

    else:
        model.train()
        optimizer = make_optimizer(settings.optimizer, model.parameters())
        scaler = torch.amp.GradScaler(device_type) if settings.precision == "fp16" else None
        extras["scaler"] = scaler

        def run(steps: int) -> None:
            for _ in range(steps):
                with autocast():
                    loss = step_loss(forward(inputs), targets)
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    optimizer.step()
                optimizer.zero_grad(set_to_none=True)

    return Workload(model, inputs, targets, optimizer, device, batch_size, settings.mode, settings.precision, run, extras)
