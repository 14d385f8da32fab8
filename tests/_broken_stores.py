"""Deliberately broken results stores, one safety mechanism removed from each: the fault tests
(tests/test_store_faults.py) must fail against every one of them. Importable by a child process
(the kill tests run the store in a subprocess and SIGKILL it inside a write)."""

from __future__ import annotations

import json
import os

from vitbench.store import Store
from vitbench.store.format import CRC_KEY
from vitbench.sweeps import merging as merge_module


class NoFsync(Store):
    """Appends without fsync: rows acknowledged to the caller live only in the page cache."""

    def _sync(self, fd):
        pass


class NoTailRepair(Store):
    """Leaves a torn or damaged line where it is: the next append is glued to its fragment."""

    def _recover(self, damaged):
        pass


class NoChecksum(Store):
    """Believes any line that parses as JSON: a flipped digit is kept as a valid row."""

    @staticmethod
    def decode(line):
        try:
            row = json.loads(line)
        except ValueError:
            return None
        if isinstance(row, dict):
            row.pop(CRC_KEY, None)
            return row
        return None


class NoFingerprintCheck(Store):
    """Resumes whatever sweep definition wrote the store."""

    def _check_definition(self, previous, sweep):
        pass


class InPlaceReplace(Store):
    """Rewrites files in place (truncate, then write) instead of temporary file + rename."""

    def _replace(self, path, data):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)


def merge_without_definition_check(sources, out, **kw):
    """Merges shards of different sweeps as if they were one."""
    saved = merge_module.check_definitions
    merge_module.check_definitions = lambda infos, allow_foreign: (None, [])
    try:
        return merge_module.merge(sources, out, **kw)
    finally:
        merge_module.check_definitions = saved


class KeepsTemporaries(Store):
    """Leaves the temporary files a kill left between a write and its rename."""

    def _clean_temporaries(self):
        pass


def latest_rows_keeping_first(path):
    """A reader that keeps the FIRST valid record of each id (a retried configuration would
    keep its failure)."""
    from vitbench.store.format import scan

    kept, columns = {}, {}
    for _, _, _, row in scan(path):
        if row is None or "id" not in row:
            continue
        row.pop(CRC_KEY, None)
        columns.update(dict.fromkeys(row))
        kept.setdefault(str(row["id"]), row)
    return [{c: r.get(c) for c in columns} for r in kept.values()], []


def scan_accepting_unterminated(path, decode=None):
    """A scanner that believes a last line without its newline (the next append is glued to it)."""
    from vitbench.store.format import decode_record

    decode = decode or decode_record
    offset = 0
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            body = line[:-1] if line.endswith(b"\n") else line
            if body.strip():
                yield number, offset, line, decode(body)
            offset += len(line)


def no_directory_fsync(directory):
    """Never fsyncs a folder: a new or renamed file may vanish with a power cut."""


def never_prefer(kept, row):
    """Merge conflicts keep the first row, even a failed one against an ok one."""
    return False


def no_export_on_interrupt(directory, formats):
    """Ctrl-C leaves no results.csv."""
