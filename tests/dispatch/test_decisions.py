"""The compiled module decides exactly as the Python reference (hlc.dispatch.reference)."""

from __future__ import annotations

import math
import random
import shutil
from pathlib import Path

import pytest

import hlc
from hlc.dispatch.build import load, package
from hlc.dispatch.reference import Decider
from hlc.language.expressions import unparse
from hlc.language.families import family_knots
from hlc.language.nest import constant_values
from hlc.model.predict import Predictor
from hlc.model.terms import model_terms

DESCRIPTIONS = Path(__file__).resolve().parents[1] / "descriptions"
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def synthetic_models(library: hlc.Library, rng: random.Random) -> dict:
    """A models artefact with random positive coefficients on most terms."""
    implementations = {}
    constants = constant_values(library)
    for interface in library.interfaces:
        for implementation in interface.implementations:
            model = implementation.model("time")
            if not model.fitted:
                entry = {"status": "factored"}
            else:
                # a member of each family, as the fitter would add it
                discovered = [{"base": unparse(f.base) if f.base is not None else "1",
                               "factors": [{"kind": "hinge" if f.family.kind == "hinges" else "step",
                                            "variable": unparse(f.family.expression), "log": False,
                                            "knot": rng.choice(family_knots(f.family, constants) or [4, 9])}]}
                              for f in model.families]
                entry = {"status": "fitted", "discovered": discovered}
                terms = ["1"] + [unparse(t) for t in model_terms(model, entry)]
                kept = [t for t in terms if rng.random() < 0.85] or ["1"]
                entry.update(terms=terms, kept=kept, coefficients={t: rng.uniform(1e-9, 1e-6) for t in kept})
            implementations[implementation.name] = {"interface": interface.name, "time": entry}
    return {"library": library.name, "description": library.filename, "fingerprint": {},
            "implementations": implementations}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    library = hlc.parse_file(DESCRIPTIONS / "decisions.hl")
    rng = random.Random(20261121)
    models = synthetic_models(library, rng)
    used = {"comm": synthetic_models(library.used["comm"], rng)}
    assert all(models["implementations"][name]["time"]["discovered"] for name in ("plain", "digits"))
    folder = tmp_path_factory.mktemp("decisions")
    assert package(library, models, used, folder)
    with pytest.warns(hlc.StaleModelWarning):  # the synthetic models have no fingerprint
        module = load(folder)
    predictor = Predictor(library, models["implementations"],
                          {"comm": Predictor(library.used["comm"], used["comm"]["implementations"])})
    return library, module, Decider(library, predictor)


def random_variables(rng: random.Random) -> dict:
    ranks = rng.choice([1, 1, 2, 4, 8])
    return {"n": int(10 ** rng.uniform(0, 7)) if rng.random() < 0.97 else 0, "width": rng.randint(0, 64),
            "P": ranks, "logP": math.log2(ranks)}


def test_compiled_and_python_decisions_agree_on_10000_random_calls(compiled):
    library, module, decider = compiled
    interface = library.interface("work")
    rng = random.Random(7)
    chosen = set()
    for _ in range(10_000):
        variables = random_variables(rng)
        expected = decider.decide(interface, variables)
        actual = module.choose_work_at(**variables)
        assert (actual.implementation, actual.parameters) == (expected.implementation, expected.parameters), \
            (variables, actual, expected)
        for name, seconds in expected.predicted.items():
            assert actual.predicted[name] == pytest.approx(seconds, rel=1e-12), (variables, name)
        chosen.add(actual.implementation)
    assert len(chosen) >= 3  # the random models make several implementations win somewhere


def test_every_kind_of_parameter_search_is_exercised(compiled):
    library, module, decider = compiled
    interface = library.interface("work")
    rng = random.Random(11)
    seen: dict[str, set] = {}
    for _ in range(2000):
        variables = random_variables(rng)
        for name in ("digits", "blocks", "tiles"):
            implementation = interface.implementation(name)
            if decider.applies(implementation, variables):
                seen.setdefault(name, set()).add(tuple(decider.parameters(implementation, variables).items()))
    assert all(len(values) > 3 for values in seen.values()), seen
