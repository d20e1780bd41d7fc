"""The front end's entry points: text or file → checked :class:`Library`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hlc.language.ast import Library
from hlc.language.check import check, search_path_from_environment
from hlc.language.parser import parse_syntax, read_description


def parse(source: str, filename: str = "<string>", *, search_path: Iterable[Path] | None = None,
          _stack: tuple[str, ...] = ()) -> Library:
    """Parse and check a description given as text.

    Relative source paths resolve against the folder of ``filename`` (the
    current folder for ``"<string>"``); ``uses`` also searches ``search_path``
    (default: the folders in ``HLC_PATH``).  Raises :class:`HLError` listing
    every error.
    """
    if search_path is None:
        search_path = search_path_from_environment()
    return check(parse_syntax(source, filename), list(search_path), _stack)


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
