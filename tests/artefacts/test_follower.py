"""A samples file read as it grows gives what a whole read gives, at every step."""

from __future__ import annotations

import pytest

from hlc.artefacts.files import ArtefactError
from hlc.artefacts.samples import Follower, Header, Sample, Samples, append, lines


def sample(index: int, seconds: float = 1e-3) -> Sample:
    return Sample(interface="f", implementation="a", verify=False, P=1, index=index, parameters={},
                  variables={"n": float(index)}, seconds=seconds, point={"i": index}, timings=(seconds,) * 3,
                  repeat=1)


def header() -> Header:
    return Header(library="lib", description="lib.hl", seed=0, P=1, started=0.0,
                  clock={"resolution": 1e-9, "overhead": 0.0}, python="3", host="h", host_tolerance=0.1)


def test_it_reads_what_is_appended_between_reads(tmp_path):
    path = tmp_path / "samples.jsonl"
    follower = Follower(path)
    assert follower.read() == Samples.of_records([], path)  # no file yet
    append(path, [header(), sample(0)])
    assert follower.read() == Samples.read(path)
    for index in range(1, 4):
        append(path, [sample(index)])
        assert follower.read() == Samples.read(path)
    assert [s.index for s in follower.read().samples] == [0, 1, 2, 3]


def test_a_torn_last_line_waits_for_its_end(tmp_path):
    path = tmp_path / "samples.jsonl"
    append(path, [header(), sample(0)])
    whole = lines([sample(1)])
    with path.open("a", encoding="utf-8") as stream:
        stream.write(whole[:20])  # a write cut short
    follower = Follower(path)
    assert [s.index for s in follower.read().samples] == [0]
    append(path, [sample(2)])  # cuts the torn line first, as a restarted program does
    assert [s.index for s in follower.read().samples] == [0, 2] == [s.index for s in Samples.read(path).samples]


def test_a_replaced_or_shortened_file_is_read_again(tmp_path):
    path = tmp_path / "samples.jsonl"
    append(path, [header(), sample(0), sample(1)])
    follower = Follower(path)
    assert len(follower.read().samples) == 2
    replacement = tmp_path / "other.jsonl"
    append(replacement, [header(), sample(5)])
    replacement.replace(path)
    assert [s.index for s in follower.read().samples] == [5]
    path.write_text(lines([header()]), encoding="utf-8")  # same file, shorter
    assert follower.read().samples == ()


def test_a_damaged_line_is_named_by_its_number(tmp_path):
    path = tmp_path / "samples.jsonl"
    append(path, [header(), sample(0)])
    follower = Follower(path)
    follower.read()
    with path.open("a", encoding="utf-8") as stream:
        stream.write(lines([sample(1)]) + "{not json\n")
    with pytest.raises(ArtefactError, match=r"samples.jsonl:4: damaged line"):
        follower.read()
