"""Deliberately broken results stores, one safety mechanism removed from each: the fault tests
(tests/test_store_faults.py) must fail against every one of them. Importable by a child process
(the kill tests run the store in a subprocess and SIGKILL it inside a write)."""

from __future__ import annotations

import json
import os

from vitbench.sweeps import merging as merge_module
from vitbench.sweeps.jsonl import CRC_KEY
from vitbench.sweeps.store import Store


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
