"""Replay ``vitbench calibrate --device cuda`` without a GPU on the recorded steps, and judge it
on configurations the calibration has not seen (issue "GPU time on the GPUs people rent": the
calibration replayed on the recorded H100 observations, no parameter at a bound, the H100's 31
held-out configurations median <= 10%, p90 <= 25%).

The prior is the data-centre fit of the H200's 48 steps alone (``fit_datacenter.fit_all``: the
H100's steps are the ones judged, so the prior must not have seen them); the calibration is
:func:`vitbench.timemodel.gpu_calibration.fit_on_card` (cross-validated: each step predicted by a
fit of the others) on the H100's 48 recorded calibration steps, and again with its 5 recorded
device-bound steps (ViT-B/16 and ResNet-50 at batch 128-1024: the kind of step the new suite is
made of) added; each accepted one is judged on the H100's 31 predict-vs-profile steps (another run
on the same machine), beside the prior with the host the calibration fitted. For scale, the
data-centre fit of every step but the 31, and of steps that include them (in sample: the floor
the cost model reaches on them when it has seen them).

    python benchmarks/gpu/replay_calibration.py
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    from fit_datacenter import band, errors_of, fit_all, fit_hosts

    from vitbench.timemodel.calibration.schema import CalibrationError
    from vitbench.timemodel.gpu_calibration import HELD_PARAMETERS, fit_on_card
    from vitbench.timemodel.gpu_fit import Stacked, at_bounds
    from vitbench.timemodel.gpu_model import profile_for
    from vitbench.timemodel.gpu_records import observations, recorded
    from vitbench.timemodel.gpus import gpu

    measured = recorded(ROOT)
    h200 = [m for m in measured if m.machine == "h200-vm"]
    params, hosts, _, light = fit_all(h200)
    prior_params = replace(params, host_infer_s=hosts["h200-vm"][0], host_train_s=hosts["h200-vm"][1])
    prior = replace(profile_for(gpu("h100")), params=prior_params, light_dispatch=light)
    old_suite = [m for m in measured if m.machine == "h100-vm" and m.source == "calibration"]
    device_bound = [m for m in measured if m.machine == "h100-vm" and m.source in ("profile", "bare_loop")]
    judged = [m for m in measured if m.machine == "h100-vm" and m.source == "predict_vs_profile"]
    fixed = HELD_PARAMETERS
    stacked = Stacked(observations(judged), light)
    lines = [f"prior: the data-centre fit of the H200's {len(h200)} steps alone; at a bound: "
             f"{at_bounds(prior_params, fixed) or 'none'}",
             f"the prior on the H100's {len(judged)} predict-vs-profile steps: "
             f"{band([float(abs(p / m.measured_s - 1.0)) for p, m in zip(stacked.latencies(prior_params), judged)])}"]
    for name, steps in ((f"the H100's {len(old_suite)} recorded calibration steps", old_suite),
                        (f"those and its {len(device_bound)} recorded device-bound steps", old_suite + device_bound)):
        lines.append(f"calibrated on {name}:")
        try:
            result = fit_on_card(observations(steps), prior)
        except CalibrationError as refused:
            lines.append(f"  refused: {refused}")
            continue
        lines += [f"  host {result.params.host_infer_s * 1e6:.1f} / {result.params.host_train_s * 1e6:.1f} us an operator "
                  f"(inference / training), {result.host_bound} host-bound steps; prior weight {result.prior_weight:g}",
                  f"  at a bound: {at_bounds(result.params, fixed) or 'none'}",
                  f"  each step held out (4-fold): calibration {result.holdout_error_median:.1%} (p90 "
                  f"{result.holdout_error_p90:.1%}), prior {result.prior_holdout_error_median:.1%}"]
        # the judged run's own host (what a dispatch time measured on the machine at the time would give):
        # how much of the error is the host's, how much the device parameters'
        own = fit_hosts(judged, result.params, (light,))[0]["h100-vm"]
        for label, candidate in (("calibration", result.params),
                                 ("prior, the calibration's host", replace(prior_params, host_infer_s=result.params.host_infer_s,
                                                                            host_train_s=result.params.host_train_s)),
                                 (f"calibration, the run's own host ({own[0] * 1e6:.1f} / {own[1] * 1e6:.1f} us)",
                                  replace(result.params, host_infer_s=own[0], host_train_s=own[1]))):
            errors = [float(abs(p / m.measured_s - 1.0)) for p, m in zip(stacked.latencies(candidate), judged)]
            lines.append(f"  the H100's {len(judged)} predict-vs-profile steps, {label}: {band(errors)}")
    # for scale, what the cost model reaches on the 31 when it is fitted on them (in sample): the
    # target is judged against this floor
    lines.append(f"for scale, the data-centre fit (fit_datacenter.fit_all) on the H100's {len(judged)} predict-vs-profile steps:")
    h100 = [m for m in measured if m.machine == "h100-vm"]
    for name, steps in (("every recorded step but them (both cards)", [m for m in measured if m not in judged]),
                        ("every H100 step, them included (in sample)", h100),
                        ("every step, them included (in sample)", measured),
                        ("them alone (in sample)", judged)):
        params, hosts, _, light = fit_all(steps)
        errors = [abs(e) for e in errors_of(judged, hosts, params, light)]
        lines.append(f"  fitted on {name}: {band(errors)}; at a bound: {at_bounds(params, fixed) or 'none'}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
