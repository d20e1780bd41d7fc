"""Compiling Cython sources, and the cache of compiled extensions."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hlc import compile as compiling
from hlc.compile import CompileError, cache_folder, cache_key, compile_extensions

SOURCE = """
def triple(long x):
    return 3 * x
"""


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """Compiler runs, counted; a cache of this test's own."""
    monkeypatch.setenv("HLC_CACHE", str(tmp_path / "cache"))
    runs: list[list[str]] = []
    real = subprocess.run

    def run(command, **options):
        runs.append(command)
        return real(command, **options)

    monkeypatch.setattr(compiling.subprocess, "run", run)
    return runs


def load(folder, name):
    path = next(folder.glob(f"{name}.*so"))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_second_build_takes_the_extension_from_the_cache(tmp_path, counted):
    source = tmp_path / "src" / "arith.pyx"
    source.parent.mkdir()
    source.write_text(SOURCE)
    compile_extensions([source], tmp_path / "first")
    compile_extensions([source], tmp_path / "second")
    assert len(counted) == 1  # the second build ran no compiler
    assert load(tmp_path / "second", "arith").triple(14) == 42


def test_what_the_code_depends_on_changes_the_key(tmp_path, counted, monkeypatch):
    source = tmp_path / "src" / "arith.pyx"
    source.parent.mkdir()
    source.write_text(SOURCE)
    first = cache_key(source)
    (source.parent / "arith.pxd").write_text("cdef long twice(long x)\n")  # an included file beside it
    second = cache_key(source)
    monkeypatch.setenv("CFLAGS", "-O1")
    third = cache_key(source)
    assert len({first, second, third}) == 3
    (source.parent / "arith.pxd").unlink()
    monkeypatch.delenv("CFLAGS")
    source.write_text(SOURCE.replace("3 * x", "4 * x"))
    compile_extensions([source], tmp_path / "changed")
    assert len(counted) == 1 and load(tmp_path / "changed", "arith").triple(1) == 4


def test_the_cache_can_be_turned_off(monkeypatch, tmp_path):
    monkeypatch.setenv("HLC_CACHE", "off")
    assert cache_folder() is None
    monkeypatch.setenv("HLC_CACHE", str(tmp_path))
    assert cache_folder() == tmp_path / "extensions"


def test_a_source_that_does_not_compile_is_reported_and_not_cached(tmp_path, counted):
    source = tmp_path / "broken.pyx"
    source.write_text("def f(:\n")
    with pytest.raises(CompileError, match="compiling broken.pyx failed"):
        compile_extensions([source], tmp_path / "out")
    assert not any((tmp_path / "cache").rglob("broken*"))


def test_an_uncached_compile_neither_reads_nor_fills_the_cache(tmp_path, counted):
    """The dispatch module is compiled uncached: its embedded models make every
    build's source new, and would only fill the cache."""
    source = tmp_path / "arith.pyx"
    source.write_text(SOURCE)
    compile_extensions([source], tmp_path / "first", cached=False)
    assert not (tmp_path / "cache").exists()
    compile_extensions([source], tmp_path / "second")
    compile_extensions([source], tmp_path / "third", cached=False)
    assert len(counted) == 3


WRAPPED = """# cython: wraparound=False
def last(values):
    return values[-1]
"""


def test_a_negative_index_under_wraparound_false_fails_the_compile(tmp_path, counted):
    """What such an index does depends on the object (NumPy 2.4 wrapped it,
    NumPy 2.5 refuses it): the compile says where it is, and neither the
    target nor the cache keeps the extension."""
    source = tmp_path / "src" / "ends.pyx"
    source.parent.mkdir()
    source.write_text(WRAPPED)
    with pytest.raises(CompileError, match=r"ends\.pyx:3:\d+: the result of using negative indices"):
        compile_extensions([source], tmp_path / "out")
    assert not list((tmp_path / "out").glob("ends.*so"))
    assert not list((tmp_path / "cache").rglob("ends.*so"))
    source.write_text(WRAPPED.replace("values[-1]", "values[len(values) - 1]"))
    assert load(compile_extensions([source], tmp_path / "out"), "ends").last([1, 2, 3]) == 3



def test_a_compile_started_ahead_is_taken_by_the_compile_that_wants_it(tmp_path, counted):
    """compile_ahead starts the compiler before the target exists (`hlc
    build` does, before it loads its modules); compile_extensions then
    waits for it rather than compiling again, keeps the extension in the
    cache, and leaves no scratch folder."""
    source = tmp_path / "src" / "arith.pyx"
    source.parent.mkdir()
    source.write_text(SOURCE)
    scratch = tmp_path / ".lib.ahead.1"
    assert compiling.compile_ahead([source], scratch)
    assert not compiling.compile_ahead([source], tmp_path / ".lib.ahead.2")  # already under way
    assert scratch.is_dir()
    compile_extensions([source], tmp_path / "out")
    assert counted == []  # no compiler run of its own
    assert not scratch.exists() and not (tmp_path / ".lib.ahead.2").exists()
    assert load(tmp_path / "out", "arith").triple(5) == 15
    assert not compiling.compile_ahead([source], scratch)  # cached now: nothing to start
    compile_extensions([source], tmp_path / "again")
    assert counted == []


def test_a_compile_started_ahead_reports_its_error_where_it_is_taken(tmp_path, counted):
    source = tmp_path / "broken.pyx"
    source.write_text("def f(:\n")
    scratch = tmp_path / ".lib.ahead.1"
    assert compiling.compile_ahead([source], scratch)
    with pytest.raises(CompileError, match="compiling broken.pyx failed"):
        compile_extensions([source], tmp_path / "out")
    assert not scratch.exists()
    assert not any((tmp_path / "cache").rglob("broken*"))


def test_a_compile_started_ahead_that_nothing_takes_ends_with_the_process(tmp_path, counted):
    """A build that stops before it compiles (a used library never built)
    leaves no compiler running and no scratch folder."""
    source = tmp_path / "arith.pyx"
    source.write_text(SOURCE)
    scratch = tmp_path / ".lib.ahead.1"
    assert compiling.compile_ahead([source], scratch)
    process = compiling._AHEAD[(source.resolve(),)].compile.process
    compiling.end_compiles_ahead()
    assert process.poll() is not None
    assert not scratch.exists() and not compiling._AHEAD


AHEAD = """library ahead "Triples, from a library that uses another."
uses comm
from "arith.pyx" import triple

interface triple(x: int) -> int "Three times x."
    impl cython = triple "a compiled triple"
        time ~ 1
    profile
        for i in 1 .. 4 ++
        x = i
        verify 2
"""


def test_a_build_refused_after_its_compile_started_leaves_nothing(tmp_path, capsys, monkeypatch):
    """`hlc build` starts the compile before it checks what the library
    uses: refused then, it ends the compile and removes its folder."""
    from hlc.cli import main

    monkeypatch.setenv("HLC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "arith.pyx").write_text(SOURCE)
    (tmp_path / "comm.hl").write_text((Path(__file__).parent / "descriptions" / "comm.hl").read_text())
    (tmp_path / "ahead.hl").write_text(AHEAD)
    started = []
    real = compiling.compile_ahead
    monkeypatch.setattr(compiling, "compile_ahead", lambda *a: started.append(real(*a)) or started[-1])
    assert main(["build", str(tmp_path / "ahead.hl"), "--out", str(tmp_path / "out" / "ahead")]) == 2
    assert "ahead uses comm, which has no models" in capsys.readouterr().err
    assert started == [True]
    assert not compiling._AHEAD and list((tmp_path / "out").iterdir()) == []


MODULE = """
cdef extern from "scale.h":
    double hlc_scale(double x) nogil

def scaled(double x):
    return hlc_scale(x)
"""


def test_a_module_takes_its_cython_from_the_cache_and_compiles_its_c_afresh(tmp_path, counted):
    """compile_module: the object of the .pyx (which changes with the
    description only) is cached; the C beside it (the models, new with every
    build) is compiled each time and linked in."""
    source = tmp_path / "src" / "scaler.pyx"
    source.parent.mkdir()
    source.write_text(MODULE)
    (source.parent / "scale.h").write_text("double hlc_scale(double x);\n")
    models = source.parent / "models.c"
    for factor, target in ((2, "first"), (5, "second")):
        models.write_text(f'#include "scale.h"\ndouble hlc_scale(double x) {{ return {factor} * x; }}\n')
        compiling.compile_module(source, [models], tmp_path / target)
        assert load(tmp_path / target, "scaler").scaled(3.0) == 3.0 * factor
    assert (tmp_path / "first" / "cython").is_dir()  # cythonized once ...
    assert not (tmp_path / "second" / "cython").exists()  # ... and its object taken from the cache after
    assert len(list((tmp_path / "cache").rglob("scaler.o"))) == 1
    source.write_text(MODULE.replace("return hlc_scale(x)", "return hlc_scale(x) + 1"))
    compiling.compile_module(source, [models], tmp_path / "third")
    assert load(tmp_path / "third", "scaler").scaled(3.0) == 16.0  # a new .pyx: a new object
    assert len(list((tmp_path / "cache").rglob("scaler.o"))) == 2


def test_a_module_whose_c_does_not_compile_says_so(tmp_path, counted):
    source = tmp_path / "scaler.pyx"
    source.write_text(MODULE)
    (tmp_path / "scale.h").write_text("double hlc_scale(double x);\n")
    (tmp_path / "models.c").write_text('#include "scale.h"\ndouble hlc_scale(double x) { return x * ; }\n')
    with pytest.raises(CompileError, match="compiling scaler.pyx failed"):
        compiling.compile_module(source, [tmp_path / "models.c"], tmp_path / "out")


def test_a_module_object_started_early_is_the_one_its_module_links(tmp_path, counted):
    """start_module_object compiles the Cython's object into the cache in the
    background (beside a build's compile of its kernels); compile_module then
    only compiles the C and links.  Nothing is started when it is cached."""
    source = tmp_path / "scaler.pyx"
    source.write_text(MODULE)
    (tmp_path / "scale.h").write_text("double hlc_scale(double x);\n")
    (tmp_path / "models.c").write_text('#include "scale.h"\ndouble hlc_scale(double x) { return 7 * x; }\n')
    process = compiling.start_module_object(source)
    assert process is not None and process.wait() == 0
    assert len(list((tmp_path / "cache").rglob("scaler.o"))) == 1
    assert compiling.start_module_object(source) is None
    compiling.compile_module(source, [tmp_path / "models.c"], tmp_path / "out")
    assert not (tmp_path / "out" / "cython").exists()
    assert load(tmp_path / "out", "scaler").scaled(2.0) == 14.0


def test_an_object_of_undefined_code_is_not_kept_even_when_started_early(tmp_path, counted):
    """start_module_object discards the compiler's output; the object of code
    whose result is undefined is still not cached, and the module's compile
    then refuses it."""
    source = tmp_path / "ends.pyx"
    source.write_text(WRAPPED)
    process = compiling.start_module_object(source)
    assert process is not None and process.wait() == 0
    assert not list((tmp_path / "cache").rglob("ends.o"))
    (tmp_path / "none.c").write_text("int hlc_nothing(void) { return 0; }\n")
    with pytest.raises(CompileError, match=r"ends\.pyx:3:\d+: the result of using negative indices"):
        compiling.compile_module(source, [tmp_path / "none.c"], tmp_path / "out")
    assert not list((tmp_path / "cache").rglob("ends.o")) and not list((tmp_path / "out").glob("ends.*so"))


#: A compile stand-in: a child that counts into a file, as a compiler's own child would.
COUNTING = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import sys, time\\n"
                  "while True:\\n    open(sys.argv[1], 'a').write('.')\\n    time.sleep(0.01)", sys.argv[1]])
time.sleep(3600)
"""


def count(path) -> int:
    return len(path.read_text()) if path.exists() else 0


def wait_for(condition, seconds: float = 10.0) -> bool:
    ends = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > ends:
            return False
        time.sleep(0.05)
    return True


def test_a_paused_background_compile_stops_with_its_children_and_goes_on_after(tmp_path):
    """A build's background compile runs only while nothing is timed: paused,
    its whole process group stands still (the compiler's children too)."""
    marks = tmp_path / "marks"
    background = compiling.Background([sys.executable, "-c", COUNTING, str(marks)])
    try:
        assert wait_for(lambda: count(marks) > 5)
        with background.paused():
            with background.paused():  # nested: the outer block's end resumes it
                time.sleep(0.2)
            time.sleep(0.2)
            before = count(marks)
            time.sleep(0.5)
            assert count(marks) == before
        assert wait_for(lambda: count(marks) > before + 5)
    finally:
        background.kill()
    assert background.process.poll() is not None


#: A build stand-in that starts a background compile, pauses it and waits to be killed.
ABANDONED = """
import signal, sys, time
from hlc.compile import Background
if sys.argv[3] == "ignored":  # as under nohup
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
background = Background([sys.executable, "-c", sys.argv[1], sys.argv[2]])
time.sleep(0.5)
with background.paused():
    print(background.process.pid, flush=True)
    time.sleep(3600)
"""


@pytest.mark.parametrize("hangup", ["default", "ignored"])
def test_a_background_compile_paused_by_a_build_that_was_killed_ends(tmp_path, hangup):
    """A killed build cannot resume or end its paused compile; the compile's
    process group is then orphaned with a stopped member, and the kernel ends
    it (SIGHUP, then SIGCONT) rather than leave it stopped for ever; also
    where the build ignored SIGHUP (run under nohup), which its children
    would inherit."""
    marks = tmp_path / "marks"
    build = subprocess.Popen([sys.executable, "-c", ABANDONED, COUNTING, str(marks), hangup],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    compile_pid = int(build.stdout.readline())
    os.killpg(build.pid, signal.SIGKILL)
    build.wait()

    def ended() -> bool:
        try:
            os.kill(compile_pid, 0)
        except ProcessLookupError:
            return True
        state = Path(f"/proc/{compile_pid}/stat")
        return state.exists() and state.read_text().rsplit(")", 1)[1].split()[0] == "Z"

    assert wait_for(ended)
    settled = count(marks)  # its counting child went with it
    time.sleep(0.3)
    assert count(marks) == settled


GCC_VERSION = "gcc (GCC) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n"


def fake_compiler(folder, name: str, says: str):
    """A compiler named ``name`` that answers --version with ``says``."""
    path = folder / name
    path.write_text(f"#!/bin/sh\nprintf '{says}'\n")
    path.chmod(0o755)
    return str(path)


def test_code_is_generated_at_the_link_in_parallel_jobs_only_by_gcc_on_several_cores(tmp_path, monkeypatch):
    monkeypatch.setattr(compiling.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    gcc = fake_compiler(tmp_path, "gcc", GCC_VERSION.replace("\n", "\\n"))
    assert compiling._link_time_flags([gcc, "-DNDEBUG", "-O2", "-Wall", "-O3"]) == (["-flto"], ["-flto=3", "-O3"])
    (tmp_path / "mac").mkdir()
    assert compiling._link_time_flags([fake_compiler(tmp_path / "mac", "cc", "Apple clang version 15.0.0\\n")]) is None
    assert compiling._link_time_flags([fake_compiler(tmp_path, "x86_64-conda-linux-gnu-cc", "GCC")]) is None
    monkeypatch.setattr(compiling.shutil, "which", lambda name: None)  # no make to run the jobs
    assert compiling._link_time_flags([gcc, "-O3"]) is None
    monkeypatch.undo()
    monkeypatch.setattr(compiling.os, "sched_getaffinity", lambda pid: {0})
    assert compiling._link_time_flags([gcc, "-O3"]) is None


def test_a_compiler_that_refuses_to_generate_code_at_the_link_compiles_plainly(tmp_path, monkeypatch):
    """The same extension, from a compiler that fails on -flto, compiled
    without it; and compiled plainly on request."""
    real = compiling.shutil.which("gcc")
    if real is None:
        pytest.skip("no gcc here")
    wrapper = tmp_path / "bin" / "gcc"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in -flto*) echo "no -flto here" >&2; exit 1;; '
                       f'esac; done\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    source = tmp_path / "arith.pyx"
    source.write_text(SOURCE)
    monkeypatch.setenv("CC", str(wrapper))
    compile_extensions([source], tmp_path / "refused", cached=False)
    assert load(tmp_path / "refused", "arith").triple(14) == 42
    monkeypatch.delenv("CC")
    compile_extensions([source], tmp_path / "plain", cached=False, at_link=False)
    assert load(tmp_path / "plain", "arith").triple(5) == 15


def test_the_sources_compile_without_the_warnings_nobody_reads(tmp_path, monkeypatch):
    """Python's -Wall is left out of a description's sources' compile (its
    output is shown only on failure), at the link or plainly; the other
    flags stay."""
    real = compiling.shutil.which("gcc")
    if real is None:
        pytest.skip("no gcc here")
    said = tmp_path / "arguments"
    wrapper = tmp_path / "bin" / "gcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {said}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    source = tmp_path / "arith.pyx"
    source.write_text(SOURCE)
    monkeypatch.setenv("CC", f"{wrapper} -Wall -Wextra -DMARKED")
    for at_link in (True, False):
        said.unlink(missing_ok=True)
        folder = tmp_path / f"at-link-{at_link}"
        compile_extensions([source], folder, cached=False, at_link=at_link)
        assert load(folder, "arith").triple(7) == 21
        compiles = [line.split() for line in said.read_text().splitlines() if " -c " in f" {line} "]
        assert compiles and all("-DMARKED" in line for line in compiles)
        assert not any(flag in line for line in compiles for flag in ("-Wall", "-Wextra"))


def test_a_module_s_c_is_built_for_sse41_only_on_an_x86_64_host_that_has_it(monkeypatch):
    """ceil and floor are one instruction with SSE4.1: the module's C asks
    for it where this host has it, and nowhere else."""
    monkeypatch.setattr(compiling.sys, "platform", "linux")
    monkeypatch.setattr(compiling.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(compiling, "_instruction_sets", lambda: "flags : fpu sse2 ssse3 sse4_1 sse4_2 avx2")
    assert compiling._module_flags() == ["-fno-math-errno", "-ffp-contract=off", "-msse4.1"]
    monkeypatch.setattr(compiling, "_instruction_sets", lambda: "flags : fpu sse2 ssse3")
    assert compiling._module_flags() == ["-fno-math-errno", "-ffp-contract=off"]
    monkeypatch.setattr(compiling, "_instruction_sets", lambda: "Features : fp asimd sse4_1")
    monkeypatch.setattr(compiling.platform, "machine", lambda: "aarch64")
    assert compiling._module_flags() == ["-fno-math-errno", "-ffp-contract=off"]
    monkeypatch.setattr(compiling.sys, "platform", "win32")
    assert compiling._module_flags() == []
