"""bpm: a BPM process engine whose state lives in PostgreSQL and whose work Celery carries."""

from bpm.beans import bean
from bpm.errors import BpmError, BpmnError
from bpm.events import on
from bpm.handlers import HandlerContext, handler

__all__ = ["BpmError", "BpmnError", "HandlerContext", "bean", "handler", "on"]
__version__ = "0.1.0"
