"""Counts a World's all-reduces, for the scripts the tests run under mpiexec
(on their PYTHONPATH): how many collectives a call makes is part of its cost."""

from __future__ import annotations

from typing import Any


class ReduceCounter:
    """Wraps ``team.reduce``; ``calls`` is how many were made since."""

    def __init__(self, team: Any):
        self.calls = 0
        self._reduce = team.reduce
        team.reduce = self._counted

    def _counted(self, *arguments: Any, **options: Any) -> Any:
        self.calls += 1
        return self._reduce(*arguments, **options)
