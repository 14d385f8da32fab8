"""The core modules measured and the reviewed equivalent mutants.

Whole-core mode (``--core``) measures every module of :data:`CORE_PACKAGES` (:func:`core_modules`),
each mutant against the tests the test map finds for its function, then, for a survivor, the
module's named test files (:func:`extra_tests`: its :data:`TARGETS` entry and
:data:`EXTRA_TESTS`). The named targets (``--target``) run whole test files: a module is named by
the first of its candidate paths that exists (modules move: the store from ``vitbench/sweeps/`` to
``vitbench/store/``, the calibration into schema / fitting / worker modules);
``--module PATH --tests FILE,...`` measures any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .equivalents import EQUIVALENT_BY_MODULE

#: the packages whose every module is a target of the whole-core mode
CORE_PACKAGES = ("gate", "timemodel", "store", "analytic", "counters")


@dataclass(frozen=True)
class Target:
    name: str
    candidates: tuple[str, ...]     # module paths in the package tree, the first that exists is used
    tests: tuple[str, ...]          # test files, relative to the repository root (fast, focused ones first:
                                    # pytest -x stops at the first failure)

    def module(self, root: Path) -> str | None:
        return next((c for c in self.candidates if (root / c).is_file()), None)


#: the gate's fast test files (the columnar gate's are slower: its own targets)
_GATE_TESTS = ("tests/test_compare.py", "tests/test_gate_boundaries.py", "tests/test_compare_gate.py",
               "tests/test_gate_hardening.py")

TARGETS = (
    Target("analytic.vit", ("vitbench/analytic/vit.py",),
           ("tests/test_analytic_vit.py", "tests/test_analytic.py")),
    Target("gate.rules", ("vitbench/gate/rules.py",),
           ("tests/test_gate_rules.py", "tests/test_gate_boundaries.py", "tests/test_compare.py")),
    Target("gate.verdicts", ("vitbench/gate/verdicts.py",),
           ("tests/test_gate_boundaries.py", "tests/test_compare.py", "tests/test_compare_gate.py",
            "tests/test_gate_hardening.py")),
    Target("timemodel.model", ("vitbench/timemodel/model.py",), ("tests/test_predict.py", "tests/test_timemodel_pricing.py")),
    Target("timemodel.calibration",
           ("vitbench/timemodel/calibration/fitting.py", "vitbench/timemodel/calibration_fitting.py",
            "vitbench/timemodel/calibration.py"),
           ("tests/test_predict.py", "tests/test_calibration.py")),
    Target("store.writer", ("vitbench/store/writer.py", "vitbench/sweeps/store.py"),
           ("tests/test_store_mutants.py", "tests/test_store_defaults.py", "tests/test_store.py",
            "tests/test_store_checks.py", "tests/test_store_fs.py", "tests/test_store_atomic.py",
            "tests/test_store_options.py", "tests/test_store_faults.py", "tests/test_store_formats.py")),
    # the rest of gate/ and store/: every module a target (issue 47); gate/__init__.py has no
    # mutation site (imports and __all__ only)
    *(Target(f"gate.{name}", (f"vitbench/gate/{name}.py",), tests) for name, tests in (
        ("matching", ("tests/test_gate_matching.py", *_GATE_TESTS)),
        ("result", ("tests/test_gate_result.py", *_GATE_TESTS)),
        ("comparing", ("tests/test_gate_comparing.py", "tests/test_compare.py", "tests/test_gate_columnar.py")),
        ("columnar", ("tests/test_gate_columnar_paths.py", "tests/test_gate_columnar.py")),
        ("array_verdicts", ("tests/test_gate_columnar_paths.py", "tests/test_gate_columnar.py")),
    )),
    *(Target(f"store.{name}", (f"vitbench/store/{name}.py",), tests) for name, tests in (
        ("__init__", ("tests/test_store.py",)),
        ("atomic", ("tests/test_store_atomic.py", "tests/test_store.py", "tests/test_store_faults.py")),
        ("format", ("tests/test_store_lines.py", "tests/test_input_files.py", "tests/test_store.py",
                    "tests/test_store_faults.py", "tests/test_store_formats.py")),
        ("layout", ("tests/test_store_defaults.py", "tests/test_store.py", "tests/test_store_fs.py")),
        ("reader", ("tests/test_store_reader.py", "tests/test_input_files.py", "tests/test_store.py",
                    "tests/test_store_checks.py", "tests/test_store_faults.py", "tests/test_store_formats.py")),
        ("export", ("tests/test_store_export.py", "tests/test_store_reader.py", "tests/test_store_formats.py",
                    "tests/test_store_checks.py", "tests/test_store.py")),
        ("options", ("tests/test_store_defaults.py", "tests/test_store_options.py")),
    )),
)

#: Mutants read and judged equivalent (no test can tell them apart from the module): by name
#: (function|operator|before -> after), each with the reason.
EQUIVALENT: dict[str, str] = {
    "_spread_duplicates|compare|len(values) > 1 -> len(values) >= 1":
        "one value: max / min is 1, never over 1 + DUPLICATE_SPREAD",
    "_spread_duplicates|constant|1 -> 0":
        "len(values) > 0 admits one value: max / min is 1, never over 1 + DUPLICATE_SPREAD",
    "_step_time_margin|compare|rule.failing_direction() > 0 -> rule.failing_direction() >= 0":
        "a rule with a boundary fails one way: failing_direction() is never 0 there",
    "_step_time_margin|compare|rule.failing_direction() < 0 -> rule.failing_direction() <= 0":
        "a rule with a boundary fails one way: failing_direction() is never 0 there",
    "_step_time_margin|constant|0 -> 1#2": "failing_direction() is +1 or -1 there: < 1 is < 0",
    "_step_time_margin|constant|0 -> -1#3": "failing_direction() is +1 or -1 there: > -1 is > 0",
    "_step_time_margin|compare|baseline <= 0 -> baseline < 0":
        "a timing baseline of 0 is INVALID before any margin is computed (impossible())",
    "_spread_duplicates|remove|if len(grouped.rows) < 2:     continue -> pass":
        "one row gives at most one value per metric: max / min is 1, never a spread",
    "_spread_duplicates|remove|continue -> pass":
        "one row gives at most one value per metric: max / min is 1, never a spread",
    "Store.__init__|constant|0 -> 1#3":
        "_size is set from the rows file's fstat when it is opened, before any write reads it",
    "Store.__init__|constant|0 -> -1#3":
        "_size is set from the rows file's fstat when it is opened, before any write reads it",
    "Store._load|constant|1 -> 2":
        "sweep.json's indentation: every reader parses the JSON, none reads its layout",
    "Store._open_rows|constant|0 -> 1":
        "getattr(os, 'O_NONBLOCK', 0): the default is read only where os has no O_NONBLOCK (not POSIX)",
    "Store._open_rows|constant|0 -> -1":
        "getattr(os, 'O_NONBLOCK', 0): the default is read only where os has no O_NONBLOCK (not POSIX)",
    "fit_affine|constant|1 -> 2":
        "every weight 2 / t^2 instead of 1 / t^2: least squares is the same under one common scale of its weights",
}


def target(name: str) -> Target:
    for t in TARGETS:
        if t.name == name:
            return t
    raise KeyError(f"no target {name!r}; known: {', '.join(t.name for t in TARGETS)}")


def module_tests(target_: Target, root: Path) -> list[Path]:
    """The target's test files that exist under ``root`` (a missing one is skipped)."""
    return [root / t for t in target_.tests if (root / t).is_file()]


#: gate/ and store/ (issue 47): mutants read and judged equivalent, with the reason
EQUIVALENT.update({
    "Group.value|constant|0 -> -1": "one value: values[0] and values[-1] are the same element",
    "_Side.status_failed|remove|if column.kind != 'values':     raise Fallback('status of many values') -> pass":
        "a status column of another kind (numbers typed by Arrow) then gives the record path's verdicts on columns, "
        "or an error that falls back to it (compare_files): the same result either way",
    "_Side.status_failed|remove|raise Fallback('status of many values') -> pass":
        "the same as removing the whole if (listed above): only the raise, with the same outcome",
    "_Comparison._key_columns.everywhere|return|return False -> return None":
        "read by an if: None is as false as False",
    **{f"_umask|constant|0 -> {n}": "the umask is read by setting a temporary one and restoring it: any "
       "temporary value reads the same mask" for n in (1, -1)},
    "_readline|constant|1 -> 2":
        "at the apparent end of a regular file os.read gives b'' whatever the count; a read that would block "
        "raises whatever the count",
    **{f"_skip_line|constant|{before} -> {after}": "the size of each read skipping the rest of an overlong line: "
       "any positive size reads on to the same newline" for before, after in ((1, 2), (20, 21), (20, 19))},
    "stream_latest|constant|True -> False": "streamed from the file or read back by offset: the same rows, in the "
                                            "same order (only the memory held differs)",
    "_read_legacy|constant|1 -> 0": "a sidecar without schema_version: 0 and 1 are both versions this vitbench reads",
    "_read_legacy|constant|1 -> 2": "a sidecar without schema_version: 1 and 2 are both versions this vitbench reads",
    "StoreBusyError|remove|exit_code = 2 -> pass": "VitbenchError's exit code is 2 already",
    **{f"fs_error|constant|0 -> {n}": "an OSError without an errno: 0, 1 (EPERM) and -1 are none of the errors "
       "with a hint of their own ('fix the path' either way)" for n in (1, -1)},
    "Store.__init__|remove|self.info: dict[str, Any] = {} -> pass":
        "info is set by _load, which open() runs before it returns a store (and nothing reads it on a failed open)",
    "Store._load|constant|1 -> 0": "sweep.json's indentation: every reader parses the JSON, none reads its layout",
    "Store._load|constant|True -> False": "sweep.json's key order: every reader parses the JSON",
    "Store._acquire|constant|0 -> 1":
        "the pid is written from the start of the lock file: truncated to 0 or 1 byte, the file holds the same text",
    **{f"{function}|constant|10000 -> {n}": "the chunk size changes how the CSV text is built, never its bytes"
       for function in ("csv_bytes", "_streamed_csv") for n in (9999, 10001)},
})


#: tests run for a module's survivors first in stage 2 (whole files, or test functions as file::name),
#: beyond the tests the map finds: code that runs only in a subprocess the tests start, or that the
#: tests read as data; and a module's own unit tests, which the map's budget may not reach first
#: (it ranks by how few core functions a test runs, and a module's callers are many)
EXTRA_TESTS: dict[str, tuple[str, ...]] = {
    "vitbench/timemodel/calibration/__init__.py": (
        "tests/test_calibration_progress.py",
    ),
    "vitbench/timemodel/question_cache.py": (
        "tests/test_question_cache.py::test_the_key_is_the_first_40_hex_digits_of_sha256_of_the_question_as_sorted_compact_json",
        "tests/test_question_cache.py::test_tags_keep_what_json_loses",
        "tests/test_question_cache.py::test_an_entry_over_one_mebibyte_is_not_written_and_the_largest_counts_read_back",
        "tests/test_question_cache.py::test_an_entry_that_would_be_refused_is_never_written",
    ),
    "vitbench/timemodel/cached_models.py": (
        "tests/test_question_cache.py::test_a_count_that_is_no_integer_from_0_to_2_to_the_62_is_stale",
        "tests/test_question_cache.py::test_the_largest_counts_sizes_and_memory_points_read_back",
        "tests/test_question_cache.py::test_what_would_not_read_back_exactly_or_may_change_is_not_cached",
    ),
    "vitbench/timemodel/prediction_rows.py": (
        "tests/test_gpu_kernels.py",
        "tests/test_input_files.py",
    ),
    "vitbench/timemodel/attention_paths.py": (
        "tests/test_gpu_model.py::test_the_math_paths_maps_are_queries_by_keys_and_only_sdpa_forward_takes_it",
    ),
    "vitbench/timemodel/families.py": (
        "tests/test_gpus.py",
    ),
    "vitbench/timemodel/gpus.py": (
        "tests/test_gpus.py",
    ),
    "vitbench/timemodel/catalogue.py": (
        "tests/test_gpus.py",
    ),
    "vitbench/timemodel/gpu_pricing.py": (
        "tests/test_gpu_calibration.py::test_a_calibration_object_prices_as_its_file_does",
        "tests/test_gpu_calibration.py::test_a_damaged_calibration_given_is_refused_naming_the_option",
        "tests/test_gpu_calibration.py::test_the_local_cards_cached_calibration_prices_it_and_a_damaged_one_is_a_warning",
        "tests/test_gpu_model.py::test_the_local_gpu_is_priced_by_its_name_and_refused_without_one",
    ),
    "vitbench/timemodel/calibration/cache.py": (
        "tests/test_gpu_calibration.py::test_the_calibration_cache_is_under_xdg_cache_home_or_home_and_names_are_cut_at_48",
    ),
    "vitbench/timemodel/calibration/schema.py": (
        "tests/test_calibration.py::test_gemm_sizes_up_to_a_trillion_are_taken_and_a_calibration_made_in_code_took_no_time",
        "tests/test_calibration.py::test_each_check_names_what_is_wrong",
    ),
    "vitbench/timemodel/calibration/worker.py": (
        "tests/test_calibration.py",
    ),
    "vitbench/timemodel/gpu_records.py": (
        "tests/test_gpu_replay.py::test_a_measured_record_is_frozen_and_a_card_outside_the_catalogue_is_refused",
    ),
    "vitbench/timemodel/fast.py": (
        "tests/test_predict.py::test_two_traces_are_aligned_only_operator_by_operator",
        "tests/test_predict.py::test_the_fast_path_traces_an_architecture_once_and_a_deep_vit_at_depths_1_and_2",
    ),
    "vitbench/timemodel/host.py": (
        "tests/test_gpu_model.py::test_host_dispatch_is_checked_and_measured",
        "tests/test_gpu_model.py::test_a_stated_host_dispatch_is_read_in_any_unit",
    ),
    "vitbench/timemodel/ops.py": (
        "tests/test_gpu_model.py::test_a_training_trace_with_no_class_count_takes_the_classes_from_the_scores",
        "tests/test_gpu_model.py::test_views_are_not_operators_and_a_kernel_is_named_for_the_gpu_only_when_asked",
    ),
    "vitbench/timemodel/gpu_fit.py": (
        "tests/test_gpu_calibration.py::test_the_fit_finds_the_parameters_that_made_the_times_and_starts_where_it_is_told",
        "tests/test_gpu_calibration.py::test_a_prior_weight_holds_a_parameter_at_the_prior_and_the_others_take_up_the_data",
        "tests/test_gpu_calibration.py::test_a_calibrations_parameters_are_read_within_their_bounds",
        "tests/test_gpu_calibration.py::test_a_parameter_within_1_percent_of_its_log_range_from_a_bound_is_at_it",
    ),
    "vitbench/timemodel/probes.py": (
        "tests/test_calibration_progress.py::test_the_token_probes_written_out_attention_is_scaled_dot_product_attention",
        "tests/test_calibration_progress.py::test_a_probe_records_its_forward_and_a_training_probe_its_dropout_backward_and_optimizer",
        "tests/test_calibration_progress.py::test_the_calibrations_convolutions_are_layers_of_the_models_people_run",
    ),
    "vitbench/timemodel/trace_cache.py": (
        "tests/test_trace_cache.py::test_an_entry_of_valid_operators_reads_back_as_they_were",
        "tests/test_trace_cache.py::test_an_operator_that_is_not_valid_is_refused_naming_its_field",
        "tests/test_trace_cache.py::test_an_entry_of_another_key_or_format_or_nested_too_deep_is_refused",
        "tests/test_trace_cache.py::test_the_cache_key_is_40_hex_digits",
        "tests/test_trace_cache.py::test_an_entry_over_64_mib_on_disk_or_512_mib_unpacked_is_refused",
    ),
    "vitbench/timemodel/trace_setup.py": (
        "tests/test_trace_setup.py",
    ),
    "vitbench/timemodel/gpu_backward.py": (
        "tests/test_gpu_backward.py",
    ),
    "vitbench/timemodel/run.py": (
        "tests/test_predict.py::test_the_auto_run_device_predicts_for_cuda_only_where_cuda_is",
        "tests/test_predict.py::test_a_calibration_file_without_the_precisions_rates_or_at_other_threads_is_refused",
        "tests/test_predict.py::test_the_in_process_trace_memo_is_emptied_past_256_configurations",
        "tests/test_predict.py::test_tf32_is_priced_on_the_tensor_cores",
    ),
    "vitbench/timemodel/conv_kernels.py": (
        "tests/test_conv_kernels.py",
    ),
    "vitbench/timemodel/gpu_calibration.py": (
        "tests/test_gpu_calibration.py::test_a_calibration_fits_the_configurations_measured_and_reports_those_that_failed",
        "tests/test_gpu_calibration.py::test_a_fit_needs_twice_the_held_out_stride_of_configurations",
        "tests/test_gpu_calibration.py::test_suite_is_mostly_device_bound_with_a_few_host_bound_steps",
        "tests/test_gpu_calibration.py::test_a_calibration_of_a_card_this_vitbench_does_not_know_is_refused_when_used",
        "tests/test_gpu_calibration.py::test_damaged_files_are_refused_with_the_reason",
    ),
    "vitbench/timemodel/interconnect.py": (
        "tests/test_choose.py::test_the_ring_all_reduce_worked_by_hand",
        "tests/test_choose.py::test_ddp_buckets_overlap_backward_worked_by_hand",
    ),
    "vitbench/timemodel/choose.py": (
        "tests/test_choose.py::test_a_model_whose_memory_cannot_be_traced_says_so_with_its_batch_one_figures",
        "tests/test_choose.py::test_a_card_whose_prediction_failed_says_why_and_is_not_priced",
        "tests/test_choose.py::test_a_batch_whose_peak_is_exactly_the_budget_fits",
        "tests/test_choose.py::test_without_a_memory_model_a_given_batch_is_priced_and_says_its_fit_was_not_checked",
        "tests/test_choose.py::test_backward_is_its_share_of_the_steps_macs_or_two_thirds",
        "tests/test_choose.py::test_a_training_rows_hours_and_cost_follow_from_its_step",
        "tests/test_choose.py::test_sorting_by_cost_without_a_price_for_every_card_is_refused",
        "tests/test_choose.py::test_a_rows_own_warnings_are_kept_beside_the_question_caches_refusals",
        "tests/test_choose.py::test_the_terminal_table_keeps_the_note_last",
    ),
    "vitbench/timemodel/predict_settings.py": (
        "tests/test_choose.py::test_choose_settings_refuse_naming_the_field",
        "tests/test_choose.py::test_choose_prices_one_card_on_one_node_unless_told",
    ),
    "vitbench/timemodel/prices.py": (
        "tests/test_choose.py::test_a_price_list_is_refused_naming_the_entry",
        "tests/test_choose.py::test_a_price_file_pricing_a_card_twice_or_too_large_is_refused",
        "tests/test_choose.py::test_prices_per_device_from_text_a_mapping_and_the_example_file",
        "tests/test_choose.py::test_bad_prices_are_one_line_naming_field_and_value",
    ),
    "vitbench/timemodel/gpu_model.py": (
        "tests/test_gpu_kernels.py",
        "tests/test_gpu_model.py::test_memory_bound_operators_move_their_bytes_at_the_achieved_bandwidth_and_l2_helps",
        "tests/test_gpu_model.py::test_host_dispatch_is_checked_and_measured",
        "tests/test_gpu_model.py::test_the_fit_recovers_predictions_from_data_made_with_known_parameters",
    ),
}


def core_modules(root: Path) -> list[str]:
    """Every module of the core packages (paths in the package tree, sorted)."""
    return sorted(p.relative_to(root).as_posix() for package in CORE_PACKAGES
                  for p in (root / "vitbench" / package).rglob("*.py"))


def extra_tests(module: str, tests_root: Path) -> list[str]:
    """The test files named for ``module`` (its target's and :data:`EXTRA_TESTS`') that exist."""
    named = [t for target_ in TARGETS if target_.module(tests_root) == module for t in target_.tests]
    named += EXTRA_TESTS.get(module, ())
    return [t for t in dict.fromkeys(named) if (tests_root / t.split("::", 1)[0]).is_file()]


def equivalent_reason(module: str, name: str) -> str | None:
    """Why the mutant ``name`` of ``module`` is equivalent, None when it is not listed."""
    return EQUIVALENT_BY_MODULE.get(module, {}).get(name) or EQUIVALENT.get(name)
