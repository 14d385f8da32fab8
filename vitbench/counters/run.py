"""Run one counter on one Target: which module instance each counter sees, on which device.

- dispatch: the light-built module (parameters on meta, real buffers) called through
  ``functional_call`` with every tensor on meta; a live module is counted the same way without
  being touched. A model that cannot run on meta (data-dependent shapes) falls back to running
  on the CPU with zero-filled weights, and says so.
- fvcore: a fresh light build with parameters materialised as zero-filled CPU storage (fvcore
  executes the model; buffers keep their real values); a live module is traced as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from vitbench.counters import limits
from vitbench.counters.dispatch import dispatch_count
from vitbench.counters.fvcore_counter import fvcore_count
from vitbench.counters.limits import CountingRefused
from vitbench.errors import ModelError, model_code, model_forward
from vitbench.models import build_spec, build_uninitialized
from vitbench.models.materialize import meta_state, parameter_count
from vitbench.models.target import Target, light_module


@contextlib.contextmanager
def _eval_mode(module) -> Iterator[None]:
    """Eval mode for the duration, then each submodule's own mode back (a live module is the
    user's: leave it as it was)."""
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        yield
    finally:
        for m, training in modes:
            m.training = training


def _light(target: Target):
    if target.source in ("preset", "spec"):
        return light_module(("spec", target.spec), lambda: build_spec(target.spec))
    return light_module(("target", target), target.build)


def _fresh_for_fvcore(target: Target):
    return build_uninitialized(target.spec if target.source in ("preset", "spec") else target)


def _too_big_to_execute(target: Target) -> str | None:
    """Why fvcore must not build this model for real (its parameters would take more than half
    of the memory available now: an 8-billion-parameter language model behind an image encoder
    was OOM-killed there), or None."""
    module = _light(target)
    seen: set[int] = set()
    need = 0
    for param in module.parameters():
        if id(param) not in seen:
            seen.add(id(param))
            need += param.numel() * param.element_size()
    available = _available_memory()
    if available is not None and need > available // 2:
        return f"its parameters ({need / 1e9:.1f} GB) would take more than half of the memory available ({available / 1e9:.1f} GB)"
    return None


def _available_memory() -> int | None:
    return limits.available_memory()


def run_dispatch(target: Target, batch_size: int) -> tuple[Any, int, str | None]:
    """(DispatchCount, parameters of the module, note or None)."""
    import torch

    module = target.module if target.module is not None else _light(target)
    params = parameter_count(module)
    shape = (batch_size, *target.input_size)
    with _eval_mode(module):
        try:
            state = meta_state(module)
            with model_code():
                return dispatch_count(module, (torch.empty(shape, device="meta"),), state=state), params, None
        except ModelError as exc:  # data-dependent shapes, tensors the constructor left on the CPU
            cause = exc.__cause__ or exc
            reason = str(cause).strip().splitlines()[0][:120] if str(cause).strip() else type(cause).__name__
        too_big = None if target.module is not None else _too_big_to_execute(target)
        if too_big:
            raise CountingRefused(f"the model cannot run on the meta device ({reason}), and running it for real is refused: {too_big}")
        real = module if target.module is not None and not _on_meta(module) else _fresh_for_fvcore(target).eval()
        device = _device_of(real)
        counted = dispatch_count(real, (torch.zeros(shape, device=device),), label=target.label)  # its failure: the model's
    return counted, params, f"dispatch counted by running on {device} (the model cannot run on meta: {reason})"


def run_fvcore(
    target: Target, batch_size: int, *, activations: bool, table_depth: int | None
) -> tuple[Any, int | None, str | None]:
    """(FvcoreCount or None, parameters of the traced module, note or None)."""
    import torch

    if target.module is not None and _on_meta(target.module):
        return None, None, "fvcore skipped: the module's parameters are on the meta device (fvcore executes the model)"
    if target.module is None:
        too_big = _too_big_to_execute(target)
        if too_big:
            return None, None, f"fvcore skipped: it executes the model, and {too_big}; the dispatch count stands"
    module = target.module if target.module is not None else _fresh_for_fvcore(target)
    shape = (batch_size, *target.input_size)
    images = torch.zeros(shape, device=_device_of(module))
    with _eval_mode(module), model_forward(images, target.label):  # fvcore runs the model's forward
        counted = fvcore_count(module, (images,), activations=activations, table_depth=table_depth)
    return counted, parameter_count(module), None


def params_by_path(target: Target, depth: int) -> dict[str, int]:
    """Parameters per module path prefix down to ``depth`` ('' = all; tied ones once)."""
    module = target.module if target.module is not None else _light(target)
    out: dict[str, int] = {}
    for name, param in module.named_parameters():
        parts = name.split(".")[:-1]
        for level in range(min(depth, len(parts)) + 1):
            prefix = ".".join(parts[:level])
            out[prefix] = out.get(prefix, 0) + param.numel()
    return out


def _on_meta(module) -> bool:
    return any(t.device.type == "meta" for t in (*module.parameters(), *module.buffers()))


def _device_of(module):
    import torch

    for tensor in (*module.parameters(), *module.buffers()):
        return tensor.device
    return torch.device("cpu")
