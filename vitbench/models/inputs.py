"""What a built module says about itself: which library made it, its input size, its main output."""

from __future__ import annotations

from typing import Any


def library_of(module: Any) -> str:
    """'timm', 'torchvision', 'hf' or 'py', from the module class's package."""
    package = type(module).__module__.split(".", 1)[0]
    return {"timm": "timm", "torchvision": "torchvision", "transformers": "hf"}.get(package, "py")


def size_pair(value: Any) -> tuple[int, int] | None:
    """An image size as the libraries give it (a positive integer or a pair of them) as
    (height, width); None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, value
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) and v > 0 for v in value):
        return int(value[0]), int(value[1])
    return None


def module_input_size(module: Any) -> tuple[int, int, int] | None:
    """(C, H, W) from the module's own metadata: timm ``pretrained_cfg``, an ``image_size`` /
    ``img_size`` attribute (torchvision ViT, vitbench), an hf ``config``; None if it says nothing."""
    cfg = getattr(module, "pretrained_cfg", None)
    if isinstance(cfg, dict) and isinstance(cfg.get("input_size"), (tuple, list)) and len(cfg["input_size"]) == 3:
        return tuple(int(v) for v in cfg["input_size"])  # type: ignore[return-value]
    spec = getattr(module, "spec", None)
    if spec is not None and hasattr(spec, "img_size") and hasattr(spec, "in_chans"):
        return (spec.in_chans, *spec.img_size)
    config = getattr(module, "config", None)
    if config is not None and size_pair(getattr(config, "image_size", None)):
        return (getattr(config, "num_channels", 3), *size_pair(config.image_size))
    for name in ("image_size", "img_size"):
        size = size_pair(getattr(module, name, None))
        if size:
            return (3, *size)
    return None


def main_output(output: Any) -> Any:
    """The tensor a forward pass is about: the output itself, or the first element of a tuple /
    list / dict (hf encoders return (last_hidden_state, pooler_output, ...))."""
    if isinstance(output, dict):
        output = next(iter(output.values()))
    while isinstance(output, (tuple, list)):
        output = output[0]
    return output
