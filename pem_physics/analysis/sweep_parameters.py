"""The parameters a sweep can vary: name → (SI unit, meaning). A module of its own so that the command
line lists them without importing the sweep machinery (:mod:`.sweep`)."""

PARAMETERS = {
    "friction": ("N·m·s", "pivot friction coefficient c"),
    "field": ("T", "uniform field strength along the scene's field direction"),
    "field.x": ("T", "uniform field, lab x component"),
    "field.y": ("T", "uniform field, lab y component"),
    "field.z": ("T", "uniform field, lab z component"),
    "release.x": ("m", "lab x of the pendulum's bob at release"),
    "release.y": ("m", "lab y of the pendulum's bob at release"),
    "omega.x": ("rad/s", "initial angular velocity, lab x"),
    "omega.y": ("rad/s", "initial angular velocity, lab y"),
    "omega.z": ("rad/s", "initial angular velocity, lab z"),
    "omega_body.1": ("rad/s", "initial angular velocity along body axis u1"),
    "omega_body.2": ("rad/s", "initial angular velocity along body axis u2"),
    "omega_body.3": ("rad/s", "initial angular velocity along body axis u3"),
}
