"""How ``bpm serve`` logs, in every one of its processes.

With ``--workers N`` uvicorn spawns fresh interpreters that inherit no logging set-up: only
the configuration passed to ``uvicorn.run`` is applied in each of them. So the whole of it
lives here, as a ``logging.config.dictConfig`` document, and every process logs its request
lines (and its refusals and faults) as a single-process server does. The process id in each
line tells the servers apart.
"""

from __future__ import annotations

from typing import Any

FORMAT = "bpm-server[%(process)d]: %(levelname)s %(name)s: %(message)s"


def log_config() -> dict[str, Any]:
    """A fresh document each time: uvicorn may write into it."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "default": {"format": FORMAT},
            "access": {"format": FORMAT},
        },
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "stream": "ext://sys.stderr",
            },
        },
        "root": {"handlers": ["stderr"], "level": "INFO"},
        "loggers": {
            # Each logs through the root handler, once.
            "uvicorn": {"level": "INFO", "handlers": [], "propagate": True},
            "uvicorn.error": {"level": "INFO", "handlers": [], "propagate": True},
            "uvicorn.access": {"level": "INFO", "handlers": [], "propagate": True},
            "bpm.server": {"level": "INFO", "handlers": [], "propagate": True},
        },
    }
