"""Diagnostics of the description language.

Every user error in a description becomes an :class:`HLError` that knows the
file, line and column and can show the offending line with a caret.  A check
that finds several problems raises one ``HLError`` whose ``errors`` lists all
of them, first one first.
"""

from __future__ import annotations

from dataclasses import dataclass

from hlc.errors import UserError

# Longer source lines are shown as a window around the error's column.
SHOWN_WIDTH = 100


@dataclass(frozen=True)
class Diagnostic:
    """One finding: an error or a warning at a place in a description."""

    filename: str
    line: int
    column: int
    message: str
    severity: str = "error"  # "error" or "warning"
    source_line: str = ""

    def format(self, context: bool = True) -> str:
        """``path:line:col: error: message``, then the line and a caret."""
        text = f"{self.filename}:{self.line}:{self.column}: {self.severity}: {self.message}"
        if context and self.source_line:
            shown = self.source_line.expandtabs(1)
            column = max(self.column, 1) - 1
            if len(shown) > SHOWN_WIDTH:  # a window around the column, so the caret stays in view
                start = max(0, min(column - SHOWN_WIDTH // 2, len(shown) - SHOWN_WIDTH))
                prefix = "…" if start else ""
                suffix = "…" if start + SHOWN_WIDTH < len(shown) else ""
                shown = prefix + shown[start:start + SHOWN_WIDTH] + suffix
                column = column - start + len(prefix)
            text += f"\n    {shown}\n    {' ' * column}^"
        return text

    def __str__(self) -> str:
        return self.format()


class HLError(UserError):
    """A description that cannot be accepted.

    ``filename``, ``line``, ``column`` and ``message`` describe the first
    error; ``errors`` holds every error found (at least one), ``warnings``
    the warnings found beside them.
    """

    def __init__(self, errors: list[Diagnostic] | Diagnostic, warnings: list[Diagnostic] | None = None):
        if isinstance(errors, Diagnostic):
            errors = [errors]
        if not errors:
            raise ValueError("HLError needs at least one diagnostic")
        self.errors: list[Diagnostic] = list(errors)
        self.warnings: list[Diagnostic] = list(warnings or [])  # found beside the errors
        first = self.errors[0]
        self.filename = first.filename
        self.line = first.line
        self.column = first.column
        self.message = first.message
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(error.format() for error in self.errors)


def source_lines(source: str) -> list[str]:
    """The lines of ``source`` as the parser counts them: split at "\n" only
    (form feeds and other separators Python's splitlines() knows are text)."""
    return [line.removesuffix("\r") for line in source.split("\n")]


def source_line(source: str, line: int) -> str:
    """The text of 1-based ``line`` of ``source`` ('' when out of range)."""
    lines = source_lines(source)
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def make_diagnostic(
    filename: str, source: str, line: int, column: int, message: str, severity: str = "error"
) -> Diagnostic:
    return Diagnostic(filename, line, column, message, severity, source_line(source, line))


def file_error(filename: str, message: str) -> HLError:
    """An error about a file as a whole (missing, unreadable, not text)."""
    return HLError(Diagnostic(filename, 1, 1, message))
