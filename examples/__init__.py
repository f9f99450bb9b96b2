"""Example processes for bpm: definitions (JSON) and the handlers they call.

``bpm demo`` deploys ``order_fulfilment.json`` (handlers: ``examples.order_handlers``) and
``order_saga.json`` (handlers and external worker: ``examples.saga_handlers``); use them as a
template for your own processes.
"""

from pathlib import Path

#: The folder holding the example definitions (it is installed with the package).
EXAMPLES_DIR = Path(__file__).resolve().parent
ORDER_FULFILMENT = EXAMPLES_DIR / "order_fulfilment.json"
ORDER_SAGA = EXAMPLES_DIR / "order_saga.json"

__all__ = ["EXAMPLES_DIR", "ORDER_FULFILMENT", "ORDER_SAGA"]
