"""A long simulation run by a modal operator: on a worker thread, with progress, Esc, then applied.

The bake and the gas build share this: ``invoke()`` prepares a plan on the main thread (reading
Blender data), :meth:`ModalJob._start_job` runs the pure computation on a thread (no bpy there),
:meth:`ModalJob.modal` shows its progress in the status bar, stops it on Esc (nothing has been
changed yet, so nothing needs undoing) and, when the thread is done, calls the operator's
``_job_done(context, result, error)`` on the main thread to write the result into the scene.
``execute()`` stays synchronous for scripts and ``blender -b``, which get no modal events.

Esc returns control at once: the thread is told to stop and left to finish on its own (a first bake may be
inside numba's compiler for ~10 s, which cannot be interrupted); its result is discarded, and until it has
ended no other PEM job starts (:func:`busy`: the operators' poll says why), so two runs never overlap.
"""

from __future__ import annotations

import threading
import time

#: Worker threads of PEM jobs, running or finishing after Esc (pruned as they end).
_threads: list = []


def busy() -> str | None:
    """Why a new PEM job cannot start now (one is running, or a cancelled one is still finishing), or None."""
    _threads[:] = [t for t in _threads if t.is_alive()]
    if not _threads:
        return None
    if any(getattr(t, "pem_cancelled", False) for t in _threads):
        return ("A cancelled PEM run is still finishing in the background (the engine's first compile cannot be "
                "interrupted); try again in a few seconds")
    return "A PEM bake or gas build is running; wait for it or press Esc"


class ModalJob:
    """Mixin for a ``bpy.types.Operator``. The operator sets :attr:`job_label` (status-bar text) and
    :attr:`cancel_message`, and defines ``_job_done(context, result, error) -> set``."""

    job_label = "PEM: simulating"
    cancel_message = "Cancelled; nothing was changed"

    _timer = None
    _thread = None

    @classmethod
    def poll(cls, context):
        why = busy()   # one PEM run at a time, a cancelled one included until its thread has ended
        if why is not None:
            cls.poll_message_set(why)
            return False
        return True

    def _start_job(self, context, work) -> set:
        """Run ``work(progress, stop)`` on a worker thread; its return value or exception goes to
        ``_job_done``. ``progress(fraction)`` may be called from the thread; ``stop()`` says Esc was pressed."""
        self._progress = 0.0
        self._stop = False
        self._result = None
        self._error = None

        def run():
            try:
                self._result = work(self._set_progress, lambda: self._stop)
            except BaseException as err:  # handed to the main thread, reported there
                self._error = err

        self._thread = threading.Thread(target=run, daemon=True, name=f"pem-job-{type(self).__name__}")
        self._started = time.perf_counter()
        self._thread.start()
        _threads.append(self._thread)
        wm = context.window_manager
        wm.progress_begin(0, 100)
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _set_progress(self, fraction: float) -> None:
        self._progress = fraction

    def _end_job(self, context) -> None:
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)

    def modal(self, context, event):
        if event.type == "ESC":
            # control comes back now; the thread stops at its next poll (or after a compile) and its result is
            # never applied (this operator has ended), and busy() holds other jobs back until it has
            self._stop = True
            self._thread.pem_cancelled = True
            self._end_job(context)
            self.report({"WARNING"}, self.cancel_message)
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        context.window_manager.progress_update(int(100 * self._progress))
        context.workspace.status_text_set(f"{self.job_label} {100 * self._progress:.0f}%  "
                                          f"({time.perf_counter() - self._started:.1f} s)  Esc cancels")
        if self._thread.is_alive():
            return {"RUNNING_MODAL"}
        self._end_job(context)
        return self._job_done(context, self._result, self._error)
