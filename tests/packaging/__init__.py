"""Tests of what bpm installs: a built wheel in a virtualenv of its own."""
