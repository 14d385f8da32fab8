"""Fit the GPU cost model on some of timm's published GPU throughputs and judge it on the rest.

    python benchmarks/gpu_published/trace_all.py RESULTS_DIR --shard 0/2 &   # traces, once
    python benchmarks/gpu_published/trace_all.py RESULTS_DIR --shard 1/2
    python benchmarks/gpu_published/fit_validate.py RESULTS_DIR [--write-params] [--report reports/gpu-published]

RESULTS_DIR is pytorch-image-models' ``results/`` folder (the files are not copied here).
What is fitted, and on what (the issue's rule, never relaxed):

- fit: the RTX 3090 and RTX 4090 pt240 inference files, only models whose name (without a tag)
  has an even CRC32; the 3090 fits Ampere's parameters, the 4090 Ada's;
- judged: (a) the odd-CRC32 models on those two files; (b) the RTX 5090 and RTX PRO 6000 Max-Q
  pt291 files (Blackwell: no fit, Ada's parameters); (c) the RTX 3090 training file (PyTorch
  1.12); (d) the 4090 pt291 file, like for like (reparameterised, as timm ran it).

``--write-params`` writes the fitted parameters and the error bands to
``vitbench/data/gpu_params.json``; ``--report`` writes report.md, predictions.csv and plots.

``--judge-only`` fits nothing: the files of ``--files`` are judged with the fitted parameters
vitbench ships (``gpu_params.json``), and ``--write-params`` then replaces only those files'
error bands there. For a file whose traces changed after the fit (the training file, when a
backward's MACs were corrected) without tracing every inference file again:

    python benchmarks/gpu_published/trace_all.py RESULTS_DIR --files rtx3090-train-pt112 --train-sample 300
    python benchmarks/gpu_published/fit_validate.py RESULTS_DIR --judge-only --files rtx3090-train-pt112 \
        --write-params --report reports/gpu-published/train-pt112
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from published import FILES, TIMM_COMMIT, Published, family, read_file

#: the least a kernel takes on any recent NVIDIA GPU (an empty kernel: about 2-3 us); not fitted: timm's
#: large batches cannot tell it from the host's time per operator, which the fit finds instead
LAUNCH_FLOOR_S = 2.5e-6
FIT_KEYS = {"rtx3090-pt240": "ampere", "rtx4090-pt240": "ada"}
FAMILIES = ("ViT-like", "ResNet-like", "ConvNeXt", "EfficientNet/MobileNet", "other")


def load_tables(folder: Path, keys: list[str]) -> tuple[list[tuple[Published, object]], list[tuple[Published, str]]]:
    """(row, OpTable) for every row trace_all.py traced, and (row, reason) for the rest (the
    cache keys come from trace_all.py's index, ``published-keys.jsonl`` beside the traces)."""
    from vitbench.timemodel.gpu_model import op_table
    from vitbench.timemodel.trace_cache import read, trace_dir

    index: dict[str, str] = {}
    index_path = trace_dir() / "published-keys.jsonl"
    if index_path.exists():
        for line in index_path.read_text().splitlines():
            index.update(json.loads(line))
    failures: dict[tuple, str] = {}
    failure_path = Path("trace_failures.jsonl")
    if failure_path.exists():
        for line in failure_path.read_text().splitlines():
            f = json.loads(line)
            failures[f["model"], f["img_size"], f["mode"], f["reparam"]] = f["error"]
    found, missing = [], []
    for spec in FILES:
        if spec.key not in keys:
            continue
        for row in read_file(folder, spec):
            key = index.get(f"{row.model}|{row.img_size}|{row.mode}|{int(row.reparam)}|{row.batch_size}")
            ops = read(key) if key else None
            if ops is None:
                reason = failures.get((row.model, row.img_size, row.mode, row.reparam)) or (
                    "not in the seeded sample of training rows traced (trace_all.py --train-sample)"
                    if row.mode == "train" else "not traced (out of memory building the model for real on 24 GB)")
                missing.append((row, reason))
                continue
            found.append((row, op_table(ops)))
    return found, missing


def errors_summary(ratios: list[float]) -> dict[str, float]:
    errors = sorted(abs(r - 1) for r in ratios)
    if not errors:
        return {"n": 0}
    p90 = errors[min(len(errors) - 1, math.ceil(0.9 * len(errors)) - 1)]
    return {"n": len(errors), "median": statistics.median(errors), "p90": p90,
            "within_10": sum(e <= 0.10 for e in errors) / len(errors), "ratio_median": statistics.median(ratios)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", type=Path)
    parser.add_argument("--files", default=",".join(spec.key for spec in FILES))
    parser.add_argument("--write-params", action="store_true")
    parser.add_argument("--report", type=Path)
    parser.add_argument("--max-evaluations", type=int, default=60)
    parser.add_argument("--judge-only", action="store_true",
                        help="judge --files with the shipped fitted parameters; fit nothing")
    args = parser.parse_args()

    from vitbench.timemodel.gpu_fit import Observation, fit
    from vitbench.timemodel.gpu_model import GenerationParams, GpuProfile, predict_table
    from vitbench.timemodel.gpus import gpu

    started = time.time()
    keys = args.files.split(",")
    rows, missing = load_tables(args.results, keys)
    sys.stdout.reconfigure(line_buffering=True)
    print(f"{len(rows)} configurations with traces, {len(missing)} without ({time.time() - started:.0f} s)")
    spec_of = {spec.key: spec for spec in FILES}

    fitted: dict[str, GenerationParams] = {}
    if args.judge_only:
        from vitbench.timemodel.gpu_model import parameter_file

        shipped = parameter_file()["generations"]
        fitted = {generation: GenerationParams.from_dict(shipped[generation]["params"]) for generation in FIT_KEYS.values()}
    for key, generation in ({} if args.judge_only else FIT_KEYS).items():
        device = gpu(spec_of[key].device)
        train = [Observation(table, device, row.mode, row.step_s) for row, table in rows
                 if row.file == key and row.fit_half]
        t0 = time.time()
        fitted[generation] = fit(train, start=GenerationParams(launch_floor_s=LAUNCH_FLOOR_S), fixed=("launch_floor_s",),
                                 max_evaluations=args.max_evaluations)
        print(f"fit {generation} on {key}: {len(train)} models, {time.time() - t0:.0f} s: {fitted[generation]}")

    borrow = {"volta": "ampere", "turing": "ampere", "hopper": "ada", "blackwell": "ada"}
    results = []
    for row, table in rows:
        spec = spec_of[row.file]
        device = gpu(spec.device)
        generation = device.generation if device.generation in fitted else borrow[device.generation]
        prediction = predict_table(table, GpuProfile(device, fitted[generation], generation), row.mode)
        predicted_throughput = row.batch_size / prediction.latency_s
        ratio = predicted_throughput / row.samples_per_s
        shares = {k: v / prediction.latency_s for k, v in prediction.components_s.items() if prediction.latency_s}
        dominant = max(shares, key=shares.get) if shares else ""
        why = (f"predicted {ratio:.2f}x the published throughput; {100 * shares.get(dominant, 0):.0f}% of the "
               f"predicted step is {dominant}" + ("; host-bound" if prediction.host_s > prediction.device_s else ""))
        results.append({
            "file": row.file, "role": spec.role if not (spec.role == "fit" and row.fit_half) else "fitted",
            "model": row.model, "family": family(row.model), "img_size": row.img_size, "batch_size": row.batch_size,
            "mode": row.mode, "reparam": row.reparam, "pred_throughput_img_s": predicted_throughput,
            "ratio": ratio, "host_bound": prediction.host_s > prediction.device_s, "dominant": dominant, "why": why,
        })

    summary: dict[str, dict] = defaultdict(dict)
    for key in keys:
        for role in ("fitted", "fit", "held-out-gpu", "old-software", "like-for-like"):
            chosen = [r for r in results if r["file"] == key and r["role"] == role]
            if not chosen:
                continue
            label = "held-out models" if role == "fit" else role
            summary[key][label] = {"all": errors_summary([r["ratio"] for r in chosen]),
                                   **{f: errors_summary([r["ratio"] for r in chosen if r["family"] == f]) for f in FAMILIES}}
    for key, roles in summary.items():
        for role, families in roles.items():
            print(f"{key:24} {role:16} " + "  ".join(
                f"{f[:8]}: {v['median']:.3f}/{v['p90']:.3f}/{v['ratio_median']:.2f} n={v['n']}" for f, v in families.items() if v.get("n")))

    if args.write_params:
        (write_bands if args.judge_only else write_params)(fitted, results, spec_of)
    if args.report:
        from report import write_report

        write_report(args.report, results, summary, missing, fitted, spec_of)
    print(f"done in {time.time() - started:.0f} s")


def bands_of(rows: list[dict]) -> dict:
    """Per family (and 'all'): median and 90th percentile |error| and the count."""
    out = {}
    for name in ("all", *FAMILIES):
        chosen = [r["ratio"] for r in rows if name == "all" or r["family"] == name]
        if len(chosen) >= 5:  # a band from fewer than 5 models says little
            s = errors_summary(chosen)
            out[name] = {"median": round(s["median"], 4), "p90": round(s["p90"], 4), "n": s["n"]}
    return out


PARAMS_PATH = Path(__file__).resolve().parents[2] / "vitbench" / "data" / "gpu_params.json"


def write_bands(fitted: dict, results: list[dict], spec_of: dict) -> None:
    """Replace, in ``gpu_params.json``, the error bands of the files judged here (and the
    training 'unvalidated' band, which is the RTX 3090 training file's); nothing else changes."""
    data = json.loads(PARAMS_PATH.read_text())
    for key in sorted({r["file"] for r in results}):
        spec = spec_of[key]
        rows = [r for r in results if r["file"] == key and r["role"] != "fitted"]
        if not rows or spec.role in ("like-for-like", "held-out-gpu", "fit"):  # those bands pool several files
            raise SystemExit(f"{key}: --judge-only writes the bands of a file judged on its own (the training file)")
        data["validation"][spec.mode][spec.device] = {**bands_of(rows), "file": spec.filename}
        if spec.mode == "train" and spec.device == "rtx3090":
            data["validation"]["train"]["unvalidated"] = {**data["validation"]["train"]["rtx3090"],
                                                          "devices": "rtx3090 (training)"}
    PARAMS_PATH.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote the bands of {', '.join(sorted({r['file'] for r in results}))} to {PARAMS_PATH}")


def write_params(fitted: dict, results: list[dict], spec_of: dict) -> None:
    """vitbench/data/gpu_params.json: the fitted parameters, and the error bands a prediction
    row carries: validation[mode][device][family], from judged rows only (never fitted ones);
    'unvalidated' pools the GPUs held out of fitting, for cards no file measured."""
    from dataclasses import asdict

    path = PARAMS_PATH
    judged = [r for r in results if r["role"] != "fitted"]
    validation: dict[str, dict] = {"infer": {}, "train": {}}
    for key, spec in spec_of.items():
        rows = [r for r in judged if r["file"] == key]
        if not rows or spec.role == "like-for-like":
            continue
        validation[spec.mode][spec.device] = {**bands_of(rows), "file": spec.filename}
    held_out = [r for r in judged if spec_of[r["file"]].role == "held-out-gpu"]
    if held_out:
        names = sorted({spec_of[r["file"]].device for r in held_out})
        validation["infer"]["unvalidated"] = {**bands_of(held_out), "devices": ", ".join(names)}
    if "rtx3090" in validation["train"]:
        validation["train"]["unvalidated"] = {**validation["train"]["rtx3090"], "devices": "rtx3090 (training)"}
    data = {
        "comment": ("Written by benchmarks/gpu_published/fit_validate.py from timm's published GPU throughputs "
                    f"(pytorch-image-models results/, commit {TIMM_COMMIT}); docs/time.md explains every field."),
        "generations": {g: {"params": {k: float(f"{v:.4g}") for k, v in asdict(p).items()},
                            "fitted_on": f"timm results/{next(s.filename for s in FILES if s.key == k)}, even-CRC32 models"}
                        for k, g in FIT_KEYS.items() for p in [fitted[g]]},
        "borrow": {"volta": "ampere", "turing": "ampere", "hopper": "ada", "blackwell": "ada"},
        "validation": validation,
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
