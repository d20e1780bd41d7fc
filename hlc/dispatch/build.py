"""``hlc build`` and ``hlc recalibrate``: check → profile → fit → generate → compile.

A build is a folder ``build/<lib>/`` that Python imports as a package: the
compiled dispatch module, the models, the samples, every generated source
kept for reading, and its own copy of the description and the sources it
calls (:mod:`hlc.dispatch.bundle`), so it works wherever it is moved or
installed.  A new build is made beside it in ``build/.<lib>.<stamp>.<pid>``
and exchanged with it in one atomic step, so an interrupted or failed build
or recalibration leaves the previous one importable; what a killed build
left beside it is removed by the next.  An interrupted one keeps what it
measured for ``--resume`` (:mod:`hlc.dispatch.resume`).
"""

from __future__ import annotations

import ctypes
import errno
import math
import os
import shutil
import sysconfig
import textwrap
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hlc.artefacts.files import ArtefactError
from hlc.artefacts.models import Models, TimeModel, load_each, load_used, save_used
from hlc.artefacts.models import load as load_models
from hlc.calibrate.breakdown import Breakdown
from hlc.calibrate.generate import profiling_program
from hlc.calibrate.run import Failure, ProfileResult, Progress, failures_in, profile, profile_defaults
from hlc.compile import Background, compile_module, start_module_object
from hlc.dispatch import resume as resumption
from hlc.dispatch.bundle import SOURCE_FOLDER, copy_sources, description_of, interpreter_guard, write_package_files
from hlc.dispatch.cmodels import HEADER, c_header, c_source, decisions_name, header_name
from hlc.dispatch.generate import dispatch_source
from hlc.dispatch.resume import BuildInterrupted, Interrupted, ResumeError
from hlc.errors import UserError
from hlc.language import ast
from hlc.language.expressions import evaluate
from hlc.language.nest import is_integer, loop_values
from hlc.language.parse import parse_file
from hlc.model.calibration import (
    VERIFICATION_LIMIT,
    Samples,
    by_ranks_text,
    calibrate,
    excluded_at,
    missing_implementations,
)
from hlc.model.findings import in_words_at_samples
from hlc.model.fingerprint import source_digests
from hlc.model.fit import mean_relative_error
from hlc.model.predict import Predictor
from hlc.model.terms import discovered_in_words
from hlc.model.workers import worker_count
from hlc.resources import read_text

QUICK_VALUES = 4  # values per loop in a --quick build
QUICK_PARAMETER_VALUES = 16  # values per loop over a parameter in a --quick build
QUICK_SPARE = 4  # samples beyond a model's terms that a --quick build keeps for the fit, at least
QUICK_VERIFY = 5
BREAKDOWN_FILE = "breakdown.json"  # where a build's time went


class BuildError(UserError):
    """A library cannot be built as asked (a library it uses is not built)."""


class UncertainError(UserError, ValueError):
    """A share of uncertain decisions to stop at, asked of a build that
    cannot stop at one (``uncertain``): a ValueError to a caller, a message
    without a traceback to a command (a recalibration of a quick build)."""


@dataclass
class BuildResult:
    library: str
    path: Path  # the importable folder (the link)
    models: Models
    failures: list[Failure] = field(default_factory=list)
    coverage: str | None = None
    compiled: bool = True
    seconds: float = 0.0
    checked: dict[str, float] = field(default_factory=dict)  # recalibrate --check: MRE on new samples
    refitted: list[str] | None = None  # None: everything was (re)built
    breakdown: Breakdown = field(default_factory=Breakdown)  # where the time went
    rounds: list[str] = field(default_factory=list)  # what each round of an adaptive profile did
    resumed: int | None = None  # the samples an interrupted build had taken (None: not resumed)

    @property
    def missing(self) -> list[str]:
        """The implementations this build is without, and why (one line each)."""
        return missing_implementations(self.models)


def quick_profile(library: ast.Library) -> ast.Library:
    """The description with a coarser nest: at most QUICK_VALUES values per
    loop, keeping the ends of each range where a stride allows — more where
    a model has more terms than that leaves samples for (_quick_counts)."""
    interfaces = []
    for interface in library.interfaces:
        profile_ = interface.profile
        if profile_ is None:
            interfaces.append(interface)
            continue
        counts = _quick_counts(interface, profile_.loops)
        loops = tuple(_coarser(loop, count) for loop, count in zip(profile_.loops, counts, strict=True))
        settings = tuple(s for s in profile_.settings if s.name != "verify")
        settings += (ast.Setting(profile_.line, profile_.column, "verify", (min(profile_.verify, QUICK_VERIFY),)),)
        interfaces.append(replace(interface, profile=replace(profile_, loops=loops, settings=settings)))
    return replace(library, interfaces=tuple(interfaces), used=library.used)


def _quick_counts(interface: ast.Interface, loops: tuple[ast.Loop, ...]) -> list[int]:
    """The most values each loop keeps: QUICK_VALUES (QUICK_PARAMETER_VALUES
    over a parameter), then more on the loop over inputs whose growth grows
    the nest least, until every fitted model has its quick_samples (per rank
    count, preconditions aside) or no loop can give more."""
    full = []
    for loop in loops:
        try:
            full.append(len(loop_values(loop, {})))
        except Exception:  # bounds that depend on outer loops: the loop stays as it is
            full.append(0)
    parameters = {p.name for i in interface.implementations for p in i.parameters}
    # A parameter is searched over its whole range at every call: its loop
    # keeps more values, or the model is fitted at a few and chosen between them.
    caps = [QUICK_PARAMETER_VALUES if loop.variable in parameters else QUICK_VALUES for loop in loops]

    def kept(k: int, cap: int | None = None) -> int:
        return len(loop_values(_coarser(loops[k], caps[k] if cap is None else cap), {})) if full[k] else 1

    def grown(k: int) -> tuple[int, int]:
        """The next cap of loop k that keeps more values (the full loop at the latest), and how many."""
        cap = caps[k] + 1
        while kept(k, cap) == kept(k):
            cap += 1
        return cap, kept(k, cap)

    needs = []  # (the loops concerning an implementation, the samples its model needs)
    for implementation in interface.implementations:
        model = implementation.model("time")
        if model is None or not model.fitted:
            continue
        own = {p.name for p in implementation.parameters}
        concerning = [k for k, loop in enumerate(loops) if loop.variable not in parameters - own]
        needs.append((concerning, quick_samples(model)))
    inputs = [k for k, loop in enumerate(loops) if loop.variable not in parameters and full[k]]
    while any(math.prod(kept(k) for k in concerning) < needed for concerning, needed in needs):
        growable = [k for k in inputs if kept(k) < full[k]]
        if not growable:
            break
        growth = {k: grown(k) for k in growable}
        k = min(growable, key=lambda k: (growth[k][1] / kept(k), kept(k)))  # the nest grows least
        caps[k] = growth[k][0]
    return caps


def quick_samples(model: ast.CostModel) -> int:
    """The samples a --quick build keeps for a fitted model: twice its terms,
    and QUICK_SPARE more than its terms at least. With barely more samples
    than terms, a model of many step terms fits the few samples it has and
    predicts nonsense between them."""
    terms = len(model.terms) + model.constant
    return terms + max(terms, QUICK_SPARE)


def _coarser(loop: ast.Loop, most: int) -> ast.Loop:
    """The loop with at most ``most`` of its values (at least 3), keeping both
    ends of the range where a stride allows."""
    try:
        values = loop_values(loop, {})
    except Exception:  # bounds that depend on outer loops stay as they are
        return loop
    if len(values) <= most:
        return loop
    steps = len(values) - 1
    # The smallest stride that keeps both ends of the range (when one divides the steps).
    strides = [k for k in range(1, steps + 1) if steps % k == 0 and 3 <= steps // k + 1 <= most]
    stride = strides[0] if strides else math.ceil(steps / (most - 1))
    if loop.update.operator in ("++", "+="):
        step = (values[1] - values[0]) * stride
        update = ast.Update(loop.update.line, loop.update.column, "+=", ast.Number(0, 0, step))
    else:  # geometric: the factor to the stride's power (a real one for `*= 1.5`)
        amount = evaluate(loop.update.amount, {}) if loop.update.amount is not None else 1
        factor = amount if loop.update.operator == "*=" else 2 ** amount
        factor = int(factor) ** stride if is_integer(factor) else float(factor) ** stride
        update = ast.Update(loop.update.line, loop.update.column, "*=", ast.Number(0, 0, factor))
    return replace(loop, update=update)


def has_compiler() -> bool:
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(compiler) is not None


def _used_models(library: ast.Library, folder: Path) -> dict[str, Path]:
    return {name: folder / name / "models.json" for name in library.used}


def package(library: ast.Library, models: Models, used_models: Mapping[str, Models],
            folder: Path, static: dict[str, float] | None = None) -> tuple[Models, bool]:
    """Write the dispatch module into ``folder`` and compile it, with the
    build's copy of its sources and the files that make it a package.
    Returns the models as the build records them (with the copy's
    description) and whether the module was compiled (else the package runs
    the same decisions in Python)."""
    if not library.filename.startswith("<"):
        shutil.rmtree(folder / SOURCE_FOLDER, ignore_errors=True)
        models = replace(models, origin=models.origin or str(Path(library.filename).resolve()),
                         description=copy_sources(library, folder))
        program = folder / f"profile_{library.name}.py"
        if program.exists():  # what hlc evaluate runs: from now on, on the build's copy
            copy = parse_file(folder / models.description)
            compiled = folder / "ext" if (folder / "ext").exists() else None
            program.write_text(profiling_program(copy, compiled, program.name, folder), encoding="utf-8")
    compiled = has_compiler()
    # Compiled modules, this interpreter's only: the dispatch module, or the description's own extensions.
    for_this_python = compiled or any((folder / "ext").glob("*" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")))
    write_package_files(library, folder, compiled=for_this_python)
    models.save(folder / "models.json")
    save_used(folder / "used_models.json", used_models)
    module = f"dispatch_{library.name}"
    source = write_dispatch_sources(library, models, used_models, folder, static)
    if compiled:
        compile_module(source, [folder / decisions_name(library.name)], folder)
        body = f"from .{module} import *  # noqa: F403\nfrom .{module} import __doc__, __models__  # noqa: F401\n"
    else:
        warnings.warn("no C compiler: the dispatch module runs its decisions in Python (same decisions, slower)",
                      RuntimeWarning, stacklevel=2)
        body = ("from hlc.dispatch.fallback import python_module\n\n"
                "globals().update(python_module(__file__))\n")
    if for_this_python:
        body = interpreter_guard(library) + "\n" + body
    (folder / "__init__.py").write_text(
        f'"""Library {library.name}, built by hlc — do not edit; rebuild with `hlc build`."""\n\n{body}',
        encoding="utf-8")
    return models, compiled


def write_dispatch_sources(library: ast.Library, models: Models, used_models: Mapping[str, Models],
                           folder: Path, static: Mapping[str, float] | None = None) -> Path:
    """Write the dispatch module's sources into ``folder``: the Cython and
    its header, which depend on the description alone (and the models of a
    static build), so that their compiled object comes from the cache; the
    C of the models and decisions, new with every build; the header every
    module shares.  Returns the Cython's path."""
    (folder / HEADER).write_text(read_text("templates", HEADER), encoding="utf-8")
    (folder / header_name(library.name)).write_text(c_header(library), encoding="utf-8")
    (folder / decisions_name(library.name)).write_text(c_source(library, models, used_models), encoding="utf-8")
    source = folder / f"dispatch_{library.name}.pyx"
    source.write_text(dispatch_source(library, models, used_models, static), encoding="utf-8")
    return source


def _new_version(link: Path) -> Path:
    """A version folder beside ``link`` for a build that will replace it."""
    return link.parent / f".{link.name}.{time.strftime('%Y%m%d-%H%M%S')}.{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_orphans(link: Path) -> list[Path]:
    """Remove what builds of ``link`` that were killed left beside it (their
    version folders, scratch folders and links, named after their process);
    returns what was removed.  A build whose process still runs is left alone.
    A build killed between putting the previous one aside and its own in its
    place (where folders cannot be exchanged in one step) left no build: the
    previous one is put back."""
    removed = []
    current = link.resolve() if link.is_symlink() else None  # a build of the time builds were links
    for aside in sorted(link.parent.glob(f".{link.name}.previous.*")):
        pid = aside.name.rsplit(".", 1)[-1]
        if not link.exists() and not link.is_symlink() and pid.isdigit() and not _alive(int(pid)):
            os.replace(aside, link)
    for path in link.parent.glob(f".{link.name}.*"):
        pid = path.name.rsplit(".", 1)[-1]
        if not pid.isdigit() or _alive(int(pid)) or path.resolve() == current:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one step (Linux's renameat2 with RENAME_EXCHANGE);
    False where the system or the file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    if result == 0:
        return True
    if ctypes.get_errno() in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), str(first))


def _swap(link: Path, version: Path) -> None:
    """Put ``version`` in the place of the build ``link`` and remove the one
    it replaces.  Where the two folders cannot be exchanged in one step, the
    old one is renamed aside first (named after this process, so that a
    build killed in between leaves it for the next to remove)."""
    if link.is_symlink():  # a build made when builds were links to their versions
        previous = link.resolve()
        link.unlink()
        os.replace(version, link)
        shutil.rmtree(previous, ignore_errors=True)
        return
    if not link.exists():
        os.replace(version, link)
        return
    if _exchange(version, link):
        shutil.rmtree(version, ignore_errors=True)  # the previous build, now where the new one was
        return
    aside = link.with_name(f".{link.name}.previous.{os.getpid()}")
    os.replace(link, aside)
    os.replace(version, link)
    shutil.rmtree(aside, ignore_errors=True)


def build(description: str | Path, *, out: Path | None = None, ranks: Sequence[int] | None = None,
          budget: float | None = None, quick: bool = False, seed: int = 0, progress: Progress | None = None,
          timeout: float | None = None, static: dict[str, float] | None = None,
          refit: Sequence[str] | None = None, previous: Models | None = None,
          strict: bool = False, adaptive: bool = True, origin: str | None = None,
          resume: bool = False, started: float | None = None, uncertain: float | None = None,
          host_waits: bool = False) -> BuildResult:
    """Build the library described in ``description`` on this machine.

    An implementation that fails while profiling (or cannot be fitted) is
    left out, and the build goes on without it: :attr:`BuildResult.missing`
    says which and why.  With ``strict``, that is a BuildError instead, and
    the previous build stays in place.  With ``refit``, only those
    implementations are profiled and fitted again; the others keep their
    models from ``previous`` (a models artefact).  With ``adaptive`` (the
    default, as for `hlc build` without --grid), the profile measures where
    decisions are uncertain (hlc.adaptive), within ``budget`` seconds
    (by default hlc.adaptive.default_budget), or until the models leave at
    most ``uncertain`` (a share) of the decisions uncertain
    (hlc.adaptive.uncertain_share); a quick build and a refit measure
    their whole nest.  ``origin``: where the description came from, when it
    is a build's own copy (a recalibration).  With ``host_waits``, the
    profile waits for the host's usual pace before each block, as the
    evaluator does, instead of marking the samples a slow spell hit: its
    samples agree better with another build's on a host in spells, and
    it measures less in its budget (docs/architecture.md, stage 2).

    A build interrupted (KeyboardInterrupt) while it profiles or fits keeps
    what it measured and raises :class:`~hlc.dispatch.resume.BuildInterrupted`
    (hlc.dispatch.resume); with ``resume``, the next build goes on from it,
    with the seed, rank counts, mode and static variables it was asked for
    (those given here are not used) and ``budget`` and ``host_waits`` for
    what it measures next.

    ``started``: the ``time.monotonic`` reading at which the command that
    builds began (`hlc build`: its process's start,
    hlc.calibrate.breakdown.process_started), so that the build's time, its
    account (as ``start``) and its default budget count what came before
    this call too; by default, this call's start."""
    entered = time.monotonic()
    started = entered if started is None else min(started, entered)
    if uncertain is not None and not 0.0 <= uncertain <= 1.0:
        raise UncertainError(f"uncertain: a share of the decisions, from 0 to 1, not {uncertain!r}")
    if uncertain is not None and (quick or not adaptive) and not resume:
        raise UncertainError(f"uncertain (--uncertain) stops an adaptive profile, and a "
                             f"{'quick' if quick else 'grid'} build measures its whole loop nest")
    library = parse_file(description)
    worker_count()  # a bad HLC_FIT_WORKERS is refused now, not after the compile and the first round
    link = Path(out) if out else Path("build") / library.name
    link.parent.mkdir(parents=True, exist_ok=True)
    missing = {name: path for name, path in _used_models(library, link.parent).items() if not path.exists()}
    if missing:
        raise BuildError("; ".join(
            f"{library.name} uses {name}, which has no models at {path}: build it first "
            f"(hlc build {library.used[name].filename} --out {path.parent})" for name, path in missing.items()))
    clean_orphans(link)
    version = _new_version(link)
    interrupted: Interrupted | None = None  # how the build this one resumes was asked for
    resumed = None
    if resume:
        if refit is not None:
            raise ResumeError("a refit of some implementations is not resumed: run it again")
        folder, interrupted = resumption.take(link, library)
        ranks, seed, quick = interrupted.ranks, interrupted.seed, interrupted.quick
        adaptive, static = interrupted.adaptive, interrupted.static
        os.replace(folder, version)
        (version / resumption.RECORD).unlink()
        resumed = len(Samples.read(version / "samples.jsonl").samples)
    else:
        version.mkdir()
    meanwhile = None
    done_profiling = False
    samples = version / "samples.jsonl"
    try:
        profiled = quick_profile(library) if quick else library
        rounds: list[str] = []
        meanwhile = _start_dispatch_object(library, version / ".dispatch") if static is None else None
        if interrupted is not None and interrupted.profiled:  # it was fitting: nothing is left to measure
            ranks, _ = profile_defaults(library, ranks, timeout)
            result = ProfileResult(samples, version / f"profile_{library.name}.py", failures_in(samples),
                                   ranks=list(ranks))
        elif adaptive and refit is None and not quick:
            result = _profile_adaptively(profiled, samples, version, link, ranks=ranks, budget=budget, seed=seed,
                                         timeout=timeout, progress=progress, report=rounds.append,
                                         meanwhile=meanwhile, started=started, uncertain=uncertain,
                                         host_waits=host_waits)
        else:
            result = profile(profiled, samples, version, ranks=ranks, budget=budget, seed=seed, timeout=timeout,
                             progress=progress, implementations=refit, meanwhile=meanwhile, smoke=quick,
                             resume=interrupted is not None, host_waits=host_waits)
        done_profiling = True
        spent = Breakdown()
        spent.add("start", entered - started)
        spent.merge(result.breakdown.closed())
        used_paths = _used_models(library, link.parent)
        with spent.spending("fit"):  # beside what is left of the dispatch module's object
            models = calibrate(library, Samples.load(samples), models_of=used_paths, quick=quick)
        if refit is not None and previous is not None:
            kept = {name: entry for name, entry in previous.implementations.items()
                    if name not in refit and name in models.implementations}
            models = replace(models, implementations={**models.implementations, **kept})
        used_models = load_each(used_paths)
        lost = missing_implementations(models)
        if strict and lost:
            kept = f"; {link} is as it was" if link.exists() else ""
            raise BuildError(f"{library.name} would be built without " + "; without ".join(lost)
                             + f"\n(--strict: nothing was installed{kept})")
        models = replace(models, static=static or None, origin=origin or models.origin)
        with spent.spending("dispatch module"):
            if meanwhile is not None:
                meanwhile.wait()
            shutil.rmtree(version / ".dispatch", ignore_errors=True)
            models, compiled = package(library, models, used_models, version, static)
        spent.wall = time.monotonic() - started
        spent.closed().save(version / BREAKDOWN_FILE)
    except BaseException as error:
        if meanwhile is not None:
            meanwhile.kill()
        shutil.rmtree(version / ".dispatch", ignore_errors=True)
        if isinstance(error, KeyboardInterrupt) and refit is None and _measured(samples):
            record = Interrupted(source_digests(library), seed, None if ranks is None else list(ranks), quick,
                                 adaptive, static, done_profiling)
            raise BuildInterrupted(resumption.keep(version, link, record)) from error
        shutil.rmtree(version, ignore_errors=True)  # the previous build stays as it was
        raise
    _swap(link, version)
    resumption.discard(link)  # what an interrupted build kept: this build supersedes it
    return BuildResult(library.name, link, models, result.failures, result.coverage, compiled,
                       time.monotonic() - started, refitted=list(refit) if refit is not None else None,
                       breakdown=spent.closed(), rounds=rounds, resumed=resumed)


def _measured(samples: Path) -> bool:
    """Whether the samples file holds a sample: what an interrupted build keeps."""
    try:
        return bool(Samples.read(samples).samples)
    except (OSError, ArtefactError):
        return False


def _profile_adaptively(library: ast.Library, samples: Path, version: Path, link: Path, *,
                        ranks: Sequence[int] | None, budget: float | None, seed: int, timeout: float | None,
                        progress: Progress | None, report: Callable[[str], None],
                        meanwhile: Background | None, started: float,
                        uncertain: float | None = None, host_waits: bool = False) -> ProfileResult:
    from hlc import adaptive

    ranks, timeout = profile_defaults(library, ranks, timeout)
    result, _ = adaptive.profile_adaptively(
        library, samples, version, ranks=ranks, budget=budget, seed=seed, timeout=timeout, progress=progress,
        models_of=_used_models(library, link.parent), report=report, meanwhile=meanwhile, build_started=started,
        uncertain=uncertain, host_waits=host_waits)
    return result


def _start_dispatch_object(library: ast.Library, scratch: Path) -> Background | None:
    """Start compiling the object of the dispatch module's Cython, which
    depends on the description alone (hlc.compile.start_module_object):
    beside the compile of the description's own sources, then whenever
    nothing is timed (the profile pauses it), and beside the last fit.
    None where the object comes from the cache."""
    if not has_compiler():
        return None
    scratch.mkdir(parents=True, exist_ok=True)
    source = write_dispatch_sources(library, Models(library.name, "", {}), {}, scratch)
    return start_module_object(source)


def check_models(target: Path, *, ranks: Sequence[int] | None = None, seed: int = 1,
                 timeout: float | None = None, progress: Progress | None = None,
                 host_waits: bool = False) -> dict[str, float]:
    """The verification MRE of each calibrated model of a build on fresh random
    samples (a seed other than the calibration's), taking nothing else;
    ``host_waits`` as for ``build``."""
    models = load_models(target / "models.json")
    used = load_used(target / "used_models.json")
    library = parse_file(description_of(models, target))
    scratch = target.parent / f".{target.name}.check.{os.getpid()}"  # clean_orphans knows it by the pid
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        if (target / "ext").exists():  # the compiled sources, so they are not compiled again
            shutil.copytree(target / "ext", scratch / "ext")
        profile(library, scratch / "check.jsonl", scratch, ranks=ranks, seed=seed, timeout=timeout,
                progress=progress, verification_only=True, host_waits=host_waits)
        samples = Samples.load(scratch / "check.jsonl")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    predictor = Predictor.of_models(library, models, used)
    errors = {}
    for interface in library.interfaces:
        for implementation in interface.implementations:
            taken = samples.of(interface.name, implementation.name, verify=True)
            if not taken or not models.time(implementation.name).usable:
                continue
            predicted = [predictor.evaluate(implementation.name, s.environment)
                         for s in taken]
            errors[implementation.name] = mean_relative_error(
                [s.seconds for s in taken], predicted)
    return errors


def recalibrate(target: str | Path, *, check: bool = False, **options: Any) -> BuildResult:
    """Build again, on this machine, the library of a build folder or description.

    With ``check``, take only fresh verification samples first and refit only
    the implementations whose models no longer predict them within
    VERIFICATION_LIMIT; when all still do, nothing is rebuilt.  A check's
    refit is not kept when interrupted, so it is not resumed."""
    if check and options.get("resume"):
        raise ResumeError("a recalibration with --check is not resumed: run it again")
    target = Path(target)
    if target.suffix == ".hl":
        library = parse_file(target)
        if not check:
            return build(target, **options)
        target = Path(options.get("out") or Path("build") / library.name)
    models = load_models(target / "models.json")
    options.setdefault("quick", models.fingerprint.quick)
    options.pop("out", None)
    description = description_of(models, target)
    options.setdefault("origin", models.origin)
    if not check:
        return build(description, out=target, **options)
    started = time.monotonic() if options.get("started") is None else options["started"]
    checked = check_models(target, ranks=options.get("ranks"), timeout=options.get("timeout"),
                           progress=options.get("progress"), host_waits=options.get("host_waits", False))
    stale = [name for name, error in checked.items() if error > VERIFICATION_LIMIT]
    if not stale:
        return BuildResult(models.library, target, models, seconds=time.monotonic() - started,
                           checked=checked, refitted=[])
    result = build(description, out=target, refit=stale, previous=models, **options)
    result.checked = checked
    return result


def refit(target: str | Path, *, description: str | Path | None = None, **fit_options: Any) -> BuildResult:
    """Fit a build's models again from its stored samples, measuring nothing,
    and install them as ``recalibrate`` does: the new models, dispatch module
    and all go into a new version folder that replaces the build in one step.

    ``description`` fits another description to the same samples (its
    implementations, parameters and variables must be the profiled ones);
    the build then records and uses that description."""
    started = time.monotonic()
    link = Path(target)
    samples_file = link / "samples.jsonl"
    if not (link / "models.json").exists() or not samples_file.exists():
        raise BuildError(f"{target} is not a built library with stored samples (models.json, samples.jsonl)")
    previous = load_models(link / "models.json")
    library = parse_file(description or description_of(previous, link))
    samples = Samples.load(samples_file)
    if library.name != samples.header.library:
        raise BuildError(f"{samples_file} holds samples of library '{samples.header.library}', "
                         f"not of '{library.name}'")
    used_paths = _used_models(library, link.parent)
    used_models = load_each(used_paths)
    models = calibrate(library, samples, models_of=used_paths, quick=previous.fingerprint.quick, **fit_options)
    models = replace(models, static=previous.static,
                     origin=previous.origin if description is None else models.origin)
    clean_orphans(link)
    version = _new_version(link)
    try:
        shutil.copytree(link.resolve(), version, symlinks=True)
        models, compiled = package(library, models, used_models, version, previous.static)
    except BaseException:
        shutil.rmtree(version, ignore_errors=True)
        raise
    _swap(link, version)
    return BuildResult(library.name, link, models, compiled=compiled, seconds=time.monotonic() - started)


#: Columns the summary's notes are wrapped to.
SUMMARY_WIDTH = 100


def _wrapped(text: str, indent: str = "", hanging: str = "    ") -> list[str]:
    return textwrap.wrap(text, SUMMARY_WIDTH, initial_indent=indent, subsequent_indent=hanging,
                         break_long_words=False, break_on_hyphens=False) or [indent]


def _exclusion(name: str, entry: TimeModel) -> str:
    """Why an implementation has no model; for one excluded while
    profiling, where, and how to keep it where it works: the exclusion is
    the whole implementation's, and a precondition is the author's."""
    at = excluded_at(entry) if entry.status == "excluded" else ""
    if not at:
        return entry.cause or ""
    return f"{entry.cause} (at {at}); a `requires` that leaves that point out keeps {name} where it works"


#: The findings of each model a build's summary lists, the largest first
#: (the report lists more, hlc.model.findings.MOST_LISTED).
SUMMARY_FINDINGS = 3


def _findings_of(result: BuildResult) -> Callable[[str, TimeModel], list[str]]:
    """What the fitter found in each model, in words, the findings weighed
    at the build's samples of that implementation (hlc.model.findings); in
    the order found where the build's description or samples cannot be read."""
    try:
        library = parse_file(description_of(result.models, result.path))
        predictor = Predictor.of_models(library, result.models, load_used(result.path / "used_models.json"))
        samples = Samples.read(result.path / "samples.jsonl").samples
    except (OSError, UserError, ArtefactError):
        return lambda name, entry: discovered_in_words(entry)

    def weigh(name: str, entry: TimeModel) -> list[str]:
        implementation = next((i for i in library.implementations if i.name == name), None)
        return in_words_at_samples(predictor, implementation, entry, samples, most=SUMMARY_FINDINGS)

    return weigh


def summary_table(result: BuildResult) -> str:
    """Implementation, status, terms kept and verification MRE, one line
    each, its model's warnings beneath it, wrapped: a busy host gives most
    models a sentence or two, which one line per model ran to 400
    characters wide."""
    lines = []
    if result.checked:
        lines.append("check on fresh verification samples (MRE of the models as they were):")
        for name, error in result.checked.items():
            refitted = name in (result.refitted or [])
            lines.append(f"  {name:<16} {error:.3f}" + (f"  > {VERIFICATION_LIMIT}: refitted" if refitted else ""))
        if result.refitted == []:
            lines.append("every model still fits: nothing was rebuilt")
            return "\n".join(lines)
        lines.append("")
    lines.append(f"{'implementation':<18} {'status':<10} {'terms kept':>10} {'verification MRE':>17}")
    times = result.models.times()
    for name, entry in times.items():
        kept = len(entry.kept) if entry.status == "fitted" else "—"
        mre = entry.verification_mre
        shown = f"{mre:.3f}" if mre is not None else "—"
        lines.append(f"{name:<18} {entry.status:<10} {kept!s:>10} {shown:>17}")
        for note in entry.warnings or ([_exclusion(name, entry)] if entry.cause else []):
            lines += _wrapped(note, "  - ")
    by_ranks = [(name, entry.verification_mre_by_ranks) for name, entry in times.items()
                if entry.verification_mre_by_ranks]
    if by_ranks:
        lines += _wrapped("verification MRE by rank count: " + "; ".join(
            f"{name} {by_ranks_text(errors)}" for name, errors in by_ranks))
    weigh = _findings_of(result)
    for name, entry in times.items():
        found = weigh(name, entry) if entry.status == "fitted" else []
        if found:
            lines.append(f"{name}: the fitter found that (the largest first)")
            for finding in found:
                lines += _wrapped(finding, "  - ")
    disturbed = sum(entry.disturbed_samples for entry in times.values())
    if disturbed:
        lines.append(f"{disturbed} samples taken while the host ran slow or never settled were left out of the fits")
    if result.models.fingerprint.quick:
        lines.append("(quick build: a reduced loop nest; the models are rough)")
    if result.coverage:
        lines.append(result.coverage)
    if not result.compiled:
        lines.append("(no C compiler: the decisions run in Python)")
    return "\n".join(lines)
