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
from _lazy import LazyModule

timm = LazyModule("timm")

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
@pytest.mark.parametrize_when_selected("name", timm_sample)
def test_analyze_fills_params_and_macs_for_any_timm_model(name):
    import vitbench
    from vitbench.models.references import resolve

    [row] = vitbench.analyze(f"timm:{name}")
    macs, params = independent_count(name, resolve(f"timm:{name}").input_size)
    assert row["macs_source"] in ("analytic", "dispatch") and row["params_source"] in ("analytic", "module")
    assert (row["macs"], row["params"]) == (macs, params)


# --- Hugging Face model types --------------------------------------------------------------------
HF_SAMPLE = 20


def hf_population() -> list[str]:
    """The transformers model types that are image encoders: the default config has an integer
    ``image_size`` (or a pair), ``num_channels`` and no ``num_frames`` (video), and the base
    model's forward takes ``pixel_values`` first (not token ids, not pre-cut patches). Derived
    from the installed transformers, not from vitbench's own tables."""
    import inspect

    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    out = []
    for arch in sorted(MODEL_MAPPING_NAMES):
        try:
            config = CONFIG_MAPPING[arch]()
        except Exception:  # noqa: BLE001 - a config that needs arguments is no default encoder
            continue
        size, channels = getattr(config, "image_size", None), getattr(config, "num_channels", None)
        if not isinstance(channels, int) or hasattr(config, "num_frames"):
            continue
        if not (isinstance(size, int) or (isinstance(size, (list, tuple)) and len(size) == 2)):
            continue
        names = MODEL_MAPPING_NAMES[arch]
        model_class = getattr(transformers, names if isinstance(names, str) else names[0], None)
        if model_class is None:
            continue
        arguments = [p for p in inspect.signature(model_class.forward).parameters if p != "self"]
        if arguments[:1] == ["pixel_values"] and not arch.startswith("siglip2"):
            out.append(arch)
    return out


def hf_sample(seed: int = SEED, size: int = HF_SAMPLE) -> list[str]:
    pytest.importorskip("transformers")
    population = hf_population()
    return sorted(random.Random(seed).sample(population, min(size, len(population))))


def hf_independent_count(arch: str) -> tuple[int, int]:
    """(MACs of one image, parameters) of ``AutoModel.from_config`` of the default config, by
    FlopCounterMode on the meta device, eager (math) attention."""
    import inspect

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoModel
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config = CONFIG_MAPPING[arch]()
    size = config.image_size if isinstance(config.image_size, (list, tuple)) else (config.image_size,) * 2
    with torch.device("meta"):
        model = AutoModel.from_config(config).eval()
    images = torch.empty(1, config.num_channels, *size, device="meta")

    def extra(device):
        """MiniCPM's vision towers take each image's patch grid beside the pixels (their
        forward's ``target_sizes``, "(h, w) patch grid sizes", shape (batch, 2))."""
        if "target_sizes" not in inspect.signature(model.forward).parameters:
            return {}
        return {"target_sizes": torch.tensor([[size[0] // config.patch_size, size[1] // config.patch_size]], dtype=torch.int32, device=device)}

    try:  # a forward that reads values (Tensor.item) cannot run on meta: built and run for real
        with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
            model(images, **extra("meta"))
    except (RuntimeError, NotImplementedError):
        model = AutoModel.from_config(config).eval()
        images = torch.zeros(1, config.num_channels, *size)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(images, **extra(images.device))
    return counter.get_total_flops() // 2, sum(p.numel() for p in model.parameters())


@pytest.mark.slow
@pytest.mark.parametrize_when_selected("arch", hf_sample)
def test_analyze_fills_params_and_macs_for_any_hf_model_type(arch):
    import vitbench

    [row] = vitbench.analyze(f"hf:{arch}")
    assert row.get("status", "ok") != "error", row.get("error")
    macs, params = hf_independent_count(arch)
    assert row["macs_source"] in ("analytic", "dispatch") and row["params_source"] in ("analytic", "module")
    assert (row["macs"], row["params"]) == (macs, params)


def hf_image_sized_types() -> list[str]:
    """Every transformers model type whose default config has an ``image_size``: image encoders,
    and the video, multimodal and prompted models that look like one from their config."""
    pytest.importorskip("transformers")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    out = []
    for arch in sorted(MODEL_MAPPING_NAMES):
        try:
            config = CONFIG_MAPPING[arch]()
        except Exception:  # noqa: BLE001 - a config that needs arguments
            continue
        if getattr(config, "image_size", None) is not None:
            out.append(arch)
    return out


@pytest.mark.slow
@pytest.mark.parametrize_when_selected("arch", hf_image_sized_types)
def test_every_hf_type_with_an_image_size_is_counted_or_refused_in_one_line(arch, capsys):
    """Each type, one by one: ``analyze`` gives a row with params and MACs, or refuses the
    model in one line with exit 2 (a video encoder, one that needs text or prompts, one whose
    input is not an image tensor). Never an error row from deep inside, never exit 3."""
    from vitbench.cli import main

    code = main(["analyze", f"hf:{arch}", "--format", "json"])
    out, err = capsys.readouterr()
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"vitbench: error: model='hf:{arch}'"), err
        return
    import json

    assert code == 0, err
    [row] = json.loads(out)["records"] if out.lstrip().startswith("{") else json.loads(out)
    assert row.get("status", "ok") == "ok", row.get("error")
    assert isinstance(row["macs"], int) and row["macs"] > 0 and isinstance(row["params"], int) and row["params"] > 0
