"""Jobs: the table of job names and the runner that carries them out."""
