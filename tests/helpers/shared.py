"""Where the shared test material is: ``../shared`` beside the repository's root.

Users never see it; tests that read it skip, saying why, when it is not there.
"""

from __future__ import annotations

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
SHARED = REPOSITORY.parent / "shared"
CONFORMANCE = SHARED / "conformance"
MISSING = f"the shared conformance corpus is not at {CONFORMANCE} (../shared beside the repository)"
