"""What the benchmarks that make builds keep of each with ``--keep``: the
parts a refit and a replay read (``benchmarks/refit_replay.py``), so that a
change to the fitter or a description can be judged on those builds later,
timing nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

#: What ``--keep`` keeps of a build: enough to refit it (``hlc fit``,
#: benchmarks/refit_replay.py) and replay its choices, without its compiled
#: modules.
KEPT = ("samples.jsonl", "models.json", "used_models.json", "breakdown.json", "source")


def keep_build(build_folder: Path, target: Path) -> None:
    """Copy the parts of a build that a refit and a replay read (KEPT) to ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    for name in KEPT:
        part = build_folder / name
        if part.is_dir():
            shutil.copytree(part, target / name, dirs_exist_ok=True)
        elif part.is_file():
            shutil.copy2(part, target / name)
