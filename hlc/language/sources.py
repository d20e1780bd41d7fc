"""What the Python and Cython sources named by a description define.

Checks must tell whether ``from "sort/radix.pyx" import radix_sort`` names
something real without compiling or running the file: ``.py`` files are read
with :mod:`ast`, ``.pyx`` files by their top-level ``def``/``cpdef``/``class``
lines.  Importable modules (``numpy.sort``) are imported, since that is the
only reliable way to know what they hold.
"""

from __future__ import annotations

import ast
import importlib
import re
from functools import lru_cache
from pathlib import Path

SOURCE_SUFFIXES = (".py", ".pyx")

# Top-level Cython definitions: def/cpdef functions (any return type),
# classes, cdef classes, plain assignments and imports.
_PYX_DEFINITION = re.compile(
    r"^(?:(?:cpdef|def)\b[^(=:]*?\b(?P<function>\w+)\s*\("
    r"|(?:cdef\s+)?class\s+(?P<class>\w+)"
    r"|(?P<assigned>\w+)\s*=[^=])",
    re.MULTILINE,
)
_PYX_IMPORT = re.compile(r"^(?:from\s+[\w.]+\s+)?c?import\s+(?P<names>[^#\n]+)", re.MULTILINE)


class SourceError(Exception):
    """A source file or module that cannot be read or does not parse."""


@lru_cache(maxsize=256)
def _definitions(path: Path, modified: float) -> frozenset[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SourceError(f"cannot read {path.name}: {error}") from None
    if path.suffix == ".pyx":
        return _pyx_definitions(text)
    try:
        module = ast.parse(text, filename=str(path))
    except SyntaxError as error:
        where = f" (line {error.lineno})" if error.lineno else ""
        raise SourceError(f"{path.name} does not parse: {error.msg}{where}") from None
    except ValueError as error:  # e.g. NUL bytes
        raise SourceError(f"{path.name} does not parse: {error}") from None
    return _python_definitions(module)


def _python_definitions(module: ast.Module) -> frozenset[str]:
    names: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in statement.names)
    return frozenset(names)


def _pyx_definitions(text: str) -> frozenset[str]:
    names = {next(v for v in match.groups() if v) for match in _PYX_DEFINITION.finditer(text)}
    for match in _PYX_IMPORT.finditer(text):
        for part in match.group("names").split(","):
            words = part.split()
            if words:
                names.add(words[-1].split(".")[0])
    return frozenset(names)


def file_defines(path: Path, name: str) -> bool:
    """Whether the ``.py``/``.pyx`` file at ``path`` defines ``name`` at top level."""
    return name in _definitions(path, path.stat().st_mtime)


@lru_cache(maxsize=256)
def module_problem(module: str) -> str | None:
    """``None`` when ``module`` can be imported, else why not."""
    try:
        importlib.import_module(module)
    except ImportError as error:
        return f"cannot import module '{module}': {error}"
    except Exception as error:  # a broken third-party module must not crash the check
        return f"importing module '{module}' failed: {type(error).__name__}: {error}"
    return None


def attribute_problem(module: str, name: str) -> str | None:
    """``None`` when ``module.name`` exists, else why not (the module imports)."""
    if not hasattr(importlib.import_module(module), name):
        return f"module '{module}' has no attribute '{name}'"
    return None


def split_dotted(dotted: str) -> tuple[str, str]:
    """``numpy.random.shuffle`` → (``numpy.random``, ``shuffle``)."""
    module, _, name = dotted.rpartition(".")
    return module, name
