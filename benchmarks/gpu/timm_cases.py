"""timm's own harness (``timm_benchmark.py``, its ``benchmark.py`` copied verbatim) on the
configurations of ``predict_vs_profile.py``, one configuration per process, each result in its
own file as it finishes (issue 48: side by side with ``vitbench profile`` on the same card).

    python benchmarks/gpu/timm_cases.py list                       # index, key, timm arguments
    python benchmarks/gpu/timm_cases.py run --case 3 --out-dir D   # D/<key>.json (+ D/<key>.log by the caller)
    python benchmarks/gpu/timm_cases.py collect D --out timm.csv   # every D/*.json as one CSV

``run`` hides fvcore and deepspeed from the harness (``sys.modules[name] = None``: its import
fails, so ``has_fvcore_profiling`` / ``has_deepspeed_profiling`` are False and it only times: with
fvcore installed it spends most of its time counting FLOPs, and there is no option to turn that
off). The mapping to timm's arguments, so the two measure the same step:

- model: ``timm:NAME`` -> NAME; vitbench's presets -> timm's model of the same architecture
  (``vit-b/16`` -> ``vit_base_patch16_224``; the implementations differ: vitbench's own ViT,
  ResNet);
- ``--use-train-size``: vitbench runs timm models at their training input size; timm's harness
  defaults to the test size (ConvNeXt-T: 288 instead of 224);
- precision: ``bf16`` -> ``--amp --amp-dtype bfloat16``, ``fp16`` -> ``--amp``, ``tf32`` ->
  float32 (the harness turns TF32 matrix products on at import), ``fp32`` -> float32 with TF32
  matrix products turned off again before the model is made (vitbench's fp32 is PyTorch's
  default: TF32 for convolutions only);
- training: ``--opt adamw`` (vitbench's default optimizer; timm's is SGD); the harness's step has
  no GradScaler for fp16 and a ``zero_grad`` without set-to-None; both use cross-entropy;
- ``--no-retry``: an out-of-memory is an error, not a smaller batch; ``cudnn.benchmark`` stays
  as the harness sets it (on).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import runpy
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "timm_benchmark.py"
#: vitbench presets of predict_vs_profile -> timm's model of the same architecture
PRESETS = {"vit-b/16": "vit_base_patch16_224", "vit-l/16": "vit_large_patch16_224", "vit-s/16": "vit_small_patch16_224",
           "vit-ti/16": "vit_tiny_patch16_224", "resnet18": "resnet18", "resnet50": "resnet50", "resnet101": "resnet101"}
PRECISION_ARGS = {"bf16": ["--amp", "--amp-dtype", "bfloat16"], "fp16": ["--amp"], "tf32": ["--precision", "float32"],
                  "fp32": ["--precision", "float32"]}
COLUMNS = ("index", "key", "model", "mode", "batch_size", "precision", "timm_model", "status", "error",
           "samples_per_sec", "step_time_ms", "measured_s", "timm_batch_size", "img_size", "param_count", "seconds",
           "device", "torch", "timm", "timm_args")


def cases() -> list[tuple[str, str, int, str]]:
    """predict_vs_profile's configurations, fp16 first (timm's published harness runs AMP fp16:
    those compare with its published files and the H200 measurements), then the rest in order."""
    sys.path.insert(0, str(HERE))
    try:
        from predict_vs_profile import CASES
    finally:
        sys.path.remove(str(HERE))
    return [c for c in CASES if c[3] == "fp16"] + [c for c in CASES if c[3] != "fp16"]


def timm_name(model: str) -> str | None:
    if model.startswith("timm:"):
        return model.split(":", 1)[1].split("+", 1)[0]
    return PRESETS.get(model)


def key_of(index: int, case: tuple[str, str, int, str]) -> str:
    model, mode, batch, precision = case
    return f"{index:02d}_{re.sub(r'[^A-Za-z0-9.]+', '-', model)}_{mode}_{batch}_{precision}"


def timm_args(case: tuple[str, str, int, str], device: str = "cuda", warm: int | None = None,
              iters: int | None = None) -> list[str]:
    model, mode, batch, precision = case
    name = timm_name(model)
    if name is None:
        raise ValueError(f"{model}: no timm model of the same architecture")
    args = ["--model", name, "--bench", "inference" if mode == "infer" else "train", "-b", str(batch),
            "--device", device, "--use-train-size", "--no-retry", *PRECISION_ARGS[precision]]
    if mode == "train":
        args += ["--opt", "adamw"]
    if warm is not None:
        args += ["--num-warm-iter", str(warm)]
    if iters is not None:
        args += ["--num-bench-iter", str(iters)]
    return args


def run_harness(args: list[str], tf32_matmul: bool = True) -> None:
    """Run timm's benchmark.py in this process with ``args``, fvcore and deepspeed hidden (it
    only times), and (``tf32_matmul=False``) TF32 matrix products turned off after the harness
    has turned them on: when it makes its model."""
    for name in ("fvcore", "deepspeed"):
        sys.modules[name] = None  # type: ignore[assignment]  # `import fvcore` raises ImportError
    if not tf32_matmul:
        import timm.models
        import torch

        create = timm.models.create_model

        def create_model(*a, **k):
            torch.backends.cuda.matmul.allow_tf32 = False
            return create(*a, **k)

        timm.models.create_model = create_model  # the harness imports it by name from timm.models
    sys.argv = [str(HARNESS), *args]
    runpy.run_path(str(HARNESS), run_name="__main__")


def run_case(index: int, out_dir: Path, device: str, warm: int | None, iters: int | None,
             batch: int | None = None) -> Path:
    case = cases()[index]
    if batch:
        case = (case[0], case[1], batch, case[3])
    out_dir.mkdir(parents=True, exist_ok=True)
    key = key_of(index, case)
    raw = out_dir / f"{key}.timm.json"
    args = timm_args(case, device, warm, iters) + ["--results-file", str(raw), "--results-format", "json"]
    started = time.perf_counter()
    failed = None
    try:
        run_harness(args, tf32_matmul=case[3] != "fp32")
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the harness's failure is the row's error
        failed = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    import timm
    import torch

    results = json.loads(raw.read_text()) if raw.exists() else {"error": failed or "the harness wrote no results"}
    model, mode, batch_size, precision = case
    prefix = "infer" if mode == "infer" else "train"
    row = dict(index=index, key=key, model=model, mode=mode, batch_size=batch_size, precision=precision,
               timm_model=timm_name(model), status="error" if "error" in results else "ok", error=results.get("error", ""),
               samples_per_sec=results.get(f"{prefix}_samples_per_sec"), step_time_ms=results.get(f"{prefix}_step_time"),
               timm_batch_size=results.get(f"{prefix}_batch_size"), img_size=results.get(f"{prefix}_img_size"),
               param_count=results.get("param_count"), seconds=round(time.perf_counter() - started, 3),
               device=_device_name(device), torch=torch.__version__,
               timm=timm.__version__, timm_args=" ".join(args), raw=results)
    row["measured_s"] = row["step_time_ms"] / 1e3 if isinstance(row["step_time_ms"], (int, float)) else None
    out = out_dir / f"{key}.json"
    out.write_text(json.dumps(row, indent=1) + "\n")
    return out


def _device_name(device: str) -> str:
    import torch

    try:
        return torch.cuda.get_device_name() if device.startswith("cuda") else device
    except (RuntimeError, AssertionError) as exc:  # no driver: the harness's own error says so
        return f"{device} ({type(exc).__name__})"


def collect(out_dir: Path) -> list[dict]:
    rows = []
    for path in sorted(out_dir.glob("*.json")):
        if path.name.endswith(".timm.json"):
            continue
        row = json.loads(path.read_text())
        rows.append({k: row.get(k) for k in COLUMNS})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="index, key and timm arguments of every configuration")
    listing.add_argument("--start", type=int, default=0, help="from the N-th configuration")
    listing.add_argument("--device", default="cuda")
    runner = sub.add_parser("run", help="one configuration: OUT_DIR/<key>.json")
    runner.add_argument("--case", type=int, required=True)
    runner.add_argument("--out-dir", required=True)
    runner.add_argument("--device", default="cuda")
    runner.add_argument("--warm", type=int, help="warm-up steps (the harness's default: 10)")
    runner.add_argument("--iters", type=int, help="timed steps (the harness's default: 40; at least 5)")
    runner.add_argument("--batch-size", type=int, help="another batch (a quick CPU check)")
    collector = sub.add_parser("collect", help="every result of OUT_DIR as one CSV")
    collector.add_argument("out_dir")
    collector.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "list":
        for index, case in enumerate(cases()):
            if index >= args.start:
                print(index, key_of(index, case), " ".join(timm_args(case, args.device)), sep="\t")
        return 0
    if args.command == "run":
        print(run_case(args.case, Path(args.out_dir), args.device, args.warm, args.iters, args.batch_size))
        return 0
    rows = collect(Path(args.out_dir))
    with open(args.out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} timm harness results -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
