"""What is measured: a resolved model (:class:`vitbench.models.target.Target`: a preset, a spec,
a ``timm:`` / ``torchvision:`` / ``hf:`` / ``py:`` reference or a live ``nn.Module``) with what
the measurement needs to know before building it: its size (parameters and MACs per image,
analytic when a spec describes it, counted by the dispatch counter otherwise) and the classes of
the training loss.

A :class:`Measured` crosses to a worker process as :meth:`Measured.to_request` (a hand-made
spec's fields, else the reference text ``target.label``; the worker resolves it again and builds
the module itself). A live module cannot: it is measured in the calling process.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from vitbench import analytic
from vitbench.counters import count
from vitbench.errors import ModelError, VitbenchError, model_code
from vitbench.models import build_meta, build_model
from vitbench.models.inputs import main_output
from vitbench.models.references import resolve
from vitbench.row_warnings import warning
from vitbench.specs import format_overrides, spec_from_dict, spec_key, spec_to_dict


@dataclass(frozen=True)
class Measured:
    target: Any  # vitbench.models.target.Target
    params: int | None
    macs: int | None  # per image, forward pass
    macs_source: str | None  # 'analytic' | 'dispatch'
    num_classes: int | None  # width of a (batch, classes) output; None: the output is not logits
    #: what could not be found out about the model, and what the row lacks for it (row warnings)
    notes: tuple[dict[str, str], ...] = field(default=(), compare=False)

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def overrides(self) -> str | None:
        """The overrides applied to the model, as the command line takes them (None if none)."""
        return format_overrides(dict(self.target.overrides)) if self.target.overrides else None

    @property
    def kind(self) -> str:
        return self.target.kind

    @property
    def spec(self):
        return self.target.spec

    @property
    def reference(self) -> str | None:
        return None if self.target.source in ("preset", "spec", "module") else self.target.label

    @property
    def img_size(self) -> tuple[int, int]:
        return self.target.img_size

    @property
    def in_chans(self) -> int:
        return self.target.in_chans

    @property
    def key(self) -> str:
        """The identity of the architecture: the spec's canonical JSON, else the reference."""
        return spec_key(self.spec) if self.spec is not None else self.target.label

    @property
    def portable(self) -> bool:
        """Whether a worker process can rebuild the model (not a live module)."""
        return self.target.module is None

    def build(self) -> Any:
        """A fresh ``nn.Module`` (random weights, training mode) on the current default device."""
        return build_model(self.spec if self.target.source == "spec" else self.target)

    def to_request(self) -> dict[str, Any]:
        """The model as JSON for a worker: what it resolves again, and the size figures it
        need not count again."""
        if not self.portable:
            raise TypeError("a live nn.Module cannot be sent to a worker process")
        known = {"params": self.params, "macs": self.macs, "macs_source": self.macs_source,
                 "num_classes": self.num_classes}
        if self.target.source == "spec":
            return {"spec": spec_to_dict(self.spec), **known}
        return {"reference": self.target.label, "input_size": list(self.target.input_size), **known}

    def with_spec(self, spec) -> Measured:
        """The same model built from another spec (the run's attention path applied); only for
        vitbench's own models (a preset or a spec), whose module the spec builds."""
        if self.target.source not in ("preset", "spec"):
            raise TypeError(f"a {self.target.source} model is built by its library, not from a spec")
        return replace(self, target=replace(resolve(spec), overrides=self.target.overrides))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ModelError) and exc.__cause__ is not None:  # what the model's code raised
        exc = exc.__cause__
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:200]


def _counted(target) -> tuple[int | None, int | None, int | None, tuple[dict[str, str], ...]]:
    """(parameters, MACs per image, output classes, notes) counted on the meta device; None for
    what cannot be counted, and a note saying so (the row still runs)."""
    params = macs = classes = None

    notes: list[dict[str, str]] = []
    try:
        counted = count(target, 1, ("dispatch",))
        params, macs = counted.get("module_params"), counted.get("dispatch_macs")
    except VitbenchError as exc:  # refused or the model's code failed: the row still runs, without a size
        notes.append(warning("not-counted", f"parameters and MACs could not be counted ({_reason(exc)}): the row has no "
                             "params, macs, flops_per_s or mfu", "`vitbench analyze` on the model shows the cause"))
    try:
        import torch

        with model_code():  # the model's code, on the meta device
            module = build_meta(target) if target.module is None else None
            if module is None:
                module = copy.deepcopy(target.module).to("meta")
            with torch.no_grad():
                out = main_output(module.eval()(torch.empty(1, *target.input_size, device="meta")))
        classes = int(out.shape[-1]) if out.dim() == 2 else None
    except VitbenchError as exc:  # the model's code cannot run on meta: the row still runs, with the mean-square loss
        notes.append(warning("output-width-unknown", f"the output width could not be found on the meta device ({_reason(exc)}): a "
                             "training step uses the mean-square loss of the output instead of cross-entropy"))
    return params, macs, classes, tuple(notes)


def measured(target) -> Measured:
    """A resolved Target -> :class:`Measured` (analytic size from the spec, else counted)."""
    if target.spec is not None:  # every spec kind has its formulas

        result = analytic.complexity(target.spec, 1)
        return Measured(target, result.params, result.macs, "analytic", target.spec.num_classes)
    params, macs, classes, notes = _counted(target)
    return Measured(target, params, macs, "dispatch" if macs is not None else None, classes, notes)


def resolve_measured(model: Any) -> Measured:
    """A preset name, reference, spec, Target, live module (or a Measured) -> Measured."""
    if isinstance(model, Measured):
        return model

    return measured(resolve(model))


def from_request(request: dict[str, Any]) -> Measured:
    """The worker side of :meth:`Measured.to_request`."""
    if "reference" in request:
        target = resolve(request["reference"], input_size=tuple(request["input_size"]))
    else:
        target = resolve(spec_from_dict(request["spec"]))
    if "params" not in request:
        return measured(target)
    return Measured(target, request["params"], request["macs"], request["macs_source"], request["num_classes"])
