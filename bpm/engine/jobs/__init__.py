"""Jobs: the table of what each job takes and runs, the decoding of its messages, and the
runner that carries out token and task jobs."""
