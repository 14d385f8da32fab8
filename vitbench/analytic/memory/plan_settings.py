"""What ``plan`` is asked, as frozen settings validated once: :class:`PlanSettings` (a memory
budget, a batch size, the step's mode, precision, optimizer and attention path, and whether a
model the replay does not cover is traced). :func:`vitbench.plan_records` takes them, or builds
them from its keyword arguments. Pure Python: no torch."""

from __future__ import annotations

from dataclasses import dataclass

from vitbench.analytic.memory.closed_forms import check_batch, check_run
from vitbench.errors import SpecError
from vitbench.settings import ATTENTIONS, KeywordSettings

#: the largest memory budget a plan takes (1 EiB)
MAX_MEMORY_BYTES = 2**60


@dataclass(frozen=True)
class PlanSettings(KeywordSettings):
    """What :func:`vitbench.plan_records` predicts: the largest batch in ``memory_bytes``, the
    breakdown at ``batch_size``, or both (at least one of the two). Validated on construction.

    Attributes:
        memory_bytes: the memory budget, bytes (``max_batch_size``; ``fits`` with a batch size).
        batch_size: the batch whose peak and breakdown are predicted.
        mode: ``train`` (forward, loss, backward, optimizer step) or ``infer``.
        precision: ``fp32``, ``bf16`` or ``fp16`` autocast.
        optimizer: ``adamw``, ``sgd`` or ``sgd-momentum``.
        attention: a ViT's attention path for the replay (``sdpa``, ``math``; None: the spec's).
        trace: trace a model the replay does not cover on fake tensors (False: its row stays
            empty, with the reason).
    """

    memory_bytes: int | None = None
    batch_size: int | None = None
    mode: str = "train"
    precision: str = "fp32"
    optimizer: str = "adamw"
    attention: str | None = None
    trace: bool = True

    def __post_init__(self) -> None:
        budget = self.memory_bytes
        if budget is None and self.batch_size is None:
            raise SpecError("memory_bytes", None, "give a memory budget, a batch size, or both")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or not 0 <= budget <= MAX_MEMORY_BYTES):
            raise SpecError("memory_bytes", budget, "must be a non-negative integer up to 2^60 (1 EiB)")
        if self.batch_size is not None:
            check_batch(self.batch_size)
        check_run(self.mode, self.precision, self.optimizer)
        if self.attention is not None and self.attention not in ATTENTIONS:
            raise SpecError("attention", self.attention, f"must be one of {', '.join(ATTENTIONS)}")
        if not isinstance(self.trace, bool):
            raise SpecError("trace", self.trace, "must be true or false")


__all__ = ["MAX_MEMORY_BYTES", "PlanSettings"]
