"""How a GPU prediction is priced: the cost model's profile for a catalogue card or this
machine's GPU, and a GPU calibration given or cached in its place (``vitbench predict --device
h100 [--calibration FILE]``)."""

from __future__ import annotations

from typing import Any

from vitbench.errors import SpecError
from vitbench.row_warnings import warning
from vitbench.timemodel import gpu_calibration
from vitbench.timemodel.calibration.schema import CalibrationError
from vitbench.timemodel.gpu_model import profile_for
from vitbench.timemodel.gpus import GPU_DEVICES, gpu, match_device_name


def gpu_profile(device: str) -> Any:
    """The GPU cost model's profile for a catalogue device, or for ``cuda`` (this machine's GPU,
    by its name)."""
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SpecError("device", "cuda", f"no CUDA device here; name a GPU instead: {', '.join(GPU_DEVICES)}")
        name = torch.cuda.get_device_name()
        spec = match_device_name(name)
        if spec is None:
            raise SpecError("device", "cuda", f"{name} is not in the GPU catalogue; name the closest of: {', '.join(GPU_DEVICES)}")
        return profile_for(spec)
    return profile_for(gpu(device))


def refuse_a_gpu_calibration(path: Any) -> None:
    """After a CPU calibration file was refused: say so in one line when it is a GPU one."""
    try:
        gpu_calibration.load(path)
    except CalibrationError:
        return
    raise SpecError("calibration", str(path), "is a GPU calibration; --device cpu needs a CPU one (`vitbench calibrate`)")


def gpu_pricing(device: str, calibration: Any) -> tuple[Any, list[dict[str, str]]]:
    """The GPU profile for ``device`` and its warnings: from a GPU calibration given (a
    :class:`~vitbench.timemodel.gpu_calibration.GpuCalibration` or its file), else for ``cuda``
    this card's calibration in the cache when there is one, else the published fit."""
    if calibration is not None:
        if isinstance(calibration, gpu_calibration.GpuCalibration):
            found = calibration
        else:
            try:
                found = gpu_calibration.load(calibration)
            except gpu_calibration.NotAGpuCalibration:
                raise SpecError("calibration", str(calibration), f"is not a GPU calibration (a CPU calibration?); --device "
                                                                   f"{device} needs one made by `vitbench calibrate --device cuda` "
                                                                   "on that GPU, or none") from None
            except CalibrationError as exc:
                raise CalibrationError(f"--calibration={str(calibration)!r}: refused ({exc})") from None
        profile = gpu_profile(device)
        if found.device != profile.spec.key:
            raise SpecError("calibration", str(calibration), f"was made on {found.device_name} ({found.device}); "
                                                               f"--device {device} is {profile.spec.name}")
        return found.profile(), []
    profile = gpu_profile(device)
    if device == "cuda":
        import torch

        path = gpu_calibration.cache_path(torch.cuda.get_device_name(), torch.__version__)
        if path.exists():
            try:
                return gpu_calibration.load(path).profile(), []
            except CalibrationError as exc:
                return profile, [warning("calibration-refused", f"cached GPU calibration {path} refused ({exc}); "
                                                                "priced by the published fit",
                                         "run `vitbench calibrate --device cuda` again")]
    return profile, []


__all__ = ["gpu_pricing", "gpu_profile", "refuse_a_gpu_calibration"]
