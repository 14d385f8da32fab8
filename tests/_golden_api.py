"""The API's outputs as files, for tests/test_api_golden.py: what ``predict``, ``choose``,
``profile`` and ``sweep`` return, rendered to CSV (``Records.to_csv``, ``DataFrame.to_csv``),
JSON (the results document and the CLI's) and markdown, for a few small fixed questions.

The files in tests/data/golden_api/ were written by the code before the typed API (issue 47:
settings objects, typed rows), so the test holds the typed API to the exact bytes the
dict-returning API gave. Cells that differ between two runs by nature (clock readings, the
installed torch, a measured time) are replaced by ``*`` before rendering, in place, so that the
rows rendered are the API's own objects.

``python tests/_golden_api.py --write`` writes the files again: only after a change that is
meant to change an output (the GPU cost model's parameters change ``choose`` and the GPU
``predict`` numbers, for one), and with the diff read.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
GOLDEN = HERE / "data" / "golden_api"

#: columns whose cells differ between two runs of the same question
VOLATILE_PREFIXES = ("timestamp", "created", "completed_at", "elapsed", "env_", "duration_s", "run_id", "pred_seconds",
                     "vitbench_version")
#: a measured row's cells that the question decides (the rest is measured or read off the machine)
PROFILE_KEPT = ("model", "source", "kind", "spec_key", "img_size", "patch_size", "batch_size", "params", "macs",
                "device", "mode", "precision", "optimizer", "threads", "status", "error", "runs")


def _masked(records, keep=None):
    """``records`` with their volatile cells (or, with ``keep``, every cell not in it) set to
    ``*`` and the installed torch's version in a text cell to ``TORCH``, in place: the same row
    objects."""
    import torch

    for row in records:
        for key in list(row):
            if (keep is not None and key not in keep) or (keep is None and key.startswith(VOLATILE_PREFIXES)):
                if row[key] is not None:
                    row[key] = "*"
            elif isinstance(row[key], str) and torch.__version__ in row[key]:  # a calibration's basis names it
                row[key] = row[key].replace(torch.__version__, "TORCH")
    return records


def renderings(records, columns=None) -> dict[str, str]:
    """Every rendering of ``records`` the API and the CLI offer, by file suffix."""
    from vitbench.reporting.format import render
    from vitbench.results import to_json

    return {
        "records.csv": records.to_csv(),
        "frame.csv": records.to_frame().to_csv(index=False),
        "records.json": to_json(records) + "\n",
        "cli.json": render(records, "json") + "\n",
        "table.md": render(records, "markdown", columns) + "\n",
    }


def _calibration_file(folder: Path) -> Path:
    sys.path.insert(0, str(HERE))
    from _calibrations import synthetic

    from vitbench.timemodel.calibration.cache import save

    return save(synthetic(), folder / "synthetic.json")


def predict_cpu(folder: Path):
    import vitbench

    records = vitbench.predict(["mnist-vit", "slides-cnn"], mode=["infer", "train"], batch_size=[1, 2],
                               calibration=_calibration_file(folder), epochs=2, dataset_size=1000, price_per_hour=1.5)
    return _masked(records)


def predict_cpu_small(folder: Path):
    import vitbench

    records = vitbench.predict("mnist-vit", batch_size=2, calibration=_calibration_file(folder), epochs=2,
                               dataset_size=1000, price_per_hour=1.5)
    return _masked(records)


def predict_gpu_small(folder: Path):
    import vitbench

    records = vitbench.predict("mnist-vit", device="h100,l4", batch_size=2, precision="bf16", epochs=1,
                               dataset_size=10_000, price_per_hour="h100=2.5,l4=0.6")
    return _masked(records)


def predict_refused(folder: Path):
    import vitbench

    records = vitbench.predict(["mnist-vit", "vit-b/16"], calibration=_calibration_file(folder), batch_size=2,
                               depth=2000)
    return _masked(records)


def predict_gpu(folder: Path):
    import vitbench

    records = vitbench.predict("vit-ti/16", device="h100,l4", mode="train", batch_size=64, precision="bf16",
                               epochs=1, dataset_size=10_000, price_per_hour="h100=2.5,l4=0.6")
    return _masked(records)


def choose(folder: Path):
    import vitbench

    rows = vitbench.choose("vit-ti/16", device="h100,a100,l4", epochs=2, dataset_size=10_000,
                           price="h100=2.5,a100=1.3,l4=0.6", precision="bf16", gpus=2)
    return _masked(rows)


def profile(folder: Path):
    import vitbench

    settings = vitbench.RunSettings(device="cpu", batch_size=2, runs=1, min_run_time_s=0.02, warmup=1, threads=1,
                                    min_samples=2)
    return _masked(vitbench.profile(["mnist-vit"], settings), keep=PROFILE_KEPT)


def sweep(folder: Path):
    import vitbench

    result = vitbench.sweep(models=["mnist-vit", "cifar-vit/4"], grid={"depth": [1, 2]}, out=folder / "sweep")
    return _masked(result.records)


#: case -> (function, the markdown table's columns: None for every column)
CASES = {
    "predict_cpu": (predict_cpu, "predict"),
    "predict_cpu_small": (predict_cpu_small, "predict"),
    "predict_refused": (predict_refused, "predict"),
    "predict_gpu": (predict_gpu, "predict"),
    "predict_gpu_small": (predict_gpu_small, "predict"),
    "choose": (choose, "choose"),
    "profile": (profile, "profile"),
    "sweep": (sweep, None),
}


def table_columns(kind: str | None, records):
    """The columns the CLI's table and markdown show for ``kind``, as its command picks them."""
    if kind == "predict":
        from vitbench.timemodel.run import TABLE_COLUMNS, TABLE_OPTIONAL

        return [c for c in TABLE_COLUMNS if c not in TABLE_OPTIONAL or any(r.get(c) not in (None, "ok") for r in records)]
    if kind == "choose":
        from vitbench.timemodel.choose import TABLE_COLUMNS

        return [c for c in TABLE_COLUMNS if c == "note" or any(r.get(c) is not None for r in records)]
    if kind == "profile":
        from vitbench.measure.profile import TABLE_COLUMNS

        return list(TABLE_COLUMNS)
    return None


def command_line(folder: Path) -> dict[str, str]:
    """What ``vitbench predict`` and ``vitbench choose`` print as markdown (the CLI builds the
    settings the API takes); the installed torch's version as ``TORCH``."""
    import contextlib
    import io

    import torch

    from vitbench.cli import main

    calibration = str(_calibration_file(folder))
    commands = {
        "cli_predict.md": ["predict", "mnist-vit", "slides-cnn", "--calibration", calibration, "--batch-size", "1,2",
                           "--mode", "infer,train", "--epochs", "2", "--dataset-size", "1000", "--price-per-hour", "1.5"],
        "cli_choose.md": ["choose", "vit-ti/16", "--device", "h100,a100,l4", "--epochs", "2", "--dataset-size", "10000",
                          "--price", "h100=2.5,a100=1.3,l4=0.6", "--precision", "bf16", "--gpus", "2"],
    }
    found = {}
    for name, argv in commands.items():
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main([*argv, "--format", "markdown", "-q"])
        found[name] = f"exit {code}\n" + out.getvalue().replace(torch.__version__, "TORCH")
    return found


def outputs(case: str, folder: Path) -> dict[str, str]:
    """The files of ``case``, by name."""
    if case == "cli":
        return command_line(folder)
    make, kind = CASES[case]
    records = make(folder)
    found = {f"{case}.{suffix}": text for suffix, text in renderings(records, table_columns(kind, records)).items()}
    if case == "choose":
        found["choose.verdict.txt"] = records.verdict + "\n"
    return found


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print("usage: python tests/_golden_api.py --write", file=sys.stderr)
        return 2
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["VITBENCH_CACHE_DIR"] = str(Path(tmp) / "cache")
        os.environ.setdefault("VITBENCH_TRACE_DIR", str(Path(tmp) / "traces"))
        for case in [*CASES, "cli"]:
            folder = Path(tmp) / case
            folder.mkdir()
            for name, text in outputs(case, folder).items():
                (GOLDEN / name).write_text(text)
                print(f"wrote {GOLDEN / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
