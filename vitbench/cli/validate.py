"""`vitbench validate`: do analytic and counted parameters and MACs (fvcore, dispatch) agree?
Exit 1 if not."""

from __future__ import annotations

import argparse
import sys

from vitbench.cli.common import UsageError, add_format_argument, batch_size_int, emit, non_negative_float


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check analytic == counted params and MACs (fvcore, dispatch) over models, resolutions, batch sizes",
        description="Counts every preset (or the given models: presets or references such as "
        "torchvision:swin_t, timm:convnext_tiny, hf:vit, py:pkg.mod:factory, built by their own "
        "library) at several resolutions and batch sizes with both tracers and compares "
        "parameters and MACs with the formulas, exactly. A model without a formula is checked "
        "counter against counter. Prints the disagreements (or every row with --all); exits 1 "
        "on any disagreement, 0 when everything agrees.",
    )
    parser.add_argument("models", nargs="*", metavar="MODEL", help="presets or references (default: every preset)")
    parser.add_argument("--img-size", dest="resolutions", help="comma-separated sizes, each N or HxW (default: per model)")
    parser.add_argument("--batch-sizes", default="1,2", help="comma-separated batch sizes (default 1,2)")
    parser.add_argument("--counters", default="fvcore,dispatch", help="fvcore,dispatch (default both)")
    parser.add_argument(
        "--fvcore-budget", type=non_negative_float, default=20e9, metavar="MACS",
        help="skip fvcore (which executes the model) above this many MACs per trace (default 2e10)",
    )
    parser.add_argument("--all", action="store_true", help="print every row, not only disagreements")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    add_format_argument(parser)
    parser.set_defaults(handler=run)


def _ints(text: str, flag: str) -> list[int]:
    try:
        return [batch_size_int(t) for t in text.split(",") if t.strip()]
    except argparse.ArgumentTypeError:
        raise UsageError(f"{flag}={text!r}: expected comma-separated positive integers up to 2,147,483,647") from None


def _sizes(text: str) -> list:
    """'224,256x320' -> [224, (256, 320)]: comma-separated sizes, each N or HxW."""
    from vitbench.specs import split_alternatives
    from vitbench.specs.text import parse_image_size

    try:
        return [parse_image_size(t) for t in split_alternatives(text)]
    except ValueError as exc:  # SpecError is a ValueError too

        raise UsageError(f"--img-size={text!r}: {getattr(exc, 'reason', exc)}") from None


def run(args) -> int:
    from vitbench.counters.validate import validate

    resolutions = _sizes(args.resolutions) if args.resolutions else None
    batch_sizes = _ints(args.batch_sizes, "--batch-sizes")
    counters = [c.strip() for c in args.counters.split(",") if c.strip()]
    show_progress = not args.quiet and sys.stderr.isatty()

    def progress(record):
        if show_progress:
            mark = "ok" if record["agree"] else "DISAGREE"
            print(f"  {record['model']} {record['img_size']} b{record['batch_size']}: {mark}", file=sys.stderr)

    records = validate(
        args.models or None, resolutions, batch_sizes, counters, int(args.fvcore_budget), progress
    )
    bad = [r for r in records if not r["agree"]]
    shown = records if args.all else bad
    if args.format == "table":
        # exact integers: a one-MAC disagreement must be visible
        shown = [{k: f"{v:,}" if k.endswith(("macs", "params")) and isinstance(v, int) else v for k, v in r.items()} for r in shown]
    if shown or args.format != "table":
        emit(args, shown if args.format == "table" else records)
    print(
        f"{len(records) - len(bad)}/{len(records)} configurations agree (params and MACs: analytic == fvcore == dispatch)",
        file=sys.stderr,
    )
    return 1 if bad else 0
