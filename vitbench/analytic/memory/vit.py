"""Memory replay of one step of vitbench's VisionTransformer (vitbench.models.vit).

One function per sub-layer, forward and backward, on a :class:`~.replay.Replay`. Notation as in
:mod:`vitbench.analytic.vit`: per image n tokens of width d, h heads, MLP width m, N patches,
K classes; ``w`` the activation width (4 fp32, 2 under autocast), ``rw`` the residual stream's
(fp32 once an fp32 CLS token or position table is added to it), ``aw`` the width inside
attention (fp32 when SDPA falls back to the math path under autocast, which upcasts).

Per block, training, SDPA, no dropout, fp32 (w = rw = 4), autograd saves

    LN1 input + stats (n d w + 8 n), qkv input (n d w), qkv (3 n d w), attention output
    (n d w) + log-sum-exp (4 h n), proj input (n d w), LN2 input + stats, fc1 input (n d w),
    fc1 output (n m w, GELU's input), fc2 input (n m w)

per image; the math path saves q and k copies, softmax's h n^2 probabilities and a v copy
instead of the fused kernel's output and log-sum-exp.
"""

from __future__ import annotations

from typing import Any

from vitbench.analytic.memory.closed_forms import FP32_BYTES, INDEX_BYTES
from vitbench.analytic.memory.replay import Replay, Tensor
from vitbench.analytic.memory.vit_ops import ViTOps
from vitbench.specs import ViTSpec


def vit_param_sizes(spec: ViTSpec) -> list[int]:
    """Parameter tensors in ``model.parameters()`` order (sizes in values)."""
    d, m = spec.embed_dim, spec.mlp_hidden
    sizes = []
    if spec.pool == "cls":
        sizes.append(d)
    if spec.pos_embed == "learned-1d":
        sizes.append((spec.pos_embed_len or spec.tokens) * d)
    elif spec.pos_embed == "learned-2d":
        rows, cols = spec.grid
        sizes += [rows * d // 2, cols * d // 2]
    sizes += [spec.patch_dim * d, d]
    for _ in range(spec.depth):
        sizes += [d, d, 3 * d * d] + ([3 * d] if spec.qkv_bias else [])
        sizes += [d * d, d]
        if spec.norms_per_block == 2:
            sizes += [d, d]
        sizes += [d * m, m, m * d, d]
    if spec.final_norm:
        sizes += [d, d]
    sizes += [d * spec.num_classes, spec.num_classes]
    return sizes


def vit_step(spec: ViTSpec, r: Replay, w: int, attention: str) -> None:
    """One step of vitbench.models.vit.VisionTransformer: forward (and loss, backward)."""
    _ViTStep(spec, r, w, attention).run()


class _ViTStep(ViTOps):
    """The replay of one ViT step; each method is one sub-layer (forward or backward)."""

    def __init__(self, spec: ViTSpec, r: Replay, w: int, attention: str):
        # The residual stream is fp32 once an fp32 CLS token or position table is added to it.
        stream = FP32_BYTES if (spec.pool == "cls" or spec.pos_embed != "none") else w
        super().__init__(r, w, stream, spec.embed_dim)
        self.spec = spec
        self.n, self.h, self.m = spec.tokens, spec.num_heads, spec.mlp_hidden
        self.nd, self.nm = self.n * self.d, self.n * spec.mlp_hidden
        self.hnn, self.hn = self.h * self.n * self.n, self.h * self.n
        self.train = r.grad
        self.stream_fp32 = self.rw == FP32_BYTES
        self.drop = self.train and spec.dropout > 0
        self.attn_drop = self.train and spec.attn_dropout > 0
        # The CPU flash kernel has no dropout: SDPA then falls back to its math path, which on
        # the CPU upcasts 16-bit q, k, v to fp32.
        fallback = attention == "sdpa" and self.attn_drop
        self.attention = "math" if fallback else attention
        self.aw = FP32_BYTES if (fallback and self.low) else w
        self.gx: Tensor | None = None  # the residual stream's gradient during backward

    def run(self) -> None:
        """Forward (patch embedding, positions, blocks, head), loss and backward."""
        r = self.r
        self.patch_embed()
        x = self.positions(self.tokens)
        blocks = []
        for _ in range(self.spec.depth):
            x, saved = self.block(x)
            blocks.append(saved)
        r.drop(self.held)
        logits = self.head(x)
        if not self.train:
            r.mark("forward_end")
            r.drop(logits)
            r.leave_autocast()
            return
        self.loss(logits)
        self.head_backward()
        for s in reversed(blocks):
            self.mlp_backward(s)
            self.attention_backward(s)
        self.embed_backward()
        r.mark("backward_end")

    # --- forward -----------------------------------------------------------------------------
    def patch_embed(self) -> None:
        """The batch (and targets), then conv or linear patch embedding -> ``self.tokens``."""
        spec, r, w = self.spec, self.r, self.w
        C, (height, width) = spec.in_chans, spec.img_size
        self.image = r.new(C * height * width * FP32_BYTES)  # held by the caller
        if self.train:
            r.new(INDEX_BYTES)  # the targets, held by the caller for the whole step
        if spec.patch_embed == "linear":
            patches = r.new(C * height * width * FP32_BYTES)  # reshape of the permuted view copies
            self.tokens, pe_in, pe_wc = self.linear(patches, True, spec.patch_dim, self.d,
                                                    spec.num_patches, input_grad=False)
            r.drop(patches)
            self.pe_saved = (pe_in, pe_wc)
            return
        wc = r.cast_weight(spec.patch_dim * self.d, w)
        r.cast_weight(self.d, w)
        img_in = r.new(C * height * width * w) if self.low else self.image
        self.tokens = self.patch_conv()
        r.end_op()
        r.save(img_in, wc)
        if img_in is not self.image:
            r.drop(img_in)
        self.pe_saved = (img_in, wc)

    def patch_conv(self) -> Tensor:
        """The convolution's kernel, as _CNN.conv picks it: im2col for 16 bits, or B = 1 with a
        patch <= 3 and C H W <= 20480 (columns live until the output exists); else oneDNN
        (weight reorder, output in its own layout, then a plain copy)."""
        spec, r, w = self.spec, self.r, self.w
        N, C, (height, width) = spec.num_patches, spec.in_chans, spec.img_size
        self.slow_pe = self.low or (r.batch_one and spec.patch_size <= 3 and C * height * width <= 20480)
        if self.slow_pe:
            cols = r.new(spec.patch_dim * N * w)
            tokens = r.new(N * self.d * w)
            r.drop(cols)
            return tokens
        r.transient((0, FP32_BYTES * spec.patch_dim * self.d))
        blocked = r.new(N * self.d * w)
        tokens = r.new(N * self.d * w)
        r.drop(blocked)
        return tokens

    def positions(self, x: Tensor) -> Tensor:
        """2-D position tables added to the patches, the CLS token concatenated, 1-D positions
        added; forward_features keeps the result (``self.held``) until the blocks return."""
        spec, r, N, rw = self.spec, self.r, self.spec.num_patches, self.rw
        if spec.pos_embed in ("learned-2d", "sincos-2d"):
            grid = r.new(0, N * self.d * FP32_BYTES) if spec.pos_embed == "learned-2d" else None
            y = r.new(N * self.d * rw)
            r.drop(x, grid)
            x = y
        if spec.pool == "cls":
            y = r.new(self.nd * rw)  # cat
            r.drop(x)
            x = y
        if spec.pos_embed == "learned-1d":
            y = r.new(self.nd * rw)
            r.drop(x)
            x = y
        self.pos_noise = None
        self.held = x
        self.held.refs += 1
        if self.drop:
            x, self.pos_noise = self.dropout(x, self.nd, rw)
        return x

    def block(self, x: Tensor) -> tuple[Tensor, dict[str, Any]]:
        """x_mid = x + attention branch; x_out = x_mid + MLP branch. Returns x_out and what
        the backward needs."""
        s: dict[str, Any] = {"x_in": x}
        x_mid = self.attention_branch(x, s)
        x_out = self.mlp_branch(x_mid, s)
        self.r.drop(x)  # nn.Sequential's reference to the block input
        return x_out, s

    def residual_add(self, branch: Tensor, *inputs: Tensor) -> Tensor:
        """stream + branch (the 16-bit branch promoted to the stream's dtype first)."""
        r = self.r
        if self.rw != self.w:
            r.transient((self.nd * self.rw, 0))  # type promotion of the branch before the add
        out = r.new(self.nd * self.rw)
        r.drop(branch, *inputs)
        return out

    def attention_branch(self, x: Tensor, s: dict[str, Any]) -> Tensor:
        """LN1, qkv, attention (sdpa or math), proj (and its dropout), residual add."""
        r, d, n, nd = self.r, self.d, self.n, self.nd
        y1, s["ln1"] = self.layer_norm(x, n)
        qkv, s["qkv_in"], s["qkv_w"] = self.linear(y1, self.stream_fp32, d, 3 * d, n, self.spec.qkv_bias)
        attn_out = self.attention_sdpa(qkv, s) if self.attention == "sdpa" else self.attention_math(s)
        proj, s["proj_in"], s["proj_w"] = self.linear(attn_out, False, d, d, n)
        r.drop(attn_out, qkv)  # Attention.forward's locals go
        if self.drop:
            proj, s["proj_noise"] = self.dropout(proj, nd, self.w)
        r.drop(y1)  # the caller's reference to LN1's output
        s["x_mid"] = x_mid = self.residual_add(proj)
        return x_mid

    def attention_sdpa(self, qkv: Tensor, s: dict[str, Any]) -> Tensor:
        """CPU flash attention saves q, k, v (views of qkv), its output (n d w) and the fp32
        log-sum-exp (4 h n); its per-thread workspace is small and ignored. The output's layout
        makes transpose(1, 2).reshape a view."""
        r = self.r
        out = r.new(self.nd * self.w)
        lse = r.new(self.hn * FP32_BYTES)
        r.save(qkv, out, lse)
        r.drop(lse)
        s["sdpa"] = (qkv, out, lse)
        return out

    def attention_math(self, s: dict[str, Any]) -> Tensor:
        """softmax(q k^T * scale) v, explicitly: saves copies of q and k (n d aw each), the
        probabilities (h n^2 aw), the dropped-out probabilities and a copy of v."""
        r, nd, hnn, aw, w = self.r, self.nd, self.hnn, self.aw, self.w
        upcast = [r.new(nd * aw) for _ in range(3)] if aw != w else []  # q, k, v to fp32
        qs = r.new(nd * aw)  # q * scale
        qc = r.new(nd * aw)  # matmul folds the non-contiguous q and k^T into copies
        kc = r.new(nd * aw)
        scores = r.new(hnn * aw)
        r.save(qc, kc)
        r.drop(qs, qc, kc)
        probs = r.new(hnn * aw)  # softmax saves its output
        r.save(probs)
        r.drop(scores)
        attn_noise = None
        used = probs
        if self.attn_drop:
            used, attn_noise = self.dropout(probs, hnn, aw)
        vc = r.new(nd * aw)
        o = r.new(nd * aw)
        r.save(used, vc)
        r.drop(vc, *upcast)
        if aw != w:  # back to the autocast dtype
            o16 = r.new(nd * w)
            r.drop(o)
            o = o16
        attn_out = r.new(nd * w)  # transpose(1, 2).reshape copies
        r.drop(o, used)
        s["math"] = (qc, kc, probs, attn_noise, used, vc)
        return attn_out

    def mlp_branch(self, x_mid: Tensor, s: dict[str, Any]) -> Tensor:
        """LN2, fc1, GELU (saves its input), dropout, fc2, dropout, residual add."""
        r, d, m, n, w = self.r, self.d, self.m, self.n, self.w
        y2, s["ln2"] = self.layer_norm(x_mid, n)
        f1, s["fc1_in"], s["fc1_w"] = self.linear(y2, self.stream_fp32, d, m, n)
        g1 = r.new(self.nm * w)
        r.save(f1)
        r.drop(f1)
        s["fc1_out"] = f1
        if self.drop:
            g1, s["drop1"] = self.dropout(g1, self.nm, w)
        f2, s["fc2_in"], s["fc2_w"] = self.linear(g1, False, m, d, n)
        r.drop(g1)
        if self.drop:
            f2, s["drop2"] = self.dropout(f2, self.nd, w)
        r.drop(y2)
        return self.residual_add(f2, x_mid)

    def head(self, x: Tensor) -> Tensor:
        """Pooling (CLS: x[:, 0] is a view that keeps the whole stream alive; mean: d rw per
        image), the final LayerNorm, the classifier."""
        r, d, rw = self.r, self.d, self.rw
        if self.spec.pool == "cls":
            pooled = x
        else:
            pooled = r.new(d * rw)
            r.drop(x)
        head_in = pooled
        self.norm_saved = None
        if self.spec.final_norm:
            head_in = r.new(d * rw)
            stats = r.new(2 * FP32_BYTES)
            r.save(pooled, stats)
            r.drop(stats, pooled)
            self.norm_saved = (pooled, stats)
        logits, self.head_xin, self.head_wc = self.linear(head_in, self.stream_fp32, d, self.spec.num_classes, 1)
        r.drop(head_in)
        return logits

    def loss(self, logits: Tensor) -> None:
        """Cross entropy: log_softmax saved in fp32 (K per image); the loss and nll_loss's
        saved total_weight (8 bytes); then autocast is left."""
        r = self.r
        self.logp = r.new(self.spec.num_classes * FP32_BYTES)
        r.save(self.logp)
        r.drop(logits)
        self.loss_value = r.new(0, 2 * FP32_BYTES)
        r.leave_autocast()
        r.mark("forward_end")

    # --- backward ----------------------------------------------------------------------------
    def head_backward(self) -> None:
        """d loss / d logits (K fp32), the classifier, the final LayerNorm, the pooling:
        leaves the stream's gradient (n d rw) in ``self.gx``."""
        r, d, K, rw = self.r, self.d, self.spec.num_classes, self.rw
        g = r.new(K * FP32_BYTES)
        r.release(self.logp)
        g = self.linear_backward(g, False, self.head_xin, self.head_wc, d, K, 1, x_fp32=self.stream_fp32)
        if self.norm_saved is not None:
            gi = r.new(d * rw)
            r.new(0, FP32_BYTES * 2 * d)
            r.drop(g)
            r.release(*self.norm_saved)
            g = gi
        self.gx = r.new(self.nd * rw)  # Select/MeanBackward: the stream's gradient
        r.drop(g)

    def branch_gradient(self, saved: dict, noise: str) -> tuple[Any, bool]:
        """The residual add's gradient entering a branch: cast to the branch dtype, then through
        the branch's output dropout; ``shared`` says whether it is still the stream's tensor."""
        r, nd, w = self.r, self.nd, self.w
        gb, shared = self.gx, True
        if self.rw != w:
            gb, shared = r.new(nd * w), False
        if noise in saved:
            gd = r.new(nd * w)
            r.release(saved[noise])
            if not shared:
                r.drop(gb)
            gb, shared = gd, False
        return gb, shared

    def mlp_backward(self, s: dict[str, Any]) -> None:
        """x_out = x_mid + drop2(fc2(drop1(gelu(fc1(LN2(x_mid)))))); the branch's input
        gradient is accumulated into the stream's in place."""
        r, d, m, n, w = self.r, self.d, self.m, self.n, self.w
        gb, shared = self.branch_gradient(s, "drop2")
        gh = self.linear_backward(gb, shared, s["fc2_in"], s["fc2_w"], m, d, n)
        if "drop1" in s:
            gh = self.dropout_backward(gh, s["drop1"], self.nm, w)
        gf = r.new(self.nm * w)  # GELU backward
        r.drop(gh)
        r.release(s["fc1_out"])
        gy = self.linear_backward(gf, False, s["fc1_in"], s["fc1_w"], d, m, n, x_fp32=self.stream_fp32)
        r.drop(self.layer_norm_backward(gy, s["x_mid"], s["ln2"], n))

    def attention_backward(self, s: dict[str, Any]) -> None:
        """x_mid = x_in + proj_drop(proj(attention(LN1(x_in)))): proj, the attention kernel,
        the q/k/v gradients stacked and copied back to qkv's layout, qkv, LN1."""
        r, d, n, nd, w = self.r, self.d, self.n, self.nd, self.w
        gb, shared = self.branch_gradient(s, "proj_noise")
        ga = self.linear_backward(gb, shared, s["proj_in"], s["proj_w"], d, d, n)
        if self.attention == "sdpa":
            gq, gk, gv = r.new(nd * w), r.new(nd * w), r.new(nd * w)
            r.drop(ga)
            r.release(*s["sdpa"])
        else:
            gq, gk, gv = self.math_backward(ga, s["math"])
        gqkv = r.new(3 * nd * w)  # UnbindBackward stacks
        r.drop(gq, gk, gv)
        gcopy = r.new(3 * nd * w)  # the permute/reshape's backward copies
        r.drop(gqkv)
        gy = self.linear_backward(gcopy, False, s["qkv_in"], s["qkv_w"], d, 3 * d, n,
                                  self.spec.qkv_bias, x_fp32=self.stream_fp32)
        r.drop(self.layer_norm_backward(gy, s["x_in"], s["ln1"], n))

    def math_backward(self, ga: Tensor, saved: tuple) -> tuple[Tensor, Tensor, Tensor]:
        """Backward of the explicit path: grad of the probabilities (h n^2 aw), of v, through
        dropout and softmax, then of q and k; under the fp32 fallback, ToCopy to 16 bits."""
        r, nd, hnn, aw, w = self.r, self.nd, self.hnn, self.aw, self.w
        qc, kc, probs, attn_noise, used, vc = saved
        gc = r.new(nd * w)  # UnsafeViewBackward: a contiguous copy
        r.drop(ga)
        if aw != w:
            g32 = r.new(nd * aw)
            r.drop(gc)
            gc = g32
        gp, gv = r.new(hnn * aw), r.new(nd * aw)
        r.drop(gc)
        r.release(used, vc)
        if attn_noise is not None:
            gp = self.dropout_backward(gp, attn_noise, hnn, aw)
        gs = r.new(hnn * aw)  # softmax backward
        r.drop(gp)
        r.release(probs)
        gq0, gk = r.new(nd * aw), r.new(nd * aw)
        r.drop(gs)
        r.release(qc, kc)
        gq = r.new(nd * aw)  # the scale's MulBackward
        r.drop(gq0)
        if aw != w:  # the upcasts' ToCopyBackward
            converted = [r.new(nd * w) for _ in range(3)]
            r.drop(gq, gk, gv)
            return converted[0], converted[1], converted[2]
        return gq, gk, gv

    def embed_backward(self) -> None:
        """Position dropout, the position tables' and CLS token's grads, the patch embedding's
        weight grads (conv: oneDNN reorders or im2col columns), then the step's end."""
        spec, r, w, n, d = self.spec, self.r, self.w, self.n, self.d
        if self.pos_noise is not None:
            gd = r.new(self.nd * self.rw)
            r.release(self.pos_noise)
            r.drop(self.gx)
            self.gx = gd
        if spec.pos_embed == "learned-1d":
            r.new(0, FP32_BYTES * (spec.pos_embed_len or n) * d)
        if spec.pool == "cls":
            r.new(0, FP32_BYTES * d)
        if spec.pos_embed == "learned-2d":
            rows, cols = spec.grid
            r.new(0, FP32_BYTES * (rows + cols) * (d // 2))
        if spec.patch_embed == "conv":
            self.patch_conv_backward()
        else:
            r.weight_grad(spec.patch_dim * d, w)
            r.weight_grad(d, w)
        r.release(*self.pe_saved)
        r.flush()
        r.drop(self.gx, self.loss_value)

    def patch_conv_backward(self) -> None:
        """Weight and bias grads of the patch convolution (no input grad: the image)."""
        spec, r, w = self.spec, self.r, self.w
        N, pe_weights = spec.num_patches, spec.patch_dim * self.d
        gcont = r.new(N * self.d * w)  # the gradient of the transposed view, made contiguous
        if self.slow_pe:
            cols = r.new(spec.patch_dim * N * w)
            r.weight_grad(pe_weights, w)
            r.drop(cols)
        else:
            reorder = r.new(N * self.d * w)
            blocked = r.new(0, FP32_BYTES * pe_weights)
            r.drop(reorder)
            r.new(0, FP32_BYTES * pe_weights)
            r.drop(blocked)
        r.weight_grad(self.d, w)
        r.drop(gcont)
