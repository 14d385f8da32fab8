"""Predicted step time, throughput and training cost, before running anything.

- :mod:`vitbench.timemodel.ops`: every operator of one step of any model, traced on fake tensors;
- :mod:`vitbench.timemodel.probes`: the synthetic networks a calibration times operator by operator;
- :mod:`vitbench.timemodel.calibration`: a machine's micro-benchmarks, saved as versioned JSON (the
  record in ``schema``, the fits in ``fitting``, the measuring in ``worker``, the files in ``cache``);
- :mod:`vitbench.timemodel.gpus`: the GPU catalogue (vendors' numbers, with sources);
- :mod:`vitbench.timemodel.gpu_model`: the GPU cost model (per operator, host and device), and
  :mod:`vitbench.timemodel.gpu_fit`: fitting its per-generation parameters to measured steps;
- :mod:`vitbench.timemodel.trace_cache`: traced steps kept on disk;
- :mod:`vitbench.timemodel.families`: model families, for the validation's error bands;
- :mod:`vitbench.timemodel.model`: per-operator roofline, framework cost per operator;
- :mod:`vitbench.timemodel.cost`: epochs, hours and money from a step time;
- :mod:`vitbench.timemodel.run`: rows for models x settings (``vitbench.predict``).
"""
