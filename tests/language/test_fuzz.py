"""Fuzzing the front end: whatever the input, it raises HLError or nothing.

Valid descriptions are mutated (truncated, characters deleted or inserted,
lines swapped, identifiers renamed) and random bytes are read as description
files.  The descriptions name no Python module, only files in the test folder,
and no mutation can create a module reference: only `from MODULE import` and
`impl NAME = MODULE.function` import modules, and reaching them would need a
new '.' in a name (so '.' is never inserted) or a module name (so renaming
draws from a fixed vocabulary of names that are not modules).
"""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import hlc
from hlc import HLError

SEEDS = {
    "sorting": textwrap.dedent('''\
        library sorting "Sorting keys"
        uses runtime
        from "sort/support.py" import random_keys, flush, radix_sort
        from "sort/radix.pyx" import radix_pyx
        let H = 2
        model Merge(n) = n * log2(n) + H
        interface sort(keys: mutable int[]) -> int[] """
            Sort in place.
            """
          n = len(keys)
          width = bitwidth(keys)
          reference simple
          impl radix(bpd: int in 1 .. 16) = radix_sort "radix"
            requires n >= 64 and not P > 1
            let passes = ceil(width / bpd)
            time ~ passes + n * passes + (2 ** bpd) * passes + logP * passes
            choose bpd minimizing time over k in 1 .. 16 with bpd = ceil(16 / k)
          impl cython(digits: int in 1 .. 8) = radix_pyx
            time = n * digits + runtime.Block(n)
            choose digits as root of time - Merge(n)
          impl simple = radix_sort
            time ~ n + n * log2(n)
          profile
            for i in 4 .. 12 ++
            for w in 4 .. 32 += 4
            for bpd in 1 .. 16 *= 2
            for digits in 1 .. 8 <<= 1
            let count = 1 << i
            keys = random_keys(count, w, seed)
            setup flush()
            cleanup flush()
            verify 5 repeat 3 ranks 1, 2 timeout 2.5
        '''),
    "scaling": textwrap.dedent("""\
        library linalg
        from "sort/support.py" import random_keys, flush, radix_sort
        let BLOCK = 64
        model Tiles(m, k) = ceil(m / BLOCK) * ceil(k / BLOCK)
        interface scale(a: mutable float64[,], factor: float)
          m = rows(a)
          k = cols(a)
          impl blocked(tile: int in 1 .. 8) = radix_sort
            requires m > 0 or k > 0
            time = Tiles(m, k) * tile + m * k
            memory = m * k
            choose tile minimizing time + tile
          impl plain = flush
            time ~ m * k + 0
          profile
            for e in 2 .. 10 ++
            for tile in 1 .. 8 ++
            a = random_keys(1 << e, 8, seed)
            factor = e / 2
            repeat 2
        """),
    "tiny": textwrap.dedent("""\
        library tiny "A tiny library"
        from "sort/support.py" import flush
        interface add(x: int, y: int) -> int
          total = x + y
          impl direct = flush
            requires total < 1000
            time = 1 + total / 2
        """),
}

# Inserted characters: punctuation, letters, digits, space, newline, quotes and
# a comment sign, but never '.' (see the module doc).
INSERTABLE = list("()[],:=+-*/%<>~!$&|?'\"#\\ \n\tazQZ_019")

# Names to rename identifiers to: keywords, names the seeds define, built-ins
# and names nothing defines; none is a Python module.
VOCABULARY = [
    "library", "interface", "impl", "profile", "for", "in", "choose", "minimizing", "as", "root", "of",
    "over", "with", "uses", "let", "model", "reference", "requires", "mutable", "setup", "cleanup",
    "verify", "repeat", "ranks", "timeout", "not", "and", "or", "time", "memory", "int", "float64",
    "n", "m", "k", "i", "bpd", "width", "keys", "seed", "P", "logP", "H", "Merge", "Block", "runtime",
    "len", "rows", "log2", "ceil", "radix_sort", "flush", "random_keys", "undefined_name",
]

IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def truncate(draw, text: str) -> str:
    return text[:draw(st.integers(0, len(text)))]


def delete_character(draw, text: str) -> str:
    if not text:
        return text
    index = draw(st.integers(0, len(text) - 1))
    return text[:index] + text[index + 1:]


def insert_character(draw, text: str) -> str:
    index = draw(st.integers(0, len(text)))
    return text[:index] + draw(st.sampled_from(INSERTABLE)) + text[index:]


def swap_lines(draw, text: str) -> str:
    lines = text.split("\n")
    first, second = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    lines[first], lines[second] = lines[second], lines[first]
    return "\n".join(lines)


def rename_identifier(draw, text: str) -> str:
    occurrences = list(IDENTIFIER.finditer(text))
    if not occurrences:
        return text
    occurrence = draw(st.sampled_from(occurrences))
    return text[:occurrence.start()] + draw(st.sampled_from(VOCABULARY)) + text[occurrence.end():]


MUTATIONS = [truncate, delete_character, insert_character, swap_lines, rename_identifier]


@st.composite
def mutated_descriptions(draw) -> str:
    """A seed description after one to three random mutations."""
    text = SEEDS[draw(st.sampled_from(sorted(SEEDS)))]
    for mutation in draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3)):
        text = mutation(draw, text)
    return text


def check_file(path: Path) -> None:
    """Parse the file at ``path``; only an HLError may escape."""
    try:
        hlc.parse_file(path, search_path=[])
    except HLError as error:
        assert error.errors, "an HLError lists at least one diagnostic"
        assert all(e.line >= 1 and e.column >= 1 for e in error.errors), error


def test_seeds_are_valid(shared_library_folder):
    for name, text in SEEDS.items():
        library = hlc.parse(text, str(shared_library_folder / "seed.hl"), search_path=[])
        assert library.warnings == (), name


#: Mutated descriptions tried per run: 2,000, or as many as HLC_FUZZ_EXAMPLES
#: says (scripts/test_matrix.py's runs on the other interpreters try fewer:
#: the same parser, on another CPython and other releases of Lark).
TRIES = int(os.environ.get("HLC_FUZZ_EXAMPLES", "2000"))


@settings(max_examples=TRIES, deadline=None)
@given(text=mutated_descriptions())
def test_mutated_description_raises_only_hlerror(shared_library_folder, text):
    path = shared_library_folder / "mutated.hl"
    path.write_text(text)
    check_file(path)


@settings(max_examples=max(1, TRIES // 2), deadline=None)
@given(data=st.one_of(st.binary(max_size=300), st.binary(max_size=300).map(lambda tail: b"library fuzz\n" + tail)))
def test_random_bytes_raise_only_hlerror(shared_library_folder, data):
    path = shared_library_folder / "random.hl"
    path.write_bytes(data)
    check_file(path)
