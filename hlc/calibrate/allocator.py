"""The C allocator held in the state a long-running process settles into.

glibc's malloc serves a request of 128 KiB or more with fresh pages from
``mmap``, each costing a page fault when first written, until the process
frees such a block; then it raises that threshold to the freed block's
size, and returns the top of its heap to the system whenever more than
twice that is free there.  So whether a call's temporaries cost a fault per
4 KiB depends on the largest block the process happened to free before,
and on how many temporaries the call frees together.  On the development
host the two-rank radix sort of 136,875 keys at 16 bits a digit took 800
faults and 3.4 ms a call in a fresh process, none and 1.9 ms once the
process had freed one 24 MB array.  A profile visits points in a random
order, and the evaluation in another, so the same point could be timed in
either state: the costs of that sort at two ranks differed by up to 2.5x
between two evaluations of the same build.

:func:`keep_freed_memory` fixes both thresholds, as a process that has
handled large arrays has them: blocks up to the largest the allocator
heaps (32 MiB on 64-bit hosts) come from the heap, and freed memory stays
with the process for the next call.  Timings then depend on the call, not
on what the process did before.  Other C libraries have no ``mallopt``
and keep their own policy.
"""

from __future__ import annotations

import ctypes
import ctypes.util

#: mallopt's parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: The largest threshold glibc accepts on 64-bit hosts (DEFAULT_MMAP_THRESHOLD_MAX).
LARGEST_HEAPED = 32 << 20
#: Free memory at the heap's top that is kept rather than returned.
KEPT_FREE = 1 << 30


def keep_freed_memory() -> bool:
    """Fix the allocator's thresholds (module docstring); whether it could."""
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, LARGEST_HEAPED)) and bool(mallopt(M_TRIM_THRESHOLD, KEPT_FREE))
