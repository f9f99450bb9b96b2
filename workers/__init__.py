"""The Celery runtime: the app, its tasks, and the engine's Celery dispatcher."""

from workers.app import app

__all__ = ["app"]
