"""Where the grammar and the templates are read from.

They live at the top of the source tree (``grammar/``, ``templates/``) and are
installed as the package data ``hlc.grammar`` and ``hlc.templates``; a
checkout is used directly, an installed wheel through importlib.resources.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_TREE = Path(__file__).resolve().parent.parent


def read_text(folder: str, name: str) -> str:
    """Text of ``folder/name`` (``folder`` is "grammar" or "templates")."""
    in_tree = _TREE / folder / name
    if in_tree.is_file():
        return in_tree.read_text(encoding="utf-8")
    return (resources.files(f"hlc.{folder}") / name).read_text(encoding="utf-8")
