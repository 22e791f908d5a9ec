"""The engines that run a compiled system, apart from the physics they run.

- :mod:`.compiled`: the compiled engine, every method and scene feature, on the kernels of :mod:`.kernels` (the step
  loops a run calls, built from the stages' kernels beside their numpy twins: ``torque_kernels``, ``step_kernels``,
  ``broad_kernels``, ``impact_kernels``);
- :mod:`.groups`: independent bodies stepped in threads; :mod:`.lanes`: ensembles with members in SIMD lanes
  (:mod:`.lanes_kernels`, :mod:`.lanes_layout`); :mod:`.scalar`: one body on Python floats, without numba;
- :mod:`.prebuild`: what a build made ahead of time holds (:mod:`pem_physics.aot` builds and loads it).

The numpy reference (:mod:`..integrators`, :mod:`..torques`, :mod:`..contact`) is the definition each of them
matches; :mod:`..simulate` chooses among them.
"""
