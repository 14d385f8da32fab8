"""What the peer counters do with fused attention, by version: the one place that says it.

A counting tool has to agree with the ecosystem as it is installed today, and the peers change
between releases (torch 2.15's ``FlopCounterMode`` started counting the CPU flash-attention
kernel). Each row of :data:`PEER_BEHAVIOURS` says, for one peer counter and one fused operator,
from which release of the peer the operator is counted (``None``: no release counts it) and the
releases the test suite has checked that on. The tests (``tests/test_peers.py``) observe the
installed peer and compare; the README's and the report's sentences about peers are generated
by :func:`peer_sentences`, so a new release changes one line here.

vitbench's own counts do not depend on this table: its ``dispatch`` counter maps every fused
kernel to its formula (:mod:`vitbench.counters.dispatch`), and its fvcore counter adds handles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata


@dataclass(frozen=True)
class PeerBehaviour:
    """``counter`` (of the distribution ``peer``) counts ``operator`` from ``counted_since`` on."""

    key: str
    peer: str
    counter: str
    operator: str
    what: str
    counted_since: str | None
    checked: tuple[str, ...]

    def counts(self, version: str) -> bool:
        """Whether ``version`` of the peer counts the operator, per this row."""
        return self.counted_since is not None and release(version) >= release(self.counted_since)

    def newest_checked(self) -> str:
        return max(self.checked, key=release)


#: One row per (peer counter, fused operator). ``checked``: versions the suite observed.
PEER_BEHAVIOURS: tuple[PeerBehaviour, ...] = (
    PeerBehaviour(
        key="flop_counter_cpu_flash",
        peer="torch",
        counter="FlopCounterMode",
        operator="aten._scaled_dot_product_flash_attention_for_cpu",
        what="SDPA's CPU flash-attention kernel",
        counted_since="2.15",
        checked=("2.13.0", "2.14.1", "2.15.0"),
    ),
    PeerBehaviour(
        key="flop_counter_native_mha",
        peer="torch",
        counter="FlopCounterMode",
        operator="aten._native_multi_head_attention",
        what="`nn.MultiheadAttention`'s native fast path",
        counted_since=None,
        checked=("2.13.0", "2.15.0"),
    ),
    PeerBehaviour(
        key="fvcore_sdpa",
        peer="fvcore",
        counter="fvcore's FlopCountAnalysis",
        operator="aten::scaled_dot_product_attention",
        what="`F.scaled_dot_product_attention`",
        counted_since=None,
        checked=("0.1.5.post20221221",),
    ),
)


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: '2.15.0+cpu' -> (2, 15, 0); '0.1.5.post2022' -> (0, 1, 5)."""
    parts = []
    for piece in version.split("+")[0].split("."):
        match = re.match(r"\d+", piece)
        if match is None:
            break
        parts.append(int(match.group()))
        if match.end() < len(piece):  # '0rc1': the pre-release ends the release numbers
            break
    return tuple(parts)


def behaviour(key: str) -> PeerBehaviour:
    for row in PEER_BEHAVIOURS:
        if row.key == key:
            return row
    raise KeyError(key)


def installed_version(peer: str) -> str | None:
    try:
        return metadata.version(peer)
    except metadata.PackageNotFoundError:
        return None


def counts_installed(key: str) -> bool | None:
    """Whether the installed peer counts the operator, per the table (None: peer not installed)."""
    row = behaviour(key)
    version = installed_version(row.peer)
    return None if version is None else row.counts(version)


def peer_sentence(row: PeerBehaviour) -> str:
    """One markdown sentence, with versions, for the README and the report."""
    subject = f"`{row.counter}`" if row.peer == "torch" else row.counter
    if row.counted_since is None:
        checked = ", ".join(row.checked)
        return f"{subject} counts {row.what} (`{row.operator}`) as zero ({row.peer} {checked})."
    before = [v for v in row.checked if not row.counts(v)]
    after = [v for v in row.checked if row.counts(v)]
    return (f"{subject} counts {row.what} (`{row.operator}`) as zero before {row.peer} {row.counted_since} "
            f"({', '.join(before) or 'none checked'}) and counts it from {row.counted_since} on "
            f"({', '.join(after) or 'none checked'}).")


def peer_sentences() -> list[str]:
    return [peer_sentence(row) for row in PEER_BEHAVIOURS]
