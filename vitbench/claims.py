"""Audit the source documents' numerical claims against vitbench's own numbers.

The claims live in ``vitbench/data/claims.yaml`` (data, not code). ``audit()`` recomputes each
one with vitbench's analytic model (parameters, MACs, memory formulas), optionally beside the
counts of the built ``nn.Module`` and the tracing counters, and gives a verdict:

    holds             the stated figure equals the recomputed one at the stated precision
    off               it does not, by the reported percentage, and no other reading explains it
    wrong convention  it matches a different reading of the same quantity: MACs labelled FLOPs,
                      MiB labelled MB, the attention matmuls without the projections, the patches
                      without the CLS token, ... (the record says which, and the right figure)
    needs a GPU       a measured quantity (throughput) and no CUDA device, or measuring not asked
    not checkable     vitbench has no model for it; the catalogue gives the reason
    error             recomputing failed (a bug or a missing module); the message says why

Conventions: a MAC is one multiply-accumulate; FLOPs = 2 x MACs. fvcore's "flop" is a MAC, plus
5 per LayerNorm element (its norm handle). MB = 10^6 bytes, MiB = 2^20 bytes (GB, GiB alike).

Tolerance: a figure holds when it is within half a unit of its last stated digit of the
recomputed value ("86M" +-0.5 M); hedged figures (``approx``) get a full unit, capped at 10% of
the figure (never less than half a unit). A figure matches an alternative reading within
max(that tolerance, 2% of the alternative). A catalogue ``tolerance`` (relative) overrides this.
"""

from __future__ import annotations

import ast
import difflib
import itertools
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vitbench.errors import VitbenchError
from vitbench.results import Records

CATALOGUE = Path(__file__).parent / "data" / "claims.yaml"

VERDICTS = ("holds", "off", "wrong convention", "needs a GPU", "not checkable", "error")
CONVENTIONS = ("count", "macs", "flops", "fvcore-flops", "bytes", "ratio", "img_per_s")
#: The share of an alternative reading's value a stated figure may differ by and still match it.
ALTERNATIVE_SLACK = 0.02
#: Hedged figures get a full unit of their last digit, but no more than this share of the figure.
APPROX_CAP = 0.10


class CatalogueError(VitbenchError):
    """A malformed claims catalogue: names the claim, the field and the bad value."""

    def __init__(self, where: str, field_name: str, value: object, reason: str):
        prefix = f"{field_name}={value!r}: "
        reason = reason[len(prefix):] if reason.startswith(prefix) else reason
        self.where, self.field, self.value, self.reason = where, field_name, value, reason
        super().__init__(f"{where}: {prefix}{reason}")


class UnknownClaimError(VitbenchError):
    def __init__(self, name: str, suggestions: list[str]):
        hint = f"; did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"claim={name!r}: unknown claim id{hint} (list them: `vitbench audit --no-counted`)")


# --- the stated figure ---------------------------------------------------------------------------
_PREFIXES = {
    "": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "thousand": 1e3, "million": 1e6, "billion": 1e9,
}
_BYTE_UNITS = {
    "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
}
#: The same unit in the other base: what a document means when it writes MB but computed MiB.
_OTHER_BASE = {"KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB", "KiB": "KB", "MiB": "MB", "GiB": "GB", "TiB": "TB"}
_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_TEXT = re.compile(
    rf"^(?P<bound>over|more than|under|less than)?\s*(?P<a>{_NUMBER})"
    rf"(?:\s*(?:-|–|to)\s*(?P<b>{_NUMBER}))?(?P<space>\s*)(?P<unit>.*?)\s*$"
)
_BOUNDS = {"over": ">", "more than": ">", "under": "<", "less than": "<"}


@dataclass(frozen=True)
class Stated:
    """A figure as the document writes it, parsed: value(s) in base units and its precision."""

    text: str
    low: float
    high: float  # == low unless a range
    bound: str | None  # '>' or '<' for "over 600 MB"
    scale: float  # base units per displayed unit (1e6 for "M" or "MB")
    prefix: str  # display prefix as written ("M", " million", "")
    unit: str  # "FLOPs", "MACs", "MB", "×", "img/s", ""
    kind: str  # compute | bytes | ratio | throughput | count
    decimals: int
    resolution: float  # one unit of the last stated digit, in base units

    @property
    def value(self) -> float | tuple[float, float]:
        return self.low if self.low == self.high else (self.low, self.high)

    @property
    def is_range(self) -> bool:
        return self.low != self.high


def parse_stated(text: str) -> Stated:
    """'17.5 GFLOPs' -> 17.5e9 FLOPs at a resolution of 0.1e9; '8-10 GB' -> a range; 'over 600 MB'
    -> a bound. Decimals are significant ('16.0 MB' has a resolution of 0.1 MB), and so are an
    integer's digits, except whole comma groups of zeros ('86,527,000' and '4,000' have 1000)."""
    match = _TEXT.match(text.strip())
    if not match:
        raise ValueError(f"not a figure: {text!r}")
    unit_text = match["unit"]
    kind, unit, prefix, scale = "count", "", "", 1.0
    if unit_text in ("×", "x"):
        kind, unit = "ratio", "×"
    elif unit_text == "img/s":
        kind, unit = "throughput", " img/s"
    elif unit_text in _BYTE_UNITS:
        kind, unit, scale = "bytes", unit_text, float(_BYTE_UNITS[unit_text])
    else:
        unit_match = re.fullmatch(r"(K|M|G|T|thousand|million|billion)?\s*(FLOPs|MACs)?", unit_text)
        if not unit_match:
            raise ValueError(f"unknown unit {unit_text!r} in {text!r}")
        prefix_word, word = unit_match.groups()
        scale = float(_PREFIXES[prefix_word or ""])
        prefix = (" " if prefix_word and len(prefix_word) > 1 else "") + (prefix_word or "")
        if word:
            kind, unit = "compute", word
    numbers = [match["a"]] + ([match["b"]] if match["b"] else [])
    values = [float(n.replace(",", "")) * scale for n in numbers]
    last = numbers[-1].replace(",", "")
    if "." in last:
        decimals = len(last.split(".")[1])
        resolution = 10.0 ** -decimals * scale
    else:
        decimals = 0
        groups = numbers[-1].split(",")
        zero_groups = len(groups) - len(list(itertools.dropwhile(lambda g: set(g) == {"0"}, reversed(groups))))
        resolution = 1000.0**zero_groups * scale
    if kind in ("bytes", "ratio", "throughput"):
        prefix = ""
    if match["space"] and kind == "bytes":
        unit = " " + unit
    elif match["space"] and prefix and not prefix.startswith(" "):
        prefix = " " + prefix
    return Stated(
        text=text, low=min(values), high=max(values), bound=_BOUNDS.get(match["bound"] or ""),
        scale=scale, prefix=prefix, unit=unit, kind=kind, decimals=decimals, resolution=resolution,
    )


# --- what a claim is about -----------------------------------------------------------------------
@dataclass(frozen=True)
class SwinStage:
    """The first stage of a Swin Transformer (Liu et al. 2021): (H/P) x (W/P) tokens of width C,
    attention inside non-overlapping M x M windows. vitbench has no Swin model; the chapter's
    comparison only needs these counts."""

    img_size: int
    patch_size: int
    embed_dim: int
    window: int
    kind = "swin"

    def __post_init__(self) -> None:
        grid = self.img_size // self.patch_size
        if not grid or self.img_size % self.patch_size or grid % self.window:
            raise ValueError(f"window {self.window} does not tile the {grid} x {grid} grid")

    @property
    def tokens(self) -> int:
        """n = (H / P)^2."""
        return (self.img_size // self.patch_size) ** 2

    @property
    def windows(self) -> int:
        """n / M^2."""
        return self.tokens // self.window**2


@dataclass(frozen=True)
class Config:
    """The model (or Swin stage), its overrides and batch size, and the quantity computed."""

    quantity: str
    model: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    batch_size: int = 1
    swin: tuple[tuple[str, int], ...] | None = None

    def spec(self):
        if self.swin is not None:
            return SwinStage(**dict(self.swin))
        from vitbench.presets import resolve

        return resolve(self.model, **dict(self.overrides))

    def describe(self) -> str:
        if self.swin is not None:
            s = dict(self.swin)
            grid = s["img_size"] // s["patch_size"]
            return f"Swin stage 1 at {s['img_size']} px ({grid}x{grid} tokens, C={s['embed_dim']}, M={s['window']})"
        text = self.model or ""
        if self.overrides:
            text += " (" + ", ".join(f"{k}={v}" for k, v in self.overrides) + ")"
        if self.batch_size != 1:
            text += f", batch {self.batch_size}"
        return text


# --- quantities ----------------------------------------------------------------------------------
Alternative = tuple[str, str, float]  # (key, description, value in canonical units)


@dataclass(frozen=True)
class Quantity:
    """One thing a claim can be about. ``value(spec, batch)`` is canonical: counts, MACs (for
    compute: FLOPs are derived), bytes. ``alternatives`` are other readings a document may have
    meant (tested only when the stated figure does not hold)."""

    name: str
    family: str  # count | compute | fvcore | bytes | measured | expression | none
    kinds: tuple[str, ...]
    describe: str
    value: Callable[[Any, int], float]
    alternatives: Callable[[Any, int], list[Alternative]] | None = None
    counted: str | None = None  # 'params' (nn.Module) or a key of vitbench.counters.count()


def _complexity(spec, batch: int):
    from vitbench.analytic import complexity

    return complexity(spec, batch)


def _vit():
    from vitbench.analytic import vit

    return vit


def _no_cls(spec):
    """The same ViT without a CLS token: n = N, the patches alone."""
    return replace(spec, pool="mean") if spec.pool == "cls" else None


def _attention_block_macs(spec) -> int:
    """One layer's attention per image: qkv (3nd^2) + QK^T (n^2 d) + AV (n^2 d) + proj (nd^2)
    = 4nd^2 + 2n^2 d MACs."""
    v = _vit()
    return v.qkv_macs(spec) + v.attn_scores_macs(spec) + v.attn_values_macs(spec) + v.attn_proj_macs(spec)


def _attention_alternatives(per_layer_factor: Callable[[Any], int]):
    """Readings that drop the projections (2n^2 d: the QK^T and AV matmuls), keep only QK^T
    (n^2 d), and/or count the N patches without the CLS token."""

    def alternatives(spec, batch: int) -> list[Alternative]:
        v = _vit()
        out: list[Alternative] = []
        variants = [("", "", spec)]
        no_cls = _no_cls(spec)
        if no_cls is not None:
            variants.append(("/no-cls", f" over the {spec.num_patches} patches without the CLS token", no_cls))
        for suffix, where, s in variants:
            factor = batch * per_layer_factor(s)
            if suffix:
                out.append(("block" + suffix, f"the whole attention layer{where}", factor * _attention_block_macs(s)))
            out.append((
                "matmul-only" + suffix,
                f"QK^T and AV alone (2n^2 d MACs: no q/k/v or output projections){where}",
                factor * v.attention_matmul_macs_per_layer(s),
            ))
            out.append(("qk-only" + suffix, f"QK^T alone (n^2 d MACs){where}", factor * v.attn_scores_macs(s)))
        return out

    return alternatives


def _params_alternatives(spec, batch: int) -> list[Alternative]:
    if spec.kind != "vit":
        return []
    encoder = spec.depth * sum(_vit().block_params(spec).values())
    return [("encoder-only", f"the {spec.depth} encoder blocks alone (no embeddings or head)", encoder)]


def _tokens_alternatives(spec, batch: int) -> list[Alternative]:
    if spec.pool != "cls":
        return []
    return [("no-cls", "the patches without the CLS token", spec.num_patches)]


def _scores_alternatives(spec, batch: int) -> list[Alternative]:
    if spec.pool != "cls":
        return []
    return [("no-cls", f"N^2 with the N = {spec.num_patches} patches alone (no CLS token)", spec.num_patches**2)]


def _classifier_params(spec, batch: int) -> int:
    """d K + K for a ViT; the last linear layer of a CNN."""
    if spec.kind == "vit":
        return spec.embed_dim * spec.num_classes + spec.num_classes
    from vitbench.analytic.cnn import cnn_layers

    return [layer for layer in cnn_layers(spec) if layer.op == "linear"][-1].params


def _layer_macs(spec) -> int:
    """One encoder layer per image: attention (4nd^2 + 2n^2 d) + MLP (2 n d m)."""
    v = _vit()
    return _attention_block_macs(spec) + v.mlp_fc1_macs(spec) + v.mlp_fc2_macs(spec)


def fvcore_flops(spec, batch: int) -> int:
    """fvcore's "flops" of a ViT: every MAC counts one, plus 5 per LayerNorm element (fvcore's
    norm handle): MACs + 5 (2 L n d + d) per image."""
    c = _complexity(spec, batch)
    return c.macs + 5 * c.elementwise_by_kind["layernorm"]


def fvcore_activations(spec, batch: int) -> int:
    """fvcore's activation count of a ViT: output elements of every convolution, linear layer and
    attention matmul, B [N d + L (3nd + h n^2 + nd + nd + n m + nd) + K]: patch projection; qkv,
    scores, AV, output projection, fc1, fc2 per layer; the head on the pooled token."""
    n, d, m = spec.tokens, spec.embed_dim, spec.mlp_hidden
    per_layer = 3 * n * d + spec.num_heads * n * n + n * d + n * d + n * m + n * d
    return batch * (spec.num_patches * d + spec.depth * per_layer + spec.num_classes)


def _memory():
    from vitbench.analytic import memory

    return memory


def _largest_activation_bytes(spec, batch: int) -> int:
    """The largest single output tensor of the network, fp32: 4 B max(elements)."""
    from vitbench.analytic.cnn import cnn_layers

    return 4 * batch * max(layer.out_elements for layer in cnn_layers(spec))


def _omittable(spec, quantity: str) -> dict[str, int]:
    """Parameter components a document may leave out, scaled to the quantity's scope."""
    d = getattr(spec, "embed_dim", 0)
    out = {"head_bias": spec.num_classes}
    if spec.kind != "vit":
        return out
    block = _vit().block_params(spec)
    layers = {"params_block": 1}.get(quantity, spec.depth)
    m = spec.mlp_hidden
    per_block = {
        "norms": block["norms"],
        "qkv_bias": 3 * d if spec.qkv_bias else 0,
        "proj_bias": d,
        "fc1_bias": m,
        "fc2_bias": d,
    }
    out.update({name: layers * value for name, value in per_block.items()})
    out.update({
        "patch_embed_bias": d,
        "cls_token": _vit().cls_token_params(spec),
        "pos_embed": _vit().pos_embed_params(spec),
        "final_norm": 2 * d if spec.final_norm else 0,
    })
    return out


_VIT = ("vit",)
_CNN = ("resnet", "plaincnn")
_ANY = ("vit", "resnet", "plaincnn")
_SWIN = ("swin",)


def _q(name, family, kinds, describe, value, alternatives=None, counted=None) -> Quantity:
    return Quantity(name, family, kinds, describe, value, alternatives, counted)


QUANTITIES: dict[str, Quantity] = {q.name: q for q in (
    # counts
    _q("params", "count", _ANY, "parameters", lambda s, b: _complexity(s, 1).params,
       _params_alternatives, "params"),
    _q("params_block", "count", _VIT, "parameters of one encoder block",
       lambda s, b: sum(_vit().block_params(s).values())),
    _q("params_encoder", "count", _VIT, "parameters of all encoder blocks",
       lambda s, b: s.depth * sum(_vit().block_params(s).values())),
    _q("params_patch_embed", "count", _VIT, "patch-projection parameters (weight and bias)",
       lambda s, b: _vit().patch_embed_params(s)),
    _q("params_pos_embed", "count", _VIT, "position-embedding parameters",
       lambda s, b: _vit().pos_embed_params(s)),
    _q("params_patch_embedding_module", "count", _VIT,
       "patch-embedding module parameters (projection, CLS token, positions)",
       lambda s, b: _vit().patch_embed_params(s) + _vit().cls_token_params(s) + _vit().pos_embed_params(s)),
    _q("params_classifier", "count", _ANY, "classifier parameters (weight and bias)", _classifier_params),
    _q("tokens", "count", _VIT, "sequence length n", lambda s, b: s.tokens, _tokens_alternatives),
    _q("num_patches", "count", _VIT, "patches N", lambda s, b: s.num_patches),
    _q("patch_dim", "count", _VIT, "values per flattened patch (C P^2)", lambda s, b: s.patch_dim),
    _q("attention_scores_per_head", "count", _VIT, "attention scores per head and layer (n^2)",
       lambda s, b: s.tokens**2, _scores_alternatives),
    _q("swin_tokens", "count", _SWIN, "tokens", lambda s, b: s.tokens),
    _q("swin_windows", "count", _SWIN, "windows (n / M^2)", lambda s, b: s.windows),
    _q("swin_window_scores_per_head", "count", _SWIN, "scores per head in one window ((M^2)^2)",
       lambda s, b: s.window**4),
    _q("swin_global_scores_per_head", "count", _SWIN, "scores per head over all tokens (n^2)",
       lambda s, b: s.tokens**2),
    # compute (canonical: MACs)
    _q("macs", "compute", _ANY, "whole-model compute", lambda s, b: _complexity(s, b).macs,
       counted="dispatch_macs"),
    _q("layer_macs", "compute", _VIT, "one encoder layer (4nd^2 + 2n^2 d + 2ndm MACs)",
       lambda s, b: b * _layer_macs(s)),
    _q("encoder_macs", "compute", _VIT, "all encoder layers", lambda s, b: b * s.depth * _layer_macs(s)),
    _q("mlp_macs", "compute", _VIT, "all MLPs (L x 2ndm MACs)",
       lambda s, b: b * s.depth * (_vit().mlp_fc1_macs(s) + _vit().mlp_fc2_macs(s))),
    _q("patch_embed_macs", "compute", _VIT, "patch projection (N d C P^2 MACs)",
       lambda s, b: b * _vit().patch_embed_macs(s)),
    _q("attention_block_macs_per_layer", "compute", _VIT,
       "one attention layer (projections 4nd^2 + QK^T and AV 2n^2 d MACs)",
       lambda s, b: b * _attention_block_macs(s), _attention_alternatives(lambda s: 1)),
    _q("attention_block_macs", "compute", _VIT,
       "all attention layers (L x (4nd^2 + 2n^2 d) MACs)",
       lambda s, b: b * s.depth * _attention_block_macs(s), _attention_alternatives(lambda s: s.depth)),
    _q("swin_global_attention_macs", "compute", _SWIN,
       "one global attention layer (4nC^2 + 2n^2 C MACs, Swin paper Eq. 1)",
       lambda s, b: b * (4 * s.tokens * s.embed_dim**2 + 2 * s.tokens**2 * s.embed_dim),
       lambda s, b: [
           ("matmul-only", "QK^T and AV alone (2n^2 C MACs)", b * 2 * s.tokens**2 * s.embed_dim),
           ("qk-only", "QK^T alone (n^2 C MACs)", b * s.tokens**2 * s.embed_dim)]),
    _q("swin_window_attention_macs", "compute", _SWIN,
       "one window attention layer (4nC^2 + 2M^2 nC MACs, Swin paper Eq. 2)",
       lambda s, b: b * (4 * s.tokens * s.embed_dim**2 + 2 * s.window**2 * s.tokens * s.embed_dim),
       lambda s, b: [
           ("matmul-only", "QK^T and AV alone (2M^2 nC MACs)", b * 2 * s.window**2 * s.tokens * s.embed_dim),
           ("qk-only", "QK^T alone (M^2 nC MACs)", b * s.window**2 * s.tokens * s.embed_dim)]),
    # fvcore's own convention
    _q("fvcore_flops", "fvcore", _VIT, "fvcore flops (MACs + 5 per LayerNorm element)", fvcore_flops,
       lambda s, b: [("macs-only", "the MACs alone, without the LayerNorm count", _complexity(s, b).macs)],
       "fvcore_flops"),
    _q("fvcore_activations", "count", _VIT, "fvcore activations (outputs of convolutions, linears and attention matmuls)", fvcore_activations,
       counted="fvcore_activations"),
    # bytes
    _q("weights_bytes", "bytes", _ANY, "fp32 weights",
       lambda s, b: _memory().memory_estimate(s, 1, mode="infer").weights_bytes),
    _q("weights_and_optimizer_bytes", "bytes", _ANY, "fp32 weights plus AdamW's two moment buffers",
       lambda s, b: (lambda e: e.weights_bytes + e.optimizer_bytes)(
           _memory().memory_estimate(s, b, mode="train", optimizer="adamw"))),
    _q("attention_matrix_bytes_per_layer", "bytes", _VIT, "one layer's attention matrices (B h n^2 x 4 bytes)",
       lambda s, b: _memory().attention_matrix_bytes(s, b)),
    _q("attention_matrix_bytes", "bytes", _VIT, "all layers' attention matrices (L B h n^2 x 4 bytes)",
       lambda s, b: s.depth * _memory().attention_matrix_bytes(s, b)),
    _q("training_peak_memory_bytes", "bytes", _ANY, "predicted peak memory of a training step (fp32, AdamW; vitbench.analytic.memory, CPU operators)",
       lambda s, b: _memory().memory_estimate(s, b, mode="train", optimizer="adamw").peak_bytes),
    _q("inference_peak_memory_bytes", "bytes", _ANY, "predicted peak inference memory (fp32; vitbench.analytic.memory, CPU operators)",
       lambda s, b: _memory().memory_estimate(s, b, mode="infer").peak_bytes),
    _q("largest_activation_bytes", "bytes", _CNN, "largest single fp32 activation",
       _largest_activation_bytes),
    # special
    _q("expression", "expression", (), "the document's own arithmetic", lambda s, b: 0),
    _q("throughput_img_s", "measured", _ANY, "fp32 inference throughput (vitbench.measure)", lambda s, b: 0),
    _q("not_checkable", "none", (), "", lambda s, b: 0),
    _q("ratio", "ratio", (), "", lambda s, b: 0),
)}

#: Document conventions each family accepts.
_FAMILY_CONVENTIONS = {
    "count": ("count",),
    "compute": ("macs", "flops", "fvcore-flops"),
    "fvcore": ("fvcore-flops",),
    "bytes": ("bytes",),
    "ratio": ("ratio",),
    "measured": ("img_per_s",),
    "expression": CONVENTIONS,
    "none": CONVENTIONS + (None,),
}
_TEXT_KIND_CONVENTIONS = {
    "compute": ("macs", "flops", "fvcore-flops"),
    "bytes": ("bytes",),
    "ratio": ("ratio",),
    "throughput": ("img_per_s",),
}
_OMITTABLE = ("head_bias", "norms", "qkv_bias", "proj_bias", "fc1_bias", "fc2_bias",
              "patch_embed_bias", "cls_token", "pos_embed", "final_norm")
_CLAIM_FIELDS = {
    "id", "source", "quote", "model", "swin", "overrides", "batch_size", "quantity", "of",
    "versus", "convention", "stated", "approx", "tolerance", "tolerance_note", "formula", "omits",
    "alternatives", "counted", "reason", "device",
}
_CONFIG_FIELDS = {"model", "swin", "overrides", "batch_size", "of"}


def _factor(convention: str) -> int:
    """Canonical MACs -> the document's convention."""
    return 2 if convention == "flops" else 1


# --- the catalogue -------------------------------------------------------------------------------
@dataclass(frozen=True)
class AlternativeReading:
    describe: str
    target: Config
    versus: Config | None


@dataclass(frozen=True)
class Claim:
    id: str
    file: str
    line: int
    quote: str
    quantity: str
    target: Config | None
    versus: Config | None
    convention: str | None
    stated: Stated
    approx: bool = False
    tolerance: float | None = None
    tolerance_note: str | None = None
    formula: str | None = None
    omits: tuple[str, ...] = ()
    alternatives: tuple[AlternativeReading, ...] = ()
    counted: bool = False
    reason: str | None = None
    device: str | None = None

    @property
    def source(self) -> str:
        return f"{self.file}:{self.line}"


_OPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg,
}


def evaluate_formula(text: str) -> float:
    """A document's arithmetic: numbers, + - * / ** and parentheses only."""

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.operand))
        raise ValueError("only numbers, + - * / ** and parentheses are allowed")

    try:
        return walk(ast.parse(text, mode="eval"))
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression ({exc.msg})") from None


def _config(where: str, raw: dict[str, Any], quantity: str, base: Config | None = None) -> Config:
    """A Config from claim fields; unset fields inherit from ``base``."""
    model = raw.get("model", base.model if base and "swin" not in raw else None)
    swin = raw.get("swin", base.swin if base and "model" not in raw else None)
    overrides = raw.get("overrides", dict(base.overrides) if base else {})
    batch = raw.get("batch_size", base.batch_size if base else 1)
    if model is not None and swin is not None:
        raise CatalogueError(where, "model", model, "give either model or swin, not both")
    if not isinstance(overrides, dict):
        raise CatalogueError(where, "overrides", overrides, "must be a mapping of spec fields")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
        raise CatalogueError(where, "batch_size", batch, "must be a positive integer")
    if isinstance(swin, dict):
        need = {"img_size", "patch_size", "embed_dim", "window"}
        if set(swin) != need or not all(isinstance(v, int) and v > 0 for v in swin.values()):
            raise CatalogueError(where, "swin", swin, f"needs positive integers {', '.join(sorted(need))}")
        swin = tuple(sorted(swin.items()))
    frozen = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in overrides.items())
    config = Config(quantity=quantity, model=model, overrides=frozen, batch_size=batch, swin=swin)
    q = QUANTITIES.get(quantity)
    if q is None:
        known = ", ".join(sorted(k for k, v in QUANTITIES.items() if v.family not in ("ratio", "none")))
        raise CatalogueError(where, "quantity", quantity, f"unknown quantity; known: {known}")
    if q.kinds:
        if model is None and swin is None:
            raise CatalogueError(where, "model", None, f"is required for {quantity}")
        try:
            spec = config.spec()
        except VitbenchError as exc:
            raise CatalogueError(where, "model", model, str(exc)) from None
        except (ValueError, TypeError) as exc:
            raise CatalogueError(where, "swin" if swin else "model", dict(swin) if swin else model, str(exc)) from None
        if spec.kind not in q.kinds:
            raise CatalogueError(where, "quantity", quantity, f"does not apply to a {spec.kind} model ({'/'.join(q.kinds)} only)")
    return config


def _claim(raw: Any, index: int, seen: set[str]) -> Claim:
    where = f"claims[{index}]"
    if not isinstance(raw, dict):
        raise CatalogueError(where, "claim", raw, "must be a mapping")
    cid = raw.get("id")
    if not isinstance(cid, str) or not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", cid):
        raise CatalogueError(where, "id", cid, "must be a lowercase identifier (letters, digits, '.', '-')")
    where = f"claim {cid!r}"
    if cid in seen:
        raise CatalogueError(where, "id", cid, "appears twice")
    seen.add(cid)
    unknown = set(raw) - _CLAIM_FIELDS
    if unknown:
        name = sorted(unknown)[0]
        raise CatalogueError(where, name, raw[name], f"unknown field; fields: {', '.join(sorted(_CLAIM_FIELDS))}")
    for required in ("source", "quote", "quantity", "stated"):
        if required not in raw:
            raise CatalogueError(where, required, None, "is required")
    source = raw["source"]
    match = re.fullmatch(r"(\S+\.txt):(\d+)", source) if isinstance(source, str) else None
    if not match:
        raise CatalogueError(where, "source", source, "must be '<file>.txt:<line>'")
    if not isinstance(raw["quote"], str) or not raw["quote"].strip():
        raise CatalogueError(where, "quote", raw["quote"], "must be a non-empty excerpt")
    stated_raw = raw["stated"]
    if not isinstance(stated_raw, dict) or set(stated_raw) != {"text", "value"}:
        raise CatalogueError(where, "stated", stated_raw, "must be {text: ..., value: ...}")
    try:
        stated = parse_stated(str(stated_raw["text"]))
    except ValueError as exc:
        raise CatalogueError(where, "stated.text", stated_raw["text"], str(exc)) from None
    value = stated_raw["value"]
    values = value if isinstance(value, list) else [value]
    if not values or len(values) > 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise CatalogueError(where, "stated.value", value, "must be a number in base units (or [low, high])")
    expected = [stated.low, stated.high] if stated.is_range else [stated.low]
    if len(values) != len(expected) or not all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(sorted(values), expected)):
        raise CatalogueError(where, "stated.value", value, f"does not match the text {stated.text!r} ({stated.value})")

    quantity = raw["quantity"]
    convention = raw.get("convention")
    target = versus = None
    alternatives: list[AlternativeReading] = []
    if not isinstance(quantity, str) or quantity not in QUANTITIES:
        raise CatalogueError(where, "quantity", quantity, f"unknown quantity; known: {', '.join(QUANTITIES)}")
    family = QUANTITIES[quantity].family
    if family == "ratio":
        if "of" not in raw or "versus" not in raw:
            raise CatalogueError(where, "quantity", quantity, "a ratio needs 'of' (a quantity) and 'versus' (the denominator)")
        target, versus = _ratio_configs(where, raw, raw["versus"])
        for i, alt in enumerate(raw.get("alternatives") or []):
            if not isinstance(alt, dict) or not isinstance(alt.get("describe"), str) or "of" not in alt:
                raise CatalogueError(where, f"alternatives[{i}]", alt, "needs 'describe' and 'of'")
            # The reading inherits the claim's configs; only the quantities (and what it names) change.
            numerator = {**{k: v for k, v in raw.items() if k in _CONFIG_FIELDS}, "of": alt["of"]}
            denominator = {**raw["versus"], "of": alt["of"], **(alt.get("versus") or {})}
            t, v = _ratio_configs(f"{where} alternatives[{i}]", numerator, denominator)
            alternatives.append(AlternativeReading(alt["describe"], t, v))
    elif "of" in raw or "versus" in raw:
        name = "of" if "of" in raw else "versus"
        raise CatalogueError(where, name, raw[name], f"only ratio claims have '{name}'")
    elif family not in ("none", "expression"):
        target = _config(where, raw, quantity)
    elif family == "expression":
        target = _config(where, {k: v for k, v in raw.items() if k in ("model", "overrides", "batch_size")}, quantity)
    if raw.get("alternatives") and family != "ratio":
        raise CatalogueError(where, "alternatives", raw["alternatives"], "only ratio claims take explicit alternatives")

    allowed = _FAMILY_CONVENTIONS[family]
    if convention not in allowed:
        raise CatalogueError(where, "convention", convention, f"must be one of {', '.join(str(c) for c in allowed)} for {quantity}")
    if family != "none" and stated.kind in _TEXT_KIND_CONVENTIONS and convention not in _TEXT_KIND_CONVENTIONS[stated.kind]:
        raise CatalogueError(where, "convention", convention, f"disagrees with the unit of {stated.text!r}")
    if stated.unit.strip() in ("FLOPs", "MACs") and convention != stated.unit.strip().lower():
        raise CatalogueError(where, "convention", convention, f"disagrees with the unit of {stated.text!r}")
    if convention == "bytes" and stated.kind != "bytes":
        raise CatalogueError(where, "stated.text", stated.text, "a bytes figure needs a unit (B, MB, MiB, GB, ...)")

    formula = raw.get("formula")
    if formula is not None:
        try:
            evaluate_formula(str(formula))
        except ValueError as exc:
            raise CatalogueError(where, "formula", formula, str(exc)) from None
    if family == "expression" and formula is None:
        raise CatalogueError(where, "formula", None, "an expression claim needs the document's formula")
    omits = raw.get("omits") or []
    if not isinstance(omits, list) or any(o not in _OMITTABLE for o in omits):
        raise CatalogueError(where, "omits", omits, f"must list components among {', '.join(_OMITTABLE)}")
    if omits and not quantity.startswith("params"):
        raise CatalogueError(where, "omits", omits, "only parameter counts take 'omits'")
    tolerance = raw.get("tolerance")
    if tolerance is not None:
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance < 1:
            raise CatalogueError(where, "tolerance", tolerance, "must be a relative tolerance in (0, 1)")
        if not raw.get("tolerance_note"):
            raise CatalogueError(where, "tolerance_note", None, "say why the precision rule does not apply")
    for flag in ("approx", "counted"):
        if not isinstance(raw.get(flag, False), bool):
            raise CatalogueError(where, flag, raw[flag], "must be true or false")
    if family == "none" and not raw.get("reason"):
        raise CatalogueError(where, "reason", None, "a not_checkable claim needs a reason")
    if family == "measured" and not raw.get("device"):
        raise CatalogueError(where, "device", None, "a measured claim names the device it is about")
    return Claim(
        id=cid, file=match[1], line=int(match[2]), quote=raw["quote"], quantity=quantity,
        target=target, versus=versus, convention=convention, stated=stated,
        approx=raw.get("approx", False), tolerance=tolerance, tolerance_note=raw.get("tolerance_note"),
        formula=formula, omits=tuple(omits), alternatives=tuple(alternatives),
        counted=raw.get("counted", False), reason=raw.get("reason"), device=raw.get("device"),
    )


def _ratio_configs(where: str, raw: dict[str, Any], versus_raw: Any) -> tuple[Config, Config]:
    if not isinstance(versus_raw, dict) or set(versus_raw) - _CONFIG_FIELDS:
        raise CatalogueError(where, "versus", versus_raw, f"must be a mapping of {', '.join(sorted(_CONFIG_FIELDS))}")
    of = raw["of"]
    if QUANTITIES.get(of) is None or QUANTITIES[of].family in ("ratio", "none", "expression", "measured"):
        known = ", ".join(sorted(k for k, v in QUANTITIES.items() if v.family not in ("ratio", "none", "expression", "measured")))
        raise CatalogueError(where, "of", of, f"unknown quantity for a ratio; known: {known}")
    target = _config(where, raw, of)
    denominator = versus_raw.get("of", of)
    if QUANTITIES.get(denominator) is None or QUANTITIES[denominator].family != QUANTITIES[of].family:
        raise CatalogueError(where, "versus.of", denominator, f"must be a quantity of the same family as {of!r}")
    return target, _config(f"{where} versus", versus_raw, denominator, base=target)


def load_catalogue(path: str | Path | None = None) -> list[Claim]:
    """Read and validate a claims file (default: the packaged catalogue)."""
    import yaml

    path = Path(path) if path is not None else CATALOGUE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogueError(str(path), "file", str(path), "no such claims file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogueError(str(path), "file", str(path), f"unreadable ({exc.__class__.__name__})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise CatalogueError(path.name, "yaml", str(path), f"not valid YAML{at}") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise CatalogueError(path.name, "claims", type(data).__name__, "the file needs a top-level 'claims' list")
    if data.get("version") != 1:
        raise CatalogueError(path.name, "version", data.get("version"), "must be 1")
    seen: set[str] = set()
    claims = []
    for index, raw in enumerate(data["claims"]):
        try:
            claims.append(_claim(raw, index, seen))
        except CatalogueError as exc:
            raise CatalogueError(f"{path.name}: {exc.where}", exc.field, exc.value, exc.reason) from None
    return claims


def select(
    claims: Sequence[Claim], ids: Iterable[str] | None = None, source: str | None = None
) -> list[Claim]:
    """Claims by id (in the order asked) and/or by document file prefix; unknown ids are an error."""
    chosen = list(claims)
    if ids:
        by_id = {c.id: c for c in claims}
        chosen = []
        for name in ids:
            if name not in by_id:
                raise UnknownClaimError(name, difflib.get_close_matches(name, by_id, n=3, cutoff=0.5))
            chosen.append(by_id[name])
    if source:
        files = sorted({c.file for c in claims})
        chosen = [c for c in chosen if c.file.startswith(source)]
        if not chosen:
            raise CatalogueError("--source", "source", source, f"matches no claim's document; documents: {', '.join(files)}")
    return chosen


# --- recomputing ---------------------------------------------------------------------------------
@dataclass
class _Cache:
    """Specs, analytic values and traced counts computed once per audit."""

    values: dict[tuple, Any] = field(default_factory=dict)

    def get(self, key: tuple, compute: Callable[[], Any]) -> Any:
        if key not in self.values:
            self.values[key] = compute()
        return self.values[key]


def _value(config: Config, cache: _Cache) -> tuple[float, dict[str, Alternative]]:
    """The canonical value of a config's quantity and its alternative readings by key."""

    def compute():
        q = QUANTITIES[config.quantity]
        spec = config.spec()
        alts = q.alternatives(spec, config.batch_size) if q.alternatives else []
        return q.value(spec, config.batch_size), {a[0]: a for a in alts}

    return cache.get(("value", config), compute)


def _counted(config: Config, cache: _Cache) -> tuple[float | None, str | None, str | None]:
    """(value, counter, warning): the quantity counted on the built module or traced."""
    q = QUANTITIES[config.quantity]
    if q.counted is None:
        return None, None, None
    spec = config.spec()
    try:
        if q.counted == "params":
            def numel():
                from vitbench.models import build_meta

                return sum(p.numel() for p in build_meta(spec).parameters())

            return cache.get(("numel", spec), numel), "nn.Module parameters", None
        counter = "dispatch" if q.counted.startswith("dispatch") else "fvcore"

        def traced():
            from vitbench.counters import count

            return count(spec, batch_size=config.batch_size, counters=(counter,))

        result = cache.get(("count", counter, spec, config.batch_size), traced)
        return result[q.counted], counter, None
    except Exception as exc:  # a missing or failing counter leaves the analytic verdict standing
        return None, None, f"counted value unavailable ({exc.__class__.__name__}: {exc})"


def _tolerance(claim: Claim) -> float:
    """Absolute tolerance in base units (see the module docstring)."""
    stated = claim.stated
    if claim.tolerance is not None:
        return claim.tolerance * max(abs(stated.low), abs(stated.high))
    half = stated.resolution / 2
    if claim.approx:
        return max(half, min(stated.resolution, APPROX_CAP * max(abs(stated.low), 1e-300)))
    return half


def _within(stated: Stated, value: float, tol: float) -> bool:
    eps = 1e-9 * max(abs(value), 1.0)
    if stated.bound == ">":
        return value > stated.low
    if stated.bound == "<":
        return value < stated.low
    return stated.low - tol - eps <= value <= stated.high + tol + eps


def _distance(stated: Stated, value: float) -> float:
    return 0.0 if _within(stated, value, 0.0) else min(abs(value - stated.low), abs(value - stated.high))


def _off_pct(stated: Stated, value: float) -> float:
    """How far the stated figure (its nearest end, for a range) is from the recomputed value, in
    percent of the recomputed value."""
    nearest = min(max(value, stated.low), stated.high)
    if nearest == value:
        nearest = stated.low
    return 100.0 * (nearest - value) / value if value else math.inf


def format_pct(pct: float) -> str:
    """+112%, -0.66% -> '-0.7%', -0.0035% -> '-0.004%'."""
    if math.isinf(pct):
        return "inf%"
    magnitude = abs(pct)
    if magnitude >= 10:
        text = f"{magnitude:.0f}"
    elif magnitude >= 1:
        text = f"{magnitude:.1f}"
    else:
        text = f"{magnitude:.1g}"
    return ("+" if pct > 0 else "-") + text + "%"


def format_like(stated: Stated, value: float, unit: str | None = None) -> str:
    """``value`` (base units) in the unit and a little more than the precision of ``stated``."""
    unit = stated.unit if unit is None else unit
    if stated.kind in ("count", "compute") and stated.scale == 1 and stated.decimals == 0:
        number = f"{round(value):,}" if float(value).is_integer() else f"{value:,.2f}"
        return number + (" " + unit.strip() if unit.strip() else "")
    shown = value / stated.scale
    decimals = stated.decimals + 1
    if shown:
        decimals = max(decimals, 2 - math.floor(math.log10(abs(shown))))
    decimals = min(max(decimals, 0), 6)
    if stated.kind == "ratio" and float(shown).is_integer():
        decimals = 0
    return f"{shown:,.{decimals}f}{stated.prefix}{unit}"


def _formula_text(formula: str) -> str:
    return formula.replace("**", "^").replace(" * ", " x ").replace("*", " x ")


@dataclass(frozen=True)
class _Candidate:
    key: str
    describe: str
    value: float  # in the document's convention and base units
    unit: str  # display unit word


def _candidates(claim: Claim, cache: _Cache) -> tuple[float, str, list[_Candidate]]:
    """(right value in the stated convention, its display unit, alternative readings)."""
    stated = claim.stated
    family = QUANTITIES[claim.target.quantity].family
    if claim.quantity == "ratio":
        num, num_alts = _value(claim.target, cache)
        den, den_alts = _value(claim.versus, cache)
        out = [
            _Candidate(key, f"the ratio of {num_alts[key][1]}", num_alts[key][2] / den_alts[key][2], stated.unit)
            for key in num_alts if key in den_alts and den_alts[key][2]
        ]
        for alt in claim.alternatives:
            a_num, _ = _value(alt.target, cache)
            a_den, _ = _value(alt.versus, cache)
            out.append(_Candidate("explicit", alt.describe, a_num / a_den, stated.unit))
        return num / den, stated.unit, out
    canonical, alts = _value(claim.target, cache)
    readings = [("", "", canonical)] + [(k, d, v) for k, d, v in alts.values()]
    if family == "compute":
        names = {"macs": "MACs", "flops": "FLOPs", "fvcore-flops": " fvcore flops"}
        conv = "macs" if claim.convention == "fvcore-flops" else claim.convention
        other = "flops" if conv == "macs" else "macs"
        out = []
        for key, describe, value in readings:
            for c in (conv, other):
                if key == "" and c == conv:
                    continue
                label = f"{describe} in {names[c]}" if key else f"the same count in {names[c]}"
                out.append(_Candidate(f"{key or 'same'}/{c}", label, value * _factor(c), names[c]))
        # Most plausible first: the other convention, then other scopes, the no-CLS readings last.
        out.sort(key=lambda cand: (cand.key.count("/no-cls"), not cand.key.startswith("same/"), not cand.key.endswith("/" + conv)))
        return canonical * _factor(claim.convention), names[claim.convention], out
    if family == "bytes":
        unit = stated.unit.strip()
        other = _OTHER_BASE.get(unit)
        space = " " if stated.unit.startswith(" ") else ""
        out = []
        for key, describe, value in readings:
            if key:
                out.append(_Candidate(key, describe, value, stated.unit))
            if other:
                # A document that computed in `other` but wrote `unit`: its number, read as `unit`.
                as_written = value / _BYTE_UNITS[other] * _BYTE_UNITS[unit]
                label = f"{describe} in {other}" if key else f"the same size in {other} ({'2^10' if 'i' in other else '10^3'} steps)"
                out.append(_Candidate(f"{key or 'same'}/{other}", label, as_written, space + other))
        return canonical, stated.unit, out
    return canonical, stated.unit, [_Candidate(k, d, v, stated.unit) for k, d, v in alts.values()]


def _measure_throughput(spec, batch_size: int) -> tuple[float, str] | None:
    """(images/s, device name) measured on CUDA by vitbench.measure, or None without a GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    from vitbench.measure.profile import RunSettings, measure

    record = measure(spec, RunSettings(device="cuda", mode="infer", batch_size=batch_size, memory=False))
    if record.get("status") != "ok":
        raise RuntimeError(f"measurement failed: {record.get('status')}: {record.get('error')}")
    return float(record["throughput_img_s"]), str(record.get("env_device_name") or "cuda")


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _base_record(claim: Claim) -> dict[str, Any]:
    target = claim.target
    return {
        "id": claim.id,
        "source": claim.source,
        "file": claim.file,
        "line": claim.line,
        "quote": claim.quote,
        "model": target.describe() if target else None,
        "versus": claim.versus.describe() if claim.versus else None,
        "quantity": (f"ratio of {target.quantity}" if claim.quantity == "ratio" else claim.quantity),
        "convention": claim.convention,
        "stated_text": claim.stated.text,
        "stated_value": [_number(v) for v in claim.stated.value] if claim.stated.is_range else _number(claim.stated.value),
        "tolerance": None,
        "recomputed": None,
        "recomputed_text": None,
        "counted": None,
        "counted_by": None,
        "verdict": None,
        "verdict_text": None,
        "off_pct": None,
        "matched": None,
        "explanation": None,
        "warnings": "",
    }


def evaluate(claim: Claim, *, counted: bool = True, measure: bool = False, cache: _Cache | None = None) -> dict[str, Any]:
    """One claim's record: the recomputed value, the verdict and a one-sentence explanation.
    Never raises for a failed recomputation: the verdict is then 'error' with the reason."""
    cache = cache or _Cache()
    record = _base_record(claim)
    try:
        _evaluate(claim, record, counted, measure, cache)
    except Exception as exc:  # one failed claim must not lose the others' results
        record.update(verdict="error", verdict_text="error", explanation=f"recomputing failed: {exc.__class__.__name__}: {exc}")
    return record


def _what(claim: Claim) -> str:
    """What vitbench recomputed, e.g. 'one attention layer (...) of vit-b/16 (img_size=384)'."""
    target, versus = claim.target, claim.versus
    if claim.quantity == "expression":
        return f"the document's own formula {_formula_text(claim.formula)}"
    what = QUANTITIES[target.quantity].describe
    if claim.quantity != "ratio":
        return f"{what} of {target.describe()}"
    if target.quantity == versus.quantity:
        return f"{what}: {target.describe()} / {versus.describe()}"
    over = QUANTITIES[versus.quantity].describe
    if replace(target, quantity="") == replace(versus, quantity=""):
        return f"{what} / {over} of {target.describe()}"
    return f"{what} of {target.describe()} / {over} of {versus.describe()}"


def _evaluate(claim: Claim, record: dict[str, Any], counted: bool, measure: bool, cache: _Cache) -> None:
    stated = claim.stated
    family = QUANTITIES[claim.quantity].family
    if family == "none":
        record.update(verdict="not checkable", verdict_text="not checkable", explanation=f"{stated.text}: not checkable here: {claim.reason}.")
        return
    tol = _tolerance(claim)
    record["tolerance"] = tol
    what = _what(claim)
    if family == "measured":
        _evaluate_measured(claim, record, measure, tol, what)
        return
    if family == "expression":
        right, unit, candidates = float(evaluate_formula(claim.formula)), stated.unit, []
    else:
        right, unit, candidates = _candidates(claim, cache)
    right_text = format_like(stated, right, unit)
    record["recomputed"], record["recomputed_text"] = right, right_text

    warnings = []
    if counted and claim.counted and claim.quantity != "ratio":
        value, by, warning = _counted(claim.target, cache)
        if warning:
            warnings.append(warning)
        elif value is not None:
            record["counted"], record["counted_by"] = value, by
            canonical, _ = _value(claim.target, cache)
            if value != canonical:
                warnings.append(f"{by} counts {value:,} but the analytic model gives {canonical:,}")
    record["warnings"] = "; ".join(warnings)

    point = not stated.bound and not stated.is_range
    if _within(stated, right, tol):
        record.update(verdict="holds", verdict_text="holds", off_pct=_off_pct(stated, right) if point else None,
                      explanation=f"{stated.text} holds: {what} = {right_text}.")
        return
    pct = _off_pct(stated, right)
    record["off_pct"] = pct
    # A figure that is the right value truncated is a rounding slip, whatever else it matches.
    truncated = point and 0 < right - stated.low < stated.resolution
    slack = 0.0 if QUANTITIES[claim.target.quantity].family == "count" else ALTERNATIVE_SLACK
    for cand in candidates if not truncated else ():
        # Another reading explains the figure when it matches it (within the figure's precision,
        # or 2% for computed quantities) and sits closer to it than the right value does.
        closer = _distance(stated, cand.value) < _distance(stated, right)
        if closer and _within(stated, cand.value, max(tol, slack * abs(cand.value))):
            shown = format_like(stated, cand.value, cand.unit)
            residual = "" if _within(stated, cand.value, tol) else f", {format_pct(_off_pct(stated, cand.value))} off even so"
            record.update(
                verdict="wrong convention", verdict_text="wrong convention", matched=cand.describe,
                explanation=(f"{stated.text} matches {cand.describe} ({shown}{residual}); "
                             f"{what} = {right_text}{_extras(claim, right, tol, truncation=False)}."),
            )
            return
    record.update(
        verdict="off", verdict_text=f"off by {format_pct(pct)}",
        explanation=f"{stated.text} is off by {format_pct(pct)}: {what} = {right_text}{_extras(claim, right, tol)}.",
    )


_COMPONENT_NAMES = {
    "head_bias": "classifier bias", "norms": "LayerNorms", "qkv_bias": "qkv bias",
    "proj_bias": "output-projection bias", "fc1_bias": "fc1 bias", "fc2_bias": "fc2 bias",
    "patch_embed_bias": "patch-projection bias", "cls_token": "CLS token",
    "pos_embed": "position embedding", "final_norm": "final LayerNorm",
}


def _extras(claim: Claim, right: float, tol: float, truncation: bool = True) -> str:
    """Clauses that say where a wrong figure comes from, each verified numerically."""
    stated = claim.stated
    out = []
    if truncation and not stated.is_range and not stated.bound and 0 < right - stated.low < stated.resolution:
        out.append(f"{stated.text} is that value truncated, not rounded")
    if claim.omits and claim.target is not None:
        parts = _omittable(claim.target.spec(), claim.target.quantity)
        amount = sum(parts[name] for name in claim.omits)
        if amount and _within(stated, right - amount, tol):
            names = [_COMPONENT_NAMES[name] for name in claim.omits]
            listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            out.append(f"the figure leaves out the {listed} ({amount:,})")
    if claim.formula and claim.quantity != "expression":
        value = float(evaluate_formula(claim.formula))
        shown = format_like(stated, value)
        if _within(stated, value, tol):
            out.append(f"the document's own formula {_formula_text(claim.formula)} = {shown} reproduces the figure, so the formula or its inputs are at fault, not the arithmetic")
        else:
            out.append(f"the document's own formula {_formula_text(claim.formula)} gives {shown}")
    return "".join("; " + clause for clause in out)


def _evaluate_measured(claim: Claim, record: dict[str, Any], measure: bool, tol: float, what: str) -> None:
    stated = claim.stated
    result = _measure_throughput(claim.target.spec(), claim.target.batch_size) if measure else None
    if result is None:
        why = "run `vitbench audit --measure` on a CUDA machine" if not measure else "no CUDA device here"
        record.update(verdict="needs a GPU", verdict_text="needs a GPU",
                      explanation=f"{stated.text}: needs a GPU ({claim.device}) to measure {what}; {why}.")
        return
    value, device = result
    record["recomputed"], record["recomputed_text"] = value, format_like(stated, value)
    if claim.device.lower() not in device.lower():
        record.update(verdict="not checkable", verdict_text="not checkable",
                      explanation=(f"{stated.text}: measured {format_like(stated, value)} for {what} on {device}, "
                                   f"but the claim is about an {claim.device}, so no verdict."))
        return
    if _within(stated, value, tol):
        record.update(verdict="holds", verdict_text="holds", off_pct=_off_pct(stated, value),
                      explanation=f"{stated.text} holds: measured {format_like(stated, value)} for {what} on {device}.")
    else:
        pct = _off_pct(stated, value)
        record.update(verdict="off", verdict_text=f"off by {format_pct(pct)}", off_pct=pct,
                      explanation=f"{stated.text} is off by {format_pct(pct)}: measured {format_like(stated, value)} for {what} on {device}.")


def audit(
    claims: Iterable[str] | None = None,
    *,
    source: str | None = None,
    catalogue: str | Path | None = None,
    counted: bool = True,
    measure: bool = False,
) -> Records:
    """Recompute the catalogue's claims (all, or those ids / that document prefix) and give each
    a verdict. ``counted``: also count parameters on the built module and trace MACs where a claim
    asks; ``measure``: time throughput claims on a CUDA device (otherwise 'needs a GPU').

    >>> audit(["ch-vitb-flops-224"])[0]["verdict"]  # doctest: +SKIP
    'off'
    """
    if isinstance(claims, str):
        claims = [claims]
    chosen = select(load_catalogue(catalogue), claims, source)
    cache = _Cache()
    return Records(evaluate(c, counted=counted, measure=measure, cache=cache) for c in chosen)


def summary(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Claims per verdict, in VERDICTS order (zeros kept)."""
    counts = {v: 0 for v in VERDICTS}
    for record in records:
        counts[record["verdict"]] += 1
    return counts


# --- the report ----------------------------------------------------------------------------------
REPORT_COMMAND = "vitbench audit --write reports/claims.md"


def _short_source(record: dict[str, Any]) -> str:
    """'002_ea21....txt:145' -> '002:145' (the report's introduction lists the full names)."""
    return f"{record['file'].split('_')[0]}:{record['line']}"


def _cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def render_markdown(records: Sequence[dict[str, Any]], catalogue: str = "vitbench/data/claims.yaml") -> str:
    """The claims report: conventions, verdict counts, every claim, and why each wrong one is
    wrong. Deterministic: the same records give the same text."""
    counts = summary(records)
    docs = {}
    for r in records:
        docs[r["file"]] = docs.get(r["file"], 0) + 1
    lines = [
        "# The source documents' numbers, audited",
        "",
        f"Generated by `{REPORT_COMMAND}` from `{catalogue}` ({len(records)} claims); "
        "do not edit by hand. `tests/test_audit.py` fails when this file is out of date.",
        "",
        "Each claim is a number stated in one of the source documents (`shared/seeds/`; a source "
        "`002:145` is line 145 of `002_*.txt`): "
        + ", ".join(f"`{name}` ({n} claims)" for name, n in sorted(docs.items()))
        + ". vitbench recomputes it with its exact analytic model (parameters, MACs, memory "
        "formulas); claims marked `counted` are also counted on the built `nn.Module` or traced.",
        "",
        "## Conventions",
        "",
        "- **MAC**: one multiply-accumulate. **FLOPs = 2 x MACs** (matmuls and convolutions).",
        "- **fvcore flops**: fvcore counts one MAC as one \"flop\", plus 5 per LayerNorm element.",
        "- **MB** = 10^6 bytes, **GB** = 10^9 bytes; **MiB** = 2^20 bytes, **GiB** = 2^30 bytes. Weights and "
        "activations are fp32 (4 bytes) unless a claim says otherwise.",
        "- **n** = tokens (patches + CLS), **N** = patches, **d** = width, **h** = heads, **m** = MLP width, "
        "**L** = depth. An attention layer costs 4nd^2 + 2n^2 d MACs: the q/k/v and output "
        "projections (4nd^2) plus QK^T and AV (2n^2 d).",
        "- **Tolerance**: a figure holds when it equals the recomputed value rounded to the figure's "
        "own precision (within half a unit of its last digit: \"86M\" +-0.5 M). Hedged figures "
        "(\"approximately\", \"~\") get a full unit, at most 10% of the figure.",
        "",
        "Verdicts: **holds**; **off by X%** (stated minus recomputed, in % of recomputed); **wrong "
        "convention** (the figure matches another reading, within 2%: MACs labelled FLOPs, the "
        "attention matmuls without the projections, the patches without the CLS token, ...; the "
        "right figure is given); **needs a GPU** (a measured throughput: `vitbench audit --measure` "
        "on a CUDA machine); **not checkable** (vitbench has no model for it).",
        "",
        "## Summary",
        "",
        "| verdict | claims |",
        "| --- | ---: |",
    ]
    lines += [f"| {verdict} | {n} |" for verdict, n in counts.items() if n]
    lines += [f"| **total** | **{len(records)}** |", "", "## Every claim", ""]
    lines += ["| id | source | stated | recomputed | verdict | counted |", "| --- | --- | --- | --- | --- | --- |"]
    for r in records:
        counted_cell = ""
        if r.get("counted_by"):
            counted_cell = "agrees" if not r.get("warnings") else "**disagrees**"
        elif r.get("warnings"):
            counted_cell = "n/a"
        lines.append(
            f"| `{r['id']}` | {_short_source(r)} | {_cell(r['stated_text'])} | "
            f"{_cell(r['recomputed_text'])} | {_cell(r['verdict_text'])} | {counted_cell} |"
        )
    wrong = [r for r in records if r["verdict"] in ("off", "wrong convention")]
    lines += ["", f"## Wrong claims ({len(wrong)})", ""]
    for r in wrong:
        lines.append(f"- **`{r['id']}`** ({_short_source(r)}, \"{_cell(r['quote'])}\"): {_cell(r['explanation'])}")
    other = [r for r in records if r["verdict"] in ("needs a GPU", "not checkable", "error")]
    if other:
        lines += ["", "## Not checked here", ""]
        for r in other:
            lines.append(f"- **`{r['id']}`** ({_short_source(r)}): {_cell(r['explanation'])}")
    return "\n".join(lines) + "\n"


def quantity_rows() -> list[dict[str, Any]]:
    """The vocabulary of quantities, for `vitbench audit --quantities`."""
    conventions = {family: "|".join(str(c) for c in convs if c) for family, convs in _FAMILY_CONVENTIONS.items()}
    return [
        {"quantity": q.name, "family": q.family, "conventions": conventions[q.family],
         "models": "/".join(q.kinds), "counted": q.counted or "", "description": q.describe}
        for q in QUANTITIES.values()
        if q.family != "none"
    ]


def display_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Short rows for a terminal table."""
    return [
        {
            "id": r["id"],
            "source": _short_source(r),
            "stated": r["stated_text"],
            "recomputed": r["recomputed_text"] or "",
            "verdict": r["verdict_text"],
        }
        for r in records
    ]
