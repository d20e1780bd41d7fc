"""A progress bar for long work: samples done and time left (rich)."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


class ProgressBar:
    """One bar per rank count; silent when standard error is not a terminal."""

    def __init__(self, title: str):
        self.title = title
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("points"), TimeRemainingColumn(),
                                 console=Console(stderr=True), disable=not sys.stderr.isatty())
        self.tasks: dict[int, int] = {}

    def __enter__(self) -> ProgressBar:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        self.progress.__exit__(*exc_info)

    def update(self, ranks: int, done: int, total: int) -> None:
        if ranks not in self.tasks:
            self.tasks[ranks] = self.progress.add_task(f"{self.title}, P={ranks}", total=total)
        self.progress.update(self.tasks[ranks], completed=done, total=total)
