"""The store's line format (:mod:`vitbench.store.format`): what a record's values become, the
checksum that guards each line, and how a rows file is scanned (blank lines, torn and overlong
lines, their numbers and byte offsets). Expected lines are written out by hand."""

from __future__ import annotations

import json
import math
import os
import zlib

import numpy as np
import pytest

from vitbench import input_files
from vitbench.store.format import CRC_KEY, decode_record, encode_record, scan
from vitbench.store.layout import StoreError


def _line(body: str) -> bytes:
    """A line as the format documents it: the compact JSON, then its CRC-32 as the last member."""
    return f'{body[:-1]},"_crc32":"{zlib.crc32(body.encode()):08x}"}}\n'.encode()


# --------------------------------------------------------------------------- encoding


def test_a_record_is_compact_ascii_json_with_its_checksum_last():
    assert encode_record({"id": "a", "x": 1.5, "name": "café"}) == _line('{"id":"a","x":1.5,"name":"caf\\u00e9"}')


def test_values_become_what_json_holds():
    row = {"id": "a", "inf": math.inf, "nan": math.nan, "tuple": (1, (2.5, -math.inf)), "set": {"b", "a", "c"},
           "frozen": frozenset({3, 1}), "np_int": np.int64(7), "np_float": np.float32(0.5), "np_nan": np.float64("nan"),
           "flag": True, "none": None, "big": 2**70, "nested": {1: [math.nan], "k": {"x": np.int8(2)}},
           "other": complex(1, 2)}
    body = json.loads(encode_record(row)[:-1])
    assert body == {"id": "a", "inf": None, "nan": None, "tuple": [1, [2.5, None]], "set": ["a", "b", "c"],
                    "frozen": [1, 3], "np_int": 7, "np_float": 0.5, "np_nan": None, "flag": True, "none": None,
                    "big": 2**70, "nested": {"1": [None], "k": {"x": 2}}, "other": "(1+2j)", CRC_KEY: body[CRC_KEY]}
    assert type(body["np_int"]) is int and type(body["flag"]) is bool


def test_a_checksum_member_given_with_the_row_is_replaced():
    assert encode_record({"id": "a", CRC_KEY: "00000000"}) == _line('{"id":"a"}')


def test_an_empty_record_is_refused():
    with pytest.raises(ValueError, match="at least one column"):
        encode_record({})
    with pytest.raises(ValueError):
        encode_record({CRC_KEY: "x"})


# --------------------------------------------------------------------------- decoding


def test_a_line_decodes_to_its_row_without_the_checksum():
    assert decode_record(_line('{"id":"a","n":3}')[:-1]) == {"id": "a", "n": 3}


@pytest.mark.parametrize("damage", [
    lambda line: line.replace(b'"n":3', b'"n":4'),                  # a value changed behind the checksum
    lambda line: line[:-3] + b'"}',                                   # a digit of the checksum lost
    lambda line: line[:-1],                                           # no closing brace
    lambda line: line.replace(b'"_crc32"', b'"_crc33"'),             # another last member
    lambda line: line[:-12] + b'x' + line[-11:],                      # the separator before it
    lambda line: line[:-10] + b'zzzzzzzz"}',                          # a checksum that is no hex
    lambda line: line[-20:],                                          # a tail without a body
])
def test_a_damaged_line_decodes_to_none(damage):
    line = _line('{"id":"a","n":3}')[:-1]
    assert decode_record(line) is not None
    assert decode_record(damage(line)) is None


def test_the_shortest_record_decodes():
    assert decode_record(_line('{"a":1}')[:-1]) == {"a": 1}


def test_a_checksummed_body_nested_too_deeply_is_damaged_not_a_crash():
    body = '{"id":"a","x":' + "[" * 100_000 + "]" * 100_000 + "}"
    assert decode_record(_line(body)[:-1]) is None


# --------------------------------------------------------------------------- scanning


def _scan(tmp_path, data: bytes):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    return [(number, offset, raw, row if row is None else row["id"]) for number, offset, raw, row in scan(path)]


def test_scan_gives_number_offset_line_and_row_and_skips_blank_lines(tmp_path):
    a, b = _line('{"id":"a"}'), _line('{"id":"b"}')
    damaged = a.replace(b'"a"', b'"z"')
    data = a + b"\n" + b"  \t\n" + damaged + b
    assert _scan(tmp_path, data) == [
        (1, 0, a, "a"), (4, len(a) + 5, damaged, None), (5, len(a) + 5 + len(damaged), b, "b")]


def test_a_torn_last_line_is_damaged_and_a_blank_one_is_nothing(tmp_path):
    a = _line('{"id":"a"}')
    assert _scan(tmp_path, a + a[:-1]) == [(1, 0, a, "a"), (2, len(a), a[:-1], None)]
    assert _scan(tmp_path, a + b"   ") == [(1, 0, a, "a")]


def test_a_line_of_the_longest_length_is_read_and_a_longer_one_skipped_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(input_files, "MAX_ROW_LINE_BYTES", 100)  # bytes of a line before its newline
    pad = 101 - len(_line('{"id":"a","p":""}'))
    longest = _line('{"id":"a","p":"' + "x" * pad + '"}')
    longer = _line('{"id":"b","p":"' + "x" * (pad + 1) + '"}')
    assert len(longest) == 101 and len(longer) == 102
    tail = _line('{"id":"c"}')
    found = _scan(tmp_path, longest + longer + tail)
    assert [(n, offset, row) for n, offset, _, row in found] == [(1, 0, "a"), (2, 101, None), (3, 203, "c")]
    assert found[1][2] == longer[:101]  # its first MAX_ROW_LINE_BYTES + 1 bytes


def test_an_overlong_line_longer_than_a_skipping_read_is_still_one_damaged_record(tmp_path, monkeypatch):
    monkeypatch.setattr(input_files, "MAX_ROW_LINE_BYTES", 100)
    a, c = _line('{"id":"a"}'), _line('{"id":"c"}')
    overlong = b"x" * (5 * 2**20 // 2) + b"\n"  # 2.5 MiB: the rest is skipped over several 1 MiB reads
    found = _scan(tmp_path, a + overlong + c)
    assert [(n, offset, row) for n, offset, _, row in found] == [
        (1, 0, "a"), (2, len(a), None), (3, len(a) + len(overlong), "c")]


def test_an_overlong_last_line_without_its_newline_is_one_damaged_record(tmp_path, monkeypatch):
    monkeypatch.setattr(input_files, "MAX_ROW_LINE_BYTES", 50)
    a = _line('{"id":"a"}')
    overlong = b"x" * 300
    found = _scan(tmp_path, a + overlong)
    assert [(n, offset, row) for n, offset, _, row in found] == [(1, 0, "a"), (2, len(a), None)]
    assert found[1][2] == overlong[:51]


def test_a_blank_torn_last_line_of_the_longest_length_is_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(input_files, "MAX_ROW_LINE_BYTES", 50)
    a = _line('{"id":"a"}')
    assert _scan(tmp_path, a + b" " * 50) == [(1, 0, a, "a")]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc/self/status here")
def test_a_file_that_reports_no_size_is_refused_past_the_limit_even_in_short_lines(tmp_path, monkeypatch):
    from vitbench.store import format as line_format

    monkeypatch.setattr(line_format, "MAX_SIZELESS_BYTES", 100)
    link = tmp_path / "rows.jsonl"
    link.symlink_to("/proc/self/status")  # size 0, some 1,000 bytes in lines of a few dozen
    with pytest.raises(StoreError, match=r"cannot be read \(it reports no size yet yields over 100 bytes"):
        list(scan(link))


def test_a_rows_file_whose_read_would_block_is_refused_not_taken_as_ended(tmp_path, monkeypatch):
    """A procfs file such as /proc/kmsg: the buffered reader says b"" at once, a read would block."""
    import contextlib

    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)

    class Blocking:
        def readline(self, limit):
            return b""

        def fileno(self):
            return read_end

    @contextlib.contextmanager
    def blocking(path, where, error):
        yield Blocking()

    monkeypatch.setattr(input_files, "open_input", blocking)
    try:
        with pytest.raises(StoreError, match=r"rows.jsonl'?: cannot be read \(it would block: not a file's contents\)$"):
            list(scan(tmp_path / "rows.jsonl"))
    finally:
        os.close(read_end)
        os.close(write_end)
