"""Claims about a GPU (throughput, GPU memory): judged only by a measurement on a CUDA device
that matches the claim's ``device``, never against CPU figures.

Without a measurement the verdict is 'needs a GPU'; for memory the explanation still gives the
analytic model's figure, saying what it covers (PyTorch's CPU operators replayed: no CUDA
context, cuBLAS/cuDNN workspaces or caching-allocator rounding), so nothing is compared across
devices. A measurement on another GPU than the one named gives 'not checkable'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vitbench.claims.claim import Claim
from vitbench.claims.explain import assumptions, format_pct, off_pct, what, within
from vitbench.claims.quantities import QUANTITIES
from vitbench.claims.recompute import Cache, NotRecomputed, value_of
from vitbench.claims.stated import format_like
from vitbench.claims.verdicts import ClaimVerdict
from vitbench.errors import model_code
from vitbench.measure.profile import profile
from vitbench.row_status import RowStatus
from vitbench.settings import RunSettings

#: (spec, batch_size, mode) -> a :func:`vitbench.profile` record (``status``, ``device``, the
#: measured field, ``env_device_name``), or None where no CUDA device is available.
Measurer = Callable[[Any, int, str], dict | None]
_GPU_EXTRAS = "the CUDA context, cuBLAS/cuDNN workspaces and the caching allocator's rounding"


def measure_on(spec: Any, batch_size: int, mode: str, device: str = "cuda", **settings: Any) -> dict[str, Any]:
    """One fp32 measurement with :func:`vitbench.profile` (AdamW when training): a record with
    ``status``, ``device``, ``throughput_img_s``, ``peak_memory_bytes`` and ``env_device_name``.
    ``settings``: other :class:`vitbench.RunSettings` fields (e.g. ``min_run_time_s``)."""
    settings = RunSettings(device=device, mode=mode, batch_size=batch_size, precision="fp32",
                           optimizer="adamw", memory=True, **settings)
    return profile(spec, settings)[0]


def measure_on_cuda(spec: Any, batch_size: int, mode: str) -> dict[str, Any] | None:
    """:func:`measure_on` the CUDA device, or None without one (the default measurer)."""
    import torch

    if not torch.cuda.is_available():
        return None
    return measure_on(spec, batch_size, mode, "cuda")


def device_matches(claimed: str, record: dict[str, Any]) -> bool:
    """Whether a measurement ``record`` ran where the claim is about: 'GPU' matches any CUDA
    device; a model ('A100') must also appear in the device's name."""
    if record.get("device") != "cuda":
        return False
    name = str(record.get("env_device_name") or "")
    return claimed.strip().lower() == "gpu" or claimed.strip().lower() in name.lower()


def _needs_gpu(claim: Claim, record: dict[str, Any], asked: bool, cache: Cache) -> None:
    stated, q = claim.stated, QUANTITIES[claim.target.quantity]
    why = "no CUDA device here" if asked else "run `vitbench audit --measure` on a CUDA machine"
    predicted = ""
    if q.compute is not None:
        value, _ = value_of(claim.target, cache)
        predicted = (f"; the analytic model gives {format_like(stated, value)} ({q.basis}), without "
                     f"{_GPU_EXTRAS}, so it is not compared")
    named = "" if claim.device.strip().lower() == "gpu" else f" ({claim.device})"
    record.update(verdict=ClaimVerdict.NEEDS_GPU, verdict_text="needs a GPU",
                  explanation=(f"{stated.text}: needs a GPU{named} to measure {what(claim)}"
                               f"{predicted}{assumptions(claim)}; {why}."))


def judge_measured(claim: Claim, record: dict[str, Any], tol: float, measure: bool,
                   measurer: Measurer | None, cache: Cache) -> None:
    """Fill ``record`` for a claim about a device: measure it there, or say why not."""
    stated, q, target = claim.stated, QUANTITIES[claim.target.quantity], claim.target
    result = None
    if measure and measurer is not None:
        with model_code():  # the measurer may be the caller's own: what it raises is not vitbench's
            result = cache.get(("measure", target, q.mode),
                               lambda: measurer(target.spec(), target.batch_size, q.mode))
    if result is None:
        _needs_gpu(claim, record, measure, cache)
        return
    if result.get("status") != RowStatus.OK:
        raise NotRecomputed(f"measurement failed: {result.get('status')}: {result.get('error')}")
    value, device = float(result[q.measured]), str(result.get("env_device_name") or "cuda")
    shown = format_like(stated, value)
    record.update(recomputed=value, recomputed_text=shown, basis="measured")
    measured = f"measured {shown} for {what(claim)} on {device}{assumptions(claim)}"
    if not device_matches(claim.device, result):
        record.update(verdict=ClaimVerdict.NOT_CHECKABLE, verdict_text="not checkable",
                      explanation=f"{stated.text}: {measured}, but the claim is about the {claim.device}, so no verdict.")
    elif within(stated, value, tol):
        record.update(verdict=ClaimVerdict.HOLDS, verdict_text="holds", off_pct=off_pct(stated, value),
                      explanation=f"{stated.text} holds: {measured}.")
    else:
        pct = off_pct(stated, value)
        record.update(verdict=ClaimVerdict.OFF, verdict_text=f"off by {format_pct(pct)}", off_pct=pct,
                      explanation=f"{stated.text} is off by {format_pct(pct)}: {measured}.")
