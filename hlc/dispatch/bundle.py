"""What makes a build folder a package of its own: its copy of the
description and the sources it calls, a stub for editors, and the metadata
``pip install`` reads.

A build calls the implementations it was calibrated with.  Loading them from
the description's folder would let an edit there change a built library
behind its models (and moving that folder would break it), so the build
keeps its own copy under ``source/``, laid out as the originals were
relative to the description: the description names its files by relative
paths, and those resolve in the copy as they did in the original.  The
libraries it ``uses`` are copied beside it, where ``uses NAME`` looks first.

The models artefact records where the copy is, relative to the build folder
(:func:`description_of` reads it), so the folder may be moved, or installed
with ``pip install build/<lib>`` and imported by its name.
"""

from __future__ import annotations

import platform
import shutil
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

from hlc.artefacts.models import Models
from hlc.errors import UserError
from hlc.language import ast

SOURCE_FOLDER = "source"
STUB_FILE = "__init__.pyi"
PROJECT_FILE = "pyproject.toml"


class BundleError(UserError):
    """A description's sources cannot be copied into its build."""


def description_of(models: Models, folder: Path) -> Path:
    """The description a models artefact records: its copy in the build
    ``folder`` the artefact lies in (a relative path), or, for a models file
    written outside a build, the path as recorded.  A build's models file
    copied out of its folder falls back on the original description."""
    recorded = Path(models.description)
    if recorded.is_absolute():
        return recorded
    copy = Path(folder) / recorded
    if not copy.exists() and models.origin and Path(models.origin).exists():
        return Path(models.origin)
    return copy


def _files(library: ast.Library) -> Iterator[Path]:
    """The description and the files it imports by path, resolved."""
    yield Path(library.filename).resolve()
    for item in library.imports:
        if item.is_file:
            yield (library.directory / item.source).resolve()


def _root(library: ast.Library) -> Path:
    """The deepest folder holding the description and every file it imports:
    the copy keeps their layout below it."""
    root = library.directory
    for path in _files(library):
        while not path.is_relative_to(root):
            root = root.parent
    return root


def copy_sources(library: ast.Library, folder: Path) -> str:
    """Copy ``library``'s description, the files it imports and the libraries
    it uses (with theirs) under ``folder``/source; returns the description's
    path relative to ``folder``, as the models artefact records it.  Raises
    BundleError when a used library's files would not fit the layout."""
    target = folder / SOURCE_FOLDER
    root = _root(library)
    copied: dict[Path, Path] = {}

    def place(original: Path, copy: Path) -> None:
        if copied.get(copy, original) != original:
            raise BundleError(f"{library.filename}: {original} and {copied[copy]} would both be copied to "
                              f"{copy.relative_to(folder)} in the build")
        if copy not in copied:
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(original, copy)
            copied[copy] = original

    for path in _files(library):
        place(path, target / path.relative_to(root))
    description = target / Path(library.filename).resolve().relative_to(root)
    for used in _used(library):  # beside the description, where `uses NAME` looks first
        for path in _files(used):
            if not path.is_relative_to(used.directory):
                raise BundleError(f"{used.filename} imports {path}, outside its folder: a library that "
                                  f"{library.name} uses cannot be copied into its build with it")
            place(path, description.parent / path.relative_to(used.directory))
    return description.relative_to(folder).as_posix()


def _used(library: ast.Library) -> Iterator[ast.Library]:
    """Every library ``library`` uses, directly or not, each once."""
    seen: set[str] = set()
    stack = list(library.used.values())
    while stack:
        used = stack.pop()
        if used.name in seen:
            continue
        seen.add(used.name)
        yield used
        stack.extend(used.used.values())


# ---- the stub --------------------------------------------------------------------------

_SCALARS = {"int": "int", "float": "float", "bool": "bool"}
_ARRAYS = {"int": "numpy.integer[Any]", "float": "numpy.floating[Any]", "bool": "numpy.bool_"}


def _annotation(type_: ast.Type | None, argument: bool) -> str:
    if type_ is None:
        return "None"
    if type_.dimensions == 0:
        return _SCALARS.get(type_.element, f"numpy.{type_.element}")
    element = _ARRAYS.get(type_.element, f"numpy.{type_.element}")
    return "ArrayLike" if argument else f"NDArray[{element}]"


def _docstring(text: str | None, indent: str) -> str:
    body = (text or "").strip().replace('"""', r"\"\"\"")
    return f'{indent}"""{body}"""' if body else f"{indent}..."


def stub(library: ast.Library) -> str:
    """The ``__init__.pyi`` of a built library: what an editor shows of it."""
    lines = [f'"""{(library.doc or f"Library {library.name}, built by hlc.").strip()}"""', "",
             "from typing import Any", "", "import numpy",
             "from numpy.typing import ArrayLike, NDArray", "", "from hlc.dispatch.reference import Choice", ""]
    for interface in library.interfaces:
        arguments = ", ".join(f"{a.name}: {_annotation(a.type, True)}" for a in interface.arguments)
        names = ", ".join(v.name for v in interface.variables)
        returns = _annotation(interface.returns, False)
        lines += ["", f"def {interface.name}({arguments}) -> {returns}:",
                  _docstring(interface.doc, "    "), "",
                  f"def choose_{interface.name}({arguments}) -> Choice:",
                  f'    """What a call of {interface.name} with these arguments would do."""', "",
                  f"def choose_{interface.name}_at(**variables: float) -> Choice:",
                  f'    """What the dispatcher decides for these explanatory variables ({names})."""', "",
                  f"def explain_{interface.name}({arguments}) -> str:",
                  f'    """Why a call of {interface.name} with these arguments goes where it goes."""', "",
                  f"def explain_{interface.name}_at(**variables: float) -> str:",
                  '    """Why the dispatcher decides what it decides for these explanatory variables."""', "",
                  f"def variables_{interface.name}({arguments}) -> dict[str, float]:",
                  f'    """The explanatory variables of a call of {interface.name}."""', ""]
    lines += ["",
              "def predict(implementation: str, **variables: float) -> float:",
              '    """Predicted seconds of an implementation at the given variables and parameters."""', ""]
    if library.interfaces:
        first = library.interfaces[0]
        arguments = ", ".join(f"{a.name}: {_annotation(a.type, True)}" for a in first.arguments)
        lines += [f"def choose({arguments}) -> Choice: ...", f"def explain({arguments}) -> str: ...", ""]
    return "\n".join(lines)


# ---- the project ----------------------------------------------------------------------------

def project(library: ast.Library, compiled: bool = True) -> str:
    """The ``pyproject.toml`` that makes ``pip install build/<lib>`` install
    the build as the package ``<lib>``: the folder itself is the package, its
    compiled modules, models and sources its data.  It is built for this
    machine and, when ``compiled``, for this Python's minor version, which
    pip then requires; it needs hlc at run time."""
    python = f"=={sys.version_info.major}.{sys.version_info.minor}.*" if compiled else ">=3.11"
    summary = (library.doc or f"library {library.name}").strip().splitlines()[0].replace('"', "'")
    version = time.strftime("%Y.%m.%d.%H%M%S")
    return f"""# Built by hlc: `pip install .` installs this build as the package `{library.name}`.
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{library.name}"
version = "{version}"
description = "{summary} (built by hlc for one machine)"
requires-python = "{python}"
dependencies = ["hlc"]

[tool.setuptools]
packages = ["{library.name}"]
package-dir = {{"{library.name}" = "."}}
include-package-data = false

[tool.setuptools.package-data]
{library.name} = ["*.so", "*.pyd", "*.pyx", "*.c", "*.h", "*.pyi", "py.typed", "*.json", "*.jsonl", "ext/*",
    "{SOURCE_FOLDER}/**/*"]
"""


def write_package_files(library: ast.Library, folder: Path, compiled: bool = True) -> None:
    """The stub, the marker that the package is typed, and the project file."""
    (folder / STUB_FILE).write_text(stub(library), encoding="utf-8")
    (folder / "py.typed").write_text("", encoding="utf-8")
    (folder / PROJECT_FILE).write_text(project(library, compiled), encoding="utf-8")


def interpreter_guard(library: ast.Library) -> str:
    """The package's first lines where it holds compiled modules: they load
    only in an interpreter whose extension suffix is this one's, and in any
    other the import would fail with "No module named …dispatch_…".  They
    say instead what the build was built for, and what to do."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    python = f"{platform.python_implementation()} {sys.version_info.major}.{sys.version_info.minor}"
    return (f"import sys as _sys\n"
            f"from importlib.machinery import EXTENSION_SUFFIXES as _SUFFIXES\n\n"
            f"if {suffix!r} not in _SUFFIXES:  # its compiled modules were built for another interpreter\n"
            f"    raise ImportError(f\"library {library.name} was built by hlc for {python} "
            f"(modules *{suffix}), which this Python ({{_sys.version.split()[0]}}) cannot load: \"\n"
            f"                      \"build it again with this Python (hlc build)\")\n"
            f"del _sys, _SUFFIXES\n")
