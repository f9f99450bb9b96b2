"""A clock that tests move by hand: no test sleeps to make time pass.

It lives in ``bpm.testing`` so users' own tests get the same clock; re-exported here for the
project's tests.
"""

from bpm.testing import EPOCH, FakeClock

__all__ = ["EPOCH", "FakeClock"]
