"""Figures a reader cannot misread: no colour repeated within a figure, CI whiskers from the rows."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd

from harness.analysis.run import plots


def _rows(n_series: int) -> pd.DataFrame:
    rows = []
    for k in range(n_series):
        for batch in (64, 256):
            eps = 1000.0 * (k + 1) * batch / 64
            rows.append(
                {
                    "model": "cnn",
                    "strategy": "mirrored",
                    "cross_device_ops": "auto",
                    "communication": "none",
                    "replicas": k + 1,
                    "workers": 1,
                    "ps": 0,
                    "tenants": 1,
                    "per_replica_batch": batch,
                    "global_batch": batch * (k + 1),
                    "accum_steps": 1,
                    "loop": "ctl",
                    "steps_per_execution": 10,
                    "precision": "float32",
                    "scaling": "weak",
                    "status": "ok",
                    "examples_per_sec": eps,
                    "examples_per_sec_ci_low": 0.9 * eps,
                    "examples_per_sec_ci_high": 1.1 * eps,
                    "logical_devices": False,
                    "oversubscribed": False,
                    "cell_id": f"c{k}-{batch}",
                }
            )
    return pd.DataFrame(rows)


def test_distinct_colors_never_repeat():
    for n in (3, 10, 14, 25):
        colors = list(plots.distinct_colors([str(i) for i in range(n)]).values())
        assert len({tuple(round(c, 6) for c in color) for color in colors}) == n


def test_throughput_vs_batch_gives_every_series_its_own_colour(tmp_path: Path):
    import matplotlib.pyplot as plt

    captured = []
    real_save = plots.save

    def keep(fig, out, name):  # type: ignore[no-untyped-def]
        captured.append(fig)
        return real_save(fig, out, name)

    plots.save = keep
    try:
        assert plots.throughput_vs_batch(_rows(14), tmp_path)
    finally:
        plots.save = real_save
    (fig,) = captured
    for ax in fig.axes:
        handles, _ = ax.get_legend_handles_labels()
        colours = [matplotlib.colors.to_hex(h.lines[0].get_color()) for h in handles]
        assert len(colours) == len(set(colours)) == 14
    plt.close("all")


def test_a_figures_labels_are_the_configurations_in_words_less_what_its_axes_say() -> None:
    rows = _rows(2)
    rows.loc[rows["replicas"] == 1, "strategy"] = "default"
    assert (
        list(plots.labels(rows, ["batch"]))
        == ["no distribution strategy"] * 2 + ["MirroredStrategy on 2 replicas"] * 2
    )
    said = list(plots.labels(rows))  # the batch differs too: said where not the reference
    assert said[:2] == ["no distribution strategy", "no distribution strategy, batch 256 per replica"]
    assert not any("[" in label or "x1" in label for label in said)  # no shorthand ids
