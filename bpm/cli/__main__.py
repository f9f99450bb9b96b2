"""``python -m bpm.cli``: the same as the ``bpm`` console script."""

from bpm.cli.main import main

main()
