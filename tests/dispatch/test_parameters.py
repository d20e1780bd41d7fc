"""Several parameters of one implementation are set together (hlc.dispatch.reference)."""

from __future__ import annotations

import itertools
import shutil

import pytest

from hlc.artefacts.models import TimeModel
from hlc.dispatch.reference import Decider
from hlc.language.parse import parse
from hlc.model.predict import Predictor
from hlc.optimize import SWEEPS

TILES = """
library tiles "Two tile sides whose best values depend on each other."

from numpy import ones

interface work(data: float64[]) -> float64[] "Some work."
    n = len(data)

    impl tiled(tall: int in 1 .. 40, wide: int in 1 .. 40) = numpy.sort "in tiles"
        time ~ 1 + n + tall * tall + wide * wide + tall * wide + tall

    profile
        for i in 1 .. 4 ++
        for tall in 1 .. 40 += 13
        for wide in 1 .. 40 += 13
        data = ones(i)
"""

#: (tall - 20)² + (wide - tall / 2)², in nanoseconds, plus a microsecond: least at 20 by 10.
COEFFICIENTS = {"1": 1.4e-6, "n": 1e-9, "tall * tall": 1.25e-9, "wide * wide": 1e-9, "tall * wide": -1e-9,
                "tall": -40e-9}


def decider() -> tuple[Decider, object]:
    library = parse(TILES)
    terms = tuple(COEFFICIENTS)
    model = TimeModel("fitted", terms=terms, kept=terms, coefficients=dict(COEFFICIENTS))
    return Decider(library, Predictor(library, {"tiled": model})), library.interfaces[0].implementations[0]


def test_parameters_that_depend_on_each_other_are_set_again_until_none_changes():
    """The first pass sets the height with the width at 1 (16), then the
    width for that height (8); the passes after it reach the least cost of
    the whole square of values, where one pass stopped 20% short."""
    chosen_by, implementation = decider()
    variables = {"n": 100, "P": 1, "logP": 0.0}
    chosen = chosen_by.parameters(implementation, variables)

    def cost(tall: int, wide: int) -> float:
        return chosen_by.model(implementation, {**variables, "tall": tall, "wide": wide})

    least = min(itertools.product(range(1, 41), repeat=2), key=lambda sides: cost(*sides))
    assert least == (20, 10) and (chosen["tall"], chosen["wide"]) == least
    assert cost(16, 8) > 1.003 * cost(20, 10)  # where the first pass alone stopped


def test_one_pass_is_where_the_first_pass_alone_stops(monkeypatch):
    """With SWEEPS at 1 the decision is the first pass's (what the later
    passes change, and no more)."""
    from hlc.dispatch import reference

    assert SWEEPS >= 4
    monkeypatch.setattr(reference, "SWEEPS", 1)
    chosen_by, implementation = decider()
    assert chosen_by.parameters(implementation, {"n": 100, "P": 1, "logP": 0.0}) == {"tall": 16, "wide": 8}


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_the_compiled_module_passes_over_the_parameters_as_the_reference_does(tmp_path):
    """The C makes the same passes, and reaches the same sides (20 by 10,
    where the first pass alone stops at 16 by 8)."""
    import hlc
    from hlc.artefacts.models import ImplementationModel, Models
    from hlc.dispatch.build import package
    from hlc.dispatch.loading import load

    chosen_by, implementation = decider()
    library = chosen_by.library
    models = Models(library.name, library.filename,
                    {"tiled": ImplementationModel("work", chosen_by.predictor.calibration["tiled"])})
    assert package(library, models, {}, tmp_path)[1]
    with pytest.warns(hlc.StaleModelWarning):  # the models have no fingerprint
        module = load(tmp_path)
    for n in (1, 100, 10_000, 1_000_000):
        variables = {"n": n, "P": 1, "logP": 0.0}
        assert module.choose_work_at(n=n).parameters == chosen_by.parameters(implementation, variables) \
            == {"tall": 20, "wide": 10}


def test_a_search_weighs_the_time_its_decision_plans_for(tmp_path):
    """A model whose samples scatter more at tall tiles (a typical
    deviation on ``tall * tall``): its searches plan for that scatter, as
    the choice between implementations does, and take lower tiles than the
    prediction alone; in Python and in the compiled module alike."""
    import hlc
    from hlc.artefacts.models import ImplementationModel, Models
    from hlc.dispatch.build import package
    from hlc.dispatch.loading import load

    chosen_by, implementation = decider()
    variables = {"n": 100, "P": 1, "logP": 0.0}
    steady = chosen_by.parameters(implementation, variables)
    model = chosen_by.predictor.calibration["tiled"]
    scattered = TimeModel("fitted", terms=model.terms, kept=model.kept, coefficients=dict(model.coefficients),
                          deviations={"tall * tall": 0.5e-9}, risk=2.0)
    library = chosen_by.library
    planning = Decider(library, Predictor(library, {"tiled": scattered}))
    chosen = planning.parameters(implementation, variables)
    # (1.25 + 1)·tall² - 40·tall - tall·wide + wide², in nanoseconds: least at 10 by 5
    assert steady == {"tall": 20, "wide": 10} and chosen == {"tall": 10, "wide": 5}
    assert planning.decide(library.interfaces[0], variables).parameters == chosen
    if shutil.which("cc") is None:
        return
    models = Models(library.name, library.filename, {"tiled": ImplementationModel("work", scattered)})
    assert package(library, models, {}, tmp_path)[1]
    with pytest.warns(hlc.StaleModelWarning):  # the models have no fingerprint
        module = load(tmp_path)
    assert module.choose_work_at(n=100).parameters == chosen
