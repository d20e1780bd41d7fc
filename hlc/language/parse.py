"""The front end's entry points: text or file → checked :class:`Library`.

Parsing reads the description, then the descriptions its ``uses`` name
(found in its folder, then on the search path), each parsed and checked in
turn; the checker (:mod:`hlc.language.check`) then works on the resolved
tree alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from hlc.language import ast
from hlc.language.ast import Library
from hlc.language.check import check
from hlc.language.errors import HLError
from hlc.language.parser import parse_syntax, read_description


def search_path_from_environment() -> list[Path]:
    """Folders named by ``HLC_PATH`` (os.pathsep-separated), searched by ``uses``."""
    return [Path(p) for p in os.environ.get("HLC_PATH", "").split(os.pathsep) if p]


def parse(source: str, filename: str = "<string>", *, search_path: Iterable[Path] | None = None,
          _stack: tuple[str, ...] = ()) -> Library:
    """Parse and check a description given as text.

    Relative source paths resolve against the folder of ``filename`` (the
    current folder for ``"<string>"``); ``uses`` also searches ``search_path``
    (default: the folders in ``HLC_PATH``).  Raises :class:`HLError` listing
    every error.
    """
    folders = search_path_from_environment() if search_path is None else list(search_path)
    syntax = parse_syntax(source, filename)
    used, problems = resolve_uses(syntax, folders, _stack)
    return check(replace(syntax, used=used), problems)


def parse_file(path: str | Path, *, search_path: Iterable[Path] | None = None,
               _stack: tuple[str, ...] = ()) -> Library:
    """Read, parse and check the description file at ``path``."""
    return parse(read_description(path), str(path), search_path=search_path, _stack=_stack)


def find_library(name: str, folders: Iterable[Path]) -> Path | None:
    """The first ``NAME.hl`` in ``folders`` (what ``uses NAME`` refers to)."""
    for folder in folders:
        candidate = Path(folder) / f"{name}.hl"
        if candidate.is_file():
            return candidate
    return None


def resolve_uses(library: Library, search_path: list[Path],
                 stack: tuple[str, ...]) -> tuple[dict[str, Library], list[tuple[ast.Node, str]]]:
    """The libraries ``library`` uses, parsed and checked, by name; and what
    is wrong with its ``uses`` (where, and the message), for the checker to
    report with its own findings.  ``stack``: the libraries whose ``uses``
    led here, to refuse a library that uses itself."""
    used: dict[str, Library] = {}
    problems: list[tuple[ast.Node, str]] = []
    seen: set[str] = set()
    for uses in library.uses:
        if uses.library in seen:
            problems.append((uses, f"library '{uses.library}' is already in 'uses'"))
            continue
        seen.add(uses.library)
        if uses.library == library.name or uses.library in stack:
            problems.append((uses, f"library '{uses.library}' uses itself (through {' → '.join(stack)})"
                             if stack else f"library '{uses.library}' cannot use itself"))
            continue
        folders = [library.directory, *search_path]
        path = find_library(uses.library, folders)
        if path is None:
            where = ", ".join(str(p) for p in folders)
            problems.append((uses, f"uses '{uses.library}': no description {uses.library}.hl in {where} "
                                   f"(add folders to HLC_PATH)"))
            continue
        try:
            found = parse_file(path, search_path=search_path, _stack=(*stack, library.name))
        except HLError as error:
            problems.append((uses, f"uses '{uses.library}': {path} has errors; first: "
                                   f"{error.errors[0].format(context=False)}"))
            continue
        if found.name != uses.library:
            problems.append((uses, f"uses '{uses.library}': {path} describes library '{found.name}'"))
            continue
        used[uses.library] = found
    return used, problems
