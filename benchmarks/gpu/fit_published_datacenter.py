"""Fit the GPU cost model for the data-centre generations vitbench has no card of (Ampere's
A100, Volta's V100, Turing's T4) on NVIDIA's published PyTorch throughputs, judge each fit leave
one model out, and write them to ``vitbench/data/gpu_params.json`` (``generations.
datacenter-<generation>``, ``validation.datacenter-<generation>``).

The figures (``benchmarks/gpu_published/dle_figures.csv``, transcribed with their source by
``benchmarks/gpu_published/DLE.md``): NVIDIA DeepLearningExamples' ConvNets READMEs (commit
729963dd, pytorch-21.03 container): ResNet-50, ResNeXt-101 32x4d, SE-ResNeXt-101 32x4d,
EfficientNet-B0 and B4 (380 px), one GPU, training (SGD momentum for the ResNets, RMSprop for
EfficientNet: priced as SGD with momentum, the optimizer stepping every 8-256 iterations there)
and inference (eval, no_grad: forward, loss and top-k, synchronised). AMP is fp16 autocast in
channels-last; TF32 (A100) and FP32 are NCHW.

Each generation's fit starts from the data-centre (Hopper) fit, priced at the card's sustained
rates, and is regularised toward it: what NVIDIA's figures do not pin stays where the measured
Hopper steps put it. Its host (a DGX's CPU and PyTorch 1.9, with the loss, top-k and a
synchronisation in every inference iteration) is fitted on the small-batch inference rows.

    python benchmarks/gpu/fit_published_datacenter.py [--write] [--report reports/datacenter/published.md]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from dataclasses import asdict, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FIGURES = ROOT / "benchmarks" / "gpu_published" / "dle_figures.csv"
#: NVIDIA's card names -> the catalogue's (the 16 and 32 GB V100 SXM2 are one chip at one clock)
CARDS = {"a100-80gb": "a100", "v100-16gb": "v100", "v100-32gb": "v100", "t4": "t4"}
PRECISIONS = {"AMP": "fp16", "TF32": "tf32", "FP32": "fp32"}
#: inference rows at or below this batch fit the host (the loop's per-iteration work), the rest the device
HOST_BATCH = 4
#: the parameters each generation's fit may move, and how strongly each is held to the Hopper fit's value
FREE = {"conv_eff": 0.1, "conv_backward_eff": 0.1, "bandwidth_eff": 0.5, "gemm_eff": 0.5, "grouped_eff": 0.1,
        "grouped_wgrad_eff": 0.1, "depthwise_eff": 0.1, "depthwise_wgrad_eff": 0.1}


def rows() -> list[dict]:
    """NVIDIA's one-GPU figures vitbench can price (a timm or torchvision model; WideSE, GPUNet and
    rows the transcription marks suspect left out)."""
    with FIGURES.open(encoding="utf-8", newline="") as handle:
        found = list(csv.DictReader(handle))
    return [r for r in found if r["num_gpus"] == "1" and r["timm_or_vitbench_ref"] and not r["model_dle"].startswith("widese")
            and "SUSPECT" not in r["notes"] and r["gpu"] in CARDS]


def measured(found: list[dict]) -> list:
    from vitbench.timemodel.gpu_records import Measured

    out = []
    for r in found:
        model = r["timm_or_vitbench_ref"] + ("+img_size=380" if r["img_size"] == "380" else "")
        batch = int(r["batch_size"])
        out.append(Measured(machine=f"dgx-{CARDS[r['gpu']]}", card=CARDS[r["gpu"]], source=r["mode"], model=model,
                            mode=r["mode"], batch_size=batch, precision=PRECISIONS[r["precision_published"]],
                            measured_s=batch / float(r["throughput_img_s"]), optimizer="sgd-momentum",
                            channels_last=r["memory_format"] == "nhwc"))
    return out


def generation_of(card: str) -> str:
    from vitbench.timemodel.gpus import gpu

    return gpu(card).generation


def fit_generation(steps, prior, light):
    """(parameters, host) of one generation: the host on the small-batch inference rows, then the
    device on the rest, regularised toward ``prior`` (the Hopper fit's parameters)."""
    from dataclasses import fields

    from vitbench.timemodel.gpu_fit import fit
    from vitbench.timemodel.gpu_model import GenerationParams
    from vitbench.timemodel.gpu_records import observations

    names = [f.name for f in fields(GenerationParams)]
    small = [m for m in steps if m.mode == "infer" and m.batch_size <= HOST_BATCH]
    host = prior
    if small:
        host = fit(observations(small), prior, fixed=[n for n in names if n != "host_infer_s"], light_dispatch=light)
    start = replace(prior, host_infer_s=host.host_infer_s)
    large = [m for m in steps if m.batch_size > HOST_BATCH]
    fitted = fit(observations(large), start, fixed=[n for n in names if n not in FREE], prior_weight=FREE,
                 max_evaluations=400, light_dispatch=light, prior=prior)
    return fitted


def errors(steps, params, light) -> list[float]:
    from vitbench.timemodel.gpu_fit import Stacked
    from vitbench.timemodel.gpu_records import observations

    stacked = Stacked(observations(steps), light)
    return [float(p / m - 1.0) for p, m in zip(stacked.latencies(params), stacked.measured)]


def band(values: list[float]) -> dict[str, float]:
    from vitbench.measure.stats import quantile

    values = [abs(v) for v in values]
    return {"median": round(statistics.median(values), 4), "p90": round(quantile(values, 0.9), 4), "n": len(values)}


def main() -> int:
    from vitbench.timemodel.families import family
    from vitbench.timemodel.gpu_model import GenerationParams, parameter_file

    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="write vitbench/data/gpu_params.json")
    parser.add_argument("--report", help="write a markdown report here")
    args = parser.parse_args()
    data = parameter_file()
    entry = data["generations"]["datacenter"]
    prior, light = GenerationParams.from_dict(entry["params"]), float(entry.get("light_dispatch", 1.0))
    steps = measured(rows())
    results, lines, table = {}, [], []
    for generation in sorted({generation_of(m.card) for m in steps}):
        mine = [m for m in steps if generation_of(m.card) == generation]
        params = fit_generation(mine, prior, light)
        judged = [m for m in mine if m.batch_size > HOST_BATCH]
        lomo: list[tuple] = []
        for model in sorted({m.model for m in judged}):
            rest = [m for m in mine if m.model != model]
            refit = fit_generation(rest, prior, light)
            own = [m for m in judged if m.model == model]
            lomo.extend(zip(own, errors(own, refit, light)))
        in_sample = errors(judged, params, light)
        families: dict[str, list[float]] = {}
        for m, e in lomo:
            families.setdefault(family(m.model.split("+")[0]), []).append(e)
        validation = {"all": band([e for _, e in lomo]), **{k: band(v) for k, v in sorted(families.items())},
                      "basis": f"leave-one-model-out on NVIDIA's published {generation} figures (DeepLearningExamples)",
                      "cards": sorted({m.card for m in mine})}
        results[generation] = (params, validation)
        lines.append(f"{generation}: {len(judged)} device rows ({', '.join(sorted({m.card for m in mine}))}); host "
                     f"{params.host_infer_s * 1e6:.1f} us an operator; in sample {band(in_sample)}; leave one model out "
                     f"{validation['all']}")
        lines.append("  fitted: " + ", ".join(f"{k}={getattr(params, k):.4g} (Hopper {getattr(prior, k):.4g})" for k in FREE))
        table.extend((m, e, dict(zip([id(x) for x in judged], in_sample)).get(id(m))) for m, e in lomo)
    print("\n".join(lines))
    if args.report:
        write_report(Path(args.report), lines, table)
    if args.write:
        write_params(results)
    return 0


def write_params(results) -> None:
    path = ROOT / "vitbench" / "data" / "gpu_params.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for generation, (params, validation) in results.items():
        data["generations"][f"datacenter-{generation}"] = {
            "params": {k: float(f"{v:.4g}") for k, v in asdict(params).items()},
            "rates": "sustained",
            "light_dispatch": data["generations"]["datacenter"].get("light_dispatch", 1.0),
            "fitted_on": f"NVIDIA DeepLearningExamples' published {generation} PyTorch throughputs (ResNet-50, ResNeXt-101, "
                         "SE-ResNeXt-101, EfficientNet-B0/B4; benchmarks/gpu/fit_published_datacenter.py), starting from "
                         "and regularised toward the data-centre (Hopper) fit",
        }
        data.setdefault("validation", {})[f"datacenter-{generation}"] = validation
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def write_report(path: Path, lines, table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows_md = ["| card | model | mode | batch | precision | format | published ms | leave one model out | in sample |",
               "|---|---|---|---:|---|---|---:|---:|---:|"]
    for m, e, inside in table:
        rows_md.append(f"| {m.card} | {m.model} | {m.mode} | {m.batch_size} | {m.precision} | "
                       f"{'NHWC' if m.channels_last else 'NCHW'} | {m.measured_s * 1e3:.2f} | {1 + e:.2f} | "
                       f"{'' if inside is None else f'{1 + inside:.2f}'} |")
    out = ["# Data-centre GPUs without a card here: fitted on NVIDIA's published figures", "",
           "Made by `python benchmarks/gpu/fit_published_datacenter.py --report "
           f"{path.relative_to(ROOT) if path.is_absolute() and ROOT in path.parents else path}`; the figures and "
           "what they time: [benchmarks/gpu_published/DLE.md](../../benchmarks/gpu_published/DLE.md).", "", "```", *lines,
           "```", "", "Ratios are predicted / published step (batch / img/s).", "", *rows_md, ""]
    path.write_text("\n".join(out), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
