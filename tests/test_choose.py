"""`vitbench choose` and its parts (issue 44): the batch checked against every card's memory, the
data-parallel step worked by hand, the verdict's tie rule, prices per device, bad input in one
line, the answer's columns first, and the worked example of docs/choosing.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import vitbench
from vitbench.cli import main
from vitbench.errors import InputFileError, SpecError
from vitbench.timemodel import interconnect
from vitbench.timemodel.choose import RESERVE_BYTES, choose, verdict
from vitbench.timemodel.gpus import CATALOGUE, gpu
from vitbench.timemodel.prices import device_prices, load_price_file

ROOT = Path(__file__).resolve().parents[1]
MODEL = "vit-s/16"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))


# --- memory, per card ------------------------------------------------------------------------

@pytest.mark.parametrize("card", [spec.key for spec in CATALOGUE])
@pytest.mark.slow
def test_the_batch_chosen_for_every_card_fits_it_and_one_more_power_of_two_does_not(card):
    """No batch given: the batch priced is a power of two whose predicted peak (the memory model,
    asked directly) is under the card's memory; twice it is over the card's budget, and asking for
    that gives a row that says "does not fit", with no time."""
    spec = vitbench.resolve(MODEL)
    row = choose(MODEL, device=card, precision="fp16")[0]
    batch = row["batch_size"]
    capacity = int(gpu(card).memory_gb * 10**9)
    assert row["fits"] is True and batch & (batch - 1) == 0
    peak = vitbench.memory_estimate(spec, batch, "train", "fp16").peak_bytes
    assert row["pred_peak_memory_bytes"] == peak
    assert peak <= capacity - RESERVE_BYTES < capacity
    assert vitbench.memory_estimate(spec, 2 * batch, "train", "fp16").peak_bytes > capacity - RESERVE_BYTES
    over = choose(MODEL, device=card, precision="fp16", batch_size=row["max_batch_size"] + 1)[0]
    assert over["fits"] is False and over["pred_latency_s"] is None and over["pred_cost"] is None
    assert over["note"].startswith(f"does not fit: batch {row['max_batch_size'] + 1} needs ")
    assert f"the {gpu(card).name} has {gpu(card).memory_gb:g} GB" in over["note"]


@pytest.mark.slow
def test_a_batch_over_one_card_is_a_row_that_says_so_while_the_other_card_is_priced():
    rows = choose("vit-b/16", device="l4,h100", precision="bf16", batch_size=512, epochs=1, dataset_size=10_000)
    h100, l4 = rows
    assert (h100["device"], l4["device"]) == ("h100", "l4")
    assert h100["fits"] is True and h100["pred_train_hours"] > 0
    peak = vitbench.memory_estimate(vitbench.resolve("vit-b/16"), 512, "train", "bf16").peak_bytes
    assert peak > 24 * 10**9 - RESERVE_BYTES
    assert l4["note"] == (f"does not fit: batch 512 needs {peak / 2**30:.2f} GiB, the L4 has 24 GB "
                          f"({(24 * 10**9 - RESERVE_BYTES) / 2**30:.2f} GiB after 1.00 GiB for the CUDA context and workspaces)")
    assert "h100 can run it" in rows.verdict


# --- the data-parallel step, by hand -----------------------------------------------------------

def test_the_ring_all_reduce_worked_by_hand():
    h100 = interconnect.link("h100")
    # 8 cards on NVLink 4: 900 GB/s both ways -> 450 GB/s one way x 0.70 = 315 GB/s bus bandwidth
    # 2 (8 - 1) / 8 x 1e9 B / 315e9 B/s = 5.5556 ms, + 14 ring steps x 2 us
    assert interconnect.allreduce_s(1e9, 8, 1, h100) == pytest.approx(1.75 / 315 + 14 * 2e-6, rel=1e-12)
    # 2 nodes: + 2 (2 - 1) / 2 x 1e9 / (3200 Gb/s / 8 x 0.85 = 340 GB/s) + 2 steps x 5 us
    assert interconnect.allreduce_s(1e9, 8, 2, h100) == pytest.approx(1.75 / 315 + 14 * 2e-6 + 1 / 340 + 10e-6, rel=1e-12)
    # 4 nodes: 2 (4 - 1) / 4 = 1.5 x 1e9 over the network, 6 steps x 5 us
    assert interconnect.allreduce_s(1e9, 8, 4, h100) == pytest.approx(1.75 / 315 + 14 * 2e-6 + 1.5 / 340 + 30e-6, rel=1e-12)
    # 4 cards with NVLink bridges (pairs) run the ring over PCIe Gen5: 128 GB/s -> 64 x 0.45 = 28.8 GB/s
    assert interconnect.allreduce_s(1e9, 4, 1, interconnect.link("h100-pcie")) == pytest.approx(1.5 / 28.8 + 6 * 2e-6, rel=1e-12)
    assert interconnect.allreduce_s(1e9, 1, 1, h100) == 0.0


def test_ddp_buckets_overlap_backward_worked_by_hand():
    # 2 cards over PCIe of 20 GB/s both ways: bus = 10 GB/s x 0.45 = 4.5e9 B/s; per bucket
    # t = 2 (2 - 1) / 2 x bytes / 4.5e9 + 2 x 2 us. Gradients 51 MiB: buckets of 1, 25, 25 MiB,
    # ready at 10 ms x 1/51, x 26/51 and at 10 ms (the end of backward)
    card = interconnect.Link(None, None, 0, "PCIe", 20, None, "test")
    c1 = 1048576 / 4.5e9 + 4e-6          # 0.000237017 s
    c25 = 26214400 / 4.5e9 + 4e-6        # 0.005829422 s
    f1 = 0.01 / 51 + c1                   # 0.000433095
    f2 = max(f1, 0.01 * 26 / 51) + c25    # 0.010927461: the second bucket ends after backward
    f3 = max(f2, 0.01) + c25              # 0.016756883
    step = interconnect.data_parallel_step(0.05, 0.01, 51 * 2**20, 2, 1, card)
    assert interconnect.buckets(51 * 2**20) == [2**20, 25 * 2**20, 25 * 2**20]
    assert step.allreduce_s == pytest.approx(c1 + 2 * c25, rel=1e-12)
    assert step.exposed_s == pytest.approx(f3 - 0.01, rel=1e-12) == pytest.approx(0.006756883, rel=1e-6)
    assert step.step_s == pytest.approx(0.05 + 0.006756883, rel=1e-6)
    # a long backward hides all but the last bucket
    assert interconnect.data_parallel_step(0.5, 0.4, 51 * 2**20, 2, 1, card).exposed_s == pytest.approx(c25, rel=1e-12)


@pytest.mark.slow
def test_choose_states_the_per_gpu_and_global_batch_and_adds_the_exposed_all_reduce():
    one, eight = (choose("vit-b/16", device="a100", precision="bf16", batch_size=64, gpus=g, epochs=1,
                         dataset_size=100_000)[0] for g in (1, 8))
    assert (eight["batch_size"], eight["global_batch_size"], eight["gpus"]) == (64, 512, 8)
    assert eight["pred_step_one_gpu_s"] == one["pred_latency_s"]
    assert eight["gradient_bytes"] == 86_567_656 * 4          # ViT-B/16's parameters, fp32 gradients
    assert eight["pred_latency_s"] == pytest.approx(one["pred_latency_s"] + eight["pred_allreduce_exposed_s"], rel=1e-12)
    assert eight["pred_allreduce_exposed_s"] > 0
    assert eight["pred_throughput_img_s"] == pytest.approx(512 / eight["pred_latency_s"], rel=1e-12)
    assert eight["pred_steps_per_epoch"] == 196 and one["pred_steps_per_epoch"] == 1563   # ceil(100000 / 512), / 64


# --- the verdict -------------------------------------------------------------------------------

def _row(device, hours, median, cost=None):
    return {"device": device, "fits": True, "pred_train_hours": hours, "pred_cost": cost, "pred_error_median": median,
            "pred_throughput_img_s": 1.0}


def test_two_cards_within_each_others_error_band_are_a_tie():
    # 100 h x (1 + 0.10) = 110 >= 115 h x (1 - 0.10) = 103.5: the bands overlap
    said = verdict([_row("h100", 100.0, 0.10), _row("a100", 115.0, 0.10)])
    assert said == ("On time for the run, the h100 and the a100 are a tie: 100.0 h and 115.0 h lie within each "
                    "other's error band (median error 10% and 10%).")


def test_a_winner_beyond_the_bands_is_named_with_its_margin():
    # 100 x 1.10 = 110 < 130 x 0.90 = 117: not a tie; 130 / 100 = 1.30x
    said = verdict([_row("a100", 130.0, 0.10), _row("h100", 100.0, 0.10)])
    assert said == ("On time for the run, the h100 wins: 100.0 h against 130.0 h on the a100, 1.30x faster, beyond both "
                    "predictions' error bands (median error 10% and 10%).")
    by_cost = verdict([_row("h100", 1.0, 0.05, cost=300.0), _row("l4", 9.0, 0.05, cost=100.0)], "cost")
    assert by_cost.startswith("On cost of the run, the l4 wins: 100.00 against 300.00 on the h100, 3.00x cheaper")


def test_no_card_that_fits_says_why():
    said = verdict([{"device": "l4", "fits": False, "note": "does not fit: batch 4096 needs 300 GiB"}])
    assert said == "No card can answer: l4: does not fit: batch 4096 needs 300 GiB."


# --- prices ------------------------------------------------------------------------------------

def test_prices_per_device_from_text_a_mapping_and_the_example_file():
    assert device_prices("h100=2.5,A100-SXM=1.3", ["h100", "a100", "l4"]) == {"h100": 2.5, "a100": 1.3}
    assert device_prices(2.0, ["h100", "l4"]) == {"h100": 2.0, "l4": 2.0}
    assert device_prices(None, ["h100"]) == {}
    example = ROOT / "docs" / "prices.example.toml"
    assert load_price_file(example) == {"a100": 1.10, "h100": 2.50, "h200": 3.50, "l4": 0.60}
    # the file prices more cards than asked; the command line overrides it per card
    assert device_prices("h100=2.9", ["h100", "a100"], example) == {"h100": 2.9, "a100": 1.10}


def test_predict_costs_each_device_at_its_own_price():
    rows = vitbench.predict("mnist-vit", device="h100,a100", batch_size=32, mode="train", epochs=2, dataset_size=1000,
                            price_per_hour="h100=4,a100=2")
    for row, price in zip(rows, (4.0, 2.0)):
        assert row["pred_cost"] == pytest.approx(row["pred_train_hours"] * price, rel=1e-12)


@pytest.mark.parametrize(("price", "message"), [
    ("h100=1,zz=2", "price='zz': unknown device"),
    ("h100=1,h200=2", "price='h200': is priced but not asked for"),
    ("h100=-3", r"price\[h100\]=-3.0: must be a positive number"),
    ("h100=abc", r"price\[h100\]='abc': must be a positive number"),
    ({"h100": float("nan")}, r"price\[h100\]=nan: must be a positive number"),
])
def test_bad_prices_are_one_line_naming_field_and_value(price, message):
    with pytest.raises(SpecError, match=message):
        choose(MODEL, device="h100,l4", price=price)


@pytest.mark.parametrize(("arguments", "message"), [
    ({"gpus": 0}, "gpus=0: must be a whole number from 1 to 16"),
    ({"nodes": 0}, "nodes=0: must be a whole number from 1"),
    ({"gpus": True}, "gpus=True"),
    ({"device": "h100,cpu"}, "device='cpu': choose compares GPUs"),
    ({"sort": "speed"}, "sort='speed': must be one of time, cost"),
])
def test_bad_counts_and_cards_are_refused(arguments, message):
    with pytest.raises(SpecError, match=message):
        choose(MODEL, **{"device": "h100", **arguments})


def test_a_price_file_that_is_not_one_is_refused(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text("[prices]\nh100 = 'cheap'\n")
    with pytest.raises(SpecError, match=r"prices\[h100\]='cheap'"):
        load_price_file(bad)
    bad.write_text("h100 = 2\n")
    with pytest.raises(InputFileError, match="needs a \\[prices\\] table"):
        load_price_file(bad)


@pytest.mark.parametrize("argv", [
    ["choose", MODEL, "--device", "h100,l4", "--gpus", "0"],
    ["choose", MODEL, "--device", "h100,l4", "--price", "h100=2,a100=1"],
    ["predict", MODEL, "--device", "h100", "--epochs", "1", "--dataset-size", "9", "--price-per-hour", "h100=-1"],
])
def test_the_command_line_refuses_in_one_line_with_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vitbench: error:")


# --- the answer first, and the worked example ----------------------------------------------------

@pytest.mark.slow
def test_the_answer_comes_first_then_how_then_the_identity():
    row = choose(MODEL, device="h100", precision="bf16", batch_size=64, epochs=1, dataset_size=1000, price=2.0)[0]
    keys = list(row)
    assert keys[:10] == ["device", "fits", "batch_size", "pred_latency_s", "pred_throughput_img_s", "pred_train_hours",
                         "pred_cost", "pred_error_median", "pred_error_p90", "note"]
    assert keys.index("pred_linear_s") > keys.index("interconnect") and keys.index("model") > keys.index("pred_linear_s")


#: how far a number of the worked example may move between the torch releases CI runs (each
#: traces a step a little differently: 2.14 and 2.15 differ by up to 3% in a step's time)
EXAMPLE_TOLERANCE = 0.05


def _words_and_numbers(text: str) -> tuple[list[str], list[float]]:
    """The text with every number taken out (in order) and its table's padding made one width,
    and the numbers."""
    number = r"\d+(?:\.\d+)?"
    numbers = [float(n) for n in re.findall(number, text)]
    return re.split(number, re.sub(r"-{3,}", "---", re.sub(r"\s+", " ", text))), numbers


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_the_worked_example_in_docs_choosing_md_is_what_the_command_prints(capsys):
    """The page's table and sentence are what the command prints: every word the same (cards,
    fits, units, the winner), every number within EXAMPLE_TOLERANCE (the torch release traced)."""
    page = (ROOT / "docs" / "choosing.md").read_text(encoding="utf-8")
    command = re.search(r"```bash\n(vitbench choose .*?)\n```", page, re.S).group(1).replace("\\\n", " ")
    shown = re.search(r"<!-- choose: worked example -->\n```text\n(.*?)```", page, re.S).group(1)
    assert main(command.split()[1:]) == 0
    printed = capsys.readouterr().out
    stale = ("docs/choosing.md's worked example is stale (the cost model changed?): paste what "
             f"`{' '.join(command.split())}` prints now:\n{printed}")
    words, numbers = _words_and_numbers(printed)
    shown_words, shown_numbers = _words_and_numbers(shown)
    assert [w.strip() for w in words] == [w.strip() for w in shown_words], stale
    assert all(abs(a - b) <= EXAMPLE_TOLERANCE * max(abs(a), abs(b)) for a, b in zip(numbers, shown_numbers)), stale


# --- the parts of a row, by hand ------------------------------------------------------------------

def test_a_batch_whose_peak_is_exactly_the_budget_fits():
    from vitbench.timemodel.choose import RESERVE_BYTES, _fit

    budget = 80 * 10**9 - RESERVE_BYTES  # an H100's 80 GB (NVIDIA's datasheet) less the reserve
    row = {}
    assert _fit("h100", 64, (lambda b: 128, lambda batch: budget, "replayed"), row) == 64
    assert row["fits"] is True and row["pred_peak_memory_bytes"] == budget and row["memory_budget_bytes"] == budget
    row = {}
    assert _fit("h100", 64, (lambda b: 32, lambda batch: budget + 1, "replayed"), row) is None
    assert row["fits"] is False and row["note"].startswith("does not fit: batch 64 needs")


def test_without_a_memory_model_a_given_batch_is_priced_and_says_its_fit_was_not_checked():
    from vitbench.timemodel.choose import _fit

    row = {}
    assert _fit("l4", 8, (None, None, "memory not predicted: no formula"), row) == 8
    assert row["fits"] is None and row["note"] == "fit not checked: memory not predicted: no formula"
    row = {}
    assert _fit("l4", None, (None, None, "memory not predicted: no formula"), row) is None
    assert row["note"] == "memory not predicted: no formula; give --batch-size to price it anyway"


def test_backward_is_its_share_of_the_steps_macs_or_two_thirds():
    from vitbench.timemodel.choose import _backward_s

    step = {"pred_latency_s": 1.0, "pred_optimizer_s": 0.1}
    # 400 MACs a step, 100 of them forward: backward 3/4 of the 0.9 s without the optimizer
    assert _backward_s({**step, "pred_macs": 400, "macs": 100}) == pytest.approx(0.675)
    assert _backward_s({**step, "pred_macs": 400, "macs": 0}) == pytest.approx(0.6)  # no forward count: 2/3
    assert _backward_s({**step, "pred_macs": 400, "macs": 400}) == pytest.approx(0.6)
    assert _backward_s({**step, "pred_macs": None, "macs": 100}) == pytest.approx(0.6)


def test_a_training_rows_hours_and_cost_follow_from_its_step():
    """8 cards of 64 images at 0.5 s a step, 512,000 images an epoch: 1,000 steps, 500 s an epoch;
    36 epochs = 18,000 s = 5 hours; at 2 an hour a card, 80."""
    from vitbench.timemodel.choose import _priced
    from vitbench.timemodel.predict_settings import ChooseSettings

    settings = ChooseSettings(device="h100", mode="train", epochs=36, dataset_size=512_000, gpus=8)
    row = {"device": "h100", "batch_size": 64, "price_per_hour": 2.0}
    prediction = {"pred_latency_s": 0.5, "pred_optimizer_s": 0.0, "pred_macs": 300, "macs": 100, "params": 0}
    _priced(row, prediction, settings)
    assert row["pred_backward_s"] == pytest.approx(1 / 3) and row["gradient_bytes"] == 0
    assert row["pred_allreduce_s"] == 0 and row["pred_allreduce_exposed_s"] == 0  # no parameters: nothing to reduce
    assert row["pred_latency_s"] == 0.5 and row["global_batch_size"] == 512 and row["pred_steps_per_epoch"] == 1_000
    assert row["pred_epoch_s"] == 500 and row["pred_train_hours"] == pytest.approx(5.0)
    assert row["pred_cost"] == pytest.approx(80.0)


def test_sorting_by_cost_without_a_price_for_every_card_is_refused():
    with pytest.raises(SpecError, match="price.*sorting by cost needs a price for every card; none for l4"):
        vitbench.choose("vit-ti/16", device="h100,l4", price="h100=2.5", sort="cost", mode="infer", batch_size=8,
                        epochs=1, dataset_size=1000)


def test_the_terminal_table_keeps_the_note_last():
    from vitbench.timemodel.choose import ANSWER_COLUMNS, TABLE_COLUMNS

    assert TABLE_COLUMNS[-1] == "note" and TABLE_COLUMNS.count("note") == 1
    assert TABLE_COLUMNS[:len(ANSWER_COLUMNS) - 1] == ANSWER_COLUMNS[:-1]


@pytest.mark.parametrize("price, field, message", [
    ("h100=2.5,=1.3", "price_per_hour", "each entry must be DEVICE=PRICE"),
    ("h100=2.5,a100", "price_per_hour", "each entry must be DEVICE=PRICE"),
    ("h100=2.5,H100-SXM=3", "price_per_hour", "is priced twice"),   # an alias of the same card
    ({"h100": 2.5, "h100-sxm": 3.0}, "price_per_hour", "is priced twice"),
    ("h100=0", "price_per_hour[h100]", "must be a positive number"),
    ("h100=1000000001", "price_per_hour[h100]", "must be at most 1,000,000,000"),
])
def test_a_price_list_is_refused_naming_the_entry(price, field, message):
    from vitbench.timemodel.prices import device_prices

    with pytest.raises(SpecError, match=message) as caught:
        device_prices(price, ["h100", "a100"])
    assert caught.value.field == field


def test_a_price_file_pricing_a_card_twice_or_too_large_is_refused(tmp_path):
    from vitbench.timemodel.prices import device_prices

    twice = tmp_path / "twice.toml"
    twice.write_text("[prices]\nh100 = 2.5\nh100-sxm = 3.0\n")
    with pytest.raises(SpecError, match="h100 is priced twice in the file"):
        device_prices(None, ["h100"], twice)
    large = tmp_path / "large.toml"
    large.write_text("[prices]\nh100 = 2.5\n" + "# padding\n" * 7000)  # over 64 KiB
    with pytest.raises(InputFileError):
        device_prices(None, ["h100"], large)
    small = tmp_path / "small.toml"
    small.write_text("[prices]\na100 = 1.3\nh100 = 2.5\n" + "# padding\n" * 6450)  # 64,531 bytes: just under 64 KiB
    # the cards may come as any iterable, a generator too (read once)
    assert device_prices(None, (d for d in ("h100", "a100")), small) == {"a100": 1.3, "h100": 2.5}


@pytest.mark.parametrize("changes, field", [
    (dict(epochs=10), "dataset_size"), (dict(dataset_size=1000), "epochs"),
    (dict(epochs=0, dataset_size=1000), "epochs"), (dict(epochs=-1, dataset_size=1000), "epochs"),
    (dict(sort="cost", price=2.0), "sort"), (dict(trace_cache="yes"), "trace_cache"),
    (dict(network_gbit_s=0), "network_gbit_s"), (dict(network_gbit_s=True), "network_gbit_s"),
    (dict(network_gbit_s=1e6), "network_gbit_s"),
])
def test_choose_settings_refuse_naming_the_field(changes, field):
    from vitbench.timemodel.predict_settings import ChooseSettings

    with pytest.raises(SpecError) as caught:
        ChooseSettings(device="h100", **changes)
    assert caught.value.field == field


def test_choose_prices_one_card_on_one_node_unless_told():
    from vitbench.timemodel.predict_settings import ChooseSettings

    asked = ChooseSettings(device="h100,l4")
    assert (asked.device, asked.gpus, asked.nodes, asked.mode, asked.sort) == (("h100", "l4"), 1, 1, "train", "time")



@pytest.mark.slow  # a timm model built, counted and priced: about 10 s
def test_a_model_whose_memory_cannot_be_traced_says_so_with_its_batch_one_figures(monkeypatch):
    """No formula and a trace that fails: the row says why, asks for a batch, and names the
    model's figures at batch 1 (MACs as FlopCounterMode counts them: FLOPs / 2)."""
    import timm
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from vitbench.errors import ModelError
    from vitbench.timemodel import choose as module

    def fails(*args, **kwargs):
        raise ModelError("the forward made a CPU tensor\nand more")

    monkeypatch.setattr(module, "cached_memory_profile", fails)
    [row] = choose("timm:convnext_atto", device="h100", precision="bf16")
    assert row["note"] == ("memory not predicted: tracing it failed: the forward made a CPU tensor; give --batch-size "
                           "to price it anyway")
    assert row["batch_size"] is None and row["fits"] is None and row["pred_latency_s"] is None
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        timm.create_model("convnext_atto").eval()(torch.zeros(1, 3, 224, 224))
    assert row["macs"] == counter.get_total_flops() // 2


def test_a_card_whose_prediction_failed_says_why_and_is_not_priced():
    from vitbench.models.references import resolve
    from vitbench.timemodel.choose import _row
    from vitbench.timemodel.predict_settings import ChooseSettings

    settings = ChooseSettings(device="h100")
    row = _row(resolve("vit-ti/16"), {"device": "h100"}, 8, {"status": "error", "error": "the step failed"}, settings)
    assert row["note"] == "error: the step failed" and row["batch_size"] == 8
    assert row.get("pred_latency_s") is None and row.get("pred_train_hours") is None


@pytest.mark.slow  # a model traced and priced on a card: about 10 s on its own
def test_a_rows_own_warnings_are_kept_beside_the_question_caches_refusals(monkeypatch):
    """A refused question-cache entry is said on every row, before what each row's prediction
    warned of itself."""
    from vitbench.timemodel import choose as module

    real_resolve, real_predict = module.resolve_cached, module.predict
    refusal = {"code": "question-cache-refused", "message": "entry refused", "advice": "nothing to do"}
    own = {"code": "gpu-unpriced-kernels", "message": "tiny products", "advice": "measure it"}

    def resolve(*args, **kwargs):
        targets, _ = real_resolve(*args, **kwargs)
        return targets, {id(targets[0]): [refusal]}

    def predict(*args, **kwargs):
        return [{**row, "warnings": [own]} for row in real_predict(*args, **kwargs)]

    monkeypatch.setattr(module, "resolve_cached", resolve)
    monkeypatch.setattr(module, "predict", predict)
    [row] = choose("vit-ti/16", device="h100", precision="bf16", batch_size=8)
    assert row["warnings"] == [refusal, own]
