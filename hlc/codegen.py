"""What the two code generators share: the template environment, Python
spellings of description names and expressions, and how a generated module
loads the helpers a description imports."""

from __future__ import annotations

import functools
import keyword
from typing import Any

import jinja2

from hlc.language import ast
from hlc.language.expressions import to_python
from hlc.resources import read_text

# Names the generated programs use themselves; user names equal to them get a "_".
_PROGRAM_NAMES = {"math", "harness", "sources"}


def safe(name: str) -> str:
    """A description name as a Python identifier of a generated program."""
    return name + "_" if keyword.iskeyword(name) or name in _PROGRAM_NAMES else name


def py(expression: ast.Expression) -> str:
    """An expression as Python source of a generated program."""
    return to_python(expression, spell_name=safe)


def import_loads(library: ast.Library, sources: str, loader: str) -> list[dict[str, str]]:
    """One ``alias = load`` per import: files through ``sources.load``, modules
    through ``loader`` (both names as the generated module spells them)."""
    loads = []
    for item in library.imports:
        if item.is_file:
            load = f"{sources}.load({item.source!r}, {item.name!r})"
        else:
            load = f"{loader}({item.source!r}, {item.name!r})"
        loads.append({"alias": safe(item.alias), "load": load})
    return loads


def render(template: str, **data: Any) -> str:
    """Render ``templates/<template>``."""
    return _compiled(template).render(**data)


@functools.cache
def _compiled(template: str) -> jinja2.Template:
    """``templates/<template>``, compiled once per process: compiling the
    templates of a build took Jinja 0.46 s, more than the small library's
    profile measured."""
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                     trim_blocks=True, lstrip_blocks=True)
    environment.filters["pyrepr"] = repr
    return environment.from_string(read_text("templates", template))
