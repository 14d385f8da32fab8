"""`vitbench predict`: predicted step time, throughput and training cost, before running."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from vitbench.cli.common import (
    add_format_argument,
    add_model_arguments,
    add_run_arguments,
    choice_list,
    emit,
    overrides_from,
    positive_float,
    positive_int,
    run_settings_from,
)
from vitbench.cli.progress import Steps, add_quiet_argument
from vitbench.row_status import RowStatus
from vitbench.timemodel.calibration import CPU_CALIBRATION_TIME

if TYPE_CHECKING:
    from vitbench.timemodel.predict_settings import PredictSettings


def register(subparsers) -> None:
    from vitbench.settings import PREDICT_PRECISIONS

    parser = subparsers.add_parser(
        "predict",
        help="predict step time, throughput and training cost without running the model",
        description="Predict what `profile` would measure, in a fraction of a second per "
        "configuration: pred_latency_s (one step at the batch, as profile's latency_p50_s), "
        "pred_throughput_img_s, and a breakdown (pred_attention_s, pred_linear_s, pred_conv_s, "
        "pred_elementwise_s, pred_optimizer_s, pred_overhead_s) that sums to it. Every operator "
        "of the step is traced on fake tensors and priced from this machine's calibration "
        f"(`vitbench calibrate`; made on first use, {CPU_CALIBRATION_TIME}, with its steps shown on stderr; kept in "
        "the cache directory), or, "
        "for a GPU (--device h100, a100, l4, rtx4090...: `vitbench devices` lists them; several "
        "at once: --device a100,h100), by the GPU cost model from the card's published numbers "
        "and its generation's parameters fitted on timm's published throughputs; GPU rows carry "
        "the validation's error band (pred_error_median, pred_error_p90). With --epochs and "
        "--dataset-size: pred_epoch_s, pred_train_hours and, with --price-per-hour, pred_cost; "
        "from a measured step instead when --measured has the same configuration.",
    )
    add_model_arguments(parser)
    parser.add_argument("--device", default="cpu", metavar="DEVICE[,DEVICE...]",
                        help="what to predict for (default cpu): cpu, cuda (this machine's GPU) or GPUs from "
                        "`vitbench devices`, comma-separated (one trace, priced per device)")
    add_run_arguments(parser, fields=("mode", "batch_size", "threads", "optimizer", "channels_last"), title="the step")
    parser.add_argument("--precision", type=choice_list("precision", PREDICT_PRECISIONS), metavar="PRECISION",
                        help="fp32, tf32 (GPU: TF32 tensor cores for matrix products), bf16 or fp16 "
                        "(autocast; fp16 needs a GPU), comma-separated (default fp32)")
    parser.add_argument("--reparam", action="store_true",
                        help="the model in its deployed form (timm's reparameterize_model: repvgg, mobileone, "
                        "fastvit...), as timm's own benchmarks run it")
    parser.add_argument("--no-trace-cache", action="store_true",
                        help="trace again instead of using the trace cache (traces of named models are kept in "
                        "the cache directory's traces/), and resolve and count the model again (the question cache, "
                        "traces/questions/)")
    parser.add_argument("--host-dispatch", metavar="HOST", default=None,
                        help="GPU devices: the host's time to dispatch one operator: default (the documented default "
                        "host, docs/time.md), measured (this machine's CPU, measured now, + a CUDA launch), or a time "
                        "per inference operator such as 12us")
    parser.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                        help="resolve, count and trace the named models in N worker processes before pricing "
                        "(default 1: one after another in this process; each worker holds torch and the model "
                        "library: about 1-2 GB, more while it builds a large model)")
    group = parser.add_argument_group("calibration")
    group.add_argument("--calibration", metavar="FILE", help="use this calibration file (one that is damaged, not a regular file, from another torch version or made at "
                       "another thread count than --threads is refused with the reason, exit 2; a damaged cached one is "
                       "recalibrated instead)")
    group.add_argument("--recalibrate", action="store_true", help="calibrate again even if the cache has a calibration")
    cost = parser.add_argument_group("training cost")
    cost.add_argument("--epochs", type=positive_float, metavar="N", help="epochs of training")
    cost.add_argument("--dataset-size", type=positive_int, metavar="N", help="images per epoch")
    cost.add_argument("--price-per-hour", metavar="PRICE", help="price of an hour of one device (any currency): one price for "
                      "every device (2.5) or per device (h100=2.5,a100=1.3; a device not asked for is refused)")
    cost.add_argument("--prices", metavar="FILE", help="a TOML price file with a [prices] table (h100 = 2.5; see "
                      "docs/prices.example.toml); --price-per-hour overrides it per device")
    cost.add_argument("--measured", metavar="FILE", help="profile results (CSV, JSON or a sweep store): a configuration measured there is costed from its measured step, and gets pred_ratio = predicted / measured")
    add_format_argument(parser)
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def _notice(message: str) -> None:
    print(f"vitbench: {message}", file=sys.stderr, flush=True)


def run(args) -> int:
    settings = run_settings_from(args)
    if "auto" in (settings.get("batch_size") or []):
        from vitbench.errors import SpecError

        raise SpecError("batch_size", "auto", "predict needs explicit batch sizes (plan gives the largest that fits)")
    steps = Steps("predict", quiet=args.quiet, delay_s=2.0)  # the first calibration: a wait with its clock
    try:
        records = _predict(args, settings, steps)
    finally:
        steps.close()
    _tell(records)
    emit(args, records, _columns(args, records) if args.format in ("table", "markdown") else None)
    if records and all(r.get("status") == RowStatus.ERROR for r in records):
        return 3
    return 2 if any(r.get("status") == RowStatus.REFUSED for r in records) else 0


def _predict(args, settings, steps: Steps):
    from vitbench.timemodel.run import predict

    return predict(args.models, predict_settings(args, settings), overrides=overrides_from(args),
                   on_calibrate=steps.wait, on_progress=steps)


def predict_settings(args, settings: dict) -> PredictSettings:
    """The command line's flags as the :class:`PredictSettings` the API takes (validated there)."""
    from vitbench.timemodel.predict_settings import PredictSettings

    return PredictSettings(
        device=args.device, mode=settings.get("mode", "infer"), batch_size=settings.get("batch_size", 1),
        precision=args.precision or "fp32", optimizer=settings.get("optimizer", "adamw"), reparam=args.reparam,
        trace_cache=not args.no_trace_cache, host_dispatch=args.host_dispatch, threads=settings.get("threads"),
        channels_last=bool(settings.get("channels_last", False)), jobs=args.jobs,
        calibration=args.calibration, recalibrate=args.recalibrate, epochs=args.epochs, dataset_size=args.dataset_size,
        price_per_hour=args.price_per_hour, prices_file=args.prices, measured=args.measured,
    )


def _tell(records) -> None:
    """The rows' warnings (each once) and failures, on stderr."""
    from vitbench.row_warnings import texts

    for warning in dict.fromkeys(w for r in records for w in texts(r.get("warnings"))):
        _notice(f"warning: {warning}")
    for row in records:
        if row.get("status") in (RowStatus.ERROR, RowStatus.REFUSED):
            _notice(f"{row['status']}: {row['model']} (batch {row['batch_size']}, {row['mode']}): {row['error']}")


def _columns(args, records) -> list[str]:
    """The table's columns, answer first (:data:`~vitbench.timemodel.run.TABLE_COLUMNS`): the
    main ones, and the optional ones the rows fill."""
    from vitbench.timemodel.run import TABLE_COLUMNS, TABLE_OPTIONAL

    def shown(column: str) -> bool:
        if column not in TABLE_OPTIONAL:
            return True
        if column == "status":
            return any(r.get(column) not in (None, RowStatus.OK) for r in records)
        return any(r.get(column) is not None for r in records)

    return [c for c in TABLE_COLUMNS if shown(c)]
