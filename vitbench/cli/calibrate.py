"""`vitbench calibrate`: time this machine's micro-benchmarks for the time model."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from vitbench.cli.common import add_format_argument, choice_list, emit, thread_count
from vitbench.cli.progress import Steps, add_quiet_argument
from vitbench.timemodel.calibration import CPU_CALIBRATION_TIME

if TYPE_CHECKING:
    from vitbench.timemodel.gpu_calibration import CalibrationRefused


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help=f"calibrate the time model on this machine ({CPU_CALIBRATION_TIME}; predict does it on first use)",
        description="Time the time model's micro-benchmarks on this CPU in a fresh worker "
        "process: matrix products on a grid of shapes, attention and convolution kernels, and "
        "two small synthetic networks operator by operator (never a model you predict). The "
        "result is saved as versioned JSON in the cache directory ($VITBENCH_CACHE_DIR, else "
        "$XDG_CACHE_HOME/vitbench, else ~/.cache/vitbench), one per CPU, thread count and torch "
        "version, and, with --save FILE, also to FILE to share (predict --calibration FILE). A CPU calibration "
        f"takes {CPU_CALIBRATION_TIME}; its steps are shown on stderr as they start.",
    )
    parser.add_argument("--device", default="cpu", metavar="DEVICE", help="cpu, or cuda: fit the GPU cost model to this GPU's own step times (about 3 minutes; a GPU you do not have is priced by the published fit: `vitbench predict --device h100`)")
    parser.add_argument("--threads", type=thread_count, metavar="N", help="CPU threads (default: all this process may use)")
    parser.add_argument("--precision", type=choice_list("precision", ("fp32", "bf16")), default=["fp32"], metavar="PRECISION", help="fp32 and/or bf16 (comma-separated; default fp32)")
    parser.add_argument("--save", metavar="FILE", help="also write the calibration to FILE")
    parser.add_argument("--fresh", action="store_true", help="--device cuda: measure every configuration again; by default a "
                        "calibration stopped part-way (killed, out of time) is resumed: each configuration is kept as it "
                        "is measured, and the next calibration of the card measures only what is missing")
    add_format_argument(parser)
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from vitbench.timemodel.calibration.cache import save
    from vitbench.timemodel.calibration.schema import summary
    from vitbench.timemodel.calibration.worker import calibrate
    from vitbench.timemodel.predict_settings import check_device

    device = check_device(args.device)
    if device not in ("cpu", "cuda"):
        from vitbench.errors import SpecError

        raise SpecError("device", args.device, "must be cpu or cuda (this machine's GPU); a GPU you do not have is priced "
                                               "by the GPU cost model's published fit (`vitbench predict --device h100`)")
    if args.save:  # checked before the run, not after it
        from vitbench.results import check_output_path

        check_output_path(args.save, "--save")
    if device == "cuda":
        return _run_cuda(args)
    if args.fresh:
        from vitbench.errors import SpecError

        raise SpecError("fresh", True, "is for --device cuda (a CPU calibration is measured whole in one worker)")
    steps = Steps("calibrate", quiet=args.quiet)
    steps.wait(f"calibrating the CPU in a worker process ({CPU_CALIBRATION_TIME})")
    try:
        calibration = calibrate("cpu", args.threads, tuple(args.precision), on_step=_each_step_waited(steps))
    finally:
        steps.close()
    return _save_and_emit(args, calibration, save, summary)


def _each_step_waited(steps: Steps):
    """``on_step`` for a calibration: each step's line ('[3/20] matrix products ...'), then, while
    it lasts, how long it has (a step can take tens of seconds on a busy machine)."""
    return lambda done, total, label: steps.wait(f"[{done + 1}/{total}] {label}")


def _save_and_emit(args, calibration, save, summary) -> int:
    """Save ``calibration`` to the cache (and ``--save FILE``), print its summary row.

    Finished work is never lost (issue 45): a file that cannot be written (a full disk, a file
    where the cache folder should be) costs neither the row nor the calibration. It is kept in
    ``--save``, else in a fallback file in the temporary folder that the error names, else (no
    file at all could be written) printed whole in the row's ``calibration`` field; the failure
    is then one line, exit 2, after the row is printed."""
    from vitbench.errors import OutputFileError

    written, failures = _keep(args, calibration, save)
    kept = written.get("the cache") or written.get("--save") or written.get("fallback")
    row = summary(calibration)
    row["path"] = str(kept) if kept else None
    row["file_bytes"] = _size(kept)
    if "--save" in written:
        row["saved_to"] = str(written["--save"])
    if kept is None:
        row["calibration"] = json.loads(calibration.to_json())
    try:
        emit(args, [row])
    except OutputFileError as exc:
        where = f"it is kept in {str(kept)!r}" if kept else "it was not saved anywhere"
        raise OutputFileError(f"{exc}; the calibration is finished: {where}") from None
    if failures:
        raise OutputFileError(f"calibrate: the calibration was {' nor '.join(failures)}; {_where(written)}")
    return 0


def _keep(args, calibration, save) -> tuple[dict[str, Path], list[str]]:
    """Where the calibration was written (``the cache``, ``--save``, ``fallback``: the path) and
    what could not be written (one phrase each). The fallback only when the cache or --save
    failed and no --save holds it."""
    from vitbench.errors import OutputFileError

    written: dict[str, Path] = {}
    failures: list[str] = []
    for field, path in (("the cache", None), ("--save", args.save)):
        if field == "--save" and not path:
            continue
        try:
            written[field] = Path(save(calibration, path))
        except (OSError, OutputFileError) as exc:
            reason = str(exc) if isinstance(exc, OutputFileError) else (exc.strerror or type(exc).__name__)
            failures.append(f"not saved to {field} ({reason})" if not failures else f"to {field} ({reason})")
    if failures and "--save" not in written:
        fallback = _fallback(calibration.to_json() + "\n", "vitbench-calibration-")
        if fallback is not None:
            written["fallback"] = fallback
    return written, failures


def _fallback(text: str, prefix: str) -> Path | None:
    """A new file in the temporary folder (``<prefix>XXXXXXXX.json``) holding ``text``, or None
    when even that cannot be written."""
    from vitbench.errors import OutputFileError
    from vitbench.results import atomic_write_text

    try:
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=".json")  # a new name, never a user's file
    except OSError:
        return None
    os.close(fd)
    try:
        atomic_write_text(name, text, field="fallback")
    except (OSError, OutputFileError):
        with contextlib.suppress(OSError):
            os.unlink(name)
        return None
    return Path(name)


def _where(written: dict[str, Path]) -> str:
    for field in ("--save", "fallback"):
        if field in written:
            path = str(written[field])
            return (f"it is kept in {path!r} (give it to `vitbench predict --calibration FILE`, or run calibrate "
                    "again once the cache can be written)")
    return "no file could be written: the calibration is printed in full (the row's calibration field)"


def _size(path: Path | None) -> int | None:
    try:
        return path.stat().st_size if path else None
    except OSError:
        return None


def _run_cuda(args) -> int:
    from vitbench.timemodel.gpu_calibration import SUITE, CalibrationRefused, calibrate_gpu, save, summary

    if args.threads is not None or args.precision != ["fp32"]:
        from vitbench.errors import SpecError

        raise SpecError("threads" if args.threads is not None else "precision",
                        args.threads if args.threads is not None else ",".join(args.precision),
                        "is for --device cpu (a GPU calibration measures its own suite: fp32, TF32 and bf16)")
    import torch

    if not torch.cuda.is_available():
        from vitbench.errors import SpecError

        raise SpecError("device", "cuda", "no CUDA device here: a GPU calibration is measured on the GPU")
    if not args.quiet:
        print(f"vitbench: calibrating this GPU on {len(SUITE)} configurations (a few minutes)", file=sys.stderr, flush=True)
    try:
        calibration = calibrate_gpu(on_progress=None if args.quiet else
                                    lambda line: print(f"vitbench: calibrate: {line}", file=sys.stderr, flush=True),
                                    resume=not args.fresh)
    except CalibrationRefused as refused:
        raise CalibrationRefused(f"{refused}; {_keep_measurements(refused)}", refused.device, refused.device_name,
                                 refused.torch_version, refused.measured) from None
    return _save_and_emit(args, calibration, save, summary)


def _keep_measurements(refused: CalibrationRefused) -> str:
    """Where a refused GPU calibration's step times were kept (beside the cache entry, else a new
    file in the temporary folder), as the end of its one line."""
    from vitbench.errors import OutputFileError
    from vitbench.timemodel.gpu_calibration import measurements_json, progress_path, save_measurements

    path = refused.path
    if path is None:
        try:
            path = save_measurements(refused)
        except (OSError, OutputFileError):
            path = _fallback(measurements_json(refused), "vitbench-gpu-measurements-")
    if path is None:
        return f"its {len(refused.measured)} measured step times could not be written anywhere"
    if path == progress_path(refused.device_name, refused.torch_version):  # the refused fit's own file could not be written
        return (f"its {len(refused.measured)} measured step times are kept in {str(path)!r}, which the next "
                "calibration fits again (--fresh measures them again)")
    return f"its {len(refused.measured)} measured step times are kept in {str(path)!r}"
