"""Compiling Cython sources with the machine's C compiler.

Implementations (and, later, the dispatch module) may be ``.pyx`` files.
They are compiled in a child process, so compiler output is captured and
shown only when compilation fails, into a folder that is then put on
``sys.path``.  Each extension is named after its file's stem.

Compiled extensions are also kept in a cache shared by all builds
(``$HLC_CACHE``, else ``~/.cache/hlc/extensions``; ``HLC_CACHE=off``
disables it), keyed by everything the compiled code depends on: the
source and its neighbouring ``.pxd``/``.pxi``/``.h`` files, the Cython,
NumPy and Python versions, the compiler settings and the CPU's instruction
sets.  The sort library's kernels are 1.7 MB of C that take Cython and
the C compiler 5.9 seconds on two cores, with the code generated at the
link in a job per core (:func:`_link_time_flags`) and without the warnings
no one reads (``_UNSEEN_WARNINGS``); a rebuild or a second build of the
same sources takes them from the cache.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import os
import platform
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path

from hlc.errors import UserError
from hlc.language.machine import usable_cores

#: Files beside a source that its compiled code may include.
_INCLUDED = (".pxd", ".pxi", ".h")
#: Environment variables that change what the compiler produces.
_COMPILER_SETTINGS = ("CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "LDSHARED")
#: Warning options of Python's own compile flags that the description's
#: sources are compiled without.  The compiler's output is shown only when a
#: compile fails, so its warnings are never read, and the analyses behind
#: them are not free: with -Wall, the sort library's kernels (1.7 MB of
#: Cython's C) took the compiler 1.3 s before the link, without 0.9 s, and
#: the same code came out.
_UNSEEN_WARNINGS = ("-Wall", "-Wextra")
#: Cython warnings about code whose result is undefined: the compiled code
#: then does whatever the objects involved happen to do, which changes from one
#: release of a dependency to the next (a negative index under
#: ``wraparound=False`` was wrapped by NumPy 2.4 and refused by NumPy 2.5).
#: They fail the compile.
_UNDEFINED = ("is undefined",)


class CompileError(UserError):
    """A Cython source that does not compile; the message holds the compiler's output."""


def extension_name(source: Path) -> str:
    """The module name a ``.pyx`` file compiles to: its stem."""
    return Path(source).stem


def compile_extensions(sources: Sequence[Path], target: Path, *, cached: bool = True,
                       at_link: bool = True) -> Path:
    """Compile ``sources`` (``.pyx`` files) into ``target``; returns ``target``.

    Up-to-date extensions are not rebuilt; with ``cached``, an extension
    compiled before from the same inputs is taken from the cache, and one
    that :func:`compile_ahead` started compiling is waited for and taken
    from it.  Two sources with the same stem would compile to the same
    module and are refused.  With ``at_link``, the code is generated at the
    link, in parallel jobs, where the compiler can (:func:`_link_time_flags`);
    without, as build_ext does (to compare the two).
    """
    sources = _distinct(sources)
    target = Path(target).resolve()
    target.mkdir(parents=True, exist_ok=True)
    cache = cache_folder() if cached and at_link else None  # the cache holds what builds compile
    keys = {source: cache_key(source) for source in sources} if cache else {}
    missing = [s for s in sources if not (cache and _restore(cache / keys[s], target, s))]
    if not missing:
        return target
    ahead = _AHEAD.pop(tuple(missing), None) if at_link else None
    if ahead is not None:
        output, code = ahead.finish()
        built = ahead.scratch
    else:
        plain = [] if at_link else ["--plain"]
        result = subprocess.run([sys.executable, "-m", "hlc.compile", *plain, str(target), *map(str, missing)],
                                capture_output=True, text=True)
        output, code = (result.stdout + result.stderr).strip().splitlines(), result.returncode
        built = target
    try:
        if code != 0:
            raise CompileError("compiling " + ", ".join(s.name for s in missing) + " failed:\n"
                               + "\n".join(output[-40:]))
        undefined = _undefined(output)
        if undefined:
            for source in missing:
                (built / _library_name(source)).unlink(missing_ok=True)
            raise CompileError("Cython compiled code whose result is undefined:\n" + "\n".join(undefined))
        if built != target:
            for source in missing:
                _copy_atomically(built / _library_name(source), target / _library_name(source))
        for source in missing if cache else ():
            _keep(target / _library_name(source), cache / keys[source])
    finally:
        if ahead is not None:
            ahead.remove()
    return target


def _distinct(sources: Sequence[Path]) -> list[Path]:
    """``sources`` resolved; two with the same stem are refused (they would compile to one module)."""
    sources = [Path(s).resolve() for s in sources]
    stems: dict[str, Path] = {}
    for source in sources:
        if source.stem in stems:
            raise CompileError(f"{source} and {stems[source.stem]} would both compile to module '{source.stem}'")
        stems[source.stem] = source
    return sources


class _Ahead:
    """A compile of some sources into a scratch folder, started before the
    folder they are wanted in exists (:func:`compile_ahead`): a
    :class:`Background` that is never paused, its output in a file there,
    not a pipe that no one reads until it finishes."""

    def __init__(self, sources: Sequence[Path], scratch: Path):
        self.scratch = scratch
        scratch.mkdir(parents=True)
        self.compile = Background([sys.executable, "-m", "hlc.compile", str(scratch), *map(str, sources)],
                                  output=scratch / _AHEAD_OUTPUT)

    def finish(self) -> tuple[list[str], int]:
        """Wait for it; its output's lines and its exit status."""
        code = self.compile.wait()
        text = (self.scratch / _AHEAD_OUTPUT).read_text(encoding="utf-8", errors="replace")
        return text.strip().splitlines(), code

    def remove(self) -> None:
        """End it, if it still runs (with the compiler's children), and remove its folder."""
        self.compile.kill()
        shutil.rmtree(self.scratch, ignore_errors=True)


#: Compiles started by compile_ahead and not yet taken, by their sources.
_AHEAD: dict[tuple[Path, ...], _Ahead] = {}
#: The file in an ahead compile's scratch folder that takes its output.
_AHEAD_OUTPUT = "compiler-output.txt"


def compile_ahead(sources: Sequence[Path], scratch: Path) -> bool:
    """Start compiling those of ``sources`` that the cache lacks into
    ``scratch`` (a folder not there yet), and return at once; whether a
    compile started.  A later :func:`compile_extensions` of the same
    sources waits for it, and takes what it compiled, or reports its
    error; a compile that nothing took ends with this process, its folder
    removed.  `hlc build` starts its description's compile so, before it
    loads the modules that profile and fit (about a second on two cores),
    so that those run beside the compiler: a first sort build compiles
    its kernels for 6-8 s."""
    missing = tuple(s for s in _distinct(sources) if not is_cached(s))
    if not missing or missing in _AHEAD:
        return False
    if not _AHEAD:
        atexit.register(end_compiles_ahead)
    _AHEAD[missing] = _Ahead(missing, Path(scratch))
    return True


def end_compiles_ahead() -> None:
    """End the compiles started ahead that nothing took (the build stopped
    before it compiled); this process's exit does too."""
    while _AHEAD:
        _AHEAD.popitem()[1].remove()


def compile_module(source: Path, c_sources: Sequence[Path], target: Path) -> Path:
    """Compile ``source`` (a ``.pyx`` file) linked with ``c_sources`` (C
    files beside it) into one extension in ``target``; returns ``target``.

    The object of ``source`` comes from the cache when one was compiled from
    the same inputs (the ``.pyx``, the headers beside it, the versions): a
    dispatch module's Cython changes with its description only, while the
    C of its models, which changes with every build, is small and compiled
    each time.  Cythonizing and compiling a sort module's Cython took 7.7 s,
    its models' C 0.4 s.
    """
    source = Path(source).resolve()
    target = Path(target).resolve()
    target.mkdir(parents=True, exist_ok=True)
    cached = _object_entry(source)
    result = subprocess.run([sys.executable, "-m", "hlc.compile", "--module", str(target), str(source),
                             str(cached or ""), *(str(Path(c).resolve()) for c in c_sources)],
                            capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip().splitlines()
    if result.returncode != 0:
        raise CompileError(f"compiling {source.name} failed:\n" + "\n".join(output[-40:]))
    undefined = _undefined(output)
    if undefined:
        (target / _library_name(source)).unlink(missing_ok=True)
        if cached is not None:
            cached.unlink(missing_ok=True)
        raise CompileError("Cython compiled code whose result is undefined:\n" + "\n".join(undefined))
    return target


def is_cached(source: Path) -> bool:
    """Whether the extension compiled from ``source`` is in the cache."""
    cache = cache_folder()
    return cache is not None and (cache / cache_key(Path(source).resolve()) / _library_name(source)).is_file()


def start_module_object(source: Path) -> Background | None:
    """Start compiling the object of ``source`` (a module's ``.pyx``, see
    :func:`compile_module`) into the cache, in a child process of its own
    (:class:`Background`, which the caller pauses while anything is
    timed); None when it is cached already, or there is no cache.  A build
    starts it first, so that its later compile_module only compiles the
    models' C and links.  A child that fails leaves nothing: compile_module
    then compiles it and reports the error."""
    cached = _object_entry(Path(source).resolve())
    if cached is None or cached.is_file():
        return None
    return Background([sys.executable, "-m", "hlc.compile", "--object", str(source), str(cached)])


class Background:
    """A compile in child processes of their own process group, which runs
    only while nothing is timed: :meth:`paused` stops the whole group (the
    compiler's own children too) for the time of a block of timings, and
    it goes on after.  A build of a library without compiled sources,
    whose dispatch module's object was compiled after its profile, spent
    10 of its 33 seconds (the runtime library) and 9 of 56 (the stencil)
    there; its fits and plans between the rounds leave the cores as idle.

    Its group is the build's session's, so that it is orphaned when the
    build dies: a stopped group then gets SIGHUP and SIGCONT from the
    kernel, and ends rather than stays stopped (POSIX).  A build run under
    ``nohup`` ignores SIGHUP, and a child inherits an ignored signal: its
    compile starts with SIGHUP's default action all the same
    (:func:`_hangup_reaching_children`)."""

    def __init__(self, command: Sequence[str], output: Path | None = None):
        """``output``: a file that takes what the compile prints (else it is dropped)."""
        with contextlib.ExitStack() as files:
            printed = files.enter_context(open(output, "w", encoding="utf-8")) if output else subprocess.DEVNULL
            with _hangup_reaching_children():
                self.process = subprocess.Popen(list(command), stdout=printed,
                                                stderr=subprocess.STDOUT if output else subprocess.DEVNULL,
                                                process_group=0)
        self._stops = 0  # nested pauses

    def _signal(self, number: int) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, number)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Stopped for the time of the block (where the platform can stop processes)."""
        stop = getattr(signal, "SIGSTOP", None)
        if stop is not None and self._stops == 0:
            self._signal(stop)
        self._stops += 1
        try:
            yield
        finally:
            self._stops -= 1
            if stop is not None and self._stops == 0:
                self._signal(signal.SIGCONT)

    def wait(self) -> int:
        """Its exit status, once it has finished (running on until then)."""
        if self._stops == 0:
            self._signal(getattr(signal, "SIGCONT", 0))
        return self.process.wait()

    def kill(self) -> None:
        """End it and the compiler's children, its scratch folder removed
        (the cache takes a finished object only, by renaming it)."""
        self._signal(signal.SIGTERM)
        self._signal(getattr(signal, "SIGCONT", 0))  # a stopped process ends once it runs
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait()


def _ignore(number: int, frame: object) -> None:
    """SIGHUP's handler while a background compile starts: this process still ignores it."""


@contextlib.contextmanager
def _hangup_reaching_children() -> Iterator[None]:
    """For the time of the block, SIGHUP handled by doing nothing where this
    process ignores it: a child started meanwhile then starts with its
    default action (an exec keeps ignored signals ignored, and resets
    handled ones), so that an orphaned, stopped compile ends on the
    kernel's SIGHUP.  Only the main thread may set a handler; elsewhere the
    child inherits what this process does."""
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is None or threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(hangup) is not signal.SIG_IGN:
        yield
        return
    signal.signal(hangup, _ignore)
    try:
        yield
    finally:
        signal.signal(hangup, signal.SIG_IGN)


def _yielding() -> None:
    """Lower this process's priority as far as it goes (its compiler
    children inherit it): a background compile then runs on what the
    build leaves idle, and never delays the compile of the kernels that
    profiling waits for, or a fit.  With it, a first sort build (nothing
    cached) spent 7.1-7.3 s compiling in three builds, instead of 8.4 s."""
    with contextlib.suppress(AttributeError, OSError):
        os.nice(19)


def _object_entry(source: Path) -> Path | None:
    """Where the cache keeps the object of a module's Cython (compile_module); None without a cache."""
    cache = cache_folder()
    return cache / cache_key(source) / (extension_name(source) + ".o") if cache else None


def _undefined(output: Sequence[str]) -> list[str]:
    """Cython's warnings, among ``output``'s lines, of code whose result is undefined (_UNDEFINED)."""
    return [line for line in output if line.startswith("warning:") and any(u in line for u in _UNDEFINED)]


def cache_folder() -> Path | None:
    """Where compiled extensions are kept between builds; None when disabled."""
    setting = os.environ.get("HLC_CACHE")
    if setting is not None and setting.strip().lower() in ("", "off", "0", "no"):
        return None
    if setting:
        return Path(setting).expanduser() / "extensions"
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return home / "hlc" / "extensions"


def cache_key(source: Path) -> str:
    """A digest of everything the extension compiled from ``source`` depends on."""
    hasher = hashlib.sha256()
    for path in [source, *sorted(p for p in source.parent.iterdir() if p.suffix in _INCLUDED)]:
        hasher.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    versions = [sys.version, platform.machine(), sysconfig.get_config_var("EXT_SUFFIX") or "",
                *(metadata.version(p) for p in ("Cython", "numpy", "setuptools")),
                *(f"{name}={os.environ.get(name, '')}" for name in _COMPILER_SETTINGS),
                _instruction_sets(), Path(__file__).read_text()]
    hasher.update("\n".join(versions).encode())
    return hasher.hexdigest()[:32]


def _instruction_sets() -> str:
    """The CPU's feature flags (compiler settings such as -march=native depend on them)."""
    try:
        return next((line for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")), "")
    except OSError:
        return platform.processor()


def _library_name(source: Path) -> str:
    return extension_name(source) + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def _restore(entry: Path, target: Path, source: Path) -> bool:
    """Copy the cached extension of ``source`` into ``target``, if there is one."""
    cached = entry / _library_name(source)
    if not cached.is_file():
        return False
    _copy_atomically(cached, target / cached.name)
    return True


def _keep(library: Path, entry: Path, name: str | None = None) -> None:
    """Put a freshly compiled extension (or object) into the cache; a cache
    that cannot be written (read-only home, full disk) only costs the next
    build a compile."""
    try:
        entry.mkdir(parents=True, exist_ok=True)
        _copy_atomically(library, entry / (name or library.name))
    except OSError:
        pass


def _copy_atomically(source: Path, destination: Path) -> None:
    """Copy so that a reader never sees half a file (concurrent builds share the cache)."""
    handle, temporary = tempfile.mkstemp(dir=destination.parent, prefix=f".{destination.name}.")
    os.close(handle)
    try:
        shutil.copy2(source, temporary)
        os.replace(temporary, destination)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _build(target: Path, sources: list[Path], at_link: bool = True) -> None:
    """Runs in the child process: cythonize, then build_ext into ``target``,
    the code generated where the extensions are linked, on every core
    (:func:`_link_time_flags`), where the compiler can; else as usual."""
    import numpy
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext
    from setuptools.errors import CompileError as CompilerFailed
    from setuptools.errors import LinkError

    # No debug information: Python's flags ask for it (-g), and it took a
    # quarter of the C compiler's time on a dispatch module, which every
    # build compiles afresh.
    extensions = [Extension(extension_name(s), [str(s)], include_dirs=[numpy.get_include(), str(s.parent)],
                            extra_compile_args=["-g0"])
                  for s in sources]
    modules = cythonize(extensions, build_dir=str(target / "cython"), quiet=True,
                        compiler_directives={"language_level": 3})

    class Built(build_ext):
        """build_ext, with the link-time flags of ``spread`` added."""

        spread = True

        def build_extensions(self) -> None:
            command = getattr(self.compiler, "compiler_so", None)  # a Unix-like compiler's command line
            if command is not None:  # this command's compiler only: the extensions are the next run's too
                compiler_so = [flag for flag in command if flag not in _UNSEEN_WARNINGS]
                flags = _link_time_flags(compiler_so) if self.spread else None
                if flags is not None:
                    self.compiler.set_executables(compiler_so=[*compiler_so, *flags[0]],
                                                  linker_so=[*self.compiler.linker_so, *flags[1]])
                else:
                    self.compiler.set_executables(compiler_so=compiler_so)
            super().build_extensions()

    def run(spread: bool) -> None:
        command = Built(Distribution({"ext_modules": modules}))
        command.spread = spread
        command.build_lib = str(target)
        command.build_temp = str(target / ("temp" if spread else "temp-plain"))
        command.force = True
        command.ensure_finalized()
        command.run()

    if not at_link:
        run(spread=False)
        return
    try:
        run(spread=True)
    except (CompilerFailed, LinkError):  # a compiler that announced what it cannot do
        run(spread=False)


#: The compilers whose link-time code generation runs in parallel jobs (-flto=N).
_PARALLEL_LINKERS = ("gcc", "g++", "cc", "c++")


def _link_time_flags(compiler: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """Compile and link flags that move code generation to the link, into as
    many parallel jobs as this process has cores (GCC's ``-flto=N``); None
    where the compiler is not GCC, there is one core, or no ``make`` to run
    the jobs.  One Cython module
    is one C file, and one C file is one job for the compiler: the sort
    library's kernels, 1.9 MB of C, took the C compiler 5.3 s, in two jobs
    at the link 3.7 s, and sorted as fast.  The link gets the compile's
    optimization flags too.  GCC splits the code into parts for the jobs
    as it sees fit (five for the sort kernels): split into two, their link
    took 0.3 s less, but the code was laid out otherwise; the sorts ran as
    fast in the median of 58 cases, single cases up to a tenth faster or
    slower, which one comparison could not tell from the host's noise."""
    cores = usable_cores() or 1
    if cores < 2 or not compiler or Path(compiler[0]).name not in _PARALLEL_LINKERS:
        return None
    if shutil.which("make") is None:  # GCC runs its parallel jobs through make; without, one after another
        return None
    try:
        said = subprocess.run([compiler[0], "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    if "clang" in said.lower() or "free software foundation" not in said.lower():
        return None
    optimization = [flag for flag in compiler[1:] if flag.startswith("-O")][-1:]
    return ["-flto"], [f"-flto={cores}", *optimization]


def _module_flags() -> list[str]:
    """Flags for a dispatch module's C: its math functions need not set
    ``errno``, which nothing reads, so that the compiler may value
    ``log2(n)`` once for every term of a model that takes it, and once for
    every candidate of a search.  A sort module's decision took 0.7-1.1 µs
    with them, 1.6-2.5 µs without (at four calls of 100 to 2 million
    keys).  Not for MSVC, which has no such flag.

    On x86-64 where this host has SSE4.1, the code is built for it too:
    ``ceil`` and ``floor``, which a digit-width search takes at every
    candidate, are then one instruction, where x86-64's baseline needs a
    sequence of eight with a branch (the same values: rounding to an integer
    is exact either way).  A sort module's decision took 0.26-0.35 µs so,
    0.34-0.44 µs without, with the same choices and predictions.  The
    module is compiled on the host that builds it, and anew by a rebuild or
    recalibration on another; every x86-64 processor made since 2008 has
    SSE4.1, and NumPy 2.4 itself needs x86-64-v2, which includes it.

    A multiplication and an addition are never fused into one rounding
    (``-ffp-contract=off``): Python rounds each, and the module must sum
    its models to the same bits as the reference does, whatever ``CFLAGS``
    (``-march=native`` brings FMA) says."""
    if sys.platform == "win32":
        return []
    return ["-fno-math-errno", "-ffp-contract=off", *(["-msse4.1"] if _has_sse41() else [])]


def _has_sse41() -> bool:
    """Whether this is an x86-64 host whose processor has SSE4.1 (read from /proc/cpuinfo)."""
    return platform.machine().lower() in ("x86_64", "amd64") and "sse4_1" in _instruction_sets().split()


def _build_module(target: Path, source: Path, cached: Path | None, c_sources: list[Path]) -> None:
    """Runs in the child process: the object of ``source`` (from ``cached``,
    or cythonized and compiled, then kept there), the C sources compiled,
    all linked into ``target`` by build_ext (the compiler, flags and
    libraries of any extension)."""
    import numpy
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    name = extension_name(source)
    includes = [numpy.get_include(), str(source.parent)]

    class Linked(build_ext):
        """build_ext, with the module's own object compiled (or taken) first;
        with no C sources, only that (into the cache)."""

        def build_extension(self, extension: Extension) -> None:
            if cached is not None and cached.is_file():
                extension.extra_objects = [str(cached)]
            else:
                from Cython.Build import cythonize

                # Cython's warnings are read here too: an object of undefined code
                # is not kept, whoever started the compile (the parent reads them
                # again from this process's output, and refuses the module).
                with contextlib.redirect_stderr(io.StringIO()) as said, contextlib.redirect_stdout(said):
                    [cythonized] = cythonize([Extension(name, [str(source)])], build_dir=str(target / "cython"),
                                             quiet=True, compiler_directives={"language_level": 3})
                sys.stderr.write(said.getvalue())
                [built] = self.compiler.compile(cythonized.sources, output_dir=self.build_temp,
                                                include_dirs=includes, extra_postargs=extension.extra_compile_args)
                extension.extra_objects = [built]
                if cached is not None and not _undefined(said.getvalue().splitlines()):
                    _keep(Path(built), cached.parent, cached.name)
            if c_sources:
                super().build_extension(extension)

    extension = Extension(name, [str(c) for c in c_sources] or ["none.c"], include_dirs=includes,
                          extra_compile_args=["-g0", *_module_flags()])
    command = Linked(Distribution({"ext_modules": [extension]}))
    command.build_lib = str(target)
    command.build_temp = str(target / "temp")
    command.ensure_finalized()
    command.run()


if __name__ == "__main__":
    if sys.argv[1] == "--object":  # start_module_object: into the cache, through a scratch folder
        _yielding()
        def _end(number: int, frame: object) -> None:  # killed, or orphaned: the scratch folder goes too
            sys.exit(128 + number)

        for name in ("SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), _end)
        with tempfile.TemporaryDirectory() as scratch:
            _build_module(Path(scratch), Path(sys.argv[2]), Path(sys.argv[3]), [])
    elif sys.argv[1] == "--module":
        _build_module(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]) if sys.argv[4] else None,
                      [Path(p) for p in sys.argv[5:]])
    elif sys.argv[1] == "--plain":
        _build(Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]], at_link=False)
    else:
        _build(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
