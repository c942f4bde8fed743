"""Charts as inline SVG text, drawn with matplotlib's object API (no pyplot, no global state).

The SVGs are byte-stable for the same inputs: a fixed ``svg.hashsalt``, no date in the metadata,
text kept as text (``svg.fonttype: none``, so the browser's fonts draw it and no glyphs are
embedded) and no mathtext parsing (a ``$`` in a model name stays a ``$``).

A figure that is missing (None, NaN, or no entry) is drawn as "no data", never as a 0: a 0 is a
result, no data is the absence of one.
"""

from __future__ import annotations

import io
import math
import re
from typing import TYPE_CHECKING, Any, Mapping, Sequence, TypeGuard

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

#: one colour per run, in run order (colour-blind friendly; Okabe-Ito, then Tableau)
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
    "#4E79A7",
    "#F28E2B",
    "#59A14F",
    "#B07AA1",
)
ERROR_PALETTE = (
    "#D55E00",
    "#E69F00",
    "#CC79A7",
    "#0072B2",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#999999",
    "#8C564B",
    "#BCBD22",
    "#17BECF",
    "#7F7F7F",
)

RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "benchsmith-report",
    "svg.fonttype": "none",
    "text.parse_math": False,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#888888",
    "axes.labelcolor": "#333333",
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "axes.grid": False,
    "legend.frameon": False,
}

_HEADER = re.compile(r"\A.*?(?=<svg)", re.DOTALL)
NO_DATA = "no data"
_NO_DATA_COLOUR = "#6E7781"


def missing(v: float | None) -> bool:
    """No figure: None or NaN."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def present(v: float | None) -> TypeGuard[float]:
    """A figure: not :func:`missing` (so the type checker knows it is a number)."""
    return not missing(v)


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _svg(fig) -> str:  # noqa: ANN001 - a matplotlib Figure
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight", pad_inches=0.08)
    text = _HEADER.sub("", buf.getvalue(), count=1)
    # the browser scales the chart down on narrow screens and keeps its aspect ratio
    return text.replace("<svg ", '<svg class="chart" role="img" ', 1).strip()


def _figure(width: float, height: float):  # noqa: ANN202
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        return Figure(figsize=(width, height), dpi=96)


def _percent_axis(ax, axis: str = "y") -> None:  # noqa: ANN001
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(MultipleLocator(0.2))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 100:.0f}%"))


def _short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def radar_chart(labels: Sequence[str], axes: Sequence[str], values: Sequence[Mapping[str, float]]) -> str:
    """One polygon per run over ``axes`` (fractions in [0, 1]). A run without a figure for an axis
    leaves its polygon open there (not filled) and the axis label names it under "no data"."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = _figure(7.6, 5.2)
        ax = fig.add_subplot(projection="polar")
        n = len(axes)
        ax.set_theta_offset(math.pi / 2)  # the first axis at the top, then clockwise
        ax.set_theta_direction(-1)
        angles = [2 * math.pi * i / n for i in range(n)]
        closed = angles + angles[:1]
        lacking: dict[str, list[str]] = {a: [] for a in axes}
        for i, (label, vals) in enumerate(zip(labels, values)):
            raw = [vals.get(a) for a in axes]
            for a, v in zip(axes, raw):
                if missing(v):
                    lacking[a].append(_short(label, 16))
            pts = [float(v) if present(v) else math.nan for v in raw]  # NaN: matplotlib breaks the line there
            pts = pts + pts[:1]
            ax.plot(closed, pts, color=colour(i), linewidth=1.8, label=_short(label, 40), marker="o", markersize=3.5)
            if not any(missing(v) for v in raw):
                ax.fill(closed, pts, color=colour(i), alpha=0.10)
        ax.set_xlim(0, 2 * math.pi)
        ax.set_ylim(0, 1)
        ax.set_yticks([0.2, 0.4, 0.6, 0.8, 1.0])
        ax.set_yticklabels(["20", "40", "60", "80", "100"], fontsize=8, color="#777777")
        ax.set_rlabel_position(180 / n if n else 0)
        ax.set_xticks(angles)
        ax.set_xticklabels(
            [_short(a, 24) + (f"\n({NO_DATA}: {', '.join(lacking[a])})" if lacking[a] else "") for a in axes],
            fontsize=9.5,
        )
        for tick, angle in zip(ax.get_xticklabels(), angles):
            s = math.sin(angle)  # screen x of the label (clockwise from the top)
            tick.set_horizontalalignment("center" if abs(s) < 0.2 else ("left" if s > 0 else "right"))
        ax.tick_params(axis="x", pad=6)
        ax.grid(color="#DDDDDD", linewidth=0.8)
        ax.spines["polar"].set_color("#BBBBBB")
        ax.legend(loc="upper left", bbox_to_anchor=(1.18, 1.0), fontsize=9, handlelength=1.6)
        return _svg(fig)


def bar_chart(labels: Sequence[str], axes: Sequence[str], values: Sequence[Mapping[str, float]]) -> str:
    """Grouped horizontal bars per axis, used instead of a radar when there are fewer than 3 axes."""
    return category_chart(labels, axes, values, ylabel="")


def category_chart(
    labels: Sequence[str], categories: Sequence[str], values: Sequence[Mapping[str, float | None]], ylabel: str = ""
) -> str:
    """Grouped bars: one group per category, one bar (colour) per run; fractions in [0, 1]. A run
    without a figure for a category (None, NaN or no entry) gets a grey hatched slot labelled
    "no data" instead of a bar; a real 0 is a (flat) bar labelled 0."""
    import matplotlib

    n_runs = max(1, len(labels))
    n_cat = max(1, len(categories))
    longest = max((len(c) for c in categories), default=0)
    width = min(12.5, max(5.0, 0.32 * n_cat * (n_runs + 1.2) + 1.8))
    per_group = (width - 1.2) / n_cat * 10.5  # characters of 9 pt text that fit under a group
    rotate = min(longest, 30) > per_group * 0.9
    height = 3.0 + (min(longest, 30) * 0.055 if rotate else 0.0)
    with matplotlib.rc_context(RC):
        fig = _figure(width, height)
        ax = fig.add_subplot()
        bar = 0.8 / n_runs
        for i, (label, vals) in enumerate(zip(labels, values)):
            xs = [j - 0.4 + bar * (i + 0.5) for j in range(len(categories))]
            ys = [vals.get(c) for c in categories]
            shown = [(x, y) for x, y in zip(xs, ys) if present(y)]
            ax.bar(
                [x for x, _ in shown],
                [y for _, y in shown],
                width=bar * 0.92,
                color=colour(i),
                label=_short(label, 40),
                zorder=3,
            )
            for x in (x for x, y in zip(xs, ys) if missing(y)):
                ax.bar(
                    [x],
                    [1.0],
                    width=bar * 0.92,
                    facecolor="none",
                    edgecolor="#D0D7DE",
                    hatch="///",
                    linewidth=0,
                    zorder=2,
                )
                ax.text(
                    x, 0.03, NO_DATA, rotation=90, ha="center", va="bottom", fontsize=8, color=_NO_DATA_COLOUR, zorder=4
                )
            if n_cat * n_runs <= 24:  # few bars: print each value (a 0 would otherwise be invisible)
                for x, y in shown:
                    ax.text(x, y + 0.015, f"{y * 100:.0f}", ha="center", va="bottom", fontsize=7.5, color="#555555")
        ax.set_xticks(list(range(len(categories))))
        ax.set_xticklabels(
            [_short(c, 30) for c in categories],
            rotation=35 if rotate else 0,
            ha="right" if rotate else "center",
            rotation_mode="anchor",
            fontsize=9,
        )
        ax.set_xlim(-0.6, len(categories) - 0.4)
        ax.set_ylim(0, 1.06)
        _percent_axis(ax)
        ax.yaxis.grid(True, color="#E5E5E5", linewidth=0.8, zorder=0)
        if ylabel:
            ax.set_ylabel(ylabel, fontsize=9)
        ax.legend(
            loc="lower left",
            bbox_to_anchor=(0.0, 1.01),
            ncol=min(n_runs, 4),
            fontsize=9,
            handlelength=1.2,
            borderaxespad=0.2,
        )
        return _svg(fig)


def error_chart(
    labels: Sequence[str], kinds: Sequence[str], counts: Sequence[Mapping[str, int]], totals: Sequence[int]
) -> str:
    """Stacked horizontal bars, one per run: each error kind's share of the run's records; a run
    without records is labelled "no data" (not an empty bar, which would read as no errors)."""
    import matplotlib

    n_runs = max(1, len(labels))
    with matplotlib.rc_context(RC):
        fig = _figure(5.4, 0.9 + 0.42 * n_runs)
        ax = fig.add_subplot()
        ys = list(range(n_runs))[::-1]
        left = [0.0] * n_runs
        for k, kind in enumerate(kinds):
            widths = [(c.get(kind, 0) / t if t else 0.0) for c, t in zip(counts, totals)]
            ax.barh(
                ys,
                widths,
                left=left,
                height=0.62,
                color=ERROR_PALETTE[k % len(ERROR_PALETTE)],
                label=_short(kind, 32),
                zorder=3,
            )
            left = [a + b for a, b in zip(left, widths)]
        xmax = max(0.05, min(1.0, max(left, default=0.0) * 1.08))
        for y, t in zip(ys, totals):
            if not t:
                ax.text(xmax * 0.01, y, NO_DATA, ha="left", va="center", fontsize=8.5, color=_NO_DATA_COLOUR)
        ax.set_yticks(ys)
        ax.set_yticklabels([_short(label, 30) for label in labels], fontsize=9)
        ax.set_xlim(0, xmax)
        from matplotlib.ticker import FuncFormatter

        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 100:.0f}%"))
        ax.xaxis.grid(True, color="#E5E5E5", linewidth=0.8, zorder=0)
        ax.set_xlabel("share of records", fontsize=9)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5, handlelength=1.0)
        return _svg(fig)


def pass_k_chart(
    labels: Sequence[str], curves: Sequence[Mapping[int, float]], colours: Sequence[str] | None = None
) -> str:
    """pass^k over k, one line per run (``{k: fraction}``); ``colours`` default to the run order's."""
    import matplotlib

    ks = sorted({k for c in curves for k in c})
    with matplotlib.rc_context(RC):
        fig = _figure(5.4, 3.0)
        ax = fig.add_subplot()
        for i, (label, curve) in enumerate(zip(labels, curves)):
            xs = [k for k in ks if k in curve]
            ax.plot(
                xs,
                [curve[k] for k in xs],
                color=colours[i] if colours else colour(i),
                linewidth=1.8,
                marker="o",
                markersize=4,
                label=_short(label, 40),
                zorder=3,
            )
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks], fontsize=9)
        ax.set_xlim(min(ks, default=1) - 0.3, max(ks, default=1) + 0.3)
        ax.set_ylim(0, 1.06)
        _percent_axis(ax)
        ax.yaxis.grid(True, color="#E5E5E5", linewidth=0.8, zorder=0)
        ax.set_xlabel("k (trials that must all succeed)", fontsize=9)
        ax.set_ylabel("pass^k", fontsize=9)
        ax.legend(
            loc="lower left",
            bbox_to_anchor=(0.0, 1.01),
            ncol=min(max(1, len(labels)), 4),
            fontsize=9,
            handlelength=1.6,
            borderaxespad=0.2,
        )
        return _svg(fig)
