"""Memory before running: what the analytic memory model (``vitbench plan``) predicts for a
configuration, the configurations refused without running (predicted over the memory cap or
over the machine's memory), and the budget and starting batch of ``--batch-size auto``.

The prediction covers the tensors of one step (weights, buffers, optimizer state, gradients,
activations, temporaries); it is what ``peak_memory_bytes`` measures, so the two are compared
directly. Models the memory model does not cover (references without a spec, Swin, ConvNeXt)
get no prediction: they are neither refused nor planned, only measured.
"""

from __future__ import annotations

import os
from typing import Any

from vitbench.analytic.memory import (
    gradients_bytes,
    memory_estimate,
    optimizer_bytes,
    predicted_max_batch,
    unsupported_reason,
    weights_bytes,
)
from vitbench.analytic.memory.planner import largest_batch
from vitbench.counters.memory_trace import trace_target
from vitbench.errors import VitbenchError
from vitbench.measure.machine import meminfo
from vitbench.settings import RunSettings
from vitbench.units import binary_bytes


def persistent_bytes(target, settings: RunSettings) -> int | None:
    """What the step holds whatever the batch, from the closed forms (cheap even for a
    100,000-layer model): fp32 weights 4 P, in training also gradients 4 P and the optimizer
    state (0, 4 P or 8 P). A lower bound of the peak; None when P is unknown."""
    if target.params is None:
        return None

    held = weights_bytes(target.params)
    if settings.mode == "train":
        held += gradients_bytes(target.params) + optimizer_bytes(target.params, settings.optimizer)
    return held


#: PyTorch's default cuBLAS workspace (CUBLAS_WORKSPACE_CONFIG) from compute capability 9.0 on,
#: and before it; cuBLASLt's (CUBLASLT_WORKSPACE_SIZE, KiB)
CUBLAS_DEFAULT_CONFIG = {True: ":4096:8", False: ":4096:2:16:8"}
CUBLASLT_DEFAULT_KIB = 1024


def cublas_config_bytes(config: str) -> int:
    """Bytes of a CUBLAS_WORKSPACE_CONFIG value, ``:SIZE_KiB:COUNT`` pairs: sum of SIZE x COUNT KiB
    (``:4096:8`` = 32 MiB)."""
    numbers = [int(part) for part in config.split(":") if part.strip()]
    if len(numbers) % 2:
        raise ValueError(f"CUBLAS_WORKSPACE_CONFIG={config!r}: expected :SIZE_KiB:COUNT pairs")
    return sum(size * count * 1024 for size, count in zip(numbers[::2], numbers[1::2]))


def cuda_workspace_bytes(mode: str, hopper_or_later: bool, environ: Any = None) -> int:
    """What CUDA's caching allocator holds beside the step's tensors for cuBLAS:

        W = handles x cublas_config_bytes(CUBLAS_WORKSPACE_CONFIG) + CUBLASLT_WORKSPACE_SIZE KiB

    with one cuBLAS handle per thread that runs matrix products (the main thread; in training
    also the autograd engine's backward thread: handles = 2) and PyTorch's defaults ``:4096:8``
    (32 MiB, compute capability 9.0 on) or ``:4096:2:16:8`` (8 MiB + 128 KiB), 1024 KiB for
    cuBLASLt. Measured on an H100 (torch 2.11), training: 68,173,672 B beside the tensors at
    two batch sizes, this formula 68,157,440 B."""
    environ = os.environ if environ is None else environ
    config = environ.get("CUBLAS_WORKSPACE_CONFIG") or CUBLAS_DEFAULT_CONFIG[bool(hopper_or_later)]
    try:
        per_handle = cublas_config_bytes(config)
    except ValueError:
        per_handle = cublas_config_bytes(CUBLAS_DEFAULT_CONFIG[bool(hopper_or_later)])
    try:
        lt = int(environ.get("CUBLASLT_WORKSPACE_SIZE") or CUBLASLT_DEFAULT_KIB) * 1024
    except ValueError:
        lt = CUBLASLT_DEFAULT_KIB * 1024
    return (2 if mode == "train" else 1) * per_handle + lt


def device_overhead_bytes(device: str, mode: str) -> int:
    """Bytes a run on ``device`` allocates beyond its tensors that the peak counts: cuBLAS's
    workspaces on CUDA (:func:`cuda_workspace_bytes`), nothing on the CPU."""
    if not device.startswith("cuda"):
        return 0
    import torch

    index = torch.cuda.current_device() if device == "cuda" else int(device.split(":")[1])
    return cuda_workspace_bytes(mode, torch.cuda.get_device_capability(index)[0] >= 9)


def predicted_peak(target, settings: RunSettings, batch_size: int) -> int | None:
    """Predicted peak bytes of one step at ``batch_size``; None without a memory model."""
    estimate = _estimate(target, settings, batch_size)
    return None if estimate is None else estimate.peak_bytes


def _estimate(target, settings: RunSettings, batch_size: Any) -> Any:
    """The memory model's estimate of one step at ``batch_size`` (None without one)."""
    if target.spec is None or batch_size == "auto":
        return None

    try:
        if unsupported_reason(target.spec) is not None:
            return None
        return memory_estimate(target.spec, batch_size, settings.mode, settings.precision, settings.optimizer,
                               settings.attention)
    except VitbenchError:  # a spec the memory model rejects (a SpecError): measured without a prediction
        return None


def planned_batch(target, settings: RunSettings, budget_bytes: int, device: str = "cpu") -> int | None:
    """The largest batch whose predicted peak fits ``budget_bytes`` (0: not even one image):
    the memory replay of a spec, else the step traced on fake tensors (any model, as
    ``vitbench plan`` does), so that ``--batch-size auto`` starts from the same number every
    run; None when neither covers the model (then the batch is searched for under the cap)."""
    budget_bytes = max(0, int(budget_bytes) - device_overhead_bytes(device, settings.mode))
    if target.spec is not None:
        try:
            planned = predicted_max_batch(target.spec, int(budget_bytes), settings)
        except VitbenchError:  # no plan (a SpecError): the batch is searched for instead
            planned = None
        if planned is not None:
            return planned
    resolved = getattr(target, "target", target)  # a measure.target.Measured wraps the Target
    try:
        return largest_batch(trace_target(resolved, settings.mode, settings.precision, settings.optimizer), int(budget_bytes))
    except VitbenchError:  # the model cannot be traced (a ModelError): searched for instead
        return None


def device_memory(device: str) -> tuple[int | None, int | None]:
    """(total, available) bytes of the memory a run on ``device`` allocates from: the machine's
    RAM (/proc/meminfo MemTotal, MemAvailable) or the GPU's (``torch.cuda.mem_get_info``)."""
    if device.startswith("cuda"):
        import torch

        index = torch.cuda.current_device() if device == "cuda" else int(device.split(":")[1])
        free, total = torch.cuda.mem_get_info(index)
        return int(total), int(free)

    info = meminfo()
    return info.get("MemTotal"), info.get("MemAvailable")


def _bytes(value: int) -> str:
    return f"{binary_bytes(value)} ({value} B)"


def refusal(target, settings: RunSettings, device: str) -> str | None:
    """Why a configuration with a fixed batch size is not run (its predicted peak exceeds the
    memory cap, or the device's total memory), or None. ``settings.memory_check=False`` runs
    everything."""
    if not settings.memory_check:
        return None
    total, _ = device_memory(device)
    cap = settings.memory_limit_bytes
    where = "the GPU's memory" if device.startswith("cuda") else "this machine's memory"
    advice = "not run (the memory model of `vitbench plan`; --no-memory-check runs it anyway)"
    held = persistent_bytes(target, settings)
    for name, bound in (("the memory limit", cap), (where, total)):
        if held is not None and bound is not None and held > bound:
            return f"weights{', gradients and optimizer state' if settings.mode == 'train' else ''} alone need {_bytes(held)}, more than {name}, {_bytes(bound)}: {advice}"
    if settings.batch_size == "auto":
        return None
    peak = predicted_peak(target, settings, settings.batch_size)
    if peak is not None:
        peak += device_overhead_bytes(device, settings.mode)
    for name, bound in (("the memory limit", cap), (where, total)):
        if peak is not None and bound is not None and peak > bound:
            return f"predicted peak {_bytes(peak)} exceeds {name}, {_bytes(bound)}: {advice}"
    return None


def auto_budget(settings: RunSettings, device: str) -> tuple[int | None, str]:
    """The memory ``--batch-size auto`` may fill and where it comes from: the memory limit
    when set, else what the device has available now."""
    if settings.memory_limit_bytes is not None:
        return settings.memory_limit_bytes, "memory_limit"
    _, available = device_memory(device)
    return available, "available memory"


def prediction_columns(target, settings: RunSettings, batch_size: int, device: str = "cpu") -> dict[str, Any]:
    """``pred_peak_memory_bytes`` for the measured batch (None without a memory model): the
    tensors' predicted peak plus, on CUDA, cuBLAS's workspaces (``pred_workspace_bytes``); and
    ``pred_activations_bytes``, the activations the memory model predicts (beside the measured
    ``mem_activations_bytes``)."""
    estimate = _estimate(target, settings, batch_size)
    if estimate is None:
        return {"pred_peak_memory_bytes": None}
    columns = {"pred_peak_memory_bytes": estimate.peak_bytes, "pred_activations_bytes": estimate.activations_bytes}
    if device.startswith("cuda"):
        workspace = device_overhead_bytes(device, settings.mode)
        columns.update(pred_peak_memory_bytes=estimate.peak_bytes + workspace, pred_workspace_bytes=workspace)
    return columns
