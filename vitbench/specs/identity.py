"""The identity of a row, made here and nowhere else (as torch.utils.benchmark's frozen
``TaskSpec`` is the identity every ``Measurement`` carries): which model, as the user named it
and where it came from, its kind and canonical spec key, at which image size and batch size, with
which overrides. analyze, plan, predict, validate, profile and sweep rows all begin from it, so
the same configuration has the same identity columns whichever command produced the row."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from vitbench.specs import spec_key
from vitbench.specs.target import Target, img_size_cell


@dataclass(frozen=True)
class RowIdentity:
    model: str
    source: str
    kind: str | None
    spec_key: str | None  # the spec's canonical JSON; the reference with its overrides when there is no spec
    img_size: int | str  # 224, or '224x320'
    patch_size: int | None
    batch_size: int | str | None  # 'auto' before a measurement chooses it
    overrides: str | None = None  # 'img_size=384,depth=6' as the command line takes them

    @classmethod
    def of(cls, model: Any, batch_size: int | str | None) -> RowIdentity:
        """The identity of ``model`` (a :class:`~vitbench.specs.target.Target`, or anything with
        a ``target`` attribute holding one, such as a measured target; or a spec) at ``batch_size``."""
        target = getattr(model, "target", model)
        if isinstance(target, Target):
            spec = target.spec
            return cls(
                model=target.name, source=target.source, kind=target.kind,
                spec_key=spec_key(spec) if spec is not None else target.label,
                img_size=img_size_cell(target.img_size), patch_size=getattr(spec, "patch_size", None),
                batch_size=batch_size, overrides=target.overrides_text or None,
            )
        spec = model
        return cls(
            model=spec.name, source="spec", kind=spec.kind, spec_key=spec_key(spec),
            img_size=img_size_cell(spec.img_size), patch_size=getattr(spec, "patch_size", None),
            batch_size=batch_size,
        )

    def columns(self, *, keyed: bool = True) -> dict[str, Any]:
        """The identity as row columns (``overrides`` only when there are some). ``keyed=False``
        leaves ``spec_key`` out: the gate matches rows by ``spec_key`` when every row has one, so
        the rows of analyze, predict and validate, which a user compares across changes to a
        model (``+width=48``), go without it and are matched by model; measured, planned and
        swept rows carry it."""
        out = asdict(self)
        if out["overrides"] is None:
            del out["overrides"]
        if not keyed:
            del out["spec_key"]
        return out


__all__ = ["RowIdentity"]
