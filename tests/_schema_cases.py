"""Placeholders of the bad-input corpus for issue 33's record schema (vitbench/record_schema.py):
results whose known columns hold what they cannot (a model name that is a number, a batch size in
other digits or as text in a store's row, an infinite latency), and two measured rows of one step."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

#: placeholder -> (file name, bytes)
FILES = {
    "schema_model_number_json": ("model_number.json", b'[{"model":5,"batch_size":1,"status":"ok","throughput_img_s":800.0}]'),
    "schema_arabic_batch_json": ("arabic_batch.json", '[{"model":"mnist-vit","batch_size":"\u0661\u0662\u0663","status":"ok",'
                                                      '"latency_p50_s":0.001,"throughput_img_s":800.0}]'.encode()),
    "schema_inf_latency_csv": ("inf_latency.csv", b"model,batch_size,status,latency_p50_s,throughput_img_s\nmnist-vit,1,ok,inf,800\n"),
    "schema_dup_measured_csv": ("dup_measured.csv", b"model,mode,precision,batch_size,status,latency_p50_s\n"
                                                    b"mnist-vit,infer,fp32,1,ok,0.001\nmnist-vit,infer,fp32,1,ok,0.002\n"),
}


def _text_batch_store(store: Path, root: Path) -> Path:
    """A copy of ``store`` whose first row (checksum valid) has the batch size ``"x"``."""
    copy = root / "schema_text_batch_store"
    shutil.copytree(store, copy)
    rows = (copy / "rows.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    row.pop("_crc32")
    row.update(status="ok", batch_size="x")
    body = json.dumps(row, separators=(",", ":"))
    line = f'{body[:-1]},"_crc32":"{zlib.crc32(body.encode()):08x}"}}'
    (copy / "rows.jsonl").write_text("\n".join([line, *rows[1:]]) + "\n")
    return copy


def prepare(root: Path, store: Path) -> dict[str, str]:
    out = {}
    for key, (name, data) in FILES.items():
        (root / name).write_bytes(data)
        out[key] = str(root / name)
    out["schema_text_batch_store"] = str(_text_batch_store(Path(store), root))
    return out
