"""The viewport overlay's line segments for contacts: every contact sphere and rim, and every wall (world, BU)."""

from __future__ import annotations

import numpy as np

from ...pem_physics.errors import PemError
from .. import bodies, units
from .walls import wall_geometry


def _circles(center: np.ndarray, radius: float, axes: np.ndarray, n: int = 32) -> np.ndarray:
    """Segments (3n,2,3) of three great circles of a sphere (world), in the planes of ``axes`` (3,3) columns."""
    a = np.linspace(0, 2 * np.pi, n + 1)
    segs = []
    for i, j in ((0, 1), (1, 2), (2, 0)):
        ring = center + radius * (np.cos(a)[:, None] * axes[:, i] + np.sin(a)[:, None] * axes[:, j])
        segs.append(np.stack([ring[:-1], ring[1:]], axis=1))
    return np.concatenate(segs)


def _rim(center: np.ndarray, radius: float, axis: np.ndarray, n: int = 48) -> np.ndarray:
    """Segments (n,2,3) of a rim (world): the circle of ``radius`` about ``axis`` (3,) through ``center``."""
    a = axis / np.linalg.norm(axis) if np.linalg.norm(axis) > 0 else np.array([0.0, 0.0, 1.0])
    u = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(a, u)
    t = np.linspace(0, 2 * np.pi, n + 1)
    ring = center + radius * (np.cos(t)[:, None] * u + np.sin(t)[:, None] * v)
    return np.stack([ring[:-1], ring[1:]], axis=1)


def _box_edges(center, half, axes_rows) -> np.ndarray:
    c = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    V = center + (c * half) @ axes_rows
    edges = [(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1]
    return np.array([[V[a], V[b]] for a, b in edges])


def overlay_segments(scene) -> np.ndarray:
    """Line segments (k,2,3), world BU, of every contact sphere (three great circles) and wall outline."""
    segs = []
    for obj in bodies.pem_objects(scene):
        p = obj.pem
        M = units.matrix(obj.matrix_world)
        try:
            R = units.rotation_part(M, obj.name)
            if p.role == "WALL":
                g = wall_geometry(obj, M)
            else:
                s = float(np.linalg.norm(M[:3, :3], axis=0).mean())
                for c in p.contacts:
                    if not c.radius > 0:
                        continue
                    centre = (M @ np.r_[np.array(c.center), 1.0])[:3]
                    if c.kind == "RIM":
                        segs.append(_rim(centre, s * c.radius, R @ np.array(c.axis, float)))
                    else:
                        segs.append(_circles(centre, s * c.radius, R))
                continue
        except PemError:
            continue  # a shape the bake would refuse (with a message) is not drawn
        if g["kind"] == "plane":
            size = np.where(g["size"][:2] > 0, g["size"][:2], 1.0)
            rect = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]], float) * size
            P = g["point"] + rect[:, :1] * R[:, 0] + rect[:, 1:] * R[:, 1]
            segs.append(np.stack([P[:-1], P[1:]], axis=1))
            segs.append(np.array([[g["point"], g["point"] + 0.5 * size.mean() * g["normal"]]]))
        elif g["kind"] == "sphere":
            segs.append(_circles(g["center"], g["radius"], R))
        elif g["kind"] == "cylinder":
            a = np.linspace(0, 2 * np.pi, 33)
            ring = g["radius"] * (np.cos(a)[:, None] * R[:, 0] + np.sin(a)[:, None] * R[:, 1])
            for z in (-g["half_length"], g["half_length"]):
                P = g["point"] + z * g["direction"] + ring
                segs.append(np.stack([P[:-1], P[1:]], axis=1))
            for k in range(0, 32, 8):
                segs.append(np.array([[g["point"] + ring[k] - g["half_length"] * g["direction"],
                                       g["point"] + ring[k] + g["half_length"] * g["direction"]]]))
        else:
            segs.append(_box_edges(g["center"], g["half_sizes"], g["axes"]))
    return np.concatenate(segs) if segs else np.empty((0, 2, 3))
