"""The ``hlc`` command.

One parser declares every subcommand; each has one ``cmd_<name>`` function,
dispatched from :data:`COMMANDS`.  Library code raises typed exceptions; only
:func:`main` turns them into messages and exit codes (2 for a user error).
Heavy imports happen inside the commands, so ``hlc --help`` is instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

USER_ERROR = 2


def create_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hlc",
        description="The high-level library compiler: calibrated cost models choose the fastest "
                    "implementation of a library on every call.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser("check", help="parse and check descriptions, print what they declare",
                                description="Parse and check library descriptions (.hl files). "
                                            "Prints a summary of each, or every error found.")
    check.add_argument("files", nargs="+", metavar="FILE", help="description files")
    check.add_argument("-q", "--quiet", action="store_true", help="print errors and warnings only")
    return parser


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
            status = USER_ERROR
            continue
        for warning in library.warnings:
            print(warning, file=sys.stderr)
        if not args.quiet:
            if index:
                print()
            print(describe(library))
    return status


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": cmd_check,
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
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output went to a closed pipe (`hlc check … | head`): not an error worth a traceback.
        sys.stderr.close()
        return 0
