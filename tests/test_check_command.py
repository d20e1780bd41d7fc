"""`hlc check` and the Python API on valid descriptions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hlc

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(ROOT.glob("libraries/*.hl")) + sorted(ROOT.glob("tests/descriptions/*.hl"))


def run_hlc(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlc", *arguments], cwd=cwd, capture_output=True, text=True)


def test_there_are_shipped_descriptions():
    assert any(p.parent.name == "libraries" for p in SHIPPED)
    assert len(SHIPPED) >= 3


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_description_checks(path):
    result = run_hlc("check", str(path))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"library {hlc.parse_file(path).name}" in result.stdout


def test_summary_of_the_sort_library():
    result = run_hlc("check", "libraries/sort.hl")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "implementation radix → radix_sort" in out
    assert "parameter bpd in 1 .. 16, chosen by minimizing time" in out
    # 18 sizes × 8 widths × 16 digit widths for radix, at most (its search
    # proposes one bpd per number of passes); the others skip the bpd loop.
    assert "radix: at most 2,304 fitting + 40 verification samples per rank count" in out
    assert "numpy: 144 fitting + 40 verification samples per rank count" in out
    assert "2 rank counts" in out


def test_several_files_are_checked_in_one_run(tmp_path):
    broken = tmp_path / "broken.hl"
    broken.write_text("library broken\ninterface f(x: int)\n    impl a = nowhere\n")
    result = run_hlc("check", str(broken), "tests/descriptions/comm.hl")
    assert result.returncode == 2
    assert f"{broken}:3:14: error: unknown callable 'nowhere'" in result.stderr
    assert "library comm" in result.stdout


def test_warnings_do_not_fail_the_check(tmp_path):
    description = tmp_path / "warned.hl"
    description.write_text(
        "library warned\nfrom numpy import ones\ninterface f(x: float64[])\n    n = len(x)\n"
        "    impl a = numpy.copy\n        time ~ n + n\n"
        "    profile\n        for i in 1 .. 4 ++\n        for unused in 1 .. 3 ++\n        x = ones(1 << i)\n")
    result = run_hlc("check", "-q", str(description))
    assert result.returncode == 0
    assert result.stdout == ""
    assert f"{description}:6:20: warning: term 'n' appears twice" in result.stderr
    assert f"{description}:9:13: warning: iteration variable 'unused' is never used" in result.stderr


def test_version_and_help():
    assert run_hlc("--version").stdout.startswith("hlc ")
    result = run_hlc("--help")
    assert result.returncode == 0 and "check" in result.stdout
    assert run_hlc().returncode == 2


def test_uses_resolves_the_used_library():
    library = hlc.parse_file(ROOT / "tests/descriptions/vector.hl")
    assert set(library.used) == {"comm"}
    assert library.used["comm"].interfaces[0].implementations[0].name == "BlockTransfer"


def test_uses_searches_hlc_path(tmp_path, monkeypatch):
    (tmp_path / "main.hl").write_text(
        "library main\nuses comm\nmodel Copy(b) = comm.BlockTransfer(b)\n")
    with pytest.raises(hlc.HLError, match="no description comm.hl"):
        hlc.parse_file(tmp_path / "main.hl")
    monkeypatch.setenv("HLC_PATH", str(ROOT / "tests/descriptions"))
    assert hlc.parse_file(tmp_path / "main.hl").models[0].name == "Copy"


def test_parse_reads_text_relative_to_the_current_folder(monkeypatch):
    monkeypatch.chdir(ROOT / "libraries")
    library = hlc.parse((ROOT / "libraries/sort.hl").read_text())
    assert library.filename == "<string>"
    assert [i.name for i in library.implementations] == ["radix", "radix_spmd", "counting", "counting_spmd",
                                                         "narrow", "numpy", "sample"]


def test_parse_rejects_non_text():
    with pytest.raises(TypeError):
        hlc.parse(b"library x")


HEAVY = ("numpy", "scipy", "jinja2", "matplotlib", "Cython")
IMPORTED = """
import sys
from hlc.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(sorted({name.split('.')[0] for name in sys.modules} & set(sys.argv[0].split(','))))
"""


@pytest.mark.parametrize("arguments", [["check", *map(str, SHIPPED)], ["--help"], ["check", "--help"]],
                         ids=["check", "help", "check-help"])
def test_checking_and_help_import_no_numeric_or_build_library(arguments):
    """`hlc check` reads the modules a description names (numpy.sort) from
    their sources: it needs neither NumPy nor BLAS, which reserves memory
    for every core when it loads."""
    result = subprocess.run([sys.executable, "-c", IMPORTED.replace("sys.argv[0]", repr(",".join(HEAVY))),
                             *arguments], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout[-500:]
