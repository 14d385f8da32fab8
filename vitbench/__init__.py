"""vitbench: what a vision model costs — exact parameters and MACs, counted complexity, and
careful measurement for Vision Transformers and CNNs.

Heavy modules (torch, pandas, fvcore) load lazily, on first use of what needs them.
"""

from __future__ import annotations

from vitbench.lazy import lazy_exports

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS = {
    "analyze": "vitbench.api",
    "resolve_models": "vitbench.api",
    "validate": "vitbench.counters.validate",
    "count": "vitbench.counters",
    "module_table": "vitbench.counters",
    "profile": "vitbench.measure.profile",
    "sweep": "vitbench.sweeps",
    "predict": "vitbench.timemodel.run",
    "devices": "vitbench.timemodel.run",
    "calibrate": "vitbench.timemodel.calibration",
    "plan": "vitbench.analytic.memory",
    "memory_estimate": "vitbench.analytic.memory",
    "plan_records": "vitbench.api",
    "report": "vitbench.studies",
    "compare": "vitbench.gate",
    "audit": "vitbench.claims",
    "complexity": "vitbench.analytic",
    "build_model": "vitbench.models",
    "resolve": "vitbench.presets",
    "get_preset": "vitbench.presets",
    "list_presets": "vitbench.presets",
    "ViTSpec": "vitbench.specs",
    "ResNetSpec": "vitbench.specs",
    "PlainCNNSpec": "vitbench.specs",
    "with_overrides": "vitbench.specs",
    "RunSettings": "vitbench.settings",
}

__all__ = ["__version__", *_EXPORTS]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
