"""Where a build's time goes, by activity.

A build spends its time measuring (the timed calls whose timings it keeps)
and on everything that makes the measurements trustworthy or possible: the
untimed calls that warm the caches before each timing, the leading timings
of a block dropped because they ran slower than the rest (cold), the
timings that size the repeat count, the calls whose results are checked,
building the arguments, waiting for a busy host, the timings dropped
because the host slowed down while they ran, starting processes,
compiling, fitting, and the command's own start (the interpreter and the
modules it loads).  Only the
first is what a build is for; this account says how large the rest is, so
that it can be seen and cut.

The profiling program keeps one account per run and writes it into the
samples file (a resumed run adds its own); the build adds what the parent
spent and records the whole in the build folder.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hlc.artefacts.samples import Account

#: What a profiling program's time is spent on, in the order they are shown.
MEASURING = "measuring"
PROGRAM = (MEASURING, "warm-up", "cold timings", "sizing", "checks", "inputs", "host waits", "retaken")
#: What the build itself spends, around the programs.
BUILD = ("start", "compile", "process starts", "restarts", "fit", "planning", "dispatch module")
#: The rest of a program's or a build's wall time.
OTHER = "other"
ACTIVITIES = PROGRAM + BUILD + (OTHER,)
#: A process older than this is not a command's: a session that builds
#: from Python counts from the build's call, not from its own start.
COMMAND_AGE = 600.0
_IMPORTED = time.monotonic()


def process_started() -> float:
    """The ``time.monotonic`` reading at which this process began, where the
    system says (Linux's ``/proc``), else when this module was loaded; now,
    for a process older than COMMAND_AGE.

    A command's time is the user's wait, and it begins before any of the
    command's own code runs: the interpreter reads its modules first.  From
    a disk whose cache the machine had dropped, the modules of ``hlc
    build`` took 4.3 s to load against 0.6 s from memory; after a test
    suite had filled that cache with other files, a sort build was called
    7.8 s after its process began, and took 62.6 s by the clock while
    counting 54.3 s from its call."""
    now = time.monotonic()
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # starttime, the 22nd field: ticks after boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORTED
    if age > COMMAND_AGE:  # not a command's process: count from now
        return now
    return now - age if age >= 0.0 else _IMPORTED


@dataclass
class Breakdown:
    """Seconds by activity, and the wall time they are part of."""

    seconds: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0
    restarts: int = 0

    nested: float = field(default=0.0, repr=False, compare=False)  # seconds counted inside the open block

    def add(self, activity: str, seconds: float) -> None:
        """Count ``seconds`` as ``activity`` (inside a ``spending`` block, out of that block's time)."""
        self._count(activity, seconds)
        self.nested += seconds

    def move(self, source: str, target: str, seconds: float) -> None:
        """Count ``seconds`` already counted as ``source`` as ``target`` instead."""
        self._count(source, -seconds)
        self._count(target, seconds)

    def _count(self, activity: str, seconds: float) -> None:
        if activity not in ACTIVITIES:
            raise ValueError(f"activity: {activity!r} is none of {', '.join(ACTIVITIES)}")
        self.seconds[activity] = self.seconds.get(activity, 0.0) + seconds

    @contextmanager
    def spending(self, activity: str) -> Iterator[None]:
        """Count the time the block takes as ``activity``, less what is counted
        inside it as something else (blocks nest)."""
        start = time.perf_counter()
        outer, self.nested = self.nested, 0.0
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self._count(activity, max(elapsed - self.nested, 0.0))
            self.nested = outer + elapsed

    def merge(self, other: Breakdown, *, wall: bool = True) -> None:
        """Add another account's seconds (and its wall time, unless it is part of this one's)."""
        for activity, seconds in other.seconds.items():
            self._count(activity, seconds)
        self.restarts += other.restarts
        if wall:
            self.wall += other.wall

    @property
    def accounted(self) -> float:
        return sum(seconds for activity, seconds in self.seconds.items() if activity != OTHER)

    def closed(self) -> Breakdown:
        """This account with the unaccounted part of its wall time as OTHER."""
        seconds = {a: s for a, s in self.seconds.items() if a != OTHER}
        rest = self.wall - self.accounted
        if rest > 0:
            seconds[OTHER] = rest
        return Breakdown(seconds, max(self.wall, sum(seconds.values())), self.restarts)

    @property
    def measuring_share(self) -> float:
        """The share of the wall time spent in timed calls."""
        return self.seconds.get(MEASURING, 0.0) / self.wall if self.wall > 0 else 0.0

    def as_dict(self) -> dict:
        return {"wall": round(self.wall, 3), "restarts": self.restarts,
                "seconds": {a: round(s, 3) for a, s in self.seconds.items()}}

    @classmethod
    def from_dict(cls, record: dict) -> Breakdown:
        return cls({a: float(s) for a, s in record.get("seconds", {}).items()}, float(record.get("wall", 0.0)),
                   int(record.get("restarts", 0)))

    @classmethod
    def of_account(cls, account: Account) -> Breakdown:
        """A program's account, as its samples file holds it."""
        return cls(dict(account.seconds), account.wall, account.restarts)

    @classmethod
    def of_samples(cls, accounts: Iterable[Account]) -> Breakdown:
        """The programs' accounts in a samples file (its ``accounts``), added up."""
        total = cls()
        for account in accounts:
            total.merge(cls.of_account(account))
        return total

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.as_dict(), indent=1) + "\n", encoding="utf-8")

    def text(self, title: str = "time") -> str:
        """One line per activity, largest first: seconds and share of the wall time."""
        closed = self.closed()
        lines = [f"{title}: {closed.wall:.1f} s, {100 * closed.measuring_share:.0f}% of it measuring"]
        for activity in sorted(closed.seconds, key=lambda a: -closed.seconds[a]):
            seconds = closed.seconds[activity]
            note = f" ({self.restarts} restart{'s' if self.restarts != 1 else ''})" \
                if activity == "restarts" and self.restarts else ""
            share = 100 * seconds / closed.wall if closed.wall > 0 else 0.0
            lines.append(f"  {activity:<16} {seconds:8.1f} s {share:5.1f}%{note}")
        return "\n".join(lines)
