"""fvcore counting with handles for every operator our presets, torchvision and timm produce.

fvcore counts one multiply-add as one "flop". vitbench reports fvcore's total as
``fvcore_flops`` (fvcore's convention: MACs, plus LayerNorm/BatchNorm at 4-5 per element and a
few other element-wise operators), and the multiply-accumulates alone as ``fvcore_macs``.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import dataclass, field
from typing import Any

from vitbench.counters.formulas import mha_activations, mha_macs, sdpa_activations, sdpa_macs

#: fvcore operator keys (as in ``by_operator()``) that are multiply-accumulates.
MAC_OPERATORS = frozenset(
    {
        "conv", "_convolution_mode", "addmm", "bmm", "baddbmm", "einsum", "matmul", "mm", "linear",
        "scaled_dot_product_attention", "_native_multi_head_attention",
        "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention", "_scaled_dot_product_cudnn_attention",
    }
)

#: Element-wise and data-movement operators: counted in vitbench's separate element-wise figure
#: (analytic), explicitly ignored here so fvcore neither counts nor warns about them.
IGNORED_OPERATORS = (
    "aten::add", "aten::add_", "aten::sub", "aten::rsub", "aten::mul", "aten::mul_", "aten::div",
    "aten::div_", "aten::softmax", "aten::_softmax", "aten::_safe_softmax", "aten::log_softmax",
    "aten::gelu", "aten::gelu_", "aten::silu", "aten::silu_", "aten::sigmoid", "aten::tanh",
    "aten::hardtanh", "aten::hardtanh_", "aten::exp", "aten::sqrt", "aten::rsqrt", "aten::pow",
    "aten::mean", "aten::sum", "aten::repeat", "aten::unflatten", "aten::max_pool2d",
    "aten::avg_pool2d", "aten::feature_dropout", "aten::alpha_dropout", "aten::dropout_",
    "aten::scaled_dot_product_attention_math", "aten::linspace", "aten::meshgrid", "aten::sin",
    "aten::cos", "aten::clone", "aten::expand_as", "aten::fill_", "aten::numpy_T",
    "aten::_shape_as_tensor", "aten::layer_norm_backward", "aten::native_layer_norm",
    "aten::erfinv", "aten::neg", "aten::abs", "aten::masked_fill_", "aten::where",
    # data movement, comparisons and lookups seen in torchvision/timm/transformers models
    "aten::pad", "aten::constant_pad_nd", "aten::embedding", "aten::ne", "aten::eq", "aten::min",
    "aten::max", "aten::upsample_bicubic2d", "aten::adaptive_avg_pool1d", "aten::roll",
    "aten::masked_fill", "aten::clamp", "aten::clamp_min", "aten::log", "aten::floor_divide",
    "aten::remainder", "aten::cumsum", "aten::flip", "aten::arange", "aten::zeros_like",
    "aten::ones_like", "aten::full_like", "aten::relu_", "aten::relu", "aten::hardswish_",
    "aten::hardswish", "aten::hardsigmoid", "aten::hardsigmoid_", "aten::gelu_", "aten::silu",
    "aten::elu", "aten::leaky_relu", "aten::leaky_relu_", "aten::topk", "aten::sort",
    "aten::reciprocal", "aten::square", "aten::exp_", "aten::sign", "aten::floor", "aten::ceil",
    "aten::round", "aten::pixel_shuffle", "aten::pixel_unshuffle", "aten::channel_shuffle",
    "aten::repeat_interleave", "aten::reshape_as", "aten::numel", "aten::zero_", "aten::addcmul",
    "aten::linalg_vector_norm",
)


def _shape(value) -> list[int]:
    from fvcore.nn.jit_handles import get_shape

    return get_shape(value)


def _sdpa_flops(inputs, outputs) -> int:
    return sdpa_macs(_shape(inputs[0]), _shape(inputs[1]), _shape(inputs[2]))


def _sdpa_acts(inputs, outputs) -> int:
    return sdpa_activations(_shape(inputs[0]), _shape(inputs[1]), _shape(inputs[2]))


def _mha_embed_dim(inputs) -> int:
    return _shape(inputs[5])[1]  # qkv_weight (3E, E)


def _mha_flops(inputs, outputs) -> int:
    return mha_macs(_shape(inputs[0]), _shape(inputs[1]), _mha_embed_dim(inputs))


def _mha_acts(inputs, outputs) -> int:
    num_heads = inputs[4].toIValue()
    return mha_activations(_shape(inputs[0]), _shape(inputs[1]), _mha_embed_dim(inputs), num_heads)


def _conv_mode_flops(inputs, outputs) -> int:
    """``aten::_convolution_mode``: a convolution with ``padding='same'/'valid'`` (never transposed)."""
    from fvcore.nn.jit_handles import conv_flop_count

    return conv_flop_count(_shape(inputs[0]), _shape(inputs[1]), _shape(outputs[0]), transposed=False)


def _baddbmm_flops(inputs, outputs) -> int:
    batch, n, k = _shape(inputs[1])
    return batch * n * k * _shape(inputs[2])[-1]


SDPA_OPERATORS = (
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_cudnn_attention",
)

FLOP_HANDLES = {
    **{name: _sdpa_flops for name in SDPA_OPERATORS},
    "aten::_native_multi_head_attention": _mha_flops,
    "aten::baddbmm": _baddbmm_flops,
    "aten::_convolution_mode": _conv_mode_flops,
}
ACTIVATION_HANDLES = {
    **{name: _sdpa_acts for name in SDPA_OPERATORS},
    "aten::_native_multi_head_attention": _mha_acts,
}


@dataclass(frozen=True)
class FvcoreCount:
    macs: int
    flops: int  # fvcore's own convention (1 per MAC, plus norms etc.)
    activations: int  # -1 when not computed
    by_operator: dict[str, int] = field(hash=False)
    by_module: dict[str, int] = field(hash=False)  # MACs per module, children included
    unsupported: dict[str, int] = field(hash=False)
    table: str = field(default="", hash=False)


def _quiet(analysis):
    analysis.unsupported_ops_warnings(False)
    analysis.uncalled_modules_warnings(False)
    analysis.tracer_warnings("none")
    return analysis


@contextlib.contextmanager
def _silenced():
    """fvcore reports through warnings and its logger; vitbench returns the same facts as data."""
    logger = logging.getLogger("fvcore")
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(previous)


def _is_norm_like(operator: str) -> bool:
    """Operators fvcore counts that are not MACs (norms, pooling, upsampling, grid sampling)."""
    return operator.endswith(("norm", "pool2d", "sampler", "nearest2d", "bilinear2d"))


def fvcore_count(
    module, inputs: tuple[Any, ...], *, activations: bool = True, table_depth: int | None = None
) -> FvcoreCount:
    """Trace ``module`` with fvcore (once, twice with activations); MACs, fvcore total, activations.

    Operators still unsupported after vitbench's handles are returned in ``unsupported`` (data,
    never log output); an operator fvcore counts that is neither a MAC nor norm-like is listed
    there too, so that nothing is silently mixed into MACs."""
    ignored = {name: None for name in IGNORED_OPERATORS}
    with _silenced():
        from fvcore.nn import ActivationCountAnalysis, FlopCountAnalysis, flop_count_table

        flops = _quiet(FlopCountAnalysis(module, inputs).set_op_handle(**ignored, **FLOP_HANDLES))
        by_operator = {k: int(v) for k, v in flops.by_operator().items()}
        by_module = {
            name: int(sum(v for op, v in ops.items() if op in MAC_OPERATORS))
            for name, ops in flops.by_module_and_operator().items()
        }
        unsupported = {k: int(v) for k, v in flops.unsupported_ops().items()}
        total_acts, table = -1, ""
        if activations:
            acts = _quiet(
                ActivationCountAnalysis(module, inputs).set_op_handle(**ignored, **ACTIVATION_HANDLES)
            )
            total_acts = int(acts.total())
            if table_depth is not None:
                table = flop_count_table(flops, max_depth=table_depth, activations=acts, show_param_shapes=False)
    for name, value in by_operator.items():
        if name not in MAC_OPERATORS and not _is_norm_like(name):
            unsupported[f"counted-as-non-mac:{name}"] = value
    return FvcoreCount(
        macs=sum(v for k, v in by_operator.items() if k in MAC_OPERATORS),
        flops=int(sum(by_operator.values())),
        activations=total_acts,
        by_operator=by_operator,
        by_module=by_module,
        unsupported=unsupported,
        table=table,
    )
