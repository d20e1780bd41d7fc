"""How a memory-bound call's pace depends on what the process did just before.

A profile times a candidate in blocks of calls back to back; a program that
calls the library does other work between its calls.  On some hosts a call
that streams memory runs at half its pace after a pause of some tens of
milliseconds, whatever the core did meanwhile, and wins its pace back over
several calls: the cold timings a profile drops, and part of what two
timings of one large sort at different moments disagree by.

For each task (a copy of 32 MiB, a gather of as many bytes through a random
permutation, numpy.sort of 2^18 keys), each pause (0, 10, 50 and 200 ms)
and each way of pausing (asleep, or spinning in Python, which streams
nothing), it times five calls back to back, pauses, and times four more:
each of the four over the median of the five, the median over the rounds.
The last line gives the copy's first call after 200 ms asleep:

    copy after 200 ms asleep: first call x.xx, fourth x.xx times its pace
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

PAUSES = (0.0, 0.01, 0.05, 0.2)
AFTER = 4  # calls timed after each pause


def seconds(task: Callable[[], object]) -> float:
    start = time.perf_counter()
    task()
    return time.perf_counter() - start


def spin(pause: float) -> None:
    end = time.perf_counter() + pause
    while time.perf_counter() < end:
        pass


def after_pause(task: Callable[[], object], pause: float, asleep: bool, rounds: int) -> list[float]:
    """The AFTER calls following a pause, each over the pace of the calls before it (medians over rounds)."""
    ratios = []
    for _ in range(rounds):
        pace = statistics.median(seconds(task) for _ in range(5))
        (time.sleep if asleep else spin)(pause)
        ratios.append([seconds(task) / pace for _ in range(AFTER)])
    return [statistics.median(r[i] for r in ratios) for i in range(AFTER)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="pauses per task and setting (default 7)")
    options = parser.parse_args()
    rng = np.random.default_rng(3)
    source = rng.integers(0, 2**28, 1 << 22, dtype=np.int64)  # 32 MiB
    target = np.empty_like(source)
    permutation = rng.permutation(source.size)
    keys = source[: 1 << 18].copy()
    tasks = {"copy": lambda: np.copyto(target, source),
             "gather": lambda: np.take(source, permutation, out=target),
             "sort": lambda: np.sort(keys)}
    print(f"each call after a pause over the pace of the calls before it (median of {options.rounds} rounds)")
    print(f"{'task':7s} {'pause':>9s} {'how':6s}  " + " ".join(f"call {i + 1}" for i in range(AFTER)))
    last = []
    for name, task in tasks.items():
        for _ in range(10):
            task()
        for pause in PAUSES:
            for asleep in (True, False):
                ratios = after_pause(task, pause, asleep, options.rounds)
                print(f"{name:7s} {pause * 1e3:6.0f} ms {'asleep' if asleep else 'spin':6s}  "
                      + " ".join(f"{r:6.2f}" for r in ratios))
                if name == "copy" and pause == PAUSES[-1] and asleep:
                    last = ratios
    print(f"copy after {PAUSES[-1] * 1e3:.0f} ms asleep: first call {last[0]:.2f}, "
          f"fourth {last[-1]:.2f} times its pace")


if __name__ == "__main__":
    main()
