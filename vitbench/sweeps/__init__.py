"""Sweeps: grids of configurations, run stage by stage into an append-only results store.

- :mod:`~vitbench.sweeps.schema`: checking sweep-file values; the measured stage's RunSettings keys
- :mod:`~vitbench.sweeps.plan`: sweep files and command-line flags -> a validated plan
- :mod:`~vitbench.sweeps.grid`: streaming expansion, configuration ids, counting, shards
- :mod:`~vitbench.sweeps.rows`: computing one row, stage by stage; the per-row time estimate
- :mod:`~vitbench.sweeps.launch`: ``sweep()``, the entry: the plan, then a launcher
- :mod:`~vitbench.sweeps.run`: running a plan into a store in this process (and the dry run)
- :mod:`~vitbench.sweeps.merging`: merging stores (shards, job arrays)
- :mod:`~vitbench.sweeps.progress`: progress display and SIGTERM handling shared by commands
- :mod:`~vitbench.sweeps.launchers`: one worker per GPU, Slurm job arrays via submitit

The store they write (rows, definition, exports) is :mod:`vitbench.store`, the bottom layer.

Names load lazily (the runner imports torch only when used).
"""

from __future__ import annotations

from vitbench.lazy import lazy_exports

_EXPORTS = {
    "SweepFileError": "vitbench.sweeps.schema",
    "Study": "vitbench.sweeps.plan",
    "SweepPlan": "vitbench.sweeps.plan",
    "load_sweep_file": "vitbench.sweeps.plan",
    "validate": "vitbench.sweeps.plan",
    "plan_from_grid": "vitbench.sweeps.plan",
    "apply_overrides": "vitbench.sweeps.plan",
    "default_study_path": "vitbench.sweeps.plan",
    "Config": "vitbench.sweeps.grid",
    "iter_configs": "vitbench.sweeps.grid",
    "expand": "vitbench.sweeps.grid",
    "count_configs": "vitbench.sweeps.grid",
    "build_plan": "vitbench.sweeps.plan",
    "parse_shard": "vitbench.sweeps.grid",
    "select_shard": "vitbench.sweeps.grid",
    "sweep": "vitbench.sweeps.launch",
    "SweepResult": "vitbench.sweeps.run",
    "SweepInterrupted": "vitbench.sweeps.run",
    "merge": "vitbench.sweeps.merging",
    "MergeResult": "vitbench.sweeps.merging",
    "Progress": "vitbench.sweeps.progress",
    "sigterm_as_interrupt": "vitbench.sweeps.progress",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
