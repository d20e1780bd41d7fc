"""The runtime library's primitives: the blocks BlockTransfer is profiled with
are written memory on small pages, whatever size, and its landing buffers
are kept per size and type."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("runtime_primitives", ROOT / "libraries" / "runtime" / "primitives.py")
primitives = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(primitives)


def _vm_flags(array: np.ndarray) -> list[str]:
    """The kernel's flags of the mapping that holds ``array`` (Linux)."""
    address = array.ctypes.data
    flags, inside = [], False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            low, high = (int(part, 16) for part in head.split("-"))
            inside = low <= address < high
        elif inside and line.startswith("VmFlags:"):
            flags = line.split()[1:]
    return flags


@pytest.mark.parametrize("count", [0, 1, 4096, 3 << 20, 4 << 20])
def test_a_block_is_written_memory_of_that_many_bytes(count):
    block = primitives.block_of(count)
    assert block.dtype == np.uint8 and block.shape == (count,) and block.flags.writeable
    assert not block.any()
    block[:] = 7  # the halo exchange's sender may write it
    assert block.sum() == 7 * count


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="huge pages are Linux's")
def test_large_blocks_stay_on_small_pages():
    block = primitives.block_of(8 << 20)  # NumPy would ask for huge pages at this size
    assert "nh" in _vm_flags(block)


def test_the_landing_buffer_is_kept_per_size_and_type():
    block = primitives.block_of(1 << 16)
    landing = primitives._landing(block)
    assert landing.nbytes == block.nbytes and landing.dtype == block.dtype
    assert primitives._landing(primitives.block_of(1 << 16)) is landing
    wide = primitives.small_pages(8 * 100).view(np.float64)
    assert primitives._landing(wide).dtype == np.float64 and primitives._landing(wide).shape == (100,)
