"""Writing files so that a crash leaves the old file or the new one, never half of one: the one
atomic write every vitbench output goes through (results files, the store's sweep.json and
exports, the trace cache), and the primitives beside it (whole writes, folder fsync).

:func:`write_atomic`: a new temporary file in the target's own folder (created exclusively, so
never through a symlink planted under its name), every byte written and fsynced, renamed over
the target (``os.replace``), then the folder fsynced so that the rename itself survives a power
cut. The file gets ``mode`` less the umask, as ``open()`` would give it (not the 0600 of a
temporary file). Temporary files are named ``.NAME.XXXXXXXX.tmp``: the store removes any a kill
left behind (``.*.tmp``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path


def write_atomic(
    path: str | os.PathLike, data: bytes | Iterable[bytes], *, mode: int = 0o666,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Write ``data`` (bytes, or chunks of bytes written as they come) to ``path`` atomically.
    ``before_replace`` runs after the temporary file is synced and before the rename (a last
    check that the target may still be replaced); whatever it or the write raises, the
    temporary file is removed and the old file is left as it was. OSError is raised as is."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # O_EXCL: a new file
    try:
        try:
            os.fchmod(fd, mode & ~_umask())
            for chunk in (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data:
                write_all(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def move_without_replacing(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Give ``source`` the name ``target`` (in the same folder), never replacing a file of that
    name: a hard link (FileExistsError when ``target`` exists; a symlink is linked, not followed),
    then the old name removed and the folder fsynced."""
    os.link(source, target, follow_symlinks=False)
    os.unlink(source)
    fsync_dir(Path(target).parent)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def fsync_dir(directory: str | os.PathLike) -> None:
    """fsync a folder (its entries: a rename or a new file in it), where the file system can."""
    with contextlib.suppress(OSError):  # not every file system can sync a folder
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["fsync_dir", "write_all", "write_atomic"]
