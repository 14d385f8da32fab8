"""Where calibrations are kept, and writing and reading them.

    cache_dir()  = ($VITBENCH_CACHE_DIR | $XDG_CACHE_HOME/vitbench | ~/.cache/vitbench) / calibrations
    cache_path() = cache_dir() / calibration_key(device, name, threads, torch) + ".json"
"""

from __future__ import annotations

import os
from pathlib import Path

from vitbench import input_files
from vitbench.input_files import read_input_text
from vitbench.results import atomic_write_text
from vitbench.timemodel.calibration.schema import Calibration, CalibrationError


def file_safe(device_name: str) -> str:
    """A device's name as part of a file name: letters and digits, the rest as dashes."""
    return "".join(c if c.isalnum() else "-" for c in device_name).strip("-")[:48] or "unknown"


def calibration_key(device: str, device_name: str, threads: int, torch_version: str) -> str:
    return f"{device}-{file_safe(device_name)}-t{threads}-torch{torch_version.split('+')[0]}"


def cache_dir() -> Path:
    """``$VITBENCH_CACHE_DIR`` or ``$XDG_CACHE_HOME/vitbench`` or ``~/.cache/vitbench``, /calibrations."""
    root = os.environ.get("VITBENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vitbench")
    return Path(root) / "calibrations"


def cache_path(device: str, device_name: str, threads: int, torch_version: str) -> Path:
    return cache_dir() / (calibration_key(device, device_name, threads, torch_version) + ".json")


def save(calibration: Calibration, path: str | os.PathLike | None = None) -> Path:
    """Write atomically (fsync, rename) to ``path`` or the cache; the path written."""
    target = Path(path) if path else cache_path(calibration.device, calibration.device_name, calibration.threads, calibration.torch)
    atomic_write_text(target, calibration.to_json() + "\n")
    return target


def load(path: str | os.PathLike, torch_version: str | None = None) -> Calibration:
    """A calibration file; CalibrationError when it is unreadable, damaged or made under another
    torch than ``torch_version``."""
    # the one gate: a FIFO or device refused without blocking, the size capped, UTF-8, not empty
    text = read_input_text(path, f"cannot read {path}", max_bytes=input_files.MAX_CALIBRATION_BYTES, error=CalibrationError)
    calibration = Calibration.from_json(text)
    if torch_version is not None and calibration.basis == "calibration" and calibration.torch.split("+")[0] != torch_version.split("+")[0]:
        raise CalibrationError(f"made under torch {calibration.torch}, this is torch {torch_version}")
    return calibration
