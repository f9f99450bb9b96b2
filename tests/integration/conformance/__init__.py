"""The BPMN conformance harness that tests/integration/test_bpmn_conformance.py runs.

``corpus`` reads the manifests and audits their fields, ``steps`` parses the harness step
language, ``model`` holds the compiled processes a case deploys, ``logs`` derives the
completion and compensation logs from history, ``driver`` runs the steps against the engine,
``checks`` compares the end of a run with the manifest, and ``differences`` pins where this
engine deliberately differs from a peer. The test module's docstring says what each step and
field means.
"""
