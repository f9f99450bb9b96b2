"""The ``bpm`` command line: operate the engine from a shell or a script.

Human output uses rich tables and colour on a terminal and plain text otherwise; every command
that shows data also takes ``--json`` and prints one JSON document whose field names are stable
(runtime spec, "CLI"). Bad input ends with one line on stderr, ``error: <message>``, and a
non-zero exit code, never a traceback.
"""
