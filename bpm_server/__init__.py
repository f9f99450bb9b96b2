"""bpm's HTTP API: Camunda 7's REST API, as far as bpm serves it, under ``/engine-rest``.

It calls only the engine's public facade (``bpm.engine.Engine``); ``bpm`` itself never imports
it or its HTTP framework. ``bpm serve`` runs it (``create_app`` in ``bpm_server.app``).
"""
