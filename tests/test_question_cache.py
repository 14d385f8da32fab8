"""The question cache (issue 44): a repeated question about a ``timm:``, ``torchvision:`` or
``hf:`` model is answered without asking the library again, with the same rows; an entry of
another library version or other overrides is never reused; a damaged or tampered entry is
refused with a row warning and rebuilt, never trusted (issue 45: caches are read like inputs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vitbench
from vitbench.timemodel import cached_models, question_cache, run

#: a timm model with a spec (ConvNeXt: no memory formula, so choose traces its memory) and one
#: without (its params and MACs are counted): timm's test models, small and quick to trace
WITH_SPEC, WITHOUT_SPEC = "timm:test_convnext", "timm:test_vit"
MODELS = [WITH_SPEC, WITHOUT_SPEC]
DEVICES = "h100,a100"
BATCH = 2
CHOOSE = {"device": "h100,l4", "batch_size": 8, "mode": "infer", "precision": "bf16", "epochs": 1, "dataset_size": 1000}


def _predict(**extra) -> list[dict]:
    run._OPS_CACHE.clear()  # the in-process memo would hide the disk caches
    return list(vitbench.predict(MODELS, device=DEVICES, batch_size=BATCH, **extra))


def _same(rows: list[dict]) -> list[dict]:
    """Rows without what may differ between two calls (the time the pricing took)."""
    return [{k: v for k, v in r.items() if k != "pred_seconds"} for r in rows]


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A trace cache in which both models were predicted once: the rows made by the libraries
    themselves, and the folder with their traces and question entries."""
    root = tmp_path_factory.mktemp("warm") / "traces"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VITBENCH_TRACE_DIR", str(root))
        rows = _predict()
    return root, rows


@pytest.fixture(scope="module")
def warm_choice(warm):
    """The rows of one choice made by the libraries themselves, its entries added to the warm
    cache (asked for before ``cache``, which copies that folder). Its memory trace takes about
    7 s: the tests that need it run under -m slow."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VITBENCH_TRACE_DIR", str(warm[0]))
        return list(vitbench.choose(WITH_SPEC, **CHOOSE))


@pytest.fixture
def cache(warm, tmp_path, monkeypatch) -> Path:
    """A copy of the warm cache for this test alone."""
    root = tmp_path / "traces"
    shutil.copytree(warm[0], root)
    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(root))
    return root


@pytest.fixture
def library(monkeypatch) -> dict[str, int]:
    """How often the libraries were asked: a reference resolved, a model counted, a memory traced."""
    from vitbench.counters import fill, memory_trace
    from vitbench.models import references
    from vitbench.specs.model_ref import ModelRef

    calls = {"resolve": 0, "count": 0, "memory": 0}

    def spy(name, function):
        def called(*args, **kwargs):
            if name != "resolve" or isinstance(args[0], ModelRef):  # a Target already resolved asks nothing
                calls[name] += 1
            return function(*args, **kwargs)
        return called

    monkeypatch.setattr(references, "resolve_one", spy("resolve", references.resolve_one))
    monkeypatch.setattr(fill, "counted_identity", spy("count", fill.counted_identity))
    monkeypatch.setattr(memory_trace, "trace_target", spy("memory", memory_trace.trace_target))
    return calls


def _resolution_path(root: Path, model: str) -> Path:
    key = question_cache.entry_key("resolution", {"model": model, "overrides": {}, "input_size": None})
    return root / "questions" / f"{key}.json"


def _counts_path(root: Path) -> Path:
    from vitbench.models.references import resolve

    key = cached_models._target_key("counts", resolve(WITHOUT_SPEC), batch=BATCH, reparam=False)
    return root / "questions" / f"{key}.json"


def _refused(rows: list[dict]) -> list[tuple[str, str]]:
    return [(r["model"], r["device"]) for r in rows for w in r["warnings"] if w["code"] == "question-cache-refused"]


# --- a repeated question ----------------------------------------------------------------------------

@pytest.mark.slow
def test_a_repeated_prediction_asks_no_library_and_gives_the_same_rows(warm, cache, library):
    rows = _predict()
    assert library == {"resolve": 0, "count": 0, "memory": 0}
    assert _same(rows) == _same(warm[1])
    assert [r["status"] for r in rows] == ["ok"] * 4 and rows[2]["params"] > 0  # the counted model's count came back


@pytest.mark.slow
def test_a_repeated_choice_asks_no_library_and_gives_the_same_rows(warm_choice, cache, library):
    chosen = list(vitbench.choose(WITH_SPEC, **CHOOSE))
    assert library == {"resolve": 0, "count": 0, "memory": 0}
    assert _same(chosen) == _same(warm_choice)
    assert chosen[0]["pred_peak_memory_bytes"] > 0 and chosen[0]["memory_basis"].startswith("traced")


@pytest.mark.slow
def test_without_the_cache_nothing_is_read_or_written(warm, cache, library):
    before = sorted(p.name for p in (cache / "questions").iterdir())
    rows = _predict(trace_cache=False)
    assert library["resolve"] == 2 and library["count"] >= 1
    assert _same(rows) == _same(warm[1])
    assert sorted(p.name for p in (cache / "questions").iterdir()) == before


# --- never reused for another question --------------------------------------------------------------

def test_another_library_version_is_not_reused(warm, cache, library, monkeypatch):
    from importlib import metadata

    real = metadata.version
    from vitbench.timemodel import trace_cache

    monkeypatch.setattr(metadata, "version", lambda name: "0.0.1" if name == "timm" else real(name))
    monkeypatch.setattr(trace_cache, "_VERSIONS", {})  # read again, as a new process would
    monkeypatch.setattr(question_cache, "_CONTEXT", {})
    before = len(list((cache / "questions").iterdir()))
    rows = _predict()
    assert library["resolve"] == 2 and library["count"] >= 1  # asked timm again
    assert _same(rows) == _same(warm[1])
    assert len(list((cache / "questions").iterdir())) == before + 3  # two resolutions and a count, under new keys


def test_the_key_tells_every_part_of_the_question_apart():
    base = {"model": WITH_SPEC, "overrides": {}, "input_size": None}
    variants = [
        base, {**base, "model": WITHOUT_SPEC}, {**base, "overrides": {"img_size": 128}},
        {**base, "overrides": {"img_size": [128, 160]}}, {**base, "overrides": {"img_size": (128, 160)}},
        {**base, "overrides": {"img_size": "128"}}, {**base, "input_size": (3, 128, 128)},
    ]
    keys = [question_cache.entry_key("resolution", v) for v in variants]
    assert len(set(keys)) == len(variants)
    assert question_cache.entry_key("counts", base) != keys[0]
    assert question_cache.entry_key("resolution", dict(base)) == keys[0]  # and the same question, the same key


def test_an_edit_of_vitbenchs_own_model_code_changes_every_key(tmp_path, monkeypatch):
    for package in question_cache.SOURCE_PACKAGES:
        (tmp_path / "vitbench" / package).mkdir(parents=True)
        (tmp_path / "vitbench" / package / "a.py").write_text("x = 1\n")
    fake = tmp_path / "vitbench" / "timemodel" / "question_cache.py"
    monkeypatch.setattr(question_cache, "__file__", str(fake))
    first = question_cache.source_digest()
    (tmp_path / "vitbench" / "models" / "a.py").write_text("x = 2\n")
    assert question_cache.source_digest() != first


def test_what_would_not_read_back_exactly_or_may_change_is_not_cached():
    from vitbench.models.target import Target

    odd = Target(name="timm:x", source="timm", input_size=(3, 8, 8), overrides=(("act", object()),))
    assert cached_models.encode_resolution([odd], set()) is None
    for source in ("py", "module", "preset"):
        assert cached_models.encode_resolution([Target(name="x", source=source, input_size=(3, 8, 8))], set()) is None
    plain = Target(name="timm:x", source="timm", input_size=(3, 8, 8), overrides=(("depths", (2, 2)), ("drop", 0.5)))
    value = cached_models.encode_resolution([plain], {"depths"})
    assert cached_models.parse_resolution(json.loads(json.dumps(value))) == ([plain], {"depths"})


def test_an_entry_that_would_be_refused_is_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path))
    assert not question_cache.write("counts", "k", {"macs": 10}, cached_models.parse_counts)  # no flops
    points = [[1, 2]] * (cached_models.MAX_POINTS + 1)
    assert not question_cache.write("memory", "k", {"points": points, "forward_end": [0, 0], "fixed": 0},
                                    cached_models.parse_profile)
    deep: object = 1
    for _ in range(question_cache.MAX_DEPTH):
        deep = [deep]
    assert not question_cache.write("counts", "k", {"params": deep}, lambda value: value)  # nested past the reader's bound
    assert not (tmp_path / "questions").exists()
    assert question_cache.write("counts", "k", {"params": 10}, cached_models.parse_counts)
    assert question_cache.read("counts", "k", cached_models.parse_counts) == ({"params": 10}, [])


# --- damaged and tampered entries -------------------------------------------------------------------

def _resealed(change, name: str = "resealed"):
    """A change to the entry's value, with its checksum made again (a tampered entry)."""
    def damage(path: Path) -> None:
        data = json.loads(path.read_text())
        change(data["value"])
        data["sha256"] = question_cache.checksum(data["kind"], data["key"], data["value"])
        path.write_text(json.dumps(data))
    damage.__name__ = name
    return damage


def _edited(change, name: str):
    def damage(path: Path) -> None:
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))
    damage.__name__ = name
    return damage


def _first(value):
    return value["targets"][0]


def _not_json(path):
    path.write_bytes(path.read_bytes()[:40])


def _empty(path):
    path.write_bytes(b"")


def _a_fifo(path):
    path.unlink()
    os.mkfifo(path)


def _a_symlink(path):
    target = path.with_name("elsewhere.json")
    path.rename(target)
    path.symlink_to(target)


def _too_large(path):
    path.write_bytes(b" " * (question_cache.MAX_ENTRY_BYTES + 1))


DAMAGE = [
    _not_json, _empty, _a_fifo, _a_symlink, _too_large,
    _edited(lambda d: d["value"]["targets"][0].update(name="timm:other"), "checksum_mismatch"),  # the checksum no longer matches
    _edited(lambda d: d.pop("sha256"), "no_checksum"),
    _edited(lambda d: d.update(extra=1), "extra_key"),
    _edited(lambda d: d.update(format=0), "other_format"),
    _edited(lambda d: d.update(kind="counts"), "other_kind"),
    _edited(lambda d: d["value"].update(applied=[10**40]), "huge_integer"),  # an integer no entry holds
    _resealed(lambda v: _first(v).update(input_size=["3", "64", "64"]), "size_as_text"),
    _resealed(lambda v: _first(v).update(input_size=[True, 64, 64]), "size_a_bool"),
    _resealed(lambda v: _first(v).update(input_size=[3, 64]), "size_of_two"),
    _resealed(lambda v: _first(v).update(source="py"), "source_py"),
    _resealed(lambda v: _first(v).update(name=""), "empty_name"),
    _resealed(lambda v: _first(v).update(name="timm:other"), "other_name"),  # valid, but not the reference asked for
    _resealed(lambda v: _first(v).update(spec=[1, 2]), "spec_a_list"),
    _resealed(lambda v: _first(v)["spec"].update(dims=[-1, 2, 3, 4]), "negative_width"),
    _resealed(lambda v: _first(v)["spec"].update(depth=12), "unknown_spec_field"),  # no such field of a ConvNeXt
    _resealed(lambda v: _first(v)["spec"].update(layer_scale="yes"), "text_for_a_bool"),
    _resealed(lambda v: _first(v).update(overrides=[["img_size", [1, 2]]]), "alternatives_as_value"),
    _resealed(lambda v: _first(v).update(overrides=[["no such name!", 1]]), "bad_override_name"),
    _resealed(lambda v: _first(v).update(analytic_note=7), "note_a_number"),
    _resealed(lambda v: _first(v).pop("spec"), "no_spec"),
    _resealed(lambda v: v.update(targets=[]), "no_targets"),
    _resealed(lambda v: v.update(applied="img_size"), "applied_as_text"),
]


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__.strip("_") for d in DAMAGE])
def test_a_damaged_resolution_is_refused_with_a_warning_and_rebuilt(damage, warm, cache, library):
    path = _resolution_path(cache, WITH_SPEC)
    damage(path)
    rows = _predict()
    assert _same([{**r, "warnings": [w for w in r["warnings"] if w["code"] != "question-cache-refused"]} for r in rows]) \
        == _same(warm[1])
    assert _refused(rows) == [(WITH_SPEC, "h100"), (WITH_SPEC, "a100")]  # on its rows, once each, nowhere else
    message = next(w["message"] for w in rows[0]["warnings"] if w["code"] == "question-cache-refused")
    assert message.startswith("question cache entry ") and "\n" not in message
    assert library["resolve"] == 1  # that model alone asked timm again
    assert not path.is_symlink() and path.is_file()  # written back, valid
    assert _refused(_predict()) == []


def test_a_damaged_count_is_refused_with_a_warning_and_counted_again(warm, cache, library):
    path = _counts_path(cache)
    _resealed(lambda v: v.update(macs=-1))(path)
    rows = _predict()
    assert _refused(rows) == [(WITHOUT_SPEC, "h100")]  # the first row counts again and writes it back
    assert library["count"] == 1 and rows[2]["macs"] == warm[1][2]["macs"] and rows[3]["macs"] == warm[1][3]["macs"]
    _resealed(lambda v: v.update(flops=v["flops"] + 2))(path)
    assert _refused(_predict()) == [(WITHOUT_SPEC, "h100")]


@pytest.mark.slow
def test_a_damaged_memory_profile_is_refused_with_a_warning_and_traced_again(warm_choice, cache, library):
    from vitbench.models.references import resolve

    target = resolve(WITH_SPEC)
    key = cached_models._target_key("memory", target, mode="infer", precision="bf16", optimizer="adamw")
    path = cache / "questions" / f"{key}.json"
    _resealed(lambda v: v.update(points=[[1.5, 2]]))(path)
    chosen = list(vitbench.choose(WITH_SPEC, **CHOOSE))
    assert library["memory"] == 1
    assert all(any(w["code"] == "question-cache-refused" for w in r["warnings"]) for r in chosen)
    fresh = [{**r, "warnings": [w for w in r["warnings"] if w["code"] != "question-cache-refused"]} for r in chosen]
    assert _same(fresh) == _same(warm_choice)


def test_a_tampered_but_valid_spec_never_prices_a_step(warm, cache, library):
    """An entry whose fields are valid but are not what timm builds (another width, checksum
    made again): its trace is not in the cache, so the model is built, the difference seen, the
    entry removed and the rows refused with the reason; the next question is right again."""
    path = _resolution_path(cache, WITH_SPEC)
    _resealed(lambda v: _first(v)["spec"].update(dims=[8, 16, 32, 64]))(path)
    rows = _predict()
    failed = [r for r in rows if r["model"] == WITH_SPEC]
    assert [r["status"] for r in failed] == ["refused", "refused"] and "question cache" in failed[0]["error"]
    assert all(r.get("pred_latency_s") is None for r in failed)
    assert not path.exists()
    assert _same(_predict()) == _same(warm[1])


@pytest.mark.slow
def test_a_repeated_question_imports_no_model_library(tmp_path):
    """In a fresh process, a question asked before imports none of timm, transformers,
    torchvision's models or torch._dynamo (what the cache saves: seconds)."""
    env = {**os.environ, "VITBENCH_TRACE_DIR": str(tmp_path / "traces"), "PYTHONPATH": str(Path(vitbench.__file__).parents[1])}
    check = ("import sys; from vitbench.cli import main; code = main(sys.argv[1:]); "
             "print([m for m in ('timm', 'transformers', 'torchvision.models', 'torch._dynamo') if m in sys.modules]); "
             "sys.exit(code)")
    for argv in (["predict", "timm:test_vit", "torchvision:resnet18", "--device", "h100,a100", "-q"],
                 ["choose", WITH_SPEC, "--device", "h100,l4", "--batch-size", "8", "-q"]):
        first = subprocess.run([sys.executable, "-c", check, *argv], env=env, capture_output=True, text=True, check=True)
        again = subprocess.run([sys.executable, "-c", check, *argv], env=env, capture_output=True, text=True, check=True)
        assert "timm" in first.stdout.splitlines()[-1]
        assert again.stdout.splitlines()[-1] == "[]"
        assert again.stdout.splitlines()[:-1] == first.stdout.splitlines()[:-1]


# --- the key, the tags and the entry bounds, as documented ------------------------------------------

def test_the_key_is_the_first_40_hex_digits_of_sha256_of_the_question_as_sorted_compact_json():
    import hashlib

    identity = {"model": "timm:resnet18", "overrides": {}, "input_size": None}
    context = question_cache.context()
    text = json.dumps({"kind": "resolution", "identity": question_cache.tagged(identity), **context}, sort_keys=True,
                      separators=(",", ":"))
    assert question_cache.entry_key("resolution", identity) == hashlib.sha256(text.encode()).hexdigest()[:40]
    assert context["python"] == [sys.version_info.major, sys.version_info.minor]  # the minor version, not the patch


def test_tags_keep_what_json_loses():
    tagged = question_cache.tagged
    assert tagged([1, (2, "a")]) == {"list": [1, {"tuple": [2, "a"]}]}
    assert tagged(Path("x")) == {"repr": "pathlib.PosixPath:PosixPath('x')"}
    assert tagged(float("nan")) == {"repr": "nan"} and tagged(0.5) == 0.5
    assert tagged({2: None}) == {"dict": [["2", None]]}


def test_an_entry_over_one_mebibyte_is_not_written_and_the_largest_counts_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path))
    assert question_cache.MAX_ENTRY_BYTES == 2 ** 20
    big = {"params": 10, "note": "x" * (3 * 2 ** 19)}  # 1.5 MiB
    assert question_cache.write("counts", "k", big, lambda value: value) is False
    assert question_cache.write("counts", "k", {"params": 10 ** 18}, lambda value: value) is True  # 19 digits
    assert question_cache.read("counts", "k", lambda value: value) == ({"params": 10 ** 18}, [])
    assert question_cache.write("counts", "k", {"params": 10 ** 19}, lambda value: value) is False  # 20 digits


@pytest.mark.parametrize("value", [{"params": -1}, {"params": 1.5}, {"params": True}, {"params": 2**62 + 1},
                                   {"macs": 2, "flops": 4.0}])
def test_a_count_that_is_no_integer_from_0_to_2_to_the_62_is_stale(value):
    with pytest.raises(question_cache.StaleEntry):
        cached_models.parse_counts(value)


def test_the_largest_counts_sizes_and_memory_points_read_back():
    assert cached_models.parse_counts({"params": 2**62, "macs": 0, "flops": 0}) == {"params": 2**62, "macs": 0, "flops": 0}
    profile = cached_models.parse_profile({"points": [[0, -5], [2**62, 2**62]], "forward_end": [0, 7], "fixed": 0})
    assert profile.points == ((0, -5), (2**62, 2**62)) and profile.forward_end == (0, 7)
    with pytest.raises(question_cache.StaleEntry, match="bytes per image >= 0"):
        cached_models.parse_profile({"points": [[-1, 5]], "forward_end": [0, 7], "fixed": 0})
    from vitbench.models.target import Target
    from vitbench.specs.common import MAX_FIELD

    large = Target(name="timm:x", source="timm", input_size=(3, MAX_FIELD, MAX_FIELD))
    value = json.loads(json.dumps(cached_models.encode_resolution([large], set())))
    assert cached_models.parse_resolution(value) == ([large], set())
