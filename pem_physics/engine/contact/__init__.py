"""The contact stage: what happens where bodies touch each other, walls and tables (theory §7).

One module per part, as MuJoCo keeps its collision pipeline apart:

- :mod:`.walls` — static walls (plane, sphere, cylinder, box, user-defined, moving): gaps, normals, derivatives.
- :mod:`.events` — event location inside a step (Brent's method; first crossings and grazing dips).
- :mod:`.impulses` — impulses at a contact (effective mass, restitution, Coulomb friction) and simultaneous
  contacts resolved in a fixed order.
- :mod:`.model` — a scene's contact model (spheres, walls, pairs and the pair rule for e and μ; the event log), and
  :mod:`.bounds`, how fast its spheres can move (the grazing check's and merged flight's constants).
- :mod:`.driver` — the impact driver of scenes (``contact_model = "impacts"``): bodies with contact spheres
  bouncing off each other and off walls, resting contacts, the compiled kernels' hand-over.
- :mod:`.surface` — a rigid body on a table in persistent contact that slides, rolls and lifts off
  (``contact_model = "surface"``), and :mod:`.surface_scene`, which runs a scene on it.
- :mod:`.particles` — the seeds' sphere simulator (spheres held on walls by the constraint force).
"""
