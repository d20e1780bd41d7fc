"""The models artefact: typed, versioned, and refused clearly when it is not one."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from hlc.artefacts.files import ArtefactError
from hlc.artefacts.models import (
    FORMAT,
    Discovered,
    Factor,
    ImplementationModel,
    Models,
    TimeModel,
    load,
    load_used,
    save_used,
)

DATA = Path(__file__).resolve().parents[1] / "data"
STORED = DATA / "stencil" / "runtime_models.json"


def test_a_stored_models_file_loads_typed_and_writes_back_the_same_json(tmp_path):
    models = load(STORED)
    assert models.library == "runtime" and models.settings.confidence == 0.95
    transfer = models.time("BlockTransfer")
    assert transfer.status == "fitted" and transfer.usable and transfer.has_band
    assert all(isinstance(term, Discovered) for term in transfer.discovered)
    assert transfer.terms[-len(transfer.discovered):] == tuple(term.text for term in transfer.discovered)
    assert models.fingerprint.get("cores") and models.fingerprint.sources
    models.save(tmp_path / "models.json")
    assert json.loads((tmp_path / "models.json").read_text()) == json.loads(STORED.read_text())
    assert load(tmp_path / "models.json") == models


def test_each_status_records_only_what_it_has():
    excluded = TimeModel("excluded", cause="timed out", ranks=2, point={"q": 3})
    assert excluded.to_json() == {"status": "excluded", "cause": "timed out", "P": 2, "point": {"q": 3}}
    assert TimeModel("unfitted", cause="no samples").to_json() == {"status": "unfitted", "cause": "no samples"}
    assert not excluded.usable and TimeModel("factored").usable
    for entry in (excluded, TimeModel("factored", samples=3, verification_mre=1.1)):
        assert TimeModel.from_json(entry.to_json()) == entry


def test_a_discovered_term_reads_as_the_description_language():
    term = Discovered("n * iter", (Factor("step", "digit", 9.0, False), Factor("hinge", "n", 18.25, True)))
    assert term.text == "n * iter * (digit >= 9) * max(0, log2(n) - 18.25)"
    assert Discovered("a + b", (Factor("step", "w", 3.0, False),)).text == "(a + b) * (w >= 3)"
    assert Discovered.from_json(term.to_json()) == term
    with pytest.raises(ValueError, match="a step, a hinge or a tent"):
        Factor.from_json({"kind": "ramp", "variable": "n", "knot": 1, "log": False})


def test_a_discovered_term_sent_to_another_process_hashes_as_that_process_s_own():
    """A term keeps its hash, computed once; a string's hash differs from
    one process to the next (PYTHONHASHSEED), so a term pickled to a fit's
    worker must hash there as one made there, or the worker's caches miss
    it and its searches go otherwise."""
    term = Discovered("n * iter", (Factor("step", "digit", 9.0, False), Factor("hinge", "n", 18.25, True)))
    assert hash(term) == hash(Discovered(term.base, term.factors)) and {term: 1}[Discovered.from_json(term.to_json())]
    program = ("import pickle, sys\n"
               "from hlc.artefacts.models import Discovered\n"
               "term = pickle.loads(sys.stdin.buffer.read())\n"
               "print(hash(term) == hash(Discovered(term.base, term.factors)))")
    for seed in ("1", "2"):
        shown = subprocess.run([sys.executable, "-c", program], input=pickle.dumps(term), capture_output=True,
                               env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
        assert shown.stdout.decode().strip() == "True"


def test_a_damaged_models_file_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "models.json"
    path.write_text(STORED.read_text()[:5000])  # cut short, as by a full disk
    with pytest.raises(ArtefactError, match=rf"{path}:\d+:\d+: damaged, not JSON"):
        load(path)
    path.write_text("[1, 2]")
    with pytest.raises(ArtefactError, match=f"{path}: not a models file of hlc"):
        load(path)
    document = json.loads(STORED.read_text())
    del document["implementations"]["Barrier"]["time"]["status"]
    path.write_text(json.dumps(document))
    with pytest.raises(ArtefactError, match=f"{path}: damaged models file .*no status"):
        load(path)
    with pytest.raises(ArtefactError, match="no such file"):
        load(tmp_path / "missing.json")


def test_a_models_file_of_another_version_says_what_to_do(tmp_path):
    document = json.loads(STORED.read_text())
    path = tmp_path / "models.json"
    for version, hint in ((FORMAT + 1, "written by a newer hlc; upgrade hlc"), (0, "build the library again")):
        document["format"] = version
        path.write_text(json.dumps(document))
        with pytest.raises(ArtefactError, match=f"{path}: models format {version} is not one .*{hint}"):
            load(path)


def test_another_artefact_is_not_taken_for_models(tmp_path):
    evaluation = DATA / "sort" / "evaluation-2.json"
    with pytest.raises(ArtefactError, match="not a models file of hlc"):
        load(evaluation)
    samples = DATA / "stencil" / "runtime_samples.jsonl"
    with pytest.raises(ArtefactError, match=f"{samples}"):
        load(samples)


def test_the_models_of_used_libraries_round_trip_and_are_checked(tmp_path):
    used = {"runtime": load(STORED)}
    path = tmp_path / "used_models.json"
    save_used(path, used)
    assert load_used(path) == used
    assert load_used(tmp_path / "none.json") == {}
    path.write_text(json.dumps({"runtime": {"format": 7}}))
    with pytest.raises(ArtefactError, match=r"used_models.json \(runtime\): models format 7"):
        load_used(path)


def test_a_models_value_without_a_file_behaves_as_one():
    models = Models("lib", "lib.hl", {"a": ImplementationModel("f", TimeModel("unfitted", cause="no samples"))})
    assert models.time("b").status == "not calibrated" and not models.time("b").usable
    assert Models.from_json(models.to_json()) == models
