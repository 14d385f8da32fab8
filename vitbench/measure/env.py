"""The environment a measurement ran in, recorded as ``env_*`` columns with every result."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from typing import Any


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when a CUDA device is usable, else 'cpu'."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        from vitbench.errors import SpecError

        built = f"CUDA {torch.version.cuda}" if torch.version.cuda else "without CUDA"
        raise SpecError("device", "cuda", f"no CUDA device available (torch {torch.__version__} built {built})")
    return device


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (Linux), else ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def nvidia_driver() -> str | None:
    """The NVIDIA driver version (e.g. '550.54.15') from nvidia-smi; None when unavailable."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0].strip() if out.strip() else None


def environment(device: str) -> dict[str, Any]:
    """``env_*`` columns for a result measured on ``device`` ('cpu' or 'cuda[:i]')."""
    import torch

    from vitbench import __version__

    record: dict[str, Any] = {
        "env_device_name": cpu_model(),
        "env_torch": torch.__version__,
        "env_cuda": torch.version.cuda,
        "env_driver": None,
        "env_cpu": cpu_model(),
        "env_threads": torch.get_num_threads(),
        "env_cpu_count": os.cpu_count(),
        "env_python": platform.python_version(),
        "env_platform": platform.platform(terse=True),
        "vitbench_version": __version__,
    }
    if device.startswith("cuda"):
        index = torch.cuda.current_device() if device == "cuda" else int(device.split(":")[1])
        props = torch.cuda.get_device_properties(index)
        record["env_device_name"] = props.name
        record["env_device_memory_bytes"] = int(props.total_memory)
        record["env_device_capability"] = f"{props.major}.{props.minor}"
        record["env_driver"] = nvidia_driver()
        record["env_cudnn"] = torch.backends.cudnn.version()
    return record
