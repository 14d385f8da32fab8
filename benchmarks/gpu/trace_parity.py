"""On a machine with a GPU: does a training step traced as vitbench traces it without a GPU (the
backward run node by node in this thread, the fused attention chosen by vitbench's rule:
``gpu_backward.backward_in_this_thread``, ``gpu_backward.gpu_attention``) dispatch what the same
step traced with the GPU visible dispatches (autograd's own engine, PyTorch's own attention
choice)? Both on fake CUDA tensors; one row per configuration and side (operators, bytes, MACs,
the attention kernels), then the differing operator counts.

    python benchmarks/gpu/trace_parity.py [--out parity.csv] [--batch 32]

Without a GPU the "with a GPU" side cannot run; the script then compares the in-thread trace
with the CPU trace the same question took before (informative only), so it can be tried anywhere.
"""

from __future__ import annotations

import argparse
import collections
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

CONFIGS = (("timm:convnext_tiny", "bf16"), ("timm:swin_tiny_patch4_window7_224", "bf16"), ("vit-b/16", "bf16"),
           ("resnet50", "fp16"), ("timm:efficientnet_b0", "fp16"), ("vit-b/16", "fp32"))


def trace(model: str, precision: str, batch: int, side: str) -> list:
    """One training step: ``in-thread`` on fake CUDA as without a GPU (this machine's GPU hidden
    from the tracer), ``with a GPU`` on fake CUDA with it, otherwise on the CPU as before."""
    from vitbench.models import materialize
    from vitbench.models.references import resolve
    from vitbench.timemodel import ops

    target = resolve(model)
    module = materialize.light_build(target.build)
    if side not in ("in-thread", "with a GPU"):
        return ops._trace_module(module, target.input_size, None, (batch,), "train", precision, "adamw", "cpu",
                                 for_gpu=True)[batch]
    present = ops.cuda_present
    ops.cuda_present = (lambda: False) if side == "in-thread" else present
    try:
        return ops._trace_module(module, target.input_size, None, (batch,), "train", precision, "adamw", "cuda")[batch]
    finally:
        ops.cuda_present = present


def main() -> int:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("trace_parity.csv"))
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    reference = "with a GPU" if torch.cuda.is_available() else "on the CPU (no GPU here)"
    rows = []
    for model, precision in CONFIGS:
        found = {}
        for side in ("in-thread", reference):
            try:
                found[side] = trace(model, precision, args.batch, side)
            except Exception as exc:  # noqa: BLE001 - recorded, the rest go on
                rows.append({"model": model, "precision": precision, "side": side, "error": f"{type(exc).__name__}: {exc}"[:300]})
        for side, ops in found.items():
            attention = sorted({op.name for op in ops if "attention" in op.name})
            rows.append({"model": model, "precision": precision, "side": side, "operators": len(ops),
                         "bytes": sum(op.bytes for op in ops), "macs": sum(op.macs for op in ops),
                         "attention": " ".join(attention)})
        if len(found) == 2:
            a, b = (collections.Counter((op.name, op.dtype) for op in found[s]) for s in ("in-thread", reference))
            differ = {k: (a.get(k, 0), b.get(k, 0)) for k in a.keys() | b.keys() if a.get(k, 0) != b.get(k, 0)}
            rows.append({"model": model, "precision": precision, "side": "differing (in-thread, reference)",
                         "attention": "; ".join(f"{n} {d}: {x}/{y}" for (n, d), (x, y) in sorted(differ.items()))[:2000]})
        print(*(f"{r.get('model')} {r.get('precision')} {r.get('side')}: {r.get('operators', '')} ops "
                f"{r.get('bytes', 0) / 1e9:.3f} GB {r.get('attention', r.get('error', ''))[:200]}" for r in rows[-3:]),
              sep="\n", flush=True)
    fields = ("model", "precision", "side", "operators", "bytes", "macs", "attention", "error")
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out} ({reference})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
