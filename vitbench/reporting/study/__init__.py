"""The study report: from result records to ``report.md`` with tables (markdown and CSV), PNG
plots and conclusions computed from the numbers. Display only: running a study first is
:func:`vitbench.studies.report`'s job.

One module per section, each appearing when the results support it:

* ``patch``: MACs and parameters vs patch size (rows differing only in patch size);
* ``resolution``: MACs vs resolution, ViT against CNN, every change of order on the scan and at the
  sweep's rows (``crossings``: no curve is assumed monotone);
* ``attention``: attention share of MACs vs token count, and where the attention matmuls
  (2 n^2 d MACs per layer) outgrow the linear layers (n d (4d + 2m)): n = 2d + m + 1;
* ``sources``: the source documents' tables beside ours (default study only; figures from
  vitbench/data/source_figures.yaml) and the ablation variants;
* ``agreement``: analytic vs fvcore vs dispatch MACs;
* ``measured`` (+ ``pairs``): throughput, latency and peak memory vs batch size, with error bars;
  conclusions from stable rows only (withheld rows listed with their full reason, hollow in the
  plots; ``--clock cpu`` rows said to be CPU time);
* ``memory``: predicted vs measured peak memory;
* ``predicted``: the time model's predicted step time whenever rows have it (fastest configurations,
  time per image vs resolution/depth/batch, the breakdown by component);
* ``timing``: predicted vs measured step time;
* ``listing``: failed rows and every configuration.

``build`` runs them and writes the files. MACs are multiply-accumulates; FLOPs = 2 x MACs.
fvcore calls a MAC a "flop".
"""

from __future__ import annotations

from vitbench.reporting.study.build import ReportResult, render_report

__all__ = ["ReportResult", "render_report"]
