"""vitbench: what a vision model costs — exact parameters and MACs, counted complexity, and
careful measurement for Vision Transformers and CNNs.

Heavy modules (torch, pandas, fvcore) load lazily, on first use of what needs them.
"""

from __future__ import annotations

from vitbench.hooks import DISPLAY
from vitbench.lazy import lazy_exports
from vitbench.version import __version__

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
    "choose": "vitbench.timemodel.choose",
    "devices": "vitbench.timemodel.catalogue",
    "calibrate": "vitbench.timemodel.calibration.worker",
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
    # what the commands are asked, as frozen settings (the keyword forms build the same objects)
    "PredictSettings": "vitbench.timemodel.predict_settings",
    "ChooseSettings": "vitbench.timemodel.predict_settings",
    "PlanSettings": "vitbench.analytic.memory.plan_settings",
    "SweepSettings": "vitbench.sweeps.settings",
    # what they return: Records of rows that are dicts and answer by typed attribute
    "Records": "vitbench.results",
    "Row": "vitbench.typed_rows",
    "RowStatus": "vitbench.row_status",
    "PredictionRow": "vitbench.typed_rows",
    "ChoiceRow": "vitbench.typed_rows",
    "MeasuredRow": "vitbench.typed_rows",
    "ErrorBand": "vitbench.typed_rows",
}

__all__ = ["__version__", *_EXPORTS]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def _records_html(records):
    from vitbench.reporting.html import table

    return table(records)


def _records_plot(records, **options):
    from vitbench.reporting.records_plot import plot_records

    return plot_records(records, **options)


# Records display themselves with the reporting layer's table and plot, imported when first used;
# results.py, below the reporting layer, only looks them up. The root is the public API's facade
# (the top layer), but importing any vitbench module runs this file: what it imports here, at
# module level, is of the bottom layer only (tests/test_layers.py); the rest loads on first use.
DISPLAY.update(html=_records_html, plot=_records_plot)
