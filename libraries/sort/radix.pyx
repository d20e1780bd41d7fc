# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Integer sorts that look at the bits of the keys: LSD radix sort with the
digit width as a parameter, and counting sort — sequential and SPMD.

Keys of any integer dtype are sorted as unsigned offsets from the smallest
key, so only the bits of the span actually present are sorted (key width w).
Offsets of spans up to 32 bits are held in uint32: half the memory traffic.
The kernels take pointers, not typed memoryviews, and a key of either sign
as the unsigned integer of its bits: its offset is its difference from
the smallest key modulo 2**8, 2**16, 2**32 or 2**64, exact because the
span fits, and one subtraction.  So four kernels, one per key size, cover
the eight dtypes and the module has no memoryview code: 1.7 MB of C where
typed memoryviews over eight dtypes made 4.3 MB (and kernels of their own
for signed 8- and 16-bit keys 1.9 MB, compiled in 8.0 s rather than 7.4).

Radix sort makes ceil(w / bpd) passes, each a stable counting sort on one
digit: count → prefix sums → scatter.  The passes share the bits evenly:
their digits differ by one bit at most, the widest ceil(w / passes) bits,
at most bpd (31 bits at bpd 10 are four digits of 8, 8, 8 and 7 bits, not
10, 10, 10 and 1; 22 bits at bpd 8 are 8, 7 and 7, not 8, 8 and 6), so that
no pass has more counters and write streams than its number of passes
needs, none has far fewer, and every pass is one that the digit width
describes; bpd values that give as many passes sort alike.  The counts of
every digit are taken in one read of the input; the first pass reads the
caller's keys and the last writes the result in the caller's dtype, so no
pass is spent on conversions, and a pass whose digit is the same for every
key is skipped.

Under MPI (thesis Fig. 4-11) each pass's counts are combined over the ranks
with a vector scan and a reduce, which gives every key its global position;
the keys then move with one all-to-all-v per pass.  Rank r ends with the
positions [s_r, s_r + n_r) of the sorted keys, s_r = n_0 + … + n_(r−1): as
many keys as it passed in.

Counting sort counts the occurrences of each of the 2**w values and writes
the runs out in order; no scatter at all.  Under MPI only the counts travel.

The module is compiled without bounds checks and without wraparound, for
the kernels' sake.  That holds for indexing Python objects too: a negative
index reaches the object unwrapped, and NumPy 2.5 refuses it, so the code
that handles arrays as objects indexes from the front only (hlc's compile
step rejects a constant negative index under ``wraparound=False``).
"""

import mmap
import threading

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int8_t, int16_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset

from hlc.runtime import world
from hlc.runtime.extremes import SHARED_FROM, measured, measured_over_ranks, over_ranks

cnp.import_array()

ctypedef fused key_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

ctypedef fused offset_t:
    uint32_t
    uint64_t

ctypedef fused count_t:
    uint32_t
    int64_t

ctypedef fused narrow_t:
    uint16_t
    uint32_t
    uint64_t

#: Digit widths allowed (bits per digit); 2**16 counters per pass at most.
MAX_BPD = 16


# ---- checking the arguments ----------------------------------------------------------------


def _checked(keys, int bpd):
    if not isinstance(keys, np.ndarray):
        raise TypeError(f"keys must be a NumPy array, not {type(keys).__name__}")
    if keys.dtype.kind not in "iu":
        raise TypeError(f"keys must hold integers, not {keys.dtype}")
    if keys.ndim != 1:
        raise ValueError(f"keys must be 1-D, not {keys.ndim}-D")
    if not 1 <= bpd <= MAX_BPD:
        raise ValueError(f"bpd must be in 1 .. {MAX_BPD}, not {bpd}")
    return np.ascontiguousarray(keys)


def _native(array):
    """``array`` in this machine's byte order (the kernels read native integers)."""
    return array.astype(array.dtype.newbyteorder("="))


cdef inline void *_data(cnp.ndarray array) noexcept:
    """The first item of a contiguous array, for the kernels."""
    return cnp.PyArray_DATA(array)


# ---- the span of the keys ------------------------------------------------------------------


cdef extern from *:
    """
    #include <stdint.h>
    /* The smallest and the largest key in one pass.  Where the compiler can,
       the loop is built for several instruction sets and the loader picks
       this CPU's: x86 has no 64-bit min/max before AVX-512, and the baseline
       build compares one key at a time (10x slower here than AVX-512). */
    #if defined(__x86_64__) && defined(__has_attribute)
    #  if __has_attribute(target_clones)
    #    define SORT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
    #  endif
    #endif
    #ifndef SORT_CLONES
    #  define SORT_CLONES
    #endif
    #define SORT_EXTREMES(name, type)                                          \
    SORT_CLONES static void name(const void *data, Py_ssize_t n, int64_t *low, uint64_t *high) { \
        const type *v = (const type *)data;                                   \
        type lo = v[0], hi = v[0];                                            \
        for (Py_ssize_t i = 1; i < n; i++) {                                  \
            lo = v[i] < lo ? v[i] : lo;                                       \
            hi = v[i] > hi ? v[i] : hi;                                       \
        }                                                                     \
        *low = (int64_t)lo;                                                   \
        *high = (uint64_t)hi;                                                 \
    }
    SORT_EXTREMES(sort_extremes_i8, int8_t)
    SORT_EXTREMES(sort_extremes_i16, int16_t)
    SORT_EXTREMES(sort_extremes_i32, int32_t)
    SORT_EXTREMES(sort_extremes_i64, int64_t)
    SORT_EXTREMES(sort_extremes_u8, uint8_t)
    SORT_EXTREMES(sort_extremes_u16, uint16_t)
    SORT_EXTREMES(sort_extremes_u32, uint32_t)
    SORT_EXTREMES(sort_extremes_u64, uint64_t)
    /* The loop for keys of `size` bytes, signed or not. */
    static void sort_extremes(const void *data, Py_ssize_t n, int size, int is_signed,
                              int64_t *low, uint64_t *high) {
        switch (is_signed ? size : -size) {
            case 1: sort_extremes_i8(data, n, low, high); break;
            case 2: sort_extremes_i16(data, n, low, high); break;
            case 4: sort_extremes_i32(data, n, low, high); break;
            case 8: sort_extremes_i64(data, n, low, high); break;
            case -1: sort_extremes_u8(data, n, low, high); break;
            case -2: sort_extremes_u16(data, n, low, high); break;
            case -4: sort_extremes_u32(data, n, low, high); break;
            default: sort_extremes_u64(data, n, low, high); break;
        }
    }
    """
    void sort_extremes(const void *data, Py_ssize_t n, int size, int is_signed, int64_t *low, uint64_t *high) nogil


cdef tuple _extremes(cnp.ndarray array):
    """(smallest, largest) key of a non-empty contiguous native integer array:
    as the dispatched call that calls this sort just read them, when it did
    (from SHARED_FROM keys on), else read here."""
    if array.shape[0] >= SHARED_FROM:
        known = measured(array)
        if known is not None:
            return known
    cdef const void *data = _data(array)
    cdef Py_ssize_t n = array.shape[0]
    cdef int64_t low = 0
    cdef uint64_t high = 0
    cdef int size = array.dtype.itemsize
    cdef bint signed = array.dtype.kind == "i"
    with nogil:
        sort_extremes(data, n, size, signed, &low, &high)
    if signed:  # both came back sign-extended
        return low, <int64_t>high
    return <uint64_t>low, high


def _global_span(array):
    """The smallest key over all ranks and the bits its span needs; (None, 0) when
    there are no keys anywhere.  Over several ranks, the span the dispatched
    call combined, or this rank's extremes combined in one all-reduce."""
    team = world()
    if team.size > 1:
        span = measured_over_ranks()
        if span is None:
            low, high = _extremes(array) if array.shape[0] else (None, None)
            span = over_ranks(team, array.dtype, low, high) or (None, None)
        if span[0] is None:
            return None, 0
        return span[0], (span[1] - span[0]).bit_length()
    if not array.shape[0]:
        return None, 0
    low, high = _extremes(array)
    return low, (high - low).bit_length()


cdef inline uint64_t _bits(low):
    """The smallest key's two's-complement bits, as the kernels take it (they
    keep as many of them as their keys have)."""
    return <uint64_t>(low & 0xFFFFFFFFFFFFFFFF)


cdef inline uint64_t _offset(key_t key, uint64_t low) noexcept nogil:
    """How far ``key`` lies above ``low`` (the smallest key's bits): their
    difference modulo 2**bits of the key's size, which the span of the keys
    fits, so that a key of either sign, seen unsigned, takes one
    subtraction after the load."""
    if key_t is uint8_t:
        return <uint8_t>(key - <uint8_t>low)
    elif key_t is uint16_t:
        return <uint16_t>(key - <uint16_t>low)
    elif key_t is uint32_t:
        return <uint32_t>(key - <uint32_t>low)
    else:
        return <uint64_t>key - low


cdef int _kind(cnp.ndarray array):
    """Which kernel takes ``array``'s keys: their size in bytes (keys of
    either sign share one)."""
    return array.dtype.itemsize


# ---- the passes ----------------------------------------------------------------------------


cdef inline int _pass_bits(int passes, int bpd, int width, int p) noexcept nogil:
    """Bits of pass p's digit when ``passes`` passes of at most ``bpd`` bits
    share ``width`` bits evenly: the first width - passes * (bpd - 1) passes
    take bpd bits, the others one less."""
    return bpd if p < width - passes * (bpd - 1) else bpd - 1


cdef inline void _count_passes(const key_t *keys, Py_ssize_t n, uint64_t low, int passes, int bpd, int width,
                               Py_ssize_t *counts) noexcept nogil:
    cdef Py_ssize_t i, bins = (<Py_ssize_t>1) << bpd
    cdef uint64_t offset
    cdef uint64_t masks[64]
    cdef int shifts[64]
    cdef Py_ssize_t *table
    cdef int p
    for p in range(passes):
        shifts[p] = _pass_bits(passes, bpd, width, p)
        masks[p] = (<uint64_t>1 << shifts[p]) - 1
    for i in range(n):
        offset = _offset(keys[i], low)
        table = counts
        for p in range(passes):  # the digits from the lowest: shift the offset, move to the next table
            table[offset & masks[p]] += 1
            offset >>= shifts[p]
            table += bins


cdef void _count_digits(const key_t *keys, Py_ssize_t n, uint64_t low, int passes, int bpd, int width,
                        Py_ssize_t *counts) noexcept nogil:
    """counts[p * 2**bpd + d]: how many keys have digit d in pass p.  For up to
    four passes the count is a constant in the call, so that the compiler
    unrolls the loop over the digits: 1.9 -> 1.0 ns a key for four 8-bit
    digits of 10M keys."""
    if passes == 1:
        _count_passes(keys, n, low, 1, bpd, width, counts)
    elif passes == 2:
        _count_passes(keys, n, low, 2, bpd, width, counts)
    elif passes == 3:
        _count_passes(keys, n, low, 3, bpd, width, counts)
    elif passes == 4:
        _count_passes(keys, n, low, 4, bpd, width, counts)
    else:
        _count_passes(keys, n, low, passes, bpd, width, counts)


cdef bint _to_starts(Py_ssize_t *counts, Py_ssize_t bins, Py_ssize_t n) noexcept nogil:
    """Counts → exclusive prefix sums, in place; False when one digit holds all
    n keys (the pass would not move anything)."""
    cdef Py_ssize_t d, total = 0, count
    for d in range(bins):
        count = counts[d]
        if count == n:
            return False
        counts[d] = total
        total += count
    return True


cdef void _scatter_keys(const key_t *keys, Py_ssize_t n, offset_t *target, uint64_t low, int shift, uint64_t mask,
                        Py_ssize_t *starts) noexcept nogil:
    """First pass: caller's keys → offsets, by digit."""
    cdef Py_ssize_t i
    cdef uint64_t offset
    for i in range(n):
        offset = _offset(keys[i], low)
        target[starts[(offset >> shift) & mask]] = <offset_t>offset
        starts[(offset >> shift) & mask] += 1


cdef void _scatter_offsets(const offset_t *source, offset_t *target, int shift, uint64_t mask,
                           Py_ssize_t *starts, const Py_ssize_t *ends, Py_ssize_t runs, Py_ssize_t pad) noexcept nogil:
    """A middle pass: the previous pass's runs (run d ends at ends[d]; the next
    begins pad items later) → the target, by digit."""
    cdef Py_ssize_t d, i, begin = 0
    cdef offset_t offset
    for d in range(runs):
        for i in range(begin, ends[d]):
            offset = source[i]
            target[starts[(offset >> shift) & mask]] = offset
            starts[(offset >> shift) & mask] += 1
        begin = ends[d] + pad


cdef void _scatter_back(const offset_t *source, key_t *out, uint64_t low, int shift, uint64_t mask,
                        Py_ssize_t *starts, const Py_ssize_t *ends, Py_ssize_t runs, Py_ssize_t pad) noexcept nogil:
    """The last pass: the previous pass's runs → the caller's dtype, by digit."""
    cdef Py_ssize_t d, i, begin = 0
    cdef offset_t offset
    for d in range(runs):
        for i in range(begin, ends[d]):
            offset = source[i]
            out[starts[(offset >> shift) & mask]] = <key_t>(offset + low)
            starts[(offset >> shift) & mask] += 1
        begin = ends[d] + pad


cdef void _scatter_direct(const key_t *keys, Py_ssize_t n, key_t *out, uint64_t low, int shift, uint64_t mask,
                          Py_ssize_t *starts) noexcept nogil:
    """The only pass: the caller's keys → the result, by digit."""
    cdef Py_ssize_t i
    cdef uint64_t offset
    for i in range(n):
        offset = _offset(keys[i], low)
        out[starts[(offset >> shift) & mask]] = keys[i]
        starts[(offset >> shift) & mask] += 1


cdef void _restore(const narrow_t *offsets, Py_ssize_t n, key_t *out, uint64_t low) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = <key_t>(offsets[i] + low)


cdef void _narrow(const key_t *keys, Py_ssize_t n, narrow_t *offsets, uint64_t low) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        offsets[i] = <narrow_t>_offset(keys[i], low)


cdef void _sort_local(const key_t *keys, Py_ssize_t n, key_t *out, offset_t *one, offset_t *two,
                      uint64_t low, int width, int bpd, Py_ssize_t pad, Py_ssize_t *counts) noexcept nogil:
    """LSD radix sort of the ``n`` keys into ``out``; ``one`` and ``two`` are
    scratch of n + 2**bpd * pad items.  Reads the keys once to count every
    digit, then one scatter per pass that moves something: the first from
    ``keys``, the last into ``out``.  In the scratch, the run of digit d
    starts d * pad items after its place (see PAD_BYTES)."""
    cdef int passes = (width + bpd - 1) // bpd, p, active = 0, done = 0, shift = 0, bits
    cdef Py_ssize_t bins = (<Py_ssize_t>1) << bpd, d, digits
    cdef uint64_t mask
    cdef offset_t *source = one
    cdef offset_t *target = two
    cdef offset_t *swap
    cdef Py_ssize_t *ends = NULL  # where the runs of the pass that filled ``source`` end
    cdef Py_ssize_t *starts
    cdef Py_ssize_t runs = 1  # the source's runs: one of n items, unpadded
    _count_digits(keys, n, low, passes, bpd, width, counts)
    for p in range(passes):  # counts → starts; a skipped pass keeps its first count at n
        if _to_starts(counts + p * bins, (<Py_ssize_t>1) << _pass_bits(passes, bpd, width, p), n):
            active += 1
        else:
            counts[p * bins] = -1
    if active == 0:  # every key has the same digits: already in order
        memcpy(out, keys, n * sizeof(key_t))
        return
    for p in range(passes):
        bits = _pass_bits(passes, bpd, width, p)
        digits = (<Py_ssize_t>1) << bits
        mask = <uint64_t>(digits - 1)
        shift += bits
        starts = counts + p * bins
        if starts[0] == -1:
            continue
        done += 1
        if done < active and pad:  # into the scratch: spread the runs' starts
            for d in range(1, digits):
                starts[d] += d * pad
        if done == 1 and active == 1:
            _scatter_direct(keys, n, out, low, shift - bits, mask, starts)
        elif done == 1:
            _scatter_keys(keys, n, source, low, shift - bits, mask, starts)
        elif done == active:
            _scatter_back(source, out, low, shift - bits, mask, starts, ends if pad else &n, runs, pad)
        else:
            _scatter_offsets(source, target, shift - bits, mask, starts, ends if pad else &n, runs, pad)
            swap = source
            source = target
            target = swap
        runs = digits if pad else 1
        ends = starts  # after the scatter, each start has moved to its run's end


#: Working memory kept between calls, per thread, up to this many bytes in
#: all.  Fresh memory costs a page fault per 4 KiB when first written (about
#: 0.4 ns a byte, as much as a pass over the keys), and whether a new array
#: gets fresh memory depends on the allocator's history: the same sort of
#: 262,144 keys took 1.9 ms or 3.5 ms, and an all-reduce of 2**18 counters
#: 1.2 ms into a new array, 0.7 ms into a kept one.  Kept memory makes the
#: cost of a call depend on its inputs only.
SCRATCH_KEPT = 256 << 20

#: A kept buffer is made larger than asked by this fraction (1/32), so that
#: sorts of the same keys at every digit width share it: the padding of the
#: scratch (PAD_BYTES) adds up to n/64 items as the digit widens, and a
#: scratch grown by that much would be new memory.  A first write to new
#: memory is dear: after 4 passes of 7 bits over 2,965,820 keys, the first
#: sort at 9 bits took 74-80 ms against 18-19 ms once warm, and with the
#: slack 20 ms.
SCRATCH_SLACK = 32

_kept = threading.local()

#: Kept scratch of this many bytes or more is a mapping of its own, advised
#: onto huge pages (2 MiB) before its first write, where the system offers
#: them.  A scatter of 2**bpd streams over millions of keys on 4 KiB pages
#: misses the TLB at nearly every write, and whether numpy's memory is on
#: huge pages depends on the allocator's history (numpy advises its large
#: arrays, but memory the heap hands out again keeps the pages it had):
#: with numpy's huge pages turned off, two passes of 9 bits over 1,482,910
#: keys took 12.8 ms, and 10.0 ms with the kept scratch on huge pages.  The
#: result stays numpy's, an ordinary array: mapped anew at every call, it
#: paid its page faults at every call (5-10% more at 4- and 5-bit digits
#: over millions of keys), and builds so made agreed no better with the
#: same calls timed in fresh processes.
HUGE_FROM = 4 << 20
HUGE_PAGE = 2 << 20


def _offers_huge_pages():
    """Whether advising a mapping onto huge pages can work here: Linux with
    transparent huge pages not turned off."""
    if getattr(mmap, "MADV_HUGEPAGE", None) is None or not hasattr(mmap, "MAP_ANONYMOUS"):
        return False
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as setting:
            return "[never]" not in setting.read()
    except OSError:
        return False


_HUGE_PAGES = _offers_huge_pages()


def _writable_bytes(Py_ssize_t size):
    """``size`` bytes of new memory, as a uint8 array: from HUGE_FROM bytes
    on (where huge pages are offered) a private anonymous mapping of their
    own, advised onto huge pages before any is written and starting at a
    huge page's boundary (HUGE_FROM's comment says why); else numpy's."""
    if size < HUGE_FROM or not _HUGE_PAGES:
        return np.empty(size, dtype=np.uint8)
    try:
        mapping = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (OSError, ValueError):
        return np.empty(size, dtype=np.uint8)
    try:
        mapping.madvise(mmap.MADV_HUGEPAGE)
    except OSError:  # refused: 4 KiB pages, as numpy's would be
        pass
    whole = np.frombuffer(mapping, dtype=np.uint8)  # the array keeps the mapping alive
    start = (-whole.ctypes.data) % HUGE_PAGE
    return whole[start:start + size]


def _kept_array(str name, Py_ssize_t count, dtype):
    """An array of ``count`` items of ``dtype`` for this thread's working memory
    ``name``: the kept buffer of that name when it is large enough, else a new
    one with SCRATCH_SLACK's room to spare, kept while all kept buffers
    together fit in SCRATCH_KEPT bytes.  Its contents are undefined."""
    cdef Py_ssize_t size = count * np.dtype(dtype).itemsize
    buffers = getattr(_kept, "buffers", None)
    if buffers is None:
        buffers = _kept.buffers = {}
    buffer = buffers.get(name)
    if buffer is None or buffer.shape[0] < size:
        buffers.pop(name, None)
        made = size + size // SCRATCH_SLACK
        if made + sum(b.shape[0] for b in buffers.values()) <= SCRATCH_KEPT:
            buffer = buffers[name] = _writable_bytes(made)  # mapped once, for every later call
        else:  # not kept: a mapping would be new pages at every call
            buffer = np.empty(made, dtype=np.uint8)
    return buffer[:size].view(dtype)


#: In the scratch arrays, the run of digit d starts d * PAD_BYTES after its
#: place, once the runs average PAD_FROM keys or more.  Where n / 2**bpd keys
#: fill a multiple of 4 KiB (a power of two n, mostly), the runs' starts
#: share their address bits below 4 KiB, and the scatter's write streams
#: compete for the same cache sets: 2**23 keys of 31 bits took 12.4 ns a key
#: at bpd 8, 8,000,000 keys 7.8; padded, 2**23 keys take 10.0 (the last pass
#: writes the caller's array, which cannot be padded).  With shorter runs
#: the streams' starts are not aligned, and padding only spreads the writes
#: over more memory: at 100,000 keys, bpd 16 went from 5.1 to 8.5 ns a key.
PAD_BYTES = 64
PAD_FROM = 1024


def _scratch(Py_ssize_t n, dtype, int passes, Py_ssize_t bins, Py_ssize_t pad):
    """The two scratch arrays of a sort of ``n`` keys in ``passes`` passes,
    each with room for ``pad`` items more per digit (the first is used from
    two passes on, the second from three; else they are empty)."""
    cdef Py_ssize_t size = n + bins * pad
    return (_kept_array("first", size if passes > 1 else 0, dtype),
            _kept_array("second", size if passes > 2 else 0, dtype))


def _radix_local(cnp.ndarray keys, cnp.ndarray out, low, int width, int bpd):
    cdef int passes = (width + bpd - 1) // bpd, kind = _kind(keys)
    cdef Py_ssize_t n = keys.shape[0], bins = (<Py_ssize_t>1) << bpd, pad
    cdef uint64_t base = _bits(low)
    cdef void *source = _data(keys)
    cdef void *target = _data(out)
    # The counters are kept memory too: a fresh table of 2**16 counters per
    # pass is fresh pages, or not, by the allocator's history (a sort of 1,000
    # keys at bpd 16 took 67 or 92 us).
    cdef Py_ssize_t *counts = <Py_ssize_t *>_data(_kept_array("counts", passes * bins, np.intp))
    cdef uint32_t *one32
    cdef uint32_t *two32
    cdef uint64_t *one64
    cdef uint64_t *two64
    memset(counts, 0, passes * bins * sizeof(Py_ssize_t))
    if width > 32:  # 64-bit keys only
        pad = PAD_BYTES // 8 if n >= PAD_FROM * bins else 0
        first, second = _scratch(n, np.uint64, passes, bins, pad)
        one64, two64 = <uint64_t *>_data(first), <uint64_t *>_data(second)
        with nogil:
            _sort_local(<uint64_t *>source, n, <uint64_t *>target, one64, two64, base, width, bpd, pad, counts)
        return
    pad = PAD_BYTES // 4 if n >= PAD_FROM * bins else 0
    first, second = _scratch(n, np.uint32, passes, bins, pad)
    one32, two32 = <uint32_t *>_data(first), <uint32_t *>_data(second)
    with nogil:
        if kind == 1:
            _sort_local(<uint8_t *>source, n, <uint8_t *>target, one32, two32, base, width, bpd, pad, counts)
        elif kind == 2:
            _sort_local(<uint16_t *>source, n, <uint16_t *>target, one32, two32, base, width, bpd, pad, counts)
        elif kind == 4:
            _sort_local(<uint32_t *>source, n, <uint32_t *>target, one32, two32, base, width, bpd, pad, counts)
        else:
            _sort_local(<uint64_t *>source, n, <uint64_t *>target, one32, two32, base, width, bpd, pad, counts)


# ---- one digit at a time, for the parallel sort ----------------------------------------------


def _offsets(cnp.ndarray keys, low, cnp.ndarray offsets):
    """The keys as uint64 offsets from ``low``, into ``offsets``."""
    cdef uint64_t base = _bits(low)
    cdef void *source = _data(keys)
    cdef uint64_t *target = <uint64_t *>_data(offsets)
    cdef Py_ssize_t n = keys.shape[0]
    cdef int kind = _kind(keys)
    with nogil:
        if kind == 1:
            _narrow(<uint8_t *>source, n, target, base)
        elif kind == 2:
            _narrow(<uint16_t *>source, n, target, base)
        elif kind == 4:
            _narrow(<uint32_t *>source, n, target, base)
        else:
            _narrow(<uint64_t *>source, n, target, base)


cdef void _histogram(const uint64_t *offsets, Py_ssize_t n, int shift, uint64_t mask,
                     int64_t *counts) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        counts[(offsets[i] >> shift) & mask] += 1


cdef void _stable_by_digit(const uint64_t *offsets, Py_ssize_t n, int shift, uint64_t mask,
                           int64_t *starts, uint64_t *target) noexcept nogil:
    cdef Py_ssize_t i, d
    for i in range(n):
        d = (offsets[i] >> shift) & mask
        target[starts[d]] = offsets[i]
        starts[d] += 1


def _digit_counts(cnp.ndarray offsets, int shift, int bpd):
    """How many offsets (uint64) have each digit value at ``shift``."""
    counts = np.zeros((<Py_ssize_t>1) << bpd, dtype=np.int64)
    cdef const uint64_t *source = <uint64_t *>_data(offsets)
    cdef int64_t *table = <int64_t *>_data(counts)
    cdef Py_ssize_t n = offsets.shape[0]
    with nogil:
        _histogram(source, n, shift, (<uint64_t>1 << bpd) - 1, table)
    return counts


def _by_digit(cnp.ndarray offsets, int shift, int bpd, cnp.ndarray counts, cnp.ndarray target):
    """Write the offsets (uint64) into ``target`` stably ordered by their digit
    at ``shift`` (``counts`` from _digit_counts)."""
    cdef Py_ssize_t d, total = 0, n = offsets.shape[0], bins = (<Py_ssize_t>1) << bpd
    cdef const uint64_t *source = <uint64_t *>_data(offsets)
    cdef uint64_t *into = <uint64_t *>_data(target)
    cdef const int64_t *sizes = <int64_t *>_data(counts)
    places = np.empty(bins, dtype=np.int64)
    cdef int64_t *starts = <int64_t *>_data(places)
    with nogil:
        for d in range(bins):
            starts[d] = total
            total += sizes[d]
        _stable_by_digit(source, n, shift, <uint64_t>(bins - 1), starts, into)


def _keys_from(cnp.ndarray offsets, cnp.ndarray out, low):
    """The keys ``low`` + offsets (uint64), in the dtype of ``out``, into it."""
    cdef uint64_t base = _bits(low)
    cdef const uint64_t *source = <uint64_t *>_data(offsets)
    cdef void *target = _data(out)
    cdef Py_ssize_t n = offsets.shape[0]
    cdef int kind = _kind(out)
    with nogil:
        if kind == 1:
            _restore(source, n, <uint8_t *>target, base)
        elif kind == 2:
            _restore(source, n, <uint16_t *>target, base)
        elif kind == 4:
            _restore(source, n, <uint32_t *>target, base)
        else:
            _restore(source, n, <uint64_t *>target, base)


def _radix_parallel(array, low, int width, int bpd, team):
    """Thesis Fig. 4-11: per pass, global counts by scan and reduce, then one
    all-to-all-v that sends every key to the rank owning its new position."""
    cdef Py_ssize_t n = array.shape[0]
    sizes = team.allgather(np.array([n], dtype=np.int64))[:, 0]
    bounds = np.concatenate(([0], np.cumsum(sizes)))  # rank r owns positions bounds[r] .. bounds[r+1]
    total = int(sizes.sum())
    offsets = _kept_array("first", n, np.uint64)
    _offsets(array, low, offsets)
    local = _kept_array("second", n, np.uint64)      # each pass's keys ordered by digit
    arrived = _kept_array("received", n, np.uint64)  # as many keys as this rank holds, every pass
    cdef int passes = (width + bpd - 1) // bpd, bits, shift = 0, p
    for p in range(passes):
        bits = _pass_bits(passes, bpd, width, p)
        shift += bits
        counts = _digit_counts(offsets, shift - bits, bits)
        before = team.scan(counts)        # keys with each digit on the ranks before this one
        totals = team.reduce(counts)      # keys with each digit on all ranks
        if totals.max() == total:    # one digit everywhere: nothing moves
            continue
        _by_digit(offsets, shift - bits, bits, counts, local)
        # This rank's keys of digit d take the global positions starts[d] ..
        # starts[d] + counts[d] - 1, increasing along ``local``: digit by digit,
        # and within a digit rank by rank.  So each destination rank receives
        # one stretch, as long as the positions below its bound.
        starts = np.cumsum(totals) - totals + before
        below = np.clip(bounds[:, None] - starts[None, :], 0, counts[None, :]).sum(axis=1)
        received = team.alltoallv(local, np.diff(below), out=arrived)
        # What arrived is ordered by source rank, each source's keys by digit:
        # a stable sort on the digit puts them in global order.
        _by_digit(received, shift - bits, bits, _digit_counts(received, shift - bits, bits), offsets)
    out = np.empty_like(array)
    _keys_from(offsets, out, low)
    return out


# ---- the implementations -----------------------------------------------------------------------


def digit_bits(int width, int bpd):
    """Bits of the widest digit of a sort of ``width``-bit keys with at most
    ``bpd`` bits a digit: the passes ceil(width / bpd) share the bits evenly,
    their digits one bit narrower at most."""
    if width <= 0:
        return bpd
    cdef int passes = (width + bpd - 1) // bpd
    return (width + passes - 1) // passes


def pass_digits(int width, int bpd):
    """Bits of each pass's digit, from the lowest, in a sort of ``width``-bit
    keys with at most ``bpd`` bits a digit."""
    cdef int digit = digit_bits(width, bpd), passes, p
    if width <= 0:
        return []
    passes = (width + digit - 1) // digit
    return [_pass_bits(passes, digit, width, p) for p in range(passes)]


def radix_sort(keys, int bpd=8):
    """Return ``keys`` (a 1-D integer array) sorted, at most ``bpd`` bits per
    digit (ceil(width / bpd) passes over digits that differ by one bit at most).

    Under MPI each rank passes its keys and gets back as many: its part of the
    keys of all ranks, sorted, ranks in order.
    """
    array = _checked(keys, bpd)
    if not array.dtype.isnative:
        return radix_sort(_native(array), bpd).astype(array.dtype)
    team = world()
    low, width = _global_span(array)
    bpd = digit_bits(width, bpd)
    if team.size > 1:
        return _radix_parallel(array, low, width, bpd, team) if low is not None else array.copy()
    out = np.empty_like(array)
    if width == 0:
        out[:] = array
    else:
        _radix_local(array, out, low, width, bpd)
    return out


cdef void _count_values(const key_t *keys, Py_ssize_t n, uint64_t low, count_t *counts,
                        Py_ssize_t bins) noexcept nogil:
    """counts[v]: how many keys equal low + v.  Few values and many keys make
    long chains of increments of one counter, each waiting for the last:
    then four tables take turns and are summed."""
    cdef Py_ssize_t i, v
    cdef count_t *tables
    if bins > 4096 or n < 4 * bins:
        for i in range(n):
            counts[_offset(keys[i], low)] += 1
        return
    tables = <count_t *>calloc(4 * bins, sizeof(count_t))
    if tables == NULL:  # no memory for the tables: one table will do
        for i in range(n):
            counts[_offset(keys[i], low)] += 1
        return
    for i in range(0, n - 3, 4):
        tables[_offset(keys[i], low)] += 1
        tables[bins + _offset(keys[i + 1], low)] += 1
        tables[2 * bins + _offset(keys[i + 2], low)] += 1
        tables[3 * bins + _offset(keys[i + 3], low)] += 1
    for i in range(n - n % 4, n):
        tables[_offset(keys[i], low)] += 1
    for v in range(bins):
        counts[v] += tables[v] + tables[bins + v] + tables[2 * bins + v] + tables[3 * bins + v]
    free(tables)


cdef inline void _runs(key_t *out, Py_ssize_t n, const count_t *counts, Py_ssize_t *next_value,
                       Py_ssize_t *position, uint64_t low, Py_ssize_t at_once) noexcept nogil:
    """Write whole runs, from value ``next_value`` and ``position`` on, while
    ``at_once`` writes stay inside the ``n`` keys of ``out``: each value is
    written ``at_once`` times without a branch on its run's length (the next
    value overwrites what its run did not need), and only longer runs take
    a loop.  Advances both indices.  (Called with constant ``at_once``, so
    the compiler unrolls the writes.)"""
    cdef Py_ssize_t v = next_value[0], i = position[0], j, repeat
    cdef key_t value
    while i <= n - at_once:
        repeat = counts[v]
        value = <key_t>(low + <uint64_t>v)
        for j in range(i, i + at_once):
            out[j] = value
        if repeat > at_once:
            if repeat > n - i:
                repeat = n - i
            for j in range(i + at_once, i + repeat):
                out[j] = value
        i += repeat
        v += 1
    next_value[0] = v
    position[0] = i


cdef void _write_runs(key_t *out, Py_ssize_t n, const count_t *counts, Py_ssize_t bins, Py_ssize_t first,
                      uint64_t low) noexcept nogil:
    """Write the values in order, each as often as counted, skipping the first
    ``first`` of them (the positions of the ranks before this one).

    A branch on a run's length is mispredicted about once a run when lengths
    vary around the same few keys (16 bits of span over 200,000 keys: 3.1 ns
    a key, against 0.8 ns without that branch).  So the values are written a
    fixed number of times each (_runs), a number above most runs' lengths:
    once where most runs are empty, else the least of 8, 16, 32 or 64 above
    four thirds of the mean run (n / bins keys).  Near the mean a run is as
    often longer as shorter, and the branch to the loop for the rest is a
    coin toss: with 16 at a time, 2**20 keys over 2**16 values took 1.04 ns
    a key, and 0.71 with 32."""
    cdef Py_ssize_t v = 0, i = 0, j, repeat
    cdef key_t value
    while v < bins and first >= counts[v]:
        first -= counts[v]
        v += 1
    if first > 0:  # this rank's part of a run that began on the rank before
        repeat = min(counts[v] - first, n)
        value = <key_t>(low + <uint64_t>v)
        for j in range(repeat):
            out[j] = value
        i = repeat
        v += 1
    if 4 * n >= bins:
        if n < 6 * bins:
            _runs(out, n, counts, &v, &i, low, 8)
        elif n < 12 * bins:
            _runs(out, n, counts, &v, &i, low, 16)
        elif n < 24 * bins:
            _runs(out, n, counts, &v, &i, low, 32)
        else:
            _runs(out, n, counts, &v, &i, low, 64)
    while i < n:  # where most runs are empty, and the last keys: one write each
        repeat = counts[v]
        value = <key_t>(low + <uint64_t>v)
        out[i] = value
        if repeat > 1:
            if repeat > n - i:
                repeat = n - i
            for j in range(i + 1, i + repeat):
                out[j] = value
        i += repeat
        v += 1


cdef void _count_any(const void *keys, int kind, Py_ssize_t n, uint64_t low, count_t *counts,
                     Py_ssize_t bins) noexcept nogil:
    """_count_values for keys of the ``kind`` _kind names."""
    if kind == 1:
        _count_values(<const uint8_t *>keys, n, low, counts, bins)
    elif kind == 2:
        _count_values(<const uint16_t *>keys, n, low, counts, bins)
    elif kind == 4:
        _count_values(<const uint32_t *>keys, n, low, counts, bins)
    else:
        _count_values(<const uint64_t *>keys, n, low, counts, bins)


cdef void _write_any(void *out, int kind, Py_ssize_t n, const count_t *counts, Py_ssize_t bins,
                     Py_ssize_t first, uint64_t low) noexcept nogil:
    """_write_runs for keys of the ``kind`` _kind names."""
    if kind == 1:
        _write_runs(<uint8_t *>out, n, counts, bins, first, low)
    elif kind == 2:
        _write_runs(<uint16_t *>out, n, counts, bins, first, low)
    elif kind == 4:
        _write_runs(<uint32_t *>out, n, counts, bins, first, low)
    else:
        _write_runs(<uint64_t *>out, n, counts, bins, first, low)


def _count(cnp.ndarray keys, cnp.ndarray counts, low):
    """Add the keys' occurrences of each value low + v to counts[v] (uint32 or int64)."""
    cdef const void *source = _data(keys)
    cdef void *table = _data(counts)
    cdef int kind = _kind(keys)
    cdef Py_ssize_t n = keys.shape[0], bins = counts.shape[0]
    cdef uint64_t base = _bits(low)
    cdef bint wide = counts.dtype.itemsize == 8
    with nogil:
        if wide:
            _count_any(source, kind, n, base, <int64_t *>table, bins)
        else:
            _count_any(source, kind, n, base, <uint32_t *>table, bins)


def _write(cnp.ndarray out, cnp.ndarray counts, Py_ssize_t first, low):
    """Fill ``out`` with the values low + v, each counts[v] times (uint32 or
    int64), from the ``first`` position of them on."""
    cdef void *target = _data(out)
    cdef const void *table = _data(counts)
    cdef int kind = _kind(out)
    cdef Py_ssize_t n = out.shape[0], bins = counts.shape[0]
    cdef uint64_t base = _bits(low)
    cdef bint wide = counts.dtype.itemsize == 8
    with nogil:
        if wide:
            _write_any(target, kind, n, <const int64_t *>table, bins, first, base)
        else:
            _write_any(target, kind, n, <const uint32_t *>table, bins, first, base)


def _counting(array, out, low, int width, team):
    """Count, combine the counts over the ranks, write this rank's positions.
    On one rank 32-bit counters do (half the memory of the table)."""
    narrow = team.size == 1 and array.shape[0] < 2**32
    counts = _kept_array("counts", 1 << width, np.uint32 if narrow else np.int64)
    counts.fill(0)
    _count(array, counts, low)
    first = 0
    if team.size > 1:
        first = int(team.scan(np.array([array.shape[0]], dtype=np.int64))[0])
        counts = team.reduce(counts, out=_kept_array("totals", 1 << width, np.int64))
    _write(out, counts, first, low)


#: Widest span counting sort takes on: 2**24 counters are 128 MiB.
MAX_COUNTING_WIDTH = 24


def counting_sort(keys):
    """Return ``keys`` sorted by counting each value of their span (at most
    2**24 values); under MPI, as radix_sort."""
    array = _checked(keys, 1)
    if not array.dtype.isnative:
        return counting_sort(_native(array)).astype(array.dtype)
    team = world()
    low, width = _global_span(array)
    if width > MAX_COUNTING_WIDTH:
        raise ValueError(f"keys span {width} bits; counting sort takes at most {MAX_COUNTING_WIDTH}")
    out = np.empty_like(array)
    if low is not None:
        _counting(array, out, low, width, team)
    return out


def _narrow_sort(cnp.ndarray keys, cnp.ndarray offsets, cnp.ndarray out, low):
    """Sort 32- or 64-bit ``keys`` into ``out`` through their offsets from
    ``low`` in the narrower unsigned dtype of ``offsets``."""
    cdef const void *source = _data(keys)
    cdef void *narrow = _data(offsets)
    cdef void *target = _data(out)
    cdef Py_ssize_t n = keys.shape[0]
    cdef uint64_t base = _bits(low)
    cdef int size = keys.dtype.itemsize, narrow_size = offsets.dtype.itemsize
    with nogil:
        if size == 4:
            _narrow(<const uint32_t *>source, n, <uint16_t *>narrow, base)
        elif narrow_size == 2:
            _narrow(<const uint64_t *>source, n, <uint16_t *>narrow, base)
        else:
            _narrow(<const uint64_t *>source, n, <uint32_t *>narrow, base)
    offsets.sort()
    with nogil:
        if size == 4:
            _restore(<const uint16_t *>narrow, n, <uint32_t *>target, base)
        elif narrow_size == 2:
            _restore(<const uint16_t *>narrow, n, <uint64_t *>target, base)
        else:
            _restore(<const uint32_t *>narrow, n, <uint64_t *>target, base)


def narrow_sort(keys):
    """Return ``keys`` sorted by numpy.sort on their offsets from the smallest key,
    held in the narrowest unsigned dtype of 16, 32 or 64 bits that fits the span:
    NumPy's vectorized sorts take fewer cycles per key on narrower keys.  One rank."""
    array = _checked(keys, 1)
    if not array.dtype.isnative:
        return narrow_sort(_native(array)).astype(array.dtype)
    if array.shape[0] <= 1:
        return array.copy()
    low, high = _extremes(array)
    width = (high - low).bit_length()
    narrow = np.uint16 if width <= 16 else np.uint32 if width <= 32 else np.uint64
    if np.dtype(narrow).itemsize >= array.dtype.itemsize:
        return np.sort(array)
    out = np.empty_like(array)
    _narrow_sort(array, np.empty(array.shape[0], dtype=narrow), out, low)
    return out
