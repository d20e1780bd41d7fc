"""A build is a package of its own: it keeps the description and the sources
it calls, works after the originals and the build itself are moved, and
``pip install`` installs it under the library's name."""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import hlc
from hlc.artefacts.models import Models
from hlc.artefacts.models import load as load_models
from hlc.compile import cache_key
from hlc.dispatch.build import clean_orphans, refit, write_dispatch_sources
from hlc.dispatch.bundle import BundleError, copy_sources, description_of, stub
from hlc.language.parse import parse_file

ROOT = Path(__file__).resolve().parents[2]
DESCRIPTIONS = ROOT / "tests" / "descriptions"


def copy_squares(folder: Path) -> Path:
    """The squares description and its sources copied into ``folder``; returns the copy's path."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(DESCRIPTIONS / "squares", folder / "squares", ignore=shutil.ignore_patterns("__pycache__"))
    return Path(shutil.copy(DESCRIPTIONS / "squares.hl", folder / "squares.hl"))


@pytest.fixture(scope="module")
def moved(tmp_path_factory) -> tuple[Path, Path]:
    """squares built from a copy of its description, the copy then moved away,
    and the build folder moved to another folder: (the build, the original's
    new place)."""
    work = tmp_path_factory.mktemp("package")
    originals = work / "libraries"
    hlc.build(copy_squares(originals), out=work / "build" / "squares", quick=True)
    elsewhere = work / "elsewhere"
    originals.rename(elsewhere)
    (work / "shipped").mkdir()
    build = (work / "build" / "squares").rename(work / "shipped" / "squares")
    return build, elsewhere


def run(code: str, cwd: Path, **environment: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, **environment})


def test_a_moved_build_imports_and_calls_its_own_copy_of_the_sources(moved):
    build, elsewhere = moved
    models = load_models(build / "models.json")
    assert models.description == "source/squares.hl"
    assert models.origin.endswith("libraries/squares.hl") and not Path(models.origin).exists()
    assert description_of(models, build) == build / "source" / "squares.hl"
    # an edit of the originals does not reach the build
    (elsewhere / "squares" / "impls.py").write_text("raise ImportError('the original was read')\n")
    result = run(f"import hlc, numpy, warnings; warnings.simplefilter('error'); "
                 f"m = hlc.load({str(build)!r}); print(m.square_sum(numpy.arange(4.0)))", cwd=build.parent)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) == 14.0


def test_a_moved_build_explains_evaluates_and_reports(moved):
    build, _ = moved
    module = hlc.load(build)
    assert "square_sum(n = 100" in module.explain(np.ones(100))
    evaluation = hlc.evaluate(build, points=3, seed=2, params="exhaustive")
    assert evaluation.interfaces["square_sum"].summary.points == 3
    page = hlc.report(build).index.read_text()
    assert "source/squares.hl" in page and "was not found" not in page


def test_an_edit_of_the_build_s_own_sources_is_reported_stale(moved, tmp_path):
    build = tmp_path / "squares"
    shutil.copytree(moved[0], build)
    with (build / "source" / "squares" / "impls.py").open("a") as file:
        file.write("\n# edited\n")
    result = run(f"import hlc; hlc.load({str(build)!r})", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "source squares/impls.py: changed since calibration" in result.stderr


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None, reason="pip needs setuptools to install a build")
def test_pip_installs_the_build_as_a_package_with_its_stub(moved, tmp_path):
    build, _ = moved
    target = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                              "--target", str(target), str(build)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    installed = target / "squares"
    for name in ("__init__.py", "__init__.pyi", "py.typed", "models.json", "source/squares.hl",
                 "source/squares/impls.py"):
        assert (installed / name).exists(), name
    assert list(installed.glob("dispatch_squares*.so"))
    result = run("import numpy, squares; print(squares.square_sum(numpy.arange(4.0))); "
                 "help(squares.square_sum)", cwd=tmp_path, PYTHONPATH=str(target))
    assert result.returncode == 0, result.stderr
    first, *rest = result.stdout.splitlines()
    assert float(first) == 14.0 and "The sum of the squares of the values." in "\n".join(rest)


def test_a_build_asks_for_the_python_it_was_compiled_for(moved, tmp_path):
    """Its compiled modules load in this interpreter only: pip requires this
    minor version, and in another the import says so instead of failing
    with "No module named squares.dispatch_squares" (another interpreter
    stands in here: the build's copy, whose test asks for another suffix)."""
    build, _ = moved
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert f'requires-python = "=={minor}.*"' in (build / "pyproject.toml").read_text()
    other = shutil.copytree(build, tmp_path / "squares")
    init = other / "__init__.py"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    assert repr(suffix) in init.read_text()
    init.write_text(init.read_text().replace(repr(suffix), repr(".cpython-399-x86_64-linux-gnu.so")))
    result = run("import squares", cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        f"ImportError: library squares was built by hlc for CPython {minor} (modules "
        f"*{suffix}), which this Python ({platform.python_version()}) cannot load: "
        f"build it again with this Python (hlc build)")
    assert run("import squares; print(sorted(n for n in dir(squares) if n.startswith('_S')))",
               cwd=build.parent).stdout.strip() == "[]"


def test_a_build_made_as_a_link_to_its_version_folder_is_kept_and_replaced(moved, tmp_path):
    """Builds used to be links to a version folder named after the process
    that made it: cleaning leaves the linked one alone, and the next build
    puts a folder in the link's place."""
    version = tmp_path / ".squares.20260101-000000.999999999"
    shutil.copytree(moved[0], version)
    (tmp_path / ".squares.20260101-000001.999999998").mkdir()  # a killed build's
    link = tmp_path / "squares"
    link.symlink_to(version.name)
    assert clean_orphans(link) == [tmp_path / ".squares.20260101-000001.999999998"]
    assert version.is_dir() and hlc.load(link).square_sum(np.arange(3.0)) == 5.0
    origin = load_models(version / "models.json").origin
    refit(link)
    assert link.is_dir() and not link.is_symlink() and not version.exists()
    assert load_models(link / "models.json").origin == origin  # where it came from, still
    assert [p.name for p in tmp_path.iterdir()] == ["squares"]


def test_a_build_killed_with_the_previous_one_aside_gets_it_back(moved, tmp_path):
    """Where two folders cannot be exchanged in one step, the previous build
    is renamed aside before the new one takes its place; killed in between,
    the next build's cleaning puts it back."""
    aside = tmp_path / ".squares.previous.999999999"
    shutil.copytree(moved[0], aside)
    (tmp_path / ".squares.20260101-000000.999999999").mkdir()  # the new version, never put in place
    assert clean_orphans(tmp_path / "squares") == [tmp_path / ".squares.20260101-000000.999999999"]
    assert [p.name for p in tmp_path.iterdir()] == ["squares"]
    assert hlc.load(tmp_path / "squares").square_sum(np.arange(3.0)) == 5.0


@pytest.mark.parametrize("exchange", [True, False], ids=["in-one-step", "aside-first"])
def test_a_new_version_takes_the_build_s_place_and_the_old_one_goes(tmp_path, monkeypatch, exchange):
    from hlc.dispatch import build as building

    if not exchange:
        monkeypatch.setattr(building, "_exchange", lambda first, second: False)
    link, version = tmp_path / "lib", tmp_path / ".lib.20260101-000000.1"
    link.mkdir()
    (link / "old").write_text("old")
    version.mkdir()
    (version / "new").write_text("new")
    building._swap(link, version)
    assert [p.name for p in tmp_path.iterdir()] == ["lib"] and [p.name for p in link.iterdir()] == ["new"]


def test_the_stub_declares_every_interface_and_compiles():
    library = parse_file(DESCRIPTIONS / "squares.hl")
    text = stub(library)
    compile(text, "__init__.pyi", "exec")
    assert "def square_sum(values: ArrayLike) -> float:" in text
    assert '"""The sum of the squares of the values."""' in text
    assert "def choose_square_sum_at(**variables: float) -> Choice:" in text
    assert "explanatory variables (n)" in text


def test_sources_outside_the_description_s_folder_keep_their_layout(tmp_path):
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "helpers.py").write_text("def identity(x):\n    return x\n")
    (tmp_path / "lib").mkdir()
    text = ('library outside\nfrom "../common/helpers.py" import identity\n'
            'interface f(x: float64[]) -> float64[]\n    n = len(x)\n'
            '    impl one = identity\n        time = 1e-9 * n\n')
    description = tmp_path / "lib" / "outside.hl"
    description.write_text(text)
    library = parse_file(description)
    folder = tmp_path / "build"
    relative = copy_sources(library, folder)
    assert relative == "source/lib/outside.hl"
    assert (folder / "source" / "common" / "helpers.py").exists()
    assert parse_file(folder / relative).imports[0].source == "../common/helpers.py"


def test_two_used_libraries_whose_files_would_collide_are_refused(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name / "impl").mkdir(parents=True)
        (tmp_path / name / "impl" / "code.py").write_text(f"def f{name}(x):\n    return x\n")
        (tmp_path / name / f"{name}.hl").write_text(
            f'library {name}\nfrom "impl/code.py" import f{name}\n'
            f'interface g{name}(x: float64[]) -> float64[]\n    n = len(x)\n'
            f'    impl one = f{name}\n        time = 1e-9 * n\n')
    text = ('library top\nuses a\nuses b\n'
            'interface h(x: float64[]) -> float64[]\n    n = len(x)\n'
            '    impl one = numpy.sort\n        time = 1e-9 * n\n')
    (tmp_path / "top.hl").write_text(text)
    library = parse_file(tmp_path / "top.hl", search_path=[tmp_path / "a", tmp_path / "b"])
    with pytest.raises(BundleError, match="would both be copied to source/impl/code.py"):
        copy_sources(library, tmp_path / "build")


def test_a_description_s_dispatch_module_takes_one_compiled_object_wherever_the_description_lies(tmp_path):
    """The dispatch module's Cython, whose compiled object the cache keeps, is
    the same for one description in two folders (a build made elsewhere, a
    recalibration of a build's own copy): the object is compiled once."""
    keys = []
    for place in ("here", "there/deeper"):
        folder = tmp_path / place
        library = parse_file(copy_squares(folder))
        scratch = folder / "dispatch"
        scratch.mkdir()
        source = write_dispatch_sources(library, Models(library.name, "", {}), {}, scratch)
        assert str(folder) not in source.read_text()
        keys.append(cache_key(source))
    assert keys[0] == keys[1]
