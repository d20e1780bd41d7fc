"""How long the command line takes to start: ``hlc --help`` and ``hlc check``.

A user runs ``hlc check`` after every edit of a description, so it should
answer at once: it parses and checks, and imports none of NumPy, SciPy or
Jinja2 (the stages that need them are imported by the commands that run
them).  Each command is started afresh, the two in turn, and the median of
the runs is printed with Python's own start (``python -c pass``) beside it
for scale: on a busy host all three rise together.

    python benchmarks/cli_start.py [--runs 21] [DESCRIPTION]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 150.0
HEAVY = ("numpy", "scipy", "jinja2")


def seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - started


def heavy_imports(command: list[str]) -> list[str]:
    """The modules of NumPy, SciPy or Jinja2 the command imports (``-X importtime``)."""
    trace = subprocess.run([command[0], "-X", "importtime", *command[1:]], capture_output=True, text=True,
                           cwd=ROOT).stderr
    found = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in trace.splitlines() if "|" in line}
    return sorted(found & set(HEAVY))


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("description", nargs="?", default=str(ROOT / "libraries" / "sort.hl"))
    options.add_argument("--runs", type=int, default=21)
    args = options.parse_args()
    commands = {"python -c pass": [sys.executable, "-c", "pass"],
                "hlc --help": [sys.executable, "-m", "hlc", "--help"],
                "hlc check": [sys.executable, "-m", "hlc", "check", args.description]}
    for command in commands.values():  # warm the file cache and the bytecode
        seconds(command)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, command in commands.items():
            times[name].append(seconds(command))
    medians = {name: 1e3 * statistics.median(values) for name, values in times.items()}
    for name in commands:
        print(f"{name:<16} median {medians[name]:6.1f} ms over {args.runs} runs")
    for name in ("hlc --help", "hlc check"):
        heavy = heavy_imports(commands[name])
        print(f"{name:<16} imports {', '.join(heavy) if heavy else 'none of ' + ', '.join(HEAVY)}")
    worst = max(medians["hlc --help"], medians["hlc check"])
    print(f"hlc --help {medians['hlc --help']:.0f} ms, hlc check {medians['hlc check']:.0f} ms "
          f"(python alone {medians['python -c pass']:.0f} ms): "
          f"{'within' if worst <= GOAL_MS else 'above'} the goal of {GOAL_MS:.0f} ms")


if __name__ == "__main__":
    main()
