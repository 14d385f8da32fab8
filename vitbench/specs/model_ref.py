"""``ModelRef``: a model reference parsed once (``timm:convnext_tiny+drop_path_rate=0.1``,
``vit-b/16+depth=6``) into the value the plan, the grid and the commands carry, instead of the
text being parsed again at each step. Torch-free: it only reads the text; resolving it to a
:class:`~vitbench.specs.target.Target` is :func:`vitbench.models.references.resolve`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from vitbench.errors import SpecError

REFERENCE_SOURCES = ("torchvision", "timm", "hf", "py")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT_TUPLE = re.compile(r"\d+(?:[x-]\d+)+")


def parse_value(text: str) -> Any:
    """'384' -> 384, '0.1' -> 0.1, 'true' -> True, 'none' -> None, '224x320' -> (224, 320),
    '2-2-6-2' -> (2, 2, 6, 2); anything else stays text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if _INT_TUPLE.fullmatch(lowered):
        return tuple(int(v) for v in re.split("[x-]", lowered))
    return text


def _keyword_arguments(text: str, head: str, pairs: list[str]) -> tuple[tuple[str, str], ...]:
    kwargs: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not _KEY.fullmatch(key) or not value:
            raise SpecError("model", text, f"keyword argument {pair!r} is not key=value (e.g. {head}+img_size=384)")
        if key in kwargs:
            raise SpecError("model", text, f"keyword argument {key!r} given twice")
        kwargs[key] = value
    return tuple(kwargs.items())


@dataclass(frozen=True)
class ModelRef:
    """One model as named: ``source`` is ``preset`` or a namespace of :data:`REFERENCE_SOURCES`,
    ``name`` the model within it, ``args`` the ``+key=value`` keyword arguments as written.
    ``text`` is the reference as given (the identity of a sweep's configurations)."""

    text: str
    source: str
    name: str
    args: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> ModelRef:
        """'timm:vit_base_patch16_224+img_size=384' -> ModelRef(source='timm',
        name='vit_base_patch16_224', args=(('img_size', '384'),)); a name without a known
        namespace is a preset. The one parser of the reference syntax."""
        head, *pairs = text.strip().split("+")
        args = _keyword_arguments(text, head, pairs)
        source, sep, name = head.partition(":")
        if sep and source in REFERENCE_SOURCES:
            if not name:
                raise SpecError("model", text, f"missing the model name after '{source}:'")
            return cls(text, source, name, args)
        return cls(text, "preset", head, args)

    @property
    def is_preset(self) -> bool:
        return self.source == "preset"

    @property
    def reference(self) -> str:
        """The reference without its keyword arguments (``timm:convnext_tiny``), as errors name it."""
        return self.text.split("+", 1)[0]

    def typed_args(self) -> dict[str, Any]:
        """The keyword arguments as values (``384``, ``(2, 2, 6, 2)``, ``True``)."""
        return {k: parse_value(v) for k, v in self.args}

    def spec_args(self) -> dict[str, Any]:
        """A preset's keyword arguments: text (spec fields parse it themselves), integer tuples
        (``2-2-6-2``) as tuples."""
        return {k: typed if isinstance(typed, tuple) else v for (k, v), typed in zip(self.args, self.typed_args().values())}

    def __str__(self) -> str:
        return self.text


def model_ref(model: str | ModelRef) -> ModelRef:
    """``model`` as a :class:`ModelRef` (text is parsed; a ModelRef is returned as it is)."""
    return model if isinstance(model, ModelRef) else ModelRef.parse(model)


__all__ = ["REFERENCE_SOURCES", "ModelRef", "model_ref", "parse_value"]
