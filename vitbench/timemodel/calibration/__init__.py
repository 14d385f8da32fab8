"""A machine's calibration for the time model, saved as versioned JSON.

Measured on the device, at a thread count, in a fresh worker process with the steady host
allocator (as ``profile`` measures), CPU time per thread (as ``profile --clock cpu``):

    gemm          MAC/s of ``torch.mm`` on the grid GEMM_M x GEMM_KN x GEMM_KN, per dtype;
                  between grid points, multilinear interpolation of log(rate) in log(m, k, n)
    efficiency    per compute kernel (conv, conv_backward, conv_grouped, conv_grouped_backward, attention,
                  attention_backward, bmm, gemm): median over the probes' calls of
                  achieved MAC/s / gemm rate at the call's (m, k, n)
    ops           per memory-bound operator name: ``t = overhead + bytes / bandwidth``, fitted
                  (least squares on relative error) to the probes' calls at three sizes
    overhead_s, bandwidth_bytes_s
                  the same fit on ``torch.add`` from 10^2 to 10^7 elements: the price of an
                  operator the probes never ran
    in_step_factor, framework_s
                  fitted to the probes' whole steps (timed without the timing mode), see
                  :func:`~vitbench.timemodel.calibration.fitting.fit_steps`: memory-bound
                  operators run colder in a step than on their own (``in_step_factor``); Python,
                  dispatch and autograd cost a fixed time per operator (``framework_s``: infer,
                  train, optimizer)

The probes (:mod:`vitbench.timemodel.probes`) are two small synthetic networks, never a model
that is predicted. A calibration is tied to the device, its name, the thread count and the
torch version (:func:`~vitbench.timemodel.calibration.cache.calibration_key`);
:func:`~vitbench.timemodel.calibration.cache.load` refuses one made under another torch.

One job per module:

- :mod:`~vitbench.timemodel.calibration.schema`: the :class:`Calibration` record, its validation,
  and its interpolation (``gemm_rate``, ``efficiency_at``);
- :mod:`~vitbench.timemodel.calibration.fitting`: the fits from timed calls and steps;
- :mod:`~vitbench.timemodel.calibration.worker`: the measuring, in a worker process;
- :mod:`~vitbench.timemodel.calibration.cache`: where calibrations are kept, saving and loading.

GPUs are priced by their own model (:mod:`vitbench.timemodel.gpu_model`), not by a calibration
of this form.
"""

#: how long a CPU calibration takes, as help texts and the first prediction state it (measured:
#: docs/time.md, "How long a calibration takes")
CPU_CALIBRATION_TIME = "under a minute on an idle 2-core CPU, several times longer while other processes use the cores"
