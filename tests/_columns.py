"""Columns of a measured row that other modules (sweep, compare, report) rely on, written out by
hand: a test compares rows against this list, never against what the code under test produces."""

INTERFACE_COLUMNS = (
    "model", "kind", "spec_key", "img_size", "patch_size", "batch_size", "device", "mode",
    "precision", "status", "error", "throughput_img_s", "latency_p50_s", "latency_p90_s",
    "latency_iqr_s", "latency_cv", "n_samples", "samples_s", "peak_memory_bytes",
    "peak_reserved_bytes", "mem_params_bytes", "mem_grads_bytes", "mem_optimizer_bytes",
    "mem_activations_bytes", "mem_temporaries_bytes", "attention_kernel", "flops_per_s", "mfu",
    "warnings", "env_device_name", "env_torch", "env_cuda", "env_driver", "env_cpu",
    "env_threads", "vitbench_version",
)
