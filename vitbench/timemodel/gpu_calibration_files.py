"""The files of a GPU calibration beside the one it saves (``vitbench calibrate --device cuda``):
its cache entry's path, the steps it measured kept as they are measured (a progress file, which a
calibration stopped part-way leaves for the next to resume from) and those of a refused fit. Each
holds ``observations`` as a calibration file does, so that
:func:`vitbench.timemodel.gpu_records.read_file` (kind ``calibration``) reads it back for a refit."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vitbench import input_files
from vitbench.errors import shown
from vitbench.input_files import load_json, read_input_text
from vitbench.results import atomic_write_text
from vitbench.store.atomic import move_without_replacing
from vitbench.timemodel.calibration.cache import cache_dir, file_safe
from vitbench.timemodel.calibration.schema import CalibrationError
from vitbench.version import __version__


def cache_path(device_name: str, torch_version: str) -> Path:
    """The cache entry of a calibration of the card named ``device_name`` with this torch release."""
    return cache_dir() / f"cuda-{file_safe(device_name)}-torch{torch_version.split('+')[0]}.json"


#: the ``kind`` of measured steps kept apart from a calibration: a refused one's
#: (:func:`save_measurements`), one in progress (:func:`progress_path`)
MEASUREMENTS_KIND = "vitbench-gpu-measurements"


class CalibrationRefused(CalibrationError):
    """A measured suite whose fit :func:`fit_on_card` refused: the reason, and what was measured
    (``measured``: model, mode, batch_size, precision, measured_s of each configuration), so that
    minutes of GPU time are not lost with the fit (:func:`save_measurements`); ``path``: the file
    :func:`calibrate_gpu` kept them in (None: none could be written)."""

    def __init__(self, reason: str, device: str, device_name: str, torch_version: str, measured: list[dict[str, Any]],
                 path: Path | None = None):
        super().__init__(reason)
        self.device, self.device_name, self.torch_version, self.measured = device, device_name, torch_version, measured
        self.path = path


def progress_path(device_name: str, torch_version: str) -> Path:
    """Where :func:`calibrate_gpu` writes each configuration as it is measured: beside the card's
    cache entry. A calibration that finishes removes it; one stopped part-way leaves it for the
    next, which measures only what it lacks (:func:`resumable`)."""
    return cache_path(device_name, torch_version).with_suffix(".measuring.json")


def measurements_path(device_name: str, torch_version: str, when: float | None = None) -> Path:
    """Where a refused calibration's measurements go: beside the card's cache entry, named by the
    time of the refusal (``when``, default now: a later refusal keeps the earlier one's)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(time.time() if when is None else when))
    return cache_path(device_name, torch_version).with_suffix(f".refused-{stamp}.json")


def measurements_document(device: str, device_name: str, torch_version: str, measured: list[dict[str, Any]],
                           **more: Any) -> str:
    """Measured step times as JSON: ``observations`` as a calibration file holds them, so that
    :func:`vitbench.timemodel.gpu_records.read_file` reads them back (kind ``calibration``), with
    the card, the torch and vitbench releases and ``more``."""
    document = {"kind": MEASUREMENTS_KIND, "device": device, "device_name": device_name, "torch": torch_version,
                "vitbench": __version__, **more, "observations": measured}
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def measurements_json(refused: CalibrationRefused) -> str:
    """``refused``'s measured step times as JSON (:func:`measurements_document`) with the reason."""
    return measurements_document(refused.device, refused.device_name, refused.torch_version, refused.measured,
                                  refused=str(refused))


#: the keys of one measured configuration in a measurements file
MEASURED_KEYS = ("model", "mode", "batch_size", "precision", "measured_s")


def resumable(path: str | os.PathLike, device_name: str, torch_version: str,
              min_run_time_s: float) -> dict[tuple[str, str, int, str], float]:
    """The configurations a calibration stopped part-way measured (its :func:`progress_path`
    file), keyed (model, mode, batch, precision): step seconds. :class:`CalibrationError` when
    the file is not one this calibration may resume (damaged, another card, torch or vitbench
    release, another run time per configuration): it would price the card with another's steps."""
    where = repr(str(path))
    text = read_input_text(path, f"cannot read {where}", max_bytes=input_files.MAX_CALIBRATION_BYTES, error=CalibrationError)
    data = load_json(text, where, error=CalibrationError)
    if not isinstance(data, dict) or data.get("kind") != MEASUREMENTS_KIND or "refused" in data:
        raise CalibrationError(f"{where}: not a calibration's measurements in progress")
    stated = {"device_name": device_name, "torch": torch_version, "vitbench": __version__, "min_run_time_s": min_run_time_s}
    for key, value in stated.items():
        if data.get(key) != value:
            raise CalibrationError(f"{where}: measured with {key}={shown(data.get(key), 60)}, not {value}")
    rows = data.get("observations")
    if not isinstance(rows, list):
        raise CalibrationError(f"{where}: observations must be a list")
    out: dict[tuple[str, str, int, str], float] = {}
    for index, row in enumerate(rows):
        if not (isinstance(row, dict) and set(row) == set(MEASURED_KEYS)
                and all(isinstance(row[k], str) for k in ("model", "mode", "precision"))
                and isinstance(row["batch_size"], int) and not isinstance(row["batch_size"], bool)
                and isinstance(row["measured_s"], (int, float)) and not isinstance(row["measured_s"], bool)
                and 0 < row["measured_s"] < 3600):
            raise CalibrationError(f"{where}: observations[{index}]={shown(row, 80)}: not a measured configuration")
        out[(row["model"], row["mode"], row["batch_size"], row["precision"])] = float(row["measured_s"])
    return out


def save_measurements(refused: CalibrationRefused, path: str | os.PathLike | None = None) -> Path:
    """Write :func:`measurements_json` atomically to ``path`` (default :func:`measurements_path`);
    the path written."""
    target = Path(path) if path else measurements_path(refused.device_name, refused.torch_version)
    atomic_write_text(target, measurements_json(refused))
    return target


def earlier_steps(progress_file: Path, device_name: str, torch_version: str, min_run_time_s: float,
                  say: Callable[[str], None], resume: bool = True) -> dict[tuple[str, str, int, str], float]:
    """The steps an earlier calibration stopped part-way kept in ``progress_file`` that this one
    may take (:func:`resumable`). A file it does not take (not a regular file, not resumable, or
    ``resume`` False) is set aside under a new name, so that this calibration's steps do not
    replace it; each of these said in one line."""
    try:
        status = os.lstat(progress_file)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        say(f"cannot look for an earlier calibration's measurements in {str(progress_file)!r} "
            f"({exc.strerror or type(exc).__name__}): every configuration is measured")
        return {}
    if not resume:
        say(f"an earlier calibration's measurements are not resumed (fresh){_set_aside(progress_file)}")
        return {}
    if not stat.S_ISREG(status.st_mode):
        reason = f"{str(progress_file)!r}: not a regular file"
    else:
        try:
            return resumable(progress_file, device_name, torch_version, min_run_time_s)
        except CalibrationError as exc:
            reason = str(exc)
    say(f"not resumed from an earlier calibration's measurements ({reason}): every configuration is measured"
        f"{_set_aside(progress_file)}")
    return {}


def _set_aside(path: Path) -> str:
    """Give ``path`` a name of its own beside it (``<name>.set-aside-<time>.json``, never an
    existing file's); the end of the line that says so."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for attempt in range(100):
        target = path.with_suffix(f".set-aside-{stamp}{f'-{attempt}' if attempt else ''}.json")
        try:
            move_without_replacing(path, target)
        except FileExistsError:
            continue
        except OSError as exc:
            return f"; it could not be set aside ({exc.strerror or type(exc).__name__}) and will be replaced"
        return f"; it is set aside as {str(target)!r}"
    return "; it could not be set aside (too many set aside this second) and will be replaced"


def remove(path: Path) -> None:
    """Remove a progress file that is no longer needed (one that cannot be removed is left)."""
    with contextlib.suppress(OSError):
        path.unlink()
