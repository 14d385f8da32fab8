"""Every model first-class: a seeded random sample of timm models across families (one per timm
module, hybrid ViTs added) gets ``params`` and ``macs`` from ``vitbench analyze``, equal to an
independent count: torch's FlopCounterMode over the module timm builds, on the meta device
(math attention, so every attention product is a counted matmul; a constructor that cannot run
on meta is built and run for real), and the module's parameter count.

The sample is drawn from the installed timm's registry with a fixed seed, so it is the same
models run after run for one timm version.
"""

from __future__ import annotations

import random

import pytest

timm = pytest.importorskip("timm")

SEED = 0
SAMPLE = 30
HYBRIDS = ("vit_tiny_r_s16_p8_224",)


def timm_sample(seed: int = SEED, size: int = SAMPLE) -> list[str]:
    rng = random.Random(seed)
    modules = sorted(m for m in timm.list_modules() if timm.list_models(module=m))
    picks = [rng.choice(sorted(timm.list_models(module=m))) for m in rng.sample(modules, min(size, len(modules)))]
    return picks + [h for h in HYBRIDS if h in timm.list_models() and h not in picks]


def independent_count(name: str, input_size: tuple[int, int, int]) -> tuple[int, int]:
    """(MACs of one image, parameters) of ``timm.create_model(name)`` by FlopCounterMode."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    try:
        with torch.device("meta"):
            model = timm.create_model(name)
        images = torch.empty(1, *input_size, device="meta")
    except Exception:  # noqa: BLE001 - e.g. a hybrid's dummy forward: built and run for real
        model = timm.create_model(name)
        images = torch.randn(1, *input_size)
    model.eval()
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(images)
    return counter.get_total_flops() // 2, sum(p.numel() for p in model.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("name", timm_sample())
def test_analyze_fills_params_and_macs_for_any_timm_model(name):
    import vitbench
    from vitbench.models.references import resolve

    [row] = vitbench.analyze(f"timm:{name}")
    macs, params = independent_count(name, resolve(f"timm:{name}").input_size)
    assert row["macs_source"] in ("analytic", "dispatch") and row["params_source"] in ("analytic", "module")
    assert (row["macs"], row["params"]) == (macs, params)
