"""The engine: node semantics, joins, handler runs, scans and the operator's actions."""
