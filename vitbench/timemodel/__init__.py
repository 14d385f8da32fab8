"""Predicted step time, throughput and training cost, before running anything.

- :mod:`vitbench.timemodel.ops`: every operator of one step of any model, traced on fake tensors;
- :mod:`vitbench.timemodel.probes`: the synthetic networks a calibration times operator by operator;
- :mod:`vitbench.timemodel.calibration`: a machine's micro-benchmarks, saved as versioned JSON;
- :mod:`vitbench.timemodel.datasheet`: GPU profiles from published peaks, for a GPU one has not;
- :mod:`vitbench.timemodel.model`: per-operator roofline, framework cost per operator;
- :mod:`vitbench.timemodel.cost`: epochs, hours and money from a step time;
- :mod:`vitbench.timemodel.run`: rows for models x settings (``vitbench.predict``).
"""
