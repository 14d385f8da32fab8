"""`vitbench selftest`: every measurement path on a tiny model, pass/fail per path."""

from __future__ import annotations

import os
import sys


def register(subparsers) -> None:
    from vitbench.settings import DEVICES
    from vitbench.settings import SELFTEST_CHECKS as CHECKS

    parser = subparsers.add_parser(
        "selftest",
        help="check that timing, peak memory, OOM handling, auto batch size and traces work here",
        description="Exercise every measurement path on a tiny ViT (about a minute) and print "
        "pass/fail per path: environment, timing, attention kernel, peak memory (fp32 AdamW "
        "state = 16 bytes per parameter), an induced OOM, --batch-size auto, a trace, and an "
        "isolated run. Exit code 1 if any check fails.",
    )
    parser.add_argument("--device", choices=DEVICES, default="auto", help="default: cuda if available, else cpu")
    parser.add_argument("--only", metavar="CHECK", action="append", choices=CHECKS, help="run only this check (repeatable)")
    parser.set_defaults(handler=run)


def run(args) -> int:
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")
    from vitbench.measure.env import resolve_device
    from vitbench.measure.selftest import run_checks

    device = resolve_device(args.device)
    print(f"vitbench selftest on {device}")
    failed = 0
    for result in run_checks(device, tuple(args.only) if args.only else None):
        mark = "PASS" if result.passed else "FAIL"
        failed += not result.passed
        print(f"  {mark}  {result.name:<17} {result.seconds:5.1f} s  {result.detail}", flush=True)
    print("all checks passed" if not failed else f"{failed} check(s) failed", file=sys.stdout if not failed else sys.stderr)
    return 1 if failed else 0
