"""How a step is set up for tracing (vitbench/timemodel/trace_setup.py): the deployed form of a
model, a device's autocast policy without that device, PyTorch's fused fast paths off."""

from __future__ import annotations

import sys

import pytest
import torch

from vitbench.timemodel.trace_setup import autocast_for, decomposed_fast_paths, deployed, reparameterize


class Branches(torch.nn.Module):
    """A block with a deploy-time form, as RepVGG's and MobileOne's: ``reparameterize`` merges its
    two branches into one, in place."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def reparameterize(self) -> None:
        del self.b


class ConvBn(torch.nn.Module):
    """A convolution and its batch norm: ``fuse`` returns the one convolution that replaces them
    (a new module, as timm's and torchvision's fusions do)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(3, 4, 1), torch.nn.BatchNorm2d(4)

    def fuse(self) -> torch.nn.Module:
        return torch.nn.Conv2d(3, 4, 1)


class Deploy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.deployed = False

    def switch_to_deploy(self) -> None:
        self.deployed = True


def _model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Sequential(Branches(), ConvBn()), Deploy())


def _assert_deployed(model: torch.nn.Module) -> None:
    branches, fused = model[0]
    assert not hasattr(branches, "b") and type(fused) is torch.nn.Conv2d and model[1].deployed


def test_the_deployed_form_is_made_in_place_by_timm():
    model = _model()
    assert reparameterize(model) is model
    _assert_deployed(model)


def test_without_timm_the_same_walk_makes_the_same_form(monkeypatch):
    monkeypatch.setitem(sys.modules, "timm.utils.model", None)  # import fails: timm is not installed
    model = _model()
    assert reparameterize(model) is model
    _assert_deployed(model)


def test_a_model_is_deployed_on_meta_and_on_the_cpu_only_when_meta_fails():
    model = deployed(_model)
    _assert_deployed(model)
    assert {p.device.type for p in model.parameters()} == {"meta"}

    def needs_values():
        module = torch.nn.Linear(4, 4)
        if module.weight.device.type == "meta":
            module.weight.sum().item()  # a value: meta tensors have none
        return module

    assert {p.device.type for p in deployed(needs_values).parameters()} == {"cpu"}


def test_cudas_autocast_policy_is_on_inside_without_a_gpu_and_restored_after():
    if torch.cuda.is_available():
        pytest.skip("with a GPU torch.autocast('cuda') itself is used")
    before = torch.get_autocast_dtype("cuda")
    assert not torch.is_autocast_enabled("cuda")
    with autocast_for("cuda", torch.bfloat16):
        assert torch.is_autocast_enabled("cuda") and torch.get_autocast_dtype("cuda") == torch.bfloat16
        assert torch.autocast_increment_nesting() == 2  # one level is this block's
        torch.autocast_decrement_nesting()
    assert not torch.is_autocast_enabled("cuda") and torch.get_autocast_dtype("cuda") == before
    assert torch.autocast_increment_nesting() == 1  # and it left none behind
    torch.autocast_decrement_nesting()


def test_no_autocast_dtype_is_full_precision_on_every_device():
    for device in ("cpu", "cuda"):
        with autocast_for(device, None):
            assert not torch.is_autocast_enabled(device)
    with autocast_for("cpu", torch.bfloat16):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16


def test_the_fused_attention_fast_path_is_off_inside_and_restored_after():
    assert torch.backends.mha.get_fastpath_enabled()
    with decomposed_fast_paths():
        assert not torch.backends.mha.get_fastpath_enabled()
    assert torch.backends.mha.get_fastpath_enabled()
