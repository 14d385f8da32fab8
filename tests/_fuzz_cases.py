"""Files for the bad-input corpus's "fuzzer finds" cases (issue 33): the minimal inputs on which
tests/test_fuzz.py found a hole the issue did not list. :func:`prepare` writes them under
``root`` and returns the corpus's placeholders (tests/test_bad_inputs.py's ``files`` fixture adds
them)."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

from vitbench.timemodel.calibration.schema import SCHEMA_VERSION

#: placeholder -> (file name, bytes)
FILES = {
    # report: measured rows without a batch size (KeyError 'batch_size', exit 3)
    "fuzz_no_batch_csv": ("no_batch.csv", b"model,status,throughput_img_s\nmnist-vit,ok,800\n"),
    # report: two measured rows at one batch size (a fit over a constant x: StatisticsError, exit 3)
    "fuzz_one_batch_csv": ("one_batch.csv", b"model,batch_size,status,throughput_img_s,peak_memory_bytes\n"
                                            b"mnist-vit,1,ok,800.0,10000000\nmnist-vit,1,ok,900.0,20000000\n"),
    # report: a number written as text in a JSON results file (TypeError str / float, exit 3)
    "fuzz_text_number_json": ("text_number.json", b'[{"model":"mnist-vit","batch_size":4,"status":"ok","latency_p50_s":0.0048,'
                                                  b'"throughput_img_s":800.0,"pred_latency_s":"1"}]'),
    # report: batch size 0 (a log axis of no positive values: matplotlib's warning on stderr, exit 0)
    "fuzz_batch_zero_csv": ("batch_zero.csv", b"model,batch_size,status,throughput_img_s\nmnist-vit,0,ok,800\n"),
    # report: batch size false in JSON (the same, a boolean taken for a batch size)
    "fuzz_batch_false_json": ("batch_false.json", b'[{"model":"mnist-vit","batch_size":false,"status":"ok","throughput_img_s":800.0}]'),
    # report: a batch size written as text in JSON (or a store row): TypeError str * float, exit 3
    "fuzz_text_batch_json": ("text_batch.json", b'[{"model":"mnist-vit","batch_size":"4","status":"ok","latency_p50_s":0.0012,'
                                                b'"throughput_img_s":800.0}]'),
    # report: a model name with a character no font draws (matplotlib's "Glyph missing" warnings
    # on stderr, exit 0; not a corpus case: the command succeeds, tests/test_fuzz.py checks stderr)
    "fuzz_glyph_csv": ("glyph.csv", "model,batch_size,status,latency_p50_s,throughput_img_s\n"
                                    "mnist-vit\U0008e612,1,ok,0.001,1000\nmnist-vit\U0008e612,4,ok,0.003,1300\n".encode()),
    # report: batch sizes of two types (1 and "8"): TypeError '<' between str and int, exit 3
    "fuzz_mixed_batch_json": ("mixed_batch.json", b'[{"model":"mnist-vit","batch_size":1,"status":"ok","latency_p50_s":0.0012,'
                                                  b'"throughput_img_s":800.0},{"model":"mnist-vit","batch_size":"8","status":"ok",'
                                                  b'"latency_p50_s":0.0048,"throughput_img_s":800.0}]'),
    # the reader's refusal quotes a JSON key with a newline in it: an error over two lines
    "fuzz_newline_key_json": ("newline_key.json", b'[{"model":"mnist-vit","a\\nb":1e9999999}]'),
}


def _big_latency_store(store: Path, root: Path) -> Path:
    """A copy of ``store`` whose first row, measured, has a latency of 10^310: an integer no float
    holds (OverflowError in compare, report and predict --measured, exit 3)."""
    copy = root / "fuzz_big_latency_store"
    shutil.copytree(store, copy)
    rows = (copy / "rows.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    row.pop("_crc32")
    row.update(mode="infer", precision="fp32", throughput_img_s=800.0, latency_p50_s=10**310)
    body = json.dumps(row, separators=(",", ":"))
    line = f'{body[:-1]},"_crc32":"{zlib.crc32(body.encode()):08x}"}}'
    (copy / "rows.jsonl").write_text("\n".join([line, *rows[1:]]) + "\n")
    return copy


def _newline_key_calibration(root: Path) -> Path:
    """A valid CPU calibration with one unknown member named ``a<newline>b``: the refusal quotes
    the name raw, an error over two lines."""
    import torch

    rows = [[m, k, n, 1e10] for m in (1, 4096) for k in (1, 4096) for n in (1, 4096)]
    data = dict(device="cpu", device_name="synthetic", threads=1, torch=torch.__version__, basis="calibration",
                gemm={"float32": rows}, efficiency={}, ops={}, overhead_s=1e-6, bandwidth_bytes_s=1e9,
                framework_s={"infer": 3e-6, "train": 4e-6, "optimizer": 5e-7}, in_step_factor=1.0, seconds=1.0,
                schema_version=SCHEMA_VERSION, notes={})
    data["a\nb"] = 1
    path = root / "fuzz_newline_key_calibration.json"
    path.write_text(json.dumps(data))
    return path


def prepare(root: Path, store: Path) -> dict[str, str]:
    out = {}
    for key, (name, data) in FILES.items():
        (root / name).write_bytes(data)
        out[key] = str(root / name)
    out["fuzz_big_latency_store"] = str(_big_latency_store(Path(store), root))
    out["fuzz_newline_key_calibration"] = str(_newline_key_calibration(root))
    return out
