"""Reports: from a results store (or a sweep file, run first) to ``report.md`` with tables, CSV,
PNG plots and conclusions computed from the numbers.

``report()`` with no source runs the built-in default study (``vitbench/data/default_study.yaml``)
and writes ``reports/default/``. Every section appears when the results support it:

* MACs and parameters vs patch size (rows differing only in patch size);
* MACs vs resolution, ViT against CNN, with crossovers found on a fine analytic scan;
* attention share of MACs vs token count, with the token count at which the attention matmuls
  (2 n^2 d MACs per layer) exceed the linear layers (n d (4d + 2m) per layer);
* the source documents' tables (patch-size study, ablation, ViT variants, ViT-B/16 vs ResNet-50);
* counter agreement (analytic vs fvcore vs dispatch MACs);
* measured throughput, latency and peak memory vs batch size; predicted vs measured memory.

MACs are multiply-accumulates; FLOPs = 2 x MACs. fvcore calls a MAC a "flop".
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitbench.errors import InputFileError
from vitbench.reporting import markdown as md

DEFAULT_OUT = Path("reports") / "default"
SWEEP_SUFFIXES = (".yaml", ".yml", ".toml")
CONVENTIONS = (
    "MACs are multiply-accumulates; FLOPs = 2 x MACs (matmul and convolution); fvcore calls a MAC "
    "a \"flop\". Parameters are exact trainable counts. MACs are per image unless a column says "
    "per batch. Memory in bytes, shown in KiB/MiB/GiB (powers of 1024). Times are medians of "
    "timed steps; throughput in images per second."
)

# --- reference values quoted from the source documents (../shared/seeds) ----------------------
#: seed 000, "Complexity Report" and the printed fvcore summaries: patch -> (params, fvcore #flops
#: (= MACs), attention FLOPs/layer (= MACs of the attention module: qkv, scores, values, proj))
NOTEBOOK_PATCH = {4: (18_975_234, 1_256_365_568, 72.4e6), 8: (19_024_386, 324_738_560, 18.1e6), 16: (19_313_154, 96_255_488, 5.2e6)}
#: seed 003, section 5.5: parameters of each size (same figure for /8, /16, /32)
TUTORIAL_PARAMS = {"s": 21e6, "b": 85e6, "l": 307e6, "h": 632e6}
#: seed 002, "Compare FLOPs for ResNet-50 and ViT-Base across resolutions" (labelled GFLOPs)
CHAPTER_RESOLUTION = {224: (4.1e9, 4.2e9), 384: (12.0e9, 20.4e9), 512: (21.3e9, 48.7e9)}
#: (a, b) model pairs the documents compare; measured side by side when both were measured
MEASURED_PAIRS = (
    ("vit-b/16", "resnet50"),
    ("slides-vit", "slides-cnn"),
    ("chapter-vit-tiny", "chapter-resnet-small"),
    ("cifar-vit/4", "cifar-vit/16"),
    ("cifar-vit/4", "cifar-vit/8"),
)
ABLATION_CHANGES = {
    "ablation-vit": "baseline: CLS token, learned 1-D positions (n d)",
    "ablation-vit-nopos": "no position embedding",
    "ablation-vit-meanpool": "mean pooling, no CLS token (one token fewer)",
    "ablation-vit-pos2d": "learned 2-D positions: (H/P + W/P) d/2",
}


@dataclass
class ReportResult:
    out: Path
    report: Path
    plots: list[Path] = field(default_factory=list)
    tables: list[Path] = field(default_factory=list)
    conclusions: list[str] = field(default_factory=list)
    rows: int = 0
    sweep: Any = None


# --- entry point -----------------------------------------------------------------------------
def report(
    source: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    *,
    resume: bool = False,
    force: bool = False,
    command: str | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> ReportResult:
    """Write ``report.md`` (+ results CSV/JSON, tables as CSV, PNG plots) into ``out``.

    ``source``: a results store directory or results CSV (rendered as is), or a sweep file (run
    into ``out`` first; rerun from scratch unless ``resume``). ``None``: the default study."""
    from vitbench.store import load_results
    from vitbench.sweepfile import default_study_path

    sweep_result = None
    path = Path(source) if source is not None else default_study_path()
    if source is None or path.suffix.lower() in SWEEP_SUFFIXES:
        from vitbench.sweeps import sweep
        from vitbench.sweepfile import load_sweep_file

        plan = load_sweep_file(path)
        out_dir = Path(out) if out is not None else (DEFAULT_OUT if source is None else Path("reports") / plan.name)
        if command is None:
            command = "vitbench report" if source is None else f"vitbench report {source} --out {out_dir}"
        _check_rerun(out_dir, plan.name, resume=resume, force=force)
        sweep_result = sweep(plan, out=out_dir, resume=resume, force=not resume, on_start=on_start, on_row=on_row)
        records, sidecar = load_results(out_dir)
    elif path.is_dir() or path.suffix.lower() == ".csv":
        records, sidecar = load_results(path)
        store_dir = path if path.is_dir() else path.parent
        out_dir = Path(out) if out is not None else Path("reports") / (store_dir.name if path.is_dir() else path.stem)
        if command is None:
            command = f"vitbench report {source} --out {out_dir}"
        _copy_results(path, out_dir, force=force)
    else:
        raise InputFileError(
            f"source={str(source)!r}: not a results store (directory with results.csv), results CSV or sweep file (.yaml/.toml)"
        )
    return render(records, sidecar, out_dir, command=command, sweep_result=sweep_result)


def _check_rerun(out: Path, name: str, *, resume: bool, force: bool) -> None:
    """Rerunning a study replaces its own earlier rows; rows of another sweep need --force."""
    from vitbench.store import read_raw_csv, read_sidecar, store_paths

    csv_path, json_path = store_paths(out)
    if resume or force or not csv_path.exists() or not read_raw_csv(csv_path):
        return
    previous = (read_sidecar(json_path).get("sweep") or {}).get("name")
    if previous != name:
        raise InputFileError(
            f"out={str(out)!r}: holds results of another sweep ({previous or 'unknown'}); "
            "choose another --out, or pass --force to replace them"
        )


def _copy_results(source: Path, out: Path, *, force: bool) -> None:
    from vitbench.results import atomic_write_text
    from vitbench.store import store_paths

    src_csv, src_json = store_paths(source)
    dst_csv, dst_json = store_paths(out)
    if dst_csv.exists() and dst_csv.resolve() == src_csv.resolve():
        return
    if dst_csv.exists() and not force:
        raise InputFileError(
            f"out={str(out)!r}: already holds a different results.csv; choose another --out or pass --force"
        )
    atomic_write_text(dst_csv, src_csv.read_text(encoding="utf-8"))
    if src_json.exists():
        atomic_write_text(dst_json, src_json.read_text(encoding="utf-8"))


# --- helpers on records ----------------------------------------------------------------------
def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return None if isinstance(value, float) and math.isnan(value) else value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _spec_dict(record: dict[str, Any]) -> dict[str, Any] | None:
    key = record.get("spec_key")
    if not isinstance(key, str) or not key.startswith("{"):
        return None
    try:
        return json.loads(key)
    except ValueError:
        return None


def _spec(record: dict[str, Any]):
    from vitbench.specs import spec_from_dict

    data = _spec_dict(record)
    if data is None:
        return None
    try:
        return spec_from_dict(data)
    except Exception:
        return None


def _family(record: dict[str, Any]) -> str:
    """Preset name without its patch suffix: 'vit-b/16' -> 'vit-b', 'cifar-vit/4' -> 'cifar-vit'."""
    name = str(record.get("model") or "?")
    return name.rsplit("/", 1)[0] if "/" in name else name


def _per_image(record: dict[str, Any], key: str = "macs") -> float | None:
    value, batch = _num(record.get(key)), _num(record.get("batch_size")) or 1
    return None if value is None else value / batch


def _analytic_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One ok row per distinct spec (the smallest batch), with per-image MACs in ``macs_img``."""
    best: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.get("status") != "ok" or _num(r.get("macs")) is None or not r.get("spec_key"):
            continue
        current = best.get(r["spec_key"])
        if current is None or (_num(r.get("batch_size")) or 1) < (_num(current.get("batch_size")) or 1):
            best[r["spec_key"]] = r
    out = []
    for r in best.values():
        row = dict(r)
        row["macs_img"] = _per_image(r)
        out.append(row)
    return out


def _without(spec_data: dict[str, Any], *names: str) -> str:
    return json.dumps({k: v for k, v in spec_data.items() if k not in names}, sort_keys=True)


# --- analytic helpers for conclusions --------------------------------------------------------
def _resize(spec, resolution: int):
    """``spec`` at a square resolution (an explicit learned-position length is dropped)."""
    from vitbench.specs import with_overrides

    extra = {"pos_embed_len": None} if getattr(spec, "pos_embed_len", None) is not None else {}
    return with_overrides(spec, img_size=resolution, **extra)


def _macs_at(spec, resolution: int) -> int | None:
    from vitbench.analytic import complexity
    from vitbench.errors import SpecError

    try:
        return complexity(_resize(spec, resolution)).macs
    except SpecError:
        return None


def attention_linear_crossover(embed_dim: int, num_heads: int, mlp_hidden: int) -> tuple[int, int]:
    """Smallest token count n at which one layer's attention matmuls (Q K^T and A V: 2 n^2 d)
    exceed its linear layers (qkv 3 n d^2, proj n d^2, fc1 and fc2 2 n d m: n d (4d + 2m)),
    found by searching the analytic per-layer formulas; and the closed-form equality point
    n = 2d + m (2 n^2 d = n d (4d + 2m)) as a cross-check."""
    from vitbench.analytic import vit
    from vitbench.specs import ViTSpec

    def parts(n: int) -> tuple[int, int]:
        # A spec with exactly n tokens: a 1 x (n-1) image of 1 x 1 patches plus the CLS token.
        spec = ViTSpec(img_size=(1, n - 1), patch_size=1, in_chans=1, embed_dim=embed_dim, depth=1,
                       num_heads=num_heads, mlp_hidden_dim=mlp_hidden, num_classes=1)
        attention = vit.attention_matmul_macs_per_layer(spec)
        linear = vit.qkv_macs(spec) + vit.attn_proj_macs(spec) + vit.mlp_fc1_macs(spec) + vit.mlp_fc2_macs(spec)
        return attention, linear

    lo, hi = 2, 2
    while parts(hi)[0] <= parts(hi)[1]:
        lo, hi = hi, hi * 2
    while lo < hi:  # smallest n with attention > linear
        mid = (lo + hi) // 2
        a, lin = parts(mid)
        if a > lin:
            hi = mid
        else:
            lo = mid + 1
    return lo, 2 * embed_dim + mlp_hidden


def _resolution_for_tokens(spec, tokens: int) -> int | None:
    """Smallest square resolution (a multiple of the patch size) whose token count reaches ``tokens``."""
    p = spec.patch_size
    side = max(1, math.isqrt(max(tokens - 1, 1)) - 1)
    for k in range(side, side + 10):
        s = _resize(spec, k * p)
        if s.tokens >= tokens:
            return k * p
    return None


# --- the report ------------------------------------------------------------------------------
class _Report:
    def __init__(self, records: list[dict[str, Any]], sidecar: dict[str, Any], out: Path, command: str):
        self.records = records
        self.sidecar = sidecar
        self.out = out
        self.command = command
        self.doc = md.Document()
        self.conclusions: list[str] = []
        self.plots: list[Path] = []
        self.tables: list[Path] = []
        self.analytic = _analytic_rows(records)
        self.by_key = {r["spec_key"]: r for r in self.analytic}

    # -- output helpers --
    def plot(self, name: str, make: Callable[[Path], Path], alt: str, caption: str) -> None:
        path = make(self.out / name)
        self.plots.append(path)
        self.doc.add(md.image(name, alt, caption))

    def table(self, name: str, rows: list[dict[str, Any]], columns: list[md.Column | str]) -> None:
        self.doc.add(md.table(rows, columns))
        import pandas as pd

        from vitbench.results import atomic_write_text

        keys = [c if isinstance(c, str) else c[0] for c in columns]
        path = self.out / "tables" / f"{name}.csv"
        atomic_write_text(path, pd.DataFrame([{k: r.get(k) for k in keys} for r in rows], columns=keys).to_csv(index=False))
        self.tables.append(path)
        self.doc.add(f"<sub>Table as CSV (raw units): [tables/{name}.csv](tables/{name}.csv)</sub>")

    def conclude(self, text: str) -> str:
        self.conclusions.append(text)
        return text

    def row_for(self, preset: str, **overrides: Any) -> dict[str, Any] | None:
        from vitbench.presets import resolve
        from vitbench.specs import spec_key

        try:
            return self.by_key.get(spec_key(resolve(preset, **overrides)))
        except Exception:
            return None

    # -- sections --
    def build(self) -> str:
        meta = self.sidecar.get("sweep") or {}
        name = meta.get("name") or self.out.name
        body = md.Document()
        self.sections: list[tuple[str, Callable[[], bool]]] = [
            ("Patch size: MACs and parameters", self.section_patch_size),
            ("Resolution: ViT against CNN", self.section_resolution),
            ("Attention share of MACs vs token count", self.section_attention),
            ("Source check: the CIFAR ViT patch-size study (seed 000)", self.section_notebook_patch),
            ("Source check: ablation variants (seed 000)", self.section_ablation),
            ("Source check: ViT-B/16 vs ResNet-50 across resolutions (seed 002)", self.section_chapter_resolution),
            ("Source check: ViT-S/B/L/H x /8, /16, /32 (seed 003)", self.section_variants),
            ("Counter agreement: analytic vs fvcore vs dispatch", self.section_agreement),
            ("Measured: throughput, latency and peak memory vs batch size", self.section_measured),
            ("Predicted vs measured peak memory", self.section_memory),
            ("Rows that did not complete", self.section_failures),
            ("All configurations", self.section_all),
        ]
        rendered = []
        for title, section in self.sections:
            self.doc = md.Document()
            if section():
                rendered.append((title, self.doc))
        body.heading(1, f"vitbench report: {name}")
        if meta.get("description"):
            body.add(meta["description"])
        body.add(f"**Reproduce:** `{self.command}`")
        body.add(f"**Conventions:** {CONVENTIONS}")
        body.heading(2, "Environment")
        body.bullets(self.environment_lines())
        body.heading(2, "Conclusions (computed from the results below)")
        body.bullets(self.conclusions or ["(no section had enough rows to conclude anything)"])
        for i, (title, doc) in enumerate(rendered, 1):
            body.heading(2, f"{i}. {title}")
            body.add(*doc.blocks)
        return body.render()

    def environment_lines(self) -> list[str]:
        env = self.sidecar.get("environment") or {}
        lines = []
        measured = [r for r in self.records if r.get("env_torch")]
        if measured:
            r = measured[0]
            devices = sorted({str(x.get("device")) for x in measured if x.get("device")})
            lines.append(f"device: {', '.join(devices)} ({r.get('env_device_name') or r.get('env_cpu')})")
            lines.append(f"torch {r.get('env_torch')}, CUDA {r.get('env_cuda') or 'none'}, threads {r.get('env_threads')}, CPU cores {r.get('env_cpu_count') or env.get('cpu_count')}")
        if env.get("sources"):
            lines.append(f"merged from {len(env['sources'])} stores")
        if env.get("load_average_1m") is not None and measured:
            cores = env.get("cpu_count") or 1
            # vitbench itself adds about one runnable process; more than the cores means contention
            busy = env["load_average_1m"] > cores
            lines.append(
                f"load average when the sweep started: {env['load_average_1m']} on {cores} cores"
                + (" (more runnable work than cores: measured times may be inflated and noisy)" if busy else "")
            )
        if env.get("python"):
            lines.append(f"python {env.get('python')}, {env.get('platform')}")
        versions = sorted({str(r.get("vitbench_version")) for r in self.records if r.get("vitbench_version")} | ({env["vitbench_version"]} if env.get("vitbench_version") else set()))
        if versions:
            lines.append(f"vitbench {', '.join(versions)}")
        statuses: dict[str, int] = {}
        for r in self.records:
            statuses[str(r.get("status"))] = statuses.get(str(r.get("status")), 0) + 1
        lines.append(f"{len(self.records)} result rows ({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))}); raw data: [results.csv](results.csv), [results.json](results.json) (with raw timing samples)")
        return lines

    # 1. patch size
    def patch_groups(self) -> list[list[dict[str, Any]]]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in self.analytic:
            data = _spec_dict(r)
            if not data or data.get("kind") != "vit":
                continue
            groups.setdefault(_without(data, "patch_size", "pos_embed_len"), []).append(r)
        out = []
        for rows in groups.values():
            by_patch = {}
            for r in sorted(rows, key=lambda x: x["patch_size"]):
                by_patch.setdefault(r["patch_size"], r)
            if len(by_patch) >= 2:
                out.append(list(by_patch.values()))
        return sorted(out, key=lambda g: (g[0]["img_size"] if isinstance(g[0]["img_size"], int) else 0, _family(g[0])))

    def section_patch_size(self) -> bool:
        groups = self.patch_groups()
        if not groups:
            return False
        from vitbench.reporting import plots

        data = [
            {
                "label": f"{_family(g[0])} @ {g[0]['img_size']} px",
                "patch_size": [r["patch_size"] for r in g],
                "macs": [r["macs_img"] for r in g],
                "params": [r["params"] for r in g],
            }
            for g in groups
        ]
        self.plot(
            "patch_size.png", lambda p: plots.patch_size(data, p), "MACs and parameters vs patch size",
            "MACs per image (left, log scale; FLOPs = 2 x MACs) and exact parameters (right) against patch size P, "
            "one line per model family at a fixed resolution. Tokens n = (H/P)(W/P) (+1 CLS).",
        )
        rows, lines = [], []
        most = max(len(g) for g in groups)
        for g in groups:
            small, large = g[0], g[-1]
            for r in g:
                depth = (_spec_dict(r) or {}).get("depth") or 1
                attn_module = sum(_num(r.get(f"macs_{c}")) or 0 for c in ("qkv", "attn_scores", "attn_values", "attn_proj")) / depth / (r.get("batch_size") or 1)
                rows.append({
                    "family": f"{_family(r)} @ {r['img_size']} px", "patch_size": r["patch_size"], "tokens": r["tokens"],
                    "params": r["params"], "macs": r["macs_img"], "attn_module_macs_per_layer": attn_module,
                    "attn_matmul_share": r.get("attn_matmul_share"),
                    "macs_vs_largest_patch": f"{r['macs_img'] / large['macs_img']:.3g}x",
                })
            line = (
                f"{_family(small)} at {small['img_size']} px: going from P={large['patch_size']} to "
                f"P={small['patch_size']} (tokens {large['tokens']} -> {small['tokens']}) multiplies MACs per image by "
                f"{md.ratio(small['macs_img'], large['macs_img'])} ({md.count(large['macs_img'])} -> {md.count(small['macs_img'])}) "
                f"while parameters change by {100 * (small['params'] - large['params']) / large['params']:+.2f}% "
                "(the patch embedding, d C P^2, shrinks as P falls; learned positions, n d, grow with n)"
            )
            lines.append(line)
            if len(g) == most and sum(1 for c in self.conclusions if c.startswith("Patch size")) < 2:
                self.conclude(f"Patch size, {line}.")
        self.doc.bullets(lines)
        self.table("patch_size", rows, [
            ("family", "model @ resolution"), ("patch_size", "P"), ("tokens", "tokens n"), ("params", "params"),
            ("macs", "MACs/image"), ("attn_module_macs_per_layer", "attention-module MACs/layer"),
            ("attn_matmul_share", "attention matmul share"), ("macs_vs_largest_patch", "MACs vs largest P"),
        ])
        return True

    # 2. resolution
    def resolution_groups(self) -> list[list[dict[str, Any]]]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in self.analytic:
            data = _spec_dict(r)
            if not data or not isinstance(r.get("img_size"), int):
                continue
            groups.setdefault(_without(data, "img_size", "pos_embed_len"), []).append(r)
        out = [sorted(rows, key=lambda x: x["img_size"]) for rows in groups.values() if len({x["img_size"] for x in rows}) >= 2]
        return sorted(out, key=lambda g: (g[0]["kind"] != "vit", g[0]["macs_img"]))

    def section_resolution(self) -> bool:
        groups = self.resolution_groups()
        vits = [g for g in groups if g[0]["kind"] == "vit"]
        cnns = [g for g in groups if g[0]["kind"] != "vit"]
        if not vits or not cnns:
            return False
        from math import lcm

        from vitbench.reporting import plots

        step = lcm(*[g[0]["patch_size"] for g in vits])
        top = max(1024, max(g[-1]["img_size"] for g in groups))
        grid = list(range(step, top + 1, step))
        curves, points, crossovers, scans = [], [], [], {}
        for g in vits + cnns:
            spec = _spec(g[0])
            label = str(g[0]["model"])
            values = [(res, _macs_at(spec, res)) for res in grid]
            values = [(res, m) for res, m in values if m is not None]
            scans[label] = dict(values)
            curves.append(plots.Series(label, [v[0] for v in values], [v[1] for v in values], "-" if g in vits else "--"))
            points.append(plots.Series(label, [r["img_size"] for r in g], [r["macs_img"] for r in g]))
        lines = []
        for v in vits:
            for c in cnns:
                vl, cl = str(v[0]["model"]), str(c[0]["model"])
                common = [res for res in grid if res in scans[vl] and res in scans[cl]]
                diffs = [(res, scans[vl][res] - scans[cl][res]) for res in common]
                crossings = [diffs[i][0] for i in range(1, len(diffs)) if (diffs[i][1] > 0) != (diffs[i - 1][1] > 0)]
                ratios = [(scans[vl][res] / scans[cl][res], res) for res in common]
                lo_ratio, lo_at = min(ratios)
                shown = [res for res in (224, 384, 512) if res in scans[vl] and res in scans[cl]]
                at = ", ".join(f"{md.ratio(scans[vl][res], scans[cl][res])} at {res}" for res in shown)
                if crossings:
                    for res in crossings:
                        above = scans[vl][res] > scans[cl][res]
                        crossovers.append({"resolution": res, "macs": scans[vl][res], "label": f"{vl} {'>' if above else '<'} {cl}"})
                    first = crossings[0]
                    more = scans[vl][first] > scans[cl][first]
                    lines.append(
                        f"{vl} vs {cl}: the curves cross between {first - step} and {first} px; from {first} px "
                        f"(first multiple of {step} scanned) {vl} needs {'more' if more else 'fewer'} MACs "
                        f"({md.count(scans[vl][first])} vs {md.count(scans[cl][first])}). Ratio {at}."
                    )
                else:
                    always_more = diffs[0][1] > 0
                    lines.append(
                        f"{vl} vs {cl}: no crossover between {common[0]} and {common[-1]} px: {vl} needs "
                        f"{'more' if always_more else 'fewer'} MACs at every resolution scanned "
                        f"(ratio at least {lo_ratio:.3g}x, at {lo_at} px; {at})."
                    )
        for line in lines:
            if line.startswith(("vit-b/16 vs resnet50", "vit-b/16 vs")) or len(lines) <= 4:
                self.conclude("Resolution: " + line)
        note = f"scan: multiples of {step} px from {grid[0]} to {grid[-1]}"
        for v in vits:
            for c in cnns:
                vl, cl = str(v[0]["model"]), str(c[0]["model"])
                if not any(x["label"].startswith(f"{vl} ") and x["label"].endswith(f" {cl}") for x in crossovers):
                    common = [res for res in grid if res in scans[vl] and res in scans[cl]]
                    low = min(scans[vl][res] / scans[cl][res] for res in common)
                    high = max(scans[vl][res] / scans[cl][res] for res in common)
                    relation = f">= {low:.3g}x" if low > 1 else f"<= {high:.3g}x"
                    note += f"\nno crossover: {vl} / {cl} {relation} everywhere"
        self.plot(
            "resolution.png", lambda p: plots.resolution(curves, points, crossovers, p, note),
            "MACs vs resolution, ViT against CNN",
            "MACs per image (log scale; FLOPs = 2 x MACs) against square input resolution, from the analytic model "
            f"({note.splitlines()[0]}); dots are the sweep's rows. Dotted vertical lines mark where a ViT curve crosses a CNN curve. "
            "A ViT's MACs grow with n = (H/P)^2 tokens linearly (projections, MLP) and quadratically (attention); "
            "a CNN's grow with H x W.",
        )
        self.doc.bullets(lines)
        rows = []
        for g in vits + cnns:
            for r in g:
                rows.append({"model": r["model"], "img_size": r["img_size"], "tokens": r.get("tokens"), "params": r["params"], "macs": r["macs_img"]})
        self.table("resolution", rows, [("model", "model"), ("img_size", "resolution (px)"), ("tokens", "tokens"), ("params", "params"), ("macs", "MACs/image")])
        return True

    # 3. attention share
    def section_attention(self) -> bool:
        vit_rows = [r for r in self.analytic if r.get("kind") == "vit" and r.get("tokens")]
        if not vit_rows:
            return False
        from vitbench.analytic import complexity
        from vitbench.reporting import plots

        families: dict[tuple[int, int, int], dict[str, Any]] = {}
        for r in sorted(vit_rows, key=lambda x: -x["macs_img"]):
            spec = _spec(r)
            if spec is None:
                continue
            families.setdefault((spec.embed_dim, spec.mlp_hidden, spec.num_heads), {"spec": spec, "row": r})
        # Keep the curves readable: the widest families with the most rows, at most four.
        counts: dict[tuple[int, int, int], int] = {}
        for r in vit_rows:
            spec = _spec(r)
            if spec is not None:
                k = (spec.embed_dim, spec.mlp_hidden, spec.num_heads)
                counts[k] = counts.get(k, 0) + 1
        chosen = sorted(families, key=lambda k: (-counts.get(k, 0), -k[0]))[:4]
        curves, thresholds, lines = [], [], []
        for k in sorted(chosen, key=lambda k: k[0]):
            spec, row = families[k]["spec"], families[k]["row"]
            d, m, h = k
            n_star, closed = attention_linear_crossover(d, h, m)
            p = spec.patch_size
            xs, ys = [], []
            side = 1
            while True:
                s = _resize(spec, side * p)
                c = complexity(s)
                xs.append(s.tokens)
                ys.append(c.attention_matmul_share)
                if s.tokens > 4 * n_star:
                    break
                side = max(side + 1, int(side * 1.15))
            label = f"{_family(row)} (d={d}, m={m}), P={p}"
            curves.append(plots.Series(label, xs, ys))
            thresholds.append({"tokens": n_star, "label": f"d={d}, m={m}"})
            res = _resolution_for_tokens(spec, n_star)
            at224 = None
            if spec.img_size == (224, 224):
                at224 = complexity(spec).attention_matmul_share
            line = (
                f"{_family(row)} (d={d}, m={m}): the attention matmuls (2 n^2 d MACs per layer) exceed the linear layers "
                f"(n d (4d + 2m) per layer) from n = {n_star:,} tokens on (search of the analytic per-layer formulas; "
                f"closed form: equal at n = 2d + m = {closed:,})"
                + (f"; with {p} px patches that is a {res} x {res} px image" if res else "")
                + (f"; at 224 px (n = {spec.tokens}) they are {md.pct(at224)} of all MACs" if at224 is not None else "")
                + "."
            )
            lines.append(line)
            self.conclude("Attention vs linear layers: " + line)
        points = [plots.Series("sweep rows", [r["tokens"] for r in vit_rows], [r["attn_matmul_share"] for r in vit_rows])]
        self.plot(
            "attention_share.png", lambda p: plots.attention_share(curves, points, thresholds, p),
            "Attention share of MACs vs token count",
            "Share of all MACs spent in the attention matmuls Q K^T and A V (2 n^2 d per layer) against the token count n, "
            "from the analytic model (lines: each family at growing resolution) and the sweep's rows (dots). Dotted lines: "
            "the n at which the attention matmuls equal the linear layers n d (4d + 2m), i.e. n = 2d + m.",
        )
        self.doc.bullets(lines)
        return True

    # 4. source: notebook patch-size study
    def section_notebook_patch(self) -> bool:
        rows = []
        for p, (params_ref, fvcore_ref, attn_ref) in NOTEBOOK_PATCH.items():
            r = self.row_for("cifar-vit/4", patch_size=p)
            if r is None:
                continue
            depth = 6
            attn = sum(_num(r.get(f"macs_{c}")) or 0 for c in ("qkv", "attn_scores", "attn_values", "attn_proj")) / depth / (r.get("batch_size") or 1)
            fv = _per_image(r, "fvcore_flops")
            rows.append({
                "patch_size": p, "tokens": r["tokens"], "params": r["params"], "params_ref": params_ref,
                "attn_layer": attn, "attn_layer_ref": attn_ref, "fvcore_flops": fv, "fvcore_ref": fvcore_ref,
                "macs": r["macs_img"],
                "fvcore_diff": f"{100 * (fv - fvcore_ref) / fvcore_ref:+.2f}%" if fv is not None else "",
                "attn_diff": f"{100 * (attn - attn_ref) / attn_ref:+.1f}%",
            })
        if not rows:
            return False
        self.doc.add(
            "The notebook's \"Complexity Report\" and its printed fvcore summaries, beside ours. Its \"Attention "
            "FLOPs/Layer\" is the attention module's fvcore count: qkv (3 n d^2) + scores (n^2 d) + values (n^2 d) + "
            "projection (n d^2), in MACs (fvcore's \"flop\" is a MAC). Its fvcore totals count MACs plus LayerNorm at "
            "5 per element; vitbench's fvcore path (`fvcore_flops`) reproduces them to the unit."
        )
        self.table("notebook_patch_size", rows, [
            ("patch_size", "P"), ("tokens", "tokens"), ("params", "params (ours)"), ("params_ref", "params (notebook)"),
            ("attn_layer", "attention MACs/layer (ours)"), ("attn_layer_ref", "attention/layer (notebook)"), ("attn_diff", "diff"),
            ("macs", "analytic MACs"), ("fvcore_flops", "fvcore #flops (ours)"), ("fvcore_ref", "fvcore #flops (notebook)"), ("fvcore_diff", "diff"),
        ])
        same = sum(1 for r in rows if r["params"] == r["params_ref"])
        exact_fvcore = sum(1 for r in rows if r["fvcore_flops"] == r["fvcore_ref"])
        self.conclude(
            f"Notebook patch study: our exact parameter counts equal the notebook's printed ones for {same} of {len(rows)} "
            f"patch sizes, and our fvcore totals (MACs + LayerNorm at 5 per element) equal its printed #flops to the unit "
            f"for {exact_fvcore} of {len(rows)}; attention-module MACs per layer differ from its table by "
            f"{', '.join(r['attn_diff'] for r in rows)} (the table rounds to 0.1 M)."
        )
        return True

    # 5. ablation
    def section_ablation(self) -> bool:
        base = self.row_for("ablation-vit")
        variants = [(name, self.row_for(name)) for name in ABLATION_CHANGES]
        variants = [(n, r) for n, r in variants if r is not None]
        if base is None or len(variants) < 2:
            return False
        rows = []
        for name, r in variants:
            rows.append({
                "model": name, "change": ABLATION_CHANGES[name], "tokens": r["tokens"], "params": r["params"],
                "params_delta": r["params"] - base["params"], "macs": r["macs_img"], "macs_delta": r["macs_img"] - base["macs_img"],
            })
        self.table("ablation", rows, [
            ("model", "variant"), ("change", "change"), ("tokens", "tokens"), ("params", "params"),
            ("params_delta", "params vs baseline"), ("macs", "MACs/image"), ("macs_delta", "MACs vs baseline"),
        ])
        diffs = "; ".join(f"{r['model']}: {r['params_delta']:+,} params, {int(r['macs_delta']):+,} MACs" for r in rows if r["model"] != "ablation-vit")
        self.conclude(
            f"Ablation variants (baseline {md.count(base['params'])} params, {md.count(base['macs_img'])} MACs/image): {diffs}. "
            "Position embeddings cost parameters (n d for learned 1-D, (H/P + W/P) d/2 for 2-D) but no MACs; "
            "mean pooling removes the CLS token, so every layer processes one token fewer."
        )
        return True

    # 6. chapter resolution table
    def section_chapter_resolution(self) -> bool:
        rows = []
        for res, (resnet_ref, vit_ref) in CHAPTER_RESOLUTION.items():
            v, c = self.row_for("vit-b/16", img_size=res), self.row_for("resnet50", img_size=res)
            if v is None or c is None:
                continue
            rows.append({
                "img_size": res, "vit_macs": v["macs_img"], "vit_ref": vit_ref, "resnet_macs": c["macs_img"],
                "resnet_ref": resnet_ref, "ratio": md.ratio(v["macs_img"], c["macs_img"]),
                "ratio_ref": md.ratio(vit_ref, resnet_ref),
            })
        if not rows:
            return False
        self.doc.add(
            "The chapter's table is labelled \"GFLOPs\". Beside it, our exact MACs (FLOPs = 2 x MACs): "
            "compare the chapter's numbers with ours to see which convention they follow."
        )
        self.table("chapter_resolution", rows, [
            ("img_size", "resolution (px)"), ("vit_macs", "ViT-B/16 MACs (ours)"), ("vit_ref", "ViT-Base (chapter)"),
            ("resnet_macs", "ResNet-50 MACs (ours)"), ("resnet_ref", "ResNet-50 (chapter)"),
            ("ratio", "ViT/ResNet (ours)"), ("ratio_ref", "ViT/ResNet (chapter)"),
        ])
        resnet = ", ".join(f"{r['resnet_macs'] / r['resnet_ref']:.3f}" for r in rows)
        vit = ", ".join(f"{r['vit_macs'] / r['vit_ref']:.2f}" for r in rows)
        self.conclude(
            f"Chapter's ViT-B vs ResNet-50 table ({', '.join(str(r['img_size']) for r in rows)} px): our ResNet-50 MACs / "
            f"its figures = {resnet}; our ViT-B/16 MACs / its figures = {vit}; ViT-B/16 / ResNet-50 MACs = "
            f"{', '.join(r['ratio'] for r in rows)} (the chapter's: {', '.join(r['ratio_ref'] for r in rows)})."
        )
        return True

    # 7. variants
    def section_variants(self) -> bool:
        rows = []
        for size, ref in TUTORIAL_PARAMS.items():
            for p in (8, 16, 32):
                r = self.row_for(f"vit-{size}/{p}")
                if r is None:
                    continue
                spec = _spec(r)
                rows.append({
                    "model": f"vit-{size}/{p}", "size": size, "embed_dim": spec.embed_dim, "depth": spec.depth,
                    "heads": spec.num_heads, "mlp": spec.mlp_hidden, "tokens": r["tokens"], "params": r["params"],
                    "params_ref": ref, "params_diff": f"{100 * (r['params'] - ref) / ref:+.1f}%", "macs": r["macs_img"],
                })
        if len(rows) < 3:
            return False
        from vitbench.reporting import plots

        self.table("variants", rows, [
            ("model", "model"), ("embed_dim", "d"), ("depth", "layers"), ("heads", "heads"), ("mlp", "MLP m"),
            ("tokens", "tokens @224"), ("params", "params (ours)"), ("params_ref", "params (tutorial)"),
            ("params_diff", "diff"), ("macs", "MACs/image @224"),
        ])
        groups = {s: i for i, s in enumerate(TUTORIAL_PARAMS)}
        points = [{"label": r["model"], "params": r["params"], "macs": r["macs"], "group": groups[r["size"]]} for r in rows]
        self.plot(
            "variants.png", lambda p: plots.variants(points, p), "ViT variants: parameters vs MACs",
            "Exact parameters against MACs per image at 224 px (log-log; FLOPs = 2 x MACs) for the tutorial's ViT sizes; "
            "within a size, smaller patches multiply MACs (more tokens) at nearly constant parameters.",
        )
        worst = max(rows, key=lambda r: abs(r["params"] - r["params_ref"]) / r["params_ref"])
        spread = []
        for size in TUTORIAL_PARAMS:
            members = [r for r in rows if r["size"] == size]
            if len(members) >= 2:
                lo, hi = min(r["params"] for r in members), max(r["params"] for r in members)
                spread.append(f"ViT-{size.upper()} {md.count(hi - lo).split(' (')[0]}")
        macs_span = []
        for size in TUTORIAL_PARAMS:
            m8, m32 = next((r for r in rows if r["model"] == f"vit-{size}/8"), None), next((r for r in rows if r["model"] == f"vit-{size}/32"), None)
            if m8 and m32:
                macs_span.append(f"ViT-{size.upper()} {md.ratio(m8['macs'], m32['macs'])}")
        self.conclude(
            f"ViT variants at 224 px: our exact parameters differ from the tutorial's rounded figures by at most "
            f"{worst['params_diff']} ({worst['model']}: {md.count(worst['params'])} vs {md.si(worst['params_ref'])}). "
            f"The tutorial gives one figure per size, but parameters vary with the patch (patch embedding 3 P^2 d, "
            f"positions n d): spread across /8../32 {', '.join(spread)}. "
            + (f"MACs from /32 to /8: {', '.join(macs_span)}." if macs_span else "")
        )
        return True

    # 8. agreement
    def section_agreement(self) -> bool:
        rows = [r for r in self.records if r.get("status") == "ok" and (r.get("fvcore_macs") is not None or r.get("dispatch_macs") is not None)]
        if not rows:
            return False
        seen, table_rows = set(), []
        agree = 0
        for r in rows:
            key = (r.get("spec_key"), r.get("batch_size"))
            if key in seen:
                continue
            seen.add(key)
            counted = [_num(r.get(k)) for k in ("fvcore_macs", "dispatch_macs") if _num(r.get(k)) is not None]
            ok = all(c == r["macs"] for c in counted)
            agree += ok
            table_rows.append({
                "model": r["model"], "overrides": r.get("overrides") or "", "batch_size": r.get("batch_size"),
                "macs": r["macs"], "fvcore_macs": r.get("fvcore_macs"), "dispatch_macs": r.get("dispatch_macs"),
                "agree": "yes" if ok else "NO", "fvcore_flops": r.get("fvcore_flops"),
            })
        self.doc.add(
            "Analytic MACs (closed-form formulas) against two independent traced counts of the built nn.Module: fvcore "
            "(its \"flop\" is a MAC) and torch's dispatch-level FlopCounterMode (divided by 2 to give MACs). "
            "`fvcore_flops` is fvcore's own total including the element-wise ops it counts."
        )
        self.table("agreement", table_rows, [
            ("model", "model"), ("overrides", "overrides"), ("batch_size", "batch"), ("macs", "analytic MACs"),
            ("fvcore_macs", "fvcore MACs"), ("dispatch_macs", "dispatch MACs"), ("agree", "agree"),
        ])
        self.conclude(f"Counter agreement: analytic, fvcore and dispatch MACs agree exactly for {agree} of {len(table_rows)} configurations counted.")
        return True

    # 9. measured
    def measured_rows(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("status") == "ok" and _num(r.get("throughput_img_s")) is not None]

    def section_measured(self) -> bool:
        rows = self.measured_rows()
        if not rows:
            return False
        from vitbench.reporting import plots

        series_key = lambda r: (str(r["model"]), str(r.get("overrides") or ""), str(r.get("mode")), str(r.get("precision")), str(r.get("device")))  # noqa: E731
        groups: dict[tuple, list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault(series_key(r), []).append(r)
        throughput, memory, lines = [], [], []
        for key, g in sorted(groups.items(), key=lambda kv: (kv[0][2], kv[0][0])):
            g = sorted(g, key=lambda r: r["batch_size"])
            label = f"{key[0]}{' ' + key[1] if key[1] else ''} {key[2]} {key[3]}"
            style = "-" if key[2] == "infer" else "--"
            throughput.append(plots.Series(label, [r["batch_size"] for r in g], [r["throughput_img_s"] for r in g], style))
            mem = [(r["batch_size"], _num(r.get("peak_memory_bytes"))) for r in g if _num(r.get("peak_memory_bytes"))]
            if mem:
                memory.append(plots.Series(label, [m[0] for m in mem], [m[1] for m in mem], style))
            if len(g) >= 2:
                first, last = g[0], g[-1]
                text = (
                    f"{label}: {first['throughput_img_s']:.4g} img/s at batch {first['batch_size']} -> "
                    f"{last['throughput_img_s']:.4g} img/s at batch {last['batch_size']} ({md.ratio(last['throughput_img_s'], first['throughput_img_s'])})"
                )
                if len(mem) >= 2:
                    slope, intercept = _fit([m[0] for m in mem], [m[1] for m in mem])
                    text += f"; peak memory ~ {md.cell('x_bytes', intercept)} + {md.cell('x_bytes', slope)} per image (least squares)"
                lines.append(text)
        self.plot(
            "throughput_vs_batch.png",
            lambda p: plots.by_batch(throughput, p, "throughput (images/s)", "Measured throughput vs batch size (solid: infer, dashed: train)"),
            "Measured throughput vs batch size",
            "Median throughput (images per second; train = forward + backward + optimizer step) against batch size, "
            "log-log. Environment above.",
        )
        if memory:
            self.plot(
                "peak_memory_vs_batch.png",
                lambda p: plots.by_batch(memory, p, "peak memory (MiB)", "Measured peak memory vs batch size", scale=2**20),
                "Measured peak memory vs batch size",
                "Peak memory of one step in MiB (2^20 bytes), as measured by vitbench.measure (separate memory pass), "
                "against batch size.",
            )
        table_rows = []
        for r in sorted(rows, key=lambda r: (str(r.get("mode")), str(r["model"]), r["batch_size"])):
            table_rows.append({
                "model": r["model"], "mode": r.get("mode"), "precision": r.get("precision"), "batch_size": r["batch_size"],
                "macs_img": _per_image(r), "throughput_img_s": r["throughput_img_s"], "latency_p50_s": r.get("latency_p50_s"),
                "latency_iqr_s": r.get("latency_iqr_s"), "n_samples": r.get("n_samples"), "peak_memory_bytes": r.get("peak_memory_bytes"),
                "achieved_macs_per_s": _achieved(r),
                # shortened for the table; the full text (with advice) is in results.csv
                "warnings": _shorten(str(r.get("warnings") or ""), 70),
            })
        self.doc.bullets(lines)
        self.table("measured", table_rows, [
            ("model", "model"), ("mode", "mode"), ("precision", "precision"), ("batch_size", "batch"),
            ("macs_img", "MACs/image (fwd)"), ("throughput_img_s", "img/s"), ("latency_p50_s", "latency p50"),
            ("latency_iqr_s", "IQR"), ("n_samples", "samples"), ("peak_memory_bytes", "peak memory"),
            ("achieved_macs_per_s", "achieved MAC/s (fwd, infer)"), ("warnings", "warnings"),
        ])
        infer = [r for r in table_rows if r["mode"] == "infer" and r["achieved_macs_per_s"]]
        if infer:
            best = max(infer, key=lambda r: r["achieved_macs_per_s"])
            worst = min(infer, key=lambda r: r["achieved_macs_per_s"])
            self.conclude(
                f"Measured (inference): the CPU sustains from {md.si(worst['achieved_macs_per_s'])}MAC/s ({worst['model']}, batch "
                f"{worst['batch_size']}) to {md.si(best['achieved_macs_per_s'])}MAC/s ({best['model']}, batch {best['batch_size']}): MACs "
                "alone do not predict speed across architectures and batch sizes."
            )
        unstable = [r for r in rows if "unstable" in str(r.get("warnings") or "")]
        if unstable:
            self.conclude(
                f"Measured timings: {len(unstable)} of {len(rows)} measured rows carry an instability warning "
                "(spread of the timed steps above 10%, see the warnings column): compare them with care."
            )
        pairs = self.measured_pairs(rows)
        if pairs:
            self.doc.add("Measured pairs (same device, mode, precision and batch): MACs ratio against measured throughput ratio.")
            self.doc.bullets(pairs)
            for line in pairs:
                self.conclude("Measured: " + line + ".")
        else:
            for line in lines[:3]:
                self.conclude("Measured: " + line + ".")
        return True

    def measured_pairs(self, rows: list[dict[str, Any]]) -> list[str]:
        """Pairs the source documents compare, where both were measured under equal settings."""
        index: dict[tuple, dict[str, Any]] = {}
        for r in rows:
            if not r.get("overrides") or r.get("overrides") in ("", None):
                index.setdefault((str(r["model"]), r.get("mode"), r.get("precision"), r.get("device"), r["batch_size"]), r)
        out = []
        for a, b in MEASURED_PAIRS:
            keys = sorted({k[1:] for k in index if k[0] == a and (b, *k[1:]) in index}, key=lambda k: (str(k[0]), -k[3]))
            for mode in sorted({k[0] for k in keys}):
                k = next(k for k in keys if k[0] == mode)  # the largest common batch
                ra, rb = index[(a, *k)], index[(b, *k)]
                macs = _per_image(ra) / _per_image(rb)
                speed = ra["throughput_img_s"] / rb["throughput_img_s"]
                out.append(
                    f"{a} vs {b} ({mode}, batch {k[3]}): {macs:.3g}x the MACs per image, {speed:.3g}x the throughput "
                    f"({ra['throughput_img_s']:.4g} vs {rb['throughput_img_s']:.4g} img/s)"
                )
        return out

    # 10. predicted vs measured memory
    def section_memory(self) -> bool:
        rows = [
            r for r in self.measured_rows()
            if _num(r.get("pred_peak_memory_bytes")) and _num(r.get("peak_memory_bytes"))
        ]
        if not rows:
            return False
        from vitbench.reporting import plots

        series = []
        for mode in sorted({str(r.get("mode")) for r in rows}):
            sub = [r for r in rows if str(r.get("mode")) == mode]
            series.append(plots.Series(f"{mode}", [r["pred_peak_memory_bytes"] for r in sub], [r["peak_memory_bytes"] for r in sub]))
        self.plot(
            "memory_predicted_vs_measured.png", lambda p: plots.predicted_vs_measured(series, p),
            "Predicted vs measured peak memory",
            "Measured peak memory of one step against the analytic prediction (vitbench.analytic.memory), MiB (2^20 bytes), "
            "log-log; the dashed line is measured = predicted.",
        )
        table_rows, lines = [], []
        for mode in sorted({str(r.get("mode")) for r in rows}):
            sub = [r for r in rows if str(r.get("mode")) == mode]
            ratios = [r["peak_memory_bytes"] / r["pred_peak_memory_bytes"] for r in sub]
            lines.append(
                f"{mode}: measured / predicted peak memory median {statistics.median(ratios):.3f} "
                f"(range {min(ratios):.3f} to {max(ratios):.3f}) over {len(sub)} configurations"
            )
        for r in sorted(rows, key=lambda r: (str(r.get("mode")), str(r["model"]), r["batch_size"])):
            table_rows.append({
                "model": r["model"], "mode": r.get("mode"), "batch_size": r["batch_size"],
                "pred_peak_memory_bytes": r["pred_peak_memory_bytes"], "peak_memory_bytes": r["peak_memory_bytes"],
                "ratio": f"{r['peak_memory_bytes'] / r['pred_peak_memory_bytes']:.3g}",
                "pred_activations_bytes": r.get("pred_activations_bytes"), "mem_activations_bytes": r.get("mem_activations_bytes"),
            })
        self.doc.bullets(lines)
        self.table("memory_predicted_vs_measured", table_rows, [
            ("model", "model"), ("mode", "mode"), ("batch_size", "batch"), ("pred_peak_memory_bytes", "predicted peak"),
            ("peak_memory_bytes", "measured peak"), ("ratio", "measured/predicted"),
            ("pred_activations_bytes", "predicted activations"), ("mem_activations_bytes", "measured activations"),
        ])
        for line in lines:
            self.conclude("Memory model: " + line + ".")
        return True

    def section_failures(self) -> bool:
        rows = [r for r in self.records if r.get("status") != "ok"]
        if not rows:
            return False
        self.doc.add("Failed and invalid configurations are rows like any other; the sweep went on past them.")
        self.table("failures", rows, [
            ("model", "model"), ("overrides", "overrides"), ("batch_size", "batch"), ("mode", "mode"),
            ("status", "status"), ("error", "error"),
        ])
        return True

    def section_all(self) -> bool:
        if not self.analytic:
            return False
        rows = sorted(self.analytic, key=lambda r: (str(r.get("study") or ""), _num(r.get("index")) or 0))
        self.doc.add("Every distinct configuration's analytic counts (one row per spec; all rows and columns are in results.csv).")
        self.table("configurations", rows, [
            ("study", "study"), ("model", "model"), ("overrides", "overrides"), ("img_size", "resolution"),
            ("patch_size", "P"), ("tokens", "tokens"), ("params", "params"), ("macs_img", "MACs/image"),
            ("attn_matmul_share", "attention matmul share"),
        ])
        return True


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares line y = a x + b: (a, b)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return slope, my - slope * mx


def _achieved(record: dict[str, Any]) -> float | None:
    """Forward MACs per second in inference: MACs per image x images per second."""
    if record.get("mode") != "infer":
        return None
    macs, rate = _per_image(record), _num(record.get("throughput_img_s"))
    return macs * rate if macs and rate else None


def render(
    records: Sequence[dict[str, Any]], sidecar: dict[str, Any], out: str | os.PathLike, *,
    command: str, sweep_result: Any = None,
) -> ReportResult:
    """Write report.md, tables/*.csv and the PNG plots for ``records`` into ``out``."""
    from vitbench.results import atomic_write_text

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    builder = _Report(list(records), sidecar, out, command)
    text = builder.build()
    path = out / "report.md"
    atomic_write_text(path, text)
    return ReportResult(
        out=out, report=path, plots=builder.plots, tables=builder.tables, conclusions=builder.conclusions,
        rows=len(records), sweep=sweep_result,
    )


__all__ = ["report", "render", "ReportResult", "attention_linear_crossover"]
