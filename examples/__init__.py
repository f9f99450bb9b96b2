"""Example processes for bpm: definitions (JSON, one BPMN) and the handlers they call.

``bpm demo`` deploys ``order_fulfilment.json`` (handlers: ``examples.order_handlers``),
``order_saga.json`` (handlers and external worker: ``examples.saga_handlers``) and
``order_saga.bpmn`` (the same saga as a BPMN 2.0 diagram, same handlers); use them as a template
for your own processes.
"""

from pathlib import Path

#: The folder holding the example definitions (it is installed with the package).
EXAMPLES_DIR = Path(__file__).resolve().parent
ORDER_FULFILMENT = EXAMPLES_DIR / "order_fulfilment.json"
ORDER_SAGA = EXAMPLES_DIR / "order_saga.json"
#: The same saga drawn in BPMN 2.0 (as Camunda Modeler saves it); ``Engine.deploy_bpmn`` reads it.
ORDER_SAGA_BPMN = EXAMPLES_DIR / "order_saga.bpmn"

__all__ = ["EXAMPLES_DIR", "ORDER_FULFILMENT", "ORDER_SAGA", "ORDER_SAGA_BPMN"]
