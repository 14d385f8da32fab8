"""The parts, conventions and slips behind the cost figures documents state.

vitbench's own figures (:mod:`vitbench.analytic.vit`, :mod:`~vitbench.analytic.cnn`) are whole-model
parameters and MACs. Documents often state a part (one attention layer, the encoder blocks
alone), another convention (fvcore's "flops": one per MAC plus 5 per LayerNorm element) or a slip
(the attention matmuls without the projections, the patches without the CLS token). Each is a
pure function here, built from the analytic components, with its equation; the ``*_readings``
functions list the other readings a stated figure may have meant, for ``vitbench audit``.

Notation as in :mod:`vitbench.analytic.vit`: n tokens, N patches, d width, h heads, m MLP width,
L depth, K classes; for a Swin stage (:mod:`vitbench.analytic.swin`) n = H W tokens of width C
in windows of M x M; per image unless a batch B appears. A MAC is one multiply-accumulate;
FLOPs = 2 MACs. Pure Python, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from vitbench.analytic import cnn, complexity, memory, params, swin, vit
from vitbench.specs import ModelSpec, SwinSpec, ViTSpec


@dataclass(frozen=True)
class Reading:
    """Another reading of a quantity: a short key, what it counts, and its value (same units and
    batch as the quantity it stands beside)."""

    key: str
    describe: str
    value: int


# --- parts of a ViT ------------------------------------------------------------------------------
def macs(spec: ModelSpec) -> int:
    """Whole-model MACs per image (:func:`vitbench.analytic.complexity`)."""
    return complexity(spec).macs


def scores_per_head(spec: ViTSpec) -> int:
    """Attention scores per head and layer: n^2."""
    return spec.tokens**2


def attention_layer_macs(spec: ViTSpec) -> int:
    """One attention layer: qkv 3nd^2 + QK^T n^2 d + AV n^2 d + proj nd^2 = 4nd^2 + 2n^2 d."""
    return vit.qkv_macs(spec) + vit.attention_matmul_macs_per_layer(spec) + vit.attn_proj_macs(spec)


def mlp_layer_macs(spec: ViTSpec) -> int:
    """One MLP: fc1 + fc2 = 2 n d m."""
    return vit.mlp_fc1_macs(spec) + vit.mlp_fc2_macs(spec)


def encoder_layer_macs(spec: ViTSpec) -> int:
    """One encoder layer: attention + MLP = 4nd^2 + 2n^2 d + 2ndm."""
    return attention_layer_macs(spec) + mlp_layer_macs(spec)


def encoder_macs(spec: ViTSpec) -> int:
    """All encoder layers: L (4nd^2 + 2n^2 d + 2ndm)."""
    return spec.depth * encoder_layer_macs(spec)


def attention_macs(spec: ViTSpec) -> int:
    """All attention layers: L (4nd^2 + 2n^2 d)."""
    return spec.depth * attention_layer_macs(spec)


def mlp_macs(spec: ViTSpec) -> int:
    """All MLPs: L x 2ndm."""
    return spec.depth * mlp_layer_macs(spec)


def block_params(spec: ViTSpec) -> int:
    """One encoder block: LayerNorms + qkv + output projection + fc1 + fc2."""
    return sum(vit.block_params(spec).values())


def encoder_params(spec: ViTSpec) -> int:
    """All encoder blocks, without the embeddings, final LayerNorm and head: L x block."""
    return spec.depth * block_params(spec)


def patch_embedding_module_params(spec: ViTSpec) -> int:
    """A patch-embedding module that also holds the CLS token and the positions:
    patch projection + CLS + position embedding."""
    return vit.patch_embed_params(spec) + vit.cls_token_params(spec) + vit.pos_embed_params(spec)


def classifier_params(spec: ModelSpec) -> int:
    """The classifier: d K + K for a ViT; the last linear layer of a CNN."""
    if isinstance(spec, ViTSpec):
        return spec.embed_dim * spec.num_classes + spec.num_classes
    return [layer for layer in cnn.cnn_layers(spec) if layer.op == "linear"][-1].params


def without_cls(spec: ViTSpec) -> ViTSpec | None:
    """The same ViT over its N patches alone (n = N: no CLS token), or None if it has none."""
    return replace(spec, pool="mean") if spec.pool == "cls" else None


# --- fvcore's convention --------------------------------------------------------------------------
def fvcore_flops(spec: ViTSpec, batch_size: int = 1) -> int:
    """fvcore's "flops" of a ViT: one per MAC plus 5 per LayerNorm element (its norm handle):
    B [MACs + 5 (2 L n d + d)]."""
    c = complexity(spec, batch_size)
    return c.macs + 5 * c.elementwise_by_kind["layernorm"]


def fvcore_activations(spec: ViTSpec, batch_size: int = 1) -> int:
    """fvcore's activation count of a ViT: the output elements of every convolution, linear layer
    and attention matmul, B [N d + L (3nd + h n^2 + nd + nd + n m + nd) + K]: the patch
    projection; qkv, scores, AV, output projection, fc1, fc2 per layer; the head on one token."""
    n, d, m = spec.tokens, spec.embed_dim, spec.mlp_hidden
    per_layer = 3 * n * d + spec.num_heads * n * n + n * d + n * d + n * m + n * d
    return batch_size * (spec.num_patches * d + spec.depth * per_layer + spec.num_classes)


# --- memory (bytes; the closed forms and the replay live in vitbench.analytic.memory) --------------
def fp32_weights_bytes(spec: ModelSpec) -> int:
    """fp32 weights: 4 P bytes."""
    return memory.weights_bytes(params(spec))


def weights_and_adamw_bytes(spec: ModelSpec) -> int:
    """fp32 weights and AdamW's two moment buffers: 4 P + 8 P = 12 P bytes."""
    p = params(spec)
    return memory.weights_bytes(p) + memory.optimizer_bytes(p, "adamw")


def attention_matrix_bytes(spec: ViTSpec, batch_size: int = 1) -> int:
    """One layer's fp32 attention matrices: B h n^2 x 4 bytes."""
    return memory.attention_matrix_bytes(spec, batch_size)


def all_attention_matrix_bytes(spec: ViTSpec, batch_size: int = 1) -> int:
    """Every layer's fp32 attention matrices: L B h n^2 x 4 bytes."""
    return spec.depth * attention_matrix_bytes(spec, batch_size)


def training_peak_bytes(spec: ModelSpec, batch_size: int = 1) -> int:
    """Predicted peak of one fp32 training step with AdamW (forward, loss, backward, step), from
    :func:`vitbench.analytic.memory.memory_estimate`: PyTorch's CPU operators replayed."""
    return memory.memory_estimate(spec, batch_size, mode="train", precision="fp32", optimizer="adamw").peak_bytes


def inference_peak_bytes(spec: ModelSpec, batch_size: int = 1) -> int:
    """Predicted peak of one fp32 no-grad forward, from
    :func:`vitbench.analytic.memory.memory_estimate`: PyTorch's CPU operators replayed."""
    return memory.memory_estimate(spec, batch_size, mode="infer", precision="fp32").peak_bytes


def largest_activation_bytes(spec: ModelSpec, batch_size: int = 1) -> int:
    """The largest single output tensor of a CNN, fp32: 4 B max over layers of its elements."""
    return 4 * batch_size * max(layer.out_elements for layer in cnn.cnn_layers(spec))


# --- components a parameter count may leave out ----------------------------------------------------
#: component key -> its name in prose
OMITTABLE = {
    "head_bias": "classifier bias", "norms": "LayerNorms", "qkv_bias": "qkv bias",
    "proj_bias": "output-projection bias", "fc1_bias": "fc1 bias", "fc2_bias": "fc2 bias",
    "patch_embed_bias": "patch-projection bias", "cls_token": "CLS token",
    "pos_embed": "position embedding", "final_norm": "final LayerNorm",
}


def omittable_params(spec: ModelSpec, blocks: int | None = None) -> dict[str, int]:
    """The parameters of each component a count may leave out, over ``blocks`` encoder blocks
    (default all L): classifier bias K; per block LayerNorms, qkv bias 3d, projection bias d,
    fc1 bias m, fc2 bias d; patch-projection bias d, CLS d, positions, final LayerNorm 2d."""
    out = {"head_bias": spec.num_classes}
    if not isinstance(spec, ViTSpec):
        return out
    d, m = spec.embed_dim, spec.mlp_hidden
    layers = spec.depth if blocks is None else blocks
    per_block = {
        "norms": vit.block_params(spec)["norms"], "qkv_bias": 3 * d if spec.qkv_bias else 0,
        "proj_bias": d, "fc1_bias": m, "fc2_bias": d,
    }
    out.update({name: layers * value for name, value in per_block.items()})
    out.update({
        "patch_embed_bias": d, "cls_token": vit.cls_token_params(spec),
        "pos_embed": vit.pos_embed_params(spec), "final_norm": 2 * d if spec.final_norm else 0,
    })
    return out


# --- other readings of a stated figure ------------------------------------------------------------
def _attention_scope_readings(spec: ViTSpec, layers: int, suffix: str, where: str) -> list[Reading]:
    out = []
    if suffix:
        out.append(Reading("block" + suffix, f"the whole attention layer{where}", layers * attention_layer_macs(spec)))
    out.append(Reading(
        "matmul-only" + suffix, f"QK^T and AV alone (2n^2 d MACs: no q/k/v or output projections){where}",
        layers * vit.attention_matmul_macs_per_layer(spec),
    ))
    out.append(Reading("qk-only" + suffix, f"QK^T alone (n^2 d MACs){where}", layers * vit.attn_scores_macs(spec)))
    return out


def attention_readings(spec: ViTSpec, layers: int = 1) -> list[Reading]:
    """Attention MACs of ``layers`` layers read without the projections (QK^T and AV, 2n^2 d),
    as QK^T alone (n^2 d), and each of these (and the whole layer) over the N patches without the
    CLS token (n = N)."""
    out = _attention_scope_readings(spec, layers, "", "")
    no_cls = without_cls(spec)
    if no_cls is not None:
        where = f" over the {spec.num_patches} patches without the CLS token"
        out += _attention_scope_readings(no_cls, layers, "/no-cls", where)
    return out


def all_attention_readings(spec: ViTSpec) -> list[Reading]:
    """:func:`attention_readings` over all L layers."""
    return attention_readings(spec, spec.depth)


def params_readings(spec: ModelSpec) -> list[Reading]:
    """A ViT's parameters read as its encoder blocks alone (no embeddings, final LayerNorm or head)."""
    if not isinstance(spec, ViTSpec):
        return []
    return [Reading("encoder-only", f"the {spec.depth} encoder blocks alone (no embeddings or head)", encoder_params(spec))]


def tokens_readings(spec: ViTSpec) -> list[Reading]:
    """The sequence length read as the N patches (no CLS token)."""
    if spec.pool != "cls":
        return []
    return [Reading("no-cls", "the patches without the CLS token", spec.num_patches)]


def scores_readings(spec: ViTSpec) -> list[Reading]:
    """Scores per head read as N^2 (the patches alone, no CLS token)."""
    if spec.pool != "cls":
        return []
    return [Reading("no-cls", f"N^2 with the N = {spec.num_patches} patches alone (no CLS token)", spec.num_patches**2)]


def fvcore_flops_readings(spec: ViTSpec, batch_size: int = 1) -> list[Reading]:
    """fvcore's flops read as the MACs alone, without the 5 per LayerNorm element."""
    return [Reading("macs-only", "the MACs alone, without the LayerNorm count", complexity(spec, batch_size).macs)]


# --- Swin: one stage's attention, in windows against global (Swin paper, Eq. 1 and 2) --------------
_ATTENTION_PARTS = ("qkv", "attn_scores", "attn_values", "attn_proj")


def swin_tokens(spec: SwinSpec, stage: int = 0) -> int:
    """n = H W tokens of the stage's map."""
    height, width = spec.stage_resolution(stage)
    return height * width


def swin_windows(spec: SwinSpec, stage: int = 0) -> int:
    """Windows of the stage: T / (M_h M_w) (T = n when the windows tile the map)."""
    window_h, window_w = spec.stage_window(stage)
    return swin.padded_tokens(spec, stage) // (window_h * window_w)


def swin_window_scores_per_head(spec: SwinSpec, stage: int = 0) -> int:
    """Attention scores of one head inside one window: (M_h M_w)^2 (M^4 for square windows)."""
    window_h, window_w = spec.stage_window(stage)
    return (window_h * window_w) ** 2


def swin_global_scores_per_head(spec: SwinSpec, stage: int = 0) -> int:
    """Attention scores of one head over all the stage's tokens: n^2."""
    return swin_tokens(spec, stage) ** 2


def global_window(spec: SwinSpec, stage: int = 0) -> SwinSpec:
    """The same Swin with one window over the whole map of ``stage``: global attention there."""
    return replace(spec, window_size=(max(spec.stage_resolution(stage)),), window_clamp=True)


def swin_window_attention_macs(spec: SwinSpec, stage: int = 0) -> int:
    """One attention layer of the stage (:func:`vitbench.analytic.swin.block_macs`): qkv 3nC^2
    + QK^T M^2 nC + AV M^2 nC + proj nC^2 = 4nC^2 + 2M^2 nC (Eq. 2; on the padded map T if the
    windows do not tile it)."""
    parts = swin.block_macs(spec, stage)
    return sum(parts[name] for name in _ATTENTION_PARTS)


def swin_global_attention_macs(spec: SwinSpec, stage: int = 0) -> int:
    """The same layer with global attention (one window over the map): 4nC^2 + 2n^2 C (Eq. 1)."""
    return swin_window_attention_macs(global_window(spec, stage), stage)


def _swin_matmul_readings(spec: SwinSpec, stage: int, scores: str) -> list[Reading]:
    parts = swin.block_macs(spec, stage)
    return [Reading("matmul-only", f"QK^T and AV alone (2{scores} MACs)", parts["attn_scores"] + parts["attn_values"]),
            Reading("qk-only", f"QK^T alone ({scores} MACs)", parts["attn_scores"])]


def swin_global_attention_readings(spec: SwinSpec, stage: int = 0) -> list[Reading]:
    """Global attention read as QK^T and AV alone (2n^2 C) or QK^T alone (n^2 C)."""
    return _swin_matmul_readings(global_window(spec, stage), stage, "n^2 C")


def swin_window_attention_readings(spec: SwinSpec, stage: int = 0) -> list[Reading]:
    """Window attention read as QK^T and AV alone (2M^2 nC) or QK^T alone (M^2 nC)."""
    return _swin_matmul_readings(spec, stage, "M^2 nC")
