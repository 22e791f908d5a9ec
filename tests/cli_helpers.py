"""Helpers for tests that drive the command line in-process."""

from __future__ import annotations

import os
import signal


class CtrlCProgress:
    """Stands in for ``cli._Progress``: its first update presses Ctrl-C (SIGINT to this process), so the
    command's real SIGINT handler asks the run to stop, as when a user presses the keys mid-run."""

    def __init__(self, enabled):
        self.sent = False

    def __call__(self, fraction):
        if not self.sent:
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)

    def close(self):
        pass
