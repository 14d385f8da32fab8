"""`vitbench profile`'s default against the plain PyTorch loop a user would write, side by side.

Run (CPU; minutes):
    python benchmarks/plain_loop.py                       # resnet18 vit-ti/16 slides-cnn, batch 8
    python benchmarks/plain_loop.py resnet18 --rounds 5 --mode train

Each round, in alternating order (A B, B A, ...), runs

- the plain loop in a fresh ``python`` process: the model built by ``vitbench.models.build_model``
  (the same weights-independent module profile builds), ``torch.set_num_threads(1)``, one random
  batch made once, a few warm-up steps, then steps timed one by one with ``time.process_time``
  (CPU seconds; one thread, so CPU time per thread) for ``--min-time`` x ``runs`` seconds; its
  median step. Nothing else: glibc's allocator as the process has it, the step in the main
  thread. Inference under ``torch.inference_mode()``; training: forward, cross-entropy,
  backward, AdamW step, ``zero_grad(set_to_none=True)`` (what profile's training step does).
- ``vitbench profile MODEL --device cpu --clock cpu --threads 1 --batch-size 8 --format json``
  (every other setting its default: 5 worker runs, the default allocator); its
  ``latency_p50_s`` (CPU time per thread per step, pooled over the runs).

Printed: one line per round, then per model the medians over the rounds of each side and of the
per-round ratio profile / plain loop (load that comes and goes slows both sides of a round
alike; the median of the ratios is what to read). The table in docs/measuring.md comes from it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import dataclass

#: the plain loop, run with ``python -c``: argv = model, batch, mode, seconds
PLAIN_LOOP = r"""
import statistics, sys, time
import torch
from vitbench.models import build_model
from vitbench.presets import resolve

name, batch, mode, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
torch.set_num_threads(1)
torch.manual_seed(0)
spec = resolve(name)
model = build_model(spec)
h, w = (spec.img_size, spec.img_size) if isinstance(spec.img_size, int) else spec.img_size
x = torch.randn(batch, getattr(spec, "in_chans", 3), h, w)
y = torch.randint(0, spec.num_classes, (batch,))
if mode == "infer":
    model.eval()
    def step():
        with torch.inference_mode():
            model(x)
else:
    model.train()
    opt = torch.optim.AdamW(model.parameters())
    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
for _ in range(3):
    step()
times, start = [], time.perf_counter()
while time.perf_counter() - start < seconds or len(times) < 5:
    t0 = time.process_time()
    step()
    times.append(time.process_time() - t0)
print(statistics.median(times))
"""


@dataclass(frozen=True)
class Round:
    model: str
    plain_s: float
    profile_s: float

    @property
    def ratio(self) -> float:
        return self.profile_s / self.plain_s


def plain_loop(model: str, batch: int, mode: str, seconds: float) -> float:
    """The plain loop's median CPU seconds per step, in a fresh process."""
    out = subprocess.run([sys.executable, "-c", PLAIN_LOOP, model, str(batch), mode, str(seconds)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def profile(model: str, batch: int, mode: str, extra: list[str]) -> float:
    """``vitbench profile``'s latency_p50_s (CPU time per thread per step)."""
    command = [sys.executable, "-m", "vitbench", "profile", model, "--device", "cpu", "--clock", "cpu",
               "--threads", "1", "--batch-size", str(batch), "--mode", mode, "--format", "json", *extra]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    (row,) = json.loads(out.stdout)["records"]
    if row.get("status") != "ok":
        raise RuntimeError(f"{model}: {row.get('status')}: {row.get('error')}")
    return float(row["latency_p50_s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["resnet18", "vit-ti/16", "slides-cnn"])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--mode", choices=("infer", "train"), default="infer")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--plain-seconds", type=float, default=5.0,
                        help="timed seconds of the plain loop (profile's default: 5 runs x 1 s)")
    parser.add_argument("--profile-args", default="", help="extra profile flags, e.g. '--allocator steady'")
    args = parser.parse_args(argv)
    extra = args.profile_args.split()
    rounds: list[Round] = []
    for k in range(args.rounds):
        for model in args.models:
            order = ("plain", "profile") if k % 2 == 0 else ("profile", "plain")
            got = {}
            for side in order:
                got[side] = (plain_loop(model, args.batch_size, args.mode, args.plain_seconds) if side == "plain"
                             else profile(model, args.batch_size, args.mode, extra))
            rounds.append(Round(model, got["plain"], got["profile"]))
            print(f"round {k + 1} {model}: plain {got['plain'] * 1e3:.1f} ms, profile {got['profile'] * 1e3:.1f} ms, "
                  f"ratio {rounds[-1].ratio:.3f}", flush=True)
    print(f"\n| model | plain loop (ms) | vitbench profile (ms) | ratio profile / plain |  # batch {args.batch_size}, "
          f"{args.mode}, 1 thread, CPU time per step, medians of {args.rounds} rounds")
    print("| --- | ---: | ---: | ---: |")
    for model in args.models:
        mine = [r for r in rounds if r.model == model]
        print(f"| {model} | {statistics.median(r.plain_s for r in mine) * 1e3:.1f} | "
              f"{statistics.median(r.profile_s for r in mine) * 1e3:.1f} | {statistics.median(r.ratio for r in mine):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
