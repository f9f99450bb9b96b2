"""bpm: a BPM process engine whose state lives in PostgreSQL and whose work Celery carries."""

from bpm.errors import BpmError, BpmnError
from bpm.events import on
from bpm.handlers import HandlerContext, handler

__all__ = ["BpmError", "BpmnError", "HandlerContext", "handler", "on"]
__version__ = "0.1.0"
