"""What the Python and Cython sources named by a description define.

Checks must tell whether ``from "sort/radix.pyx" import radix_sort`` names
something real without compiling or running the file: ``.py`` files are read
with :mod:`ast`, ``.pyx`` files by their top-level ``def``/``cpdef``/``class``
lines.  Installed modules (``numpy.sort``) are found without being imported
where their source tells: a module's file is located the way the import
system would, and the names it binds at top level are read from it,
following ``from … import *``.  Only a module whose names are made at run
time (a module ``__getattr__``, ``globals()``, an extension module) is
imported to see.  So checking a description loads no NumPy, no BLAS and
none of their threads: ``hlc check`` runs in a small address space.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import pkgutil
import re
import sys
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

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
    for statement in _top_level(module.body):
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


#: Names a module source can make at run time, beyond what its statements bind.
_DYNAMIC = re.compile(r"\b(?:globals\(\)|setattr\(|exec\(|__getattr__)")
#: How deep ``from … import *`` chains are followed.
_STAR_DEPTH = 8


def _find_spec(module: str) -> importlib.machinery.ModuleSpec | None:
    """The module's spec, found as the import system would find it but without
    running any package's ``__init__`` (``importlib.util.find_spec`` imports
    the parents of a dotted name)."""
    if module in sys.modules:
        return getattr(sys.modules[module], "__spec__", None) or importlib.machinery.ModuleSpec(module, None)
    parent, _, _ = module.rpartition(".")
    if not parent:
        return importlib.util.find_spec(module)
    outer = _find_spec(parent)
    if outer is None or outer.submodule_search_locations is None:
        return None
    return importlib.machinery.PathFinder.find_spec(module, list(outer.submodule_search_locations))


class _Names(NamedTuple):
    """What a module's source says it binds at top level."""

    names: frozenset[str]
    complete: bool  # False: it may make more at run time (or the source could not be read)
    exported: frozenset[str] | None = None  # its literal __all__, if any: what ``import *`` takes

    def starred(self) -> frozenset[str]:
        """The names ``from module import *`` binds."""
        if self.exported is not None:
            return self.exported
        return frozenset(n for n in self.names if not n.startswith("_"))


#: _static_names's answers by (module, depth, its source file), each with
#: the source files it read (path, modification time, size): reused while
#: none of them changed.  A description of 1,000 implementations that call
#: numpy.sort read NumPy's package source, and what it star-imports, once
#: per implementation: its parse and check took 3.7 s (0.4 s the parse), now 0.6.
_READ: dict[tuple[str, int, str], tuple[tuple[tuple[str, int, int], ...], _Names]] = {}


def _stamp(path: str) -> tuple[str, int, int]:
    """A file's path, modification time and size (zeros where it cannot be read)."""
    try:
        status = Path(path).stat()
    except OSError:
        return path, 0, 0
    return path, status.st_mtime_ns, status.st_size


def _static_names(module: str, depth: int = 0) -> _Names | None:
    """The names ``module`` binds at top level, read from its source, without
    importing it; None when there is no such module."""
    spec = _find_spec(module)
    if spec is None:
        return None
    if module in sys.modules or not spec.origin or not spec.origin.endswith(".py"):
        return _Names(frozenset(), False)  # imported already, built in, or an extension module
    key = (module, depth, spec.origin)
    kept = _READ.get(key)
    if kept is not None and all(_stamp(stamp[0]) == stamp for stamp in kept[0]):
        return kept[1]
    names, read = _read_names(module, spec, depth)
    _READ[key] = (tuple(_stamp(path) for path in read), names)
    return names


def _read_names(module: str, spec: importlib.machinery.ModuleSpec, depth: int) -> tuple[_Names, list[str]]:
    """:func:`_static_names` of a module with a source, and the files it read."""
    read = [spec.origin]
    try:
        text = Path(spec.origin).read_text(encoding="utf-8")
        tree = ast.parse(text, filename=spec.origin)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return _Names(frozenset(), False), read
    names = set(_python_definitions(tree))
    complete = not _DYNAMIC.search(text)
    if spec.submodule_search_locations is not None:  # a package's submodules are its attributes once imported
        names.update(m.name for m in _submodules(spec))
        read += list(spec.submodule_search_locations)  # a submodule added changes its folder's time
    package = module if spec.submodule_search_locations is not None else module.rpartition(".")[0]
    for statement in _top_level(tree.body):
        if isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names):
            source = _absolute(statement, package)
            starred = _static_names(source, depth + 1) if source and depth < _STAR_DEPTH else None
            inner = _find_spec(source) if starred is not None else None
            if inner is not None and (source, depth + 1, inner.origin) in _READ:
                read += [stamp[0] for stamp in _READ[source, depth + 1, inner.origin][0]]
            if starred is None:
                complete = False
                continue
            names.update(starred.starred())
            complete = complete and starred.complete
    names.discard("*")
    return _Names(frozenset(names), complete, _literal_all(tree)), read


def _literal_all(tree: ast.Module) -> frozenset[str] | None:
    """The module's ``__all__`` when it is one literal list or tuple of strings,
    never changed after (NumPy 1.26 extends one with other modules' lists)."""
    found = None
    for statement in _top_level(tree.body):
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                     for t in statement.targets):
            if found is not None:
                return None
            try:
                found = ast.literal_eval(statement.value)
            except ValueError:
                return None
            if not isinstance(found, (list, tuple)) or not all(isinstance(v, str) for v in found):
                return None
        elif any(isinstance(node, ast.Name) and node.id == "__all__" for node in ast.walk(statement)):
            return None  # __all__ += …, __all__.extend(…): made at run time
    return frozenset(found) if found is not None else None


def _submodules(spec: importlib.machinery.ModuleSpec) -> Iterator[pkgutil.ModuleInfo]:
    return pkgutil.iter_modules(list(spec.submodule_search_locations))


def _absolute(statement: ast.ImportFrom, package: str) -> str | None:
    """The module a ``from … import`` statement names, made absolute."""
    if not statement.level:
        return statement.module
    parts = package.split(".") if package else []
    if statement.level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (statement.level - 1)]
    return ".".join(base + ([statement.module] if statement.module else [])) or None


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run when a module is imported: those of its body and of
    the if/try/with blocks in it, not those of functions and classes."""
    for statement in body:
        yield statement
        for block in ("body", "orelse", "finalbody"):
            if isinstance(statement, (ast.If, ast.Try, ast.With)) and hasattr(statement, block):
                yield from _top_level(getattr(statement, block))
        if isinstance(statement, ast.Try):
            for handler in statement.handlers:
                yield from _top_level(handler.body)


@lru_cache(maxsize=256)
def module_problem(module: str) -> str | None:
    """``None`` when ``module`` can be found, else why not.  It is not
    imported: whether it imports is for the build to find out."""
    try:
        found = _static_names(module)
    except (ImportError, ValueError) as error:
        return f"cannot import module '{module}': {error}"
    return None if found is not None else f"cannot import module '{module}': no module named '{module}'"


def attribute_problem(module: str, name: str) -> str | None:
    """``None`` when ``module.name`` exists, else why not (the module imports)."""
    found = _static_names(module)
    if found is not None and (name in found.names or found.complete):
        return None if name in found.names else f"module '{module}' has no attribute '{name}'"
    try:
        imported = importlib.import_module(module)
    except Exception as error:  # a broken third-party module must not crash the check
        return f"importing module '{module}' failed: {type(error).__name__}: {error}"
    if not hasattr(imported, name):
        return f"module '{module}' has no attribute '{name}'"
    return None


def split_dotted(dotted: str) -> tuple[str, str]:
    """``numpy.random.shuffle`` → (``numpy.random``, ``shuffle``)."""
    module, _, name = dotted.rpartition(".")
    return module, name
