"""A row's identity columns (:class:`vitbench.specs.identity.RowIdentity`: model, source, kind,
spec key, image size, patch size, batch size) with its analytic figures, or with empty analytic
columns when no formula covers the model."""

from __future__ import annotations

from typing import Any

from vitbench.analytic import complexity_of
from vitbench.settings import check_batch_size
from vitbench.specs.identity import RowIdentity
from vitbench.specs.target import Target

#: the analytic columns of a row without a formula
EMPTY_FIGURES = ("tokens", "params", "macs", "flops", "attn_matmul_share", "elementwise_ops")


def identity_record(target: Target, batch_size: int) -> dict[str, Any]:
    """The identity, then the analytic figures (None where no formula covers the model)."""
    check_batch_size(batch_size)
    identity = RowIdentity.of(target, batch_size)
    if target.spec is not None:
        figures = complexity_of(target.spec, batch_size).as_record()
    else:
        figures = dict.fromkeys(EMPTY_FIGURES)
    head = {k: v for k, v in identity.columns(keyed=False).items() if k != "overrides"}
    return {**head, **{k: v for k, v in figures.items() if k not in head}}


__all__ = ["identity_record"]
