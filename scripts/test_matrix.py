"""Run the tests on every Python and dependency range the project claims.

The project claims the CPython versions of its classifiers and the
dependency ranges of ``pyproject.toml``.  This script runs, one after the
other:

* the full suite on the interpreter that runs this script (``make test``
  runs it from ``.venv``), but for the tests marked ``slow``: end-to-end
  runs of minutes, which the quick builds of the other tests stand for
  (``make test-slow`` runs them);
* a representative subset (SUBSET) on every other claimed CPython this
  machine offers, each in its own virtual environment ``.venv-3.X`` with the
  newest releases pip resolves for it;
* the same subset on the oldest claimed CPython found, in ``.venv-lowest``,
  with the oldest release series each declared lower bound admits
  (``numpy>=1.26`` installs the newest 1.26.x).

The other runs' environments are made first, side by side (pip's downloads
and unpacking overlap, and no test runs beside them); the subset runs leave
out LEFT_OUT, tests whose time goes to compiling or profiling along paths
that no interpreter or release changes.  A claimed CPython that cannot be
found is skipped with the reason printed.
The script ends with one line per run with its pass and fail counts, and a
total; it exits non-zero when any run failed or could not be set up.

    python scripts/test_matrix.py              # everything
    python scripts/test_matrix.py --only 3.13  # one run (default, 3.X or lowest)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: What the other interpreters and the lowest versions run: the tests of
#: everything that touches a compiled or numeric dependency (the Cython
#: kernels, the SPMD sorts under mpiexec -n 2 and -n 3, the fitter on SciPy
#: and numpy.linalg and in worker processes, the MPI runtime), a quick build of a small library,
#: and the language.
SUBSET = [
    "tests/language",
    "tests/test_check_command.py",
    "tests/test_compile.py",
    "tests/test_optimize.py",
    "tests/model/test_fit.py",
    "tests/model/test_workers.py",
    "tests/runtime/test_runtime.py",
    "tests/libraries/test_sort.py",
    "tests/dispatch/test_build.py::test_a_build_without_an_implementation_ends_with_a_warning_and_strict_refuses_it",
]
#: What the subset runs leave out of SUBSET: tests whose time goes to
#: compiling or profiling along paths that depend on no interpreter or
#: release (the compile cache's bookkeeping, a compiler without link-time
#: code generation, a calibration of the MPI runtime, the fit workers'
#: comparison of two libraries' fits); the full suite runs them.
LEFT_OUT = [
    "tests/test_compile.py::test_an_uncached_compile_neither_reads_nor_fills_the_cache",
    "tests/test_compile.py::test_a_second_build_takes_the_extension_from_the_cache",
    "tests/test_compile.py::test_what_the_code_depends_on_changes_the_key",
    "tests/test_compile.py::test_a_module_takes_its_cython_from_the_cache_and_compiles_its_c_afresh",
    "tests/test_compile.py::test_a_compiler_that_refuses_to_generate_code_at_the_link_compiles_plainly",
    "tests/test_compile.py::test_an_object_of_undefined_code_is_not_kept_even_when_started_early",
    "tests/test_compile.py::test_a_module_object_started_early_is_the_one_its_module_links",
    "tests/runtime/test_runtime.py::test_the_runtime_library_calibrates_its_primitives",
    "tests/model/test_workers.py::test_the_fits_are_the_same_side_by_side_as_one_after_the_other[sort.hl-sort-used0]",
    "tests/model/test_workers.py::test_the_fits_are_the_same_side_by_side_as_one_after_the_other[stencil.hl-stencil-used1]",
]
#: What the subset runs set: the parser's fuzzing tries 400 mutated
#: descriptions instead of 2,000 (tests/language/test_fuzz.py).
SUBSET_ENVIRONMENT = {"HLC_FUZZ_EXAMPLES": "400"}
#: Packages whose versions each run reports.
SHOWN = ("numpy", "scipy", "Cython", "mpi4py", "mpich")


@dataclass
class Outcome:
    """One run of the matrix."""

    name: str  # "CPython 3.12.1, newest releases, subset"
    versions: str = ""
    passed: int = 0
    failed: int = 0  # failures and errors
    skipped: int = 0
    seconds: float = 0.0
    problem: str | None = None  # set-up failed, or no tests ran
    absent: bool = False  # the interpreter is not on this machine: skipped, not failed

    def line(self) -> str:
        if self.absent:
            return f"{self.name}: skipped ({self.problem})"
        counts = f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped"
        where = f" [{self.versions}]" if self.versions else ""
        trouble = f"; {self.problem}" if self.problem else ""
        return f"{self.name}{where}: {counts} in {self.seconds:.0f} s{trouble}"

    @property
    def ok(self) -> bool:
        return self.absent or (self.problem is None and self.failed == 0)


def claims() -> tuple[list[str], list[str]]:
    """The claimed CPython versions ("3.12") and the requirements (with the
    test extra) from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    versions = sorted({m.group(1) for c in project.get("classifiers", [])
                       if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))},
                      key=lambda v: tuple(map(int, v.split("."))))
    requirements = list(project["dependencies"]) + list(project.get("optional-dependencies", {}).get("test", []))
    return versions, requirements


def lowest_constraints(requirements: list[str]) -> list[str]:
    """``name==X.Y.*`` for each ``name>=X.Y[.Z]``: the oldest release series
    the lower bound admits, newest patch release in it."""
    constraints = []
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*(\d+(?:\.\d+)?)", requirement)
        if match:
            constraints.append(f"{match.group(1)}=={match.group(2)}.*")
    return constraints


def find_interpreter(version: str) -> tuple[Path | None, str]:
    """An interpreter of CPython ``version`` on this machine, and where it was
    looked for when there is none."""
    candidates: list[Path] = []
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(Path(on_path))
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        installed = [p for p in pyenv.iterdir() if re.fullmatch(rf"{re.escape(version)}\.\d+", p.name)]
        for folder in sorted(installed, key=lambda p: int(p.name.rsplit(".", 1)[1]), reverse=True):
            candidates.append(folder / "bin" / f"python{version}")
    candidates += [Path(f"/usr/bin/python{version}"), Path(f"/usr/local/bin/python{version}")]
    for candidate in candidates:
        if not candidate.exists():
            continue
        probe = subprocess.run([str(candidate), "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate, ""
    return None, f"no python{version} on PATH, in {pyenv} or in /usr/bin, /usr/local/bin"


def full_version(python: Path | str) -> str:
    return subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True).stdout.strip()


def package_versions(python: Path | str) -> str:
    code = ("import importlib.metadata as m\n"
            f"for name in {SHOWN!r}:\n"
            "    try: print(name, m.version(name))\n"
            "    except m.PackageNotFoundError: print(name, 'absent')")
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return ", ".join(result.stdout.split("\n")[:-1]) if result.returncode == 0 else "versions unknown"


def make_venv(interpreter: Path, folder: Path, requirements: list[str], constraints: list[str] | None) -> Path:
    """A virtual environment with hlc's requirements and its test extra: the
    newest releases pip resolves, or those allowed by ``constraints``; hlc
    itself is installed by :func:`install_hlc`.  Environments can be made
    side by side: this writes nothing into the checkout.  Raises
    RuntimeError with pip's last lines when it cannot be made."""
    python = folder / "bin" / "python"
    steps = [] if python.exists() else [[str(interpreter), "-m", "venv", str(folder)]]
    steps.append([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    install = [str(python), "-m", "pip", "install", "--quiet", "--upgrade", "--upgrade-strategy", "eager"]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write("\n".join(constraints or []) + "\n")
    if constraints:
        install += ["--constraint", handle.name]
    steps.append(install + requirements)
    try:
        for step in steps:
            _pip(step)
    finally:
        os.unlink(handle.name)
    return python


def install_hlc(python: Path) -> None:
    """hlc, editable, into the environment of ``python`` (its requirements are
    there already).  One environment at a time: the install writes the
    checkout's ``hlc.egg-info``."""
    _pip([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(ROOT)])


def _pip(step: list[str]) -> None:
    result = subprocess.run(step, capture_output=True, text=True, cwd=ROOT)
    if result.returncode != 0:
        shown = [line for line in (result.stdout + result.stderr).splitlines()
                 if not line.startswith("WARNING: Location")]
        raise RuntimeError(f"{' '.join(step[:4])} … failed:\n" + "\n".join(shown[-15:]))


def make_venvs(plans: list[Plan], requirements: list[str]) -> None:
    """Make the environments of ``plans`` side by side, before any test runs
    (pip's downloads and unpacking overlap; no test is timed beside them),
    then install hlc into each; a plan that cannot be set up gets its
    ``problem``."""
    if not plans:
        return
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(plans)) as pool:
        made = {pool.submit(make_venv, plan.interpreter, plan.folder, requirements, plan.constraints): plan
                for plan in plans}
        for future in concurrent.futures.as_completed(made):
            plan = made[future]
            try:
                plan.python = future.result()
                install_hlc(plan.python)
            except RuntimeError as error:
                plan.problem = f"could not set up {plan.folder.name}"
                print(error, flush=True)
    print(f"{', '.join(plan.folder.name for plan in plans)} set up side by side in "
          f"{time.monotonic() - started:.0f} s", flush=True)


def run_tests(python: Path | str, selection: list[str], outcome: Outcome,
              environment: dict[str, str] | None = None) -> None:
    """Run pytest on ``selection`` (the whole suite when empty), output shown
    as it comes, with ``environment`` added to this process's; counts from
    its JUnit XML."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "junit.xml"
        command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *selection]
        started = time.monotonic()
        result = subprocess.run(command, cwd=ROOT, env={**os.environ, **(environment or {})})
        outcome.seconds = time.monotonic() - started
        if not report.exists():
            outcome.problem = f"pytest wrote no report (exit status {result.returncode})"
            return
        suites = ElementTree.parse(report).getroot()
        suites = [suites] if suites.tag == "testsuite" else list(suites)
        total = sum(int(s.get("tests", 0)) for s in suites)
        outcome.failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
        outcome.skipped = sum(int(s.get("skipped", 0)) for s in suites)
        outcome.passed = total - outcome.failed - outcome.skipped
        if result.returncode not in (0, 1):
            outcome.problem = f"pytest exited with status {result.returncode}"
        elif total == 0:
            outcome.problem = "no tests ran"


def banner(text: str) -> None:
    print(f"\n{'=' * 8} {text} {'=' * max(8, 100 - len(text))}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", metavar="RUN",
                        help="run only these: 'default', a CPython version such as 3.13, or 'lowest'")
    args = parser.parse_args()
    wanted = set(args.only or [])

    def chosen(name: str) -> bool:
        return not wanted or name in wanted

    versions, requirements = claims()
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if here not in versions:
        print(f"warning: this interpreter, CPython {here}, is not among the claimed {', '.join(versions)}")
    outcomes: list[Outcome | Plan] = []
    found: dict[str, Path] = {}
    for version in versions:
        interpreter, looked = find_interpreter(version)
        if interpreter is not None:
            found[version] = interpreter
        if version == here or not chosen(version):
            continue
        if interpreter is None:
            outcomes.append(Outcome(f"CPython {version}", problem=looked, absent=True))
            print(f"CPython {version}: skipped, {looked}", flush=True)
            continue
        outcomes.append(Plan(f"CPython {full_version(interpreter)}, newest releases, subset", interpreter,
                             ROOT / f".venv-{version}", None))
    if chosen("lowest"):
        oldest = next((v for v in versions if v in found), None)
        if oldest is None:
            outcomes.append(Outcome("lowest declared versions", problem="no claimed CPython found", absent=True))
        else:
            constraints = lowest_constraints(requirements)
            print(f"lowest declared versions: {' '.join(constraints)}", flush=True)
            outcomes.append(Plan(f"CPython {full_version(found[oldest])}, lowest declared versions, subset",
                                 found[oldest], ROOT / ".venv-lowest", constraints))
    make_venvs([plan for plan in outcomes if isinstance(plan, Plan)], requirements)

    if chosen("default"):
        outcome = Outcome(f"CPython {full_version(sys.executable)}, this environment, full suite but the slow "
                          f"end-to-end runs", versions=package_versions(sys.executable))
        banner(outcome.name)
        run_tests(sys.executable, ["-m", "not slow"], outcome)
        outcomes.insert(0, outcome)
    outcomes = [subset_run(entry) if isinstance(entry, Plan) else entry for entry in outcomes]

    print(f"\n{'=' * 8} the matrix {'=' * 92}")
    for outcome in outcomes:
        print(("ok     " if outcome.ok else "FAILED ") + outcome.line())
    ran = [o for o in outcomes if not o.absent]
    print(f"total: {sum(o.passed for o in ran)} passed, {sum(o.failed for o in ran)} failed, "
          f"{sum(o.skipped for o in ran)} skipped", flush=True)
    return 0 if ran and all(o.ok for o in outcomes) else 1


@dataclass
class Plan:
    """A subset run: its interpreter, its environment and the constraints on
    its releases; ``python`` once the environment is made."""

    name: str
    interpreter: Path
    folder: Path
    constraints: list[str] | None
    python: Path | None = None
    problem: str | None = None


def subset_run(plan: Plan) -> Outcome:
    outcome = Outcome(plan.name)
    banner(plan.name)
    if plan.python is None:
        outcome.problem = plan.problem or f"could not set up {plan.folder.name}"
        return outcome
    outcome.versions = package_versions(plan.python)
    run_tests(plan.python, [*SUBSET, *(f"--deselect={test}" for test in LEFT_OUT)], outcome, SUBSET_ENVIRONMENT)
    return outcome


if __name__ == "__main__":
    sys.exit(main())
