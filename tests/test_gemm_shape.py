"""The (m, k, n) the time model looks rates up by, for every form of product it knows, worked out
by hand on meta tensors (nothing is computed)."""

from __future__ import annotations

import pytest

from vitbench.timemodel.ops import gemm_shape


def t(*shape: int):
    import torch

    return torch.empty(shape, device="meta")


@pytest.mark.parametrize("name, args, out, expected", [
    ("mm", lambda: (t(3, 5), t(5, 7)), None, (3, 5, 7)),
    ("addmm", lambda: (t(7), t(3, 5), t(5, 7)), None, (3, 5, 7)),
    # linear (x, weight [out, in]): batch dimensions folded into m: 2 x 3 rows
    ("linear", lambda: (t(2, 3, 5), t(7, 5)), None, (6, 5, 7)),
    ("bmm", lambda: (t(4, 3, 5), t(4, 5, 7)), None, (12, 5, 7)),
    ("baddbmm", lambda: (t(4, 3, 7), t(4, 3, 5), t(4, 5, 7)), None, (12, 5, 7)),
    # matmul of stacks: everything but the last dimension in m
    ("matmul", lambda: (t(2, 4, 3, 5), t(2, 4, 5, 7)), None, (24, 5, 7)),
    # einsum: from its result (2 x 3 rows, 7 columns) and its first operand's last dimension
    ("einsum", lambda: ("bik,bkj->bij", [t(2, 3, 5), t(2, 5, 7)]), lambda: t(2, 3, 7), (6, 5, 7)),
    # fused attention, q (2, 4, 9, 8), k (2, 4, 11, 8): (2 x 4 x 9 queries, head dim 8, 11 keys)
    ("_scaled_dot_product_flash_attention_for_cpu", lambda: (t(2, 4, 9, 8), t(2, 4, 11, 8), t(2, 4, 11, 8)), None,
     (72, 8, 11)),
    # conv 3 -> 6 channels, 3x3 kernel, output 2 x 6 x 4 x 5: m = 2 x 20 positions, k = 3 x 9, n = 6
    ("convolution", lambda: (t(2, 3, 8, 9), t(6, 3, 3, 3)), lambda: t(2, 6, 4, 5), (40, 27, 6)),
    # grouped, 4 -> 6 channels in 2 groups (weight 6 x 2 x 3 x 3): 2 products of k = 18, n = 3, folded into m
    ("convolution", lambda: (t(2, 4, 8, 9), t(6, 2, 3, 3)), lambda: t(2, 6, 4, 5), (80, 18, 3)),
    # backward (grad_output, input, weight): output positions from grad_output
    ("convolution_backward", lambda: (t(2, 6, 4, 5), t(2, 3, 8, 9), t(6, 3, 3, 3)), lambda: (t(2, 3, 8, 9),),
     (40, 27, 6)),
    # not a product, or arguments of another form: no shape
    ("add", lambda: (t(3, 5), t(3, 5)), None, ()),
    ("mm", lambda: (t(3, 5), 2.0), None, ()),
    ("_scaled_dot_product_flash_attention_for_cpu", lambda: (t(8),), None, ()),
    ("einsum", lambda: ("i->", [t(3)]), lambda: t(), ()),
])
def test_gemm_shape(name, args, out, expected):
    assert gemm_shape(name, args(), out() if out else None) == expected
