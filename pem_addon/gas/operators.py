"""The gas's operators: Build Hard-Sphere Gas (modal with progress and Esc; ``execute`` and :func:`build` for
scripts and ``blender -b``) and Delete Gas, with the build's report."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, FloatProperty, IntProperty, StringProperty

from ...pem_physics.errors import Interrupted, PemError
from ..jobs import ModalJob
from ..messages import AddonError
from ..units import typed
from .build import Result, prepare, run
from .objects import GAS_KEY, apply, delete


def build(context, progress=None, stop=None, **settings):
    """prepare → run → apply, synchronously (scripts, ``blender -b``, tests); returns (object, Result)."""
    plan = prepare(context, **settings)
    result = run(plan, progress, stop)
    return apply(plan, result, context), result


#: Set-up time (s) beyond which the report says what took it (the engine's first compile).
SETUP_NOTE_SECONDS = 1.0


def report_text(obj, result: Result) -> str:
    """The build's report: what was made, the whole run's time (and the set-up's share, the engine's first
    compile, when it is noticeable), where the cache is and which stale caches were removed."""
    g = obj[GAS_KEY]
    where = bpy.path.abspath(g["cache"])
    setup = result.total_time - result.info["wall_time"]
    timing = f"{result.total_time:.2f} s" + (f" ({setup:.1f} s of it setting up and compiling the engine, once per "
                                            f"session; {result.info['wall_time']:.2f} s simulating)"
                                            if setup > SETUP_NOTE_SECONDS else "")
    removed = (f"; removed {len(result.removed)} stale cache file(s) of earlier builds of this gas"
               if result.removed else "")
    return (f"Object '{obj.name}': {g['n']} spheres of radius {g['radius']:.4g}, "
            f"{g['frame_end'] - g['frame_start'] + 1} frames, {g['collisions']} collisions in {timing} "
            f"({g['engine']} engine); cache {where}{removed}")


class PEM_OT_gas_build(ModalJob, bpy.types.Operator):
    """Fill a box object with hard spheres, simulate them over the frame range and play them from a point cache
    (Esc cancels and changes nothing)"""

    bl_idname = "pem.gas_build"
    bl_label = "Build Hard-Sphere Gas"
    bl_options = {"REGISTER", "UNDO"}

    # Unset properties take the scene's Hard-Sphere Gas settings (and its frame range).
    box: StringProperty(name="Box", description="Name of the box object (default: the panel's box)")
    n: IntProperty(name="Particles", default=500, soft_min=1, soft_max=100_000)
    packing_fraction: FloatProperty(name="Packing Fraction", default=0.2, soft_min=0.001, soft_max=0.64)
    temperature: FloatProperty(name="Temperature", default=1.0, soft_min=0.0, description="BU²/s² (k_B = m = 1)")
    seed: IntProperty(name="Seed", default=0, min=0)
    periodic: BoolProperty(name="Periodic", default=True)
    frame_start: IntProperty(name="Start Frame", description="Default: the scene's")
    frame_end: IntProperty(name="End Frame", description="Default: the scene's")

    job_label = "PEM gas: simulating"
    cancel_message = "Gas build cancelled; nothing was changed"

    def _settings(self, context) -> dict:
        g = context.scene.pem_gas
        out = {}
        for name in ("n", "packing_fraction", "temperature", "seed", "periodic"):
            out[name] = getattr(self, name) if self.properties.is_property_set(name) else getattr(g, name)
        for name in ("packing_fraction", "temperature"):  # single-precision properties: the decimals typed
            out[name] = typed(out[name])
        for name in ("frame_start", "frame_end"):
            out[name] = getattr(self, name) if self.properties.is_property_set(name) else getattr(context.scene, name)
        if self.box:
            box = bpy.data.objects.get(self.box)
            if box is None:
                raise AddonError(f"Gas box '{self.box}': no object of that name")
        else:
            box = g.box
        out["box"] = box
        return out

    def execute(self, context):
        try:
            obj, result = build(context, **self._settings(context))
        except (PemError, ValueError, OSError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        except KeyboardInterrupt:   # Ctrl-C in a script: apply() removed anything it had made
            self.report({"WARNING"}, "Gas build interrupted; nothing was changed")
            return {"CANCELLED"}
        self.report({"INFO"}, report_text(obj, result))
        return {"FINISHED"}

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        try:
            self._plan = prepare(context, **self._settings(context))
        except PemError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        return self._start_job(context, lambda progress, stop: run(self._plan, progress=progress, stop=stop))

    def _job_done(self, context, result, error) -> set:
        if isinstance(error, Interrupted):
            self.report({"WARNING"}, self.cancel_message)
            return {"CANCELLED"}
        if error is not None:
            self.report({"ERROR"}, str(error) if isinstance(error, PemError) else f"{type(error).__name__}: {error}")
            return {"CANCELLED"}
        try:
            obj = apply(self._plan, result, context)
        except (PemError, ValueError, OSError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, report_text(obj, result))
        return {"FINISHED"}


class PEM_OT_gas_delete(bpy.types.Operator):
    """Delete the active gas object and its cache file"""

    bl_idname = "pem.gas_delete"
    bl_label = "Delete Gas"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.object
        if obj is None or GAS_KEY not in obj:
            cls.poll_message_set("Select a gas object (made by Build Hard-Sphere Gas)")
            return False
        return True

    def execute(self, context):
        obj = context.object
        name = obj.name
        removed, left = delete(obj)
        self.report({"INFO"}, f"Deleted gas '{name}'" + (f" and its cache {removed[0]}" if removed else ""))
        if left is not None:
            self.report({"WARNING"}, left)
        return {"FINISHED"}
