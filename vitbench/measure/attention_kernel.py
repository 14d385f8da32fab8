"""Which attention kernel actually ran, read from the profiler's operator names during one
step (SDPA picks a backend at run time from device, dtype, shapes and flags)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from vitbench.measure.quiet import quiet_profile
from vitbench.measure.timer import synchronize
from vitbench.specs import ViTSpec

#: aten op name -> kernel label; longer names first (prefixes of one another).
KERNEL_OPS: tuple[tuple[str, str], ...] = (
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "cpu_flash"),
    ("aten::_scaled_dot_product_flash_attention", "flash"),
    ("aten::_scaled_dot_product_efficient_attention", "mem_efficient"),
    ("aten::_scaled_dot_product_cudnn_attention", "cudnn"),
    ("aten::_scaled_dot_product_attention_math", "math"),
    ("aten::_scaled_dot_product_fused_attention_overrideable", "overrideable"),
)

#: label for our ViT's explicit softmax(QK^T)V path (no SDPA call)
EXPLICIT = "explicit"


def kernel_of(op_name: str) -> str | None:
    """Kernel label of one profiler op name; None for anything else (backward ops included)."""
    if op_name.endswith("_backward"):
        return None
    for prefix, label in KERNEL_OPS:
        if op_name == prefix or op_name.startswith(prefix + "_for_") or op_name == prefix + ".default":
            return label
    return None


def kernels_from_names(names: Iterable[str]) -> Counter:
    """How many times each attention kernel ran, from a sequence of op names."""
    return Counter(label for label in map(kernel_of, names) if label is not None)


def label(counts: Counter, sdpa_expected: bool) -> str | None:
    """One label for a result: the kernel, several joined by '+', 'explicit' when the model does
    its own softmax(QK^T)V, 'unknown' when SDPA was expected but none was seen."""
    if counts:
        return "+".join(sorted(counts))
    return "unknown" if sdpa_expected else EXPLICIT


def detect(workload, spec) -> str | None:
    """Run one step of ``workload`` under ``torch.profiler`` and name the attention kernel
    (None for models without attention)."""
    if not isinstance(spec, ViTSpec):
        return None
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if workload.device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    with quiet_profile(profile(activities=activities)) as prof:
        workload.run(1)
        synchronize(workload.device)
    names = [event.name for event in prof.events()]
    return label(kernels_from_names(names), sdpa_expected=spec.attention == "sdpa")
