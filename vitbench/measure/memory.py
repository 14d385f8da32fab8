"""Peak memory of one step, measured in a pass separate from timing.

CUDA: ``torch.cuda.reset_peak_memory_stats`` then ``max_memory_allocated`` /
``max_memory_reserved`` over two steady-state steps. Both devices: the profiler's memory events
(``torch.profiler.profile(profile_memory=True)``) over one steady-state step, categorised by
PyTorch's memory profiler (the analysis behind ``export_memory_timeline``) into parameters,
gradients, optimizer state, inputs, activations and temporaries. On the CPU the peak is the
largest total of live bytes in that timeline. All values are bytes.

Columns: ``peak_memory_bytes``; ``peak_reserved_bytes`` (CUDA); ``mem_<category>_bytes`` = the
largest live bytes of that category during the step (so they need not sum to the peak: the
gradients peak after the activations are freed); ``peak_composition`` = {category: bytes} at
the instant of the peak. ``mem_temporaries_bytes`` gathers the profiler's temporaries, autograd
details and allocations not tied to a tensor (kernel workspaces). ``mem_optimizer_bytes`` holds
the per-parameter state buffers (AdamW ``exp_avg`` and ``exp_avg_sq``, SGD ``momentum_buffer``);
AdamW's one-element ``step`` counters (4 bytes per parameter tensor) are counted apart in
``mem_optimizer_steps_bytes``.
"""

from __future__ import annotations

from typing import Any

from vitbench.errors import ModelError, SpecError, model_code
from vitbench.measure import workload as workloads
from vitbench.measure.env import thread_count, validate_settings
from vitbench.measure.quiet import quiet_profile
from vitbench.measure.timer import synchronize
from vitbench.settings import RunSettings
from vitbench.specs import ModelSpec

#: reported categories, in display order
CATEGORIES = ("params", "grads", "optimizer", "optimizer_steps", "inputs", "activations", "temporaries")

MEMORY_COLUMNS = (
    "peak_memory_bytes",
    "peak_reserved_bytes",
    *(f"mem_{c}_bytes" for c in CATEGORIES),
    "peak_composition",
    "memory_method",
)


def _category_name(category) -> str:
    """PyTorch's memory-profiler category -> our column name."""
    from torch.profiler._memory_profiler import Category

    return {
        Category.PARAMETER: "params",
        Category.GRADIENT: "grads",
        Category.OPTIMIZER_STATE: "optimizer",
        Category.INPUT: "inputs",
        Category.ACTIVATION: "activations",
        Category.TEMPORARY: "temporaries",
        Category.AUTOGRAD_DETAIL: "temporaries",
    }.get(category, "temporaries")


def _step_counter_ptrs(optimizer) -> set[int]:
    """Storage addresses of the optimizer's scalar ``step`` tensors (AdamW keeps one per
    parameter)."""
    import torch

    ptrs = set()
    if optimizer is None:
        return ptrs
    for state in optimizer.state.values():
        step = state.get("step")
        if isinstance(step, torch.Tensor):
            ptrs.add(step.untyped_storage().data_ptr())
    return ptrs


def categorized_timeline(prof, device: str, step_ptrs: set[int]) -> list[dict[str, int]]:
    """Live bytes per category after every memory event of the profiled region, on ``device``.

    Built from ``MemoryProfile.timeline`` (create / destroy / new version of each tensor, with
    tensors that existed before the region counted from its start) and the profiler's category
    of every (tensor, version)."""
    import torch
    from torch.profiler._memory_profiler import Action, MemoryProfile, TensorKey

    profile = MemoryProfile(prof.profiler.kineto_results)
    target = torch.device(device)
    live = dict.fromkeys(CATEGORIES, 0)
    states: list[dict[str, int]] = []
    last_time = None

    def name(key, version) -> str:
        if not isinstance(key, TensorKey):
            return "temporaries"  # allocations not tied to a tensor (kernel workspaces)
        if key.storage.ptr in step_ptrs:
            return "optimizer_steps"
        return _category_name(profile._categories.get(key, version))

    for t, action, (key, version), size in profile.timeline:
        if key.device != target:
            continue
        if last_time is not None and t != last_time:
            states.append(dict(live))
        last_time = t
        if action in (Action.PREEXISTING, Action.CREATE):
            live[name(key, version)] += size
        elif action == Action.INCREMENT_VERSION:
            live[name(key, version)] -= size
            live[name(key, version + 1)] += size
        elif action == Action.DESTROY:
            live[name(key, version)] -= size
    states.append(dict(live))
    return states


def summarize_timeline(states: list[dict[str, int]]) -> dict[str, Any]:
    """Peak total, per-category maxima and the composition at the peak."""
    totals = [sum(s.values()) for s in states]
    at = max(range(len(totals)), key=totals.__getitem__)
    out: dict[str, Any] = {"peak_memory_bytes": int(totals[at])}
    for category in CATEGORIES:
        out[f"mem_{category}_bytes"] = int(max(s[category] for s in states))
    out["peak_composition"] = {c: int(v) for c, v in states[at].items() if v}
    return out


def _profile_step(workload) -> Any:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if workload.device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    with quiet_profile(profile(activities=activities, profile_memory=True, record_shapes=True, with_stack=True)) as prof:
        workload.run(1)
        synchronize(workload.device)
    return prof


def measure_workload_memory(workload) -> dict[str, Any]:
    """The memory columns for an already built (and warmed-up) workload.

    One warm-up step first (creates the optimizer state), so the measured step is a steady-state
    one. Raises on OOM like the step itself."""
    record: dict[str, Any] = dict.fromkeys(MEMORY_COLUMNS)
    workload.run(1)
    synchronize(workload.device)
    target = workload.device
    if workload.device.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats()
        workload.run(2)
        torch.cuda.synchronize()
        record["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated())
        record["peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved())
        record["memory_method"] = "cuda_allocator"
        target = f"cuda:{torch.cuda.current_device()}"
        try:
            with model_code():  # torch's profiler (a private API) on the model's step
                summary = summarize_timeline(categorized_timeline(_profile_step(workload), target, _step_counter_ptrs(workload.optimizer)))
        except ModelError as exc:  # the breakdown is extra on CUDA: the allocator's peak stands
            record["memory_breakdown_error"] = exc.detail
            return record
        summary.pop("peak_memory_bytes")  # the allocator's own peak is authoritative on CUDA
        record.update(summary)
        return record
    states = categorized_timeline(_profile_step(workload), target, _step_counter_ptrs(workload.optimizer))
    record.update(summarize_timeline(states))
    record["memory_method"] = "profiler_memory_events"
    return record


def peak_memory(spec: ModelSpec, settings: RunSettings | None = None) -> dict[str, Any]:
    """Measured peak memory of one step of ``spec`` (a spec, preset name, reference or
    module) under ``settings`` (memory columns, bytes), in this process.

    Builds its own model, inputs and optimizer; ``settings.batch_size`` must be an integer.
    Raises on OOM (``measure`` turns that into a ``status='oom'`` row)."""
    settings = settings or RunSettings()
    if settings.batch_size == "auto":
        raise SpecError("batch_size", "auto", "peak_memory needs an integer batch size")
    device = validate_settings(settings)
    with thread_count(settings.threads):
        workload = workloads.build_workload(spec, settings, settings.batch_size, device)
        try:
            return measure_workload_memory(workload)
        finally:
            workload.close()
