"""Mass properties and principal axes of a scene's bodies (the ``info`` command).

Every vector and tensor is in the body's own coordinates (axes u1..u3, origin
at the body's ``position`` = the pivot of a pendulum) unless a key ends in
``_lab``. Units: kg, m, kg·m².
"""

from __future__ import annotations

import numpy as np

from ..model.inertia import principal_axes


def body_info(scene) -> list[dict]:
    """One dict per body of the validated ``scene``; fixed/driven bodies without shapes get mass None."""
    scene = scene.checked()
    rows = []
    for i, body in enumerate(scene.bodies):
        U = np.asarray(body.orientation, float)
        row = {"name": body.name, "role": body.role, "pivot_lab": np.asarray(body.position, float).tolist(),
               "dipoles": len(body.dipoles)}
        if body.moving or body.shapes or body.mass_properties is not None:
            mp = body.resolved_mass_properties(f"bodies[{i}]")
            I_piv = mp.inertia_about(np.zeros(3))
            lam, N = principal_axes(mp.inertia)
            lam_p, N_p = principal_axes(I_piv)
            row.update(
                mass=mp.mass,
                center_of_mass=mp.center_of_mass.tolist(),
                center_of_mass_lab=(np.asarray(body.position, float) + U.T @ mp.center_of_mass).tolist(),
                inertia_about_center_of_mass=mp.inertia.tolist(),
                inertia_about_pivot=I_piv.tolist(),
                principal_moments=lam.tolist(),
                principal_axes=N.T.tolist(),          # rows: axis k in body coordinates
                principal_axes_lab=(U.T @ N).T.tolist(),
                principal_moments_about_pivot=lam_p.tolist(),
                principal_axes_about_pivot=N_p.T.tolist(),
            )
        else:
            row["mass"] = None
        rows.append(row)
    return rows


def _fmt(x) -> str:
    return "  ".join(f"{v + 0.0: .6g}" for v in np.ravel(x))  # + 0.0 prints −0 as 0


def format_table(rows: list[dict]) -> str:
    """A readable multi-line report of :func:`body_info` rows."""
    out = []
    for r in rows:
        out.append(f"{r['name']}  [{r['role']}]  pivot (lab, m): {_fmt(r['pivot_lab'])}  dipoles: {r['dipoles']}")
        if r["mass"] is None:
            out.append("  (no mass properties: a field source only)")
            out.append("")
            continue
        out.append(f"  mass (kg): {r['mass']:.6g}")
        out.append(f"  centre of mass (m, body / lab): {_fmt(r['center_of_mass'])}  /  {_fmt(r['center_of_mass_lab'])}")
        for title, key in (("inertia about centre of mass", "inertia_about_center_of_mass"),
                           ("inertia about pivot", "inertia_about_pivot")):
            out.append(f"  {title} (kg·m², body axes):")
            out.extend(f"    {_fmt(line)}" for line in r[key])
        for title, mk, ak in (("about centre of mass", "principal_moments", "principal_axes"),
                              ("about pivot", "principal_moments_about_pivot", "principal_axes_about_pivot")):
            out.append(f"  principal moments and axes {title} (kg·m²; axis in body coordinates):")
            out.extend(f"    I{k + 1} = {m:.6g}   axis {_fmt(a)}" for k, (m, a) in enumerate(zip(r[mk], r[ak])))
        out.append("")
    return "\n".join(out)
