"""Files in and out.

- :mod:`.loading` — ``load_scene`` by file type (TOML, PEM UDF, Python, ``example:NAME``), meshes.
- :mod:`.scenefile` — the versioned TOML scene format (read, validated); :mod:`.scene_writer` writes it.
- :mod:`.udf` — PEM's UDF files (schema-driven reader); :mod:`.udf_scene` maps them to scenes.
- :mod:`.output` — trajectories as NPZ, CSV and summary JSON; :mod:`.files` atomic writes.
- :mod:`.bake` — trajectories as keyframe values (world matrices about a pivot) for Blender.
- :mod:`.pc2` — PC2 point caches (Blender's Mesh Cache modifier); :mod:`.gas_cache` — a hard-sphere gas
  in a given box and its positions at frame times, for such a cache.

Depends on :mod:`pem_physics.model`, :mod:`pem_physics.engine` and :mod:`pem_physics.gas`.
"""
