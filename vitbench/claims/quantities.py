"""What a claim can be about: the vocabulary of quantities (`vitbench audit --quantities`).

Each quantity names the analytic function that computes it (formulas live in
:mod:`vitbench.analytic`: :mod:`~vitbench.analytic.conventions` for the parts and readings
documents use and the Swin comparison), how the batch
enters (``per``), the other readings a document may have meant, and, where one exists, the
counter that checks it on the built module or the measurement that checks it on a device.

Values are canonical: integer counts, MACs (FLOPs are derived: 2 x MACs), bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from vitbench.analytic import conventions as cv
from vitbench.analytic import params, vit
from vitbench.analytic.conventions import Reading

#: What the batch does to a quantity: ``model`` compute(spec) (the batch plays no part);
#: ``image`` B x compute(spec) (per-image work); ``batch`` compute(spec, B).
PER = ("model", "image", "batch")
#: Document conventions a stated figure may use.
CONVENTIONS = ("count", "macs", "flops", "fvcore-flops", "bytes", "ratio", "img_per_s")
#: Document conventions each family of quantities accepts.
FAMILY_CONVENTIONS = {
    "count": ("count",),
    "compute": ("macs", "flops", "fvcore-flops"),
    "fvcore": ("fvcore-flops",),
    "bytes": ("bytes",),
    "ratio": ("ratio",),
    "measured": ("img_per_s",),
    "expression": CONVENTIONS,
    "none": CONVENTIONS + (None,),
}


@dataclass(frozen=True)
class Quantity:
    """One thing a claim can be about. ``compute`` and ``readings`` follow the ``per`` rule;
    ``counted`` is 'params' (the built nn.Module) or a key of :func:`vitbench.counters.count`;
    ``measured`` is the field of a :func:`vitbench.profile` record that measures it on a device
    (``mode`` the step measured); ``one_block`` scopes a parameter count to one encoder block."""

    name: str
    family: str  # count | compute | fvcore | bytes | measured | expression | ratio | none
    kinds: tuple[str, ...]
    describe: str
    compute: Callable[..., int] | None = None
    per: str = "model"
    readings: Callable[..., list[Reading]] | None = None
    counted: str | None = None
    measured: str | None = None
    mode: str = "infer"
    one_block: bool = False
    basis: str = ""  # how the analytic value is obtained, where that needs saying

    def _call(self, function: Callable[..., Any], spec: Any, batch: int) -> Any:
        return function(spec, batch) if self.per == "batch" else function(spec)

    def value(self, spec: Any, batch: int = 1) -> int:
        """The canonical value for ``batch`` images."""
        out = self._call(self.compute, spec, batch)
        return batch * out if self.per == "image" else out

    def alternatives(self, spec: Any, batch: int = 1) -> list[Reading]:
        """The other readings, at the same batch."""
        if self.readings is None:
            return []
        out = self._call(self.readings, spec, batch)
        if self.per == "image":
            out = [Reading(r.key, r.describe, batch * r.value) for r in out]
        return out


_VIT = ("vit",)
_CNN = ("resnet", "plaincnn")
_ANY = ("vit", "resnet", "plaincnn")
_COUNTABLE = ("vit", "resnet", "plaincnn", "swin", "convnext")
_SWIN = ("swin",)
_Q = Quantity
_REPLAY = "predicted by vitbench.analytic.memory, which replays PyTorch's CPU operators"

QUANTITIES: dict[str, Quantity] = {q.name: q for q in (
    # counts
    _Q("params", "count", _COUNTABLE, "parameters", params, readings=cv.params_readings, counted="params"),
    _Q("params_block", "count", _VIT, "parameters of one encoder block", cv.block_params, one_block=True),
    _Q("params_encoder", "count", _VIT, "parameters of all encoder blocks", cv.encoder_params),
    _Q("params_patch_embed", "count", _VIT, "patch-projection parameters (weight and bias)", vit.patch_embed_params),
    _Q("params_pos_embed", "count", _VIT, "position-embedding parameters", vit.pos_embed_params),
    _Q("params_patch_embedding_module", "count", _VIT,
       "patch-embedding module parameters (projection, CLS token, positions)", cv.patch_embedding_module_params),
    _Q("params_classifier", "count", _ANY, "classifier parameters (weight and bias)", cv.classifier_params),
    _Q("tokens", "count", _VIT, "sequence length n", attrgetter("tokens"), readings=cv.tokens_readings),
    _Q("num_patches", "count", _VIT, "patches N", attrgetter("num_patches")),
    _Q("patch_dim", "count", _VIT, "values per flattened patch (C P^2)", attrgetter("patch_dim")),
    _Q("attention_scores_per_head", "count", _VIT, "attention scores per head and layer (n^2)",
       cv.scores_per_head, readings=cv.scores_readings),
    _Q("swin_tokens", "count", _SWIN, "stage-1 tokens", cv.swin_tokens),
    _Q("swin_windows", "count", _SWIN, "stage-1 windows (n / M^2)", cv.swin_windows),
    _Q("swin_window_scores_per_head", "count", _SWIN, "stage-1 scores per head in one window ((M^2)^2)",
       cv.swin_window_scores_per_head),
    _Q("swin_global_scores_per_head", "count", _SWIN, "stage-1 scores per head over all tokens (n^2)",
       cv.swin_global_scores_per_head),
    # compute (canonical: MACs)
    _Q("macs", "compute", _COUNTABLE, "whole-model compute", cv.macs, per="image", counted="dispatch_macs"),
    _Q("layer_macs", "compute", _VIT, "one encoder layer (4nd^2 + 2n^2 d + 2ndm MACs)",
       cv.encoder_layer_macs, per="image"),
    _Q("encoder_macs", "compute", _VIT, "all encoder layers", cv.encoder_macs, per="image"),
    _Q("mlp_macs", "compute", _VIT, "all MLPs (L x 2ndm MACs)", cv.mlp_macs, per="image"),
    _Q("patch_embed_macs", "compute", _VIT, "patch projection (N d C P^2 MACs)", vit.patch_embed_macs, per="image"),
    _Q("attention_block_macs_per_layer", "compute", _VIT,
       "one attention layer (projections 4nd^2 + QK^T and AV 2n^2 d MACs)",
       cv.attention_layer_macs, per="image", readings=cv.attention_readings),
    _Q("attention_block_macs", "compute", _VIT, "all attention layers (L x (4nd^2 + 2n^2 d) MACs)",
       cv.attention_macs, per="image", readings=cv.all_attention_readings),
    _Q("swin_global_attention_macs", "compute", _SWIN,
       "one stage-1 layer of global attention (4nC^2 + 2n^2 C MACs, Swin paper Eq. 1)",
       cv.swin_global_attention_macs, per="image", readings=cv.swin_global_attention_readings),
    _Q("swin_window_attention_macs", "compute", _SWIN,
       "one stage-1 layer of window attention (4nC^2 + 2M^2 nC MACs, Swin paper Eq. 2)",
       cv.swin_window_attention_macs, per="image", readings=cv.swin_window_attention_readings),
    # fvcore's own convention
    _Q("fvcore_flops", "fvcore", _VIT, "fvcore flops (MACs + 5 per LayerNorm element)", cv.fvcore_flops,
       per="batch", readings=cv.fvcore_flops_readings, counted="fvcore_flops"),
    _Q("fvcore_activations", "count", _VIT,
       "fvcore activations (outputs of convolutions, linears and attention matmuls)",
       cv.fvcore_activations, per="batch", counted="fvcore_activations"),
    # bytes
    _Q("weights_bytes", "bytes", _ANY, "fp32 weights", cv.fp32_weights_bytes),
    _Q("weights_and_optimizer_bytes", "bytes", _ANY, "fp32 weights plus AdamW's two moment buffers",
       cv.weights_and_adamw_bytes),
    _Q("attention_matrix_bytes_per_layer", "bytes", _VIT, "one layer's attention matrices (B h n^2 x 4 bytes)",
       cv.attention_matrix_bytes, per="batch"),
    _Q("attention_matrix_bytes", "bytes", _VIT, "all layers' attention matrices (L B h n^2 x 4 bytes)",
       cv.all_attention_matrix_bytes, per="batch"),
    _Q("training_peak_memory_bytes", "bytes", _ANY, "peak memory of a training step (fp32, AdamW)",
       cv.training_peak_bytes, per="batch", measured="peak_memory_bytes", mode="train", basis=_REPLAY),
    _Q("inference_peak_memory_bytes", "bytes", _ANY, "peak memory of an fp32 no-grad forward",
       cv.inference_peak_bytes, per="batch", measured="peak_memory_bytes", basis=_REPLAY),
    _Q("largest_activation_bytes", "bytes", _CNN, "largest single fp32 activation",
       cv.largest_activation_bytes, per="batch"),
    # no analytic value
    _Q("expression", "expression", (), "the document's own arithmetic"),
    _Q("throughput_img_s", "measured", _ANY, "fp32 inference throughput (vitbench.profile)",
       measured="throughput_img_s"),
    _Q("not_checkable", "none", (), ""),
    _Q("ratio", "ratio", (), ""),
)}


def quantity_rows() -> list[dict[str, Any]]:
    """The vocabulary, one row per quantity, for `vitbench audit --quantities`."""
    conventions = {family: "|".join(str(c) for c in convs if c) for family, convs in FAMILY_CONVENTIONS.items()}
    return [
        {"quantity": q.name, "family": q.family, "conventions": conventions[q.family],
         "models": "/".join(q.kinds), "counted": q.counted or "", "measured": q.measured or "",
         "description": q.describe + (f" ({q.basis})" if q.basis else "")}
        for q in QUANTITIES.values()
        if q.family != "none"
    ]
