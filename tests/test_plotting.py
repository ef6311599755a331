"""fedlib.plotting helpers that the notebooks share."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from fedlib import plotting  # noqa: E402


def test_log_loss_axis_caps_a_diverging_run_at_three_times_the_start():
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [2.3, 0.5, 0.2])
    ax.plot([0, 1, 2], [2.3, 40.0, 1e14])                  # diverges
    plotting.log_loss_axis(ax, 2.3)
    assert ax.get_yscale() == "log" and np.isclose(ax.get_ylim()[1], 6.9)
    assert ax.get_ylim()[0] <= 0.2
    fig2, ax2 = plt.subplots()
    ax2.plot([0, 1], [2.3, 1.0])
    plotting.log_loss_axis(ax2, 2.3)                       # nothing to cap: the data set the top
    low, high = ax2.get_ylim()
    assert ax2.get_yscale() == "log" and low <= 1.0 and 2.3 <= high < 6.9
    plotting.log_loss_axis(ax2, float("nan"))              # no start value: only the scale, limits kept
    assert ax2.get_yscale() == "log" and ax2.get_ylim() == (low, high)
    plt.close("all")


def test_curves_draw_a_panel_per_metric_and_column_with_one_legend():
    import pandas as pd
    rows = [{"round": r, "pattern": p, "dataset": d, "method": m, "loss": 2.3 / (1 + r) * (1 + k),
             "test_acc": 0.1 + 0.01 * r} for r in range(5) for p in ("P1", "P2") for d in ("A", "B")
            for k, m in enumerate(("x", "y"))]
    data = pd.DataFrame(rows)
    fig, axes = plotting.curves(data, "method", "pattern", hue_order=["y", "x"])
    assert axes.shape == (2, 2) and [a.get_title() for a in axes[0]] == ["P1", "P2"]
    assert axes[0, 0].get_yscale() == "log" and axes[1, 0].get_yscale() == "linear"
    assert axes[1, 0].get_ylabel() == "test accuracy" and axes[0, -1].get_legend() is not None
    assert sum(a.get_legend() is not None for a in axes.flat) == 1
    fig, axes = plotting.curves(data, "method", "pattern", row="dataset", col_order=["P2"],
                                title="{row}, {col}")
    assert axes.shape == (4, 1) and axes[2, 0].get_title() == "B, P2"
    plt.close("all")


def test_method_palette_keeps_each_methods_colour_and_shades_variants():
    from matplotlib.colors import to_rgb
    pal = plotting.method_palette(["FedAvg", "FedSUM", "FedSUM-CR (exact rate sum)", "my method", "other"])
    assert pal["FedSUM"] == to_rgb(plotting.METHOD_COLORS["FedSUM"])
    assert plotting.method_palette(["FedSUM"])["FedSUM"] == pal["FedSUM"]     # order does not matter
    cr, variant = to_rgb(plotting.METHOD_COLORS["FedSUM-CR"]), pal["FedSUM-CR (exact rate sum)"]
    assert variant != cr and all(v >= c for v, c in zip(variant, cr, strict=True))   # a lighter shade
    assert pal["my method"] != pal["other"] and len(set(pal.values())) == 5
    # another algorithm whose label starts with a method's name is not a shade of it
    own = plotting.method_palette(["FedAvg", "FedAvg+SM", "FedAU as in the authors' code"])
    blue = np.array(to_rgb(plotting.METHOD_COLORS["FedAvg"]))
    assert own["FedAvg+SM"] not in (tuple(blue), tuple(float(v) for v in blue + (1 - blue) * 0.45))
    assert own["FedAU as in the authors' code"] != to_rgb(plotting.METHOD_COLORS["FedAU"])    # shaded
    assert plotting.method_palette(["FedSUM*"])["FedSUM*"] != to_rgb(plotting.METHOD_COLORS["FedSUM"])


def test_curves_mark_failed_runs_say_what_a_band_is_and_flag_a_zoomed_axis():
    import pandas as pd
    rows = []
    for seed in (0, 1):
        for r in range(0, 50, 10):
            rows.append({"method": "A", "seed": seed, "round": r, "loss": 1.0 - r / 100,
                         "test_acc": 0.95 + r / 10_000, "status": "ok"})
        for r in range(0, 30 if seed else 50, 10):           # B's seed 1 diverges at round 20
            rows.append({"method": "B", "seed": seed, "round": r, "loss": 1.0, "test_acc": 0.951 + r / 20_000,
                         "status": "diverged" if seed else "ok"})
    data = pd.DataFrame(rows)
    palette = {"A": (0.0, 0.0, 1.0), "B": (1.0, 0.0, 0.0)}
    fig, axes = plotting.curves(data, "method", None, errorbar=("pi", 100), palette=palette, margin=0.005)
    legend = axes[0, -1].get_legend()
    assert "band: lowest to highest seed" in legend.get_title().get_text()
    assert any("failed" in t.get_text() for t in legend.get_texts())
    for ax, y in zip(axes[:, 0], (1.0, 0.951 + 20 / 20_000), strict=True):   # an X at B seed 1's last value
        marks = [ln for ln in ax.get_lines() if ln.get_marker() == "X"]
        assert len(marks) == 1 and marks[0].get_xdata()[0] == 20 and np.isclose(marks[0].get_ydata()[0], y)
        assert marks[0].get_color() == palette["B"]
    texts = [t.get_text() for t in axes[1, 0].texts]                   # accuracy spans < 10 margins
    assert any(t.startswith("zoomed: the axis spans") for t in texts) and not axes[0, 0].texts
    fig2, axes2 = plotting.curves(data[data["status"] == "ok"], "method", None, units="seed", estimator=None)
    assert "one line per seed" in axes2[0, -1].get_legend().get_title().get_text()
    assert not [ln for ln in axes2[0, 0].get_lines() if ln.get_marker() == "X"]
    plt.close("all")
