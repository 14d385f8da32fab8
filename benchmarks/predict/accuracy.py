"""The time model against measurement: calibrate, predict every configuration of
``configs.py``, compare with what ``measure.py`` measured (``profile --runs 3 --clock cpu``).

    python benchmarks/predict/accuracy.py --threads 1     # reads reports/predict/measured-t1.jsonl

Writes ``reports/predict/accuracy-t<T>.csv`` (one row per configuration: predicted, measured,
ratio, the breakdown, the seconds the prediction took) and ``accuracy-t<T>.md`` (the error
summary, per mode and family, the worst five, calibration time and size, predict time), and
keeps the calibration it used as ``calibration-t<T>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from configs import CONFIGS  # noqa: E402

FAMILIES = (("torchvision:swin", "Swin"), ("timm:swin", "Swin"), ("convnext", "ConvNeXt"), ("mobilenet", "MobileNet"),
            ("resnet", "ResNet"), ("cnn", "CNN"), ("timm:", "timm ViT"), ("hf:", "Hugging Face ViT"), ("vit", "ViT"))


def family(model: str) -> str:
    return next((name for needle, name in FAMILIES if needle in model), "other")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))  # nearest rank
    return ordered[rank]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--calibration", help="use this calibration instead of calibrating now")
    parser.add_argument("--out", default="reports/predict")
    args = parser.parse_args()
    import torch

    import vitbench
    from vitbench.timemodel.calibration.cache import load, save
    from vitbench.timemodel.calibration.worker import calibrate

    out = Path(args.out)
    measured = {(r["model"], r["mode"], int(r["batch_size"])): r
                for r in map(json.loads, (out / f"measured-t{args.threads}.jsonl").read_text().splitlines())}
    if args.calibration:
        calibration = load(args.calibration, torch.__version__)
        calibration_wall_s = None
    else:
        started = time.perf_counter()
        calibration = calibrate("cpu", args.threads)
        calibration_wall_s = time.perf_counter() - started
    calibration_path = save(calibration, out / f"calibration-t{args.threads}.json")

    rows = []
    for model, mode, batch in CONFIGS:
        seen = measured.get((model, mode, batch))
        if not seen or seen.get("status") != "ok":
            continue
        started = time.perf_counter()
        [row] = vitbench.predict(model, mode=mode, batch_size=batch, calibration=calibration)
        predict_s = time.perf_counter() - started
        if row.get("status") != "ok":
            print(f"{model} {mode} b{batch}: {row.get('error')}", file=sys.stderr)
            continue
        ratio = row["pred_latency_s"] / seen["latency_p50_s"]
        rows.append({
            "model": model, "family": family(model), "mode": mode, "batch_size": batch,
            "pred_latency_s": row["pred_latency_s"], "latency_p50_s": seen["latency_p50_s"], "ratio": ratio,
            "run_medians_s": seen.get("run_medians_s"), "predict_s": predict_s,
            **{k: row[k] for k in row if k.startswith("pred_") and k.endswith("_s") and k not in ("pred_latency_s", "pred_seconds")},
            "pred_ops": row["pred_ops"],
        })
        print(f"{model:45s} {mode} b{batch:<3d} measured {seen['latency_p50_s'] * 1e3:9.2f} ms "
              f"predicted {row['pred_latency_s'] * 1e3:9.2f} ms  ratio {ratio:.3f}", flush=True)

    import pandas as pd

    frame = pd.DataFrame(rows)
    frame.to_csv(out / f"accuracy-t{args.threads}.csv", index=False)
    errors = [abs(r - 1) for r in frame["ratio"]]
    lines = [f"# Time model against measurement: CPU, {args.threads} thread{'s' if args.threads > 1 else ''}", "",
             f"Command: `python benchmarks/predict/accuracy.py --threads {args.threads}` (measured by "
             f"`python benchmarks/predict/measure.py --threads {args.threads}`: `vitbench profile --runs 3 --clock cpu "
             f"--threads {args.threads} --no-memory`).", "",
             f"Machine: {calibration.device_name}, torch {calibration.torch}.", "",
             f"- configurations: {len(frame)} (none used in calibration: it times micro-benchmarks and two synthetic probes)",
             f"- |predicted / measured - 1|: median **{100 * statistics.median(errors):.1f}%**, "
             f"90th percentile **{100 * percentile(errors, 0.9):.1f}%**, worst {100 * max(errors):.1f}%",
             f"- predicted / measured: median {statistics.median(frame['ratio']):.3f} "
             f"(below 1: the model predicts faster than measured)"]
    for mode, sub in frame.groupby("mode"):
        e = [abs(r - 1) for r in sub["ratio"]]
        lines.append(f"- {mode}: median {100 * statistics.median(e):.1f}%, 90th percentile {100 * percentile(e, 0.9):.1f}% ({len(sub)} configurations)")
    lines += ["", "| family | configurations | median error | worst error |", "|---|---|---|---|"]
    for name, sub in frame.groupby("family"):
        e = [abs(r - 1) for r in sub["ratio"]]
        lines.append(f"| {name} | {len(sub)} | {100 * statistics.median(e):.1f}% | {100 * max(e):.1f}% |")
    size = calibration_path.stat().st_size
    lines += ["", "## Cost of predicting", "",
              f"- calibration: {calibration.seconds:.1f} s of measurement"
              + (f" ({calibration_wall_s:.1f} s with the worker process's start)" if calibration_wall_s else "")
              + f"; file {size} bytes ({calibration_path.name})",
              f"- one configuration, traced on its own (torch already imported): median {1e3 * statistics.median(frame['predict_s']):.0f} ms, "
              f"max {1e3 * max(frame['predict_s']):.0f} ms",
              "", "## Worst five", "", "| model | mode | batch | predicted | measured | ratio | largest predicted components |", "|---|---|---|---|---|---|---|"]
    from vitbench.timemodel.model import BREAKDOWN

    components = [f"pred_{name}_s" for name in BREAKDOWN]
    worst = frame.assign(error=[abs(r - 1) for r in frame["ratio"]]).sort_values("error", ascending=False).head(5)
    for _, r in worst.iterrows():
        top = sorted(((r[c], c[5:-2]) for c in components), reverse=True)[:3]
        parts = ", ".join(f"{name} {100 * value / r['pred_latency_s']:.0f}%" for value, name in top)
        lines.append(f"| {r['model']} | {r['mode']} | {r['batch_size']} | {1e3 * r['pred_latency_s']:.2f} ms | "
                     f"{1e3 * r['latency_p50_s']:.2f} ms | {r['ratio']:.3f} | {parts} |")
    lines += ["", f"Every configuration: [accuracy-t{args.threads}.csv](accuracy-t{args.threads}.csv).", ""]
    (out / f"accuracy-t{args.threads}.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
