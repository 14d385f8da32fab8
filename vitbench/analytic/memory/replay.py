"""The replay engine: live bytes during one step as an affine function of the batch.

Each tensor of the step is replayed as it is allocated, saved for backward and freed; its size
is ``per_image * B + const`` bytes. Every allocation is a candidate for the peak, so after the
replay

    peak(B) = fixed + max_k (a_k B + c_k)

over the live totals ``(a_k, c_k)`` at each allocation k (``fixed``: weights, buffers,
optimizer state). A maximum of affine functions is convex and increasing in B, which lets the
planner invert it exactly. Pure Python, no torch import.
"""

from __future__ import annotations

from dataclasses import dataclass

from vitbench.analytic.memory.closed_forms import FP32_BYTES


class Tensor:
    """A replayed tensor: ``per_image * B + const`` bytes and a reference count."""

    __slots__ = ("per_image", "const", "refs")

    def __init__(self, per_image: int, const: int):
        self.per_image = per_image
        self.const = const
        self.refs = 1


class Replay:
    """Live bytes as an affine function ``a B + c``; every allocation is a peak candidate.

    A tensor is born with one reference (its Python variable); ``save`` adds autograd's
    (training only); ``drop``/``release`` remove one; at zero the bytes are freed.
    ``grad``: a training step (autograd saves); ``low``: 16-bit autocast; ``batch_one``:
    B = 1, for which PyTorch picks some CPU convolution kernels differently."""

    def __init__(self, grad: bool, low: bool, batch_one: bool = False):
        self.grad = grad
        self.low = low
        self.batch_one = batch_one
        self.a = 0
        self.c = 0
        self.points: list[tuple[int, int]] = []
        self.marks: dict[str, tuple[int, int]] = {}
        self.cache: list[Tensor] = []  # autocast's weight-cast cache (freed on leaving autocast)
        self.pending: list[tuple[Tensor, int]] = []  # 16-bit weight grads awaiting ToCopy
        self.uncached: list[Tensor] = []  # weight casts of the running operator (inference)

    def new(self, per_image: int = 0, const: int = 0) -> Tensor:
        """Allocate ``per_image * B + const`` bytes (a peak candidate)."""
        self.a += per_image
        self.c += const
        self.points.append((self.a, self.c))
        return Tensor(per_image, const)

    def drop(self, *tensors: Tensor | None) -> None:
        """Remove one reference from each tensor (None skipped); free it at zero."""
        for t in tensors:
            if t is None:
                continue
            if t.refs <= 0:
                raise AssertionError("memory replay freed a tensor twice")
            t.refs -= 1
            if t.refs == 0:
                self.a -= t.per_image
                self.c -= t.const

    release = drop  # a backward node is done with what it saved

    def save(self, *tensors: Tensor | None) -> None:
        """Autograd keeps a reference for backward (training only)."""
        if self.grad:
            for t in tensors:
                if t is not None:
                    t.refs += 1

    def transient(self, *sizes: tuple[int, int]) -> None:
        """Buffers allocated one after another, then all freed (reorders, workspaces)."""
        self.drop(*[self.new(p, c) for p, c in sizes])

    def cast_weight(self, count: int, width: int) -> Tensor | None:
        """Autocast's 16-bit copy of a weight (None in fp32 or for no weight). With grad it is
        cached until autocast exits; under inference_mode autocast does not cache, and the
        copy goes when the operator returns (``end_op``)."""
        if not self.low or not count:
            return None
        t = self.new(0, width * count)
        (self.cache if self.grad else self.uncached).append(t)
        return t

    def end_op(self) -> None:
        """The running operator returns: its uncached weight casts go."""
        self.drop(*self.uncached)
        self.uncached = []

    def leave_autocast(self) -> None:
        """Leaving the autocast region empties its weight-cast cache."""
        self.drop(*self.cache)
        self.cache = []

    def weight_grad(self, count: int, width: int) -> None:
        """The .grad of a weight (kept). Used in 16 bits, the node yields a 16-bit gradient;
        ToCopyBackward makes the fp32 one after the node has freed its inputs (``flush``)."""
        if self.low and width != FP32_BYTES:
            self.pending.append((self.new(0, width * count), count))
        else:
            self.new(0, FP32_BYTES * count)

    def flush(self) -> None:
        """ToCopyBackward of the pending 16-bit weight gradients: fp32 copy, 16-bit freed."""
        for g, count in self.pending:
            self.new(0, FP32_BYTES * count)
            self.drop(g)
        self.pending = []

    def mark(self, name: str) -> None:
        """Remember the live bytes now (e.g. ``forward_end``)."""
        self.marks[name] = (self.a, self.c)


def optimizer_step(r: Replay, param_sizes: list[int], optimizer: str) -> None:
    """CPU single-tensor optimizers. AdamW per parameter: denom = (exp_avg_sq.sqrt() / c)
    .add_(eps) allocates sqrt and div (2 S); ``denom`` of the previous parameter is freed only
    when reassigned, so the transient is max_i (S_{i-1} + 2 S_i). SGD (with or without
    momentum) updates in place: no temporaries in steady state."""
    if optimizer != "adamw":
        return
    previous = None
    for size in param_sizes:
        sqrt = r.new(0, FP32_BYTES * size)
        denom = r.new(0, FP32_BYTES * size)
        r.drop(sqrt, previous)
        previous = denom
    r.drop(previous)


@dataclass(frozen=True)
class Profile:
    """A replayed step: ``points`` (bytes per image, constant bytes) at each allocation that
    can be the peak; ``forward_end`` the live bytes when forward and loss end; ``fixed`` the
    weights, buffers and optimizer state held throughout."""

    points: tuple[tuple[int, int], ...]
    forward_end: tuple[int, int]
    fixed: int

    def peak(self, batch_size: int) -> int:
        """peak(B) = fixed + max_k (a_k B + c_k)."""
        return self.fixed + max(a * batch_size + c for a, c in self.points)


def pareto(points: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Keep only points not dominated in both slope and intercept (the others never win)."""
    kept: list[tuple[int, int]] = []
    for a, c in sorted(set(points), key=lambda p: (-p[0], -p[1])):
        if not kept or c > kept[-1][1]:
            kept.append((a, c))
    return tuple(kept)
