"""timm's published GPU throughputs (pytorch-image-models ``results/benchmark-*.csv``), read as
configurations vitbench can predict.

The files are not copied into this repository: give the folder that holds them (a checkout of
https://github.com/huggingface/pytorch-image-models, ``results/``). What each file measured
(timm's ``benchmark.py``): eager PyTorch, AMP fp16 autocast, NCHW, batch 256-2048 (halved on an
out-of-memory), 10 warm-up steps then 40-50 timed, ``inference_mode`` for inference; training is
forward + cross-entropy + backward + timm's SGD (Nesterov momentum 0.9), without a grad scaler.
The pt291 files ran ``--reparam`` (the deployed form of repvgg, mobileone, fastvit...): their
throughputs for those models are 1.5-2.4x the pt240 files' on the same 4090.
"""

from __future__ import annotations

import csv
import zlib
from dataclasses import dataclass
from pathlib import Path

from vitbench.timemodel.families import FAMILIES, family  # noqa: F401 - re-exported for the scripts

#: the commit of pytorch-image-models the files were read at (cited by the report)
TIMM_COMMIT = "aa4b5850c1543fa488abf260f18390eda46cf85d"


@dataclass(frozen=True)
class PublishedFile:
    key: str            # short name used in the report
    filename: str
    device: str         # vitbench --device name
    mode: str           # infer | train
    reparam: bool       # the file benchmarked the deployed (reparameterised) form
    role: str           # fit | held-out-gpu | old-software | like-for-like
    software: str


FILES = (
    PublishedFile("rtx3090-pt240", "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv", "rtx3090", "infer", False, "fit",
                  "PyTorch 2.4.0, CUDA 12.4"),
    PublishedFile("rtx4090-pt240", "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv", "rtx4090", "infer", False, "fit",
                  "PyTorch 2.4.0, CUDA 12.4"),
    PublishedFile("rtx5090-pt291", "benchmark-infer-amp-nchw-pt291-cu130-5090.csv", "rtx5090", "infer", True,
                  "held-out-gpu", "PyTorch 2.9.1, CUDA 13.0"),
    PublishedFile("rtxpro6000maxq-pt291", "benchmark-infer-amp-nchw-pt291-cu130-pro6000maxq.csv", "rtx-pro-6000-maxq",
                  "infer", True, "held-out-gpu", "PyTorch 2.9.1, CUDA 13.0"),
    PublishedFile("rtx3090-train-pt112", "benchmark-train-amp-nchw-pt112-cu113-rtx3090.csv", "rtx3090", "train", False,
                  "old-software", "PyTorch 1.12, CUDA 11.3"),
    PublishedFile("rtx4090-pt291", "benchmark-infer-amp-nchw-pt291-cu128-4090.csv", "rtx4090", "infer", True,
                  "like-for-like", "PyTorch 2.9.1, CUDA 12.8"),
)


@dataclass(frozen=True)
class Published:
    file: str           # PublishedFile.key
    model: str          # timm name, as in the file (may carry a pretrained tag)
    img_size: int
    batch_size: int
    mode: str
    reparam: bool
    samples_per_s: float
    step_s: float

    @property
    def fit_half(self) -> bool:
        """Whether the model's name (without a tag) has an even CRC32: the half fitting may use."""
        return zlib.crc32(self.model.split(".")[0].encode()) % 2 == 0


def read_file(folder: Path, spec: PublishedFile) -> list[Published]:
    prefix = "train" if spec.mode == "train" else "infer"
    rows = []
    with open(Path(folder) / spec.filename, newline="") as handle:
        for row in csv.DictReader(handle):
            try:
                rows.append(Published(spec.key, row["model"], int(row[f"{prefix}_img_size"]),
                                      int(row[f"{prefix}_batch_size"]), spec.mode, spec.reparam,
                                      float(row[f"{prefix}_samples_per_sec"]), float(row[f"{prefix}_step_time"]) / 1000))
            except (KeyError, ValueError):
                continue
    return rows
