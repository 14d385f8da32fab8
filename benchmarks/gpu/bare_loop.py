"""vitbench's CUDA harness against a bare CUDA-event loop, interleaved (issue: on a real GPU).

For each (model, mode): ``rounds`` times, first ``vitbench.measure`` (runs=1, in this process,
median step time) then a hand-written loop (the same module class built by its own library or by
vitbench's preset, random inputs, bf16 autocast, cross-entropy, AdamW, ``zero_grad(set_to_none)``;
CUDA events around ``steps`` back-to-back steps after a warm-up, median over ``samples`` blocks).
Prints one line per pair and a JSON summary: the ratio harness / bare of the medians, which the
issue wants within 2%.

Run on a CUDA machine: ``python benchmarks/gpu/bare_loop.py [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch
import torch.nn.functional as F

from vitbench.measure.profile import measure
from vitbench.settings import RunSettings

CASES = (("vit-b/16", "infer", 256), ("vit-b/16", "train", 128), ("resnet50", "infer", 256), ("resnet50", "train", 128))


def bare_build(name: str) -> torch.nn.Module:
    if name == "resnet50":
        import torchvision

        return torchvision.models.resnet50()
    import timm  # ViT-B/16 as timm builds it: the same layers as vitbench's preset

    return timm.create_model("vit_base_patch16_224", pretrained=False)


def bare_median_step_s(name: str, mode: str, batch: int, warmup: int = 10, steps: int = 20, samples: int = 7) -> float:
    torch.manual_seed(0)
    model = bare_build(name).cuda()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    if mode == "infer":
        model.eval()

        def step():
            with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
                model(x)
    else:
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / steps)
    model = x = y = None  # the step's closure holds them: free the memory before emptying the cache
    torch.cuda.empty_cache()
    return statistics.median(times)


def harness_median_step_s(name: str, mode: str, batch: int) -> dict:
    model = "timm:vit_base_patch16_224" if name == "vit-b/16" else "torchvision:resnet50"
    settings = RunSettings(device="cuda", mode=mode, batch_size=batch, precision="bf16", runs=1, warmup=10,
                           min_run_time_s=2.0, memory=False)
    row = measure(model, settings)
    torch.cuda.empty_cache()
    assert row["status"] == "ok", row.get("error")
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    summary = []
    for name, mode, batch in CASES:
        harness, bare = [], []
        for _ in range(args.rounds):
            harness.append(harness_median_step_s(name, mode, batch)["latency_p50_s"])
            bare.append(bare_median_step_s(name, mode, batch))
        h, b = statistics.median(harness), statistics.median(bare)
        line = dict(model=name, mode=mode, batch=batch, precision="bf16", harness_s=harness, bare_s=bare,
                    harness_median_s=h, bare_median_s=b, ratio=h / b)
        summary.append(line)
        print(f"{name:9} {mode:5} batch {batch:3}: harness {h * 1e3:8.3f} ms  bare {b * 1e3:8.3f} ms  ratio {h / b:.4f}", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": summary}, fh, indent=1)


if __name__ == "__main__":
    main()
