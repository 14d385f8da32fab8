"""A row's identity columns (model, source, kind, image size, batch size) with its analytic
figures, or with empty analytic columns when no formula covers the model."""

from __future__ import annotations

from typing import Any

from vitbench.settings import check_batch_size
from vitbench.specs.target import Target, img_size_cell


def identity_record(target: Target, batch_size: int) -> dict[str, Any]:
    """The analytic figures, or the identity columns with empty analytic ones."""
    from vitbench.analytic import complexity

    if target.spec is not None:
        record = complexity(target.spec, batch_size).as_record()
        record["model"] = target.name
    else:
        check_batch_size(batch_size)
        height, width = target.img_size
        record = {
            "model": target.name,
            "kind": target.kind,
            "img_size": img_size_cell((height, width)),
            "patch_size": None,
            "tokens": None,
            "batch_size": batch_size,
            "params": None,
            "macs": None,
            "flops": None,
            "attn_matmul_share": None,
            "elementwise_ops": None,
        }
    return {"model": record.pop("model"), "source": target.source, **record}


__all__ = ["identity_record"]
