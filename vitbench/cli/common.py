"""Argument helpers shared by subcommands: model lists, spec-field overrides, output format, and the
run-setting flags (one vocabulary for every command that measures)."""

from __future__ import annotations

import argparse
import math
import re
import shutil
import sys
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any

from vitbench.errors import SpecError
from vitbench.reporting.format import FORMATS, render
from vitbench.specs import SPEC_TYPES, list_valued, spec_fields, split_alternatives


class UsageError(Exception):
    """A command line argparse or a command refuses: one line, exit code 2."""


def _override_fields() -> dict[str, str]:
    """Every spec field (union over model kinds) -> a help text naming the kinds that have it."""
    out: dict[str, list[str]] = {}
    for kind, spec_type in SPEC_TYPES.items():
        for f in fields(spec_type):
            if f.name != "name":
                out.setdefault(f.name, []).append(kind)
    return {name: "/".join(kinds) for name, kinds in out.items()}


def field_flag(name: str) -> str:
    """The command-line flag of a spec field, the same in every command. The plain CNN's
    ``stages`` field is ``--conv-stages`` (``--stages`` names a sweep's stages)."""
    return "--conv-stages" if name == "stages" else "--" + name.replace("_", "-")


def _is_list_valued(name: str) -> bool:
    return any(name in spec_fields(t) and list_valued(t, name) for t in SPEC_TYPES.values())


def add_override_arguments(parser: argparse.ArgumentParser, title: str, dest_prefix: str) -> None:
    """One flag per spec field. Every flag takes a list of values, one row (or grid point) each:
    ``--img-size 224,384``; list-valued fields separate alternatives with ';'
    (``--layers '2,2,2,2;3,4,6,3'``); a non-square size is ``224x320``."""
    group = parser.add_argument_group(
        title,
        "replace a field of every model that has it; comma-separated values give one row each "
        "(e.g. --img-size 224,384; list-valued fields such as --layers separate values with ';')",
    )
    for name, kinds in _override_fields().items():
        group.add_argument(
            field_flag(name), dest=f"{dest_prefix}{name}", metavar="V1,V2" if not _is_list_valued(name) else "V1;V2",
            default=None, help=f"({kinds})",
        )


def add_model_arguments(parser: argparse.ArgumentParser, nargs: str = "+") -> None:
    parser.add_argument(
        "models", nargs=nargs, metavar="MODEL",
        help="presets (see `vitbench models`) or references: torchvision:NAME, timm:NAME, hf:ARCH, "
        "py:package.module:factory; keyword arguments as NAME+key=value (e.g. timm:convnext_tiny+drop_path_rate=0.1)",
    )
    add_override_arguments(parser, "spec overrides", "override_")


def values_from(args: argparse.Namespace, dest_prefix: str) -> dict[str, list[str]]:
    """Flags given with ``dest_prefix`` -> {field: [value, ...]} (each value still text)."""
    out: dict[str, list[str]] = {}
    for key, value in vars(args).items():
        if key.startswith(dest_prefix) and value is not None:
            name = key[len(dest_prefix):]
            try:
                out[name] = split_alternatives(value, _is_list_valued(name))
            except ValueError as exc:
                raise SpecError(name, value, str(exc)) from None
    return out


def overrides_from(args: argparse.Namespace) -> dict[str, list[str]]:
    """Spec overrides from the command line; a list holds alternatives (one row each)."""
    return values_from(args, "override_")


def _checked(text: str, convert, kind: str, ok, rule: str):
    """``convert(text)`` if it parses and ``ok(value)``; else argparse's one-line error. Numbers
    are written with the digits 0-9: ``int`` would also read "٨" and "1_6", which no results or
    sweep file holds."""
    if not text.isascii() or "_" in text:
        raise argparse.ArgumentTypeError(f"invalid {kind}: {text!r} (write it with the digits 0-9)")
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid {kind}: {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    return _checked(text, int, "non-negative integer", lambda v: v >= 0, "0 or more")


def positive_int(text: str) -> int:
    return _checked(text, int, "positive integer", lambda v: v > 0, "a positive integer")


def thread_count(text: str) -> int:
    from vitbench.settings import MAX_THREADS

    return _checked(text, int, "thread count", lambda v: 0 < v <= MAX_THREADS, f"a positive integer up to {MAX_THREADS}")


def batch_size_int(text: str) -> int:
    from vitbench.settings import MAX_BATCH_SIZE

    return _checked(text, int, "batch size", lambda v: 0 < v <= MAX_BATCH_SIZE, f"a positive integer up to {MAX_BATCH_SIZE:,}")


#: sizes above this (1 EiB) are refused: --memory 10^26TiB was accepted
MAX_SIZE = 2**60


#: the format an output file's suffix asks for when --format is not given
FORMAT_OF_SUFFIX = {".csv": "csv", ".json": "json", ".md": "markdown", ".markdown": "markdown"}


def add_format_argument(parser: argparse.ArgumentParser, default: str = "table") -> None:
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help=f"output format (default: from the -o file's suffix, .csv/.json/.md, else {default})")
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    parser.set_defaults(default_format=default)


def resolve_format(args: argparse.Namespace) -> None:
    """``--format`` when given; else the one ``-o FILE``'s suffix names (``-o base.csv`` writes
    CSV, not a table); else the command's default."""
    if "format" not in args or args.format is not None:
        return

    suffix = Path(args.output).suffix.lower() if getattr(args, "output", None) else ""
    formats = getattr(args, "suffix_formats", None) or FORMAT_OF_SUFFIX
    args.format = formats.get(suffix, getattr(args, "default_format", "table"))


def terminal_width() -> int:
    """The terminal's columns (``COLUMNS`` when set); 100 when the output is not a terminal."""
    return shutil.get_terminal_size((100, 24)).columns


def emit(args: argparse.Namespace, records, columns=None, width: int | None = None) -> None:
    """Print (or write to ``--output``) the records in ``--format``; ``width``: a terminal
    table's text columns are wrapped to fit it."""
    text = render(records, args.format, columns, width=width)
    if getattr(args, "output", None):
        from vitbench.results import atomic_write_text

        atomic_write_text(args.output, text if text.endswith("\n") else text + "\n", field="--output")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


# --- run-setting flags: ONE vocabulary for profile, sweep, report and plan (issue 10) ----------
# Each flag is the user's word, with units, for one RunSettings field (`--min-time SECONDS` ->
# min_run_time_s, `--memory-limit SIZE` -> memory_limit_bytes, `--timeout SECONDS` -> timeout_s);
# every flag defaults to None, so RunSettings' own defaults apply to what is not given.

_SI = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_SIZE_UNITS = {
    "": 1, "b": 1,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}
_NUMBER_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")


def parse_quantity(text: str) -> float:
    """'312e12', '312T', '1.5G' -> a positive number; k M G T P are powers of 1000."""
    match = _NUMBER_UNIT.match(text)
    unit = match.group(2).lower() if match else None
    if not match or unit not in _SI:
        raise argparse.ArgumentTypeError(f"invalid quantity: {text!r} (e.g. 312e12, 312T, 3.35T)")
    value = float(match.group(1)) * _SI[unit]
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def parse_size(text: str) -> int:
    """'24GiB' -> 25769803776, '24GB' -> 24000000000, '1.5 MiB', '4096' (bytes).
    KiB MiB GiB TiB are powers of 1024; KB MB GB TB powers of 1000; units are case-blind."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else None
    if not match or unit not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(
            f"invalid memory size {text!r} (a number of bytes, or with a unit: "
            "KiB MiB GiB TiB, KB MB GB TB; e.g. 24GiB)"
        )
    number = float(match.group(1))
    if not math.isfinite(number) or number * _SIZE_UNITS[unit] > MAX_SIZE:
        raise argparse.ArgumentTypeError(f"invalid memory size {text!r} (more than 1 EiB: no machine has that)")
    value = int(number * _SIZE_UNITS[unit])
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid memory size {text!r} (must be more than 0 bytes)")
    return value


def positive_float(text: str) -> float:
    return _checked(text, float, "number", lambda v: 0 < v < float("inf"), "a positive number")


def non_negative_float(text: str) -> float:
    return _checked(text, float, "number", lambda v: 0 <= v < float("inf"), "a number >= 0")


def choice_list(kind: str, choices: tuple[str, ...]):
    """A comma-separated list of choices -> list (one configuration each)."""

    def parse(text: str) -> list[str]:
        values = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in values if v not in choices]
        if not values or bad:
            raise argparse.ArgumentTypeError(f"invalid {kind} {text!r}: choose from {', '.join(choices)} (comma-separated)")
        return values

    return parse


def batch_sizes(text: str) -> list:
    """'1,8,auto' -> [1, 8, 'auto']."""
    values: list = []
    for part in (p.strip() for p in text.split(",")):
        if part == "auto":
            values.append("auto")
            continue
        from vitbench.settings import MAX_BATCH_SIZE

        number = int(part) if part.isascii() and part.isdigit() else 0
        if not 0 < number <= MAX_BATCH_SIZE:
            raise argparse.ArgumentTypeError(f"invalid batch size {part!r}: a positive integer up to {MAX_BATCH_SIZE:,} or 'auto'")
        values.append(number)
    return values


def _run_flags() -> list[tuple[str, str, dict[str, Any]]]:
    """(flag, RunSettings field, add_argument keywords) of every run-setting flag."""
    from vitbench.settings import ALLOCATORS, CLOCKS, DEFAULT_RUNS, DEVICES, MODES, OPTIMIZERS, PRECISIONS

    on = dict(action="store_const", const=True)
    off = dict(action="store_const", const=False)
    return [
        ("--device", "device", dict(choices=DEVICES, help="default: cuda if available, else cpu")),
        ("--mode", "mode", dict(type=choice_list("mode", MODES), metavar="MODE", help="infer and/or train (comma-separated; default infer)")),
        ("--batch-size", "batch_size", dict(type=batch_sizes, metavar="N|auto", help="images per step, comma-separated; 'auto' = the largest the memory model fits, verified (default 1)")),
        ("--precision", "precision", dict(type=choice_list("precision", PRECISIONS), metavar="PRECISION", help="fp32, bf16 or fp16 (autocast; fp16 needs CUDA), comma-separated")),
        ("--channels-last", "channels_last", dict(on, help="channels-last memory format for model and input")),
        ("--compile", "compile", dict(on, help="torch.compile the model (compilation happens in the warm-up)")),
        ("--threads", "threads", dict(type=thread_count, metavar="N", help="CPU threads (torch.set_num_threads) (default: the CPUs this process may use, at most 4, whatever the load; recorded in the threads column, with a warning when other processes keep some of them busy)")),
        ("--optimizer", "optimizer", dict(choices=OPTIMIZERS, help="training optimizer (default adamw; sgd is plain SGD, sgd-momentum uses momentum 0.9)")),
        ("--runs", "runs", dict(type=positive_int, metavar="N", help=f"fresh worker processes per configuration, pooled; the gate compares their medians (default {DEFAULT_RUNS}; 1 measures in this process)")),
        ("--clock", "clock", dict(choices=CLOCKS, help="what the timing measures: wall = elapsed time (default); cpu = this process's CPU time per thread, which other processes on a busy machine inflate far less (CPU only; for gating on a shared CI runner: a row is then judged stable by the spread between its runs, not by the machine's load)")),
        ("--allocator", "allocator", dict(choices=ALLOCATORS, help="host memory allocator while measuring: system = glibc's malloc as your own process has it, so a step costs what a plain PyTorch loop measures (default); steady = glibc malloc with fixed mmap/trim thresholds, so steps reuse heap memory instead of page-faulting in a way that varies from process to process (less noise between runs, for gating; steps up to ~10%% faster than a plain loop)")),
        ("--min-time", "min_run_time_s", dict(type=positive_float, metavar="SECONDS", help="minimum timed seconds per run (default 1)")),
        ("--warmup", "warmup", dict(type=positive_int, metavar="N", help="warm-up steps before timing (default 3)")),
        ("--min-samples", "min_samples", dict(type=positive_int, metavar="N", help="at least this many timing samples per run (default 5)")),
        ("--no-memory", "memory", dict(off, help="skip the separate peak-memory pass (it still runs under --memory-limit, to verify the cap)")),
        ("--trace-dir", "trace_dir", dict(metavar="DIR", help="write a torch.profiler trace per configuration (TensorBoard / Perfetto)")),
        ("--isolate", "isolate", dict(on, help="with --runs 1: measure in a fresh worker process all the same")),
        ("--timeout", "timeout_s", dict(type=positive_float, metavar="SECONDS", help="give up on a run after this long (each run then happens in a worker process)")),
        ("--peak-flops", "peak_flops", dict(type=parse_quantity, metavar="FLOP/S", help="device peak FLOP/s for MFU (e.g. 989e12 or 989T; overrides the GPU table; needed on a CPU)")),
        ("--peak-bandwidth", "peak_bandwidth", dict(type=parse_quantity, metavar="BYTES/S", help="device memory bandwidth for the roofline label (e.g. 3.35e12 or 3.35T)")),
        ("--memory-limit", "memory_limit_bytes", dict(type=parse_size, metavar="SIZE", help="cap on the tensors of the run (512MiB, 2GB, bytes), from the first allocation: on a GPU a memory fraction; on the CPU the data segment (RLIMIT_DATA) at what the process holds + SIZE + headroom for allocator fragmentation and oneDNN. The tensors' peak (peak_memory_bytes) is checked against SIZE; the process's peak RSS, libraries included, is recorded beside it (peak_rss_bytes)")),
        ("--no-memory-check", "memory_check", dict(off, help="run configurations the memory model predicts over --memory-limit or the device's memory (refused by default)")),
        ("--max-batch-size", "max_batch_size", dict(type=positive_int, metavar="N", help="upper end of --batch-size auto (default 4096)")),
    ]


#: RunSettings field -> its command-line flag, the same in every command
RUN_FLAG_OF = {"min_run_time_s": "--min-time", "timeout_s": "--timeout", "memory_limit_bytes": "--memory-limit",
               "memory": "--no-memory", "memory_check": "--no-memory-check"}


def add_run_arguments(parser: argparse.ArgumentParser, fields: Iterable[str] | None = None,
                      title: str = "measurement") -> None:
    """The run-setting flags (of ``fields``, RunSettings field names; default all) in a group.
    ``--mode``, ``--precision`` and ``--batch-size`` take comma-separated lists."""
    wanted = None if fields is None else set(fields)
    group = parser.add_argument_group(title)
    for flag, field, keywords in _run_flags():
        if wanted is None or field in wanted:
            group.add_argument(flag, dest=f"run_{field}", default=None, **keywords)


def run_settings_from(args: argparse.Namespace) -> dict[str, Any]:
    """The run-setting flags given -> {RunSettings field: value} (lists for the list flags)."""
    return {key[len("run_"):]: value for key, value in vars(args).items() if key.startswith("run_") and value is not None}


def unit_fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1, or a percentage (``2%``)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (or 0% and 100%), got {text!r}")
    return value
