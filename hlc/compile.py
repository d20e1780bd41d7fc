"""Compiling Cython sources with the machine's C compiler.

Implementations (and, later, the dispatch module) may be ``.pyx`` files.
They are compiled in a child process, so compiler output is captured and
shown only when compilation fails, into a folder that is then put on
``sys.path``.  Each extension is named after its file's stem.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


class CompileError(Exception):
    """A Cython source that does not compile; the message holds the compiler's output."""


def extension_name(source: Path) -> str:
    """The module name a ``.pyx`` file compiles to: its stem."""
    return Path(source).stem


def compile_extensions(sources: Sequence[Path], target: Path) -> Path:
    """Compile ``sources`` (``.pyx`` files) into ``target``; returns ``target``.

    Up-to-date extensions are not rebuilt.  Two sources with the same stem
    would compile to the same module and are refused.
    """
    sources = [Path(s).resolve() for s in sources]
    stems: dict[str, Path] = {}
    for source in sources:
        if source.stem in stems:
            raise CompileError(f"{source} and {stems[source.stem]} would both compile to module '{source.stem}'")
        stems[source.stem] = source
    target = Path(target).resolve()
    target.mkdir(parents=True, exist_ok=True)
    if not sources:
        return target
    result = subprocess.run([sys.executable, "-m", "hlc.compile", str(target), *map(str, sources)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()
        raise CompileError("compiling " + ", ".join(s.name for s in sources) + " failed:\n"
                           + "\n".join(output[-40:]))
    return target


def _build(target: Path, sources: list[Path]) -> None:
    """Runs in the child process: cythonize, then build_ext into ``target``."""
    import numpy
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    extensions = [Extension(extension_name(s), [str(s)], include_dirs=[numpy.get_include(), str(s.parent)])
                  for s in sources]
    modules = cythonize(extensions, build_dir=str(target / "cython"), quiet=True,
                        compiler_directives={"language_level": 3})
    distribution = Distribution({"ext_modules": modules})
    command = distribution.get_command_obj("build_ext")
    command.build_lib = str(target)
    command.build_temp = str(target / "temp")
    command.ensure_finalized()
    command.run()


if __name__ == "__main__":
    _build(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
