"""What an interrupted build measured, kept for ``hlc build --resume``.

Profiling is most of a build's time, and a profile, adaptive or not,
continues from its samples file alone: the programs skip the points the
file holds, and the adaptive rounds are planned from what it holds
(:mod:`hlc.adaptive`).  So a build interrupted while it profiles (Ctrl-C) or
fits keeps its version folder, samples, compiled sources and all, as
``build/.<lib>.interrupted``, with a record of how it was asked for; the
build in ``build/<lib>`` stays as it was.  ``--resume`` moves that folder
back into place and goes on: with the samples' own seed, rank counts and
mode, and a budget of its own for what it measures next.

The record names the description's and its sources' digests: samples of
other code, or of another loop nest, are not these implementations' costs,
so a description changed since is refused rather than resumed.  A build that
ends, resumed or not, removes what an earlier one kept; a build killed
outright (no interrupt) keeps nothing, and the next build removes what it
left (:func:`hlc.dispatch.build.clean_orphans`).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from hlc.errors import UserError
from hlc.language import ast
from hlc.model.fingerprint import source_digests

#: The record's file, in the kept folder, and the version of its form.
RECORD = "interrupted.json"
FORMAT = 1


class ResumeError(UserError):
    """There is no interrupted build to resume, or not of this description."""


class BuildInterrupted(KeyboardInterrupt):
    """A build was interrupted, and what it measured is kept in ``folder``."""

    def __init__(self, folder: Path):
        super().__init__(f"what it measured is kept in {folder}; add --resume to the same command to continue")
        self.folder = folder


@dataclass(frozen=True)
class Interrupted:
    """How the interrupted build was asked for, and how far it got."""

    sources: dict[str, str]  # the description's and its sources' digests (source_digests)
    seed: int
    ranks: list[int] | None  # as asked (None: the description's)
    quick: bool
    adaptive: bool
    static: dict[str, float] | None
    profiled: bool  # the profile had ended: a resumed build fits at once

    @classmethod
    def read(cls, path: Path) -> Interrupted:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"a record of form {data.get('format')!r}, not {FORMAT}: another version of hlc's")
        return cls(dict(data["sources"]), int(data["seed"]), data["ranks"], bool(data["quick"]),
                   bool(data["adaptive"]), data["static"], bool(data["profiled"]))


def kept_folder(link: Path) -> Path:
    """Where an interrupted build of ``link`` keeps what it measured."""
    return link.parent / f".{link.name}.interrupted"


def keep(version: Path, link: Path, record: Interrupted) -> Path:
    """Keep the interrupted build's ``version`` folder, with ``record``, in
    the place of what an earlier interrupted build kept; returns where."""
    (version / RECORD).write_text(json.dumps({"format": FORMAT, **asdict(record)}, indent=1) + "\n",
                                  encoding="utf-8")
    kept = kept_folder(link)
    discard(link)
    os.replace(version, kept)
    return kept


def take(link: Path, library: ast.Library) -> tuple[Path, Interrupted]:
    """The folder and record an interrupted build of ``library`` into
    ``link`` kept; a ResumeError when there are none, or when the
    description or its sources changed since."""
    kept = kept_folder(link)
    if not (kept / RECORD).is_file():
        raise ResumeError(f"there is no interrupted build of {link} to resume ({kept} does not exist)")
    try:
        record = Interrupted.read(kept / RECORD)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ResumeError(f"{kept / RECORD} cannot be read ({error}): build without --resume") from None
    now = source_digests(library)
    changed = sorted(name for name in record.sources.keys() | now.keys() if record.sources.get(name) != now.get(name))
    if changed:
        raise ResumeError(f"{', '.join(changed)} changed since the build of {link} was interrupted: its samples "
                          f"are not the costs of this code; build without --resume")
    return kept, record


def discard(link: Path) -> None:
    """Remove what an interrupted build of ``link`` kept, if anything."""
    shutil.rmtree(kept_folder(link), ignore_errors=True)
