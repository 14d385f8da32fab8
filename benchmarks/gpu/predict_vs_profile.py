"""The GPU cost model against the GPU (issue: on a real GPU): predict vs profile on this card.

For every configuration of :data:`CASES` (ViTs, ResNets, Swin, ConvNeXt, DeiT, RegNet and a
MobileNet; batch 1 to 256; inference and training; fp32 / TF32 / bf16; none of them a model of
the calibration suite, ``vitbench.timemodel.gpu_calibration.SUITE``): measure it with the CUDA
harness (in this process, warm-up, CUDA events, median; the allocator's peak), then predict it
twice: with the published fit alone (the card's datasheet numbers and its generation's borrowed
parameters: what a user without the card gets) and with this card's calibration (``--calibration``,
made by ``vitbench calibrate --device cuda``). Writes one CSV row per configuration (measured
and predicted seconds, both errors, MFU, measured and predicted peak memory) and prints the
median and 90th percentile of |predicted / measured - 1| for each.

    python benchmarks/gpu/predict_vs_profile.py --calibration cal.json --out rows.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time

CASES: tuple[tuple[str, str, int, str], ...] = (
    ("vit-b/16", "infer", 1, "bf16"), ("vit-b/16", "infer", 256, "bf16"), ("vit-b/16", "train", 64, "bf16"),
    ("vit-b/16", "infer", 64, "fp32"), ("vit-b/16", "infer", 64, "tf32"), ("vit-b/16", "train", 32, "tf32"),
    ("vit-l/16", "infer", 32, "bf16"), ("vit-l/16", "train", 32, "bf16"),
    ("resnet50", "infer", 1, "bf16"), ("resnet50", "infer", 256, "bf16"), ("resnet50", "train", 128, "bf16"),
    ("resnet50", "infer", 64, "fp32"), ("resnet50", "infer", 64, "tf32"), ("resnet50", "train", 64, "tf32"),
    ("resnet101", "infer", 64, "bf16"), ("resnet101", "train", 64, "bf16"),
    ("timm:swin_tiny_patch4_window7_224", "infer", 1, "bf16"), ("timm:swin_tiny_patch4_window7_224", "infer", 128, "bf16"),
    ("timm:swin_tiny_patch4_window7_224", "train", 64, "bf16"), ("timm:swin_tiny_patch4_window7_224", "infer", 64, "tf32"),
    ("timm:convnext_tiny", "infer", 128, "bf16"), ("timm:convnext_tiny", "train", 64, "bf16"),
    ("timm:convnext_tiny", "infer", 8, "fp32"),
    ("timm:deit_small_patch16_224", "infer", 16, "bf16"), ("timm:deit_small_patch16_224", "train", 128, "bf16"),
    ("timm:regnety_016", "infer", 64, "bf16"), ("timm:mobilenetv3_large_100", "infer", 256, "bf16"),
    ("timm:vit_base_patch16_224", "infer", 256, "fp16"), ("timm:vit_base_patch16_224", "train", 256, "fp16"),
    ("timm:resnet50", "infer", 256, "fp16"), ("timm:resnet50", "train", 256, "fp16"),
)


def summarise(errors: list[float]) -> dict[str, float]:
    from vitbench.measure.stats import quantile

    return {"n": len(errors), "median": statistics.median(errors), "p90": quantile(errors, 0.9)}


def main() -> int:
    import torch

    from vitbench.models.references import resolve
    from vitbench.timemodel.gpu_calibration import load, measure_step
    from vitbench.timemodel.gpu_model import predict_gpu
    from vitbench.timemodel.run import gpu_profile, traced_ops

    parser = argparse.ArgumentParser()
    parser.add_argument("--calibration", help="a GPU calibration (vitbench calibrate --device cuda --save FILE)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--min-run-time", type=float, default=0.5)
    args = parser.parse_args()
    published = gpu_profile("cuda")
    calibrated = load(args.calibration).profile() if args.calibration else None
    rows = []
    # the columns every row has, fixed before the first: each row is appended as it is measured, so
    # that a time limit loses only the configuration it interrupts
    names = ["model", "mode", "batch_size", "precision", "status", "error", "measured_s", "latency_iqr_s", "n_samples",
             "throughput_img_s", "mfu", "peak_memory_bytes", "pred_peak_memory_bytes", "attention_kernel", "device_name",
             "torch", "pred_published_s", "pred_calibrated_s", "ratio_published", "ratio_calibrated", "seconds"]
    with open(args.out, "w", newline="") as fh:
        csv.DictWriter(fh, names).writeheader()
    for model, mode, batch, precision in CASES:
        started = time.perf_counter()
        row = measure_step(model, mode, batch, precision, args.min_run_time, memory=True)
        out = dict(model=model, mode=mode, batch_size=batch, precision=precision, status=row.get("status"),
                   error=row.get("error"), measured_s=row.get("latency_p50_s"), latency_iqr_s=row.get("latency_iqr_s"),
                   n_samples=row.get("n_samples"), throughput_img_s=row.get("throughput_img_s"), mfu=row.get("mfu"),
                   peak_memory_bytes=row.get("peak_memory_bytes"), pred_peak_memory_bytes=row.get("pred_peak_memory_bytes"),
                   attention_kernel=row.get("attention_kernel"), device_name=row.get("env_device_name"),
                   torch=row.get("env_torch"))
        try:
            ops = traced_ops(resolve(model), batch, mode, precision, "adamw", "cuda")
            out["pred_published_s"] = predict_gpu(ops, published, mode, tf32=precision == "tf32").latency_s
            if calibrated is not None:
                out["pred_calibrated_s"] = predict_gpu(ops, calibrated, mode, tf32=precision == "tf32").latency_s
        except Exception as exc:  # noqa: BLE001 - recorded in the row
            out["error"] = f"trace: {type(exc).__name__}: {exc}".splitlines()[0]
        measured = out["measured_s"]
        for key in ("published", "calibrated"):
            predicted = out.get(f"pred_{key}_s")
            out[f"ratio_{key}"] = predicted / measured if predicted and measured else None
        out["seconds"] = time.perf_counter() - started
        rows.append(out)
        with open(args.out, "a", newline="") as fh:
            csv.DictWriter(fh, names, extrasaction="ignore").writerow(out)
        print(f"{model:36} {mode:5} {batch:4} {precision:4}: measured {1e3 * (measured or 0):9.3f} ms  "
              f"published x{out['ratio_published'] or 0:.3f}  calibrated x{out.get('ratio_calibrated') or 0:.3f}",
              flush=True)
    summary = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "published_basis": published.label}
    for key in ("published", "calibrated"):
        errors = [abs(r[f"ratio_{key}"] - 1) for r in rows if r.get(f"ratio_{key}")]
        if errors:
            summary[key] = summarise(errors)
    print(json.dumps(summary, indent=1))
    with open(args.out.rsplit(".", 1)[0] + "_summary.json", "w") as fh:
        json.dump(summary, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
