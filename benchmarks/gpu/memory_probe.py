"""What CUDA's memory looks like for the selftest's tiny ViT (issue: on a real GPU).

Prints, for a training step in fp32 at a few batch sizes with no cap: the allocator's peak
(allocated and reserved) against the memory model's prediction, and the peak's composition;
then every gradient-category allocation of one steady-state step (size, and whether it matches
a parameter's size), to explain the gradients' maximum beyond 4 bytes per parameter.

    python benchmarks/gpu/memory_probe.py
"""

from __future__ import annotations

import json


def main() -> None:
    import sys

    from torch.profiler._memory_profiler import Action, Category, MemoryProfile, TensorKey

    from vitbench.measure.memory import _profile_step
    from vitbench.measure.profile import measure
    from vitbench.measure.selftest import TINY_VIT
    from vitbench.measure.workload import build_workload
    from vitbench.settings import RunSettings

    cases = (("train", 356, "fp32"), ("train", 762, "fp32"), ("infer", 356, "fp32"), ("infer", 762, "bf16"),
             ("train", 356, "bf16"))
    # `memory_probe.py infer`: the inference cases alone, in a process that never trained (a
    # training step's backward thread keeps its own cuBLAS workspace for the process's life)
    if sys.argv[1:] == ["infer"]:
        cases = tuple(c for c in cases if c[0] == "infer")
    for mode, batch, precision in cases:
        r = measure(TINY_VIT, RunSettings(device="cuda", mode=mode, batch_size=batch, precision=precision, runs=1,
                                          min_run_time_s=0.05, warmup=2, memory=True))
        composition = sum((r.get("peak_composition") or {}).values())
        print(json.dumps({"mode": mode, "precision": precision, "beside_tensors": r.get("peak_memory_bytes", 0) - composition,
                          **{k: r.get(k) for k in ("batch_size", "peak_memory_bytes", "peak_reserved_bytes",
                                                   "pred_peak_memory_bytes", "pred_workspace_bytes", "peak_composition")}}),
              flush=True)
    if sys.argv[1:] == ["infer"]:
        return
    workload = build_workload(TINY_VIT, RunSettings(device="cuda", mode="train", batch_size=8), 8, "cuda")
    workload.run(2)
    sizes = {p.numel() * 4: name for name, p in workload.model.named_parameters()}
    prof = _profile_step(workload)
    profile = MemoryProfile(prof.profiler.kineto_results)
    live = 0
    for _time, action, (key, version), size in profile.timeline:
        if not isinstance(key, TensorKey) or key.device.type != "cuda":
            continue
        if profile._categories.get(key, version) != Category.GRADIENT:
            continue
        if action in (Action.CREATE, Action.PREEXISTING):
            live += size
        elif action == Action.DESTROY:
            live -= size
        if action != Action.PREEXISTING:
            print(f"{action.name:18} {size:8d} B  live {live:8d}  {sizes.get(size, '')}")
    print("parameters:", sum(p.numel() for p in workload.model.parameters()) * 4, "B")


if __name__ == "__main__":
    main()
