"""Files for the bad-input corpus's "one reader" cases (issue 33): stores whose rows.jsonl or
sweep.json is a FIFO or /dev/zero, a sweep.json that claims absurd counts, tampered CPU
calibration files, ``--measured`` files with rows that are no batch or no time, and results
with integers past Python's 4,300 digits. :func:`prepare` writes them under ``root`` and returns
the corpus's placeholders (tests/test_bad_inputs.py's ``files`` fixture adds them)."""

from __future__ import annotations

import json
import os
import shutil
import zlib
from pathlib import Path

from vitbench.timemodel.calibration.schema import SCHEMA_VERSION


def _calibration(**changes) -> dict:
    import torch

    rows = [[m, k, n, 1e10] for m in (1, 4096) for k in (1, 4096) for n in (1, 4096)]
    data = dict(
        device="cpu", device_name="synthetic", threads=1, torch=torch.__version__, basis="calibration",
        gemm={"float32": rows}, efficiency={}, ops={"gelu": [2e-6, 5e8]}, overhead_s=1e-6, bandwidth_bytes_s=1e9,
        framework_s={"infer": 3e-6, "train": 4e-6, "optimizer": 5e-7}, in_step_factor=1.0, seconds=1.0,
        schema_version=SCHEMA_VERSION, notes={},
    )
    data.update(changes)
    return data


def _store_copy(store: Path, root: Path, name: str) -> Path:
    copy = root / name
    shutil.copytree(store, copy)
    return copy


def _row_line(body: str) -> bytes:
    """A store line with a valid checksum around ``body`` (a JSON object's text)."""
    return f'{body[:-1]},"_crc32":"{zlib.crc32(body.encode()):08x}"}}\n'.encode()


def _calibrations(root: Path) -> dict[str, str]:
    big = "1" + "0" * 400  # an integer too large for a float
    hole = _calibration()["gemm"]["float32"][:-1] + [_calibration()["gemm"]["float32"][0]]  # one point twice, one missing
    texts = {
        "cal_ok": json.dumps(_calibration()),
        "cal_threads7": json.dumps(_calibration(threads=7)),
        "cal_bigint": json.dumps(_calibration())[:-1] + f', "in_step_factor": {big}}}',
        "cal_torch": json.dumps(_calibration(torch=3)),
        "cal_hole": json.dumps(_calibration(gemm={"float32": hole})),
        "cal_negative": json.dumps(_calibration(bandwidth_bytes_s=-1e9)),
        "cal_zero_rate": json.dumps(_calibration(gemm={"float32": [[1, 1, 1, 0]]})),
        "cal_slow": json.dumps(_calibration(overhead_s=1e300)),
        "cal_tiny_rate": json.dumps(_calibration(gemm={"float32": [[1, 1, 1, 1e-300]]})),
        "cal_nan": json.dumps(_calibration(overhead_s=float("nan"))),
        "cal_inf": json.dumps(_calibration())[:-1] + ', "bandwidth_bytes_s": 1e999}',
        "cal_digits": json.dumps(_calibration())[:-1] + f', "seconds": {"9" * 5000}}}',
        "cal_deep": json.dumps(_calibration())[:-1] + ', "notes": {"x": ' + "[" * 80 + "]" * 80 + "}}",
    }
    out = {}
    for key, text in texts.items():
        (root / f"{key}.json").write_text(text)
        out[key] = str(root / f"{key}.json")
    return out


def _measured(root: Path) -> dict[str, str]:
    header = "model,mode,precision,batch_size,latency_p50_s,status\n"
    csvs = {
        "measured_batch_x": "mnist-vit,infer,fp32,x,0.01,ok\n",
        "measured_batch_half": "mnist-vit,infer,fp32,1.5,0.01,ok\n",
        "measured_latency_inf": "mnist-vit,infer,fp32,1,inf,ok\n",
        "measured_latency_abc": "mnist-vit,infer,fp32,1,abc,ok\n",
    }
    out = {}
    for key, row in csvs.items():
        (root / f"{key}.csv").write_text(header + row)
        out[key] = str(root / f"{key}.csv")
    records = {
        "measured_batch_list": {"batch_size": [1], "latency_p50_s": 0.01},
        "measured_batch_true": {"batch_size": True, "latency_p50_s": 0.01},
        "measured_latency_true": {"batch_size": 1, "latency_p50_s": True},
        "measured_latency_tiny": {"batch_size": 1, "latency_p50_s": 1e-320},
    }
    for key, cells in records.items():
        row = {"model": "mnist-vit", "mode": "infer", "precision": "fp32", "status": "ok", **cells}
        (root / f"{key}.json").write_text(json.dumps({"schema_version": 1, "records": [row]}))
        out[key] = str(root / f"{key}.json")
    return out


def prepare(root: Path, store: Path) -> dict[str, str]:
    """The placeholders: stores (``fifo_rows_store``, ``zero_rows_store``, ``fifo_def_store``,
    ``zero_def_store``, ``shards_store``, ``grid_store``, ``bigint_rows_store``), calibrations
    (``cal_*``), ``--measured`` files (``measured_*``), ``bigint_json``."""
    root = Path(root) / "input_files"
    root.mkdir()
    out: dict[str, str] = {}
    for name, member, make in (
            ("fifo_rows_store", "rows.jsonl", os.mkfifo), ("zero_rows_store", "rows.jsonl", lambda p: p.symlink_to("/dev/zero")),
            ("fifo_def_store", "sweep.json", os.mkfifo), ("zero_def_store", "sweep.json", lambda p: p.symlink_to("/dev/urandom"))):
        copy = _store_copy(store, root, name)
        (copy / member).unlink()
        make(copy / member)
        out[name] = str(copy)
    for name, changes in (("shards_store", {"shard_index": 1, "shard_count": 10**12}), ("grid_store", {"grid_size": 10**13})):
        copy = _store_copy(store, root, name)
        definition = json.loads((copy / "sweep.json").read_text())
        definition["sweep"].update(changes)
        (copy / "sweep.json").write_text(json.dumps(definition))
        out[name] = str(copy)
    copy = _store_copy(store, root, "bigint_rows_store")
    with open(copy / "rows.jsonl", "ab") as handle:
        handle.write(_row_line('{"id":"ffff","index":7,"model":"mnist-vit","status":"ok","macs":' + "7" * 5000 + "}"))
    out["bigint_rows_store"] = str(copy)
    (root / "bigint.json").write_text('{"schema_version": 1, "records": [{"model": "mnist-vit", "macs": ' + "7" * 5000 + "}]}")
    out["bigint_json"] = str(root / "bigint.json")
    (root / "bigint_shallow.json").write_text('[{"model": "mnist-vit", "macs": ' + "7" * 2000 + "}]")
    out["bigint_shallow_json"] = str(root / "bigint_shallow.json")
    out.update(_calibrations(root))
    out.update(_measured(root))
    out.update(_pseudo_files(root, store))
    return out


def _pseudo_files(root: Path, store: Path) -> dict[str, str]:
    """Files that are no file's contents: a FIFO in the place of ``/proc/kmsg`` (the real one
    blocks only while the kernel's log is empty, and reading it takes the log's lines away from
    whoever reads them: the would-block read is tested with a fake handle in
    tests/test_input_files.py) and ``/proc/self/pagemap`` (size 0, yet gigabytes), as a CSV and as
    a store's rows.jsonl; an empty store; a header-only CSV."""
    out: dict[str, str] = {}
    for key, target in (("kmsg", None), ("pagemap", "/proc/self/pagemap")):
        copy = _store_copy(store, root, f"{key}_rows_store")
        (copy / "rows.jsonl").unlink()
        for link in (root / f"{key}.csv", copy / "rows.jsonl"):
            link.symlink_to(target) if target and os.path.exists(target) else os.mkfifo(link)
        out[f"{key}_csv"] = str(root / f"{key}.csv")
        out[f"{key}_rows_store"] = str(copy)
    copy = _store_copy(store, root, "empty_rows_store")
    (copy / "rows.jsonl").write_text("")
    out["empty_rows_store"] = str(copy)
    (root / "header_only.csv").write_text("id,model\n")
    out["header_only_csv"] = str(root / "header_only.csv")
    for key, text in (("measured_huge_latency_csv", "model,latency_p50_s,batch_size,status\nmnist-vit,1e300,1,ok\n"),
                      ("measured_underscore_csv", "model,latency_p50_s,batch_size,status\nmnist-vit,1_000,1,ok\n"),
                      ("negative_params_csv", "model,params,batch_size,status\nmnist-vit,-5,1,ok\n")):
        (root / f"{key}.csv").write_text(text)
        out[key] = str(root / f"{key}.csv")
    return out
