"""The processes ``bpm demo`` runs: their definitions (JSON, one BPMN) and the handlers they
call, installed with bpm so the demo works from a wheel.

``order_fulfilment.json`` (handlers: ``bpm.demo.order_handlers``), ``order_saga.json``
(handlers and external worker: ``bpm.demo.saga_handlers``), ``order_saga.bpmn`` (the same
saga as a BPMN 2.0 diagram, same handlers) and ``order_review.bpmn`` (a user task with a
form, which ``bpm demo --serve`` leaves waiting in the tasklist); use them as a template for
your own processes.
They live inside the ``bpm`` package because a top-level ``examples`` package would collide
with other distributions that install one (the Camunda external task client does).
"""

from pathlib import Path

#: The folder holding the demo's definitions (installed as package data).
DEMO_DIR = Path(__file__).resolve().parent
ORDER_FULFILMENT = DEMO_DIR / "order_fulfilment.json"
ORDER_SAGA = DEMO_DIR / "order_saga.json"
#: The same saga drawn in BPMN 2.0 (as Camunda Modeler saves it); ``Engine.deploy_bpmn`` reads it.
ORDER_SAGA_BPMN = DEMO_DIR / "order_saga.bpmn"
#: An order a clerk reviews through a form (Camunda Modeler's BPMN, with its diagram).
ORDER_REVIEW_BPMN = DEMO_DIR / "order_review.bpmn"

__all__ = ["DEMO_DIR", "ORDER_FULFILMENT", "ORDER_REVIEW_BPMN", "ORDER_SAGA", "ORDER_SAGA_BPMN"]
