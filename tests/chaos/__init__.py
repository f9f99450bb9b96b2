"""The chaos suite: real processes under faults (docs/chaos.md)."""
