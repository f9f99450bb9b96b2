"""The Celery runtime: the app, its tasks, and the engine's Celery dispatcher."""

from bpm_workers.app import app

__all__ = ["app"]
