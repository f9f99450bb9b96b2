"""What the engine observer costs per call, against a step's own time.

Times each method of the no-op observer and of Prometheus's (``bpm_metrics``), in one
process and in multiprocess mode (a worker's: every sample written to a memory-mapped file),
and prints nanoseconds per call. A step is one or two transactions (milliseconds): the
observer's share of it is these figures divided by that.

    python -m bench.observer_cost [--calls 200000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from bpm.observe import NO_OBSERVER, HandlerOutcome, Observer


def per_call(fn: Callable[[], None], calls: int) -> float:
    """Nanoseconds per call, the best of three runs."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter_ns() - started) / calls)
    return best


def measure(observer: Observer, calls: int) -> dict[str, float]:
    return {
        "step_done": per_call(lambda: observer.step_done("serviceTask", 0.003), calls),
        "handler_done": per_call(
            lambda: observer.handler_done("noop", 0.001, HandlerOutcome.OK), calls
        ),
        "instance_ended": per_call(
            lambda: observer.instance_ended("order", "COMPLETED", 1.5), calls
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--only", choices=("noop", "prometheus"), default=None)
    args = parser.parse_args()
    if args.only is None:  # each kind in a fresh process: multiprocess mode is set at import
        print(f"ns per call ({args.calls} calls, best of 3)")
        print(f"{'observer':28} {'step_done':>10} {'handler_done':>13} {'instance_ended':>15}")
        with tempfile.TemporaryDirectory() as directory:
            for label, kind, env in (
                ("no-op (default)", "noop", {}),
                ("prometheus, one process", "prometheus", {}),
                ("prometheus, multiprocess", "prometheus", {"PROMETHEUS_MULTIPROC_DIR": directory}),
            ):
                out = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "bench.observer_cost",
                        "--calls",
                        str(args.calls),
                        "--only",
                        kind,
                    ],
                    env={**os.environ, **env},
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.split()
                print(f"{label:28} {out[0]:>10} {out[1]:>13} {out[2]:>15}")
        return
    observer: Observer = NO_OBSERVER
    if args.only == "prometheus":
        from bpm_metrics.observer import process_observer

        observer = process_observer()
    found = measure(observer, args.calls)
    print(f"{found['step_done']:.0f} {found['handler_done']:.0f} {found['instance_ended']:.0f}")


if __name__ == "__main__":
    main()
