"""The bad-input corpus (tests/data/bad_inputs.yaml, issue "hardening"): every case ends with its
exit code (2 for a user's mistake: never 3, the internal-error code), one line on stderr that
matches its pattern, no traceback, and within a time limit (no hang). Cases run in this process
(the CLI's ``main``); placeholders name files prepared here."""

from __future__ import annotations

import os
import re
import signal
import stat
from pathlib import Path

import pytest
import yaml

from vitbench.cli import main

CORPUS = Path(__file__).resolve().parent / "data" / "bad_inputs.yaml"
CASES = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
LIMIT_S = 30


def _id(case: dict) -> str:
    return " ".join(case["argv"])[:80] or "(empty)"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    from vitbench.sweeps import sweep

    root = tmp_path_factory.mktemp("bad")
    csv = root / "results.csv"
    assert main(["analyze", "mnist-vit", "--format", "csv", "-o", str(csv)]) == 0
    store = root / "store"
    sweep(models=["mnist-vit"], out=store)
    texts = {
        "bad_yaml": ("bad.yaml", "models: [mnist-vit\n"), "bad_toml": ("bad.toml", "models = [\n"),
        "dup_yaml": ("dup.yaml", "models: [mnist-vit]\nmodels: [vit-b/16]\n"),
        "deep_yaml": ("deep.yaml", "models: [mnist-vit]\nx: " + "[" * 5000 + "]" * 5000 + "\n"),
        "bomb_yaml": ("bomb.yaml", "models: [mnist-vit]\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))),
        "unknown_key_yaml": ("unknown.yaml", "models: [mnist-vit]\nnosuchkey: 3\n"),
        "empty_yaml": ("empty.yaml", ""), "list_yaml": ("list.yaml", "- a\n- b\n"),
        "depth_str_yaml": ("depth.yaml", "models: [mnist-vit]\ngrid: {depth: [deep]}\n"),
        "empty": ("empty.csv", ""), "nomodel_csv": ("nomodel.csv", "a,b\n1,2\n"),
        "bad_json": ("bad.json", "{not json"), "deep_json": ("deep.json", "[" * 100_000 + "]" * 100_000),
        "file": ("plain.txt", "hello\n"),
    }
    out = {"tmp": str(root), "csv": str(csv), "store": str(store), "missing": str(root / "missing.csv")}
    for key, (name, text) in texts.items():
        (root / name).write_text(text)
        out[key] = str(root / name)
    (root / "binary.csv").write_bytes(b"\xff\xfe\x00bad")
    out["binary"] = str(root / "binary.csv")
    (root / "bin.yaml").write_bytes(b"models: [\xff\xfe]\n")
    out["bin_yaml"] = str(root / "bin.yaml")
    os.mkfifo(root / "fifo")
    out["fifo"] = str(root / "fifo")
    (root / "target.csv").write_text("keep\n")
    (root / "link.csv").symlink_to(root / "target.csv")
    out["symlink"] = str(root / "link.csv")
    if os.geteuid() == 0:
        os.mknod(root / "dev", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    out["dev"] = str(root / "dev")
    import _input_cases  # issue 33's one reader: FIFO and device stores, tampered calibrations, --measured rows

    out.update(_input_cases.prepare(root, store))
    import _py_contract_cases  # issue 33's py: contract and values from arguments and sweep files

    out.update(_py_contract_cases.prepare(root))
    import _fuzz_cases  # issue 33's fuzzer: the holes it found that the issue did not list

    out.update(_fuzz_cases.prepare(root, store))
    import _schema_cases  # issue 33's record schema: known columns holding what they cannot

    out.update(_schema_cases.prepare(root, store))
    import _scale_cases  # issue 33's CSV cells beyond the reader's bounds, a header-only CSV

    out.update(_scale_cases.prepare(root, csv))
    from vitbench.history import add as history_add  # issue 45: a history for history show and report

    history_add(root / "history", csv, commit="abcd1234", date="2026-11-01T00:00:00+00:00")
    out["history"] = str(root / "history")
    return out


class _Hang(BaseException):
    pass


def _on_alarm(signum, frame):
    raise _Hang


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c.get("slow") else c for c in CASES],
                         ids=[_id(c) for c in CASES])
def test_bad_input(case, files, capsys, tmp_path):
    note = case.get("note", "")
    if "needs root" in note and os.geteuid() != 0:
        pytest.skip(note)
    argv = [part.format(**{**files, "tmp": str(tmp_path)}) for part in case["argv"]]
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(LIMIT_S)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's exit for --help and the like
        code = exc.code
    except _Hang:
        pytest.fail(f"no answer in {LIMIT_S} s: {argv}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    assert code == case["exit"], (code, err)
    lines = [line for line in err.strip().splitlines() if line.startswith("vitbench") or "error" in line]
    assert lines and re.search(case["match"], err), err
    assert lines[-1].startswith("vitbench"), err
