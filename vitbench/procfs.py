"""Memory figures from Linux's /proc files ("Name:   1234 kB" lines), in bytes. Standard library
only: the counters' refusals, the memory cap and the measured rows read the same lines."""

from __future__ import annotations


def proc_fields(path: str) -> dict[str, int]:
    """Every numeric ``Name: value [kB]`` line of ``path`` in bytes; empty where unreadable."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return {}
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


def proc_bytes(path: str, name: str) -> int | None:
    """One field of ``path`` in bytes (``/proc/meminfo`` MemAvailable, ``/proc/self/status``
    VmHWM, ...), None where there is none."""
    return proc_fields(path).get(name)


__all__ = ["proc_bytes", "proc_fields"]
