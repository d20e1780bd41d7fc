"""Importing a built library from its folder, without the build machinery:
a program that only calls a library should not pay for importing the
profiler and the fitter (and SciPy with them)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load(path: str | Path) -> ModuleType:
    """Import a built library from its folder (``hlc.load("build/sort")``)."""
    folder = Path(path).resolve()
    init = folder / "__init__.py"
    if not init.exists():
        raise FileNotFoundError(f"{path} is not a built library (no __init__.py); run `hlc build` first")
    # A name of its own for each build in each place: a rebuilt or moved
    # library imports afresh beside the one already imported.
    models = folder / "models.json"
    stamp = f"{folder}:{models.stat().st_mtime_ns if models.exists() else 0}"
    tag = hashlib.sha1(stamp.encode()).hexdigest()[:10]
    name = f"hlc_built_{folder.name.strip('.').replace('.', '_').replace('-', '_')}_{tag}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
