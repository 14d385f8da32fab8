"""Trace every configuration of timm's published GPU files into vitbench's trace cache (the slow
part of predicting them: about a second a model), so that fitting and validation re-price
traces only.  ``python benchmarks/gpu_published/trace_all.py RESULTS_DIR [--shard I/N]``.
A configuration that cannot be traced is written to ``trace_failures.jsonl`` with its reason.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from published import FILES, read_file


def groups(folder: Path, files: list[str], train_sample: int | None) -> list[tuple[str, int, str, bool, tuple[int, ...]]]:
    """(model, img_size, mode, reparam) -> batches, in the order of ``files``."""
    order: dict[tuple, set[int]] = {}
    for spec in FILES:
        if spec.key not in files:
            continue
        rows = read_file(folder, spec)
        if spec.mode == "train" and train_sample:
            import random

            rows = random.Random(0).sample(rows, min(train_sample, len(rows)))
        for row in rows:
            order.setdefault((row.model, row.img_size, row.mode, row.reparam), set()).add(row.batch_size)
    return [(*key, tuple(sorted(batches))) for key, batches in order.items()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", type=Path)
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("--files", default=",".join(spec.key for spec in FILES))
    parser.add_argument("--train-sample", type=int, default=0)
    parser.add_argument("--failures", type=Path, default=Path("trace_failures.jsonl"))
    args = parser.parse_args()
    index, count = (int(x) for x in args.shard.split("/"))
    import vitbench.models.target as targets
    from vitbench.models.references import resolve_all
    from vitbench.timemodel.trace_cache import cache_key, cached_traces, trace_dir

    todo = groups(args.results, args.files.split(","), args.train_sample)[index::count]
    started = time.time()
    done = 0
    trace_dir().mkdir(parents=True, exist_ok=True)
    index_file = trace_dir() / "published-keys.jsonl"
    for model, size, mode, reparam, batches in todo:
        try:
            target = resolve_all([f"timm:{model}"], {"img_size": size})[0]
            targets._LIGHT.clear()  # a giant model built for real must not stay in memory
            keys = {f"{model}|{size}|{mode}|{int(reparam)}|{batch}":
                    cache_key(target, batch, mode, "fp16", "sgd-momentum", "cuda", reparam) for batch in batches}
            cached_traces(target, batches, mode, "fp16", "sgd-momentum", "cuda", reparam)
            with open(index_file, "a") as handle:
                handle.write(json.dumps(keys) + "\n")
        except Exception as exc:  # noqa: BLE001 - recorded, the rest go on
            with open(args.failures, "a") as handle:
                handle.write(json.dumps({"model": model, "img_size": size, "mode": mode, "reparam": reparam,
                                         "error": f"{type(exc).__name__}: {exc}"[:500]}) + "\n")
        done += 1
        targets._LIGHT.clear()
        if done % 50 == 0:
            print(f"shard {index}: {done}/{len(todo)} in {time.time() - started:.0f} s", flush=True)
    print(f"shard {index}: {done}/{len(todo)} in {time.time() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
