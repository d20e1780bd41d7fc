"""The SPMD runtime: every primitive's one-rank meaning, in this process and
without MPI; under mpiexec -n 2 and -n 3 every primitive against NumPy on the
gathered data; the split-phase barrier serving a message that would otherwise
deadlock; and the emulated platforms."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import hlc
from hlc.calibrate.run import mpiexec
from hlc.runtime import PRESETS, Platform, World, current_platform, launched_by_mpiexec

TIMEOUT = 300


@pytest.fixture
def one(monkeypatch) -> World:
    monkeypatch.delenv("HLC_PLATFORM", raising=False)
    return World()


def run_ranks(tmp_path, script: str, ranks: int, **environment: str) -> subprocess.CompletedProcess:
    path = tmp_path / "script.py"
    path.write_text(script)
    result = subprocess.run([mpiexec(), "-n", str(ranks), sys.executable, str(path)], capture_output=True, text=True,
                            timeout=TIMEOUT, env={**os.environ, **environment})
    assert result.returncode == 0, result.stdout + result.stderr
    return result


# ---- one rank ---------------------------------------------------------------------------------


def test_one_rank_collectives_are_the_identity(one):
    vector = np.array([3, -1, 7], dtype=np.int32)
    assert (one.rank, one.size) == (0, 1)
    one.barrier()
    for operation in ("sum", "min", "max"):
        result = one.reduce(vector, operation)
        assert result.dtype == np.int32 and np.array_equal(result, vector) and result is not vector
    for operation in ("average", "median"):
        result = one.reduce(vector, operation)
        assert result.dtype == np.float64 and np.array_equal(result, vector)
    variance = one.reduce(vector, "variance")
    assert variance.dtype == np.float64 and np.array_equal(variance, np.zeros(3))
    with pytest.raises(ValueError, match="average, variance, median"):
        one.reduce(vector, "mean")
    assert np.array_equal(one.scan(vector), np.zeros(3))
    assert np.array_equal(one.allgather(vector), vector[np.newaxis])
    assert np.array_equal(one.allgatherv(vector), vector)
    assert np.array_equal(one.alltoallv(vector, np.array([3])), vector)


def test_one_rank_receives_into_out(one):
    vector = np.array([3, -1, 7], dtype=np.int32)
    out = np.empty(3, dtype=np.int64)
    assert one.reduce(vector, "max", out=out) is out and np.array_equal(out, vector)
    received = np.empty(3, dtype=np.int32)
    assert one.alltoallv(vector, np.array([3]), out=received) is received and np.array_equal(received, vector)
    gathered = np.empty(3, dtype=np.int32)
    assert one.allgatherv(vector, out=gathered) is gathered and np.array_equal(gathered, vector)
    with pytest.raises(ValueError, match="out must have shape"):
        one.allgatherv(vector, out=np.empty(4, dtype=np.int32))
    with pytest.raises(TypeError, match="out must hold int32, not int64"):
        one.alltoallv(vector, np.array([3]), out=out)  # raw bytes arrive: no conversion
    with pytest.raises(TypeError, match="out must hold int64 .*safely.*, not int8"):
        one.reduce(vector.astype(np.int64), out=np.empty(3, dtype=np.int8))
    with pytest.raises(ValueError, match=r"out must have shape \(3,\), not \(4,\)"):
        one.reduce(vector, out=np.empty(4, dtype=np.int32))
    with pytest.raises(ValueError, match="out must be C-contiguous"):
        one.alltoallv(vector, np.array([3]), out=np.empty(6, dtype=np.int32)[::2])
    with pytest.raises(ValueError, match="out is taken by the operations"):
        one.reduce(vector, "median", out=np.empty(3))


def test_one_rank_broadcast_and_messages(one):
    array = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # not contiguous
    result = one.broadcast(array)
    assert result.dtype == np.float32 and np.array_equal(result, array) and result.flags.c_contiguous
    assert one.broadcast(np.float64(2.5)).shape == ()
    with pytest.raises(ValueError, match="root must be a rank in 0 .. 0"):
        one.broadcast(array, root=1)
    with pytest.raises(ValueError, match="Python objects"):
        one.broadcast(np.array([object()]))
    exchanged = one.sendrecv(array, 0, 0)
    assert np.array_equal(exchanged, array) and not np.shares_memory(exchanged, array)
    landing = np.empty(array.shape, dtype=array.dtype)
    assert one.sendrecv(array, 0, 0, out=landing) is landing and np.array_equal(landing, array)
    with pytest.raises(TypeError, match="out must hold"):
        one.sendrecv(array, 0, 0, out=np.empty(array.shape, dtype=np.int32))
    with pytest.raises(ValueError, match="out must have shape"):
        one.sendrecv(array, 0, 0, out=np.empty(array.size + 1, dtype=array.dtype))
    with pytest.raises(ValueError, match="itself.*use sendrecv"):
        one.send(array, 0)
    with pytest.raises(ValueError, match="itself"):
        one.receive(0)
    with pytest.raises(ValueError, match="destination must be a rank"):
        one.send(array, 1)
    assert one.probe() is None


def test_one_rank_split_barrier_is_already_complete(one):
    handle = one.barrier_start()
    assert handle.test()
    handle.complete()


def test_one_rank_needs_no_mpi(tmp_path):
    program = """
import sys
import numpy as np
from hlc.runtime import world
team = world()
v = np.arange(4.0)
team.barrier(); team.barrier_start().complete(); team.scan(v); team.allgather(v); team.allgatherv(v)
team.alltoallv(v, [4]); team.broadcast(v); team.sendrecv(v, 0, 0); team.probe()
for operation in ("sum", "min", "max", "average", "variance", "median"):
    team.reduce(v, operation)
assert "mpi4py" not in sys.modules, "mpi4py was imported"
print("no mpi")
"""
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("PMI_", "OMPI_", "HLC_PLATFORM"))}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=TIMEOUT,
                            env={**environment, "HLC_PLATFORM": "lan"})
    assert result.returncode == 0, result.stderr
    assert "no mpi" in result.stdout


# ---- several ranks -----------------------------------------------------------------------------

CHECK = r"""
import numpy as np
from hlc.runtime import world

team = world()
rank, size = team.rank, team.size
failures = []


def check(name, ok):
    if not ok:
        failures.append(name)


def data(r, length=None):
    # every rank can compute every rank's data
    generator = np.random.default_rng(100 + r)
    return generator.integers(-1000, 1000, 2 * r + 1 if length is None else length)


# reductions: the sum, min, max of MPI and the thesis's statistics, against NumPy on the gathered vectors
for vector in (data(rank, 9), data(rank, 9) * 0.37):
    everyone = team.allgather(vector)
    check("allgather", everyone.shape == (size, 9) and np.array_equal(everyone[rank], vector))
    expected = {"sum": everyone.sum(0), "min": everyone.min(0), "max": everyone.max(0),
                "average": everyone.mean(0, dtype=np.float64), "variance": everyone.astype(np.float64).var(0),
                "median": np.median(everyone.astype(np.float64), axis=0)}
    for operation, want in expected.items():
        got = team.reduce(vector, operation)
        check(f"reduce {operation} {vector.dtype}", got.dtype == want.dtype and np.allclose(got, want))
    check("scan", np.array_equal(team.scan(vector), everyone[:rank].sum(0) if rank else np.zeros_like(vector)))

# allgatherv: lengths differ per rank
everything = np.concatenate([data(r) for r in range(size)])
check("allgatherv", np.array_equal(team.allgatherv(data(rank)), everything))
gathered = np.full(len(everything), -1, dtype=everything.dtype)
check("allgatherv into out", team.allgatherv(data(rank), out=gathered) is gathered
      and np.array_equal(gathered, everything))

# alltoallv with random counts (some zero): every element says where it came from and goes
counts = np.random.default_rng(rank).integers(0, 4, size)
send = np.concatenate([rank * 10000 + d * 100 + np.arange(counts[d]) for d in range(size)]).astype(np.int64)
matrix = team.allgather(counts)
expected = np.concatenate([s * 10000 + rank * 100 + np.arange(matrix[s, rank]) for s in range(size)]).astype(np.int64)
check("alltoallv", np.array_equal(team.alltoallv(send, counts), expected))
kept = np.full(len(expected), -1, dtype=np.int64)
check("alltoallv into out", team.alltoallv(send, counts, out=kept) is kept and np.array_equal(kept, expected))
totals = np.empty(len(counts), dtype=np.int64)
check("reduce into out", team.reduce(counts, out=totals) is totals and np.array_equal(totals, matrix.sum(0)))

# broadcast: only the root knows the shape and dtype
root = size - 1
shapes = {"matrix": np.random.default_rng(7).random((4, 6)).astype(np.float32)[:, ::2],
          "scalar": np.array(np.int16(-5)), "empty": np.zeros((0, 3), dtype=np.uint8),
          "bool": np.array([True, False, True])}
for name, array in shapes.items():
    got = team.broadcast(array if rank == root else None, root=root)
    check(f"broadcast {name}", got.dtype == array.dtype and got.shape == array.shape and np.array_equal(got, array))
try:
    team.broadcast(np.array([object()]) if rank == 0 else None)
    check("broadcast of objects raises", False)
except ValueError as error:
    check("broadcast of objects names the root", "rank 0" in str(error))

# sendrecv around a ring (at 2 ranks both exchange with each other at once); large enough for rendezvous
right, left = (rank + 1) % size, (rank - 1) % size
halo = np.full((1000, 250 + rank), rank, dtype=np.float64 if rank % 2 else np.int32)
got = team.sendrecv(halo, right, left, tag=4)
check("sendrecv", got.shape == (1000, 250 + left) and got.dtype == (np.float64 if left % 2 else np.int32)
      and (got == left).all())
# the same into a buffer whose size the receiver knows, a strided column sent (halo columns)
column = np.arange(12.0).reshape(3, 4)[:, rank % 4] + 100 * rank
landing = np.full(3, -1.0)
got = team.sendrecv(column, right, left, tag=5, out=landing)
check("sendrecv into out", got is landing and np.array_equal(landing, np.arange(12.0).reshape(3, 4)[:, left % 4]
                                                               + 100 * left))
# a shorter message than out holds is refused, naming the sender
try:
    team.sendrecv(np.zeros(2), right, left, tag=6, out=np.empty(3))
    check("sendrecv of too few bytes raises", False)
except ValueError as error:
    check("sendrecv of too few bytes names the sender", f"rank {left} sent 16" in str(error))

# send/receive: pairs (0→1, 2→3, …), a large buffer and a small one with another tag
if rank % 2 == 0 and rank + 1 < size:
    team.send(data(rank, 500_000), rank + 1)
    team.send(data(rank, 3).astype(np.int8), rank + 1, tag=9)
elif rank % 2 == 1:
    check("receive large", np.array_equal(team.receive(rank - 1), data(rank - 1, 500_000)))
    small = team.receive(rank - 1, tag=9)
    check("receive small", small.dtype == np.int8 and np.array_equal(small, data(rank - 1, 3).astype(np.int8)))
# probe: the last rank sends to rank 0, which polls until the message is there
if rank == size - 1:
    team.send(np.arange(5), 0, tag=7)
elif rank == 0:
    while (envelope := team.probe()) is None:
        pass
    check("probe", envelope == (size - 1, 7) and np.array_equal(team.receive(*envelope), np.arange(5)))
try:
    team.send(np.arange(3), rank)
    check("send to self raises", False)
except ValueError:
    pass

# a split barrier that everyone starts at once
handle = team.barrier_start()
handle.complete()
check("split barrier", handle.test())

if failures:
    print(f"rank {rank} failures: {failures}", flush=True)
total = int(team.reduce(np.array([len(failures)]), "sum")[0])
if rank == 0 and total == 0:
    print(f"runtime check passed on {size} ranks")
"""


@pytest.mark.parametrize("ranks", [2, 3])
def test_every_primitive_under_mpiexec(tmp_path, ranks):
    result = run_ranks(tmp_path, CHECK, ranks)
    assert f"runtime check passed on {ranks} ranks" in result.stdout, result.stdout + result.stderr


SPLIT_BARRIER = r"""
import numpy as np
from hlc.runtime import world

team = world()
big = np.arange(1_000_000, dtype=np.float64)  # 8 MB: rendezvous, so send waits for the receive
if team.rank == 1:
    team.send(big, 0, tag=3)  # returns only once rank 0 receives
    team.barrier_start().complete()
else:
    handle = team.barrier_start()
    received = None
    while not handle.test():  # in a blocking barrier, rank 0 would never receive: deadlock
        if team.probe(1, 3) is not None:
            received = team.receive(1, tag=3)
    assert received is not None, "the barrier ended before rank 1 sent"
    assert np.array_equal(received, big)
    print("received while waiting at the barrier")
"""


def test_split_barrier_lets_a_waiting_rank_receive(tmp_path):
    result = run_ranks(tmp_path, SPLIT_BARRIER, 2)
    assert "received while waiting at the barrier" in result.stdout


# ---- platforms ---------------------------------------------------------------------------------

PLATFORM = r"""
import numpy as np
from mpi4py import MPI
from hlc.runtime import PRESETS, Platform, World, world

team = world()
assert team.platform == PRESETS["lan"], team.platform
native = World(MPI.COMM_WORLD, PRESETS["native"])


def hundred_barriers(group):
    group.barrier()
    start = group.time()
    for _ in range(100):
        group.barrier()
    return group.time() - start


lan = min(hundred_barriers(team) for _ in range(3))
fast = min(hundred_barriers(native) for _ in range(3))
# bytes are charged to the sender: 20 000 bytes at 1 µs each
slow = World(MPI.COMM_WORLD, Platform("slow", 0.0, 1e-6))
start = slow.time()
if slow.rank == 0:
    slow.send(np.zeros(2500), 1)
else:
    slow.receive(0)
sending = slow.time() - start
if team.rank == 0:
    print(f"lan {lan} native {fast} sending {sending}")
"""


def test_emulated_lan_barriers_cost_their_startup(tmp_path):
    result = run_ranks(tmp_path, PLATFORM, 2, HLC_PLATFORM="lan")
    words = result.stdout.split()
    lan, native, sending = (float(words[words.index(name) + 1]) for name in ("lan", "native", "sending"))
    assert lan >= 100 * 200e-6
    assert native < lan / 3, (lan, native)  # a noisy machine: native is usually ~100× faster
    assert sending >= 20_000 * 1e-6


def test_platform_selection(monkeypatch, tmp_path):
    monkeypatch.delenv("HLC_PLATFORM", raising=False)
    assert current_platform() == PRESETS["native"] and current_platform().native
    monkeypatch.setenv("HLC_PLATFORM", "fast")
    assert current_platform() == Platform("fast", 2e-6, 1e-9)
    assert PRESETS["lan"].startup_seconds == pytest.approx(100 * PRESETS["fast"].startup_seconds)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"name": "cluster", "startup_seconds": 5e-5, "seconds_per_byte": 2e-9}))
    monkeypatch.setenv("HLC_PLATFORM", str(path))
    assert current_platform() == Platform("cluster", 5e-5, 2e-9)
    assert World().platform.name == "cluster"
    path.write_text(json.dumps({"startup_seconds": -1, "seconds_per_byte": 0}))
    with pytest.raises(ValueError, match="startup_seconds must be a finite number >= 0"):
        current_platform()
    path.write_text(json.dumps({"startup": 1}))
    with pytest.raises(ValueError, match="keys"):
        current_platform()
    monkeypatch.setenv("HLC_PLATFORM", str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="cannot read platform file"):
        current_platform()


def test_unknown_platform_names_the_presets(monkeypatch):
    monkeypatch.setenv("HLC_PLATFORM", "bogus")
    with pytest.raises(ValueError, match=r"HLC_PLATFORM=bogus: .*native, fast, lan"):
        current_platform()
    with pytest.raises(ValueError, match="native, fast, lan"):
        World()


def test_one_rank_pays_no_emulated_cost(monkeypatch):
    monkeypatch.setenv("HLC_PLATFORM", "lan")
    assert not launched_by_mpiexec()
    team = World()
    assert team.platform.name == "lan"
    charged: list[int] = []  # the bytes of each operation the platform would busy-wait for
    monkeypatch.setattr(Platform, "spend", lambda platform, sent_bytes: charged.append(sent_bytes))
    for _ in range(100):
        team.barrier()
        team.reduce(np.zeros(1000))
    assert charged == []


def test_spend_busy_waits_the_cost():
    platform = Platform("test", 1e-3, 1e-6)
    assert platform.cost(1000) == pytest.approx(2e-3)
    start = time.perf_counter()
    platform.spend(1000)
    assert time.perf_counter() - start >= 2e-3


def test_the_runtime_library_calibrates_its_primitives(tmp_path):
    """libraries/runtime.hl (the full loop nest: a quick build has too few samples to
    be sure of the bytes term): every primitive gets a model at 1 and 2 ranks, and the
    built module calls the primitives."""
    root = Path(__file__).resolve().parents[2]
    result = hlc.build(root / "libraries" / "runtime.hl", out=tmp_path / "runtime")
    runtime = hlc.load(tmp_path / "runtime")
    models = runtime.__models__.times()
    assert set(models) == {"ClearMemory", "CombineVector", "Roundtrip", "BlockTransfer", "Barrier"}
    assert all(entry.status == "fitted" for entry in models.values()), result
    buffer = np.ones(1000)
    runtime.clear(buffer)
    assert not buffer.any()
    assert np.array_equal(runtime.combine(np.arange(5.0)), np.arange(5.0))
    assert runtime.predict("BlockTransfer", bytes=1 << 20, P=2) > runtime.predict("BlockTransfer", bytes=1 << 10, P=2)


BITWIDTH = """
import numpy as np
from hlc.language.functions import bitwidth
from hlc.runtime import world

team = world()
cases = {  # name: every rank's keys
    "apart": [np.array([-2**63]), np.array([2**63 - 1])] + [np.array([0])] * (team.size - 2),
    "one rank holds keys": [np.array([5, 9], dtype=np.uint8)] + [np.array([], dtype=np.uint8)] * (team.size - 1),
    "none anywhere": [np.array([], dtype=np.int32)] * team.size,
    "constant": [np.full(3, 7)] * team.size,
}
for name, parts in cases.items():
    everything = np.concatenate(parts)
    alone = (int(everything.max()) - int(everything.min())).bit_length() if everything.size else 0
    right = team.allgatherv(np.array([bitwidth(parts[team.rank]) == alone]))
    if team.rank == 0:
        print(name, right.tolist())
"""


OVER_RANKS = """
import numpy as np
from hlc.runtime import world
from hlc.runtime.extremes import over_ranks

from reduce_counter import ReduceCounter

team = world()
reduces = ReduceCounter(team)
for dtype in ("int8", "uint8", "int64", "uint64", "float64"):
    info = np.iinfo(dtype) if dtype != "float64" else np.finfo(dtype)
    cases = {  # name: every rank's values
        "type's ends": [[info.min], [info.max]] + [[0]] * (team.size - 2),
        "one rank holds values": [[5, 9]] + [[]] * (team.size - 1),
        "none anywhere": [[]] * team.size,
        "last rank only": [[]] * (team.size - 1) + [[info.max, info.max]],
    }
    for name, parts in cases.items():
        mine = np.array(parts[team.rank], dtype=dtype)
        everything = np.array(sum(parts, []), dtype=dtype)
        expected = (everything.min().item(), everything.max().item()) if everything.size else None
        before = reduces.calls
        span = over_ranks(team, dtype, mine.min() if mine.size else None, mine.max() if mine.size else None)
        right = team.allgatherv(np.array([span == expected and reduces.calls == before + 1]))
        if team.rank == 0:
            print(dtype, name, right.tolist())
"""


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_span_over_the_ranks_takes_one_all_reduce(tmp_path, ranks):
    """The smallest and largest value of every rank, to the ends of each
    integer type of either sign, with ranks that hold none."""
    result = run_ranks(tmp_path, OVER_RANKS, ranks, PYTHONPATH=str(Path(__file__).parent))
    lines = result.stdout.splitlines()
    assert len(lines) == 20 and all(line.endswith(f" {[True] * ranks}") for line in lines), result.stdout


@pytest.mark.parametrize("ranks", [2, 3])
def test_bitwidth_under_mpiexec_spans_every_rank_s_values(tmp_path, ranks):
    """The keys of an SPMD sort are all ranks' keys: their span decides which
    sorts apply, however little of it one rank holds."""
    result = run_ranks(tmp_path, BITWIDTH, ranks)
    lines = result.stdout.splitlines()
    assert len(lines) == 4 and all(line.endswith(f" {[True] * ranks}") for line in lines), result.stdout
