"""``python -m bench.peers.dbos``: DBOS's figures on their own (see runner.py)."""

from bench.peers.dbos.runner import main

main()
