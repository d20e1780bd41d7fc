"""Reading and writing artefact files: versioned JSON, written whole or not at all.

Every artefact file names its kind and format version.  A reader checks both
before it trusts a key, so a damaged file, a file of another kind and one
written by a newer hlc each get an error naming the file and saying what to
do, instead of a ``KeyError`` deep inside a stage.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from hlc.errors import UserError

T = TypeVar("T")


class ArtefactError(UserError, ValueError):
    """An artefact file that cannot be read: missing, damaged, of another
    kind, or of a format version this hlc does not know."""


def check_format(document: Any, path: Path | str, kind: str, versions: Iterable[int]) -> dict[str, Any]:
    """``document`` as a dict, once it is an artefact of ``kind`` in one of ``versions``."""
    known = sorted(versions)
    if not isinstance(document, dict):
        raise ArtefactError(f"{path}: not a {kind} file of hlc (it holds a JSON {type(document).__name__}, "
                            f"not an object)")
    found = document.get("format")
    if found is None:
        raise ArtefactError(f"{path}: not a {kind} file of hlc (it has no format version)")
    if found not in known:
        newer = isinstance(found, int) and found > known[-1]
        hint = "it was written by a newer hlc; upgrade hlc" if newer else "build the library again"
        raise ArtefactError(f"{path}: {kind} format {found!r} is not one this hlc reads "
                            f"({', '.join(map(str, known))}); {hint}")
    return document


def read_json(path: Path | str) -> Any:
    """The JSON value in ``path``; an :class:`ArtefactError` naming the file if
    it is missing or is not JSON."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArtefactError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ArtefactError(f"{path}: cannot be read ({error})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ArtefactError(f"{path}:{error.lineno}:{error.colno}: damaged, not JSON ({error.msg})") from None


def load_document(path: Path | str, kind: str, versions: Iterable[int]) -> dict[str, Any]:
    """The top-level object of the artefact file ``path``, its kind and version checked."""
    return check_format(read_json(path), path, kind, versions)


def parse_fields(path: Path | str, kind: str, build: Callable[[], T]) -> T:
    """``build()``, with a missing key or a value of the wrong shape turned
    into an :class:`ArtefactError` naming the file: the version matched, but
    the content does not."""
    try:
        return build()
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        if isinstance(error, ArtefactError):
            raise
        what = f"missing {error}" if isinstance(error, KeyError) else str(error)
        raise ArtefactError(f"{path}: damaged {kind} file ({what})") from None


def write_text_atomically(path: Path | str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it, so
    a reader sees the old file or the new one, never half of one."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def save_document(path: Path | str, document: Mapping[str, Any], *, indent: int | None = 1) -> None:
    """Write an artefact's JSON object to ``path``, whole."""
    write_text_atomically(path, json.dumps(document, indent=indent) + "\n")
