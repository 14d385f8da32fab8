"""Measure the accuracy benchmark's configurations with ``vitbench profile --runs 3 --clock cpu
--allocator steady`` (the allocator the calibration measures with).

    python benchmarks/predict/measure.py --threads 1 [--out reports/predict/measured-t1.jsonl]

One ``profile`` command per configuration, one JSON line per row appended as soon as it is
measured (a rerun skips what is already there, so an interrupted run resumes).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from configs import CONFIGS  # noqa: E402

KEEP = ("model", "mode", "batch_size", "precision", "optimizer", "threads", "runs", "clock", "status", "error",
        "latency_p50_s", "latency_iqr_s", "run_medians_s", "cpu_latency_p50_s", "wall_latency_p50_s",
        "throughput_img_s", "macs", "env_device_name", "env_torch", "env_threads", "machine_loadavg_1m",
        "machine_busy_cores", "warnings")


def measure(model: str, mode: str, batch: int, threads: int) -> dict:
    command = [sys.executable, "-m", "vitbench", "profile", model, "--mode", mode, "--batch-size", str(batch),
               "--runs", "3", "--clock", "cpu", "--allocator", "steady", "--threads", str(threads), "--no-memory", "--format", "csv"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "KINETO_LOG_LEVEL": "5"})
    if done.returncode != 0 or not done.stdout.strip():
        return {"model": model, "mode": mode, "batch_size": batch, "threads": threads, "status": "error",
                "error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    row = pd.read_csv(io.StringIO(done.stdout)).iloc[0].to_dict()
    out = {key: row.get(key) for key in KEEP}
    out.update(model=model, measure_seconds=time.perf_counter() - started)
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in out.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--out")
    args = parser.parse_args()
    out = Path(args.out or f"reports/predict/measured-t{args.threads}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            row = json.loads(line)
            done.add((row["model"], row["mode"], int(row["batch_size"])))
    for model, mode, batch in CONFIGS:
        if (model, mode, batch) in done:
            continue
        row = measure(model, mode, batch, args.threads)
        with out.open("a") as f:
            f.write(json.dumps(row, default=str) + "\n")
        print(f"{model} {mode} b{batch}: {row.get('latency_p50_s')} s ({row.get('status')})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
