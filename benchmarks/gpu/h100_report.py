"""Write reports/h100/report.md from what the H100 runs brought back (reports/h100/data/) and
timm's published throughputs for the same models on other GPUs.

    python benchmarks/gpu/h100_report.py --timm-results PATH/TO/pytorch-image-models/results

The data files came from ``bash benchmarks/gpu/probe.sh ...`` on a lent H100 (see the report's
"How" section); nothing here runs on a GPU.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "reports" / "h100"
DATA = REPORT / "data"
#: timm's published inference files (AMP fp16, NCHW, eager) and the one training file
TIMM_FILES = (
    ("RTX 3090 (pt240)", "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"),
    ("RTX 4090 (pt240)", "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"),
    ("RTX 4090 (pt291)", "benchmark-infer-amp-nchw-pt291-cu128-4090.csv"),
    ("RTX 5090 (pt291)", "benchmark-infer-amp-nchw-pt291-cu130-5090.csv"),
    ("RTX PRO 6000 Max-Q (pt291)", "benchmark-infer-amp-nchw-pt291-cu130-pro6000maxq.csv"),
)
TIMM_TRAIN = ("RTX 3090 (pt112)", "benchmark-train-amp-nchw-pt112-cu113-rtx3090.csv")


def timm_throughputs(folder: Path | None, name: str, column: str, files) -> dict[str, tuple[float, int]]:
    """{GPU: (img/s, batch)} of ``name`` at 224 px in each of timm's ``files`` found in ``folder``."""
    out: dict[str, tuple[float, int]] = {}
    if folder is None:
        return out
    for label, filename in files:
        path = folder / filename
        if not path.exists():
            continue
        with path.open(newline="") as fh:
            for row in csv.DictReader(fh):
                size = row.get("infer_img_size") or row.get("train_img_size")
                if row["model"] == name and size == "224":
                    out[label] = (float(row[f"{column}_samples_per_sec"]), int(row[f"{column}_batch_size"]))
                    break
    return out


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timm-results", type=Path, help="pytorch-image-models/results (for the published columns)")
    args = parser.parse_args()
    env = (DATA / "env.txt").read_text().strip().splitlines()
    bare = json.loads((DATA / "bare_loop.json").read_text())
    calibration = json.loads((DATA / "gpu_calibration.json").read_text())
    summary = json.loads((DATA / "predict_vs_profile_summary.json").read_text())
    rows = list(csv.DictReader((DATA / "predict_vs_profile.csv").open(newline="")))
    tests = (DATA / "cuda_tests.txt").read_text().strip().splitlines()
    selftest = (DATA / "selftest.txt").read_text().strip().splitlines()
    out: list[str] = []
    w = out.append
    w("# vitbench on an NVIDIA H100 80GB HBM3: CUDA paths, harness, GPU cost model, memory, MFU\n")
    w(f"Device and software: {env[1]} · {env[2]} · {env[3]} CPU cores. Measured {bare['device']} "
      f"on 2026-11-25, through the workplace's lent machine, in four runs of `bash benchmarks/gpu/probe.sh PHASES` "
      "(its logs are under [data/](data/)). Units: seconds, bytes, images per second; MACs are "
      "multiply-accumulates and FLOPs = 2 x MACs.\n")
    w("## 1. Every CUDA path ran\n")
    w("`python3 -m pytest tests/test_measure_cuda.py -m cuda -v` ([data/cuda_tests.txt](data/cuda_tests.txt)): "
      "CUDA-event timing, the allocator's peak and the profiler's breakdown, the induced OOM and the memory "
      "released after it, `--batch-size auto` under a cap (planned, and a module the plan overshoots), "
      "bf16 and fp16 autocast with GradScaler and the attention kernel SDPA picked:\n")
    w("```\n" + "\n".join(line for line in tests if "PASSED" in line or "FAILED" in line or " passed" in line) + "\n```\n")
    w("`vitbench selftest --device cuda` ([data/selftest.txt](data/selftest.txt)):\n")
    w("```\n" + "\n".join(selftest) + "\n```\n")
    w("Also run on the device: `--compile` ([data/compile.csv](data/compile.csv)), `--batch-size auto` for "
      "ViT-B/16 and ResNet-50 in bf16 ([data/profile_auto.csv](data/profile_auto.csv)), `sweep --launcher gpus` "
      "([data/launcher_gpus.txt](data/launcher_gpus.txt)), and `vitbench calibrate --device cuda` (section 3).\n")
    w("What the device showed, and what changed because of it: the profiler counts gradients made during "
      "the step in the CUDA caching allocator's 512-byte blocks (the tiny ViT's 64-float biases take 512 B: "
      "5,336 B over 4 bytes per parameter, exactly); the allocator's peak holds cuBLAS's workspaces beside the "
      "tensors (section 4); a CUDA memory cap binds what the allocator *reserves*, so it now has the CPU "
      "cap's headroom and the tensors' peak is checked against the limit; and a harness sample of one "
      "synchronised step exposed the host's dispatch (next section).\n")
    w("## 2. The harness against a bare CUDA-event loop\n")
    w("`python3 benchmarks/gpu/bare_loop.py --rounds 2` ([data/bare_loop.json](data/bare_loop.json)): bf16 "
      "autocast, AdamW, interleaved (harness, bare, harness, bare); the bare loop times 20 back-to-back steps "
      "between two CUDA events, median of 7 blocks.\n")
    w("| model | mode | batch | harness (ms) | bare loop (ms) | harness / bare |")
    w("|---|---|---|---|---|---|")
    for case in bare["cases"]:
        w(f"| {case['model']} | {case['mode']} | {case['batch']} | {1e3 * case['harness_median_s']:.3f} | "
          f"{1e3 * case['bare_median_s']:.3f} | {case['ratio']:.4f} |")
    w("\nAll four within 1%. The first run (before the fix) had ViT-B/16 training at 1.040: a harness sample was "
      "one step after a synchronisation, so the host's dispatch that a back-to-back loop hides behind the "
      "previous step's kernels showed in every sample. On CUDA a sample now lasts at least "
      "`min_run_time / (2 x min_samples)` (several steps).\n")
    w("## 3. GPU time: predicted without the card, calibrated on it, measured\n")
    w(f"`vitbench calibrate --device cuda` measured its {len(calibration['observations'])}-configuration suite "
      f"(small ViTs, ResNet-18/34, ConvNeXt-Atto, EfficientNet-B0; batch 1-256; fp32, TF32, bf16) in "
      f"{calibration['seconds']:.0f} s and fitted the cost model's 11 parameters from Ada's published fit: "
      f"the fit's residual median {pct(calibration['fit_error_median'])}, p90 {pct(calibration['fit_error_p90'])} "
      f"(Ada's parameters on the same suite: median {pct(calibration['start_error_median'])}).\n")
    published, calibrated = summary["published"], summary["calibrated"]
    w(f"`python3 benchmarks/gpu/predict_vs_profile.py` then measured {published['n']} other configurations "
      "(ViT-B/16, ViT-L/16, DeiT-S, ResNet-50/101, Swin-T, ConvNeXt-T, RegNetY-1.6GF, MobileNetV3-L; batch 1-256; "
      "inference and training; fp32, TF32, bf16, fp16; none of them in the calibration suite) and predicted each twice:\n")
    w("| prediction | median abs. error | 90th percentile |")
    w("|---|---|---|")
    w(f"| published fit only (`{summary['published_basis']}`: what a user without the card gets) | "
      f"{pct(published['median'])} | {pct(published['p90'])} |")
    w(f"| calibrated on this H100 | {pct(calibrated['median'])} | {pct(calibrated['p90'])} |\n")
    w("| model | mode | batch | precision | measured (ms) | published fit / measured | calibrated / measured | MFU |")
    w("|---|---|---|---|---|---|---|---|")
    for r in rows:
        w(f"| {r['model']} | {r['mode']} | {r['batch_size']} | {r['precision']} | {1e3 * float(r['measured_s']):.3f} | "
          f"{float(r['ratio_published']):.3f} | {float(r['ratio_calibrated']):.3f} | {float(r['mfu']):.3f} |")
    ratios_p = [float(r["ratio_published"]) for r in rows]
    under = sum(1 for x in ratios_p if x < 1)
    w(f"\nWhat these numbers support: the published fit alone under-predicts the H100 ({under} of {len(rows)} "
      "configurations below 1): Hopper borrows Ada's parameters, and this machine's host (a virtual machine, "
      "clocks idling at 345 MHz between small kernels) dispatches far slower than the desktop CPUs behind "
      "timm's files: ViT-Ti inference at batch 1 takes 6.8 ms. Calibrating on the card halves the median error, "
      "but not the 90th percentile, and the fit is degenerate: the suite's small, host-bound steps push "
      "the per-kernel times near their upper bounds (`kernel_tail_s` 28 us, `launch_floor_s` 30 us) and the "
      "matrix-product and attention efficiencies to theirs (1.5), with convolutions at 0.25 to compensate, "
      "which over-predicts the large convolutional steps (ResNet-101 inference x1.77). A calibration suite "
      "weighted towards large batches, and a host term measured apart from the kernels, are the next steps. "
      "MFU for fp32 rows is against the fp32 (non-tensor-core) peak, but cuDNN runs fp32 convolutions on TF32 by "
      "default, so the ResNets' fp32 MFU (0.70) overstates.\n")
    w("## 4. Memory: predicted vs the allocator's peak\n")
    w("The default study's measured rows (section 6, `tables/memory_predicted_vs_measured.csv`): inference median "
      "measured / predicted 0.999 (0.963 to 1.243, 17 configurations), training 0.957 (0.942 to 1.093, 4).\n")
    w("What the H100 showed ([data/memory_probe_train.txt](data/memory_probe_train.txt), "
      "[data/memory_probe_infer.txt](data/memory_probe_infer.txt)): beside the tensors the profiler sees, the "
      "allocator's peak holds 68,173,672 B in training at batch 356 and 762 (fp32 and bf16) and 34,611,416 B in "
      "inference (a fresh process): cuBLAS's workspaces, one per thread that runs matrix products (the main "
      "thread; in training also autograd's backward thread), 32 MiB each by PyTorch's default from Hopper on, "
      "plus 1 MiB for cuBLASLt. `vitbench.measure.budget.cuda_workspace_bytes` predicts 68,157,440 and "
      "34,603,008 B; `pred_peak_memory_bytes` on CUDA includes it (`pred_workspace_bytes`), and "
      "`--batch-size auto` plans the cap less it. cuDNN's convolution workspaces are not predicted: for a "
      "small conv module the plan overshot (8,152 planned, 6,495 fitted a 256 MiB cap), and auto stepped down.\n")
    w("## 5. timm's published throughputs beside the H100\n")
    w("The H100 rows are this machine's `predict_vs_profile` measurements (fp16 autocast, batch 256, eager, "
      "as timm's `benchmark.py` runs; timm used batch 1024 halved on an out-of-memory, and trains with SGD "
      "where vitbench uses AdamW).\n")
    w("| model | mode | H100 measured (img/s) | " + " | ".join(label for label, _ in TIMM_FILES) + " |")
    w("|---|---|---|" + "---|" * len(TIMM_FILES))
    for name, ref in (("vit_base_patch16_224", "timm:vit_base_patch16_224"), ("resnet50", "timm:resnet50")):
        for mode in ("infer", "train"):
            mine = [r for r in rows if r["model"] == ref and r["mode"] == mode and r["precision"] == "fp16"]
            if not mine:
                continue
            files = TIMM_FILES if mode == "infer" else (TIMM_TRAIN,)
            found = timm_throughputs(args.timm_results, name, mode, files)
            cells = []
            for label, _ in TIMM_FILES:
                value = found.get(label) or (found.get(TIMM_TRAIN[0]) if mode == "train" and label.startswith("RTX 3090") else None)
                cells.append(f"{value[0]:.0f} (batch {value[1]})" if value else "")
            w(f"| {name} | {mode} | {float(mine[0]['throughput_img_s']):.0f} | " + " | ".join(cells) + " |")
    w("\n(The training column under RTX 3090 is timm's pt112 training file.)\n")
    w("## 6. The default study, measured on the H100\n")
    w("[default-study/report.md](default-study/report.md): `vitbench report --device cuda --runs 1` (one "
      "in-process run per configuration: the three-worker run did not fit the session's device time; the "
      "study's own tables, plots and conclusions, with the rows that were unstable marked and left out of them).\n")
    (REPORT / "report.md").write_text("\n".join(out) + "\n")
    print(f"wrote {REPORT / 'report.md'}")


if __name__ == "__main__":
    main()
