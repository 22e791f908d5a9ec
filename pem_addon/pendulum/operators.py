"""Operators: thin wrappers around the adapters (:mod:`.meshes`, :mod:`.importing`, …) and :mod:`.bake`
(errors → ``self.report``)."""

from __future__ import annotations

import os

import bpy
from bpy.props import BoolProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ...pem_physics.errors import PemError
from .. import bodies, meshes
from ..jobs import ModalJob
from ..lists import OnSelectedItem, RemoveSelectedItem, add_item
from ..messages import AddonError, plural
from . import bake, basin, cache, ghost, importing, plotimage, scenes


def _report_bake(op, context, n: int) -> None:
    """The bake's report: its status and the objects keyed, and each plausibility warning as a WARNING (the scene
    is baked)."""
    sp = context.scene.pem
    baked = set(cache.baked_objects(context.scene))
    keyed = ", ".join(f"'{o.name}'" for o in bodies.pem_objects(context.scene) if o in baked)
    op.report({"INFO"}, f"{sp.status}; {n} keys per channel on {keyed}")
    for line in sp.last_warnings.splitlines():
        op.report({"WARNING"}, line)


def _fail(op, err) -> set:
    op.report({"ERROR"}, bake.user_message(err))
    return {"CANCELLED"}


class PEM_OT_compute_mass(bpy.types.Operator):
    """Compute mass, centre of mass and principal moments of the active object (exact for meshes)"""

    bl_idname = "pem.compute_mass_properties"
    bl_label = "Compute Mass Properties"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def execute(self, context):
        obj = context.object
        notes = []
        try:
            mp, st = meshes.mass_properties(obj, context, notes=notes)
        except PemError as err:
            return _fail(self, err)
        meshes.store_mass_properties(obj, mp, st, notes)
        self.report({"INFO"}, f"Object '{obj.name}': mass {mp.mass:.6g} kg")
        for note in notes:  # computed, but likely not what was meant (overlapping parts, flipped normals)
            self.report({"WARNING"}, note)
        return {"FINISHED"}


class PEM_OT_body_toggle(bpy.types.Operator):
    """Make the object a Magnetic Pendulum body or wall, or stop it being one (its settings are kept)"""

    bl_idname = "pem.body_toggle"
    bl_label = "Magnetic Pendulum"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.object
        if obj is None or obj.type not in meshes.BODY_TYPES:
            cls.poll_message_set("Only meshes, curves, surfaces, text, metaballs and empties can be bodies or walls")
            return False
        return True

    def execute(self, context):
        obj = context.object
        obj.pem.enabled = not obj.pem.enabled
        self.report({"INFO"}, f"Object '{obj.name}' is {'now' if obj.pem.enabled else 'no longer'} a Magnetic "
                              "Pendulum body or wall")
        return {"FINISHED"}


def _deleted_while_running(plans) -> AddonError | None:
    """The refusal when objects of the plans were deleted while a modal bake ran (their names), else None."""
    gone = [name for plan in plans for name in bake.deleted_objects(plan)]
    if not gone:
        return None
    names = ", ".join(f"'{n}'" for n in gone)
    return AddonError(f"Deleted while the bake ran: {names}; nothing was baked")


def _scene_context(context, scene):
    """A context override in which ``scene`` (any scene of the file) is the context's scene, with its first view
    layer: Bake All and Delete All Bakes read and write each scene through it."""
    return context.temp_override(scene=scene, view_layer=scene.view_layers[0])


def simulation_scenes() -> list:
    """Scenes of the file with PEM bodies or a PEM bake, in name order (each is one simulation)."""
    return sorted((s for s in bpy.data.scenes if any(o.pem.enabled for o in s.objects) or cache.is_baked(s)),
                  key=lambda s: s.name)


def _refuse_shared(plans) -> None:
    """AddonError when one object is a body of two of the scenes to bake ([(scene, plan)]): it keeps one pre-bake
    pose, so it can hold one scene's bake."""
    seen = {}
    for scene, plan in plans:
        for obj in plan.objects:
            if obj in seen:
                raise AddonError(f"Object '{obj.name}' is a body of scenes '{seen[obj].name}' and '{scene.name}': "
                                 "it can hold one scene's bake; bake one of them (Bake in that scene)")
            seen[obj] = scene


class PEM_OT_bake(ModalJob, bpy.types.Operator):
    """Simulate the scene's bodies over the simulation's frame range and bake them to keyframes (Esc cancels and
    changes nothing)"""

    bl_idname = "pem.simulate_bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    #: set once the user said yes to a long bake (the dialog's OK runs execute(), which starts the modal bake)
    confirmed: BoolProperty(default=False, options={"HIDDEN", "SKIP_SAVE"})
    to_current_frame: BoolProperty(name="To Current Frame", default=False, options={"SKIP_SAVE"},
                                   description="Bake from the simulation's start up to the current frame only")

    job_label = "PEM: simulating"
    cancel_message = "Bake cancelled; nothing was changed"

    @classmethod
    def description(cls, context, properties):
        if properties.to_current_frame:
            return "Simulate from the simulation's start frame up to the current frame and bake it (Esc cancels)"
        return cls.__doc__

    def _frame_end(self, context):
        return context.scene.frame_current if self.to_current_frame else None

    def execute(self, context):
        if self.confirmed and context.window is not None and not bpy.app.background:
            # OK in the long-bake dialog: run it as the button does, with progress and Esc
            return bpy.ops.pem.simulate_bake("INVOKE_DEFAULT", confirmed=True, to_current_frame=self.to_current_frame)
        try:
            n = bake.bake(context, frame_end=self._frame_end(context))
        except (PemError, ValueError, RuntimeError) as err:
            return _fail(self, err)
        except KeyboardInterrupt:  # Ctrl-C in a script: every change is undone on the way out (bake.apply)
            self.report({"WARNING"}, "Bake interrupted; nothing was changed")
            return {"CANCELLED"}
        _report_bake(self, context, n)
        return {"FINISHED"}

    def invoke(self, context, event):
        try:
            self._plan = bake.prepare(context, self._frame_end(context))
            steps, seconds, measured = bake.estimate(context, self._frame_end(context))
        except PemError as err:
            return _fail(self, err)
        if bake.needs_confirmation(seconds) and not self.confirmed:
            self.confirmed = True
            return context.window_manager.invoke_confirm(
                self, event, title="Long bake", message=bake.confirmation_message(steps, seconds, measured),
                confirm_text="Bake", icon="WARNING")
        return self._start(context)

    def _start(self, context):
        """Run the plan on a worker thread (:class:`.jobs.ModalJob`: progress, Esc, then :meth:`_job_done`)."""
        return self._start_job(context, lambda progress, stop: bake.run(self._plan, progress=progress, stop=stop))

    def _job_done(self, context, result, error) -> set:
        if error is not None:
            return _fail(self, error)
        gone = _deleted_while_running([self._plan])
        if gone is not None:
            return _fail(self, gone)
        try:
            n = bake.apply(self._plan, result, context)
        except (PemError, ValueError, RuntimeError, ReferenceError) as err:
            return _fail(self, err)
        _report_bake(self, context, n)
        return {"FINISHED"}


class PEM_OT_basin_map(ModalJob, bpy.types.Operator):
    """Compute which magnet the bob comes to rest over for every release point of a grid (what pem basin
    computes), and show it as an image on a plane under the pendulum (Esc cancels and changes nothing)"""

    bl_idname = "pem.basin_map"
    bl_label = "Basin Map"
    bl_options = {"REGISTER", "UNDO"}

    job_label = "PEM: basin map"
    cancel_message = "Basin map cancelled; nothing was changed"

    def execute(self, context):
        try:
            plan = basin.prepare(context)
            result = basin.run(plan)
            return self._show(context, plan, result)
        except (PemError, ValueError, RuntimeError) as err:
            return _fail(self, err)

    def invoke(self, context, event):
        try:
            self._plan = basin.prepare(context)
        except PemError as err:
            return _fail(self, err)
        return self._start_job(context, lambda progress, stop: basin.run(self._plan, progress=progress, stop=stop))

    def _job_done(self, context, result, error) -> set:
        if error is not None:
            return _fail(self, error)
        if not result.complete:
            self.report({"WARNING"}, self.cancel_message)
            return {"CANCELLED"}
        try:
            return self._show(context, self._plan, result)
        except (PemError, ValueError, RuntimeError, ReferenceError) as err:
            return _fail(self, err)

    def _show(self, context, plan, result) -> set:
        basin.apply(plan, result, context)
        n = result.label.size
        settled = int((result.label >= 0).sum())
        self.report({"INFO"}, f"Basin map: {result.label.shape[0]}² release points in {result.wall_time:.1f} s, "
                              f"{settled} of {n} at rest over a magnet after {result.t_end:g} s")
        for line in basin.core_basin.unsettled_warnings(n - settled, n, result.t_end, result.complete):
            self.report({"WARNING"}, line.replace("label -1: still moving", "grey: still moving").replace(
                "raise --t-end", "raise Seconds (or lengthen the frame range)").replace("t_end = ", "the end, "))
        return {"FINISHED"}


class PEM_OT_ghost_path_to_curve(bpy.types.Operator):
    """Make the ghost path into curves, one per moving body, that render and stay in the file (a new one replaces
    the last)"""

    bl_idname = "pem.ghost_path_to_curve"
    bl_label = "Ghost Path to Curve"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        try:
            made = ghost.to_curves(context)
        except (PemError, ValueError, RuntimeError) as err:
            return _fail(self, err)
        self.report({"INFO"}, f"Ghost path: {plural(len(made), 'curve')} in '{ghost.CURVES}', "
                              f"{context.scene.pem.ghost_seconds:g} s ahead")
        return {"FINISHED"}


class PEM_OT_clear_bake(bpy.types.Operator):
    """Delete the scene's bake: the baked keys go, every body is back where it was before the bake, with its own
    animation"""

    bl_idname = "pem.clear_bake"
    bl_label = "Delete Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        objs = bake.delete(context.scene)
        if objs:
            self.report({"INFO"}, f"Deleted the bake of {plural(len(objs), 'object')}: "
                                  + ", ".join(f"'{o.name}'" for o in objs))
        else:
            self.report({"INFO"}, f"Scene '{context.scene.name}' has no bake to delete")
        return {"FINISHED"}


class PEM_OT_bake_all(ModalJob, bpy.types.Operator):
    """Bake every scene's simulation that is not baked or is outdated (Esc cancels and changes nothing)"""

    bl_idname = "pem.bake_all"
    bl_label = "Bake All"
    bl_options = {"REGISTER", "UNDO"}

    job_label = "PEM: baking all"
    cancel_message = "Bake All cancelled; nothing was changed"

    def _plans(self, context) -> list:
        """[(scene, plan)] of every scene to bake, all read before any runs (a refusal names its scene)."""
        plans = []
        for scene in simulation_scenes():
            with _scene_context(context, scene):
                if not any(o.pem.enabled for o in scene.objects) or cache.state(bpy.context) == cache.BAKED:
                    continue
                try:
                    plans.append((scene, bake.prepare(bpy.context)))
                except PemError as err:
                    msg = str(err)
                    raise AddonError(msg if f"Scene '{scene.name}'" in msg else f"Scene '{scene.name}': {msg}") from err
        _refuse_shared(plans)
        return plans

    def _apply(self, context, plans, trajs) -> set:
        # every scene's keys checked before any scene is written: a refusal changes no scene
        checked = [bake.checked_keys(plan, traj) for (_, plan), traj in zip(plans, trajs)]
        keyed = []
        for (scene, plan), traj, keys in zip(plans, trajs, checked):
            with _scene_context(context, scene):
                bake.apply(plan, traj, bpy.context, keys)
            keyed.append(f"'{scene.name}'")
        if keyed:
            self.report({"INFO"}, f"Baked {plural(len(keyed), 'scene')}: {', '.join(keyed)}")
        else:
            self.report({"INFO"}, "Every simulation is baked and up to date; nothing to bake")
        return {"FINISHED"}

    def execute(self, context):
        try:
            plans = self._plans(context)
            return self._apply(context, plans, bake.run_all([p for _, p in plans]))
        except (PemError, ValueError, RuntimeError) as err:
            return _fail(self, err)
        except KeyboardInterrupt:
            self.report({"WARNING"}, "Bake All interrupted; nothing was changed")  # the keys are written at the end
            return {"CANCELLED"}

    def invoke(self, context, event):
        try:
            self._plans_read = self._plans(context)
        except PemError as err:
            return _fail(self, err)
        plans = self._plans_read
        return self._start_job(context, lambda progress, stop: bake.run_all([p for _, p in plans], progress, stop))

    def _job_done(self, context, result, error) -> set:
        if error is not None:
            return _fail(self, error)
        gone = _deleted_while_running([plan for _, plan in self._plans_read])
        if gone is not None:
            return _fail(self, gone)
        try:
            return self._apply(context, self._plans_read, result)
        except (PemError, ValueError, RuntimeError, ReferenceError) as err:
            return _fail(self, err)


class PEM_OT_delete_all_bakes(bpy.types.Operator):
    """Delete the bakes of every scene's simulation: every body back where it was before its bake"""

    bl_idname = "pem.delete_all_bakes"
    bl_label = "Delete All Bakes"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        done = []
        for scene in simulation_scenes():
            if bake.delete(scene):
                done.append(f"'{scene.name}'")
        if done:
            self.report({"INFO"}, f"Deleted the bakes of {plural(len(done), 'scene')}: {', '.join(done)}")
        else:
            self.report({"INFO"}, "No scene has a PEM bake to delete")
        return {"FINISHED"}


class PEM_OT_dipole_add(bpy.types.Operator):
    """Add a dipole to the active object"""

    bl_idname = "pem.dipole_add"
    bl_label = "Add Dipole"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def execute(self, context):
        add_item(context.object.pem, "dipoles", "active_dipole").moment = (0.0, 0.0, 1.0)
        return {"FINISHED"}


class PEM_OT_dipole_remove(RemoveSelectedItem, bpy.types.Operator):
    """Remove the selected dipole"""

    bl_idname = "pem.dipole_remove"
    bl_label = "Remove Dipole"
    collection, active = "dipoles", "active_dipole"


class PEM_OT_dipole_duplicate(OnSelectedItem, bpy.types.Operator):
    """Duplicate the selected dipole"""

    bl_idname = "pem.dipole_duplicate"
    bl_label = "Duplicate Dipole"
    collection, active = "dipoles", "active_dipole"

    def execute(self, context):
        p = context.object.pem
        src = p.dipoles[p.active_dipole]
        d = add_item(p, "dipoles", "active_dipole")
        d.position, d.moment = src.position[:], src.moment[:]
        return {"FINISHED"}


#: The first line of every TOML scene file PEM writes (pem_physics.io.scene_writer.dumps): such a file may be
#: replaced by a new export without asking.
_OWN_TOML = "# PEM scene file (format "


def export_refusal(path: str, overwrite: bool) -> str | None:
    """Why the scene may not be exported to ``path``, or None: it must end in .toml (a TOML scene file) or .udf (a
    PEM input file), and an existing file is replaced only if PEM wrote it as a scene file or ``overwrite`` says
    so (as ``python -m pem_physics convert`` refuses an existing output without --force)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".toml", ".udf"):
        return (f"Cannot export to {path}: the file must end in .toml (a PEM scene file) or .udf (a PEM input "
                "file)")
    if os.path.isdir(path):
        return f"Cannot export to {path}: it is a folder; give the file's name"
    if not os.path.lexists(path) or overwrite:
        return None
    if ext == ".toml":
        try:
            with open(path, encoding="utf-8") as fh:
                if fh.readline().startswith(_OWN_TOML):
                    return None
        except (OSError, UnicodeDecodeError):
            pass
    return (f"Cannot export to {path}: the file exists and is not a scene file PEM wrote; choose another name, "
            "or tick Overwrite to replace it")


class PEM_OT_export_scene(bpy.types.Operator, ExportHelper):
    """Export the PEM bodies and settings as a TOML scene file (.toml) or a PEM input file (.udf), for python -m
    pem_physics"""

    bl_idname = "pem.export_scene"
    bl_label = "Export PEM Scene"
    filename_ext = ".toml"
    check_extension = None   # .toml or .udf, as named: no extension is forced on the name
    filter_glob: StringProperty(default="*.toml;*.udf", options={"HIDDEN"})
    overwrite: BoolProperty(name="Overwrite", default=False, options={"SKIP_SAVE"},
                            description="Replace an existing file even if it is not a scene file PEM wrote "
                                        "(a scene file PEM wrote is replaced anyway)")
    udf_method: EnumProperty(name="UDF Integrator", default="pem-rk4", items=[
        ("pem-rk4", "PEM RK4", "PEM's fourth-order Runge–Kutta"),
        ("pem-euler", "PEM Euler", "PEM's Euler method")],
        description="The integrator a .udf file asks PEM for (PEM has these two); a .toml file keeps the scene's")

    def execute(self, context):
        from ...pem_physics.io import scene_writer, udf_write

        why = export_refusal(self.filepath, self.overwrite)
        if why is not None:
            self.report({"ERROR"}, why)
            return {"CANCELLED"}
        try:
            core, _, _ = scenes.build_scene(context)
            if self.filepath.lower().endswith(".udf"):
                udf_write.write_udf(core, self.filepath, method=self.udf_method)
            else:
                scene_writer.save_scene(core, self.filepath)
        except (PemError, OSError) as err:
            return _fail(self, err)
        self.report({"INFO"}, f"Wrote Scene '{context.scene.name}' ({plural(len(core.bodies), 'body', 'bodies')}) "
                              f"to {self.filepath}")
        return {"FINISHED"}


class _ImportBase(ImportHelper):
    bl_options = {"REGISTER", "UNDO"}

    replace_settings: BoolProperty(
        name="Replace Scene Settings", default=True,
        description="Set the scene's Magnetic Pendulum settings (gravity, field, μ₀, friction, integrator, dt, …) "
                    "to the file's; the report lists those that changed. Off: the scene keeps its own")
    adapt_scene: BoolProperty(
        name="Set Frame Rate and Range", default=False,
        description="Change the scene's frame rate (to one the file's dt divides) and its frame range (to the "
                    "file's duration). Off: the scene keeps both; the file's dt is used as it is")

    def load(self, path):
        raise NotImplementedError

    def execute(self, context):
        before = importing.settings_snapshot(context.scene)
        notes = []   # what the Blender scene cannot hold, each by name
        try:
            core = self.load(self.filepath)
            objs = importing.build_objects(core, context, adapt_scene=self.adapt_scene,
                                          replace_settings=self.replace_settings, notes=notes)
        except (PemError, OSError) as err:
            return _fail(self, err)
        self.report({"INFO"}, f"Imported {plural(len(objs), 'body', 'bodies')} from {self.filepath}: "
                              + ", ".join(f"'{o.name}'" for o in objs))
        for note in notes:
            self.report({"WARNING"}, note)
        changed = importing.changed_settings(before, importing.settings_snapshot(context.scene))
        if changed:  # the scene's own settings are overwritten: say which
            self.report({"WARNING"}, f"Scene '{context.scene.name}': the import replaced these settings with the "
                                     f"file's: {', '.join(changed)}")
        elif not self.replace_settings:
            self.report({"INFO"}, f"Scene '{context.scene.name}' kept its own settings (Replace Scene Settings off)")
        return {"FINISHED"}


class PEM_OT_import_scene(bpy.types.Operator, _ImportBase):
    """Import a TOML scene file: objects, pivots, dipoles and settings"""

    bl_idname = "pem.import_scene"
    bl_label = "Import PEM Scene (.toml)"
    filename_ext = ".toml"
    filter_glob: StringProperty(default="*.toml", options={"HIDDEN"})

    def load(self, path):
        from ...pem_physics.io import scenefile

        return scenefile.load_scene(path)


class PEM_OT_import_udf(bpy.types.Operator, _ImportBase):
    """Import an input file of the original PEM engine (.udf)"""

    bl_idname = "pem.import_udf"
    bl_label = "Import PEM UDF (.udf)"
    filename_ext = ".udf"
    filter_glob: StringProperty(default="*.udf", options={"HIDDEN"})

    def load(self, path):
        from ...pem_physics.io import udf_scene

        return udf_scene.load_scene(path)


class PEM_OT_plot(bpy.types.Operator):
    """Plot the last bake's energies into an image (shown in an Image Editor if one is open)"""

    bl_idname = "pem.plot_diagnostics"
    bl_label = "Plot Diagnostics"

    def execute(self, context):
        data = context.scene.get("pem_diagnostics")
        if data is None:
            return _fail(self, AddonError(f"Scene '{context.scene.name}' has no bake to plot yet"))
        img = plotimage.energy_image(data, name="PEM Diagnostics")
        for area in (context.screen.areas if context.screen else []):
            if area.type == "IMAGE_EDITOR":
                area.spaces.active.image = img
        self.report({"INFO"}, f"Plotted the last bake of Scene '{context.scene.name}' into image '{img.name}'")
        return {"FINISHED"}


def _menu_import(self, context):
    self.layout.operator(PEM_OT_import_scene.bl_idname, text="PEM Scene (.toml)")
    self.layout.operator(PEM_OT_import_udf.bl_idname, text="PEM UDF (.udf)")


def _menu_export(self, context):
    self.layout.operator(PEM_OT_export_scene.bl_idname, text="PEM Scene (.toml, .udf)")


classes = (PEM_OT_compute_mass, PEM_OT_body_toggle, PEM_OT_bake, PEM_OT_basin_map, PEM_OT_ghost_path_to_curve,
           PEM_OT_clear_bake, PEM_OT_bake_all, PEM_OT_delete_all_bakes, PEM_OT_dipole_add, PEM_OT_dipole_remove,
           PEM_OT_dipole_duplicate, PEM_OT_export_scene, PEM_OT_import_scene, PEM_OT_import_udf, PEM_OT_plot)
_register, _unregister = bpy.utils.register_classes_factory(classes)


def register():
    _register()
    bpy.types.TOPBAR_MT_file_import.append(_menu_import)
    bpy.types.TOPBAR_MT_file_export.append(_menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(_menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import)
    _unregister()
