"""The ``hlc`` command.

One parser declares every subcommand; each has one ``cmd_<name>`` function,
dispatched from :data:`COMMANDS`.  Library code raises typed exceptions; only
:func:`main` turns them into messages and exit codes (2 for a user error).
Heavy imports happen inside the commands, so ``hlc --help`` is instant.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

USER_ERROR = 2


#: Each command: its line in ``hlc --help``, then what ``hlc COMMAND --help`` says of it.
COMMAND_HELP = {
    "check": (
        "parse and check descriptions, print what they declare",
        "Parse and check library descriptions (.hl files). Prints a summary of each, or every error found."),
    "profile": (
        "profile every implementation of a description",
        "Generate the profiling program of a description, run it (under mpiexec for several ranks) and write the "
        "samples."),
    "fit": (
        "fit and verify the models of every implementation",
        "Fit each implementation's cost model to its samples (weighted SVD, irrelevant terms removed), verify it "
        "on the random verification samples, and write the models file.  Given a build folder, refit the build "
        "from its stored samples, measuring nothing, and install the new models and dispatch module in one step."),
    "build": (
        "profile, fit, generate and compile a library's dispatch module",
        "Check the description, profile every implementation, fit and verify the models, generate the dispatch "
        "module and compile it into an importable package."),
    "recalibrate": (
        "profile and fit again on this machine, atomically",
        "Re-profile, refit, regenerate and recompile a built library on this machine; the previous build stays "
        "importable until the new one is complete."),
    "explain": (
        "why a built library chooses what it chooses for some variables",
        "Print the dispatch module's explanation for the given explanatory variables: each implementation's "
        "predicted time, the chosen one and its parameters, the terms that dominate, and the calibration."),
    "evaluate": (
        "measure a built library's choices against an oracle",
        "Draw held-out points over the calibrated domain, time every alternative there side by side with the "
        "dispatched call, and print how often the choice is right and what a wrong one costs. Writes "
        "BUILD/evaluation.json (read by hlc report)."),
    "report": (
        "write an HTML report of a built library, with plots",
        "Write BUILD/report/index.html: each model's table and fit plots, prediction-region maps (with hlc "
        "evaluate's wrong choices overlaid), and the models against their parameters."),
}


def create_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hlc",
        description="The high-level library compiler: calibrated cost models choose the fastest "
                    "implementation of a library on every call.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check, profile, fit, build, recalibrate, explain, evaluate, report = (
        commands.add_parser(name, help=summary, description=description)
        for name, (summary, description) in COMMAND_HELP.items())
    check.add_argument("files", nargs="+", metavar="FILE", help="description files")
    check.add_argument("-q", "--quiet", action="store_true", help="print errors and warnings only")
    profile.add_argument("description", metavar="LIB.hl")
    profile.add_argument("-o", "--out", metavar="SAMPLES", help="samples file (default BUILD/samples.jsonl)")
    profile.add_argument("--build", metavar="DIR", help="where the program goes (default build/<library>.profile)")
    profile.add_argument("--procs", metavar="P[,P…]", type=_rank_list,
                         help="rank counts to profile with (default: the description's 'ranks')")
    profile.add_argument("--budget", metavar="SECONDS", type=float,
                         help="stop taking new points after this long, and say what was covered")
    profile.add_argument("--resume", action="store_true", help="continue an interrupted run from its samples file")
    profile.add_argument("--seed", type=int, default=0, help="seed of the random inputs and verification points")
    profile.add_argument("--timeout", type=float, metavar="SECONDS",
                         help="longest one timing may take (default: the description's 'timeout')")
    _host_waits_option(profile)
    fit.add_argument("samples", metavar="SAMPLES", help="samples file written by hlc profile, or a build folder")
    fit.add_argument("-o", "--out", metavar="MODELS", help="models file (default: models.json beside SAMPLES)")
    fit.add_argument("--absolute", action="store_true", help="minimize absolute instead of relative error")
    fit.add_argument("--confidence", type=float, default=0.95, metavar="C",
                     help="confidence level of the relevance test (default 0.95)")
    fit.add_argument("--no-discovery", dest="discovering", action="store_false",
                     help="fit the written terms only: add no steps or hinges found in the samples")
    fit.add_argument("--description", metavar="LIB.hl", help="description (default: the one the samples or the "
                                                            "build name)")
    fit.add_argument("--uses", action="append", default=[], metavar="NAME=MODELS",
                     help="models file of a used library (default build/NAME/models.json)")
    build.add_argument("description", metavar="LIB.hl")
    build.add_argument("--static", nargs="+", metavar="VAR=VALUE", type=_assignment,
                       help="decide at build time for this workload: calls go straight to the chosen "
                            "implementation (thesis §4.6)")
    _build_options(build)

    recalibrate.add_argument("target", metavar="BUILD|LIB.hl", help="a build folder or a description")
    recalibrate.add_argument("--check", action="store_true",
                             help="take only fresh verification samples; refit only the implementations "
                                  "whose models no longer predict them (nothing, when all do)")
    _build_options(recalibrate)

    explain.add_argument("build", metavar="BUILD", help="a built library (the folder hlc build wrote)")
    explain.add_argument("variables", nargs="+", metavar="VAR=VALUE", type=_assignment,
                         help="every explanatory variable of the interface; P (and logP) optional")
    explain.add_argument("--interface", help="which interface (default: the first)")

    evaluate.add_argument("build", metavar="BUILD", help="a built library (the folder hlc build wrote); with "
                                                        "--replay, a models file will do, or another exhaustive "
                                                        "evaluation of the same points, whose fastest candidates "
                                                        "are judged (how often the oracle agrees with itself)")
    evaluate.add_argument("--points", type=int, default=200, help="held-out points per interface and rank count "
                                                                  "(default 200)")
    evaluate.add_argument("--procs", metavar="P[,P…]", type=_rank_list, help="rank counts to run at (default 1)")
    evaluate.add_argument("--seed", type=int, default=1, help="seed of the points and inputs (default 1)")
    evaluate.add_argument("--params", choices=("chosen", "exhaustive"), default="chosen",
                          help="time parameterized implementations at the chosen parameters only (default), "
                               "or at every value the dispatcher chooses among too")
    evaluate.add_argument("--tolerance", type=float,
                          help="a choice within this fraction of the fastest is right (default 0.03; with "
                               "--replay, the stored evaluation's)")
    evaluate.add_argument("--baseline", metavar="IMPL", help="the implementation to compare against "
                                                             "(default: the interface's reference)")
    evaluate.add_argument("--json", metavar="OUT", help="also write the figures and judged points here")
    evaluate.add_argument("--resume", action="store_true", help="continue an interrupted evaluation")
    evaluate.add_argument("--timeout", type=float, metavar="SECONDS", help="longest one timing may take")
    evaluate.add_argument("--replay", nargs="*", metavar="EVALUATION",
                          help="time nothing: judge BUILD's models against the candidates timed by a stored "
                               "evaluation made with --params exhaustive (default: BUILD/evaluation.json), or "
                               "by several of the same points together, their rounds taken together")

    report.add_argument("build", metavar="BUILD", help="a built library (the folder hlc build wrote)")
    report.add_argument("--out", metavar="DIR", help="folder of the page and its images (default BUILD/report)")
    report.add_argument("--map", dest="maps", action="append", metavar="X,Y", type=_pair,
                        help="draw a region map over these two variables (repeatable)")
    report.add_argument("--fix", nargs="+", metavar="VAR=VALUE", type=_assignment, default=[],
                        help="values of the variables a map holds fixed (default: the middle of their range)")
    return parser


def _pair(text: str) -> tuple[str, str]:
    names = [part.strip() for part in text.split(",")]
    if len(names) != 2 or not all(names):
        raise argparse.ArgumentTypeError(f"expected two variables X,Y, not {text!r}")
    return names[0], names[1]


def _build_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--out", metavar="DIR", help="the package folder (default build/<library>)")
    command.add_argument("--procs", metavar="P[,P…]", type=_rank_list, help="rank counts to calibrate for")
    command.add_argument("--budget", metavar="SECONDS", type=float, help="stop profiling after this long")
    command.add_argument("--grid", action="store_true",
                         help="measure every point of the loop nest, in a random order, until done or --budget "
                              "is spent; by default a build measures a space-filling part of it, then, round "
                              "after round, where decisions are uncertain, where the measured points leave gaps "
                              "and then the rest, farthest first, timing at each point the candidates that may "
                              "win there, then measuring the uncertain decisions again, until nothing is left "
                              "to take or --budget (default: 45 s of profiling; a build that compiles first "
                              "profiles for what keeps it within 55 s in all, 30 s at least) is spent")
    command.add_argument("--uncertain", metavar="SHARE", type=_share,
                         help="stop profiling once the models leave at most this share of the loop nest's "
                              "decisions uncertain (two choices' confidence bands overlap, or one has no model "
                              "yet), every point has a measured neighbour and every model is as accurate as "
                              "the timings or densely sampled, with budget left or not: 0.05 or 5%%; an "
                              "adaptive build's, not --grid's or --quick's")
    command.add_argument("--quick", action="store_true", default=None,
                         help="a reduced loop nest, for a smoke build (recorded in the fingerprint)")
    command.add_argument("--seed", type=int, help="seed of the random inputs (default 0)")
    command.add_argument("--timeout", type=float, metavar="SECONDS", help="longest one timing may take")
    command.add_argument("--strict", action="store_true",
                         help="fail, keeping the previous build, when an implementation fails while profiling "
                              "or cannot be fitted (by default the library is built without it, with a warning)")
    command.add_argument("--resume", action="store_true",
                         help="go on from what an interrupted build measured (kept beside the build as "
                              ".<library>.interrupted), with its seed, rank counts and mode; --budget is then "
                              "for what it measures next")
    _host_waits_option(command)


def _host_waits_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--host-waits", action="store_true",
                         help="wait for the host's usual pace before each block of timings, and time a block "
                              "again when the host slowed down during it, within a quarter of the time, as hlc "
                              "evaluate does: samples that agree better with another profile's on a host that "
                              "runs in slow spells, fewer of them in a budget; by default the profile marks the "
                              "samples a spell slowed, and the fit sets them apart")


def _assignment(text: str) -> tuple[str, float]:
    name, _, value = text.partition("=")
    try:
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected VAR=NUMBER, not {text!r}") from None


def _rank_list(text: str) -> list[int]:
    try:
        ranks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected rank counts like 1,2,4, not {text!r}") from None
    if not ranks or min(ranks) < 1:
        raise argparse.ArgumentTypeError(f"rank counts must be positive integers, not {text!r}")
    return ranks


def _share(text: str) -> float:
    """A share from 0 to 1, written as a fraction (0.05) or a percentage (5%)."""
    number = text.strip()
    percent = number.endswith("%")
    try:
        share = float(number[:-1] if percent else number) / (100.0 if percent else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share like 0.05 or 5%, not {text!r}") from None
    if not 0.0 <= share <= 1.0:
        raise argparse.ArgumentTypeError(f"a share lies from 0 to 1 (0% to 100%), not {text!r}")
    return share


def _build_folder(args: argparse.Namespace, library_name: str):
    """Where `hlc profile` works: beside the build of the library, never inside it."""
    from pathlib import Path

    return Path(args.build) if args.build else Path("build") / f"{library_name}.profile"


def cmd_profile(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hlc.artefacts.samples import point_text
    from hlc.calibrate.progress import ProgressBar
    from hlc.calibrate.run import profile
    from hlc.language.parse import parse_file

    library = parse_file(args.description)
    build = _build_folder(args, library.name)
    samples = Path(args.out) if args.out else build / "samples.jsonl"
    try:
        with ProgressBar(f"profiling {library.name}") as bar:
            result = profile(library, samples, build, ranks=args.procs, budget=args.budget, resume=args.resume,
                             seed=args.seed, timeout=args.timeout, progress=bar.update, host_waits=args.host_waits)
    except KeyboardInterrupt:
        print(f"interrupted: the samples so far are in {samples}; add --resume to continue", file=sys.stderr)
        return 130
    print(f"profiling program: {result.program}")
    print(f"samples: {result.samples} (rank counts {', '.join(map(str, result.ranks))})")
    for failure in result.failures:
        where = f" at {point_text(failure.point)}" if failure.point else ""
        print(f"excluded {failure.interface}.{failure.implementation} (P={failure.P}{where}): {failure.cause}")
    if result.coverage:
        print(result.coverage)
    print(result.breakdown.text("where the time went"))
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hlc.errors import UserError
    from hlc.model.calibration import fit_samples, summary

    if not 0 < args.confidence < 1:
        raise UserError("--confidence must be between 0 and 1")
    models_of = {}
    for item in args.uses:
        name, _, path = item.partition("=")
        if not path:
            raise UserError(f"--uses expects NAME=MODELS, not {item!r}")
        models_of[name] = Path(path)
    samples = Path(args.samples)
    if samples.is_dir():
        return _refit_build(args, samples)
    models = fit_samples(samples, description=args.description, relative=not args.absolute,
                         confidence=args.confidence, models_of=models_of, discovering=args.discovering)
    out = Path(args.out) if args.out else samples.with_name("models.json")
    models.save(out)
    print(summary(models))
    print(f"models: {out}")
    return 0


def _refit_build(args: argparse.Namespace, target) -> int:
    from hlc.dispatch.build import refit, summary_table

    if args.out or args.uses:
        from hlc.errors import UserError

        raise UserError("a build is refitted in place, with the models of the libraries it uses; "
                        "-o and --uses apply to a samples file")
    result = refit(target, description=args.description, relative=not args.absolute, confidence=args.confidence,
                   discovering=args.discovering)
    print(summary_table(result))
    print(f"\nrefitted {result.library} from its stored samples in {result.seconds:.0f} s: {result.path}")
    for line in result.missing:
        print(f"warning: {result.library} was built without {line}", file=sys.stderr)
    return 0


def _report_build(result) -> None:
    from hlc.dispatch.build import summary_table

    print(summary_table(result))
    if result.resumed is not None:
        print(f"\nresumed: the interrupted build had taken {result.resumed} samples")
    if result.rounds:
        print("\nadaptive profile:\n" + "\n".join(f"  {line}" for line in result.rounds))
    if result.breakdown.wall > 0:
        print("\n" + result.breakdown.text("where the time went"))
    if result.checked and result.refitted == []:  # hlc recalibrate --check, and every model fits
        print(f"\nchecked {result.library} in {result.seconds:.0f} s: {result.path} is as it was")
        return
    print(f"\nbuilt {result.library} in {result.seconds:.0f} s: {result.path}")
    print(f"use it:  python -c \"import hlc; {result.library} = hlc.load('{result.path}'); "
          f"help({result.library})\"")
    python = f", in Python {sys.version_info.major}.{sys.version_info.minor}" if result.compiled else ""
    print(f"   or:   pip install {result.path}  (then `import {result.library}` anywhere{python})")
    for line in result.missing:
        print(f"warning: {result.library} was built without {line}", file=sys.stderr)
    if result.missing:
        print(f"warning: calls never go to {'these implementations' if len(result.missing) > 1 else 'it'}; "
              f"fix and rebuild, or build with --strict to make this an error", file=sys.stderr)


def _check_resume(args: argparse.Namespace) -> None:
    """--resume goes on with the interrupted build's own settings: refuse others beside it."""
    if not args.resume:
        return
    given = [option for option, value in (("--seed", args.seed), ("--procs", args.procs), ("--grid", args.grid),
                                          ("--quick", args.quick), ("--static", getattr(args, "static", None)))
             if value is not None and value is not False]  # --seed 0 is given too
    if given:
        from hlc.errors import UserError

        raise UserError(f"--resume goes on with the interrupted build's own settings: leave out {', '.join(given)}")


def _check_uncertain(args: argparse.Namespace) -> None:
    """--uncertain stops an adaptive profile: a grid or quick one measures its whole nest."""
    if args.uncertain is not None and (args.grid or args.quick):
        from hlc.errors import UserError

        raise UserError(f"--uncertain stops an adaptive profile; {'--grid' if args.grid else '--quick'} "
                        f"measures the whole loop nest: leave out one of them")


def cmd_build(args: argparse.Namespace) -> int:
    _check_resume(args)
    _check_uncertain(args)
    if not args.resume:
        _compile_ahead(args.description, args.out)
    from hlc.calibrate.breakdown import process_started
    from hlc.calibrate.progress import ProgressBar
    from hlc.compile import end_compiles_ahead
    from hlc.dispatch.build import build

    try:
        with ProgressBar("profiling") as bar:
            result = build(args.description, out=args.out, ranks=args.procs, budget=args.budget,
                           adaptive=not (args.grid or args.quick), uncertain=args.uncertain,
                           quick=bool(args.quick), seed=args.seed or 0, timeout=args.timeout,
                           progress=bar.update, static=dict(args.static) if args.static else None,
                           strict=args.strict, resume=args.resume, started=process_started(),
                           host_waits=args.host_waits)
    finally:
        end_compiles_ahead()
    _report_build(result)
    return 0


def _compile_ahead(description: str, out: str | None) -> None:
    """Start compiling the description's Cython sources before the modules
    that profile and fit are loaded (hlc.compile.compile_ahead), into a
    scratch folder beside the build, named as a build's own (a killed
    build's is removed by the next).  A description that does not parse is
    left to the build to report."""
    from hlc.calibrate.generate import pyx_sources
    from hlc.compile import CompileError, compile_ahead
    from hlc.language import HLError
    from hlc.language.parse import parse_file

    try:
        library = parse_file(description)
        link = Path(out) if out else Path("build") / library.name
        compile_ahead(pyx_sources(library), link.parent / f".{link.name}.ahead.{os.getpid()}")
    except (HLError, CompileError, OSError):
        return


def cmd_recalibrate(args: argparse.Namespace) -> int:
    from hlc.calibrate.breakdown import process_started
    from hlc.calibrate.progress import ProgressBar
    from hlc.dispatch.build import recalibrate

    _check_resume(args)
    _check_uncertain(args)
    options = {"ranks": args.procs, "budget": args.budget, "adaptive": not (args.grid or args.quick),
               "uncertain": args.uncertain,
               "seed": args.seed or 0, "timeout": args.timeout, "strict": args.strict, "resume": args.resume,
               "started": process_started(), "host_waits": args.host_waits}
    if args.out:
        options["out"] = args.out
    if args.quick is not None:
        options["quick"] = args.quick
    with ProgressBar("profiling") as bar:
        result = recalibrate(args.target, check=args.check, progress=bar.update, **options)
    _report_build(result)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from hlc.language import HLError
    from hlc.language.parse import parse_file
    from hlc.language.summary import describe

    status = 0
    for index, path in enumerate(args.files):
        try:
            library = parse_file(path)
        except HLError as error:
            print(error, file=sys.stderr)
            for warning in error.warnings:
                print(warning, file=sys.stderr)
            status = USER_ERROR
            continue
        for warning in library.warnings:
            print(warning, file=sys.stderr)
        if not args.quiet:
            if index:
                print()
            print(describe(library))
    return status


def cmd_explain(args: argparse.Namespace) -> int:
    from hlc.dispatch.loading import load

    module = load(args.build)
    names = list(dict.fromkeys(entry.interface for entry in module.__models__.implementations.values()))
    interface = args.interface or names[0]
    if interface not in names:
        print(f"{args.build}: error: no interface {interface!r}; the interfaces are {', '.join(names)}",
              file=sys.stderr)
        return USER_ERROR
    explain = getattr(module, f"explain_{interface}_at", None)
    if explain is None:
        print(f"{args.build}: error: built by an older hlc; run `hlc recalibrate {args.build}` or build it again",
              file=sys.stderr)
        return USER_ERROR
    from pathlib import Path

    from hlc.dispatch.bundle import description_of
    from hlc.language.parse import parse_file

    description = description_of(module.__models__, Path(module.__file__).parent)
    known = {v.name for v in parse_file(description).interface(interface).variables}
    given = dict(args.variables)
    unknown = sorted(set(given) - known - {"P", "logP"})
    missing = sorted(known - set(given))
    if unknown or missing:
        problems = ([f"unknown variable(s) {', '.join(unknown)}"] if unknown else []) + \
                   ([f"missing {', '.join(missing)}"] if missing else [])
        print(f"{args.build}: error: {'; '.join(problems)}; {interface} takes {', '.join(sorted(known))} "
              f"(and optionally P)", file=sys.stderr)
        return USER_ERROR
    print(explain(**given))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from hlc.calibrate.progress import ProgressBar
    from hlc.evaluation import evaluate

    if args.replay is not None:
        return _replay(args)
    try:
        with ProgressBar("evaluating") as bar:
            result = evaluate(args.build, points=args.points, procs=args.procs, seed=args.seed, params=args.params,
                              tolerance=0.03 if args.tolerance is None else args.tolerance,
                              baseline=args.baseline, out=args.json, resume=args.resume,
                              timeout=args.timeout, progress=bar.update)
    except (FileNotFoundError, ValueError) as error:
        print(f"hlc evaluate: error: {error}", file=sys.stderr)
        return USER_ERROR
    print(result.table())
    others = _calibrated_ranks(args.build) - set(args.procs or [1])
    if others:
        every = ",".join(str(p) for p in sorted(others | set(args.procs or [1])))
        print(f"\nthe build is calibrated at P = {', '.join(map(str, sorted(others)))} too, which this evaluation "
              f"left out: --procs {every} judges every rank count")
    print(f"\nfigures and judged points: {result.path}")
    return 0


def _calibrated_ranks(build: str) -> set[int]:
    """The rank counts at which the build's models were verified."""
    from pathlib import Path

    from hlc.artefacts.models import load as load_models

    try:
        models = load_models(Path(build) / "models.json")
    except (OSError, ValueError):
        return set()
    return {int(p) for entry in models.implementations.values() if entry.time is not None
            for p in entry.time.verification_mre_by_ranks}


def _replay(args: argparse.Namespace) -> int:
    from hlc.evaluation.replay import is_evaluation, replay, replay_oracle

    try:
        if is_evaluation(args.build):
            if not args.replay:
                raise ValueError(f"{args.build} is an evaluation: name the evaluation of the same points whose "
                                 f"timings judge its fastest candidates (--replay EVALUATION)")
            result = replay_oracle(args.build, args.replay, tolerance=args.tolerance)
        else:
            result = replay(args.build, args.replay or None, tolerance=args.tolerance)
    except (FileNotFoundError, ValueError) as error:
        print(f"hlc evaluate: error: {error}", file=sys.stderr)
        return USER_ERROR
    print(result.table())
    if args.json:
        result.document.save(args.json)
        print(f"\nfigures and judged points: {args.json}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from hlc.reports import write_report

    try:
        report = write_report(args.build, out=args.out, maps=args.maps, fixed=dict(args.fix))
    except FileNotFoundError as error:
        print(f"hlc report: error: {_file_error(error) if error.filename else error}", file=sys.stderr)
        return USER_ERROR
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"report: {report.index} ({len(report.images)} images)")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": cmd_check,
    "profile": cmd_profile,
    "fit": cmd_fit,
    "build": cmd_build,
    "recalibrate": cmd_recalibrate,
    "explain": cmd_explain,
    "evaluate": cmd_evaluate,
    "report": cmd_report,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = create_parser()
    args = parser.parse_args(argv)
    if args.version:
        from hlc import __version__

        print(f"hlc {__version__}")
        return 0
    if args.command is None:
        parser.print_help()
        return USER_ERROR
    from hlc.errors import UserError

    try:
        return COMMANDS[args.command](args)
    except UserError as error:
        print(f"hlc {args.command}: error: {error}" if not hasattr(error, "errors") else error, file=sys.stderr)
        return USER_ERROR
    except KeyboardInterrupt as interrupt:
        print(f"interrupted: {interrupt}" if interrupt.args else "interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output went to a closed pipe (`hlc check … | head`): not an error worth a traceback.
        sys.stderr.close()
        return 0
    except OSError as error:
        if error.filename is None:  # not a file the user named or hlc was asked to write
            raise
        print(f"hlc {args.command}: error: {_file_error(error)}", file=sys.stderr)
        return USER_ERROR


def _file_error(error: OSError) -> str:
    """``PATH: REASON`` for a file or folder the command could not create, read or write."""
    names = " → ".join(str(name) for name in (error.filename, error.filename2) if name is not None)
    return f"{names}: {error.strerror or error}"
