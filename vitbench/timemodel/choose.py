"""``vitbench.choose``: which GPU, at what batch, how many, for how much: the answer to "ViT-B/16
for 300 ImageNet epochs: H100, A100 or L4?", one row per card, the answer first.

For each card asked for:

1. **Memory.** The largest training batch whose predicted peak fits the card's memory less
   :data:`RESERVE_BYTES` (the CUDA context and cuBLAS / cuDNN workspaces, which the memory model
   leaves out: docs/memory.md): :func:`vitbench.plan` for the models the replay covers, the
   fake-tensor trace for the others. A batch asked for is checked against it; otherwise the
   largest power of two that fits is taken. A card it does not fit gets a row that says so and
   why (``note``: "does not fit: batch 512 needs 41.9 GiB, the L4 has 24 GB ..."), never a time.
2. **Time.** One card's step at that batch from :func:`vitbench.predict` (the GPU cost model),
   then the data-parallel step over ``gpus`` x ``nodes`` cards
   (:mod:`vitbench.timemodel.interconnect`: the gradients' bucketed ring all-reduce overlapped
   with backward); backward's share of the one-card step is taken as its share of the step's
   MACs. Throughput is the global batch (``gpus x nodes x batch``) over that step.
3. **Cost.** Steps per epoch = ceil(images / global batch); hours = epochs x steps x step / 3600;
   cost = hours x cards x price of one card's hour.
4. **The answer.** Rows sorted by time (the run's hours, or throughput without ``epochs``) or
   by cost; :attr:`Choice.verdict` says which card wins and by how much, or that the first two
   are a tie when each one's value lies within the other's error band (the predictions' median
   error, ``pred_error_median``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vitbench.analytic.identity import identity_record
from vitbench.analytic.memory import memory_estimate, plan, unsupported_reason
from vitbench.analytic.memory.planner import largest_batch
from vitbench.errors import SpecError, VitbenchError, error_reason
from vitbench.results import Records
from vitbench.row_status import RowStatus
from vitbench.settings import CHOOSE_SORTS
from vitbench.specs.limits import MAX_TRACED_BLOCKS, too_many_blocks
from vitbench.timemodel.cached_models import cached_memory_profile, resolve_cached
from vitbench.timemodel.gpus import gpu
from vitbench.timemodel.interconnect import (
    GRADIENT_BYTES_PER_PARAM,
    data_parallel_step,
    link,
    steps_per_epoch,
)
from vitbench.timemodel.predict_settings import ChooseSettings, PredictSettings
from vitbench.timemodel.prices import device_prices
from vitbench.timemodel.run import predict
from vitbench.typed_rows import ChoiceRow
from vitbench.units import binary_bytes

#: kept free on every card for the CUDA context and cuBLAS / cuDNN workspaces (not in the memory model)
RESERVE_BYTES = 1 << 30
SORTS = CHOOSE_SORTS
#: the answer's columns, first, in the order of the question
ANSWER_COLUMNS = ("device", "fits", "batch_size", "pred_latency_s", "pred_throughput_img_s", "pred_train_hours", "pred_cost",
                  "pred_error_median", "pred_error_p90", "note")
#: then how the answer was reached
DETAIL_COLUMNS = ("gpus", "nodes", "global_batch_size", "pred_steps_per_epoch", "pred_epoch_s", "price_per_hour",
                  "max_batch_size", "pred_peak_memory_bytes", "memory_budget_bytes", "device_memory_bytes",
                  "pred_step_one_gpu_s", "pred_backward_s", "pred_allreduce_s", "pred_allreduce_exposed_s",
                  "gradient_bytes", "interconnect")
COMPONENTS = ("pred_attention_s", "pred_linear_s", "pred_conv_s", "pred_elementwise_s", "pred_optimizer_s",
              "pred_overhead_s", "pred_host_s", "pred_device_s", "pred_bound")
#: the terminal table's columns
TABLE_COLUMNS = (*ANSWER_COLUMNS[:-1], "gpus", "global_batch_size", "max_batch_size", "pred_peak_memory_bytes",
                 "pred_allreduce_exposed_s", "note")


class Choice(Records):
    """The rows of :func:`choose` (:class:`~vitbench.typed_rows.ChoiceRow`), best first, and
    ``verdict``: the answer in one sentence."""

    verdict: str = ""


def _memory_model(target: Any, mode: str, precision: str, optimizer: str, use_cache: bool = True,
                  warnings: list | None = None) -> tuple[Callable | None, Callable | None, str]:
    """(largest batch in a budget, peak at a batch, basis) for ``target``; (None, None, reason)
    when no memory prediction can be made. A traced profile comes from the question cache when
    traced before (``warnings`` hears of a refused entry)."""

    spec = target.spec
    if spec is not None and unsupported_reason(spec) is None:
        return (lambda budget: plan(spec, budget, mode, precision, optimizer),
                lambda batch: memory_estimate(spec, batch, mode, precision, optimizer).peak_bytes, "replayed")
    refusal = too_many_blocks(spec, MAX_TRACED_BLOCKS, "the memory trace")
    if refusal:
        return None, None, refusal

    try:
        profile, refused = cached_memory_profile(target, mode, precision, optimizer, use_cache)
        if warnings is not None:
            warnings.extend(refused)
    except VitbenchError as exc:  # a model fake tensors cannot run (a ModelError): its rows say so
        return None, None, f"memory not predicted: tracing it failed: {error_reason(exc)}".splitlines()[0]
    return (lambda budget: largest_batch(profile, budget), profile.peak,
            "traced on fake tensors (the tensors operators return: a lower bound within about 5%)")


def _power_of_two_at_most(value: int) -> int:
    return 1 << (value.bit_length() - 1)


def _fit(device: str, batch: int | None, memory: tuple, row: dict[str, Any]) -> int | None:
    """The batch to price on ``device`` (None: it does not fit; ``row['note']`` says why)."""
    spec = gpu(device)
    capacity = int(spec.memory_gb * 1e9)
    budget = capacity - RESERVE_BYTES
    largest, peak, basis = memory
    row.update(device_memory_bytes=capacity, memory_budget_bytes=budget, memory_basis=basis)
    if largest is None:
        row["fits"] = None
        if batch is None:
            row["note"] = f"{basis}; give --batch-size to price it anyway"
            return None
        row["note"] = f"fit not checked: {basis}"
        return batch
    most = largest(budget)
    row["max_batch_size"] = most
    chosen = batch if batch is not None else (_power_of_two_at_most(most) if most else 1)
    needs = peak(chosen)
    row["pred_peak_memory_bytes"] = needs
    row["fits"] = needs <= budget
    if not row["fits"]:
        row["note"] = (f"does not fit: batch {chosen} needs {binary_bytes(needs)}, the {spec.name} has {spec.memory_gb:g} GB "
                       f"({binary_bytes(budget)} after {binary_bytes(RESERVE_BYTES)} for the CUDA context and workspaces)")
        row["batch_size"] = chosen
        return None
    return chosen


def _backward_s(prediction: dict[str, Any]) -> float:
    """Backward's share of the one-card step: the step less the optimizer, x backward's share of
    the step's MACs (forward's are the row's ``macs``); 2/3 when the counts are missing."""
    step = prediction["pred_latency_s"] - (prediction.get("pred_optimizer_s") or 0.0)
    total, forward = prediction.get("pred_macs"), prediction.get("macs")
    share = (total - forward) / total if isinstance(total, int) and isinstance(forward, int) and 0 < forward < total else 2 / 3
    return max(step, 0.0) * share


def _priced(row: dict[str, Any], prediction: dict[str, Any], settings: ChooseSettings) -> None:
    """The row's time and cost columns from the one-card prediction."""
    device, batch = row["device"], row["batch_size"]
    gpus, nodes = settings.gpus, settings.nodes
    card = link(device)
    one = prediction["pred_latency_s"]
    params = prediction.get("params") or 0
    gradient_bytes = int(params) * GRADIENT_BYTES_PER_PARAM
    if settings.mode == "train":
        backward = _backward_s(prediction)
        step = data_parallel_step(one, backward, gradient_bytes, gpus, nodes, card, settings.network_gbit_s)
        row.update(pred_backward_s=backward, pred_allreduce_s=step.allreduce_s, pred_allreduce_exposed_s=step.exposed_s,
                   gradient_bytes=gradient_bytes)
        step_s = step.step_s
    else:
        step_s = one
    global_batch = batch * gpus * nodes
    row.update(pred_latency_s=step_s, pred_throughput_img_s=global_batch / step_s, global_batch_size=global_batch,
               pred_step_one_gpu_s=one, interconnect=card.path(gpus) if gpus > 1 else None,
               pred_error_median=prediction.get("pred_error_median"), pred_error_p90=prediction.get("pred_error_p90"))
    if settings.epochs is not None:
        steps = steps_per_epoch(settings.dataset_size, global_batch)
        hours = settings.epochs * steps * step_s / 3600
        price = row.get("price_per_hour")
        row.update(pred_steps_per_epoch=steps, pred_epoch_s=steps * step_s, pred_train_hours=hours,
                   pred_cost=hours * gpus * nodes * price if price is not None else None)


def _value(row: dict[str, Any], sort: str) -> float | None:
    """What a row is ranked by (lower is better)."""
    if sort == "cost":
        return row.get("pred_cost")
    if row.get("pred_train_hours") is not None:
        return row["pred_train_hours"]
    throughput = row.get("pred_throughput_img_s")
    return 1 / throughput if throughput else None


def _shown(row: dict[str, Any], sort: str) -> str:
    if sort == "cost":
        return f"{row['pred_cost']:,.2f}"
    if row.get("pred_train_hours") is not None:
        return f"{row['pred_train_hours']:,.1f} h"
    return f"{row['pred_throughput_img_s']:,.0f} img/s"


def verdict(rows: list[dict[str, Any]], sort: str = "time") -> str:
    """The answer in one sentence: the card that wins on ``sort`` and by how much, a tie when the
    first two lie within each other's error band (their ``pred_error_median``), or why no card can."""
    ranked = sorted((r for r in rows if r.get("fits") is not False and _value(r, sort) is not None),
                    key=lambda r: _value(r, sort))
    if not ranked:
        reasons = "; ".join(f"{r['device']}: {r.get('note') or 'not priced'}" for r in rows)
        return f"No card can answer: {reasons}."
    first = ranked[0]
    if len(ranked) == 1:
        others = [r["device"] for r in rows if r is not first]
        return f"Only the {first['device']} can run it ({_shown(first, sort)}); " + (
            f"{', '.join(others)}: see the note." if others else "no other card was asked for.")
    return _first_two(first, ranked[1], sort)


def _first_two(first: dict[str, Any], second: dict[str, Any], sort: str) -> str:
    """The sentence for the first two of a ranking: a win by a ratio, or a tie."""
    what = "cost of the run" if sort == "cost" else "time for the run" if first.get("pred_train_hours") else "throughput"
    a, b = _value(first, sort), _value(second, sort)
    ma, mb = first.get("pred_error_median"), second.get("pred_error_median")
    known = ma is not None and mb is not None
    band = f"median error {ma:.0%} and {mb:.0%}" if known else "error band unknown"
    if known and a * (1 + ma) >= b * (1 - mb):
        return (f"On {what}, the {first['device']} and the {second['device']} are a tie: {_shown(first, sort)} and "
                f"{_shown(second, sort)} lie within each other's error band ({band}).")
    return (f"On {what}, the {first['device']} wins: {_shown(first, sort)} against {_shown(second, sort)} on the "
            f"{second['device']}, {b / a:.2f}x {'cheaper' if sort == 'cost' else 'faster'}, beyond both predictions' "
            f"error bands ({band}).")


def _ordered(row: dict[str, Any], prediction: dict[str, Any] | None) -> dict[str, Any]:
    """The row's columns in the order of the question: the answer, how it was reached, the
    components of the one-card step, then the identity."""
    out = {k: row.get(k) for k in ANSWER_COLUMNS}
    out.update({k: row.get(k) for k in DETAIL_COLUMNS})
    source = prediction or {}
    out.update({k: source.get(k) for k in COMPONENTS})
    identity = row.pop("_identity", {})
    rest = {**identity, **{k: v for k, v in source.items() if k not in out}, **{k: v for k, v in row.items() if k not in out}}
    out.update(rest)
    return out


def choose(
    model: Any,
    settings: ChooseSettings | None = None,
    *,
    overrides: dict[str, Any] | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    **keywords: Any,
) -> Choice:
    """Which card, at what batch, how many, for how much: one row per card asked for (see the
    module's docstring), best first.

    Args:
        model: one model: a preset name, a reference, a spec or an ``nn.Module``.
        settings: what is asked (:class:`~vitbench.timemodel.predict_settings.ChooseSettings`:
            the cards, mode, batch, precision, the run's epochs and dataset size, prices, cards
            per node and nodes, the sort).
        overrides: spec fields to change on the model (one value each: choose answers for one model).
        on_progress: called ``(done, total, label)`` as each batch's prediction starts.
        **keywords: a field of :class:`ChooseSettings` (``device="h100,a100"``, ``epochs=300``)
            changes ``settings`` (the keyword form builds the same object, validated in the same
            place); any other name is a spec field to override (``img_size=384``).

    Returns:
        A :class:`Choice` (Records of :class:`~vitbench.typed_rows.ChoiceRow`), best first:
        ``row.fits``, ``row.batch_size``, ``row.latency_s`` (the data-parallel step),
        ``row.throughput_img_s``, ``row.train_hours``, ``row.cost``, ``row.error_band``,
        ``row.note`` (why a card has no time); ``.verdict`` says which card wins and by how much,
        or that the first two are a tie within their error bands.

    Raises:
        SpecError: a setting or the model is wrong, or the model has alternatives (one line naming it).
        InputFileError: the price file cannot be read.

    >>> vitbench.choose("vit-b/16", device="h100,a100,l4", epochs=300, dataset_size=1281167,
    ...                 price="h100=2.5,a100=1.3,l4=0.6", precision="bf16").verdict  # doctest: +SKIP
    """
    settings, spec_overrides = ChooseSettings.split(settings, keywords)
    prices = _prices(settings)
    targets, refused = resolve_cached([model], {**(overrides or {}), **spec_overrides}, use_cache=settings.trace_cache)
    if len(targets) != 1:
        raise SpecError("model", model, "choose answers for one model at a time (an override with alternatives gives several)")
    target = targets[0]
    warnings = list(refused.get(id(target), ()))  # refused question-cache entries: every row says so
    traced_precision = "fp32" if settings.precision == "tf32" else settings.precision
    memory = _memory_model(target, settings.mode, traced_precision, settings.optimizer, settings.trace_cache, warnings)
    rows = {each: {"device": each, "gpus": settings.gpus, "nodes": settings.nodes, "price_per_hour": prices.get(each)}
            for each in settings.device}
    batches = {each: _fit(each, settings.batch_size, memory, rows[each]) for each in settings.device}
    predictions = _predictions(target, batches, settings, on_progress)
    out = Choice(ChoiceRow(_row(target, rows[each], batches[each], predictions.get(each), settings)) for each in settings.device)
    for row in out if warnings else ():
        row["warnings"] = [*warnings, *(row.get("warnings") or [])]
    _rank(out, settings.sort)
    return out


def _prices(settings: ChooseSettings) -> dict[str, float]:
    """Each card's price of an hour (the price file read); sorting by cost needs one for every card."""
    prices = device_prices(settings.price, settings.device, settings.prices_file, field="price")
    missing = [d for d in settings.device if d not in prices]
    if settings.sort == "cost" and missing:
        raise SpecError("price", None, f"sorting by cost needs a price for every card; none for {', '.join(missing)}")
    return prices


def _rank(out: Choice, sort: str) -> None:
    """``out`` in place, best first by ``sort`` (cards without a value last, in their order), and its verdict."""
    ranked = sorted((r for r in out if r.get("fits") is not False and _value(r, sort) is not None), key=lambda r: _value(r, sort))
    out[:] = ranked + [r for r in out if not any(r is each for each in ranked)]
    out.verdict = verdict(out, sort)


def _predictions(target: Any, batches: dict[str, int | None], settings: ChooseSettings,
                 on_progress: Callable[[int, int, str], None] | None) -> dict[str, dict[str, Any]]:
    """The one-card prediction of every card that fits, one trace per batch (cards of the same
    batch share it)."""
    groups: dict[int, list[str]] = {}
    for each, batch in batches.items():
        if batch is not None:
            groups.setdefault(batch, []).append(each)
    out: dict[str, dict[str, Any]] = {}
    for index, (batch, cards) in enumerate(sorted(groups.items())):
        if on_progress is not None:
            on_progress(index, len(groups), f"{target.label} batch {batch} on {', '.join(cards)}")
        asked = PredictSettings(device=cards, mode=settings.mode, batch_size=batch, precision=settings.precision,
                                optimizer=settings.optimizer, epochs=settings.epochs, dataset_size=settings.dataset_size,
                                host_dispatch=settings.host_dispatch, trace_cache=settings.trace_cache)
        found = predict(target, asked)
        out.update({row["device"]: dict(row) for row in found})
    return out


def _row(target: Any, row: dict[str, Any], batch: int | None, prediction: dict[str, Any] | None,
         settings: ChooseSettings) -> dict[str, Any]:
    """One card's row: priced from its prediction, or its identity and the reason it has none."""
    if prediction is None:
        mode = settings.mode
        row["_identity"] = {**identity_record(target, row.get("batch_size") or 1), "batch_size": row.get("batch_size"),
                            "mode": mode, "precision": settings.precision,
                            "optimizer": settings.optimizer if mode == "train" else None}
    else:
        row["batch_size"] = batch
        if prediction.get("status") == RowStatus.OK:
            _priced(row, prediction, settings)
        else:
            row["note"] = f"{prediction.get('status')}: {prediction.get('error')}"
    return _ordered(row, prediction)


__all__ = ["ANSWER_COLUMNS", "RESERVE_BYTES", "SORTS", "TABLE_COLUMNS", "Choice", "ChooseSettings", "choose", "verdict"]
