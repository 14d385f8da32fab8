"""Where people read results in a notebook: ``Records._repr_html_`` (an escaped HTML table with the
report layer's units) and ``Records.plot`` (a matplotlib Axes, one line per model)."""

from __future__ import annotations

import re

import pytest

from vitbench.errors import SpecError
from vitbench.results import Records

HOSTILE = "<script>alert('x')</script>"


def _rows() -> Records:
    """Two models at three resolutions, numbers worked out by hand: macs = img_size * 1000 for a,
    img_size * 10 for b; 4 GiB of memory on one row."""
    rows = Records()
    for model, scale in (("a", 1000), (HOSTILE, 10)):
        for size in (224, 384, 512):
            rows.append({"model": model, "img_size": size, "params": 22_050_664, "macs": size * scale})
    rows[0]["peak_memory_bytes"] = 4 * 2**30
    return rows


def test_html_escapes_user_text_and_formats_units():
    page = _rows()._repr_html_()
    assert "<script" not in page
    assert "<td>&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;</td>" in page
    heads = re.findall(r"<th>([^<]*)</th>", page.split("</thead>")[0])
    assert heads == ["", "model", "img_size", "params", "macs", "peak_memory_bytes"]
    assert "<td>22.05 M</td>" in page  # params through the report's formatter, not 22050664
    assert "<td>224 K</td>" in page  # macs of a at 224: 224,000
    assert "<td>4.00 GiB</td>" in page
    assert "6 rows &times; 5 columns" in page


def test_long_records_show_head_and_tail_and_say_how_many_are_hidden():
    rows = Records({"model": f"m{i}", "macs": i} for i in range(100))
    page = rows._repr_html_()
    shown = re.findall(r"<tr><th>(\d+)</th>", page)
    assert shown == [str(i) for i in [*range(20), *range(90, 100)]]
    assert "70 rows hidden" in page and "100 rows" in page
    assert len(re.findall(r"<tr><th>\d+</th>", Records(rows[:60])._repr_html_())) == 60  # 60 rows: all shown


@pytest.mark.slow  # importing matplotlib: about 1.5 s
def test_plot_draws_one_line_per_model_with_its_points():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    ax = _rows().plot()  # defaults: macs against img_size (the column that varies), by model
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("img_size", "macs")
    assert [line.get_label() for line in ax.lines] == ["a", HOSTILE]
    assert [list(line.get_xdata()) for line in ax.lines] == [[224, 384, 512]] * 2
    assert list(ax.lines[1].get_ydata()) == [2240, 3840, 5120]
    one = _rows().plot(x="img_size", y="params", by=None)
    assert len(one.lines) == 1 and len(one.lines[0].get_xdata()) == 6
    import matplotlib.pyplot as plt

    plt.close("all")


def test_plot_names_a_missing_column():
    with pytest.raises(SpecError, match="throughput_img_s"):
        _rows().plot(y="throughput_img_s")


def test_a_notebook_shows_a_predictions_answer_before_its_components():
    """A predict row has some 50 columns; the display puts the configuration and the answer
    (latency, throughput, bound, error band) first, the counts and components after."""
    import re

    import vitbench

    def headers_of(records) -> list[str]:
        head = records._repr_html_().split("<thead>", 1)[1].split("</thead>", 1)[0]
        return re.findall(r"<th>([a-z_0-9]+)</th>", head)

    rows = vitbench.predict("vit-ti/16", device="h100", batch_size=8, precision="bf16")
    headers = headers_of(rows)
    assert headers[:8] == ["model", "device", "batch_size", "mode", "precision", "pred_latency_s",
                           "pred_throughput_img_s", "pred_bound"]
    assert headers.index("pred_error_p90") < headers.index("pred_linear_s") < headers.index("env_torch")
    assert sorted(headers) == sorted(rows[0])  # every column still shown once
    # rows that are not predictions keep their order
    counted = vitbench.analyze(["vit-ti/16"])
    assert headers_of(counted) == list(counted[0])
