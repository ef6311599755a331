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
