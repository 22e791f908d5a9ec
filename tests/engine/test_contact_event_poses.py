"""The impact log carries every moving body's pose at each impact (EventLog.orientation), for keys at impacts.

Oracles: the geometry of the cradle (at the first impact balls 1 and 2 touch: centres 2r apart, ball 1
hanging straight down), and the records around the impact (the pose lies between them on the swing).
"""

from __future__ import annotations

import numpy as np

from pem_physics import examples, simulate


def test_event_orientation_is_the_pose_at_the_impact():
    scene = examples.newtons_cradle(t_end=0.4)
    traj = simulate(scene)
    ev = traj.events
    assert len(ev.orientation) == len(ev.t) >= 4
    U = np.asarray(ev.orientation[0])
    assert U.shape == (5, 3, 3)
    np.testing.assert_allclose(U @ np.swapaxes(U, -1, -2), np.broadcast_to(np.eye(3), U.shape), atol=1e-12)
    L, r = 0.3, 0.0125
    pivots = np.array([b.position for b in scene.bodies], float)
    X = pivots + np.einsum("i,bij->bj", np.array([0.0, 0.0, -L]), U)  # ball centres
    assert abs(np.linalg.norm(X[0] - X[1]) - 2 * r) < 1e-10  # touching, to the located contact time
    np.testing.assert_allclose(U[0], np.eye(3), atol=1e-9)  # ball 1 hangs straight down when it strikes
    k = np.searchsorted(traj.t, ev.t[0])
    # the pose is a point of the swing between the records around it: angle about y in between
    angle = np.arctan2(traj.orientation[:, 0, 0, 2], traj.orientation[:, 0, 0, 0])
    a_event = np.arctan2(U[0, 0, 2], U[0, 0, 0])
    assert min(angle[k - 1], angle[k]) - 1e-12 <= a_event <= max(angle[k - 1], angle[k]) + 1e-12
    # the log's file form is unchanged: the poses stay in memory
    assert "event_orientation" not in ev.arrays()
