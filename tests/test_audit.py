"""`vitbench audit`: the claims catalogue, the verdicts, the CLI and the committed report.

Pinned values are worked out by hand in the comments (ViT notation: n tokens, N patches, d width,
m MLP width, L depth, K classes; a MAC is one multiply-accumulate, FLOPs = 2 MACs), or taken from
torchvision's own module, never from vitbench's output.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vitbench import claims as audit_module
from vitbench.claims import (
    CATALOGUE,
    VERDICTS,
    CatalogueError,
    audit,
    load_catalogue,
    parse_stated,
    render_markdown,
)
from vitbench.cli import main

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "reports" / "claims.md"
SEEDS = REPO.parent / "shared" / "seeds"


@pytest.fixture(scope="module")
def analytic():
    """The whole catalogue, analytic only (fast), by id."""
    return {r["id"]: r for r in audit(counted=False)}


@pytest.fixture(scope="module")
def full():
    """The whole catalogue as the committed report is generated: with counted values."""
    return audit()


# --- every claim gets a verdict ------------------------------------------------------------------
def test_every_claim_gets_a_verdict(analytic):
    claims = load_catalogue()
    assert len(claims) >= 40
    assert [c.id for c in claims] == list(analytic)  # none missing, none duplicated, same order
    for record in analytic.values():
        assert record["verdict"] in VERDICTS and record["verdict"] != "error", record
        explanation = record["explanation"]
        assert explanation.startswith(record["stated_text"]) and explanation.endswith(".")
        assert "\n" not in explanation
        if record["verdict"] in ("holds", "off", "wrong convention"):
            assert isinstance(record["recomputed"], (int, float))
        if record["verdict"] == "wrong convention":
            assert record["matched"]


def test_catalogue_covers_each_document_and_the_listed_claims(analytic):
    prefixes = {record["file"][:3] for record in analytic.values()}
    assert prefixes == {"000", "001", "002", "003", "004"}
    # The list: notebook table, chapter ViT-B breakdown, attention at 224/384, the FLOPs
    # table at 224/384/512, Swin, ViT-Tiny and the small ResNet, 8-10 GB, tutorial table, slides, MNIST.
    for claim_id in (
        "nb-table-params-p4", "nb-table-tokens-p8", "nb-table-attn-p16", "ch-vitb-block-params",
        "ch-attn-flops-224-layer", "ch-attn-mem-384-layer", "ch-table-vitb-flops-512",
        "ch-swin-reduction-64x", "ch-ex4-vit-tiny-params", "ch-ex4-resnet-small-params",
        "ch-train-mem-224", "tu-vit-h32-params", "sl-cnn-params", "as-params-106k",
    ):
        assert claim_id in analytic


# --- pinned verdicts, recomputed values worked out by hand -----------------------------------------
def _vitb16_macs() -> int:
    # ViT-B/16 at 224: N = 196, n = 197, d = 768, m = 3072, L = 12, K = 1000. Per layer:
    #   qkv 3 n d^2 = 3 * 197 * 589,824          = 348,585,984
    #   QK^T + AV 2 n^2 d = 2 * 38,809 * 768     =  59,610,624
    #   output projection n d^2 = 197 * 589,824   = 116,195,328
    #   MLP 2 n d m = 2 * 197 * 768 * 3072        = 929,562,624
    #   layer total                               = 1,453,954,560;  x 12 = 17,447,454,720
    # patch projection N d (3 * 16^2) = 196 * 768 * 768 = 115,605,504; head d K = 768,000
    return 17_447_454_720 + 115_605_504 + 768_000  # = 17,563,828,224


def test_vitb_total_flops_is_a_mac_count(analytic):
    r = analytic["ch-ex2-vitb-flops"]  # "Total ViT-Base: ~17.5 GFLOPs"
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == 2 * _vitb16_macs() == 35_127_656_448
    assert "MACs" in r["matched"]


def test_vitb_flops_table_at_224_is_off(analytic):
    r = analytic["ch-table-vitb-flops-224"]  # "4.2 GFLOPs"
    assert r["verdict"] == "off"
    assert r["recomputed"] == 2 * _vitb16_macs()
    assert r["off_pct"] == pytest.approx(100 * (4.2e9 - 35_127_656_448) / 35_127_656_448)  # -88%
    assert r["verdict_text"] == "off by -88%"


def test_resnet50_flops_is_a_mac_count(analytic):
    import torch
    import torchvision
    from torch.utils.flop_counter import FlopCounterMode

    # torch's own counter on torchvision's ResNet-50 (it counts 2 FLOPs per multiply-accumulate).
    with torch.device("meta"):
        model = torchvision.models.resnet50()
        counter = FlopCounterMode(display=False)
        with counter:
            model(torch.empty(1, 3, 224, 224))
    r = analytic["ch-r50-flops-224"]  # "approximately 4.1 GFLOPs"
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == counter.get_total_flops()
    assert 4.05e9 < counter.get_total_flops() / 2 < 4.15e9  # the MACs are what the chapter wrote


def test_resnet50_exact_count_leaves_out_the_fc_bias(analytic):
    import torch
    import torchvision

    with torch.device("meta"):
        numel = sum(p.numel() for p in torchvision.models.resnet50().parameters())
    r = analytic["ch-ex2-r50-params"]  # "25,556,032"
    assert r["verdict"] == "off"
    assert r["recomputed"] == numel == 25_556_032 + 1000  # the classifier's 1000 biases
    assert "classifier bias (1,000)" in r["explanation"]


def test_notebook_attention_column_is_attention_block_macs(analytic):
    # patch 4: n = 65, d = 512: projections 4 n d^2 = 4 * 65 * 262,144 = 68,157,440, QK^T + AV
    # 2 n^2 d = 2 * 4,225 * 512 = 4,326,400; 72,483,840 MACs ("72.4 M"), i.e. 144,967,680 FLOPs.
    r = analytic["nb-table-attn-p4"]
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == 2 * (68_157_440 + 4_326_400) == 144_967_680
    # patch 16: n = 5: 4 * 5 * 262,144 + 2 * 25 * 512 = 5,242,880 + 25,600 = 5,268,480 MACs ("5.2 M").
    r = analytic["nb-table-attn-p16"]
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == 2 * 5_268_480


def test_notebook_param_total_is_truncated(analytic):
    # CIFAR ViT, patch 4: patch 512*48 + 512 = 25,088; CLS 512; positions 65*512 = 33,280;
    # block: LayerNorms 4*512 = 2,048, qkv 3*512^2 + 3*512 = 787,968, proj 512^2 + 512 = 262,656,
    # fc1 512*2048 + 2048 = 1,050,624, fc2 2048*512 + 512 = 1,049,088 -> 3,152,384, x6 = 18,914,304;
    # final LayerNorm 1,024 + head 512*2 + 2 = 1,026.  Total 18,975,234: rounds to 19.0 M, not 18.9 M.
    r = analytic["nb-table-params-p4"]
    assert r["verdict"] == "off"
    assert r["recomputed"] == 25_088 + 512 + 33_280 + 18_914_304 + 1_024 + 1_026 == 18_975_234
    assert r["off_pct"] == pytest.approx(100 * (18.9e6 - 18_975_234) / 18_975_234)
    assert "truncated" in r["explanation"]


def test_chapter_vit_tiny_has_half_the_stated_parameters(analytic):
    # d = 192, m = 768, N = 64, n = 65, L = 6, K = 10: patch 192*48 + 192 = 9,408; CLS 192;
    # positions 65*192 = 12,480; block 768 + (110,592 + 576) + (36,864 + 192) + (147,456 + 768)
    # + (147,456 + 192) = 444,864, x6 = 2,669,184; final LayerNorm 384 + head 1,920 + 10.
    r = analytic["ch-ex4-vit-tiny-params"]  # "~5.7M"
    assert r["recomputed"] == 9_408 + 192 + 12_480 + 2_669_184 + 384 + 1_930 == 2_693_578
    assert r["verdict"] == "off"
    assert r["verdict_text"] == "off by +112%"  # (5.7e6 - 2,693,578) / 2,693,578 = +111.6%


def test_attention_memory_per_layer_holds_and_the_b32_total_is_rounded_early(analytic):
    # h n^2 x 4 bytes = 12 * 197^2 * 4 = 12 * 38,809 * 4 = 1,862,832 bytes = 1.86 MB.
    r = analytic["ch-attn-mem-224-layer"]
    assert (r["verdict"], r["recomputed"]) == ("holds", 1_862_832)
    # x 12 layers x batch 32 = 715,327,488 bytes = 715.3 MB; "approximately 714 MB" is 1.86 x 384.
    r = analytic["ch-attn-mem-224-all-b32"]
    assert (r["verdict"], r["recomputed"]) == ("off", 1_862_832 * 12 * 32)
    assert "1.86e6 x 12 x 32 = 714.2 MB" in r["explanation"]


def test_ffn_activation_formula_evaluates_to_a_tenth(analytic):
    # The chapter's own formula 32 x 197 x 768 x 4 x 12 = 232,390,656 bytes (0.23 GB), not 2.3 GB.
    r = analytic["ch-ffn-activations-224"]
    assert (r["verdict"], r["recomputed"]) == ("off", 32 * 197 * 768 * 4 * 12)
    assert r["recomputed"] == 232_390_656


def test_swin_comparison(analytic):
    # Stage 1 at 224: n = 56^2 = 3,136 tokens, C = 128, M = 7.
    # global: 4 n C^2 + 2 n^2 C = 205,520,896 + 2,517,630,976 = 2,723,151,872 MACs
    # window: 4 n C^2 + 2 M^2 n C = 205,520,896 + 39,337,984 = 244,858,880 MACs
    r = analytic["ch-swin-global-flops"]  # "1.26 GFLOPs" = n^2 C = 1,258,815,488: QK^T MACs alone
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == 2 * 2_723_151_872
    assert r["matched"].startswith("QK^T alone")
    r = analytic["ch-swin-reduction-4000x"]  # 3136^2 / 49^2 = 4,096: one window against the image
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == pytest.approx(2_723_151_872 / 244_858_880)  # 11.12x
    assert "single 7 x 7 window" in r["matched"]
    r = analytic["ch-swin-reduction-64x"]  # 64x = n / M^2 holds for the n^2 matmuls alone
    assert r["verdict"] == "wrong convention"


def test_attention_flops_drop_the_projections(analytic):
    # "4 n^2 d = 4 x 197^2 x 768 = 119 MFLOPs": QK^T and AV in FLOPs (119,221,248); the layer also has
    # the projections 8 n d^2 FLOPs = 8 * 197 * 589,824 = 929,562,624: 1,048,783,872 FLOPs in all.
    r = analytic["ch-attn-flops-224-layer"]
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == 4 * 197**2 * 768 + 8 * 197 * 768**2 == 1_048_783_872
    # ViT-B/32: n = 50; "7.4 MFLOPs" = 4 * 49^2 * 768 = 7,375,872 drops the CLS token as well.
    r = analytic["ch-attn-flops-224-p32"]
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == 4 * 50**2 * 768 + 8 * 50 * 768**2
    assert "without the CLS token" in r["matched"]


def test_large_resolution_and_token_claims(analytic):
    # 512 px: n = 32^2 + 1 = 1,025; 12 layers x 12 heads x 1,025^2 x 4 bytes = 605,160,000 > 600 MB.
    r = analytic["ch-512-attn-memory"]
    assert (r["verdict"], r["recomputed"]) == ("holds", 144 * 1025**2 * 4)
    r = analytic["ch-512-sequence-length"]  # "1,024 tokens" counts the patches only
    assert (r["verdict"], r["recomputed"]) == ("wrong convention", 1025)


def test_slides_model_size_holds(analytic):
    # slides ViT, d = 256, m = 512, linear patch embedding: 48*256 + 256 = 12,544; CLS 256;
    # positions 65*256 = 16,640; block 1,024 + 197,376 + 65,792 + 131,584 + 131,328 = 527,104, x6
    # = 3,162,624; final LayerNorm 512 + head 2,570. 3,195,146 x 4 bytes = 12,780,584 B = 12.781 MB.
    r = analytic["sl-vit-size-mb"]
    assert (r["verdict"], r["recomputed"]) == ("holds", 4 * (12_544 + 256 + 16_640 + 3_162_624 + 512 + 2_570))


def test_tutorial_base_count_is_the_encoder_alone(analytic):
    # ViT-B block: 3,072 + 1,771,776 + 590,592 + 2,362,368 + 2,360,064 = 7,087,872; x12 = 85,054,464
    # ("85M"); with patch 590,592, CLS 768, positions 151,296, final LayerNorm 1,536, head 769,000:
    # 86,567,656.
    r = analytic["tu-vit-b16-params"]
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == 85_054_464 + 590_592 + 768 + 151_296 + 1_536 + 769_000
    assert "encoder blocks alone" in r["matched"]


def test_mae_speedup_is_the_quadratic_term_only(analytic):
    # MAE's encoder sees 49 patches + CLS = 50 tokens (ViT-B/16 at 112 px). Per layer:
    # 3*50*589,824 + 50*589,824 + 2*2,500*768 + 2*50*768*3072 = 357,734,400; x12 = 4,292,812,800;
    # + patches 49*589,824 = 28,901,376 + head 768,000 = 4,322,482,176 MACs. 15.5x = (197/50)^2.
    r = analytic["ch-ex3-mae-speedup"]
    assert r["verdict"] == "wrong convention"
    assert r["recomputed"] == pytest.approx(_vitb16_macs() / 4_322_482_176)


def test_parameter_breakdown_names_what_it_leaves_out(analytic):
    # 86,567,656 - 86,527,000 ~ 40,936 = patch bias 768 + CLS 768 + 12 x LayerNorms 3,072
    # + final LayerNorm 1,536 + classifier bias 1,000.
    r = analytic["ch-vitb-params-breakdown-total"]
    assert r["verdict"] == "off"
    assert "(40,936)" in r["explanation"] and 768 + 768 + 12 * 3072 + 1536 + 1000 == 40_936


def test_holding_claims_hold(analytic):
    for claim_id, value in (
        ("nb-params-p16", 19_313_154),
        ("ch-ex4-resnet-small-params", None),
        ("as-params-106k", None),
        ("ch-vitb-pos-embed-params", 197 * 768),
        ("ch-swin-window-scores", 49**2),
    ):
        r = analytic[claim_id]
        assert r["verdict"] == "holds", r
        if value is not None:
            assert r["recomputed"] == value


# --- the stated-figure parser and tolerance rule ----------------------------------------------------
@pytest.mark.parametrize(
    "text, low, high, resolution, bound",
    [
        ("86M", 86e6, 86e6, 1e6, None),
        ("86 million", 86e6, 86e6, 1e6, None),
        ("1.86 MB", 1.86e6, 1.86e6, 1e4, None),
        ("16.0 MB", 16e6, 16e6, 1e5, None),
        ("17.5 GFLOPs", 17.5e9, 17.5e9, 1e8, None),
        ("86,527,000", 86_527_000, 86_527_000, 1000, None),
        ("4,000×", 4000, 4000, 1000, None),
        ("8-10 GB", 8e9, 10e9, 1e9, None),
        ("over 600 MB", 600e6, 600e6, 1e6, ">"),
        ("12.781 MB", 12_781_000, 12_781_000, 1000, None),
    ],
)
def test_parse_stated(text, low, high, resolution, bound):
    stated = parse_stated(text)
    assert (stated.low, stated.high, stated.bound) == (pytest.approx(low), pytest.approx(high), bound)
    assert stated.resolution == pytest.approx(resolution)


def test_parse_stated_rejects_unknown_units():
    with pytest.raises(ValueError, match="unknown unit"):
        parse_stated("12 furlongs")


# --- catalogue schema --------------------------------------------------------------------------------
GOOD = """\
- id: x-params
  source: 000_x.txt:1
  quote: "3.2 M"
  model: slides-vit
  quantity: params
  convention: count
  stated: {text: "3.2 M", value: 3200000}
"""


def _catalogue(tmp_path, body: str) -> Path:
    path = tmp_path / "claims.yaml"
    path.write_text("version: 1\nclaims:\n" + body, encoding="utf-8")
    return path


def test_a_minimal_catalogue_audits(tmp_path):
    records = audit(catalogue=_catalogue(tmp_path, GOOD), counted=False)
    assert [(r["id"], r["verdict"], r["recomputed"]) for r in records] == [("x-params", "holds", 3_195_146)]


@pytest.mark.parametrize(
    "change, message",
    [
        (("quantity: params", "quantity: parameters"), r"claim 'x-params': quantity='parameters': unknown quantity"),
        (("value: 3200000", "value: 3100000"), r"stated.value=3100000: does not match the text"),
        (("model: slides-vit", "model: slides-vitt"), r"model='slides-vitt'.*did you mean 'slides-vit'"),
        (("convention: count", "convention: flops"), r"convention='flops': must be one of count"),
        (('  quote: "3.2 M"\n', ""), r"quote=None: is required"),
        (("source: 000_x.txt:1", "source: somewhere"), r"source='somewhere': must be '<file>.txt:<line>'"),
        (("id: x-params", "id: X Params"), r"id='X Params': must be a lowercase identifier"),
        (("quantity: params", "quantity: params\n  colour: red"), r"colour='red': unknown field"),
    ],
)
def test_malformed_claims_are_named(tmp_path, change, message):
    path = _catalogue(tmp_path, GOOD.replace(*change))
    with pytest.raises(CatalogueError, match=message):
        load_catalogue(path)


def test_duplicate_ids_and_unit_mismatch(tmp_path):
    with pytest.raises(CatalogueError, match="appears twice"):
        load_catalogue(_catalogue(tmp_path, GOOD + GOOD))
    flops_as_macs = GOOD.replace("quantity: params", "quantity: macs").replace(
        "convention: count", "convention: macs").replace('"3.2 M", value: 3200000', '"0.2 GFLOPs", value: 200000000')
    with pytest.raises(CatalogueError, match="disagrees with the unit"):
        load_catalogue(_catalogue(tmp_path, flops_as_macs))


def test_shipped_catalogue_quotes_are_on_their_lines():
    if not SEEDS.is_dir():
        pytest.skip(f"source documents not found at {SEEDS}")
    norm = lambda text: re.sub(r"\s+", " ", text).strip()  # noqa: E731
    for claim in load_catalogue():
        lines = (SEEDS / claim.file).read_text(encoding="utf-8").splitlines()
        assert norm(claim.quote) in norm(lines[claim.line - 1]), claim.id


# --- robustness: measured claims and failures ------------------------------------------------------
def test_throughput_claims_need_a_gpu_and_compare_only_on_the_named_device(monkeypatch):
    [record] = audit(["ch-a100-vitb-throughput"], counted=False)
    assert record["verdict"] == "needs a GPU"
    monkeypatch.setattr(audit_module, "_measure_throughput", lambda spec, batch: (1150.0, "NVIDIA A100-SXM4-80GB"))
    [record] = audit(["ch-a100-vitb-throughput"], counted=False, measure=True)
    assert (record["verdict"], record["recomputed"]) == ("holds", 1150.0)  # 1,200 +- 5% (catalogue tolerance)
    monkeypatch.setattr(audit_module, "_measure_throughput", lambda spec, batch: (2900.0, "NVIDIA H100 80GB HBM3"))
    [record] = audit(["ch-a100-vitb-throughput"], counted=False, measure=True)
    assert record["verdict"] == "not checkable" and "A100" in record["explanation"]


def test_a_failing_recomputation_is_an_error_record_not_a_lost_audit(monkeypatch):
    real = audit_module._value

    def flaky(config, cache):
        if config.model == "chapter-vit-tiny":
            raise RuntimeError("boom")
        return real(config, cache)

    monkeypatch.setattr(audit_module, "_value", flaky)
    records = audit(["ch-ex4-vit-tiny-params", "ch-tokens-197"], counted=False)
    assert [r["verdict"] for r in records] == ["error", "holds"]
    assert "RuntimeError: boom" in records[0]["explanation"]


# --- CLI ---------------------------------------------------------------------------------------------
def test_cli_exit_codes(capsys, tmp_path):
    assert main(["audit", "--claim", "ch-tokens-197", "nb-table-attn-p4", "--no-counted"]) == 0
    out = capsys.readouterr().out
    assert "ch-tokens-197" in out and "wrong convention" in out

    assert main(["audit", "--claim", "ch-vitb-flop-224", "--no-counted"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "did you mean 'ch-vitb-flops-224'" in err

    assert main(["audit", "--source", "009", "--no-counted"]) == 2
    assert "matches no claim's document" in capsys.readouterr().err

    bad = _catalogue(tmp_path, GOOD.replace("quantity: params", "quantity: nonsense"))
    assert main(["audit", "--catalogue", str(bad)]) == 2
    assert "quantity='nonsense'" in capsys.readouterr().err

    assert main(["audit", "--format", "csv", "--source", "004", "--no-counted"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("id,source,") and len(lines) == 1 + 3

    report = tmp_path / "claims.md"
    assert main(["audit", "--source", "001", "--no-counted", "--write", str(report)]) == 0
    assert "## Summary" in report.read_text(encoding="utf-8")


# --- the committed report ----------------------------------------------------------------------------
def test_counted_values_agree_with_the_analytic_model(full):
    counted = [r for r in full if r["counted_by"]]
    assert len(counted) >= 10
    for record in counted:
        assert not record["warnings"], record


def test_committed_report_is_up_to_date(full):
    expected = render_markdown(full, catalogue=str(CATALOGUE.relative_to(REPO)))
    assert REPORT.exists(), "reports/claims.md is missing: run `vitbench audit --write reports/claims.md`"
    assert REPORT.read_text(encoding="utf-8") == expected, (
        "reports/claims.md is out of date: run `vitbench audit --write reports/claims.md`"
    )
