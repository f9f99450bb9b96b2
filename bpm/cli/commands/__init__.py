"""One module per area of the CLI; ``bpm.cli.main`` assembles them into the ``bpm`` group."""
