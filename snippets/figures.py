"""The site's figures: one style for every picture a page draws at build time.

Pages call these functions with the tensors they just computed, so a figure can
never drift from the numbers beside it. Every function returns a
``matplotlib.figure.Figure`` that is not registered with ``pyplot`` (nothing is
displayed twice, nothing needs closing); ``show`` renders it as a PNG output.

Style: a white background (legible in furo's dark theme too), a diverging
colormap centred at 0 (blue negative, white zero, red positive), values written
into the cells of small matrices, at most 4.8 inches wide at 110 dpi, no text
smaller than 10 points. A phone of 375 CSS px shows a figure at most 331 px wide,
so a figure's smallest text is at least 9 CSS px there (``png_bytes`` refuses a
figure that breaks this, and writes the size into the PNG for the browser tests).
"""

from __future__ import annotations

import io
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed; pages show PNG bytes via `show`

import matplotlib.colors
import matplotlib.text
import numpy as np
import torch
from matplotlib.figure import Figure

DPI = 110
MAX_WIDTH_INCHES = 4.8
SMALL = 10  # points: cell values, legends, labels in boxes; the smallest text drawn
# How wide a 375 px phone shows a figure: furo's 16 px margins and site.css's 6 px
# frame on each side. Text must be at least LEGIBLE_PX there.
PHONE_FIGURE_PX = 375 - 2 * 16 - 2 * 6
LEGIBLE_PX = 9
SMALLEST_TEXT_KEY = "Smallest text (px)"  # PNG metadata, read by the browser tests
CMAP = "RdBu_r"  # diverging: blue < 0 < red, white at 0
ANNOTATE_UP_TO = 8  # write values into cells when both sides are at most this
BOX_STYLE = dict(boxstyle="round,pad=0.35", facecolor="#eef3fb", edgecolor="#34495e")
LEAF_BOX_STYLE = dict(boxstyle="round,pad=0.35", facecolor="#fdf2e3", edgecolor="#a0522d")

matplotlib.rcParams.update({
    "font.size": 10,
    "axes.titlesize": 10,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "svg.hashsalt": "autograd-explained",  # stable ids should anyone save SVG
})


def new_figure(width: float = MAX_WIDTH_INCHES, height: float = 3.0, ncols: int = 1,
               nrows: int = 1, **subplots_kw):
    """A white figure of at most the content column's width, and its axes."""
    fig = Figure(figsize=(min(width, MAX_WIDTH_INCHES), height), dpi=DPI,
                 facecolor="white", layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **subplots_kw)
    return fig, axes.ravel()


def _as_matrix(values) -> np.ndarray:
    array = torch.as_tensor(values).detach().to(torch.float64).cpu().numpy()
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(f"a heatmap needs a matrix, got shape {array.shape}")
    return array


def short_number(value: float) -> str:
    """Two decimals without the leading zero (-.02, .50, 1.00): fits a narrow cell."""
    return re.sub(r"^(-?)0\.", r"\1.", f"{value:.2f}")


def text_shade(color) -> tuple[float, float, float]:
    """A darker shade of a line's colour, for text beside the line on white (matplotlib's
    default blue and orange become 9.8:1 and 6.2:1 against white)."""
    red, green, blue = matplotlib.colors.to_rgb(color)
    return (0.6 * red, 0.6 * green, 0.6 * blue)


def symmetric_norm(*matrices) -> matplotlib.colors.Normalize:
    """A colour scale centred at 0 that covers every given matrix."""
    largest = max(float(np.abs(_as_matrix(m)).max()) for m in matrices)
    largest = largest or 1.0
    return matplotlib.colors.Normalize(vmin=-largest, vmax=largest)


def jacobian_heatmap(ax, J, title: str, *, row_labels: Sequence[str] | None = None,
                     col_labels: Sequence[str] | None = None,
                     norm: matplotlib.colors.Normalize | None = None,
                     annotate: bool | None = None, fmt: str | Callable[[float], str] = "{:.2f}"):
    """Draw the matrix ``J`` as a heatmap: row i on top of row i+1, like the maths.

    Rows are labelled ``y_i`` and columns ``x_j`` unless labels are given. Small
    matrices get their values written in; ``norm`` shares one scale between panels.
    Returns the image, for a colorbar.
    """
    matrix = _as_matrix(J)
    m, n = matrix.shape
    norm = norm or symmetric_norm(matrix)
    image = ax.imshow(matrix, cmap=CMAP, norm=norm, aspect="equal")
    ax.set_title(title)
    ax.set_xticks(range(n), col_labels if col_labels is not None
                  else [f"$x_{j}$" for j in range(n)])
    ax.set_yticks(range(m), row_labels if row_labels is not None
                  else [f"$y_{i}$" for i in range(m)])
    ax.tick_params(length=0)
    ax.set_xticks(np.arange(-0.5, n), minor=True)
    ax.set_yticks(np.arange(-0.5, m), minor=True)
    ax.grid(which="minor", color="#bbbbbb", linewidth=0.6)
    ax.tick_params(which="minor", length=0)
    if annotate is None:
        annotate = m <= ANNOTATE_UP_TO and n <= ANNOTATE_UP_TO
    if annotate:
        for i in range(m):
            for j in range(n):
                value = matrix[i, j]
                strong = abs(norm(value) - 0.5) > 0.3  # dark cell: white text
                text = fmt(value + 0.0) if callable(fmt) else fmt.format(value + 0.0)
                ax.text(j, i, text, ha="center", va="center",
                        fontsize=SMALL, color="white" if strong else "black")
    return image


def jacobian_figure(J, title: str, **heatmap_kw) -> Figure:
    """One Jacobian, with a colour bar: the figure of a tutorial."""
    matrix = _as_matrix(J)
    m, n = matrix.shape
    fig, (ax,) = new_figure(width=1.6 + 0.75 * n, height=0.9 + 0.6 * m)
    image = jacobian_heatmap(ax, matrix, title, **heatmap_kw)
    fig.colorbar(image, ax=ax, shrink=0.9)
    return fig


def jacobian_gallery(named_jacobians: dict[str, object], ncols: int = 2) -> Figure:
    """Several Jacobians side by side, each on its own scale centred at 0."""
    count = len(named_jacobians)
    nrows = -(-count // ncols)
    fig, axes = new_figure(height=2.7 * nrows, ncols=ncols, nrows=nrows)
    for ax, (title, J) in zip(axes, named_jacobians.items()):
        jacobian_heatmap(ax, J, title, fmt=short_number)
    for ax in axes[count:]:
        ax.set_visible(False)
    return fig


def vjp_figure(J, v) -> Figure:
    """vᵀJ as a weighted sum of rows: J, then row i scaled by v_i, then the sum."""
    matrix = _as_matrix(J)
    seed = _as_matrix(v).ravel()
    scaled = seed[:, None] * matrix
    total = scaled.sum(axis=0, keepdims=True)
    m, n = matrix.shape
    norm = symmetric_norm(matrix, scaled, total)
    fig = Figure(figsize=(MAX_WIDTH_INCHES, 1.2 + 0.55 * m), dpi=DPI,
                 facecolor="white", layout="constrained")
    grid = fig.add_gridspec(2, 3, height_ratios=[m, 1])
    ax_j = fig.add_subplot(grid[:, 0])
    ax_scaled = fig.add_subplot(grid[:, 1])
    ax_sum = fig.add_subplot(grid[1, 2])
    rows = [f"$y_{i}$" for i in range(m)]
    jacobian_heatmap(ax_j, matrix, "$J$: row $i$ =\ngradient of $y_i$", norm=norm)
    jacobian_heatmap(ax_scaled, scaled, "row $i$ times $v_i$", norm=norm,
                     row_labels=[f"${value:g}\\times$ row {i}"
                                 for i, value in enumerate(seed)])
    jacobian_heatmap(ax_sum, total, "their sum: $v^\\top J$", norm=norm,
                     row_labels=["$v^\\top J$"])
    ax_j.set_yticks(range(m), rows)
    return fig


def walk_graph(root, names: dict[int, str] | None = None):
    """Walk a graph from ``root`` (a ``grad_fn``) through ``next_functions``.

    Returns ``(nodes, edges)``: ``nodes`` maps each node's id to its label (its
    class name; for ``AccumulateGrad``, also the name of its leaf taken from
    ``names``, a dict from ``id(tensor)`` to a name); ``edges`` lists
    ``(from_id, to_id)`` in the direction the seed flows, output to inputs.
    """
    names = names or {}
    nodes: dict[int, str] = {}
    edges: list[tuple[int, int]] = []
    # torch makes a new Python object for a node whenever the last one died,
    # and a dead object's id can be reused: hold every node seen, so that an
    # id names one node for the whole walk.
    held = [root]
    pending = [root]
    while pending:
        node = pending.pop(0)
        if id(node) in nodes:
            continue
        label = type(node).__name__
        leaf = getattr(node, "variable", None)
        if leaf is not None:
            label += f"\n({names.get(id(leaf), 'leaf')})"
        nodes[id(node)] = label
        for child, _ in node.next_functions:
            if child is not None:
                held.append(child)
                edges.append((id(node), id(child)))
                pending.append(child)
    return nodes, edges


def graph_figure(root, names: dict[int, str] | None = None,
                 title: str = "") -> Figure:
    """Draw the graph below ``root`` as boxes and arrows, output at the top.

    Each node sits one level below the deepest node pointing at it, so every
    arrow points down; leaves' ``AccumulateGrad`` nodes are drawn in orange.
    """
    nodes, edges = walk_graph(root, names)
    depth = {id(root): 0}
    for _ in nodes:  # longest-path layering; the graph is acyclic
        for parent, child in edges:
            if parent in depth:
                depth[child] = max(depth.get(child, 0), depth[parent] + 1)
    levels: dict[int, list[int]] = {}
    for node_id in nodes:
        levels.setdefault(depth[node_id], []).append(node_id)
    widest = max(len(ids) for ids in levels.values())
    fig, (ax,) = new_figure(width=1.5 + 1.7 * widest, height=0.4 + 0.85 * len(levels))
    position = {}
    for level in sorted(levels):
        ids = levels[level]
        # Order each level by the mean position of its parents: fewer crossings.
        parents_x = {node_id: [position[p][0] for p, c in edges
                               if c == node_id and p in position] for node_id in ids}
        ids.sort(key=lambda node_id: np.mean(parents_x[node_id] or [0.5]))
        for k, node_id in enumerate(ids):
            position[node_id] = ((k + 0.5) / len(ids), -level)
    for parent, child in edges:
        skips = depth[child] - depth[parent] > 1  # bend long arrows around boxes
        ax.annotate("", xy=position[child], xytext=position[parent],
                    arrowprops=dict(arrowstyle="-|>", color="#34495e", shrinkA=14,
                                    shrinkB=14 + 8 * nodes[child].count("\n"), linewidth=1.2,
                                    connectionstyle=f"arc3,rad={-0.35 if skips else 0}"))
    for node_id, label in nodes.items():
        style = LEAF_BOX_STYLE if label.startswith("AccumulateGrad") else BOX_STYLE
        ax.text(*position[node_id], label, ha="center", va="center", fontsize=SMALL,
                family="monospace", bbox=style)
    ax.set_xlim(0, 1)
    ax.set_ylim(-(len(levels) - 1) - 0.5, 0.5)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return fig


def timing_figure(sizes: Sequence[int], panels: dict[str, dict[str, Sequence[float]]],
                  xlabels: Sequence[str]) -> Figure:
    """Measured times, one panel per case: lines per method against size, log-log.

    ``panels`` maps a panel title to ``{method name: seconds per size}``.
    """
    fig, axes = new_figure(height=3.0, ncols=len(panels), sharey=True)
    markers = ["o", "s", "^", "D"]
    for ax, (title, series), xlabel in zip(axes, panels.items(), xlabels):
        for marker, (method, seconds) in zip(markers, series.items()):
            ax.plot(sizes, np.asarray(seconds) * 1e3, marker=marker, label=method)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(size) for size in sizes])
        ax.minorticks_off()
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.grid(True, which="major", color="#dddddd")
        ax.legend(fontsize=SMALL)
    axes[0].set_ylabel("time (ms)")
    fig.suptitle("measured on the build machine", fontsize=SMALL, color="#555555")
    return fig


def smallest_text_px(fig: Figure) -> float:
    """The size of the figure's smallest visible text, in pixels of the PNG."""
    sizes = [text.get_fontsize() for text in fig.findobj(matplotlib.text.Text)
             if text.get_visible() and text.get_text().strip()]
    return min(sizes, default=SMALL) * DPI / 72


def phone_text_px(fig: Figure) -> float:
    """How big the smallest text is on a 375 px phone, where the figure shrinks to fit."""
    width_px = fig.get_size_inches()[0] * DPI
    return smallest_text_px(fig) * min(1.0, PHONE_FIGURE_PX / width_px)


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes, without a timestamp or version in the metadata.

    Raises ``ValueError`` when its smallest text would be under LEGIBLE_PX on a phone.
    """
    on_phone = phone_text_px(fig)
    if on_phone < LEGIBLE_PX:
        raise ValueError(
            f"this figure's smallest text is {on_phone:.1f} CSS px on a 375 px phone "
            f"(at least {LEGIBLE_PX}): draw text of at least {SMALL} points, or the "
            f"figure at most {MAX_WIDTH_INCHES} inches wide")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, facecolor="white",
                metadata={"Software": None,
                          SMALLEST_TEXT_KEY: f"{smallest_text_px(fig):.2f}"})
    return buffer.getvalue()


def show(fig: Figure) -> None:
    """Display the figure as one PNG output of the current notebook cell."""
    from IPython.display import Image, display

    display(Image(data=png_bytes(fig), format="png"))


def _check_legibility(fig: Figure) -> None:
    from PIL import Image

    with Image.open(io.BytesIO(png_bytes(fig))) as png:
        assert float(png.text[SMALLEST_TEXT_KEY]) == round(SMALL * DPI / 72, 2), png.text
    too_small = Figure(figsize=(6.5, 2), dpi=DPI)  # the site's old width and legend size
    too_small.text(0.5, 0.5, "an 8-point legend", fontsize=8)
    try:
        png_bytes(too_small)
    except ValueError as error:
        assert "5.7 CSS px on a 375 px phone" in str(error), error
    else:
        raise AssertionError("8-point text in a figure 6.5 inches wide is refused")


def main() -> None:
    """Draw every kind of figure into a temporary directory and check each one."""
    x = torch.tensor([1.0, 2.0])
    J = torch.tensor([[x[1], x[0]], [np.cos(1.0), 0.0], [1.0, 2 * x[1]]],
                     dtype=torch.float32)
    v = torch.tensor([1.0, -2.0, 0.5])

    fig_jacobian = jacobian_figure(J, "J")
    assert fig_jacobian.get_size_inches()[0] <= MAX_WIDTH_INCHES
    texts = [t.get_text() for t in fig_jacobian.axes[0].texts]
    assert texts == ["2.00", "1.00", "0.54", "0.00", "1.00", "4.00"], texts
    image = fig_jacobian.axes[0].images[0]
    assert image.norm.vmin == -image.norm.vmax, "the colour scale is centred at 0"

    fig_vjp = vjp_figure(J, v)
    summed = fig_vjp.axes[2].images[0].get_array()
    assert np.allclose(summed, (v @ J).numpy()), "the last panel is vᵀJ"

    a = torch.tensor([0.5, -1.0], requires_grad=True)
    w = torch.tensor([2.0, 3.0], requires_grad=True)
    y = (torch.sin(a * w) + a**2).sum()
    nodes, edges = walk_graph(y.grad_fn, {id(a): "a", id(w): "w"})
    labels = sorted(nodes.values())
    assert labels == ["AccumulateGrad\n(a)", "AccumulateGrad\n(w)", "AddBackward0",
                      "MulBackward0", "PowBackward0", "SinBackward0", "SumBackward0"], labels
    assert len(edges) == 7, "a feeds two operations, so it has two incoming arrows"
    fig_graph = graph_figure(y.grad_fn, {id(a): "a", id(w): "w"})
    boxes = [t.get_text() for t in fig_graph.axes[0].texts
             if not isinstance(t, matplotlib.text.Annotation)]  # arrows are annotations
    assert sorted(boxes) == labels, "one box per walked node"

    fig_timing = timing_figure([8, 16], {"wide": {"rev": [1e-3, 2e-3], "fwd": [1e-3, 4e-3]}},
                               ["n"])
    assert "build machine" in fig_timing.get_suptitle()

    with tempfile.TemporaryDirectory() as tmp:
        for name, figure in [("jacobian", fig_jacobian), ("vjp", fig_vjp), ("graph", fig_graph), ("timing", fig_timing)]:
            path = Path(tmp) / f"{name}.png"
            path.write_bytes(png_bytes(figure))
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
            width_px = int.from_bytes(path.read_bytes()[16:20], "big")
            assert width_px <= MAX_WIDTH_INCHES * DPI + 1, (name, width_px)
        again = png_bytes(fig_graph)
        assert again == (Path(tmp) / "graph.png").read_bytes(), "output is deterministic"
    _check_legibility(fig_jacobian)
    print("✓ every figure kind draws, and each shows what it claims")



# -- Added for the new pages: see-what-autograd-saves-for-backward and
# -- use-python-control-flow-in-a-dynamic-graph (exact counts drawn against a size).

COUNT_STYLES = [dict(marker="o", linestyle="-"), dict(marker="s", linestyle="--"),
                dict(marker="^", linestyle=":")]


def count_figure(xs: Sequence[float], series: dict[str, Sequence[float]], xlabel: str,
                 ylabel: str, title: str = "", *, logx: bool = False) -> Figure:
    """Exact counts (bytes saved, graph nodes) against a size, one line per series.

    Each series has its own marker and line style, so the lines differ without
    colour; the last value of each series is written beside its last point.
    """
    fig, (ax,) = new_figure(height=3.0)
    for style, (name, values) in zip(COUNT_STYLES, series.items()):
        (line,) = ax.plot(xs, values, label=name, linewidth=1.6, **style)
        ax.annotate(f"{values[-1]:,.0f}", (xs[-1], values[-1]), textcoords="offset points",
                    xytext=(6, 0), va="center", fontsize=SMALL, color=text_shade(line.get_color()))
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.margins(x=0.12)
    ax.spines[["top", "right"]].set_visible(False)  # no frame line through the end labels
    ax.grid(True, color="#dddddd")
    ax.legend(fontsize=SMALL)
    if title:
        ax.set_title(title)
    return fig


# -- Figures for the explanation pages reverse-mode-is-a-chain-of-vjps,
# -- forward-mode-jacobian-vector-products, higher-order-derivatives,
# -- where-derivatives-do-not-exist and complex-inputs.

def plain_log_ticks(fig: Figure) -> Figure:
    """Label every log-scaled y axis of ``fig`` with plain numbers: 0.2, 1, 5, not 4×10⁰.

    Ticks are the 1-2-5 values inside each axis's range (at least two of them),
    written with ``:g``; minor ticks are removed. Returns ``fig``.
    """
    from matplotlib.ticker import NullLocator

    for ax in fig.axes:
        if ax.get_yscale() != "log":
            continue
        low, high = ax.get_ylim()
        ticks = [k * 10.0 ** e for e in range(int(np.floor(np.log10(low))) - 1,
                                              int(np.ceil(np.log10(high))) + 1)
                 for k in (1, 2, 5) if low <= k * 10.0 ** e <= high]
        if len(ticks) < 2:
            ticks = [low, high]
        ax.set_yticks(ticks, [f"{t:.2g}" for t in ticks])
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_ylim(low, high)
    return fig


def jvp_figure(J, u) -> Figure:
    """J u as a weighted sum of columns: J, then column j scaled by u_j, then the sum.

    The mirror of ``vjp_figure``: one colour scale, centred at 0, for all three
    panels; the last panel is the single column J u, shaped like y.
    """
    matrix = _as_matrix(J)
    tangent = _as_matrix(u).ravel()
    scaled = matrix * tangent[None, :]
    total = scaled.sum(axis=1, keepdims=True)
    m, n = matrix.shape
    norm = symmetric_norm(matrix, scaled, total)
    fig = Figure(figsize=(MAX_WIDTH_INCHES, 1.4 + 0.55 * m), dpi=DPI,
                 facecolor="white", layout="constrained")
    grid = fig.add_gridspec(1, 3, width_ratios=[n, n, 1])  # equal cells: rows line up
    ax_j, ax_scaled, ax_sum = (fig.add_subplot(grid[0, k]) for k in range(3))
    jacobian_heatmap(ax_j, matrix, "$J$: column $j$ =\nresponse to $x_j$", norm=norm)
    jacobian_heatmap(ax_scaled, scaled, "column $j$ times $u_j$", norm=norm,
                     col_labels=[f"${value:g}\\times$\ncol {j}"
                                 for j, value in enumerate(tangent)])
    jacobian_heatmap(ax_sum, total, "sum: $J u$", norm=norm, col_labels=["$Ju$"])
    return fig


def kinks_figure(curves: dict[str, tuple[object, object, float]]) -> Figure:
    """Functions around 0, each with the slope PyTorch returns at 0 drawn through (0, f(0)).

    ``curves`` maps a panel title to ``(xs, ys, slope_at_0)``: the points of the
    curve and the derivative autograd returned at 0. A finite slope is drawn as a
    dashed orange line through the point; an infinite one as a vertical line;
    ``nan`` as a marker only. The slope is written in the panel's title.
    """
    count = len(curves)
    ncols = min(count, 2)  # two to a row: a title of 10-point monospace needs the room
    nrows = -(-count // ncols)
    fig, axes = new_figure(height=2.4 * nrows, ncols=ncols, nrows=nrows, sharey=False)
    for ax in axes[count:]:
        ax.set_visible(False)
    for ax, (title, (xs, ys, slope)) in zip(axes, curves.items()):
        xs = torch.as_tensor(xs).detach().to(torch.float64).numpy()
        ys = torch.as_tensor(ys).detach().to(torch.float64).numpy()
        slope = float(slope)
        at_zero = float(np.interp(0.0, xs, ys))
        ax.plot(xs, ys, color="#1f4e79", linewidth=2)
        if np.isfinite(slope):
            ax.plot(xs, at_zero + slope * xs, "--", color="#d35400", linewidth=1.5)
        elif np.isinf(slope):
            ax.axvline(0.0, linestyle="--", color="#d35400", linewidth=1.5)
        ax.plot([0.0], [at_zero], "o", color="#d35400", markersize=6)
        ax.set_ylim(min(ys.min(), -0.25) - 0.1, ys.max() + 0.15)
        ax.set_title(f"{title}\nslope at 0: {slope:g}", family="monospace", fontsize=SMALL)
        ax.axhline(0.0, color="#bbbbbb", linewidth=0.6, zorder=0)
        ax.axvline(0.0, color="#bbbbbb", linewidth=0.6, zorder=0)
        ax.set_xlim(min(xs.min(), -0.1), xs.max())
        ax.set_xticks(sorted({round(float(xs.min()), 6), 0.0, round(float(xs.max()), 6)}))
        ax.set_xlabel("$x$")
    return fig


def hessian_figure(H, title: str = "$H_{ij} = \\partial^2 f / \\partial x_i \\partial x_j$",
                   **heatmap_kw) -> Figure:
    """A Hessian as a heatmap with a colour bar, rows and columns both labelled x_i."""
    matrix = _as_matrix(H)
    n = matrix.shape[0]
    labels = [f"$x_{i}$" for i in range(n)]
    return jacobian_figure(matrix, title, row_labels=labels, col_labels=labels,
                           **heatmap_kw)


def complex_gradient_figure(z, grad, loss, title: str = "", *, unit: bool = False,
                            contour_z=None, contour_loss=None, levels=None) -> Figure:
    """Arrows of ``z.grad`` over a grid of complex points, on the loss's contours.

    ``z`` and ``grad`` are complex tensors of the same 2-D shape (the grid and the
    gradient PyTorch left at each point), ``loss`` the real loss at each point.
    Each arrow is drawn from z in the direction (Re grad, Im grad): the real
    gradient (dL/dx, dL/dy), which points uphill, across the contour lines. With
    ``unit=True`` every arrow has the same length (directions only), for losses
    whose gradient varies too much in size to draw to scale. ``contour_z`` and
    ``contour_loss`` (a finer grid and the loss on it) draw smoother contours than
    the arrows' grid; ``levels`` picks the contour values.
    """
    points = torch.as_tensor(z).detach().to(torch.complex128).numpy()
    slopes = torch.as_tensor(grad).detach().to(torch.complex128).numpy()
    values = torch.as_tensor(loss).detach().to(torch.float64).numpy()
    if unit:
        sizes = np.abs(slopes)
        slopes = np.where(sizes > 0, slopes / np.where(sizes > 0, sizes, 1.0), 0.0)
    fig, (ax,) = new_figure(width=4.6, height=4.0)
    if contour_z is not None:
        fine = torch.as_tensor(contour_z).detach().to(torch.complex128).numpy()
        fine_values = torch.as_tensor(contour_loss).detach().to(torch.float64).numpy()
    else:
        fine, fine_values = points, values
    contours = ax.contour(fine.real, fine.imag, fine_values, levels=levels or 10,
                          colors="#888888", linewidths=0.7)
    for label in ax.clabel(contours, fontsize=SMALL, fmt="%.2g"):
        label.set(zorder=3, bbox=dict(boxstyle="round,pad=0.1", facecolor="white",
                                      edgecolor="none", alpha=0.85))
    ax.quiver(points.real, points.imag, slopes.real, slopes.imag, color="#c0392b",
              angles="xy", pivot="tail", width=0.005,
              **(dict(scale_units="xy", scale=1 / (0.8 * _grid_step(points))) if unit else {}))
    ax.set_aspect("equal")
    ax.set_xlabel("$x = \\operatorname{Re} z$")
    ax.set_ylabel("$y = \\operatorname{Im} z$")
    if title:
        ax.set_title(title)
    return fig


def _check_count_figure() -> None:
    fig = count_figure([1, 2, 4], {"plain": [4, 8, 16], "checkpointed": [1, 2, 4]},
                       "depth", "bytes")
    lines = fig.axes[0].get_lines()
    assert [list(line.get_ydata()) for line in lines] == [[4, 8, 16], [1, 2, 4]]
    assert lines[0].get_marker() != lines[1].get_marker(), "series differ without colour"
    assert png_bytes(fig)[:8] == b"\x89PNG\r\n\x1a\n"
    print("✓ count_figure draws each series as given")




def _grid_step(points: np.ndarray) -> float:
    """The smallest distance between neighbouring points of a complex grid."""
    steps = np.abs(np.diff(np.unique(points.real)))
    return float(steps.min()) if steps.size else 1.0


def check_explanation_figures() -> None:
    """Self-test of this block's figures: each draws, and shows what it claims."""
    J = torch.tensor([[-1.0, 0.5, 0.0], [0.0, 0.0, -0.4], [1.0, 0.0, 1.0]])
    u = torch.tensor([1.0, 0.5, -2.0])
    fig = jvp_figure(J, u)
    assert np.allclose(fig.axes[2].images[0].get_array().ravel(), (J @ u).numpy()), \
        "the last panel is J u"
    assert np.allclose(fig.axes[1].images[0].get_array(), (J * u).numpy()), \
        "the middle panel scales column j by u_j"

    xs = torch.linspace(-1, 1, 41)
    fig = kinks_figure({"relu": (xs, torch.relu(xs), 0.0),
                        "sqrt": (xs.clamp(min=0), torch.sqrt(xs.clamp(min=0)), float("inf"))})
    labels = [ax.get_title() for ax in fig.axes]
    assert labels == ["relu\nslope at 0: 0", "sqrt\nslope at 0: inf"], labels

    H = torch.tensor([[6.0, 1.0], [1.0, -12.0]])
    fig = hessian_figure(H)
    assert [t.get_text() for t in fig.axes[0].texts] == ["6.00", "1.00", "1.00", "-12.00"]

    grid = torch.complex(*torch.meshgrid(torch.linspace(-1, 1, 5), torch.linspace(-1, 1, 5),
                                         indexing="xy"))
    fig = complex_gradient_figure(grid, 2 * grid, grid.abs() ** 2)
    arrows = fig.axes[0].collections[-1]
    assert np.allclose(arrows.U, (2 * grid).real.numpy().ravel()), "arrows are Re grad"
    assert np.allclose(arrows.V, (2 * grid).imag.numpy().ravel()), "and Im grad"
    fig = complex_gradient_figure(grid, 2 * grid, grid.abs() ** 2, unit=True)
    lengths = np.hypot(fig.axes[0].collections[-1].U, fig.axes[0].collections[-1].V)
    assert np.allclose(lengths[lengths > 0], 1.0), "unit=True draws directions only"
    for figure in [fig, jvp_figure(J, u)]:
        width_px = int.from_bytes(png_bytes(figure)[16:20], "big")
        assert width_px <= MAX_WIDTH_INCHES * DPI + 1, width_px
    fig = plain_log_ticks(timing_figure([8, 16, 32], {"a": {"r": [3e-3, 4e-3, 6e-3]}}, ["n"]))
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels and all("10^" not in t and "times" not in t for t in labels), labels
    assert all(float(t) > 0 for t in labels), labels
    print("✓ the explanation pages' figures draw, and each shows what it claims")


# -- Figures for how-to/differentiate-elementwise-functions-at-many-points.md ---------
# (branch content-howto-a)

CURVE_STYLES = [dict(color="#1f5fa8", linewidth=1.8),                   # blue, solid
                dict(color="#b8461c", linewidth=1.8, linestyle="--")]   # orange, dashed


def curves_figure(t, curves: dict[str, object], *, xlabel: str = "$t$",
                  title: str = "") -> Figure:
    """Functions of one variable sampled at the points ``t``, one line per curve.

    ``curves`` maps a legend label to the values at ``t`` (tensors are detached).
    Lines differ in dash as well as colour, so they stay apart in grey print; a
    thin line marks 0. Each line's data is exactly the values given.
    """
    points = torch.as_tensor(t).detach().to(torch.float64).cpu().numpy()
    fig, (ax,) = new_figure(height=3.0)
    for index, (label, values) in enumerate(curves.items()):
        style = CURVE_STYLES[index % len(CURVE_STYLES)]
        ax.plot(points, torch.as_tensor(values).detach().to(torch.float64).cpu().numpy(),
                label=label, **style)
    ax.axhline(0, color="#999999", linewidth=0.6)
    ax.set_xlabel(xlabel)
    ax.grid(True, color="#e5e5e5")
    ax.legend(fontsize=SMALL)
    if title:
        ax.set_title(title)
    return fig


def _check_curves_figure() -> None:
    t = torch.linspace(-1.0, 1.0, 5)
    fig = curves_figure(t, {"t": t, "t^2": t**2})
    lines = fig.axes[0].lines
    assert np.allclose(lines[1].get_ydata(), (t**2).numpy()), "each line shows its values"
    assert fig.get_size_inches()[0] <= MAX_WIDTH_INCHES
    assert png_bytes(fig)[:8] == b"\x89PNG\r\n\x1a\n"
    print("✓ curves_figure draws one line per curve, with the values given")


if __name__ == "__main__":  # every block's self-test
    main()
    _check_count_figure()
    check_explanation_figures()
    _check_curves_figure()
