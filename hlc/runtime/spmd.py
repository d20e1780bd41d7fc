"""Collective operations over MPI (mpi4py), the same calls on one rank.

Parallel implementations are SPMD: every rank calls the same function with its
own part of the data.  They need only a few collectives — a barrier, vector
reductions and scans (thesis §4.5: CombineVector), an all-to-all with per-rank
counts — so this module wraps exactly those, on NumPy buffers, and gives each
a one-rank meaning that costs nothing.  Code written against ``World`` runs
unchanged under ``mpiexec -n P`` and as a plain program.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import numpy as np

#: Environment variables a process manager sets in the processes it starts
#: (MPICH's Hydra sets PMI_*, Open MPI OMPI_COMM_WORLD_*).
_LAUNCHER_VARIABLES = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE")

_OPERATIONS = ("sum", "min", "max")


def launched_by_mpiexec() -> bool:
    """Whether this process is one rank of an ``mpiexec`` run."""
    return any(os.environ.get(name) for name in _LAUNCHER_VARIABLES)


class World:
    """The ranks of this run: ``rank`` in 0 .. ``size`` − 1, and collectives.

    Every collective must be called by all ranks, in the same order.
    """

    def __init__(self, communicator: Any = None):
        self._communicator = communicator
        self.rank = 0 if communicator is None else communicator.Get_rank()
        self.size = 1 if communicator is None else communicator.Get_size()

    def __repr__(self) -> str:
        return f"World(rank={self.rank}, size={self.size})"

    def barrier(self) -> None:
        if self.size > 1:
            self._communicator.Barrier()

    def reduce(self, vector: np.ndarray, operation: str = "sum") -> np.ndarray:
        """Element-wise ``operation`` ("sum", "min", "max") of every rank's vector,
        returned on every rank (an all-reduce)."""
        vector = np.ascontiguousarray(vector)
        if self.size == 1:
            return vector.copy()
        result = np.empty_like(vector)
        self._communicator.Allreduce(vector, result, op=self._operation(operation))
        return result

    def scan(self, vector: np.ndarray) -> np.ndarray:
        """Element-wise sum of the vectors of the ranks before this one (an
        exclusive scan; zeros on rank 0)."""
        vector = np.ascontiguousarray(vector)
        result = np.zeros_like(vector)
        if self.size > 1:
            from mpi4py import MPI

            self._communicator.Exscan(vector, result, op=MPI.SUM)
            if self.rank == 0:  # MPI leaves rank 0's buffer undefined
                result[...] = 0
        return result

    def allgather(self, vector: np.ndarray) -> np.ndarray:
        """Every rank's vector (all of one length), stacked in rank order."""
        vector = np.ascontiguousarray(vector)
        if self.size == 1:
            return vector[np.newaxis].copy()
        result = np.empty((self.size, *vector.shape), dtype=vector.dtype)
        self._communicator.Allgather(vector, result)
        return result

    def allgatherv(self, vector: np.ndarray) -> np.ndarray:
        """The concatenation of every rank's 1-D vector, in rank order (lengths may differ)."""
        vector = np.ascontiguousarray(vector)
        if self.size == 1:
            return vector.copy()
        counts = self.allgather(np.array([vector.shape[0]], dtype=np.int64))[:, 0]
        result = np.empty(int(counts.sum()), dtype=vector.dtype)
        displacements = np.concatenate(([0], np.cumsum(counts)[:-1]))
        self._communicator.Allgatherv(vector, [result, counts, displacements, self._mpi_type(vector)])
        return result

    def alltoallv(self, send: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Personalized all-to-all: ``send`` (1-D) holds, in rank order, ``counts[r]``
        elements for rank r; returns what every rank sent here, in rank order."""
        send = np.ascontiguousarray(send)
        counts = np.asarray(counts, dtype=np.int64)
        if counts.shape != (self.size,) or counts.sum() != send.shape[0]:
            raise ValueError(f"counts must give one count per rank ({self.size}) summing to len(send) "
                             f"({send.shape[0]}), not {counts.tolist()}")
        if self.size == 1:
            return send.copy()
        arriving = np.empty(self.size, dtype=np.int64)
        self._communicator.Alltoall(counts, arriving)
        received = np.empty(int(arriving.sum()), dtype=send.dtype)
        kind = self._mpi_type(send)
        self._communicator.Alltoallv([send, counts, _starts(counts), kind],
                                     [received, arriving, _starts(arriving), kind])
        return received

    @staticmethod
    def time() -> float:
        """Seconds on a monotonic wall clock (MPI.Wtime's equivalent)."""
        return time.perf_counter()

    @staticmethod
    def _operation(name: str) -> Any:
        from mpi4py import MPI

        if name not in _OPERATIONS:
            raise ValueError(f"operation must be one of {', '.join(_OPERATIONS)}, not {name!r}")
        return {"sum": MPI.SUM, "min": MPI.MIN, "max": MPI.MAX}[name]

    @staticmethod
    def _mpi_type(array: np.ndarray) -> Any:
        from mpi4py import MPI

        return MPI._typedict[array.dtype.char]


def _starts(counts: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)


@functools.cache
def world() -> World:
    """This run's ranks: all of ``MPI.COMM_WORLD`` under mpiexec, else one."""
    if not launched_by_mpiexec():
        return World()
    from mpi4py import MPI

    return World(MPI.COMM_WORLD)
