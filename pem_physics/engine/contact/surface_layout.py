"""The array layouts the compiled run of a body on a table (:mod:`.surface_kernels`, :mod:`.surface_run_kernels`)
shares with its Python side (:func:`.surface_run.run_compiled`), in a module without numba (an ahead-of-time build
runs without it)."""

# state layout: the first touching shape's contact in mode, shape and slip; the others' (several at once,
# surface_several's State.extra) after S_NEXTRA, EXTRA_W values each (shape, mode, slip (3)), MAX_EXTRA at most
S_T, S_X, S_V, S_L, S_Q, S_MODE, S_SHAPE, S_SLIP = 0, 1, 4, 7, 10, 19, 20, 21
S_NEXTRA, S_EXTRA, EXTRA_W, MAX_EXTRA = 24, 25, 5, 7
NSTATE = S_EXTRA + EXTRA_W * MAX_EXTRA
# modes (surface.MODES in order)
APART, SLIDING, ROLLING = 0, 1, 2
# event kinds (surface's labels: EVENT_KINDS)
IMPACT, IMPACT_SLIDING, IMPACT_ROLLING, STICK, SLIP, REVERSAL, LIFT_OFF = 0, 1, 2, 3, 4, 5, 6
EVENT_KINDS = ("impact", "impact, sliding", "impact, rolling", "stick", "slip", "reversal", "lift-off")
# status codes
OK, FAILED, EVENTS_FULL = 0, 1, 2
# FAILED's info[0]: a second shape reaching the table while one touches, or a contact change while several touch
# (surface_several's settle and transitions, on the reference)
FAIL_SECOND_SHAPE, FAIL_SEVERAL_EVENT = 4.0, 8.0
# par layout
P_MASS, P_INV, P_MOM, P_N, P_Q, P_MU, P_E, P_VISCOUS, P_G, P_REACH, P_INV1 = 0, 1, 4, 7, 10, 13, 14, 15, 16, 19, 20
# surface.py's constants (passed in par, so the two cannot drift apart)
P_TOUCH, P_SLIP_RTOL, P_SPLIT_RTOL, P_MAX_SPLITS, P_MAX_EVENTS = 21, 22, 23, 24, 25
# the table's wall (walls.Plane, Sphere, Cylinder, Box): kind, +1 inside (a container) / −1 outside, centre or a
# point on the axis (3), a cylinder's unit axis (3), radius, a box's half sizes (3) and axes (9, rows)
P_WKIND, P_WSIGN, P_WC, P_WA, P_WR, P_WH, P_WROT = 26, 27, 28, 31, 34, 35, 38
P_REGION_RTOL = 47
# the rolling and spinning resistance's lever arms δ_r, δ_s (m), and ROT_RTOL
P_DR, P_DS, P_ROT_RTOL = 48, 49, 50
# Newton iterations at most for a rim's deepest point on a curved table
P_RIM_ITER = 51
# surface_several's constants: RCOND, FRICTION_LAST, ITERATIONS; CLOSE_RATE (surface_common)
P_RCOND, P_FRICTION_LAST, P_SEV_ITER, P_CLOSE_RATE = 52, 53, 54, 55
NPAR = 56
WALL_PLANE, WALL_SPHERE, WALL_CYLINDER, WALL_BOX = 0, 1, 2, 3
