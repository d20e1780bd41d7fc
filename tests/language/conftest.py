"""Fixtures shared by the tests of malformed descriptions.

Descriptions name helper sources relative to their own folder and find used
libraries next to themselves, so each test writes its description into a folder
that also holds those files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SUPPORT_PY = '''\
"""Profiling helpers and a Python implementation, as a library would ship them."""

import numpy as np


def random_keys(n, w, seed):
    return np.random.default_rng(seed).integers(0, 2**w, n)


def flush():
    pass


def radix_sort(keys, bpd=8):
    return np.sort(keys)
'''

RADIX_PYX = """\
# cython: language_level=3
cpdef void radix_pyx(long[:] keys, int bpd):
    pass
"""

# A library of runtime costs that other descriptions may `uses`.
RUNTIME_HL = """\
library runtime "Costs of the runtime"
model Block(n) = n / 64
model Transfer(n, p) = n * p + logP
"""

# A used library with an error of its own (undefined name 'k' at 2:22).
BROKEN_HL = """\
library broken
model Block(n) = n / k
"""


def populate(folder: Path) -> Path:
    """Write the helper sources and used libraries into ``folder``; return it."""
    (folder / "sort").mkdir()
    (folder / "sort" / "support.py").write_text(SUPPORT_PY)
    (folder / "sort" / "radix.pyx").write_text(RADIX_PYX)
    (folder / "runtime.hl").write_text(RUNTIME_HL)
    (folder / "broken.hl").write_text(BROKEN_HL)
    return folder


@pytest.fixture
def library_folder(tmp_path: Path) -> Path:
    """A fresh folder with helper sources (sort/support.py, sort/radix.pyx)
    and used libraries (runtime.hl, broken.hl)."""
    return populate(tmp_path)


@pytest.fixture(scope="module")
def shared_library_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same files, written once per module (for hypothesis tests, which
    cannot use function-scoped fixtures)."""
    return populate(tmp_path_factory.mktemp("library"))
