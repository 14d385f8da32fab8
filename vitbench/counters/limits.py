"""What the counters refuse to trace, decided from the analytic size before anything is built
(as ``profile`` refuses from the memory model): a spec with more blocks than tracing can build
in reasonable time and memory, an input tensor that does not fit in memory, and (for fvcore and
``analyze --module-table``, which execute the model) a forward pass larger than the memory
available or of more than :data:`MAX_EXECUTED_MACS` (minutes on a CPU).

Measured here: building and tracing ViT-B/16 on the meta device costs about 14 ms and 0.9 MB
per block (depth 1000: 13.9 s, 900 MB peak), so depth 100,000 would take some 25 minutes and
90 GB; :data:`MAX_TRACED_BLOCKS` keeps a trace under about half a minute.
"""

from __future__ import annotations

from typing import Any

from vitbench.analytic import cnn, complexity_of, convnext, swin, vit
from vitbench.analytic.memory import memory_estimate
from vitbench.errors import VitbenchError
from vitbench.procfs import proc_bytes
from vitbench.specs.limits import MAX_STEP_TRACED_BLOCKS, MAX_TRACED_BLOCKS, blocks


class CountingRefused(VitbenchError):
    """A configuration the counters will not trace (exit code 2): the reason names the size."""


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    return proc_bytes("/proc/meminfo", "MemAvailable")


def largest_weight(spec: Any) -> tuple[int, str] | None:
    """(parameters, component) of the largest group of parameters ``spec`` builds at once (one
    block's, the position embedding, the head...), from the formulas: a build allocates each
    weight for real before it moves to the meta device, so the largest must fit in memory. None
    for a spec the formulas do not cover, or with more blocks than tracing builds."""
    count = blocks(spec)
    if spec is None or count is None or count > MAX_TRACED_BLOCKS:
        return None

    kind = getattr(spec, "kind", None)
    if kind == "vit":
        groups = {"patch_embed": vit.patch_embed_params(spec), "pos_embed": vit.pos_embed_params(spec),
                  "head": vit.head_params(spec), **vit.block_params(spec)}
    elif kind in ("swin", "convnext"):
        family = swin if kind == "swin" else convnext
        groups = {"stem": family.patch_embed_params(spec) if kind == "swin" else family.stem_params(spec),
                  "head": family.head_params(spec)}
        for stage in range(len(spec.depths)):
            groups.update({f"stage {stage + 1} {k}": v for k, v in family.block_params(spec, stage).items()})
    elif kind in ("resnet", "plaincnn"):
        groups = {layer.component: layer.params for layer in cnn.cnn_layers(spec)}
    else:
        return None
    name = max(groups, key=groups.__getitem__)
    return groups[name], name


#: a step of more multiply-accumulates than this has tensors of more elements than torch's
#: 64-bit sizes count (a fake tensor's size overflows, with torch's own traceback on stderr)
MAX_TRACED_MACS = 2**62


def trace_refusal(spec: Any, what: str, batch_size: int = 1, *, max_blocks: int = MAX_STEP_TRACED_BLOCKS) -> str | None:
    """Why ``what`` (a trace on fake tensors) must not build ``spec`` (None when it may), decided
    from the spec before anything is built: more than ``max_blocks`` blocks (by default
    :data:`~vitbench.specs.limits.MAX_STEP_TRACED_BLOCKS`, a whole step's budget, as ``predict``
    traces; the counters' forward passes :data:`MAX_TRACED_BLOCKS`), a step of more than
    :data:`MAX_TRACED_MACS`, or its largest weight, allocated for real before it moves to meta
    (4 bytes a parameter), more than the memory available.

    Why a budget of blocks refused from the spec, not a build on the meta device (issue 45): the
    build already costs no weights. Each parameter moves to meta as it is registered, before an
    initialiser touches it (:func:`vitbench.models.materialize.light_build`), so its
    ``torch.empty`` storage is never written; ViT-B/16 at depth 2,000 (14 billion parameters,
    57 GB of float32) built in 7 s and peaked at 0.93 GB with the trace. What grows is time: the
    Python modules and the operators traced on fake tensors, some 9 ms a block inference and 35 ms
    training. Only the number of blocks bounds that, and it is known from the spec."""
    count = blocks(spec)
    if count is not None and count > max_blocks:
        return (f"{what} would build and trace all {count:,} blocks; a step is traced for at most {max_blocks:,} "
                "(about 10 s); the analytic figures stand")
    found = largest_weight(spec)
    if found is None:
        return None
    count, component = found
    available = available_memory()
    if available is not None and count * 4 > available:
        return (f"{what} would allocate its largest weight ({component}: {count:,} parameters, {count * 4 / 1e9:,.3g} GB) "
                f"for real, more than the memory available ({available / 1e9:.1f} GB); the analytic figures stand")

    macs = complexity_of(spec, batch_size).macs
    if macs > MAX_TRACED_MACS:
        return (f"{what} would make tensors of more elements than torch counts: the step is {macs:.3g} MACs "
                f"(at most {MAX_TRACED_MACS:.3g} are traced); the analytic figures stand")
    return None


#: multiply-accumulates of one forward pass that a real run on the CPU (fvcore, which executes the
#: model and traces it twice, for MACs and for activations; ``analyze --module-table``) does at
#: most. Measured on this 2-core machine: mnist-vit at batch 3000 (17.8 GMACs a forward) took 4.2 s
#: on one thread, about 8.5 GMACs a second for both traces, so 10^12 MACs is some 4 minutes
#: (62,501 tokens, 1.5 x 10^12 MACs, ran over 100 s without finishing).
MAX_EXECUTED_MACS = 10**12


def real_forward_bytes(spec: Any, batch_size: int) -> int | None:
    """Bytes a forward pass traced by fvcore holds at its peak, from the memory model: the
    weights (4 P) and every activation of the forward, because torch.jit's tracer keeps each value
    it traced alive to the end, as a training step's forward saves them for backward
    (``memory_estimate(spec, B, "train").activations_bytes``, the input batch included).
    Measured (RSS growth of ``count_target(.., ("fvcore",))`` against this): mnist-vit batch 1000,
    649 MB against 651 MB; batch 3000, 1.55 GB against 1.95 GB; 5,626 tokens at batch 2, 186 MB
    against 147 MB. None for a spec the memory model does not cover."""
    try:
        estimate = memory_estimate(spec, batch_size, "train")
    except VitbenchError:  # no memory model for this spec (a SpecError): nothing to refuse from
        return None
    return estimate.weights_bytes + estimate.activations_bytes


def _sizes(batch_size: int, input_size: Any) -> str:
    height, width = input_size[-2:]
    return f"batch_size={batch_size}, img_size={height if height == width else f'{height}x{width}'}"


def real_forward_refusal(spec: Any, batch_size: int, input_size: Any, available: int | None) -> str | None:
    """Why a real forward pass of ``spec`` on ``batch_size`` images of ``input_size`` (C, H, W)
    must not run (fvcore, the module table), or None: more than :data:`MAX_EXECUTED_MACS`
    (minutes on a CPU), or :func:`real_forward_bytes` above half of ``available`` bytes. One line
    naming the batch size and image size and saying how to go on (the dispatch counter)."""
    if spec is None:
        return None

    where = _sizes(batch_size, input_size)
    runs = "a real forward pass (fvcore runs the model: --counters fvcore, --module-table)"
    macs = complexity_of(spec, batch_size).macs
    if macs > MAX_EXECUTED_MACS:
        return (f"{where}: {runs} is {macs:.3g} MACs, more than the {MAX_EXECUTED_MACS:.0e} a CPU run finishes in a few "
                f"minutes; use --counters dispatch (fake tensors, no compute) or a smaller batch or image")
    need = real_forward_bytes(spec, batch_size)
    if available is not None and need is not None and need > available // 2:
        return (f"{where}: {runs} needs about {need / 1e9:.3g} GB, more than half of this machine's {available / 1e9:.1f} GB "
                f"available; use --counters dispatch (fake tensors, no memory) or a smaller batch")
    return None


def executed_macs_refusal(target: Any, batch_size: int, dispatch_macs: int | None) -> str | None:
    """Why fvcore must not run a model no spec describes (``timm:``, ``hf:``, ``py:``, a live
    module), from the dispatch counter's MACs on fake tensors: more than :data:`MAX_EXECUTED_MACS`.
    None when there is a spec (:func:`real_forward_refusal` decided from it) or no count."""
    if getattr(target, "spec", None) is not None or dispatch_macs is None or dispatch_macs <= MAX_EXECUTED_MACS:
        return None
    return (f"{_sizes(batch_size, target.input_size)}: a real forward pass (fvcore runs the model) is {dispatch_macs:.3g} MACs "
            f"(counted on fake tensors), more than the {MAX_EXECUTED_MACS:.0e} a CPU run finishes in a few minutes; "
            f"the dispatch count stands (--counters dispatch), or use a smaller batch or image")


def counting_refusal(target: Any, batch_size: int, counters: Any) -> str | None:
    """Why the counters must not trace ``target`` at ``batch_size`` (None when they may):

    blocks(spec) > MAX_TRACED_BLOCKS, or the input B x C x H x W x 4 bytes above half the
    memory available, or (fvcore, which runs the model for real) :func:`real_forward_refusal`."""
    spec = getattr(target, "spec", None)
    count = blocks(spec)
    if count is not None and count > MAX_TRACED_BLOCKS:
        return (f"refused: tracing would build all {count:,} blocks (about 14 ms and 0.9 MB each); the counters trace at most "
                f"{MAX_TRACED_BLOCKS:,}; the analytic figures stand")
    available = available_memory()
    channels, height, width = target.input_size
    image_bytes = batch_size * channels * height * width * 4
    if available is not None and image_bytes > available // 2:
        return (f"refused: the input batch alone is {image_bytes / 1e9:.1f} GB, more than half of the memory available "
                f"({available / 1e9:.1f} GB)")
    weight = trace_refusal(spec, "tracing", batch_size, max_blocks=MAX_TRACED_BLOCKS)
    if weight is not None:
        return f"refused: {weight}"
    executed = real_forward_refusal(spec, batch_size, target.input_size, available) if "fvcore" in counters else None
    return f"refused: {executed}" if executed else None


__all__ = ["MAX_EXECUTED_MACS", "MAX_STEP_TRACED_BLOCKS", "MAX_TRACED_BLOCKS", "CountingRefused", "available_memory", "blocks", "counting_refusal",
           "executed_macs_refusal", "largest_weight", "real_forward_bytes", "real_forward_refusal", "trace_refusal"]
