"""Plot Diagnostics: axes with numbers and units, a legend, the energy balance (not the drift) below."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy", reason="needs Blender's Python module (bpy)")

from .test_addon import pem, pendulum_setup  # noqa: E402, F401


def ink(img, x0, x1, y0, y1) -> bool:
    """Whether any dark (text) pixel lies in the rectangle."""
    return bool((img[max(y0, 0):y1, max(x0, 0):x1, :3].max(axis=-1) < 0.3).any())


def test_chart_has_numbered_axes_units_and_a_legend(pem, ext):  # noqa: F811
    plot = importlib.import_module(f"{ext.__name__}.pem_addon.pendulum.plotimage")
    obj, _ = pendulum_setup()
    bpy.context.scene.pem.friction = 1e-3
    assert bpy.ops.pem.simulate_bake() == {"FINISHED"}
    data = bpy.context.scene["pem_diagnostics"].to_dict()
    img, layout = plot.chart(data)
    E = np.asarray(data["total"])
    K = np.asarray(data["kinetic"])
    P = np.asarray(data["gravity"]) + np.asarray(data["field"]) + np.asarray(data["dipole"])
    # y ticks of the energy panel cover the energies, at a 1/2/5·10^k step, and their labels read back
    yt = layout["top"]["y"]
    lo, hi = min(E.min(), K.min(), P.min()), max(E.max(), K.max(), P.max())
    assert yt.min() <= lo + (hi - lo) * 0.3 and yt.max() >= hi - (hi - lo) * 0.3 and len(yt) >= 3
    step = np.diff(yt)
    np.testing.assert_allclose(step, step[0], rtol=1e-9)
    mantissa = step[0] / 10 ** math.floor(math.log10(step[0]))
    assert min(abs(mantissa - m) for m in (1, 2, 5)) < 1e-9
    for v in yt:
        assert float(plot.tick_label(v)) == pytest.approx(v, rel=1e-2, abs=1e-12 * abs(step[0]))
    # numbers drawn beside every tick, time numbers and the axis titles under the lower panel
    frac = (yt - (lo - 0.05 * (hi - lo))) / (1.1 * (hi - lo))
    y0, y1 = plot.BOTTOM + (plot.HEIGHT - plot.TOP - plot.BOTTOM - plot.GAP) // 3 + plot.GAP, plot.HEIGHT - plot.TOP
    for f in frac:
        y = int(y0 + f * (y1 - y0))
        assert ink(img, 0, plot.LEFT - 8, y - 8, y + 8), f"no tick number at row {y}"
    assert ink(img, plot.LEFT, plot.WIDTH - plot.RIGHT, plot.BOTTOM - 26, plot.BOTTOM - 8)   # time numbers
    assert ink(img, plot.LEFT, plot.WIDTH - plot.RIGHT, plot.BOTTOM - 48, plot.BOTTOM - 30)  # "time (s)"
    # the legend names the three curves in their colours
    assert [name for name, _, _ in layout["legend"]] == ["kinetic", "potential", "total"]
    for name, color, (lx0, ly0, lx1, ly1) in layout["legend"]:
        np.testing.assert_allclose(img[ly0:ly1, lx0:lx1].reshape(-1, 4), np.broadcast_to(color, ((ly1 - ly0) *
                                   (lx1 - lx0), 4)), err_msg=name)
        assert ink(img, lx1 + 5, lx1 + 5 + plot.text_width(name) + 10, ly0 - 6, ly1 + 12) or name == "total"
    # the lower panel is the energy balance: friction work counted, so it stays far below the friction loss
    W = np.asarray(data["friction_work"])
    assert W[-1] > 0
    balance = np.abs(E + W - E[0]).max()
    assert balance < 0.01 * W[-1]
    assert bpy.ops.pem.plot_diagnostics() == {"FINISHED"}
