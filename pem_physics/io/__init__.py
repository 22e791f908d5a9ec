"""Files in and out.

- :mod:`.loading` — ``load_scene`` by file type (TOML, PEM UDF, Python, ``example:NAME``), meshes.
- :mod:`.scenefile` — the versioned TOML scene format (read, validate, write).
- :mod:`.udf` — PEM's UDF files (schema-driven reader); :mod:`.udf_scene` maps them to scenes.
- :mod:`.output` — trajectories as NPZ, CSV and summary JSON; :mod:`.files` atomic writes.
- :mod:`.bake` — trajectories as keyframe values (world matrices about a pivot) for Blender.

Depends on :mod:`pem_physics.model` and :mod:`pem_physics.engine`.
"""
