"""The stencil library: red-black SOR in every layout equals the uniprocessor
version (itself checked against a plain double loop) — on one rank for random
grids including tiny ones, SPMD under mpiexec -n 2 and -n 4 — and the
preconditions in stencil.hl say the same as the implementation module."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlc
from hlc.calibrate.run import mpiexec
from hlc.language.expressions import evaluate

ROOT = Path(__file__).resolve().parents[2]
STENCIL = ROOT / "libraries" / "stencil"
TOLERANCE = 1e-12


def _import(name: str):
    sys.path.insert(0, str(STENCIL))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(STENCIL))


relax = _import("relax")
support = _import("support")


def close(result: np.ndarray, expected: np.ndarray) -> bool:
    """Equal shapes, and a relative difference of at most TOLERANCE."""
    if result.shape != expected.shape or result.dtype != np.float64:
        return False
    scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
    return bool(np.abs(result - expected).max(initial=0.0) <= TOLERANCE * scale)


def slow_relax(grid: np.ndarray, iterations: int) -> list[list[float]]:
    """The definition, one cell at a time in plain Python."""
    u = [[float(x) for x in row] for row in grid]
    height, width = len(u), len(u[0]) if u else 0
    for _ in range(iterations):
        for colour in (0, 1):
            for i in range(1, height - 1):
                for j in range(1, width - 1):
                    if (i + j) % 2 == colour:
                        neighbours = u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1]
                        u[i][j] += 1.87 * (neighbours / 4 - u[i][j])
    return u


@pytest.mark.parametrize("shape", [(3, 3), (4, 5), (5, 4), (7, 6), (9, 11), (2, 8), (8, 1)])
@pytest.mark.parametrize("iterations", [0, 1, 3])
def test_uniprocessor_follows_the_definition(shape, iterations):
    grid = np.random.default_rng(shape[0] * 100 + shape[1]).standard_normal(shape)
    expected = np.array(slow_relax(grid, iterations)).reshape(shape)
    assert close(relax.relax_uniprocessor(grid, iterations), expected)


def test_boundary_fixed_and_interior_moves_toward_the_mean():
    grid = np.zeros((6, 7))
    grid[0, :] = 1.0
    result = relax.relax_uniprocessor(grid, 200)
    assert np.array_equal(result[[0, -1], :], grid[[0, -1], :])
    assert np.array_equal(result[:, [0, -1]], grid[:, [0, -1]])
    # the converged solution of Laplace's equation: values strictly between the boundary values
    assert ((result[1:-1, 1:-1] > 0) & (result[1:-1, 1:-1] < 1)).all()
    assert (np.diff(result[1:-1, 3]) < 0).all()  # falling away from the hot edge


@settings(max_examples=150, deadline=None)
@given(height=st.integers(0, 24), width=st.integers(0, 24), iterations=st.integers(0, 6),
       seed=st.integers(0, 2**32 - 1))
def test_every_layout_equals_the_uniprocessor_on_one_rank(height, width, iterations, seed):
    grid = np.random.default_rng(seed).uniform(-1e3, 1e3, (height, width))
    before = grid.copy()
    expected = relax.relax_uniprocessor(grid, iterations)
    if height < 3 or width < 3 or iterations == 0:
        assert np.array_equal(expected, grid) and expected is not grid
    assert relax.strips_apply(height, width, 1) == (width >= 3)
    assert relax.blocks_apply(height, width, 1) == (height >= 3 and width >= 3)
    for name in ("strips", "blocks"):
        if getattr(relax, f"{name}_apply")(height, width, 1):
            assert close(getattr(relax, f"relax_{name}")(grid, iterations), expected), name
        else:  # excluded by its precondition: it says so when called anyway
            with pytest.raises(ValueError, match=name):
                getattr(relax, f"relax_{name}")(grid, iterations)
    assert np.array_equal(grid, before)  # the argument is left alone


@settings(max_examples=100, deadline=None)
@given(height=st.integers(0, 16), width=st.integers(0, 16), limit=st.integers(0, 80),
       tolerance=st.sampled_from([0.0, 1e-9, 1e-4, 1e-2, 0.5]), seed=st.integers(0, 2**32 - 1))
def test_convergence_stops_at_the_first_quiet_iteration(height, width, limit, tolerance, seed):
    grid = np.random.default_rng(seed).uniform(-1.0, 1.0, (height, width))
    result, done = relax.converge_uniprocessor(grid, tolerance, limit)
    assert 0 <= done <= limit
    assert close(result, relax.relax_uniprocessor(grid, done))
    if done:  # iteration `done` changed no cell by more than the tolerance, or the limit was reached
        change = np.abs(relax.relax_uniprocessor(grid, done) - relax.relax_uniprocessor(grid, done - 1)).max(initial=0)
        assert change <= tolerance or done == limit
    if done > 1:  # and every earlier one did
        change = np.abs(relax.relax_uniprocessor(grid, done - 1) - relax.relax_uniprocessor(grid, done - 2)).max()
        assert change > tolerance
    for name in ("strips", "blocks"):
        if getattr(relax, f"{name}_apply")(height, width, 1):
            other, count = getattr(relax, f"converge_{name}")(grid, tolerance, limit)
            assert count == done and close(other, result), name


def test_convergence_arguments_are_checked():
    with pytest.raises(ValueError, match="tolerance"):
        relax.converge_uniprocessor(np.zeros((4, 4)), -1.0, 3)
    with pytest.raises(ValueError, match="iterations"):
        relax.converge_strips(np.zeros((4, 4)), 0.1, -2)


def test_integer_grids_and_views_are_accepted():
    grid = np.arange(42).reshape(6, 7)
    expected = relax.relax_uniprocessor(grid.astype(np.float64), 2)
    for call in (relax.relax_uniprocessor, relax.relax_strips, relax.relax_blocks):
        assert close(call(grid, 2), expected)
        assert close(call(np.asfortranarray(grid.astype(np.float64)), 2), expected)
    wide = np.random.default_rng(3).random((9, 14))
    assert close(relax.relax_strips(wide[:, ::2], 3), relax.relax_uniprocessor(wide[:, ::2].copy(), 3))


@pytest.mark.parametrize("grid, iterations, error, words", [
    (np.zeros(5), 1, ValueError, "2-D"),
    ([[0.0] * 3] * 3, 1, TypeError, "NumPy array"),
    (np.zeros((3, 3), dtype=object), 1, TypeError, "numbers"),
    (np.zeros((3, 3)), -1, ValueError, "iterations"),
    (np.zeros((3, 3)), 1.5, TypeError, "iterations"),
])
def test_bad_arguments_are_refused_by_name(grid, iterations, error, words):
    for call in (relax.relax_uniprocessor, relax.relax_strips, relax.relax_blocks):
        with pytest.raises(error, match=words):
            call(grid, iterations)


def test_process_grid_rule():
    assert [relax.block_rows(p) for p in range(1, 13)] == [1, 1, 1, 2, 1, 2, 1, 2, 3, 1, 1, 3]


@pytest.mark.parametrize("interface_name, names", [("relax", ("uniprocessor", "strips", "blocks")),
                                                    ("converge", ("whole", "striped", "blocked"))])
def test_preconditions_of_the_description_match_the_module(interface_name, names):
    library = hlc.parse_file(ROOT / "libraries" / "stencil.hl")
    assert not library.warnings
    interface = library.interface(interface_name)
    implementations = {i.name: i for i in interface.implementations}
    whole, strips, blocks = names
    assert set(implementations) == set(names)
    assert implementations[whole].requires == ()
    for ranks in range(1, 40):
        for height in range(0, 12):
            for width in range(0, 12):
                environment = {"P": ranks, "logP": np.log2(ranks)}
                values = {"height": height, "width": width, "iters": 1}
                for variable in interface.variables:
                    environment[variable.name] = values.get(variable.name) if variable.name in values \
                        else evaluate(variable.value, environment)
                for name, applies in ((strips, relax.strips_apply), (blocks, relax.blocks_apply)):
                    holds = all(evaluate(r, environment) for r in implementations[name].requires)
                    assert holds == applies(height, width, ranks), (name, height, width, ranks)


def test_random_grid_is_reproducible():
    assert np.array_equal(support.random_grid(5, 7, 3), support.random_grid(5, 7, 3))
    assert support.random_grid(5, 7, 3).shape == (5, 7)
    assert support.random_grid(0, 4, 1).shape == (0, 4)


SPMD_CHECK = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import relax
from hlc.runtime import world

team = world()
shared = np.random.default_rng(17)     # the same on every rank: grids and iterations
sizes = [0, 1, 2, 3, 4, 5, 6, 7, 9, 16, 33, 64]
failures, ran = [], {"strips": 0, "blocks": 0}
for trial in range(40):
    height, width = (int(shared.choice(sizes)) for _ in range(2))
    iterations = int(shared.integers(0, 6))
    grid = shared.uniform(-1.0, 1.0, (height, width))
    expected = relax.relax_uniprocessor(grid, iterations)
    extra = {"strips": {}, "blocks": {name: int(shared.integers(0, 4)) for name in ("extra_rows", "extra_cols")}}
    for name in ("strips", "blocks"):
        if not getattr(relax, f"{name}_apply")(height, width, team.size):
            continue
        ran[name] += 1
        mine = getattr(relax, f"relax_{name}")(grid, iterations, **extra[name])
        everyone = team.allgather(mine.ravel()) if mine.shape == grid.shape else None
        scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
        if everyone is None or np.abs(everyone - expected.ravel()).max(initial=0.0) > 1e-12 * scale:
            failures.append((name, height, width, iterations))
    tolerance = float(shared.choice([0.0, 1e-6, 1e-3, 0.1]))
    expected, done = relax.converge_uniprocessor(grid, tolerance, iterations * 10)
    for name in ("strips", "blocks"):
        if getattr(relax, f"{name}_apply")(height, width, team.size):
            mine, count = getattr(relax, f"converge_{name}")(grid, tolerance, iterations * 10)
            everyone = team.allgather(np.append(mine.ravel(), count))  # every rank's grid and count
            scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
            if np.abs(everyone - np.append(expected.ravel(), done)).max(initial=0.0) > 1e-12 * scale:
                failures.append(("converge_" + name, height, width, tolerance, count, done))
if team.rank == 0:
    print("ran:", ran)
    print("failures:", failures)
"""


@pytest.mark.parametrize("ranks", [2, 3, 4])  # 3: a 1 x 3 process grid, whose edge blocks get extra columns
def test_spmd_layouts_return_the_uniprocessor_grid_on_every_rank(tmp_path, ranks):
    script = tmp_path / "spmd_stencil.py"
    script.write_text(SPMD_CHECK)
    result = subprocess.run([mpiexec(), "-n", str(ranks), sys.executable, str(script), str(STENCIL)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "failures: []" in result.stdout, result.stdout
    ran = eval(result.stdout.split("ran:")[1].splitlines()[0])  # noqa: S307 - our own output
    assert ran["strips"] > 5 and ran["blocks"] > 5, ran


# ---- the built library (a quick build: about 20 s) -------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 200), st.integers(1, 12), st.integers(0, 80))
def test_edge_parts_get_the_extra_cells(interior, parts, extra):
    cuts = relax._cuts(interior, parts, extra)
    sizes = list(np.diff(cuts))
    assert cuts[0] == 1 and cuts[-1] == interior + 1 and len(sizes) == parts
    even = relax._cuts(interior, parts)
    if interior < parts:
        return  # no layout runs there (its precondition fails)
    assert min(sizes) >= 1
    if parts < 3 or extra == 0:
        assert cuts == even
    else:
        middle = sizes[1:-1]
        assert max(middle) - min(middle) <= 1
        given_extra = min(extra, (interior - parts) // 2)
        for edge in (sizes[0], sizes[-1]):  # an even share give or take one, and the extra cells
            assert given_extra - 1 <= edge - min(middle) <= given_extra + 1


def test_extra_rows_and_columns_are_checked():
    grid = np.zeros((8, 8))
    with pytest.raises(ValueError, match="extra_rows"):
        relax.relax_blocks(grid, 1, extra_rows=-1)
    with pytest.raises(ValueError, match="extra_cols"):
        relax.relax_blocks(grid, 1, extra_cols=1.5)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The runtime library (whose BlockTransfer model stencil.hl uses), then stencil; quick builds."""
    folder = tmp_path_factory.mktemp("stencil")
    hlc.build(ROOT / "libraries" / "runtime.hl", out=folder / "runtime", quick=True)
    hlc.build(ROOT / "libraries" / "stencil.hl", out=folder / "stencil", quick=True)
    return folder


@pytest.fixture(scope="module")
def stencil(built):
    return hlc.load(built / "stencil")


@pytest.mark.filterwarnings("ignore::UserWarning")  # P = 9 lies outside the calibrated range
def test_extra_rows_are_the_root_of_communication_minus_computation(stencil, built):
    """Thesis eq. 38-40: the largest x whose extra work still fits in the missing halo swaps."""
    runtime = hlc.load(built / "runtime")
    height, width, P = 300, 240, 9  # a 3 x 3 process grid: blocks of 100 x 80

    def balance(x: int, cols: bool) -> float:
        # The marginal work is the uniprocessor model's at the caller's P, as a
        # model called in a term is evaluated: nine ranks sweep at once.
        halo = 2 * runtime.predict("BlockTransfer", bytes=8 * (height / 3 if cols else width / 3), P=2)
        more = dict(height=height / 3 + (0 if cols else x), width=width / 3 + (x if cols else 0), iters=1000)
        work = (stencil.predict("uniprocessor", **more, P=P)
                - stencil.predict("uniprocessor", height=height / 3, width=width / 3, iters=1000, P=P)) / 1000
        return halo - work

    settings_ = stencil.choose_relax_at(height=height, width=width, iters=10, P=P).settings["blocks"]
    for name, cols in (("extra_rows", False), ("extra_cols", True)):
        x = settings_[name]
        assert 0 <= x <= 64
        if 0 < x < 64:
            assert balance(x, cols) >= 0 > balance(x + 1, cols), (name, x)
        elif x == 0:
            assert balance(1, cols) < 0
    for small in (1, 2, 4):  # fewer than three rows and columns of processes: nothing to balance
        assert stencil.choose_relax_at(height=300, width=240, iters=10, P=small).settings["blocks"] == \
            {"extra_rows": 0, "extra_cols": 0}


@pytest.mark.filterwarnings("ignore::UserWarning")  # 0 iterations lie outside the calibrated range
def test_the_dispatched_relax_equals_the_uniprocessor(stencil):
    rng = np.random.default_rng(8)
    for height, width, iterations in [(0, 0, 1), (2, 9, 3), (3, 3, 2), (17, 40, 5), (200, 150, 4), (64, 64, 0)]:
        grid = rng.random((height, width))
        assert close(stencil.relax(grid, iterations), relax.relax_uniprocessor(grid, iterations))
        assert stencil.choose(grid, iterations).implementation in ("uniprocessor", "strips", "blocks")


@pytest.mark.filterwarnings("ignore::UserWarning")  # sizes outside the calibrated range
def test_the_dispatched_converge_equals_the_uniprocessor(stencil):
    rng = np.random.default_rng(9)
    for height, width, tolerance, limit in [(2, 9, 0.1, 3), (17, 40, 1e-3, 200), (120, 90, 0.0, 5), (64, 64, 1e-2, 50)]:
        grid = rng.random((height, width))
        result, done = stencil.converge(grid, tolerance, limit)
        expected, count = relax.converge_uniprocessor(grid, tolerance, limit)
        assert done == count and close(result, expected)
