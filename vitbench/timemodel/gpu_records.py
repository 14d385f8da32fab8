"""Recorded GPU measurements, read back as the cost model's fitting observations: the step times
``vitbench calibrate --device cuda``, ``benchmarks/gpu/predict_vs_profile.py``, ``vitbench
profile`` (largest batches) and ``benchmarks/gpu/bare_loop.py`` (a hand-written training loop)
wrote on lent cards (``reports/h100/data/``, ``benchmarks/gpu/data/``). The data-centre fit
(``benchmarks/gpu/fit_datacenter.py``) and the tests replay them through the fitting code
without a GPU: each configuration is traced on fake CUDA tensors and priced on the card it was
measured on.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitbench.input_files import MAX_CALIBRATION_BYTES, load_json, read_input_text
from vitbench.models.references import resolve
from vitbench.row_status import has_result
from vitbench.timemodel.gpu_fit import Observation
from vitbench.timemodel.gpu_model import op_table
from vitbench.timemodel.gpus import gpu
from vitbench.timemodel.trace_cache import cached_traces

#: the repository's recorded measurements: (machine, card, kind of file, path under the repository)
RECORDED: tuple[tuple[str, str, str, str], ...] = (
    ("h100-vm", "h100", "calibration", "reports/h100/data/gpu_calibration.json"),
    ("h100-vm", "h100", "predict_vs_profile", "reports/h100/data/predict_vs_profile.csv"),
    ("h100-vm", "h100", "profile", "reports/h100/data/profile_auto.csv"),
    ("h100-vm", "h100", "bare_loop", "reports/h100/data/bare_loop.json"),
    ("h200-vm", "h200", "calibration", "benchmarks/gpu/data/h200_calibration.json"),
)


#: bare_loop.py's model labels -> what it built (timm's ViT-B/16; torchvision's ResNet-50 is
#: vitbench's ``resnet50``)
BARE_LOOP_MODELS = {"vit-b/16": "timm:vit_base_patch16_224"}

#: models recorded under two names that are one network (the same layers and shapes: equal
#: parameters and MACs, tests/test_gpu_replay.py), keyed to one of the names: a model left out of
#: a fit is left out under both, and a step measured twice is read once
SAME_NETWORK = {"timm:vit_base_patch16_224": "vit-b/16", "timm:resnet50": "resnet50"}


def network(model: str) -> str:
    """The one name of the network ``model`` names (:data:`SAME_NETWORK`)."""
    return SAME_NETWORK.get(model, model)


@dataclass(frozen=True)
class Measured:
    """One measured configuration: a step of ``model`` on ``card`` of ``machine``."""

    machine: str       # the machine (its host dispatches the operators)
    card: str          # catalogue key of its GPU
    source: str        # the kind of file it comes from
    model: str
    mode: str
    batch_size: int
    precision: str     # bf16, fp16, fp32 (TF32 convolutions only) or tf32
    measured_s: float
    optimizer: str = "adamw"      # a training step's optimizer
    channels_last: bool = False   # the model and its images in channels-last memory format


def read_file(path: str | Path, machine: str, card: str, source: str) -> list[Measured]:
    """The ok measurements of one recorded file, by its kind (``source``): a GPU calibration
    (JSON ``observations``), a predict-vs-profile CSV (``measured_s``), a ``vitbench profile`` CSV
    (the median step, ``latency_p50_s``) or bare_loop.py's JSON (``cases``, bf16 autocast and
    AdamW, the bare loop's median step)."""
    path = Path(path)
    text = read_input_text(path, str(path), max_bytes=MAX_CALIBRATION_BYTES)
    if source == "bare_loop":
        cases = load_json(text, str(path))["cases"]
        return [Measured(machine, card, source, BARE_LOOP_MODELS.get(str(c["model"]), str(c["model"])), str(c["mode"]),
                         int(c["batch"]), str(c["precision"]), float(c["bare_median_s"])) for c in cases]
    if path.suffix == ".json":
        rows: list[dict[str, Any]] = load_json(text, str(path))["observations"]
    else:
        rows = [row for row in csv.DictReader(io.StringIO(text, newline="")) if has_result(row)]
    column = "latency_p50_s" if source == "profile" else "measured_s"
    for r in rows:  # a step the trace would not reproduce must not be fitted as if it did
        if str(r.get("compile", "")).lower() == "true" or r.get("attention") not in (None, "", "sdpa"):
            raise ValueError(f"{path}: {r['model']} {r['mode']} batch {r['batch_size']} was measured with "
                             f"compile={r.get('compile')} attention={r.get('attention')}; the fit traces eager "
                             "PyTorch with each model's own attention")
    return [Measured(machine, card, source, str(r["model"]), str(r["mode"]), int(r["batch_size"]), str(r["precision"]),
                     float(r[column]), optimizer=str(r.get("optimizer") or "adamw"),
                     channels_last=str(r.get("channels_last", "")).lower() == "true")
            for r in rows if r.get(column) not in (None, "")]


def recorded(root: str | Path | None = None) -> list[Measured]:
    """Every measurement of :data:`RECORDED`, in file order; a configuration a file measures again
    on the same machine (the same network, mode, batch, precision, optimizer and layout: the bare
    loop re-measures three predict-vs-profile steps) is read from the first file only, so that no
    step weighs twice in a fit."""
    base = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    out: list[Measured] = []
    seen: set[tuple] = set()
    for machine, card, source, relative in RECORDED:
        for m in read_file(base / relative, machine, card, source):
            key = (m.machine, network(m.model), m.mode, m.batch_size, m.precision, m.optimizer, m.channels_last)
            if key not in seen:
                seen.add(key)
                out.append(m)
    return out


def observations(measured: Sequence[Measured], hosts: dict[str, tuple[float, float]] | None = None) -> list[Any]:
    """The fit's :class:`~vitbench.timemodel.gpu_fit.Observation` of each measurement: traced for
    CUDA (the trace cache keeps them), on its card at the card's sustained rates, with its
    machine's host (``hosts[machine]``: inference and training s per operator) where given."""
    # each model built once for all the batches it was measured at
    batches: dict[tuple, set[int]] = {}
    for m in measured:
        batches.setdefault((m.model, m.mode, m.precision, m.optimizer, m.channels_last), set()).add(m.batch_size)
    tables: dict[tuple, Any] = {}
    for (model, mode, precision, optimizer, channels_last), sizes in batches.items():
        traced = cached_traces(resolve(model), tuple(sorted(sizes)), mode, "fp32" if precision == "tf32" else precision,
                               optimizer, "cuda", channels_last=channels_last)
        for batch, ops in traced.items():
            tables[(model, mode, batch, precision, optimizer, channels_last)] = op_table(ops)
    out = []
    for m in measured:
        spec = gpu(m.card)
        if spec is None:
            raise ValueError(f"card {m.card!r} is not in the GPU catalogue")
        host = (hosts or {}).get(m.machine)
        table = tables[(m.model, m.mode, m.batch_size, m.precision, m.optimizer, m.channels_last)]
        out.append(Observation(table, spec.at_sustained_rates(), m.mode, m.measured_s, m.precision == "tf32", host))
    return out


__all__ = ["BARE_LOOP_MODELS", "RECORDED", "SAME_NETWORK", "Measured", "network", "observations", "read_file", "recorded"]
