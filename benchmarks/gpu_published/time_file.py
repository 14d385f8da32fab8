"""How long predicting a whole published file takes: a seeded sample of one of timm's published
GPU files, each row predicted through the public API (``vitbench.predict``: resolve, trace on
fake CUDA tensors, price) as a user would, first with empty caches, then again from the caches,
and the totals scaled to the whole file. torch, vitbench and timm are imported before the clock
starts.

    python benchmarks/gpu_published/time_file.py RESULTS_DIR [--file rtx4090-pt240] [--sample 100] [--seed 0] [--jobs N]

RESULTS_DIR is pytorch-image-models' ``results/`` folder. Prints one line per phase and a summary.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from published import FILES, read_file


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", type=Path)
    parser.add_argument("--file", default="rtx4090-pt240")
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes that resolve and trace (predict --jobs)")
    args = parser.parse_args()
    [spec] = [f for f in FILES if f.key == args.file]
    rows = read_file(args.results, spec)
    sample = random.Random(args.seed).sample(rows, min(args.sample, len(rows)))
    os.environ["VITBENCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="vitbench-time-file-")  # empty caches
    import timm  # noqa: F401 - imported before the clock, as in a user's session that has it

    import vitbench
    from vitbench.errors import SpecError

    # one call per batch size and form, as a user asking for the whole file would make (each
    # model at the file's image size, in the reference syntax)
    groups: dict[tuple, list[str]] = {}
    for row in sample:
        groups.setdefault((row.mode, row.batch_size, row.reparam), []).append(f"timm:{row.model}+img_size={row.img_size}")

    def one(key, models) -> tuple[float, list[str]]:
        mode, batch, reparam = key
        start = time.perf_counter()
        try:
            out = vitbench.predict(models, device=spec.device, mode=mode, batch_size=batch, precision="fp16",
                                   reparam=reparam, jobs=args.jobs)
            statuses = [str(r["status"]) for r in out]
        except SpecError:  # a name today's timm no longer builds refuses the call: each model alone
            statuses = []
            for model in models:
                try:
                    statuses += [str(r["status"]) for r in vitbench.predict(
                        model, device=spec.device, mode=mode, batch_size=batch, precision="fp16", reparam=reparam)]
                except SpecError:
                    statuses.append("refused")
        return time.perf_counter() - start, statuses

    phases = {}
    for phase in ("empty caches", "from the caches"):
        started = time.perf_counter()
        times, statuses = zip(*(one(key, models) for key, models in groups.items()))
        statuses = [s for each in statuses for s in each]
        phases[phase] = (time.perf_counter() - started, times, statuses)
        ok = sum(s == "ok" for s in statuses)
        print(f"{phase}: {len(sample)} rows in {len(groups)} calls, {phases[phase][0]:.1f} s ({ok} ok), "
              f"{phases[phase][0] / len(sample):.3f} s a row, jobs {args.jobs}", flush=True)
    scale = len(rows) / len(sample)
    print(f"the whole file ({len(rows)} rows of {spec.filename}, this machine, jobs {args.jobs}): "
          f"{phases['empty caches'][0] * scale / 60:.1f} min with empty caches, "
          f"{phases['from the caches'][0] * scale / 60:.2f} min from the caches (scaled from {len(sample)} rows, seed {args.seed})")
    return 0


if __name__ == "__main__":  # the guard --jobs needs: worker processes import this file
    raise SystemExit(main())
