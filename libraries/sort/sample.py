"""Sample sort over the ranks of an SPMD run (thesis Fig. 4-12).

Each rank sorts its keys, draws a random sample of them, and the ranks agree
on P − 1 splitters picked evenly from the sorted union of the samples.  Every
rank then cuts its sorted keys at the splitters by binary search, one
all-to-all-v sends each piece to its rank, and each rank merges the sorted
runs it received.  If some rank would receive more than its memory bound, new
splitters are drawn from a sample twice as large before anything moves.

Keys are ordered by (key, rank, position in the rank's sorted keys): a total
order, so equal keys are spread over the ranks like any others and all-equal
input (the worst case of plain sample sort) splits evenly.

The contract is radix_sort's: rank r gets back as many keys as it passed in,
the positions s_r .. s_r + n_r − 1 of the sorted keys of all ranks.  A last
all-to-all-v moves the few keys the splitters left on a neighbouring rank.
"""

from __future__ import annotations

import numpy as np

from hlc.runtime import world

#: Sample keys per rank, at the first attempt.
OVERSAMPLING = 32
#: A rank may receive at most this many times its share of the keys.
MEMORY_BOUND = 2.0
#: Samples are doubled at most this many times; the last split is then kept.
ATTEMPTS = 4


def sample_sort(keys: np.ndarray) -> np.ndarray:
    """Return this rank's part of the sorted keys of all ranks (see module doc)."""
    if not isinstance(keys, np.ndarray):
        raise TypeError(f"keys must be a NumPy array, not {type(keys).__name__}")
    if keys.dtype.kind not in "iu":
        raise TypeError(f"keys must hold integers, not {keys.dtype}")
    if keys.ndim != 1:
        raise ValueError(f"keys must be 1-D, not {keys.ndim}-D")
    team = world()
    local = np.sort(keys)
    if team.size == 1:
        return local
    sizes = team.allgather(np.array([local.shape[0]], dtype=np.int64))[:, 0]
    total = int(sizes.sum())
    if total == 0:
        return local
    bound = MEMORY_BOUND * total / team.size + OVERSAMPLING
    for attempt in range(ATTEMPTS):
        sending = _pieces(local, _splitters(local, team, OVERSAMPLING << attempt, attempt), team.rank)
        if team.reduce(sending, "sum").max() <= bound:
            break
    runs = team.alltoallv(local, sending)
    merged = np.sort(runs, kind="stable")  # a merge of the sorted runs
    return _rebalance(merged, sizes, team)


def _splitters(local: np.ndarray, team, count: int, attempt: int) -> list[tuple[int, int, int]]:
    """P − 1 (key, rank, position) triples, evenly spaced in the sorted union of
    every rank's random sample of ``count`` keys."""
    rng = np.random.default_rng([attempt, team.rank, local.shape[0]])
    positions = np.sort(rng.integers(0, local.shape[0], size=min(count, local.shape[0])))
    keys = team.allgatherv(local[positions])
    ranks = team.allgatherv(np.full(positions.shape[0], team.rank, dtype=np.int64))
    positions = team.allgatherv(positions.astype(np.int64))
    order = np.lexsort((positions, ranks, keys))
    picks = order[(np.arange(1, team.size) * order.shape[0]) // team.size]
    return [(int(keys[i]), int(ranks[i]), int(positions[i])) for i in picks]


def _pieces(local: np.ndarray, splitters: list[tuple[int, int, int]], rank: int) -> np.ndarray:
    """How many of this rank's sorted keys go to each rank: binary search of
    each splitter, ties broken by rank, then by position."""
    cuts = [0]
    for key, owner, position in splitters:
        if rank < owner:
            cut = np.searchsorted(local, key, side="right")
        elif rank > owner:
            cut = np.searchsorted(local, key, side="left")
        else:
            cut = position
        cuts.append(max(int(cut), cuts[-1]))
    cuts.append(local.shape[0])
    return np.diff(np.array(cuts, dtype=np.int64))


def _rebalance(merged: np.ndarray, sizes: np.ndarray, team) -> np.ndarray:
    """Move keys so that rank r holds the sorted positions s_r .. s_r + n_r − 1."""
    first = int(team.scan(np.array([merged.shape[0]], dtype=np.int64))[0])
    wanted = np.concatenate(([0], np.cumsum(sizes)))
    edges = np.clip(wanted - first, 0, merged.shape[0])
    return team.alltoallv(merged, np.diff(edges))
