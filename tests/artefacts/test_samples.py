"""The samples file as typed records: stored files read and written back unchanged, damage named."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hlc.artefacts import ArtefactError
from hlc.artefacts import samples as artefact
from hlc.artefacts.samples import (
    Account,
    Decision,
    Evaluated,
    Failure,
    Header,
    Point,
    Sample,
    Samples,
    Survey,
    append,
    line,
    records,
)

DATA = Path(__file__).resolve().parents[1] / "data"
STORED = [DATA / "sort" / "samples.jsonl", DATA / "stencil" / "samples.jsonl",
          DATA / "stencil" / "runtime_samples.jsonl"]

HEADER = {"kind": "header", "format": 1, "library": "sort", "description": "libraries/sort.hl", "seed": 0, "P": 1,
          "started": 1795620804.3, "clock": {"resolution": 3.8e-08, "overhead": 4.15e-08}, "python": "3.11.7",
          "host": "vm", "host_tolerance": 0.1}
SAMPLE = {"kind": "sample", "interface": "sort", "implementation": "radix", "verify": False, "P": 1, "index": 84,
          "seed": 1108594927, "point": {"q": 232, "w": 20}, "parameters": {"bpd": 2},
          "variables": {"n": 23170, "width": 23, "P": 1, "logP": 0.0}, "seconds": 0.0005008798331497625,
          "timings": [0.0005495381665241439, 0.0004961701664190817, 0.0005008798331497625], "repeat": 3,
          "spread": 0.1065, "noisy": False, "host": 1.098}
POINT = {"kind": "point", "interface": "sort", "P": 1, "verify": False, "index": 84}


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(lines), encoding="utf-8")
    return path


def compact(record: dict) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stored_samples_files_read_and_write_back_unchanged(path):
    """Every line of the stored files, typed and written again, is the line it
    was: the same keys in the same order, the same values, the same text."""
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    typed = list(records(path))
    assert len(typed) == len(text)
    for original, record in zip(text, typed, strict=True):
        assert record.as_record() == json.loads(original)
        assert line(record) == original
    found = Samples.load(path)
    assert found.header.library in ("sort", "stencil", "runtime") and found.header.format == artefact.FORMAT
    assert len(found.samples) + len(found.points) + len(found.headers) + len(found.failures) \
        + len(found.surveys) + len(found.accounts) == len(text)


def test_every_kind_round_trips(tmp_path):
    survey = {"kind": "survey", "interface": "sort", "P": 1, "index": 7, "refined": True, "point": {"q": 3},
              "variables": {"n": 8, "P": 1, "logP": 0.0}, "bytes": 64, "settings": {"radix": [{"bpd": 2}]},
              "choices": {"radix": [{"bpd": 2}, {"bpd": 3}]}}
    failure = {"kind": "failure", "interface": "sort", "implementation": "bad", "cause": "raised ValueError: no",
               "point": {"q": 3}, "P": 2}
    account = {"kind": "breakdown", "P": 1, "wall": 3.5, "restarts": 0, "seconds": {"measuring": 1.25}}
    evaluation = {"kind": "evaluation", "interface": "sort", "P": 1, "index": 0, "seed": 5, "point": {"q": 3},
                  "variables": {"n": 8}, "chosen": {"implementation": "radix", "parameters": {"bpd": 2},
                                                    "predicted": 1e-6},
                  "candidates": [{"label": "radix bpd=2", "implementation": "radix", "parameters": {"bpd": 2},
                                  "seconds": 1.1e-6, "rounds": [[1, 1.1e-6], [2, 1.2e-6]], "noisy": False}],
                  "host": 1.01}
    nothing_applies = {"kind": "evaluation", "interface": "sort", "P": 1, "index": 1, "seed": 6, "point": {"q": 0},
                       "variables": {"n": 0}, "chosen": None, "candidates": []}
    evaluate_header = {**HEADER, "evaluate": "/b/sort/__init__.py", "points": 200, "params": "chosen"}
    given = [evaluate_header, SAMPLE, POINT, survey, {**survey, "refined": False}, failure, account, evaluation,
             nothing_applies]
    path = write(tmp_path / "all.jsonl", *map(compact, given))
    typed = list(records(path))
    assert [type(r) for r in typed] == [Header, Sample, Point, Survey, Survey, Failure, Account, Evaluated, Evaluated]
    written = [r.as_record() for r in typed]
    assert written[:4] + written[5:] == given[:4] + given[5:]
    assert "refined" not in written[4]  # only a refined point says so
    assert typed[7].chosen == Decision("radix", {"bpd": 2}, 1e-6) and typed[7].candidates[0].rounds[1] == (2, 1.2e-6)
    found = Samples.read(path)
    assert found.header.evaluate == "/b/sort/__init__.py" and len(found.evaluations) == 2
    assert found.of("sort", "radix", verify=False) == [typed[1]]
    assert typed[1].environment == {"n": 23170, "width": 23, "P": 1, "logP": 0.0, "bpd": 2}


def test_a_sample_without_the_timing_details_stays_without_them():
    """The fields after ``seconds`` are optional: what a file did not hold is not written back."""
    bare = {key: SAMPLE[key] for key in ("kind", "interface", "implementation", "verify", "P", "index",
                                         "parameters", "variables", "seconds")}
    sample = Sample.from_record(bare)
    assert sample.host is None and sample.timings is None and sample.as_record() == bare


def test_a_torn_last_line_is_skipped_and_cut_before_appending(tmp_path):
    """A program killed while writing leaves part of a line: readers skip it,
    and the next write starts on a line of its own."""
    torn = compact(POINT)[:25]
    path = write(tmp_path / "samples.jsonl", compact(HEADER), compact(SAMPLE), torn)
    found = Samples.load(path)
    assert len(found.samples) == 1 and not found.points
    append(path, [Failure("sort", "radix", "crashed with SIGSEGV", 1, {"q": 232})])
    assert path.read_text(encoding="utf-8").splitlines()[-1].startswith('{"kind":"failure"')
    assert [f.cause for f in Samples.load(path).failures] == ["crashed with SIGSEGV"]


def test_a_damaged_line_names_the_file_and_the_line(tmp_path):
    path = write(tmp_path / "samples.jsonl", compact(HEADER), compact(SAMPLE), '{"kind":"point","interf\n',
                 compact(POINT))
    with pytest.raises(ArtefactError, match=rf"{re.escape(str(path))}:3: damaged line, not JSON"):
        Samples.load(path)


def test_a_record_missing_a_field_names_the_line_and_the_field(tmp_path):
    damaged = {key: value for key, value in SAMPLE.items() if key != "seconds"}
    path = write(tmp_path / "samples.jsonl", compact(HEADER), compact(damaged))
    with pytest.raises(ArtefactError, match=rf"{re.escape(str(path))}:2: damaged samples file \(missing 'seconds'\)"):
        Samples.read(path)


def test_a_line_of_an_unknown_kind_is_damage(tmp_path):
    path = write(tmp_path / "samples.jsonl", compact(HEADER), compact({"kind": "lunch"}))
    with pytest.raises(ArtefactError, match=rf"{re.escape(str(path))}:2: .*no record of kind 'lunch'"):
        Samples.read(path)


def test_a_file_without_a_header_is_not_a_samples_file(tmp_path):
    path = write(tmp_path / "samples.jsonl", compact(SAMPLE), compact(POINT))
    with pytest.raises(ArtefactError, match=rf"{re.escape(str(path))}: not a samples file of hlc \(it has no header"):
        Samples.load(path)
    assert len(Samples.read(path).samples) == 1  # what a starting program reads is what is there
    with pytest.raises(ArtefactError, match="no header line"):
        Samples.read(path).header  # noqa: B018


def test_a_newer_format_says_to_upgrade(tmp_path):
    path = write(tmp_path / "samples.jsonl", compact(HEADER), compact(SAMPLE), compact({**HEADER, "format": 99}))
    with pytest.raises(ArtefactError, match=rf"{re.escape(str(path))}:3: samples format 99 .* upgrade hlc"):
        Samples.read(path)


def test_a_missing_file_is_empty_to_read_and_an_error_to_load(tmp_path):
    path = tmp_path / "none.jsonl"
    assert Samples.read(path) == Samples(path=path)
    with pytest.raises(ArtefactError, match="no such file"):
        Samples.load(path)


def test_records_given_as_dicts_are_typed_and_checked():
    found = Samples.of_records([HEADER, SAMPLE, POINT])
    assert found.header == Header.from_record(HEADER) and found.points == (Point.from_record(POINT),)
    with pytest.raises(ArtefactError, match="samples format 2"):
        Samples.of_records([{**HEADER, "format": 2}])
