"""Red-black successive over-relaxation on a 2-D grid (thesis §4.4, §5.2).

The operation, identical in every layout:

- the grid ``u`` is a ``height × width`` float64 array; its boundary cells
  (first and last row, first and last column) are fixed;
- an interior cell (i, j), 1 ≤ i ≤ height − 2, 1 ≤ j ≤ width − 2, is *red*
  when i + j is even and *black* otherwise;
- one iteration updates every red interior cell, then every black one, by

      u[i, j] ← u[i, j] + ω · ((u[i−1, j] + u[i+1, j] + u[i, j−1] + u[i, j+1]) / 4 − u[i, j])

  with ω = OMEGA = 1.87, the four neighbours added in that order.

A red cell's neighbours are all black or boundary cells and vice versa, so
within a colour the order of the updates does not matter: every layout
computes each cell from the same values with the same operations, and
gives the uniprocessor's grid (bit for bit, in practice).

SPMD contract (like the sort library's): every rank passes the same full
grid and the same number of iterations, and every rank gets back the full
resulting grid, a new array (the argument is left alone).  A grid without
interior cells (height or width < 3), or zero iterations, comes back as an
unchanged copy.

Layouts:

- ``relax_uniprocessor``: the whole grid on every rank, computed
  redundantly; no communication, so it applies at every rank count.
- ``relax_strips``: the interior columns split into P contiguous strips;
  after each half-iteration every rank swaps one halo column with each
  neighbour; at the end the strips are gathered on every rank.  Needs
  ``width − 2 ≥ P`` (at least one interior column per rank).
- ``relax_blocks``: a ``pr × pc`` process grid (``block_rows(P)`` rows of
  processes, ⌊√P⌋ when it divides P and else 1, and ``P / pr`` columns:
  P = 2 or 3 gives 1 × P, P = 4 gives 2 × 2, P = 6 gives 2 × 3, P = 10
  gives 1 × 10); halo rows and
  columns swapped with up to four neighbours after each half-iteration.
  Needs ``height − 2 ≥ pr`` and ``width − 2 ≥ pc``.  With three or more
  rows (columns) of processes, the blocks on the edges get ``extra_rows``
  (``extra_cols``) more rows (columns) than the others, to fill the time
  the missing neighbour's halo swap would have taken (thesis §5.2).

The convergence variants ``converge_<layout>(grid, tolerance, limit)``
iterate until the largest absolute change an iteration makes (over the whole
grid: the ranks agree on it with a max-reduce) is at most ``tolerance``, or
``limit`` iterations, and return the grid and the number of iterations done
— the same in every layout, since every cell changes by the same amounts.

A layout called where its precondition fails raises ValueError (the
dispatcher never calls it there).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from hlc.runtime import world

#: The over-relaxation factor of the thesis.
OMEGA = 1.87
#: Colours: the parity of i + j of the cells a half-iteration updates.
RED, BLACK = 0, 1


def block_rows(ranks: int) -> int:
    """Rows of the process grid of ``relax_blocks`` for ``ranks`` processes:
    ⌊√ranks⌋ when it divides ranks, else 1 (a rule the preconditions in
    stencil.hl can write with math functions alone)."""
    root = math.isqrt(max(int(ranks), 1))
    return root if ranks % root == 0 else 1


def strips_apply(height: int, width: int, ranks: int) -> bool:
    """The precondition of ``relax_strips``: an interior column for every rank."""
    return width - 2 >= ranks


def blocks_apply(height: int, width: int, ranks: int) -> bool:
    """The precondition of ``relax_blocks``: an interior row and column in every block."""
    rows = block_rows(ranks)
    return height - 2 >= rows and width - 2 >= ranks // rows


def half_sweep(u: np.ndarray, parity: int, track: bool = False) -> float:
    """Update, in place, the interior cells of ``u`` (not its outermost rows and
    columns) whose local i + j has the given parity, from their four neighbours.
    With ``track``, returns the largest absolute change made (else 0.0)."""
    height, width = u.shape
    delta = 0.0
    if height < 3 or width < 3:
        return delta
    for i0 in (1, 2):
        j0 = 1 + (i0 + 1 + parity) % 2  # (i0 + j0) % 2 == parity, j0 in {1, 2}
        if i0 > height - 2 or j0 > width - 2:
            continue
        centre = u[i0:height - 1:2, j0:width - 1:2]
        total = u[i0 - 1:height - 2:2, j0:width - 1:2] + u[i0 + 1:height:2, j0:width - 1:2]
        total += u[i0:height - 1:2, j0 - 1:width - 2:2]
        total += u[i0:height - 1:2, j0 + 1:width:2]
        total /= 4
        total -= centre
        total *= OMEGA
        if track and total.size:
            delta = max(delta, float(np.abs(total).max()))
        centre += total
    return delta


def _checked(grid: np.ndarray, iterations: int) -> tuple[np.ndarray, int]:
    if not isinstance(grid, np.ndarray):
        raise TypeError(f"grid must be a NumPy array, not {type(grid).__name__}")
    if grid.ndim != 2:
        raise ValueError(f"grid must be 2-D, not {grid.ndim}-D")
    if grid.dtype.kind not in "fiu":
        raise TypeError(f"grid must hold numbers, not {grid.dtype}")
    if isinstance(iterations, bool) or not isinstance(iterations, numbers.Integral):
        raise TypeError(f"iterations must be an integer, not {type(iterations).__name__}")
    if iterations < 0:
        raise ValueError(f"iterations must be >= 0, not {iterations}")
    return np.array(grid, dtype=np.float64, order="C", copy=True), int(iterations)


def relax_uniprocessor(grid: np.ndarray, iterations: int) -> np.ndarray:
    """``iterations`` red-black SOR iterations of the whole grid on this rank (module doc)."""
    u, iterations = _checked(grid, iterations)
    for _ in range(iterations):
        half_sweep(u, RED)
        half_sweep(u, BLACK)
    return u


def _process_grid(u: np.ndarray, layout: str) -> tuple[Any, int, int]:
    """The team and the rows and columns of its process grid for ``layout``
    ("strips" or "blocks"); ValueError where the layout's precondition fails."""
    team = world()
    if layout == "strips":
        if not strips_apply(*u.shape, team.size):
            raise ValueError(f"strips need width - 2 >= P: a {u.shape[0]} x {u.shape[1]} grid on {team.size} ranks")
        return team, 1, team.size
    rows = block_rows(team.size)
    if not blocks_apply(*u.shape, team.size):
        raise ValueError(f"blocks need height - 2 >= {rows} and width - 2 >= {team.size // rows}: "
                         f"a {u.shape[0]} x {u.shape[1]} grid on {team.size} ranks")
    return team, rows, team.size // rows


def _converging(grid: np.ndarray, tolerance: float, limit: int) -> tuple[np.ndarray, float, int]:
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real) or not tolerance >= 0:
        raise ValueError(f"tolerance must be a number >= 0, not {tolerance!r}")
    u, limit = _checked(grid, limit)
    return u, float(tolerance), limit


def converge_uniprocessor(grid: np.ndarray, tolerance: float, limit: int) -> tuple[np.ndarray, int]:
    """Red-black SOR iterations of the whole grid until the largest change an
    iteration makes is at most ``tolerance``, or ``limit`` iterations: the
    grid and the number of iterations done."""
    u, tolerance, limit = _converging(grid, tolerance, limit)
    for done in range(1, limit + 1):
        delta = max(half_sweep(u, RED, True), half_sweep(u, BLACK, True))
        if delta <= tolerance:
            return u, done
    return u, limit


def converge_strips(grid: np.ndarray, tolerance: float, limit: int) -> tuple[np.ndarray, int]:
    """``converge_uniprocessor`` with one strip of interior columns per rank; the
    ranks agree on the largest change of each iteration (a max-reduce)."""
    u, tolerance, limit = _converging(grid, tolerance, limit)
    team, rows, cols = _process_grid(u, "strips")
    return _relax_partitioned(u, limit, team, rows, cols, tolerance=tolerance)


def converge_blocks(grid: np.ndarray, tolerance: float, limit: int) -> tuple[np.ndarray, int]:
    """``converge_uniprocessor`` on the process grid of ``relax_blocks``."""
    u, tolerance, limit = _converging(grid, tolerance, limit)
    team, rows, cols = _process_grid(u, "blocks")
    return _relax_partitioned(u, limit, team, rows, cols, tolerance=tolerance)


def relax_strips(grid: np.ndarray, iterations: int) -> np.ndarray:
    """Red-black SOR with the interior columns in one strip per rank (module doc)."""
    u, iterations = _checked(grid, iterations)
    team, rows, cols = _process_grid(u, "strips")
    return _relax_partitioned(u, iterations, team, rows, cols)[0]


def relax_blocks(grid: np.ndarray, iterations: int, extra_rows: int = 0, extra_cols: int = 0) -> np.ndarray:
    """Red-black SOR with the interior in a block_rows(P) × P / block_rows(P) grid of blocks (module doc);
    the blocks of the first and last row of the process grid get ``extra_rows`` more rows, those of its
    first and last column ``extra_cols`` more columns (when it has at least three of them)."""
    u, iterations = _checked(grid, iterations)
    for name, value in (("extra_rows", extra_rows), ("extra_cols", extra_cols)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, not {value!r}")
    team, rows, cols = _process_grid(u, "blocks")
    return _relax_partitioned(u, iterations, team, rows, cols, int(extra_rows), int(extra_cols))[0]


def _cuts(interior: int, parts: int, extra: int = 0) -> list[int]:
    """Global indices where the parts of 1 .. interior start, and interior + 1.

    An even split, except that with three parts or more the first and the
    last get ``extra`` cells more than the others (thesis §5.2): a block on
    the edge of the process grid has a neighbour fewer to swap halos with,
    and spends that time on the extra cells instead of waiting.  ``extra``
    is reduced as far as needed for every part to keep at least one cell.
    """
    extra = max(0, min(extra, (interior - parts) // 2)) if parts >= 3 else 0
    rest = interior - 2 * extra
    return [1 + k * rest // parts + (extra if k else 0) for k in range(parts)] + [interior + 1]


def _relax_partitioned(u: np.ndarray, iterations: int, team, prows: int, pcols: int, extra_rows: int = 0,
                       extra_cols: int = 0, tolerance: float | None = None) -> tuple[np.ndarray, int]:
    """SOR on a prows × pcols grid of blocks of the interior; rank = row * pcols + column.
    Runs ``iterations`` iterations or, with a ``tolerance``, stops after the first
    whose largest change over all ranks is at most it.  Every rank returns the
    full grid, and the number of iterations done."""
    height, width = u.shape
    if height < 3 or width < 3 or iterations == 0:  # nothing changes: converged at once
        return u, min(iterations, 1) if tolerance is not None else iterations
    row_cuts, col_cuts = _cuts(height - 2, prows, extra_rows), _cuts(width - 2, pcols, extra_cols)
    prow, pcol = divmod(team.rank, pcols)
    r0, r1, c0, c1 = row_cuts[prow], row_cuts[prow + 1], col_cuts[pcol], col_cuts[pcol + 1]
    local = _scratch("local", (r1 - r0 + 2) * (c1 - c0 + 2)).reshape(r1 - r0 + 2, c1 - c0 + 2)
    local[...] = u[r0 - 1:r1 + 1, c0 - 1:c1 + 1]  # owned cells and a halo of one
    offset = (r0 - 1 + c0 - 1) % 2  # global parity of local (0, 0)
    track = tolerance is not None

    def exchange() -> None:
        _exchange(team, local, 1, pcol, pcols, lambda k: prow * pcols + k)
        _exchange(team, local, 0, prow, prows, lambda k: k * pcols + pcol)

    done = iterations
    for iteration in range(iterations):
        delta = half_sweep(local, (RED + offset) % 2, track)
        exchange()
        delta = max(delta, half_sweep(local, (BLACK + offset) % 2, track))
        if iteration == iterations - 1:
            break  # the last halos are never read
        if track and float(team.reduce(np.array([delta]), "max")[0]) <= tolerance:
            done = iteration + 1
            break
        exchange()
    owned = _scratch("owned", (r1 - r0) * (c1 - c0)).reshape(r1 - r0, c1 - c0)
    owned[...] = local[1:-1, 1:-1]
    everything = team.allgatherv(owned.reshape(-1), out=_scratch("gathered", (height - 2) * (width - 2)))
    start = 0
    for rank in range(team.size):
        i, j = divmod(rank, pcols)
        rows = slice(row_cuts[i], row_cuts[i + 1])
        cols = slice(col_cuts[j], col_cuts[j + 1])
        count = (rows.stop - rows.start) * (cols.stop - cols.start)
        u[rows, cols] = everything[start:start + count].reshape(rows.stop - rows.start, cols.stop - cols.start)
        start += count
    return u, done


_SCRATCH: dict[str, np.ndarray] = {}


def _scratch(name: str, size: int) -> np.ndarray:
    """A 1-D float64 buffer of ``size`` cells kept between calls, for the
    partitioned layouts' local block, the cells it owns and the gathered
    grid.  A fresh array of a megabyte or more comes as fresh pages from the
    system, and touching them can cost more than the sweeps: a two-rank
    strip layout of a 279 x 490 grid took 1.3 ms with fresh buffers, 0.46 ms
    with kept ones, and where the allocator switches to fresh pages depends
    on what the process allocated before (its threshold grows with the
    blocks it frees), so the same call was fast in one process and slow in
    another."""
    kept = _SCRATCH.get(name)
    if kept is None or kept.shape[0] < size:
        kept = _SCRATCH[name] = np.empty(size)
    return kept[:size]


def _exchange(team, local: np.ndarray, axis: int, index: int, count: int, rank_of) -> None:
    """Swap the outermost owned rows (axis 0) or columns (axis 1) of ``local`` with
    the neighbours index − 1 and index + 1 along that axis of the process grid.
    Pairs (0, 1), (2, 3), … swap first, then (1, 2), (3, 4), …: every sendrecv has a
    partner, and no rank waits on a chain.  Both sides know a halo's length, so
    it arrives straight into a kept buffer, in one raw transfer."""
    if count == 1:
        return
    view = local if axis == 0 else local.T
    landing = _scratch(f"halo{axis}", view.shape[1])
    for phase in (0, 1):
        if (index - phase) % 2 == 0:  # the lower of a pair: swap with index + 1
            if index + 1 < count:
                partner = rank_of(index + 1)
                view[-1] = team.sendrecv(view[-2], partner, partner, tag=2 * axis + phase, out=landing)
        elif index - 1 >= 0:  # the upper of a pair: swap with index − 1
            partner = rank_of(index - 1)
            view[0] = team.sendrecv(view[1], partner, partner, tag=2 * axis + phase, out=landing)
