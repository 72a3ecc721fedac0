"""The site's figures: one style for every picture a page draws at build time.

Pages call these functions with the tensors they just computed, so a figure can
never drift from the numbers beside it. Every function returns a
``matplotlib.figure.Figure`` that is not registered with ``pyplot`` (nothing is
displayed twice, nothing needs closing); ``show`` renders it as a PNG output.

Style: a white background (legible in furo's dark theme too), a diverging
colormap centred at 0 (blue negative, white zero, red positive), values written
into the cells of small matrices, at most 6.5 inches wide at 110 dpi.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed; pages show PNG bytes via `show`

import matplotlib.colors
import matplotlib.text
import numpy as np
import torch
from matplotlib.figure import Figure

DPI = 110
MAX_WIDTH_INCHES = 6.5
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


def symmetric_norm(*matrices) -> matplotlib.colors.Normalize:
    """A colour scale centred at 0 that covers every given matrix."""
    largest = max(float(np.abs(_as_matrix(m)).max()) for m in matrices)
    largest = largest or 1.0
    return matplotlib.colors.Normalize(vmin=-largest, vmax=largest)


def jacobian_heatmap(ax, J, title: str, *, row_labels: Sequence[str] | None = None,
                     col_labels: Sequence[str] | None = None,
                     norm: matplotlib.colors.Normalize | None = None,
                     annotate: bool | None = None, fmt: str = "{:.2f}"):
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
                ax.text(j, i, fmt.format(value + 0.0), ha="center", va="center",
                        fontsize=8, color="white" if strong else "black")
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
    fig, axes = new_figure(height=3.0 * nrows, ncols=ncols, nrows=nrows)
    for ax, (title, J) in zip(axes, named_jacobians.items()):
        jacobian_heatmap(ax, J, title)
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
    jacobian_heatmap(ax_j, matrix, "$J$: row $i$ = gradient of $y_i$", norm=norm)
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
            position[node_id] = ((k + 1) / (len(ids) + 1), -level)
    for parent, child in edges:
        skips = depth[child] - depth[parent] > 1  # bend long arrows around boxes
        ax.annotate("", xy=position[child], xytext=position[parent],
                    arrowprops=dict(arrowstyle="-|>", color="#34495e", shrinkA=14,
                                    shrinkB=14, linewidth=1.2,
                                    connectionstyle=f"arc3,rad={-0.35 if skips else 0}"))
    for node_id, label in nodes.items():
        style = LEAF_BOX_STYLE if label.startswith("AccumulateGrad") else BOX_STYLE
        ax.text(*position[node_id], label, ha="center", va="center", fontsize=9,
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
        ax.legend(fontsize=8)
    axes[0].set_ylabel("time (ms)")
    fig.suptitle("measured on the build machine", fontsize=9, color="#555555")
    return fig


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes, without a timestamp or version in the metadata."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, facecolor="white",
                metadata={"Software": None})
    return buffer.getvalue()


def show(fig: Figure) -> None:
    """Display the figure as one PNG output of the current notebook cell."""
    from IPython.display import Image, display

    display(Image(data=png_bytes(fig), format="png"))


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
    print("✓ every figure kind draws, and each shows what it claims")


if __name__ == "__main__":
    main()


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
    ax.legend(fontsize=8)
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


if __name__ == "__main__":
    _check_curves_figure()
