"""`vitbench history`: results over commits, the commits where a metric changed, the trend report,
and a store that concurrent writers and a torn line cannot damage."""

from __future__ import annotations

import csv
import datetime as dt
import json
import multiprocessing
import random
import re
import statistics
import subprocess
import sys

import pytest

from vitbench.errors import SpecError
from vitbench.history import add, changes, commits, read
from vitbench.history.store import check_ref
from vitbench.results import write_csv

MACS_COMMIT, TIME_COMMIT = 7, 13


def synthetic(seed: int, n: int = 20) -> list[tuple[str, str, str, list[dict]]]:
    """``n`` commits of two configurations, 5 runs each with about 1% noise per run; from commit
    7 ViT-Ti/16 has 3% more MACs, from commit 13 ResNet-18's step is 8% slower."""
    rng = random.Random(seed)
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    history = []
    for i in range(n):
        commit = f"{i:02d}{rng.getrandbits(152):038x}"
        rows = []
        for model, macs, step in (("vit-ti/16", 1_258_219_008, 0.0100), ("resnet18", 1_818_554_368, 0.0080)):
            if model == "vit-ti/16" and i >= MACS_COMMIT:
                macs = round(macs * 1.03)
            if model == "resnet18" and i >= TIME_COMMIT:
                step *= 1.08
            runs = [step * (1 + rng.gauss(0, 0.01)) for _ in range(5)]
            median = statistics.median(runs)
            rows.append({"model": model, "img_size": 224, "batch_size": 8, "device": "cpu", "mode": "infer",
                         "precision": "fp32", "status": "ok", "macs": macs * 8, "params": 5_717_416,
                         "latency_p50_s": median, "throughput_img_s": 8 / median, "runs": 5, "run_medians_s": runs})
        history.append((commit, (start + dt.timedelta(hours=i)).isoformat(), f"commit {i}", rows))
    return history


def _as_history_rows(history):
    return [{**r, "history_commit": c, "history_date": d, "history_message": m, "history_entry": c, "history_added_at": d}
            for c, d, m, rows in history for r in rows]


@pytest.mark.parametrize("seed", range(5))
def test_a_twenty_commit_history_names_the_commit_of_each_change(seed):
    history = _as_history_rows(synthetic(seed))
    found = {(c.metric, c.configuration.split()[0], c.first.message, c.last_good.message) for c in changes(history)}
    assert found == {
        ("macs", "vit-ti/16", f"commit {MACS_COMMIT}", f"commit {MACS_COMMIT - 1}"),
        ("latency_p50_s", "resnet18", f"commit {TIME_COMMIT}", f"commit {TIME_COMMIT - 1}"),
        ("throughput_img_s", "resnet18", f"commit {TIME_COMMIT}", f"commit {TIME_COMMIT - 1}"),
    }
    (macs,) = [c for c in changes(history) if c.metric == "macs"]
    assert macs.rel_change == pytest.approx(0.03, abs=1e-9) and macs.p_value is None
    (slower,) = [c for c in changes(history) if c.metric == "latency_p50_s"]
    assert 0.06 < slower.rel_change < 0.10 and slower.p_value < 0.001


def test_noise_alone_is_no_change():
    rng = random.Random(11)
    history = []
    for i in range(20):
        runs = [0.01 * (1 + rng.gauss(0, 0.01)) for _ in range(5)]
        history.append({"model": "vit-ti/16", "batch_size": 8, "status": "ok", "latency_p50_s": statistics.median(runs),
                        "run_medians_s": runs, "macs": 100, "history_commit": f"c{i:02d}",
                        "history_date": f"2026-11-01T{i:02d}:00:00+00:00", "history_added_at": "x"})
    assert changes(history) == []


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "vitbench", "history", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.mark.slow
def test_the_cli_adds_commits_reports_trends_and_hints_the_bisect(tmp_path):
    store = tmp_path / "history"
    history = synthetic(0)
    for i, (commit, date, message, rows) in enumerate(history):
        write_csv(rows, tmp_path / f"r{i}.csv")
        if i % 4:  # the API and the CLI write the same store
            add(store, tmp_path / f"r{i}.csv", commit=commit, date=date, branch="main", message=message)
        else:
            done = _cli("add", tmp_path / f"r{i}.csv", "--store", store, "--commit", commit, "--date", date,
                        "--branch", "main", "--message", message, "--format", "json")
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["records"][0]["rows"] == 2
    listed = _cli("list", "--store", store, "--format", "json")
    assert [c["message"] for c in json.loads(listed.stdout)["records"]] == [f"commit {i}" for i in range(20)]
    done = _cli("report", "--store", store, "--out", tmp_path / "report", "--bisect-hint")
    assert done.returncode == 0, done.stderr
    macs_commit, time_commit = history[MACS_COMMIT][0], history[TIME_COMMIT][0]
    assert f"git bisect start {macs_commit} {history[MACS_COMMIT - 1][0]}" in done.stdout
    assert f"git bisect start {time_commit} {history[TIME_COMMIT - 1][0]}" in done.stdout
    text = (tmp_path / "report" / "report.md").read_text()
    assert f"`{macs_commit[:10]}`" in text and f"`{time_commit[:10]}`" in text
    plots = sorted(p.name for p in (tmp_path / "report").glob("trend-*.png"))
    assert "trend-latency-p50-s-resnet18-224px-b8-cpu-infer-fp32.png" in plots and len(plots) == 8
    assert all(f"]({name})" in text for name in plots)
    page = (tmp_path / "report" / "report.html").read_text()
    assert page.count("<img") == len(plots) == page.count('src="data:image/png;base64,')
    assert "<table>" in page and f"<code>{time_commit[:10]}</code>" in page
    shown = _cli("show", "--store", store, "--commit", time_commit[:6], "--format", "json")
    assert {r["history_commit"] for r in json.loads(shown.stdout)["records"]} == {time_commit}


def test_the_commit_comes_from_git_when_not_given(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "feature"], cwd=repo, check=True)
    (repo / "f").write_text("1")
    subprocess.run([*git, "add", "f"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first change"], cwd=repo, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    write_csv(synthetic(0)[0][3], tmp_path / "r.csv")
    done = _cli("add", tmp_path / "r.csv", "--store", tmp_path / "h", "--format", "json", cwd=repo)
    assert done.returncode == 0, done.stderr
    (commit,) = commits(read(tmp_path / "h"))
    assert (commit.commit, commit.branch, commit.message) == (head, "feature", "first change")


def _add_many(store, rows, worker):
    for i in range(10):
        add(store, rows, commit=f"w{worker}-{i}", date=f"2026-11-0{worker + 1}T{i:02d}:00:00+00:00")


def test_concurrent_writers_lose_nothing_and_a_torn_line_is_skipped(tmp_path):
    store = tmp_path / "h"
    rows = synthetic(0)[0][3]
    workers = [multiprocessing.Process(target=_add_many, args=(store, rows, w)) for w in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert len(read(store)) == 3 * 10 * 2 and len(commits(read(store))) == 30
    with open(store / "rows.jsonl", "ab") as fh:  # a kill in the middle of a write
        fh.write(b'{"model": "torn", "history_commit": "x')
    assert len(read(store)) == 60
    add(store, rows, commit="after", date="2026-11-09T00:00:00+00:00")
    assert len(read(store)) == 62


@pytest.mark.parametrize("args, message", [
    (("add", "{missing}", "--commit", "abc", "--store", "{store}"), "missing.csv"),
    (("add", "{results}", "--commit", "abc", "--date", "yesterday", "--store", "{store}"), "date='yesterday': must be an ISO 8601 date"),
    (("add", "{results}", "--commit", "a b", "--store", "{store}"), "commit='a b': must be a commit id"),
    (("add", "{results}", "--commit", "\x1b]0;pwn\x07", "--store", "{store}"), "commit='\\x1b]0;pwn\\x07': must be a commit id"),
    (("add", "{results}", "--store", "{store}"), "commit=None: not in a git checkout here"),
    (("report", "--store", "{store}", "--alpha", "2"), "argument --alpha: must be between 0 and 1 (or 0% and 100%), got '2'"),
    (("list", "--store", "{sweep}"), "is a results store, not a history"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    write_csv(synthetic(0)[0][3], tmp_path / "r.csv")
    sweep = tmp_path / "sweep"
    from vitbench.store import Store

    with Store.open(sweep, sweep={"name": "s", "fingerprint": "f"}) as handle:
        handle.add({"id": "1", "model": "m", "status": "ok"})
    values = {"missing": tmp_path / "missing.csv", "store": tmp_path / "h", "results": tmp_path / "r.csv", "sweep": sweep}
    done = _cli(*(a.format(**values) for a in args), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_show_needs_a_known_unique_commit(tmp_path):
    for commit, date, _, rows in synthetic(0)[:3]:
        add(tmp_path / "h", rows, commit=commit, date=date)
    done = _cli("show", "--store", tmp_path / "h", "--commit", "zz")
    assert done.returncode == 2 and "commit='zz': names no commit of the history" in done.stderr
    done = _cli("show", "--store", tmp_path / "h", "--commit", "0")
    assert done.returncode == 2 and "is the prefix of 3 commits" in done.stderr


@pytest.mark.slow
def test_the_html_report_escapes_what_users_wrote(tmp_path):
    from vitbench.reporting.history import write_report

    history = synthetic(0)
    rows = _as_history_rows([(c, d, "<script>alert(1)</script> & | pipes" if i == MACS_COMMIT else m, r)
                             for i, (c, d, m, r) in enumerate(history)])
    write_report(tmp_path, rows, ["macs"])
    page = (tmp_path / "report.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; | pipes" in page


def test_branch_and_subject_carry_no_escape_sequence(tmp_path):
    """--branch and the commit's subject reach tables and CSV files: an escape sequence or a bell
    in the subject is dropped when the commit is added (a red-team find: commits.csv set the
    terminal's title when shown with cat); a branch holding one is no git branch name, refused."""
    rows = synthetic(0)[0][3]
    with pytest.raises(SpecError, match=r"branch='\\x1b\[31mmain\\x07': must be a git branch name"):
        add(tmp_path / "h", rows, commit="c1", date="2026-11-01T00:00:00+00:00", branch="\x1b[31mmain\x07")
    assert not (tmp_path / "h").exists()  # refused before the store is made
    add(tmp_path / "h", rows, commit="c1", date="2026-11-01T00:00:00+00:00", branch="main", message="fix\x1b]0;pwn\x07 it")
    (commit,) = commits(read(tmp_path / "h"))
    assert (commit.branch, commit.message) == ("main", "fix it")


# --------------------------------------------------------------------------- ids and names (issue 45)
#: names `git check-ref-format --allow-onelevel` refuses (the test checks that git does)
GIT_REFUSES = ["a..b", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[b", "a\\b", ".hidden", "a/.b", "a.lock", "a/b.lock/c",
               "a/", "/a", "a//b", "a.", "a@{1}", "@", "a\x7fb", "a\tb", "a\nb"]
#: names git takes but a shell or an option parser would read as something else
SHELL_OR_OPTION = ["-x", "--help", "b$(id)", "a;touch${IFS}PWNED", "a(b", "a)b", "a`id`", "a|b", "a&b", "a<b", "a>b",
                   "a'b", 'a"b', "a\u2028b", "a\u202eb"]
VALID = ["deadbeef", "1a2b3c4", "abc", "main", "feature/x-1", "release-1.2", "v1.0_rc", "\u00fcn\u00efcode", "w1-3",
         "0123456789abcdef" * 4]


def _git_accepts(name: str) -> bool:
    return subprocess.run(["git", "check-ref-format", "--allow-onelevel", name], capture_output=True).returncode == 0


@pytest.mark.parametrize("name", GIT_REFUSES + SHELL_OR_OPTION)
def test_a_commit_id_or_branch_git_or_a_shell_would_misread_is_refused(name):
    if name in GIT_REFUSES:
        assert not _git_accepts(name)
    for field in ("commit", "branch"):
        with pytest.raises(SpecError, match=f"^{field}="):
            check_ref(field, name)
    with pytest.raises(SpecError):
        check_ref("commit", name, prefix=True) if not name.endswith(("/", ".", ".lock")) else check_ref("commit", name)


@pytest.mark.parametrize("name", VALID)
def test_hex_ids_and_ref_names_are_taken_as_they_are(name):
    assert _git_accepts(name)
    assert check_ref("commit", name) == name and check_ref("branch", name) == name


def test_the_start_of_a_name_is_a_prefix_and_no_branch_is_the_empty_name():
    assert check_ref("commit", "feature/", prefix=True) == "feature/" and check_ref("commit", "v1.", prefix=True) == "v1."
    with pytest.raises(SpecError, match="ends with '/'"):
        check_ref("commit", "feature/")
    assert check_ref("branch", "", empty=True) == ""
    with pytest.raises(SpecError, match="^commit='': must be a commit id"):
        check_ref("commit", "")


def test_a_hostile_branch_checked_out_here_is_refused_unless_named(tmp_path):
    """A pull request's branch name is anyone's to choose: git takes `x;touch${IFS}PWNED`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "x;touch${IFS}PWNED"], cwd=repo, check=True)
    (repo / "f").write_text("1")
    subprocess.run([*git, "add", "f"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], cwd=repo, check=True)
    write_csv(synthetic(0)[0][3], tmp_path / "r.csv")
    done = _cli("add", tmp_path / "r.csv", "--store", tmp_path / "h", cwd=repo)
    assert done.returncode == 2 and "branch='x;touch${IFS}PWNED': must be a git branch name: it holds ';'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "h").exists()
    done = _cli("add", tmp_path / "r.csv", "--store", tmp_path / "h", "--branch", "main", cwd=repo)
    assert done.returncode == 0, done.stderr


def _old_store(path, commits_macs):
    """A history written before ids were checked: any id, as a store holds it."""
    from vitbench.history.store import FINGERPRINT, HISTORY_NAME
    from vitbench.store import Store

    with Store.open(path, sweep={"name": HISTORY_NAME, "fingerprint": FINGERPRINT}) as handle:
        for i, (commit, macs) in enumerate(commits_macs):
            date = f"2026-11-0{i + 1}T00:00:00+00:00"
            handle.add({"id": f"{i}", "model": "m", "img_size": 224, "batch_size": 1, "status": "ok", "macs": macs,
                        "params": 5, "history_commit": commit, "history_date": date, "history_branch": "",
                        "history_message": f"commit {i}", "history_entry": f"e{i}", "history_added_at": date})


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_bisect_hints_quote_every_id_for_a_shell(tmp_path, capsys):
    from vitbench.cli import main

    _old_store(tmp_path / "h", [("aaaa0000", 100), ("b$(id);x", 200), ("a|b`c", 300)])
    assert main(["history", "report", "--store", str(tmp_path / "h"), "--out", str(tmp_path / "r"), "--bisect-hint",
                 "-q", "--metric", "macs"]) == 0
    out = capsys.readouterr().out
    assert "\n  git bisect start 'b$(id);x' aaaa0000\n" in out
    assert "\n  git bisect start 'a|b`c' 'b$(id);x'\n" in out
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| `git bisect start 'b$(id);x' aaaa0000` |" in report
    assert "| ``git bisect start 'a\\|b`c' 'b$(id);x'`` |" in report  # a table cell still: its | escaped
    assert "\n| ``a\\|b`c`` | 2026-11-03T00:00:00 | commit 2 | macs |" in report
    page = (tmp_path / "r" / "report.html").read_text()
    assert "<code>git bisect start 'b$(id);x' aaaa0000</code>" in page
    with open(tmp_path / "r" / "changes.csv", newline="") as fh:
        hints = [row["bisect"] for row in csv.DictReader(fh)]
    assert hints == ["git bisect start 'b$(id);x' aaaa0000", "git bisect start 'a|b`c' 'b$(id);x'"]


def test_a_report_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    import errno

    from vitbench.cli import main
    from vitbench.reporting import history as reporting

    _old_store(tmp_path / "h", [("aaaa0000", 100), ("bbbb1111", 200)])

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(reporting, "plot_series", full)
    assert main(["history", "report", "--store", str(tmp_path / "h"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err == f"vitbench: error: out={str(tmp_path / 'h' / 'report')!r}: cannot be written (No space left on device)\n"


# --------------------------------------------------------------------------- deterministic metrics, trend plots (issue 46)
def _predicted(depth: int) -> dict:
    """A GPU `predict` row (no runs: the cost model gives the same number on any runner) of a ViT
    of ``depth`` blocks: one more block, 24.5% more MACs and 23% more predicted time."""
    return {"model": "py:./models.py:build", "img_size": 32, "batch_size": 1, "device": "h100", "mode": "infer",
            "precision": "bf16", "status": "ok", "params": 114_250 + 50_000 * (depth - 2), "macs": 1_942_400 * depth // 2,
            "pred_latency_s": 0.0018 * (1 + 0.23 * (depth - 2)), "pred_bound": "host", "pred_warning": None,
            "pred_basis": "gpu-model:h100"}


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_a_predicted_time_step_is_a_change_at_its_commit_with_a_bisect_hint(tmp_path, capsys):
    """Two commits, the second adding a block: before, `--bisect-hint` named params and MACs but
    not the +23% in pred_latency_s (a deterministic metric was left to the noise test, which needs
    four commits)."""
    from vitbench.cli import main

    store = tmp_path / "h"
    add(store, [_predicted(2)], commit="aaaa1111", date="2026-11-01T00:00:00+00:00", message="two blocks")
    add(store, [_predicted(3)], commit="bbbb2222", date="2026-11-02T00:00:00+00:00", message="three blocks")
    found = {c.metric: c for c in changes(read(store))}
    assert set(found) == {"params", "macs", "pred_latency_s"}
    predicted = found["pred_latency_s"]
    assert (predicted.first.commit, predicted.last_good.commit, predicted.method) == ("bbbb2222", "aaaa1111", "deterministic")
    assert predicted.rel_change == pytest.approx(0.23) and predicted.p_value is None
    assert main(["history", "report", "--store", str(store), "--out", str(tmp_path / "r"), "--bisect-hint", "-q"]) == 0
    out = capsys.readouterr().out
    assert "pred_latency_s of py:./models.py:build 32px b1 h100 infer bf16: +23.00% from bbbb2222 (three blocks)\n" \
           "  git bisect start bbbb2222 aaaa1111\n" in out


def test_a_metric_whose_rows_carry_runs_or_disagree_within_a_commit_is_not_deterministic():
    """A measured latency (rows with runs) and a prediction whose pooled values differ within a
    commit (a CPU calibration remade on each run) stay with the noise test: a 1% wobble between
    two commits is no change, while the same wobble in a deterministic prediction is one."""
    def rows(commit, i, **values):
        return {"model": "m", "batch_size": 1, "status": "ok", "history_commit": commit,
                "history_date": f"2026-11-0{i + 1}T00:00:00+00:00", "history_added_at": f"{i}", **values}

    measured = [rows("c0", 0, latency_p50_s=0.0100, runs=3, run_medians_s=[0.0100, 0.0101, 0.0099]),
                rows("c1", 1, latency_p50_s=0.0101, runs=3, run_medians_s=[0.0101, 0.0102, 0.0100])]
    wobbly = [rows("c0", 0, pred_latency_s=0.0100), rows("c0", 0, pred_latency_s=0.0102),
              rows("c1", 1, pred_latency_s=0.0101), rows("c1", 1, pred_latency_s=0.0103)]
    pinned = [rows("c0", 0, pred_latency_s=0.0100), rows("c0", 0, pred_latency_s=0.0100),
              rows("c1", 1, pred_latency_s=0.0101)]
    assert changes(measured) == [] and changes(wobbly) == []
    (change,) = changes(pinned)
    assert (change.metric, change.first.commit, change.method) == ("pred_latency_s", "c1", "deterministic")


def _tick_texts(fig) -> list[str]:
    fig.canvas.draw()
    return [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]


@pytest.mark.slow  # about 1-3 s: the default suite stays under 2 minutes
def test_trend_plots_are_in_vitbenchs_units_with_the_change_at_its_commit_and_a_band_only_for_runs():
    """Before: a `1e8` offset on MACs and `0.00650` for seconds, the change line halfway between
    two commits, and a 'spread (min-max of runs)' legend for exact counts."""
    import matplotlib.pyplot as plt

    from vitbench.history import series
    from vitbench.reporting.history import trend_figure

    history = _as_history_rows(synthetic(0))
    by_name = {(s.metric, s.configuration.split()[0]): s for s in series(history)}
    found = {(c.metric, c.configuration.split()[0]): c for c in changes(history)}
    macs = by_name[("macs", "vit-ti/16")]
    fig = trend_figure(macs, [found[("macs", "vit-ti/16")]])
    try:
        ax = fig.axes[0]
        ticks = _tick_texts(fig)
        assert ticks and all(re.fullmatch(r"[0-9.]+ G", t) for t in ticks), ticks
        assert ax.yaxis.get_offset_text().get_text() == ""
        (line,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert list(line.get_xdata()) == [MACS_COMMIT, MACS_COMMIT]  # at the commit, not at MACS_COMMIT - 0.5
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert not any("spread" in t for t in legend) and not ax.collections, legend
    finally:
        plt.close(fig)
    latency = by_name[("latency_p50_s", "resnet18")]
    fig = trend_figure(latency, [found[("latency_p50_s", "resnet18")]])
    try:
        ticks = _tick_texts(fig)
        assert ticks and all(re.fullmatch(r"[0-9.]+ ms", t) for t in ticks), ticks
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert "spread (min-max of runs)" in legend and fig.axes[0].collections  # measured: the runs' band
    finally:
        plt.close(fig)
