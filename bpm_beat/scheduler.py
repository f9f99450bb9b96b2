"""Beat's scheduler: Celery's persistent one, which also creates its file's directory.

The schedule file lives in the state directory (``BPM_STATE_DIR``, see
``bpm_workers.config``), which need not exist before beat first starts.
"""

from __future__ import annotations

from pathlib import Path

from celery.beat import PersistentScheduler


class StateDirScheduler(PersistentScheduler):  # type: ignore[misc]
    """Celery's ``PersistentScheduler``, creating the schedule file's directory first."""

    def setup_schedule(self) -> None:
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()
