"""The data-parallel model (vitbench/timemodel/interconnect.py, through vitbench.choose) against
NVIDIA's published 1-GPU and 8-GPU training throughputs (DeepLearningExamples, PyTorch ConvNets):
writes reports/multi-gpu/report.md. Run from the repository root:

    python benchmarks/multi_gpu/validate.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPO = "NVIDIA/DeepLearningExamples"
COMMIT = "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"
_README = "PyTorch/Classification/ConvNets/{}/README.md"
_CONFIGS = "PyTorch/Classification/ConvNets/configs.yml"

#: (model as NVIDIA names it, vitbench reference, system, card, NVIDIA's precision, vitbench's,
#:  batch per GPU (configs.yml), 1-GPU img/s, 8-GPU img/s), from the README's "Training
#: performance" tables (pytorch-21.03 NGC container, averaged over a training epoch, DALI, SGD
#: with momentum; AMP in channels-last)
FIGURES = (
    ("resnet50", "resnet50", "DGX A100 (8x A100 80GB)", "a100", "TF32", "tf32", 256, 938, 7248),
    ("resnet50", "resnet50", "DGX A100 (8x A100 80GB)", "a100", "AMP", "fp16", 256, 2470, 16621),
    ("resnet50", "resnet50", "DGX-1 16GB (8x V100 16GB)", "v100", "FP32", "fp32", 112, 367, 2855),
    ("resnet50", "resnet50", "DGX-1 16GB (8x V100 16GB)", "v100", "AMP", "fp16", 256, 1200, 8322),
    ("resnext101-32x4d", "timm:resnext101_32x4d", "DGX A100 (8x A100 80GB)", "a100", "TF32", "tf32", 128, 456, 3471),
    ("resnext101-32x4d", "timm:resnext101_32x4d", "DGX A100 (8x A100 80GB)", "a100", "AMP", "fp16", 128, 1211, 7925),
    ("resnext101-32x4d", "timm:resnext101_32x4d", "DGX-1 16GB (8x V100 16GB)", "v100", "FP32", "fp32", 64, 147, 1133),
    ("resnext101-32x4d", "timm:resnext101_32x4d", "DGX-1 16GB (8x V100 16GB)", "v100", "AMP", "fp16", 128, 587, 4065),
    ("se-resnext101-32x4d", "timm:seresnext101_32x4d", "DGX A100 (8x A100 80GB)", "a100", "TF32", "tf32", 128, 395, 2991),
    ("se-resnext101-32x4d", "timm:seresnext101_32x4d", "DGX A100 (8x A100 80GB)", "a100", "AMP", "fp16", 128, 855, 5779),
    ("se-resnext101-32x4d", "timm:seresnext101_32x4d", "DGX-1 16GB (8x V100 16GB)", "v100", "FP32", "fp32", 64, 132, 1004),
    ("se-resnext101-32x4d", "timm:seresnext101_32x4d", "DGX-1 16GB (8x V100 16GB)", "v100", "AMP", "fp16", 112, 443, 2971),
)


def predicted(reference: str, card: str, precision: str, batch: int) -> dict:
    import vitbench

    row = vitbench.choose(reference, device=card, batch_size=batch, precision=precision, optimizer="sgd-momentum",
                          gpus=8)[0]
    return {"one": batch / row["pred_step_one_gpu_s"], "eight": row["pred_throughput_img_s"],
            "backward_share": row["pred_backward_s"] / row["pred_step_one_gpu_s"], "gradient_bytes": row["gradient_bytes"],
            "exposed_ms": row["pred_allreduce_exposed_s"] * 1e3, "allreduce_ms": row["pred_allreduce_s"] * 1e3,
            "basis": row.get("pred_basis")}


def dp_alone(card: str, batch: int, one: float, p: dict) -> float:
    """8-GPU img/s from NVIDIA's measured one-card step (batch / its 1-GPU img/s), backward's
    predicted share of it, and the all-reduce overlapped as the model says."""
    from vitbench.timemodel.interconnect import data_parallel_step, link

    step = batch / one
    found = data_parallel_step(step, step * p["backward_share"], p["gradient_bytes"], 8, 1, link(card))
    return 8 * batch / found.step_s


def _pct(value: float) -> str:
    return f"{value:+.1%}"


def main() -> int:
    rows = []
    for name, reference, system, card, published_precision, precision, batch, one, eight in FIGURES:
        print(f"{name} {card} {published_precision} batch {batch}", file=sys.stderr, flush=True)
        p = predicted(reference, card, precision, batch)
        rows.append({
            "name": name, "reference": reference, "system": system, "card": card, "precision": published_precision,
            "batch": batch, "one": one, "eight": eight, "p_one": p["one"], "p_eight": p["eight"],
            "scaling": eight / one, "p_scaling": p["eight"] / p["one"], "exposed_ms": p["exposed_ms"],
            "allreduce_ms": p["allreduce_ms"],
            # the data-parallel model alone: on NVIDIA's measured one-card step (batch / 1-GPU img/s)
            "p_eight_dp": dp_alone(card, batch, one, p),
        })
    for r in rows:
        r["err_eight"] = r["p_eight"] / r["eight"] - 1
        r["err_one"] = r["p_one"] / r["one"] - 1
        r["err_scaling"] = r["p_scaling"] / r["scaling"] - 1
        r["err_dp"] = r["p_eight_dp"] / r["eight"] - 1
    med = {key: statistics.median(abs(r[key]) for r in rows) for key in ("err_eight", "err_one", "err_scaling", "err_dp")}
    out = ROOT / "reports" / "multi-gpu" / "report.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(rows, med), encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}; median |error|: " + ", ".join(f"{k} {v:.1%}" for k, v in med.items()),
          file=sys.stderr)
    return 0


def render(rows: list[dict], med: dict) -> str:
    lines = [
        "# Data-parallel training: predicted against NVIDIA's published 1-GPU and 8-GPU throughputs",
        "",
        "Written by `python benchmarks/multi_gpu/validate.py` (no GPU needed). The model: "
        "[`vitbench/timemodel/interconnect.py`](../../vitbench/timemodel/interconnect.py) (DDP's bucketed ring "
        "all-reduce of the fp32 gradients over NVLink, overlapped with backward), on top of the GPU cost model's "
        "one-card step, through `vitbench.choose(..., gpus=8)`.",
        "",
        f"**Source.** {REPO}, commit `{COMMIT[:10]}`: the \"Training performance results\" tables of "
        + ", ".join(f"`{_README.format(m)}`" for m in ("resnet50v1.5", "resnext101-32x4d", "se-resnext101-32x4d"))
        + f" (PyTorch 21.03 NGC container; images per second averaged over a training epoch, DALI data loading, "
        f"SGD with momentum, AMP runs in channels-last), with the batch per GPU from `{_CONFIGS}`. NVIDIA's AMP "
        "is fp16 with loss scaling (priced as fp16 autocast), TF32 the A100's default for fp32 convolutions and "
        "matrix products. The DGX-1's V100s are 16 GB SXM2 cards (the catalogue's V100 SXM2 has the same chip "
        "and clocks). vitbench prices timm's ResNeXt-101 32x4d and SE-ResNeXt-101 32x4d (the same architectures).",
        "",
        "Errors are predicted / published - 1. Four ways to read each figure:",
        "",
        "- **8 GPUs**: the predicted 8-GPU throughput against the published one: the GPU cost model's one-card "
        "step and the data-parallel model together;",
        "- **1 GPU**: the one-card step alone (the GPU cost model, not this issue's work);",
        "- **scaling**: the predicted 8-GPU / 1-GPU ratio against the published ratio (on the predicted one-card step);",
        "- **8 GPUs from NVIDIA's 1 GPU**: the data-parallel model alone, on NVIDIA's measured one-card step "
        "(batch / published 1-GPU img/s, backward its predicted share of it), against the published 8-GPU figure.",
        "",
        "| model | system | precision | batch / GPU | published 1 GPU | published 8 GPUs | predicted 8 GPUs | error | "
        "predicted 1 GPU | error | published scaling | predicted scaling | error | 8 GPUs from NVIDIA's 1 GPU | error | "
        "all-reduce (exposed) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['system']} | {r['precision']} | {r['batch']} | {r['one']:,} | {r['eight']:,} | "
            f"{r['p_eight']:,.0f} | {_pct(r['err_eight'])} | {r['p_one']:,.0f} | {_pct(r['err_one'])} | "
            f"{r['scaling']:.2f}x | {r['p_scaling']:.2f}x | {_pct(r['err_scaling'])} | {r['p_eight_dp']:,.0f} | "
            f"{_pct(r['err_dp'])} | {r['allreduce_ms']:.2f} ms ({r['exposed_ms']:.2f} ms) |")
    lines += [
        "",
        f"**Median |error|** over the {len(rows)} figures: 8 GPUs {med['err_eight']:.1%}; 1 GPU {med['err_one']:.1%}; "
        f"scaling {med['err_scaling']:.1%}; 8 GPUs from NVIDIA's 1 GPU {med['err_dp']:.1%}.",
        "",
        "**Reading it.** The data-parallel model alone (the last error column) predicts the published 8-GPU "
        "figures with a median error of " + f"{med['err_dp']:.1%}" + ", always too fast: the CNNs' 25-49 M parameters "
        "(100-200 MB of fp32 gradients) all-reduce in 1-4 ms over NVLink, nearly all of it hidden behind backward, "
        "so the model gives 7.9-8.0x. NVIDIA measured 7.6-7.8x in TF32 / FP32 and 6.5-7.0x in AMP: the AMP steps "
        "are short (about 100 ms), and what the model leaves out (one host's CPUs decoding images for 8 cards, "
        "NCCL's kernels taking SMs from backward, every card waiting for the slowest at each all-reduce) costs "
        "them 13-19%. The absolute 8-GPU error is the one-card step's, and that is **not held out**: the A100's "
        "and V100's cost-model parameters (`datacenter-ampere`, `datacenter-volta`) are fitted on NVIDIA's "
        "published one-GPU figures of these same models (`benchmarks/gpu/fit_published_datacenter.py`). "
        "The fit traced the AMP runs channels-last, as NVIDIA ran them; `choose` traces NCHW, so its AMP steps "
        f"carry cuDNN's layout rewrites and come out up to {max(-r['err_one'] for r in rows):.0%} too slow. "
        f"Median |error| of the 8-GPU figures: {med['err_eight']:.1%} (the 20% target met, in sample); "
        "re-run the script after the cost model changes.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
