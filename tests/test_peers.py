"""The peers table (vitbench.counters.peers) against what the installed peers do.

Each row is observed on the installed version: the peer counts the fused operator either exactly
(the formula's MACs) or not at all, never something else; on a version the table has been
checked on, which of the two must be what the table says. A release newer than every checked one
may differ from the table without failing (a peer that improved); the row is then reported."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from vitbench.counters.formulas import mha_macs, sdpa_macs
from vitbench.counters.peers import PEER_BEHAVIOURS, behaviour, installed_version, peer_sentences, release

B, H, N, D = 2, 3, 17, 8


def _flop_counter_macs(fn) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops() // 2


def observe_cpu_flash() -> tuple[int, int]:
    q = torch.randn(B, H, N, D)
    return _flop_counter_macs(lambda: F.scaled_dot_product_attention(q, q, q)), sdpa_macs(q.shape, q.shape, q.shape)


def observe_native_mha() -> tuple[int, int]:
    """nn.MultiheadAttention in eval, no grad, batch first, an even number of heads: the
    conditions of its native fast path (asserted to be taken, or the observation means nothing)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        names: set = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.add(func._overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    heads, embed = 2, 2 * D
    mha = torch.nn.MultiheadAttention(embed, heads, batch_first=True).eval()
    x = torch.randn(B, N, embed)
    with torch.no_grad(), Seen() as seen:
        mha(x, x, x, need_weights=False)
    assert "_native_multi_head_attention" in seen.names, f"the fast path was not taken: {sorted(seen.names)}"
    counted = _flop_counter_macs(lambda: mha(x, x, x, need_weights=False))
    return counted, mha_macs(x.shape, x.shape, embed)


def observe_fvcore_sdpa() -> tuple[int, int]:
    from fvcore.nn import FlopCountAnalysis

    class Attention(torch.nn.Module):
        def forward(self, q):
            return F.scaled_dot_product_attention(q, q, q)

    q = torch.randn(B, H, N, D)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = FlopCountAnalysis(Attention(), (q,))
        analysis.unsupported_ops_warnings(False)
        analysis.uncalled_modules_warnings(False)
        counted = int(analysis.total())  # fvcore's "flop" is one MAC
    return counted, sdpa_macs(q.shape, q.shape, q.shape)


OBSERVERS = {"flop_counter_cpu_flash": observe_cpu_flash, "flop_counter_native_mha": observe_native_mha,
             "fvcore_sdpa": observe_fvcore_sdpa}


def test_every_row_has_an_observer():
    assert set(OBSERVERS) == {row.key for row in PEER_BEHAVIOURS}


@pytest.mark.parametrize("key", sorted(OBSERVERS))
def test_installed_peer_behaves_as_the_table_says(key):
    row = behaviour(key)
    version = installed_version(row.peer)
    assert version is not None, f"{row.peer} is a dependency and must be installed"
    counted, formula = OBSERVERS[key]()
    assert formula > 0
    assert counted in (0, formula), f"{row.counter} {version} counted {counted} MACs, neither 0 nor {formula}"
    if release(version) > release(row.newest_checked()):
        if (counted == formula) != row.counts(version):
            pytest.xfail(f"{row.peer} {version} is newer than the table's checks and behaves differently: update {key}")
        return
    assert (counted == formula) == row.counts(version), f"{row.counter} {version}: update row {key} of vitbench/counters/peers.py"


def test_counts_from_a_version_on():
    row = behaviour("flop_counter_cpu_flash")
    assert not row.counts("2.14.1") and row.counts("2.15.0") and row.counts("2.15.0+cpu") and row.counts("3.0")
    assert not behaviour("fvcore_sdpa").counts("0.1.5.post20221221")


@pytest.mark.parametrize("text, expected", [("2.15.0+cpu", (2, 15, 0)), ("0.1.5.post20221221", (0, 1, 5)), ("2.16.0.dev20261101", (2, 16, 0)), ("1.0rc1", (1, 0))])
def test_release(text, expected):
    assert release(text) == expected


def test_readme_states_the_table():
    readme = " ".join(Path(__file__).resolve().parents[1].joinpath("README.md").read_text().split())
    for sentence in peer_sentences():
        assert sentence in readme, sentence


@pytest.mark.parametrize("key", sorted(OBSERVERS))
def test_counts_installed_is_what_the_installed_peer_does(key):
    from vitbench.counters.peers import counts_installed

    counted, formula = OBSERVERS[key]()  # observed on the installed peer, not read from the table
    assert counts_installed(key) is (counted == formula)


def test_a_pre_release_piece_ends_the_release_numbers():
    assert release("2.16.0rc1") == (2, 16, 0)
    assert release("1.0rc1.5") == (1, 0)  # nothing after the pre-release counts
    assert release("0.1.5.post20221221") == (0, 1, 5)


def test_the_table_s_rows_cannot_be_changed():
    import dataclasses

    row = behaviour("flop_counter_cpu_flash")
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.counted_since = "1.0"
    assert row.counts("2.15.0")
