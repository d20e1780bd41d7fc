"""How long the front end takes on a large description.

Generates one description with 1,000 implementations (each with a parameter,
a precondition, helpers, a fitted model and a choose clause) and prints the
median time to parse it and to parse and check it, over several runs.

    python benchmarks/parse.py [--implementations N] [--runs R]
"""

from __future__ import annotations

import argparse
import statistics
import time

from hlc.language.parse import parse
from hlc.language.parser import parse_syntax


def description(implementations: int) -> str:
    lines = ['library big "A generated description for timing the front end."',
             "from numpy import ones",
             "interface work(data: float64[]) -> float64[]",
             "    n = len(data)",
             "    m = size(data)"]
    for index in range(implementations):
        lines += [
            f"    impl v{index}(block: int in 1 .. {16 + index % 8}) = numpy.sort \"variant {index}\"",
            f"        requires n >= {index % 64}",
            "        let passes = ceil(n / block)",
            "        let cost = 2 ** block",
            "        time ~ 1 + n + passes + cost * passes + n * log2(max(n, 2)) + m * block",
            "        choose block minimizing time",
        ]
    lines += ["    profile",
              "        for i in 4 .. 20 += 2",
              "        for block in 1 .. 16 ++",
              "        data = ones(1 << i)"]
    return "\n".join(lines) + "\n"


def median_seconds(function, runs: int) -> float:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--implementations", type=int, default=1000)
    options.add_argument("--runs", type=int, default=5)
    args = options.parse_args()
    text = description(args.implementations)
    parse_syntax("library warm_up")  # builds the parser tables once, as any first call does
    syntax = median_seconds(lambda: parse_syntax(text, "big.hl"), args.runs)
    checked = median_seconds(lambda: parse(text, "big.hl"), args.runs)
    print(f"description: {args.implementations:,} implementations, {len(text.splitlines()):,} lines, "
          f"{len(text):,} characters")
    print(f"parse (syntax → tree), median of {args.runs}: {syntax:.3f} s")
    print(f"parse + semantic checks,  median of {args.runs}: {checked:.3f} s  (goal: under 2 s)")


if __name__ == "__main__":
    main()
