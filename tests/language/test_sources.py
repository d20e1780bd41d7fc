"""Finding what installed modules hold without importing them."""

from __future__ import annotations

import sys
import textwrap

import pytest

from hlc.language.sources import attribute_problem, module_problem


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package whose ``__init__`` would fail if it ran, binding names in every
    way a module does: definitions, imports in try/else blocks, star-import
    chains with and without ``__all__``, and a lazy ``__getattr__`` in a
    module beside it."""
    root = tmp_path / "hlc_probe_pkg"
    (root / "inner").mkdir(parents=True)
    files = {
        "__init__.py": """
            raise RuntimeError("importing this package is not allowed")
            def sort(x): return x
            try:
                import json
            except ImportError:
                pass
            else:
                from ._core import (merge as merged, shuffle)
            from .chain import *
            """,
        "_core.py": "merge = shuffle = None\n",
        "chain.py": "from .inner.deep import *\nfrom .listed import *\n_hidden = 1\nvisible = 2\n",
        "listed.py": "__all__ = ['shown', '_private_but_listed']\nshown = unlisted = _private_but_listed = 1\n",
        "inner/__init__.py": "",
        "inner/deep.py": "def deepest(): pass\n_private = 3\n",
    }
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    (tmp_path / "hlc_probe_lazy.py").write_text(
        "def __getattr__(name):\n    if name == 'made':\n        return 1\n    raise AttributeError(name)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "hlc_probe_pkg"
    for name in [m for m in sys.modules if m.startswith("hlc_probe_")]:
        del sys.modules[name]


def test_names_are_read_from_the_sources_without_importing(package):
    for name in ("sort", "json", "merged", "shuffle", "visible", "deepest", "chain", "inner", "shown"):
        assert attribute_problem(package, name) is None, name
    for name in ("_hidden", "_private", "merge", "unlisted", "nothing_such"):
        assert attribute_problem(package, name) == f"module '{package}' has no attribute '{name}'"
    # chain takes what listed's __all__ names, private or not; the package takes chain's public names
    assert attribute_problem(f"{package}.chain", "_private_but_listed") is None
    assert attribute_problem(f"{package}.chain", "unlisted") is not None
    assert attribute_problem(package, "_private_but_listed") is not None
    assert module_problem(f"{package}.inner.deep") is None
    assert attribute_problem(f"{package}.inner.deep", "deepest") is None
    assert not [m for m in sys.modules if m.startswith(package)]


def test_a_module_that_makes_names_at_run_time_is_imported_to_see(package):
    assert attribute_problem("hlc_probe_lazy", "made") is None
    assert attribute_problem("hlc_probe_lazy", "unmade") == "module 'hlc_probe_lazy' has no attribute 'unmade'"
    assert "hlc_probe_lazy" in sys.modules


def test_missing_modules_are_named(package):
    assert module_problem(f"{package}.absent").startswith(f"cannot import module '{package}.absent'")
    assert module_problem("hlc_probe_nowhere").startswith("cannot import module 'hlc_probe_nowhere'")


def test_an_all_extended_at_run_time_exports_every_public_name(tmp_path, monkeypatch):
    """NumPy 1.26's ``numpy.core`` starts ``__all__`` as a literal and adds the
    lists of its submodules to it: the literal alone would hide ``sort``."""
    root = tmp_path / "hlc_probe_grown"
    root.mkdir()
    (root / "__init__.py").write_text("from .core import *\n")
    (root / "core.py").write_text("__all__ = ['char']\nchar = 1\ndef sort(x): return x\n__all__ += ['sort']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert attribute_problem("hlc_probe_grown", "sort") is None
    assert "hlc_probe_grown" not in sys.modules


def test_a_module_that_fails_to_import_is_a_problem_not_a_crash(tmp_path, monkeypatch):
    (tmp_path / "hlc_probe_broken.py").write_text("def __getattr__(name):\n    raise AttributeError(name)\n1 / 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert module_problem("hlc_probe_broken") is None  # found; importing it is the build's work
    assert attribute_problem("hlc_probe_broken", "sort") == \
        "importing module 'hlc_probe_broken' failed: ZeroDivisionError: division by zero"


def test_a_source_is_read_once_and_again_when_it_or_what_it_star_imports_changes(package, tmp_path, monkeypatch):
    """A description of many implementations asks for the same module's
    names once per implementation: the sources are read once, and again
    only when one of the files read (the module's, a star-imported one's)
    has changed."""
    import ast as python_ast

    from hlc.language import sources

    parsed = []
    parse = python_ast.parse
    monkeypatch.setattr(sources.ast, "parse", lambda text, *a, **k: parsed.append(1) or parse(text, *a, **k))
    for _ in range(50):
        assert attribute_problem(package, "deepest") is None
    first = len(parsed)
    assert first <= 6  # the package, chain, inner.deep, listed (each once)
    deep = tmp_path / package / "inner" / "deep.py"
    deep.write_text("def deepest(): pass\ndef deeper(): pass\n")  # another size: a change, whatever the clock
    assert attribute_problem(package, "deeper") is None
    assert len(parsed) > first
    assert attribute_problem(package, "deepest") is None
