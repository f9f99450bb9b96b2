"""Examples to read and copy, run from a checkout (the working directory is importable for
``BPM_IMPORTS`` and ``--import``): the tutorial's expense approval, starting instances from
Python or from another service, testing a process with ``bpm.testing``.

This folder is not installed: a top-level ``examples`` package would collide with other
distributions that install one. The processes ``bpm demo`` runs are installed, as
``bpm.demo``.
"""
