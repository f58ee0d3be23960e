"""The learning-curve figure's legend (workflow_scripts.evaluation.curves): below the panels,
inside the figure when it fits, and whole in the saved PNG when it cannot fit."""
from __future__ import annotations

import matplotlib.image

from workflow_scripts.evaluation import curves

RUN = {"train loss": ([100, 200, 300, 400], [5.0, 4.0, 3.5, 3.2]), "dev loss": ([200, 400], [4.1, 3.6])}
STOPPED = {"train loss": ([100, 200], [5.1, 4.2]), "dev loss": ([200], [4.3])}
SYSTEMS = ("baseline", "lattice_lpe_lsa_zh", "lattice_transformer_jieba", "graph_transformer_gates",
           "reordering_embedding", "esc_bbf_compressed")


def write_metrics(path, series) -> str:
    rows: dict[float, dict[str, float]] = {}
    for label, column in (("train loss", "loss"), ("dev loss", "valid_loss")):
        for update, value in zip(*series[label], strict=True):
            rows.setdefault(update, {})[column] = value
    path.write_text("update,loss,valid_loss\n" + "".join(f"{u},{r.get('loss', '')},{r.get('valid_loss', '')}\n"
                                                         for u, r in sorted(rows.items())))
    return str(path)


def test_a_long_legend_is_laid_out_inside_the_figure_below_the_panels():
    """Six systems of three seeds, one seed of each stopped early: with four columns the legend
    was wider than the figure and cut off on both sides."""
    data = {system + seed: (STOPPED if seed == "_seed3" else RUN) for system in SYSTEMS for seed in ("", "_seed2", "_seed3")}
    for char_runs in (set(), {"baseline", "baseline_seed2", "baseline_seed3"}):  # one panel, two panels
        fig = curves.figure(data, "tatoeba_zh_en", char_runs)
        (legend,) = fig.legends
        box = legend.get_window_extent()
        assert 0 <= box.x0 and box.x1 <= fig.bbox.width and 0 <= box.y0, (box, fig.bbox)
        assert all(box.y1 <= ax.get_window_extent().y0 for ax in fig.axes)


def test_the_saved_png_holds_a_legend_wider_than_the_figure(tmp_path):
    """A label that no column count fits in the figure's width widens the saved image."""
    runs = {"a_system_with_a_name_" + "very_" * 30 + "long": write_metrics(tmp_path / "a.csv", RUN),
            "other": write_metrics(tmp_path / "b.csv", RUN)}
    png = tmp_path / "curves.png"
    curves.plot_curves(runs, png, "nist")
    fig = curves.figure({name: curves.curve_series(path) for name, path in runs.items()}, "nist")
    legend_width = fig.legends[0].get_window_extent().width * 120 / fig.dpi  # plot_curves saves at 120 dpi
    assert legend_width > fig.bbox.width * 120 / fig.dpi  # wider than the figure
    assert matplotlib.image.imread(png).shape[1] >= legend_width


def test_dev_bleu_gets_a_panel_beside_the_loss_and_a_legend_entry():
    """Where the runs validated with BLEU, a second panel draws it against the same updates,
    and the legend (below both panels, inside the figure) names its line style."""
    bleu = {**RUN, "dev BLEU": ([200, 400], [12.5, 17.0])}
    fig = curves.figure({"baseline": bleu, "baseline_seed2": RUN, "reorder_both": bleu}, "multi30k_en_de")
    loss_ax, bleu_ax = fig.axes
    assert (loss_ax.get_ylabel(), bleu_ax.get_ylabel()) == (curves.LOSS_LABELS["token"], "dev BLEU")
    assert [list(line.get_ydata()) for line in bleu_ax.get_lines()] == [[12.5, 17.0], [12.5, 17.0]]
    (legend,) = fig.legends
    assert [text.get_text() for text in legend.get_texts()][-3:] == ["train loss", "dev loss", "dev BLEU"]
    box = legend.get_window_extent()
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width and 0 <= box.y0
    assert all(box.y1 <= ax.get_window_extent().y0 for ax in fig.axes)
    # no BLEU measured: one panel, no BLEU entry
    fig = curves.figure({"baseline": RUN}, "multi30k_en_de")
    assert len(fig.axes) == 1 and "dev BLEU" not in [t.get_text() for t in fig.legends[0].get_texts()]
