"""The one gate every file vitbench reads passes through (issue 33, "one reader"):
vitbench/input_files.py, and the readers routed through it (results files, stores, calibrations
and their cache, the trace cache, ``--measured``). A FIFO, a device, a socket or a folder is
refused before it is opened for reading, without blocking; a file over its kind's cap is refused
with its size and the cap; JSON numbers and nesting are bounded; each violation is one line."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import signal
import socket
import tempfile
import zlib
from pathlib import Path

import pytest

import vitbench
from vitbench import input_files
from vitbench.errors import InputFileError, SpecError
from vitbench.input_files import load_json, loads_bounded, open_input, read_input_bytes, read_input_text


class _Hang(BaseException):
    pass


@contextlib.contextmanager
def within(seconds: int = 5):
    """Fails the test (instead of hanging it) when the block takes longer than ``seconds``."""

    def alarm(signum, frame):
        raise _Hang

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    except _Hang:
        pytest.fail(f"blocked for {seconds} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


# --- the gate: what is refused before reading ------------------------------------------------
def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with within(), pytest.raises(InputFileError) as info:
        read_input_text(tmp_path / "fifo", "file='fifo'", max_bytes=100)
    assert _one_line(info) == "file='fifo': not a regular file (a FIFO); give a file"


def test_a_fifo_swapped_in_after_the_check_does_not_block_either(tmp_path, monkeypatch):
    """The race: the path passed the check, then became a FIFO. O_NONBLOCK opens it at once and
    the check on the opened descriptor refuses it."""
    os.mkfifo(tmp_path / "fifo")
    monkeypatch.setattr(input_files, "check_regular", lambda *args, **kwargs: None)
    with within(), pytest.raises(InputFileError, match=r"not a regular file \(a FIFO\)"):
        with open_input(tmp_path / "fifo", "file"):
            pass


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_unread(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    with within(), pytest.raises(InputFileError) as info:
        read_input_bytes(device, f"file={device!r}", max_bytes=10**12)
    assert _one_line(info) == f"file={device!r}: not a regular file (a character device); give a file"


def test_a_symlink_to_a_device_is_refused_and_one_to_a_file_is_read(tmp_path):
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "data.txt").write_text("hello\n")
    (tmp_path / "link").symlink_to(tmp_path / "data.txt")
    with within(), pytest.raises(InputFileError, match="character device"):
        read_input_bytes(tmp_path / "zero", "file", max_bytes=10)
    assert read_input_text(tmp_path / "link", "file", max_bytes=10) == "hello\n"


def test_a_socket_a_folder_and_a_missing_file_are_each_one_line(tmp_path):
    short = Path(tempfile.mkdtemp(dir="/tmp"))  # a socket's path must be short
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(short / "s"))
        with within(), pytest.raises(InputFileError) as info:
            read_input_bytes(short / "s", "file='s'", max_bytes=10)
        assert _one_line(info) == "file='s': not a regular file (a socket); give a file"
    finally:
        server.close()
        (short / "s").unlink(missing_ok=True)
        short.rmdir()
    with pytest.raises(InputFileError, match=r"^f: not a regular file \(a folder\); give a file$"):
        read_input_bytes(tmp_path, "f", max_bytes=10)
    with pytest.raises(InputFileError, match=r"^f: no such file$"):
        read_input_bytes(tmp_path / "missing", "f", max_bytes=10)
    with pytest.raises(InputFileError, match=r"^f: no such file$"):
        read_input_bytes(tmp_path / "missing" / "below", "f", max_bytes=10)


def test_the_size_cap_names_the_file_its_size_and_the_cap(tmp_path):
    path = tmp_path / "big.csv"
    path.write_bytes(b"x" * 11)
    assert read_input_bytes(path, "file='big.csv'", max_bytes=11) == b"x" * 11  # at the cap: read
    with pytest.raises(InputFileError) as info:
        read_input_bytes(path, "file='big.csv'", max_bytes=10)
    assert _one_line(info) == "file='big.csv': 11 bytes, over the 10-byte limit for this kind of file"


def test_text_must_be_utf8_and_not_empty(tmp_path):
    (tmp_path / "bin").write_bytes(b"ok\xff\xfe")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "blank").write_bytes(b" \n\t\n")
    (tmp_path / "bom").write_bytes("\ufeffa,b\n".encode())
    with pytest.raises(InputFileError, match=r"^f: cannot be read \(not UTF-8 text: byte 2\)$"):
        read_input_text(tmp_path / "bin", "f", max_bytes=100)
    for name in ("empty", "blank"):
        with pytest.raises(InputFileError, match=r"^f: the file is empty$"):
            read_input_text(tmp_path / name, "f", max_bytes=100)
    assert read_input_text(tmp_path / "bom", "f", max_bytes=100) == "a,b\n"


def test_the_callers_error_class_is_raised(tmp_path):
    class Mine(InputFileError):
        pass

    with pytest.raises(Mine):
        read_input_bytes(tmp_path / "missing", "f", max_bytes=1, error=Mine)
    with pytest.raises(Mine):
        load_json("[1e999]", "f", error=Mine)


# --- bounded JSON ------------------------------------------------------------------------------
def test_integers_are_bounded_in_digits_without_pythons_own_error():
    assert load_json("[" + "9" * 1000 + "]", "f") == [int("9" * 1000)]
    assert load_json("[-" + "9" * 1000 + "]", "f") == [-int("9" * 1000)]
    with pytest.raises(InputFileError, match=r"^f: refused \(\[0\]: an integer of 1,001 digits, over 1,000\)$"):
        load_json("[" + "9" * 1001 + "]", "f")
    with pytest.raises(InputFileError) as info:  # past Python's 4,300: still ours, not its ValueError
        load_json('{"a": ' + "7" * 5000 + "}", "f")
    assert _one_line(info) == "f: refused (an integer of 5,000 digits, over 1,000)"
    with pytest.raises(InputFileError, match="an integer of 11 digits, over 10"):
        load_json("12345678901", "f", max_int_digits=10)


@pytest.mark.parametrize("text, place", [
    ("[NaN]", "[0]: "), ('{"a": Infinity}', "a: "), ("[-Infinity]", "[0]: "), ("[1e999]", "[0]: "), ("[-1e999]", "[0]: "),
    ("NaN", ""), ('{"records": [{"a": 1}, {"b": [1, NaN]}]}', "records[1].b[1]: "),
])
def test_nonfinite_numbers_are_refused_unless_allowed(text, place):
    """Refused, named by their place in the document."""
    with pytest.raises(InputFileError, match=rf"^f: refused \({re.escape(place)}(NaN|Infinity)"):
        load_json(text, "f")
    assert load_json(text, "f", allow_nonfinite=True) is not None


def test_nan_alone_may_be_allowed_as_a_missing_value():
    value = load_json('{"a": NaN}', "f", allow_nan=True)["a"]
    assert value != value
    with pytest.raises(InputFileError, match="Infinity"):
        load_json('{"a": 1e400}', "f", allow_nan=True)
    assert load_json("[1e-320, 1e308, -0.0]", "f") == [1e-320, 1e308, -0.0]  # small and large finite floats are numbers


def test_nesting_is_bounded():
    assert load_json("[" * 64 + "]" * 64, "f") == load_json("[" * 64 + "]" * 64, "f", max_depth=None)
    with pytest.raises(InputFileError, match=r"^f: refused \(JSON nested deeper than 64 levels\)$"):
        load_json("[" * 65 + "]" * 65, "f")
    with pytest.raises(InputFileError, match=r"nested deeper than 3 levels"):
        load_json('{"a": {"b": [{}]}}', "f", max_depth=3)
    with pytest.raises(InputFileError, match=r"^f: refused \(JSON nested too deeply\)$"):
        load_json("[" * 200_000 + "]" * 200_000, "f", max_depth=None)


def test_text_that_is_not_json_names_the_line():
    with pytest.raises(InputFileError, match=r"^f: not valid JSON \(Expecting value at line 2\)$"):
        load_json('{"a":\n}', "f")


def test_loads_bounded_raises_value_error_for_what_the_gate_refuses():
    assert loads_bounded(b'{"a": 1.5, "b": [1, 2]}') == {"a": 1.5, "b": [1, 2]}
    for text in (b'{"a": NaN}', b'{"a": 1e999}', b'{"a": ' + b"1" * 1001 + b"}", b'{"a": ' + b"1" * 5000 + b"}"):
        with pytest.raises(ValueError):
            loads_bounded(text)


# --- the store's files --------------------------------------------------------------------------
def _line(body: str) -> bytes:
    return f'{body[:-1]},"_crc32":"{zlib.crc32(body.encode()):08x}"}}\n'.encode()


def test_a_checksummed_row_with_an_out_of_bounds_number_is_damaged_not_a_crash():
    from vitbench.store.format import decode_record

    body = '{"id":"a","x":1.5}'
    assert decode_record(_line(body)[:-1]) == {"id": "a", "x": 1.5}
    for body in ('{"id":"a","x":NaN}', '{"id":"a","x":1e999}', '{"id":"a","x":' + "3" * 5000 + "}"):
        assert decode_record(_line(body)[:-1]) is None


def test_an_overlong_line_is_damaged_and_the_lines_after_it_keep_their_offsets(tmp_path, monkeypatch):
    from vitbench.store.format import scan

    monkeypatch.setattr(input_files, "MAX_ROW_LINE_BYTES", 64)
    first, last = _line('{"id":"a"}'), _line('{"id":"b"}')
    long = _line('{"id":"c","pad":"' + "x" * 200 + '"}')
    (tmp_path / "rows.jsonl").write_bytes(first + long + last)
    found = [(number, offset, row is not None) for number, offset, _, row in scan(tmp_path / "rows.jsonl")]
    assert found == [(1, 0, True), (2, len(first), False), (3, len(first) + len(long), True)]


def test_scan_refuses_a_fifo_rows_file_without_blocking(tmp_path):
    from vitbench.store.format import scan
    from vitbench.store.layout import StoreError

    os.mkfifo(tmp_path / "rows.jsonl")
    with within(), pytest.raises(StoreError, match="rows.jsonl'?: not a regular file \\(a FIFO\\)"):
        list(scan(tmp_path / "rows.jsonl"))


@pytest.mark.parametrize("sweep, match", [
    ({"grid_size": 10**12 + 1}, "sweep.grid_size=1000000000001: must be from 0 to 1,000,000,000,000"),
    ({"grid_size": -1}, "sweep.grid_size=-1"),
    ({"shard_count": 10**12, "shard_index": 1}, "sweep.shard_count=1000000000000: must be from 1 to 1,000,000"),
    ({"shard_count": 4, "shard_index": 5}, "sweep.shard_index=5: must be from 1 to the shard count"),
    ({"shard_count": 4, "shard_index": 0}, "sweep.shard_index=0"),
])
def test_a_definition_claiming_absurd_counts_is_refused(tmp_path, sweep, match):
    from vitbench.store.layout import StoreError
    from vitbench.store.reader import read_definition

    (tmp_path / "sweep.json").write_text(json.dumps({"schema_version": 2, "sweep": sweep}))
    with pytest.raises(StoreError, match=match):
        read_definition(tmp_path)


def test_a_definition_at_the_bounds_is_read(tmp_path):
    from vitbench.store.reader import read_definition

    sweep = {"grid_size": 10**12, "shard_count": 10**6, "shard_index": 10**6}
    (tmp_path / "sweep.json").write_text(json.dumps({"schema_version": 2, "sweep": sweep}))
    assert read_definition(tmp_path)["sweep"] == sweep


def test_merge_coverage_of_many_shards_is_one_pass():
    from vitbench.sweeps.merging import coverage

    rows = [{"index": i} for i in range(0, 2000, 2)]  # the even shards of 1,000,000 hold a row each
    with within(10):
        missing, [message] = coverage(rows, [("a", {"sweep": {"grid_size": 10**6, "shard_count": 10**6}})])
    assert missing == 10**6 - 1000
    assert message.startswith("shards missing from the merge: 2/1000000, 4/1000000,") and message.endswith("40/1000000 and 998,980 more (999000 of 1000000 configurations absent)")


# --- calibrations and their cache ---------------------------------------------------------------
def _synthetic(**changes):
    import torch

    from vitbench.timemodel.calibration.schema import Calibration

    rows = [[m, k, n, 1e10] for m in (1, 4096) for k in (1, 4096) for n in (1, 4096)]
    fields = dict(device="cpu", device_name="synthetic", threads=1, torch=torch.__version__, basis="calibration",
                  gemm={"float32": rows}, efficiency={}, ops={}, overhead_s=1e-6, bandwidth_bytes_s=1e9,
                  framework_s={"infer": 3e-6, "train": 4e-6, "optimizer": 5e-7}, in_step_factor=1.0)
    fields.update(changes)
    return Calibration(**fields)


@pytest.mark.parametrize("change, match", [
    ({"in_step_factor": 10**400}, "in_step_factor=1000"),
    ({"torch": 3}, "torch=3: must be text"),
    ({"device_name": ["x"]}, r"device_name=\['x'\]: must be text"),
    ({"threads": 10**30}, "threads=.*must be at most 1024"),
    ({"overhead_s": 1e300}, r"overhead_s=1e\+300"),
    ({"bandwidth_bytes_s": 0}, "bandwidth_bytes_s=0"),
    ({"framework_s": {"infer": 1e300}}, "framework_s"),
    ({"ops": {"gelu": [0.0, 1e-300]}}, "ops"),
    ({"efficiency": {"conv": [[1, 1, 1, 0]]}}, "efficiency"),
    ({"gemm": {"float32": [[1, 1, 1, 1e-300]]}}, r"gemm\['float32'\]"),
    ({"gemm": {"float32": [[1, 1, 1, 1e10], [1, 1, 1, 1e10], [2, 2, 2, 1e10], [2, 2, 2, 1e10],
                           [1, 2, 1, 1e10], [2, 1, 2, 1e10], [1, 1, 2, 1e10], [2, 2, 1, 1e10]]}}, "do not fill a grid"),
    ({"seconds": "long"}, "seconds='long'"),
    ({"notes": []}, "notes=\\[\\]"),
])
def test_tampered_calibration_values_are_refused_in_one_line(tmp_path, change, match):
    from dataclasses import asdict

    from vitbench.timemodel.calibration.cache import load
    from vitbench.timemodel.calibration.schema import CalibrationError

    data = {**asdict(_synthetic()), **change}
    (tmp_path / "cal.json").write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=match) as info:
        load(tmp_path / "cal.json")
    assert "\n" not in str(info.value)


def test_the_synthetic_calibration_itself_loads(tmp_path):
    from vitbench.timemodel.calibration.cache import load, save

    assert load(save(_synthetic(), tmp_path / "cal.json")) == _synthetic()


def test_a_tampered_gpu_calibration_is_refused(tmp_path):
    from vitbench.timemodel.calibration.schema import CalibrationError
    from vitbench.timemodel.gpu_calibration import load

    (tmp_path / "gpu.json").write_text(json.dumps({"kind": "vitbench-gpu-calibration", "format": 1, "device": 1}))
    with pytest.raises(CalibrationError, match="params must name"):
        load(tmp_path / "gpu.json")
    os.mkfifo(tmp_path / "fifo")
    with within(), pytest.raises(CalibrationError, match="FIFO"):
        load(tmp_path / "fifo")


def _cache_entry(monkeypatch, tmp_path) -> Path:
    import torch

    from vitbench.measure.env import cpu_model
    from vitbench.timemodel.calibration.cache import cache_path

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))
    path = cache_path("cpu", cpu_model() or "", 1, torch.__version__)
    path.parent.mkdir(parents=True)
    return path


@pytest.mark.parametrize("entry", ["fifo", "/dev/zero", "tampered"])
def test_a_cache_entry_that_is_no_calibration_is_refused_and_recalibrated(entry, tmp_path, monkeypatch):
    """The cache is vitbench's own: an entry that is a FIFO, a device or tampered costs a
    recalibration and a warning, never a hang, a 3-GB read or exit 3."""
    from dataclasses import asdict

    from vitbench.timemodel import run

    path = _cache_entry(monkeypatch, tmp_path)
    if entry == "fifo":
        os.mkfifo(path)
    elif entry == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text(json.dumps({**asdict(_synthetic()), "in_step_factor": 10**400}))
    calls = []
    monkeypatch.setattr(run, "calibrate", lambda device, threads, precisions, on_step=None: calls.append(threads) or _synthetic(threads=threads))
    with within(20):
        [row] = vitbench.predict("mnist-vit", threads=1)
    assert calls == [1] and row["status"] == "ok" and row["pred_latency_s"] > 0
    assert any(w["code"] == "calibration-refused" and "refused" in w["message"] for w in row["warnings"])


@pytest.mark.parametrize("layout", ["cache dir is a file", "cache entry is a folder"])
def test_predict_on_the_command_line_prints_its_prediction_when_the_cache_cannot_be_written(layout, tmp_path, monkeypatch, capsys):
    """Lost work (issue 33): the calibration made, the cache unwritable: the prediction is printed
    and a warning says the calibration was not saved (exit 0)."""
    from vitbench.cli import main
    from vitbench.timemodel import run

    path = _cache_entry(monkeypatch, tmp_path)
    if layout == "cache dir is a file":
        path.parent.rmdir()
        path.parent.parent.rmdir()
        (tmp_path / "cache").write_text("a file")
    else:
        path.mkdir()
    monkeypatch.setattr(run, "calibrate", lambda device, threads, precisions, on_step=None: _synthetic(threads=threads))
    assert main(["predict", "mnist-vit", "--threads", "1", "--format", "csv", "-q"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("model,") and "mnist-vit" in out
    assert "calibration not saved" in err and "Traceback" not in err


def test_a_calibration_given_prices_only_what_it_was_made_for():
    with pytest.raises(SpecError, match="calibration='a CPU calibration': is a CPU calibration .*--device h100"):
        vitbench.predict("mnist-vit", device="h100", calibration=_synthetic())
    with pytest.raises(SpecError, match="threads=1: but the calibration a CPU calibration was made at threads=7"):
        vitbench.predict("mnist-vit", threads=1, calibration=_synthetic(threads=7))
    [row] = vitbench.predict("mnist-vit", calibration=_synthetic(threads=7))  # no --threads: the calibration's own
    assert row["threads"] == 7 and row["status"] == "ok"


# --- --measured -------------------------------------------------------------------------------
def _measured(**cells):
    return {"model": "mnist-vit", "mode": "infer", "precision": "fp32", "status": "ok", "batch_size": 1,
            "latency_p50_s": 0.01, **cells}


@pytest.mark.parametrize("cells, match", [
    ({"batch_size": "x"}, "batch_size='x'"), ({"batch_size": [1]}, r"batch_size=\[1\]"),
    ({"batch_size": 1.5}, "batch_size=1.5"), ({"batch_size": True}, "batch_size=True"),
    ({"batch_size": None}, "batch_size=None"), ({"batch_size": 0}, "batch_size=0"),
    ({"batch_size": 10**9 + 1}, "batch_size=1000000001"),
    ({"latency_p50_s": float("inf")}, "latency_p50_s=inf"), ({"latency_p50_s": True}, "latency_p50_s=True"),
    ({"latency_p50_s": 1e-320}, "latency_p50_s=1e-320"), ({"latency_p50_s": "abc"}, "latency_p50_s='abc'"),
    ({"latency_p50_s": -0.01}, "latency_p50_s=-0.01"),
])
def test_measured_rows_that_are_no_batch_or_no_time_are_refused_naming_row_and_column(cells, match):
    from vitbench.timemodel.prediction_rows import measured_index

    with pytest.raises(InputFileError, match=f"^measured records: row 2: {match}: must be") as info:
        measured_index([_measured(), _measured(**cells)])
    assert "\n" not in str(info.value)


def test_a_measured_batch_of_a_billion_is_the_largest_taken():
    from vitbench.timemodel.prediction_rows import measured_index

    assert measured_index([_measured(batch_size=10**9)]) == {("mnist-vit", "", "infer", 10**9, "fp32"): 0.01}
    with pytest.raises(InputFileError, match="must be a whole number from 1 to 1,000,000,000$"):
        measured_index([_measured(batch_size=10**9 + 1)])


def test_measured_rows_that_failed_or_have_no_latency_are_left_out():
    from vitbench.timemodel.prediction_rows import measured_index

    rows = [_measured(), _measured(status="error", batch_size="x", latency_p50_s="abc"), _measured(batch_size=4, latency_p50_s=None)]
    assert measured_index(rows) == {("mnist-vit", "", "infer", 1, "fp32"): 0.01}


# --- the trace cache ----------------------------------------------------------------------------
def test_a_trace_cache_entry_that_is_a_fifo_or_a_bomb_is_ignored(tmp_path, monkeypatch):
    from vitbench.timemodel import trace_cache

    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path))
    os.mkfifo(tmp_path / "a.json.gz")
    with within():
        assert trace_cache.read("a") is None
    monkeypatch.setattr(trace_cache, "MAX_ENTRY_BYTES", 1000)
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(b" " * 100_000))  # 100 kB unpacked from a few hundred bytes
    assert (tmp_path / "b.json.gz").stat().st_size < 1000 and trace_cache.read("b") is None
    good = {"format": trace_cache.FORMAT, "key": "c", "ops": [], "sha256": trace_cache.checksum("c", [])}
    (tmp_path / "c.json.gz").write_bytes(gzip.compress(json.dumps(good).encode()))
    assert trace_cache.read("c") == []


# --- the caps per kind, through the readers ------------------------------------------------------
def test_each_reader_applies_its_kinds_cap(tmp_path, monkeypatch):
    from vitbench.reading import read_results
    from vitbench.sweeps.plan import SweepFileError, load_sweep_file
    from vitbench.timemodel.calibration.cache import load
    from vitbench.timemodel.calibration.schema import CalibrationError

    sweep = tmp_path / "big.yaml"
    sweep.write_text("models: [mnist-vit]\n" + "#" * input_files.MAX_SWEEP_FILE_BYTES + "\n")
    with pytest.raises(SweepFileError, match=r"sweep file=.*big.yaml'?: 1,048,597 bytes, over the 1,048,576-byte limit"):
        load_sweep_file(sweep)
    monkeypatch.setattr(input_files, "MAX_RESULTS_BYTES", 20)
    (tmp_path / "r.csv").write_text("model,macs\nmnist-vit,12345\n")  # 27 bytes
    with pytest.raises(InputFileError, match=r"^baseline file=.*r.csv'?: 27 bytes, over the 20-byte limit"):
        read_results(tmp_path / "r.csv", role="baseline")
    monkeypatch.setattr(input_files, "MAX_CALIBRATION_BYTES", 10)
    (tmp_path / "cal.json").write_text('{"schema_version": 2}')
    with pytest.raises(CalibrationError, match=r"cal.json: 21 bytes, over the 10-byte limit"):
        load(tmp_path / "cal.json")


def test_a_parquet_file_is_still_named_as_one(tmp_path):
    from vitbench.reading import read_results

    (tmp_path / "r.csv").write_bytes(b"PAR1\x00\x00rest")
    with pytest.raises(InputFileError, match="is a Parquet file"):
        read_results(tmp_path / "r.csv")


# --- red-team holes: a read that would block, a size-0 pseudo-file that yields bytes ---

class _WouldBlock:
    """A handle whose read would block: None, as a non-blocking BufferedReader says it."""

    def __init__(self, result):
        self.result = result

    def read(self, limit):
        if isinstance(self.result, type) and issubclass(self.result, BaseException):
            raise self.result(11, "Resource temporarily unavailable") if self.result is BlockingIOError \
                else self.result(5, "Input/output error")
        return self.result


@pytest.mark.parametrize("result", [None, BlockingIOError])
def test_a_read_that_would_block_is_one_line(result):
    with pytest.raises(InputFileError, match=r"^f: cannot be read \(it would block: not a file's contents\)$"):
        input_files.read_handle(_WouldBlock(result), 10, "f")


def test_a_read_that_fails_names_the_reason():
    with pytest.raises(InputFileError, match=r"^f: cannot be read \(Input/output error\)$"):
        input_files.read_handle(_WouldBlock(OSError), 10, "f")


def test_read_input_bytes_refuses_a_would_block_read(tmp_path, monkeypatch):
    path = tmp_path / "k.csv"
    path.write_text("a,b\n1,2\n")
    real = open_input

    @contextlib.contextmanager
    def blocking(*args, **kwargs):
        with real(*args, **kwargs) as handle:
            monkeypatch.setattr(handle, "read", lambda limit: None, raising=False)
            yield handle

    monkeypatch.setattr(input_files, "open_input", blocking)
    with pytest.raises(InputFileError, match=r"it would block: not a file's contents"):
        read_input_bytes(path, "f", max_bytes=1000)


@pytest.mark.skipif(not os.path.exists("/proc/self/pagemap"), reason="no /proc/self/pagemap here")
def test_a_sizeless_pseudo_file_is_refused_past_a_mebibyte(tmp_path):
    link = tmp_path / "p.csv"
    link.symlink_to("/proc/self/pagemap")
    with within(), pytest.raises(InputFileError, match=r"reports no size yet yields over 1,048,576 bytes"):
        read_input_bytes(link, "f", max_bytes=input_files.MAX_RESULTS_BYTES)


@pytest.mark.skipif(not os.path.exists("/proc/self/pagemap"), reason="no /proc/self/pagemap here")
def test_a_store_scan_of_a_sizeless_pseudo_file_is_refused(tmp_path):
    from vitbench.store.format import scan
    from vitbench.store.layout import StoreError

    link = tmp_path / "rows.jsonl"
    link.symlink_to("/proc/self/pagemap")
    with within(), pytest.raises(StoreError, match=r"reports no size"):
        list(scan(link))


def test_an_empty_rows_file_still_scans_as_no_rows(tmp_path):
    from vitbench.store.format import scan

    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"")
    assert list(scan(path)) == []
