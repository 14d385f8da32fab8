"""A large, realistic results CSV for the compare and reader benchmarks (issue 33).

Each row is the row ``vitbench analyze mnist-vit --format csv`` writes (its real columns and
values), plus the columns a measured row carries and ``compare`` reads: device, mode, precision,
status, env_*, throughput_img_s, latency_p50_s / p90, peak_memory_bytes, runs, run_medians_s (a
JSON list of per-run medians), samples_s and warnings. Every row is its own configuration (the
model's name and batch size vary), so nothing pools.

    python benchmarks/big_results.py OUT.csv ROWS [--distinct-names]

writes ROWS rows to OUT.csv (about 420 bytes a row: 10^6 rows are ~420 MB). The model names
repeat every 1,000 rows (``mnist-vit-d0`` .. ``mnist-vit-d999``; the batch size tells the rows
apart); ``--distinct-names``: every row has its own model name (``mnist-vit-r<i>``, batch sizes
repeating), the high-cardinality label column of issue 45.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path


def analyze_row() -> tuple[list[str], list[str]]:
    """The header and the one row of ``vitbench analyze mnist-vit --format csv``."""
    text = subprocess.run([sys.executable, "-m", "vitbench", "analyze", "mnist-vit", "--format", "csv"],
                          check=True, capture_output=True, text=True).stdout
    header, row = list(csv.reader(io.StringIO(text)))[:2]
    return header, row


MEASURED = ("device", "mode", "precision", "status", "env_torch", "env_cpu", "env_threads", "throughput_img_s",
            "latency_p50_s", "latency_p90_s", "peak_memory_bytes", "runs", "run_medians_s", "samples_s", "warnings")


def write(path: str | Path, rows: int, header: list[str] | None = None, row: list[str] | None = None, *,
          distinct_names: bool = False) -> int:
    """Write ``rows`` rows to ``path`` (streamed, 10,000 rows a block); returns the file's bytes.
    ``distinct_names``: each row its own model name (see the module's notes)."""
    if header is None or row is None:
        header, row = analyze_row()
    where = {name: i for i, name in enumerate(header)}
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([*header, *MEASURED])
        for start in range(0, rows, 10_000):
            block = []
            for i in range(start, min(rows, start + 10_000)):
                cells = list(row)
                if distinct_names:
                    cells[where["model"]] = f"mnist-vit-r{i}"
                    batch = i % 1000 + 1
                else:
                    cells[where["model"]] = f"mnist-vit-d{i % 1000}"
                    batch = i // 1000 + 1
                cells[where["batch_size"]] = str(batch)
                cells[where["macs"]] = str(int(row[where["macs"]]) * batch)
                step = 0.0004 * (1 + (i * 7919 % 100_003) / 1e6)  # every row its own timings
                medians = [float(f"{step * (1 + k * 0.003):.6g}") for k in range(5)]
                block.append([*cells, "cpu", "infer", "fp32", "ok", "2.14.1", "AMD EPYC 7B13", "1",
                              repr(batch / step), repr(step), repr(step * 1.1), str(3_000_000 + 64 * (i % 5000)), "5",
                              "[" + ",".join(map(repr, medians)) + "]", "[" + ",".join(map(repr, medians[:3])) + "]",
                              "" if i % 10 else "busy machine: load 1.2"])
            writer.writerows(block)
        return handle.tell()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--distinct-names"]
    print(write(args[0], int(args[1]), distinct_names="--distinct-names" in sys.argv[1:]))
