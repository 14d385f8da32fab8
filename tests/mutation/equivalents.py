"""Equivalent mutants of the whole-core run, by module: read and judged to change nothing any
caller could observe, each with the reason (``function|operator|before -> after`` names the
mutant, see :mod:`tests.mutation.mutants`). The targets' older list, by name alone, is
:data:`tests.mutation.targets.EQUIVALENT`."""

from __future__ import annotations

EQUIVALENT_BY_MODULE: dict[str, dict[str, str]] = {
    "vitbench/timemodel/calibration/worker.py": {
        **{f"_run_worker|constant|5.0 -> {after}": "the readers' join follows the worker's exit (waited for above), "
           "which closes its pipes and ends both readers: the join returns before any timeout"
           for after in ("6.0", "4.0")},
    },
    "vitbench/timemodel/gpu_fit.py": {
        "fit.residuals|constant|0 -> -1": "with every weight 0 the prior's residuals are 0 * (x - prior) = 0 with a "
                                          "zero Jacobian: appending them leaves the cost, its gradient and each step alike",
    },
    "vitbench/timemodel/probes.py": {
        "token_network.Net.forward|constant|1 -> 2#5": "the probe's values are never read, only its operators timed: "
                                                       "a roll over dims (2, 2) is the same operator on the same tensor, "
                                                       "moving the same bytes",
        "time_kernels|remove|torch.manual_seed(0) -> pass": "the kernels are timed and their values never read: "
                                                             "which random numbers fill the tensors changes no shape, "
                                                             "operator or count (denormals are flushed)",
        "run_probe.step|remove|model.train() -> pass": "a training probe's model is made by the factory in this call "
                                                       "(a new nn.Module is in training mode) and nothing calls eval() "
                                                       "on it: train() changes nothing",
    },
    "vitbench/timemodel/trace_cache.py": {
        "_op|constant|0 -> 1#1": "_valid is _op's one-pass fast path: an operator with aliases 0 it no longer takes "
                                 "goes through the field-by-field checks, which accept it and build the same Op "
                                 "(bool(0) is False, as 0 == 1 is)",
    },
    "vitbench/timemodel/interconnect.py": {
        "data_parallel_step|constant|0.0 -> -1.0#2": "the last bucket is ready when backward ends (produced = "
                                                      "gradient_bytes) and its all-reduce costs more than 0 (a ring "
                                                      "step's latency at least): done - backward_s > 0 whenever it is reached",
    },
    "vitbench/timemodel/gpu_model.py": {
        "kernel_times|constant|1.0 -> 2.0#4": "the floor only keeps the division finite: an operator of 0, 1 or 2 "
                                              "bytes is within any L2 (megabytes) and its fraction is 1 either way",
        "kernel_times|constant|1.0 -> 2.0#9": "depthwise_eff is 0 only in a fit made before it existed, and then the "
                                              "depthwise kinds are priced by the grouped rule (depthwise_kinds is "
                                              "empty): this array is never selected, `or 1.0` keeps the division finite",
        "kernel_times|constant|1.0 -> 0.0": "peak_flops('float32', tf32) is None only for tf32 on a card without "
                                            "TF32 tensor cores, which predict refuses (check_precisions) and a "
                                            "calibration never measures; every catalogue card has an FP32 peak",
    },
    "vitbench/timemodel/ops.py": {
        "_operands|constant|2 -> 3": "matmul takes two tensors and tensordot's third argument is its dims (an int or "
                                     "lists of ints), never a tensor: args[:3] holds the tensors args[:2] does",
        "_trace_steps|remove|del out -> pass": "the output is a fake tensor (no storage, no values): holding it through "
                                               "backward records the same operators with the same shapes",
    },
    "vitbench/timemodel/attention_paths.py": {
        "math_attention_bytes|constant|1 -> 2#1": "SDPA requires the keys and the values to have the same sequence "
                                                  "length: args[1].shape[-2] == args[2].shape[-2]",
    },
    "vitbench/counters/fvcore_counter.py": {
        "_quiet|constant|False -> True": "fvcore's warnings about unsupported operators go to its logger, which "
                                         "_silenced() holds at ERROR around every analysis (the facts are returned as data)",
        "_quiet|remove|analysis.tracer_warnings('none') -> pass": "the tracer's warnings are Python warnings, which "
                                                                  "_silenced() ignores around every analysis",
        **{f"_mha_acts|constant|{before} -> {after}": "query, key and value of PyTorch's native attention are one tensor "
           "(nn.MultiheadAttention takes its fast path only for self-attention): any of their shapes is the others'"
           for before, after in (("0", "1"), ("1", "2"))},
    },
    "vitbench/analytic/convnext.py": {
        "elementwise_by_kind|constant|0 -> -1": "stage_resolution(i) halves the stem's map i times: range(-1) is as "
                                                "empty as range(0)",
    },
    "vitbench/counters/memory_trace.py": {
        "_trace|constant|0 -> -1": "the labels are fake tensors (no values): only their shape and dtype reach the trace",
        "_trace|constant|0 -> 1#1": "forward_end is set by every step before it is read: its first value is never returned",
        "_trace|constant|2 -> 3": "a third step repeats the second: the optimizer's state exists from the first, "
                                  "only the second is recorded, and the last step's forward end is the same steady state",
    },
    "vitbench/counters/validate.py": {
        "_differing|constant|0 -> -1":
            "the default of a group the formulas do not have: a counted group is never 0 (own_macs drops modules "
            "without MACs), so it differs from the default 0 and -1 alike",
    },
    "vitbench/counters/dispatch.py": {
        "dispatch_count|remove|continue -> pass":
            "FlopCounterMode's 'Global' total and the root module's are the same (every operator runs inside the "
            "root's forward) and both name the path ''; whichever comes last, by_module[''] holds that total",
    },
    "vitbench/gate/result.py": {
        "CompareResult.counts|remove|if hasattr(self.rows, 'verdict_counts'):     return self.rows.verdict_counts() -> pass":
            "the columnar rows' own count is a shortcut: the loop over the rows that follows counts the same "
            "verdicts in the same first-seen order (tests/test_gate_columnar.py asserts both paths' counts agree)",
    },
    "vitbench/store/export.py": {
        "export_store|remove|source = source.parent -> pass":
            "read_store takes the rows file as well as its folder: given rows.jsonl, the export then reads "
            "the records whole instead of streaming them, and writes the same bytes",
    },
    "vitbench/gate/array_verdicts.py": {
        "_run_stats|constant|0.0 -> 1.0":
            "the variance of a row of under 2 runs: such a row has not enough runs (MIN_RUNS = 2), its p "
            "is set to nan before any use and its no_spread is and-ed with enough",
    },
    "vitbench/analytic/memory/cnn.py": {
        "_inputs|return|return image -> return None":
            "the image is held by the caller for the whole step (never dropped): a convolution that "
            "also saves and releases it, or a None it skips, leaves every count the same",
    },
}
