"""Every torchvision classification model that ships weights metadata: vitbench's counted
parameters equal ``weights.meta["num_params"]`` and its counted MACs equal ``weights.meta["_ops"]``
(torchvision's "GFLOPS": in fact billions of multiply-accumulates of convolutions, linear layers
and attention matmuls) to the printed precision of ``_ops`` (3 decimals).

The expected values are torchvision's own metadata, shipped with the package (nothing is
downloaded). Each model is built as torchvision's builder builds it for those weights (no weights
loaded): ``num_classes`` from the weights' categories, ViT ``image_size`` from ``min_size``,
GoogLeNet without its auxiliary heads (the builder drops them after loading), at the crop size of
the weights' transforms. The full matrix runs under ``-m slow``; a few cheap models by default.
"""

from __future__ import annotations

import pytest

torchvision = pytest.importorskip("torchvision")

from vitbench.analytic import complexity  # noqa: E402
from vitbench.counters import count_detailed  # noqa: E402
from vitbench.counters.components import analytic_by_group  # noqa: E402
from vitbench.models.references import resolve  # noqa: E402

#: models whose counted figures cannot match the metadata, and why (none so far)
CANNOT_MATCH: dict[str, str] = {}
DEFAULT_RUN = {
    "ResNet18_Weights.IMAGENET1K_V1",
    "MobileNet_V3_Small_Weights.IMAGENET1K_V1",
    "SqueezeNet1_1_Weights.IMAGENET1K_V1",
    "GoogLeNet_Weights.IMAGENET1K_V1",
    "ViT_B_32_Weights.IMAGENET1K_V1",
}


def _cases():
    from torchvision.models import get_model_weights, list_models

    for name in list_models(module=torchvision.models):
        for weights in get_model_weights(name):
            marks = () if str(weights) in DEFAULT_RUN else (pytest.mark.slow,)
            yield pytest.param(name, weights, id=str(weights), marks=marks)


def _reference(name: str, weights) -> tuple[str, dict]:
    """The reference text and overrides that build what torchvision's builder builds for
    ``weights`` (see each builder's ``_ovewrite_named_param`` calls), at the transforms' crop."""
    kwargs = []
    if weights.meta.get("categories") is not None:
        kwargs.append(f"num_classes={len(weights.meta['categories'])}")
    if name == "googlenet":  # the builder loads with aux heads, then removes them
        kwargs.append("aux_logits=false")
    overrides = {"img_size": weights.transforms.keywords["crop_size"]}
    if name.startswith("vit_"):
        assert weights.meta["min_size"][0] == overrides["img_size"]
    return "+".join([f"torchvision:{name}", *kwargs]), overrides


@pytest.mark.parametrize("name, weights", list(_cases()))
def test_counted_params_and_macs_match_torchvision_metadata(name, weights):
    if str(weights) in CANNOT_MATCH:
        pytest.xfail(CANNOT_MATCH[str(weights)])
    reference, overrides = _reference(name, weights)
    target = resolve(reference, overrides)
    counted = count_detailed(target, counters=("dispatch",))
    assert counted.module_params == weights.meta["num_params"]
    # _ops is printed with 3 decimals: equal to that precision
    assert abs(counted.dispatch_macs / 1e9 - weights.meta["_ops"]) <= 0.0005 + 1e-9, (
        counted.dispatch_macs,
        weights.meta["_ops"],
    )
    if target.spec is not None:  # an analytic spec is claimed: exact, component by component
        analytic = complexity(target.spec)
        assert (analytic.params, analytic.macs) == (counted.module_params, counted.dispatch_macs)
        expected = analytic_by_group(analytic.macs_by_component, target.spec, counted.dispatch_by_module)
        assert {k: v for k, v in counted.dispatch_by_group.items() if v} == {k: v for k, v in expected.items() if v}


def test_every_classification_builder_ships_weights_metadata():
    """So that the matrix above covers every classification model (a builder without weights
    would silently drop out of it)."""
    from torchvision.models import get_model_weights, list_models

    names = list_models(module=torchvision.models)
    assert len(names) >= 80
    assert all(len(list(get_model_weights(n))) >= 1 for n in names)
