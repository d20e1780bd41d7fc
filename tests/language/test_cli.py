"""`hlc check` on the command line: user errors give exit status 2 and
`path:line:col: error:` messages, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

USER_ERROR = 2

VALID = """\
library demo "A demo"
from "sort/support.py" import random_keys, radix_sort
interface sort(keys: int[]) -> int[]
  n = len(keys)
  impl radix(bpd: int in 1 .. 16) = radix_sort
    time ~ n + n * bpd
  profile
    for i in 4 .. 10 ++
    for bpd in 1 .. 16 ++
    keys = random_keys(1 << i, 8, seed)
"""


def hlc_check(*paths: Path, memory_limit: int | None = None, **settings: str) -> subprocess.CompletedProcess:
    """Run `python -m hlc check PATHS` without HLC_PATH and with the
    environment variables ``settings``, optionally with its address space
    limited to ``memory_limit`` bytes."""
    environment = {key: value for key, value in os.environ.items() if key != "HLC_PATH"} | settings
    limit_memory = None
    if memory_limit is not None:
        resource = pytest.importorskip("resource")

        def limit_memory():
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    return subprocess.run([sys.executable, "-m", "hlc", "check", *map(str, paths)], capture_output=True,
                          text=True, env=environment, timeout=120, preexec_fn=limit_memory)


def assert_user_error(result: subprocess.CompletedProcess, location: str, message: str) -> None:
    assert result.returncode == USER_ERROR, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{location}: error: {message}" in result.stderr, result.stderr


def test_valid_description_prints_its_summary(library_folder):
    path = library_folder / "demo.hl"
    path.write_text(VALID)
    result = hlc_check(path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert f"{path}: library demo — A demo" in result.stdout
    assert "interface sort(keys: int[]) -> int[]" in result.stdout
    assert "implementation radix → radix_sort" in result.stdout


def test_the_summary_marks_the_uniform_variables(library_folder):
    path = library_folder / "demo.hl"
    path.write_text(VALID.replace("  n = len(keys)\n", "  uniform n = len(keys)\n  k = n + 1\n"))
    result = hlc_check(path)
    assert result.returncode == 0, result.stderr
    assert "variables: uniform n = len(keys), k = n + 1" in result.stdout


def test_malformed_description_shows_the_line_and_a_caret(library_folder):
    path = library_folder / "demo.hl"
    path.write_text(VALID.replace("time ~ n + n * bpd", "time ~ n + n * bdp"))
    result = hlc_check(path)
    assert_user_error(result, f"{path}:6:20", "undefined name 'bdp' in a term of radix")
    shown_line = "    time ~ n + n * bdp"
    assert f"\n    {shown_line}\n    {' ' * 19}^\n" in result.stderr


def test_every_file_is_checked_and_any_error_fails(library_folder):
    good, bad = library_folder / "good.hl", library_folder / "bad.hl"
    good.write_text(VALID)
    bad.write_text("library bad\ninterface f(x: int)\n")
    result = hlc_check(bad, good)
    assert_user_error(result, f"{bad}:2:11", "interface 'f' has no implementation")
    assert f"{good}: library demo" in result.stdout


def test_missing_file(tmp_path):
    path = tmp_path / "absent.hl"
    assert_user_error(hlc_check(path), f"{path}:1:1", "no such file")


def test_directory(tmp_path):
    assert_user_error(hlc_check(tmp_path), f"{tmp_path}:1:1", "is a directory")


@pytest.mark.parametrize(("content", "location", "message"), [
    pytest.param(b"", "1:1", "empty description", id="empty"),
    pytest.param(b"\n  # nothing but a comment\n", "1:1", "empty description", id="blank-and-comment"),
    pytest.param(b"library demo\x00\n", "1:1", "binary file", id="binary"),
    pytest.param(b"library demo\n# caf\xe9\n", "2:6", "not UTF-8 text: invalid byte 0xe9", id="latin-1"),
    pytest.param("library demo\n# é ".encode() + b"\xff\n", "2:5", "not UTF-8 text: invalid byte 0xff",
                 id="bad-byte-after-multibyte-character"),
    pytest.param(b"library demo\ninterface f(x: int)\n  impl a = b\n    time = 1 +\n", "4:15",
                 "unexpected end of file", id="truncated"),
])
def test_unreadable_or_malformed_file(tmp_path, content, location, message):
    path = tmp_path / "demo.hl"
    path.write_bytes(content)
    assert_user_error(hlc_check(path), f"{path}:{location}", message)


def test_form_feed_does_not_shift_the_shown_line(library_folder):
    """A form feed in a comment (as in many older sources) is not a line break for the parser."""
    path = library_folder / "demo.hl"
    path.write_text(textwrap.dedent("""\
        library demo
        # section\fbreak
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n + m
        """))
    result = hlc_check(path)
    assert_user_error(result, f"{path}:6:16", "undefined name 'm'")
    assert "\n        time = n + m\n" in result.stderr, result.stderr


def test_huge_shift_step_is_a_user_error(library_folder):
    """In a small address space, with OpenBLAS set to reserve buffers for 16
    threads (as it does on a 16-core machine): the check loads no BLAS."""
    path = library_folder / "demo.hl"
    path.write_text(VALID.replace("for i in 4 .. 10 ++", "for i in 1 .. 10 <<= 10 ** 12"))
    result = hlc_check(path, memory_limit=256 << 20, OPENBLAS_NUM_THREADS="16")
    assert result.returncode == USER_ERROR, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{path}:8:" in result.stderr
