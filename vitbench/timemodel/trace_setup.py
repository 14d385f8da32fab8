"""How a step is set up for tracing (:mod:`vitbench.timemodel.ops`): the model in its deployed
form, a device's autocast policy switched on without that device, and PyTorch's fused inference
fast paths turned off so that every operator's work is visible."""

from __future__ import annotations

import contextlib
from typing import Any

from vitbench.errors import ModelError, model_code


def deployed(build: Any) -> Any:
    """``build()``'s module reparameterised (:func:`reparameterize`): built on meta (fusing
    needs every tensor on one device), or, where that fails, built for real on the CPU."""
    import torch

    try:
        with torch.device("meta"), model_code():
            return reparameterize(build())
    except ModelError:  # the model's code cannot run on meta: retried with real tensors
        pass
    with torch.device("cpu"):
        return reparameterize(build())


def reparameterize(module: Any) -> Any:
    """The deployed (reparameterised, fused) form of ``module``, as timm benchmarks and users
    deploy it: timm's ``reparameterize_model`` when timm is installed, else the same walk here:
    each child with a ``fuse`` method is replaced by what it returns, else its ``reparameterize``
    or ``switch_to_deploy`` is called; then its own children, in place."""
    try:
        from timm.utils.model import reparameterize_model
    except ImportError:
        _deploy_children(module)
        return module
    return reparameterize_model(module, inplace=True)


def _deploy_children(module: Any) -> None:
    for name, child in list(module.named_children()):
        if hasattr(child, "fuse"):
            setattr(module, name, child.fuse())
        elif hasattr(child, "reparameterize"):
            child.reparameterize()
        elif hasattr(child, "switch_to_deploy"):
            child.switch_to_deploy()
        _deploy_children(child)


@contextlib.contextmanager
def autocast_for(device_type: str, dtype: Any):
    """``torch.autocast(device_type, dtype)``; for CUDA without a GPU (fake tensors) the same
    policy switched on directly, since ``torch.autocast('cuda')`` disables itself there."""
    import torch

    if dtype is None:
        yield
        return
    if device_type != "cuda" or torch.cuda.is_available():
        with torch.autocast(device_type, dtype=dtype):
            yield
        return
    enabled, previous = torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", dtype)
    torch.autocast_increment_nesting()
    try:
        yield
    finally:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled("cuda", enabled)
        torch.set_autocast_dtype("cuda", previous)


@contextlib.contextmanager
def decomposed_fast_paths():
    """``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` in inference take a fused
    "fast path" (``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``) whose
    work no FLOP formula sees: a trace of it priced a user's encoder at 0.14x its measured time.
    Traced with the fast path off, the step is its component operators (the ones the counters
    count), each priced by its work."""
    import torch

    mha = torch.backends.mha  # set_fastpath_enabled: in every torch vitbench supports (>= 2.13)
    enabled = mha.get_fastpath_enabled()
    mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        mha.set_fastpath_enabled(enabled)


def cuda_present() -> bool:
    """Whether this machine has a CUDA device (a backward of fake CUDA tensors needs one)."""
    import torch

    return torch.cuda.is_available()


__all__ = ["autocast_for", "cuda_present", "decomposed_fast_paths", "deployed", "reparameterize"]
