"""The runtime's primitives as implementations, so the toolkit can calibrate
them (thesis §6.3): each is an SPMD call every rank makes."""

from __future__ import annotations

import mmap

import numpy as np

from hlc.runtime import world


def clear_memory(buffer: np.ndarray) -> None:
    """Zero a buffer: the cost of touching memory, no communication."""
    buffer.fill(0)


def combine_vector(vector: np.ndarray) -> np.ndarray:
    """Element-wise sum over the ranks, on every rank (CombineVector)."""
    return world().reduce(vector)


def roundtrip(token: np.ndarray) -> None:
    """Rank 0 sends a small message to rank 1, which sends it back."""
    team = world()
    if team.rank == 0:
        team.send(token, 1)
        team.receive(1)
    elif team.rank == 1:
        team.send(team.receive(0), 0)


def block_transfer(block: np.ndarray) -> None:
    """Ranks 2k and 2k + 1 exchange blocks (the last rank of an odd count idles),
    each into a buffer of the block's size, as halo exchanges do."""
    team = world()
    partner = team.rank ^ 1
    if partner < team.size:
        team.sendrecv(block, partner, partner, out=_landing(block))


_LANDINGS: dict[tuple[int, str], np.ndarray] = {}


def _landing(block: np.ndarray) -> np.ndarray:
    """A kept buffer for a block of this size and type: a halo exchange receives
    into one it keeps, and fresh pages would cost more than the transfer."""
    key = (block.size, block.dtype.str)
    if key not in _LANDINGS:
        _LANDINGS[key] = small_pages(block.size * block.dtype.itemsize).view(block.dtype)
    return _LANDINGS[key]


def small_pages(count: int) -> np.ndarray:
    """``count`` bytes of written memory that the kernel keeps on small pages.

    NumPy asks for huge pages for arrays of 4 MiB and more, and the kernel
    gives them when it has 2 MiB free and aligned, which depends on what the
    machine did before: a transfer of 4 MiB between two ranks took 105 µs in
    one run and 311 µs in the next.  On small pages, always, the cost is the
    transfer's and not the allocator's history.  (A halo's rows are far
    smaller; the larger blocks only complete the curve.)"""
    memory = mmap.mmap(-1, max(count, 1))
    if hasattr(mmap, "MADV_NOHUGEPAGE"):  # Linux; elsewhere pages are what they are
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    array = np.frombuffer(memory, dtype=np.uint8)[:count]
    array.fill(0)  # every page written now, not on the first transfer
    return array


def barrier(token: np.ndarray) -> None:
    """All ranks meet.  (The token only gives the profile something to vary.)"""
    world().barrier()


def block_of(count: int) -> np.ndarray:
    """``count`` bytes to transfer, written, on small pages (see small_pages)."""
    return small_pages(count)
