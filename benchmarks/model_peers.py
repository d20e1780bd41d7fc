"""How do hlc's fitted models compare with two peers on the same real samples?

For each stored data set (samples and the description that fits them), hlc
fits its models (``calibrate``, as ``hlc fit`` does), and two peers are
trained on exactly the fitting samples hlc's fit used and judged on exactly
its verification samples, with hlc's own error measure (verification MRE,
the geometric mean of 1 + |t - t̂| / t):

* gradient boosting (scikit-learn's HistGradientBoostingRegressor) on log2
  of the variables and parameters, predicting log seconds: a black box that
  knows nothing of the algorithms;
* Extra-P's automatic search over performance-model normal forms
  (c + Σ x^i log2(x)^j, sums and products over the parameters): the
  established tool for fitting scaling models from measurements alone.

The peers are optional dependencies (extrap pins numpy below 2, so they get
a virtual environment of their own); a peer that is not installed is
skipped, and shown as "—":

    python3 -m venv .venv-peers && .venv-peers/bin/pip install -e '.[peers]' && .venv-peers/bin/python benchmarks/model_peers.py

A data set whose files are missing is skipped with a note.  hlc's fit, with
discovery, takes tens of seconds per data set.

    python benchmarks/model_peers.py [--sort-samples F] [--sort-description F]
        [--stencil-samples F] [--stencil-description F] [--stencil-uses NAME=MODELS ...]
"""  # noqa: E501 -- the one-line install-and-run command

from __future__ import annotations

import argparse
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hlc.artefacts.models import TimeModel
from hlc.artefacts.samples import Sample
from hlc.language import ast
from hlc.language.parse import parse_file
from hlc.model.calibration import Samples, _within, calibrate, fitted_samples, host_tolerance, used_predictors
from hlc.model.fit import mean_relative_error
from hlc.model.predict import Predictor

try:
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits
except ImportError:
    HistGradientBoostingRegressor = None

try:
    from extrap.entities.callpath import Callpath
    from extrap.entities.coordinate import Coordinate
    from extrap.entities.experiment import Experiment
    from extrap.entities.measurement import Measure, Measurement
    from extrap.entities.metric import Metric
    from extrap.entities.parameter import Parameter
    from extrap.fileio import io_helper
    from extrap.modelers.model_generator import ModelGenerator
except ImportError:
    Experiment = None

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
METHODS = ("hlc", "gradient boosting", "Extra-P")
# A peer's result for one implementation: its verification MRE, why it has
# none (a sentence), or None where the peer is not installed.
Score = float | str | None


@dataclass(frozen=True)
class DataSet:
    """Samples, the description that fits them and the models of the
    libraries it ``uses``."""

    name: str
    samples: Path
    description: Path
    uses: dict[str, Path] = field(default_factory=dict)

    def missing(self) -> list[Path]:
        """Its files that do not exist (yet): the data set is skipped."""
        return [path for path in (self.samples, self.description, *self.uses.values()) if not path.exists()]


@dataclass
class Row:
    """One implementation: the samples its model was fitted and judged on, and
    each method's verification MRE."""

    implementation: str
    ranks: list[int]
    fitting: list[Sample]
    verification: list[Sample]
    scores: dict[str, Score]


def environment(sample: Sample) -> dict[str, float]:
    """A sample's variables and parameters, as the description names them."""
    return sample.environment


def varying(samples: list[Sample], leave_out: tuple[str, ...] = ()) -> list[str]:
    """The variables and parameters that take more than one value: a constant
    one tells a peer nothing (P on a two-rank model)."""
    names = [name for name in environment(samples[0]) if name not in leave_out]
    return [name for name in names if len({environment(s)[name] for s in samples}) > 1]


def selected(predictor: Predictor, samples: Samples, interface: str, implementation: ast.Implementation,
             entry: TimeModel) -> tuple[list[Sample], list[Sample]]:
    """The fitting and verification samples hlc's fit of ``implementation``
    (``entry``) used, chosen by the fitter's own functions: within the
    preconditions, those of the points the fit leveled at its level, and
    without those taken while the host was disturbed, so that the peers
    learn from and are judged on the same samples."""
    fitting = _within(predictor, implementation, samples.of(interface, implementation.name, verify=False))
    verification = _within(predictor, implementation, samples.of(interface, implementation.name, verify=True))
    return fitted_samples(predictor, implementation, entry, fitting, verification, host_tolerance(samples))


def seconds(samples: list[Sample]) -> np.ndarray:
    """The measured times, which every method is judged against."""
    return np.array([s.seconds for s in samples], dtype=float)


def boosting_mre(fitting: list[Sample], verification: list[Sample]) -> Score:
    """Verification MRE of gradient boosting trained on the fitting samples.
    Features are log2(1 + x) of each varying variable and parameter (the +1
    keeps a 0, such as logP on one rank, finite); the target is log seconds,
    so that its squared loss is a relative error, as hlc's fit minimizes.
    Default hyperparameters and a fixed seed: nothing is tuned on the
    verification samples.  One thread: the result does not depend on the
    machine's cores."""
    if HistGradientBoostingRegressor is None:
        return None
    names = varying(fitting)
    if not names:
        return "no variable varies"

    def features(samples: list[Sample]) -> np.ndarray:
        return np.log2(1 + np.maximum([[environment(s)[name] for name in names] for s in samples], 0))

    with threadpool_limits(limits=1):
        model = HistGradientBoostingRegressor(random_state=0).fit(features(fitting), np.log(seconds(fitting)))
        predicted = np.exp(model.predict(features(verification)))
    return mean_relative_error(seconds(verification), predicted)


def extrap_mre(fitting: list[Sample], verification: list[Sample]) -> tuple[Score, list[str]]:
    """Verification MRE of the model Extra-P's default modeler finds on the
    fitting samples, and the warnings it gave.  Its parameters are the
    varying variables and parameters but logP, a function of P (its normal
    form has log2 terms of P itself).  Each coordinate becomes one
    Measurement of the seconds of every sample there, and the modeler takes
    their median: each sample's seconds is already the median of its
    timings, so the median of several is the same statistic, and robust
    against a disturbed sample as a mean is not."""
    if Experiment is None:
        return None, []
    names = varying(fitting, leave_out=("logP",))
    if not names:
        return "no variable varies", []
    experiment = Experiment()
    for name in names:
        experiment.add_parameter(Parameter(name))
    callpath, metric = Callpath("call"), Metric("time")
    experiment.add_callpath(callpath)
    experiment.add_metric(metric)
    at: dict[tuple[float, ...], list[float]] = {}
    for sample in fitting:
        at.setdefault(tuple(float(environment(sample)[name]) for name in names), []).append(sample.seconds)
    for point, values in at.items():
        coordinate = Coordinate(point)
        experiment.add_coordinate(coordinate)
        experiment.add_measurement(Measurement(coordinate, callpath, metric, values))
    experiment.call_tree = io_helper.create_call_tree(experiment.callpaths)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            io_helper.validate_experiment(experiment)
            generator = ModelGenerator(experiment, use_measure=Measure.MEDIAN)
            generator.model_all()
            function = generator.models[(callpath, metric)].hypothesis.function
            points = np.array([[float(environment(s)[name]) for name in names] for s in verification]).T
            predicted = np.asarray(function.evaluate(points), dtype=float)
        except Exception as error:  # whatever the peer fails on is reported, not raised
            return f"Extra-P found no model ({type(error).__name__}: {error})", []
    notes = sorted({str(w.message) for w in caught})
    if not np.all(np.isfinite(predicted)):
        return "Extra-P's model predicts no finite time at some verification points", notes
    return mean_relative_error(seconds(verification), predicted), notes


def compare(data: DataSet) -> tuple[list[Row], list[str]]:
    """Fit the data set with hlc, then each implementation with the peers:
    the rows, and notes on what could not be compared."""
    library = parse_file(data.description)
    samples = Samples.load(data.samples)
    if samples.header.library != library.name:
        return [], [f"{data.name}: skipped, {data.samples} holds samples of library "
                    f"'{samples.header.library}', not of '{library.name}'"]
    models = calibrate(library, samples, models_of=data.uses)
    # The fitted models, for _within's constants and for the terms that call
    # another model (the radix sort over the ranks calls the one-rank one),
    # which the fitter values with the callee's fit when it sorts out the
    # samples a slow host disturbed.
    predictor = Predictor(library, models.times(), used_predictors(library, data.uses))
    rows, notes = [], []
    for interface in library.interfaces:
        for implementation in interface.implementations:
            entry = models.time(implementation.name)
            if entry.status != "fitted":
                notes.append(f"{implementation.name}: not compared, hlc's model is {entry.status}"
                             + (f": {entry.cause}" if entry.cause else ""))
                continue
            fitting, verification = selected(predictor, samples, interface.name, implementation, entry)
            if (len(fitting), len(verification)) != (entry.samples, entry.verification_samples):
                notes.append(f"{implementation.name}: the peers' samples ({len(fitting)}, {len(verification)}) "
                             f"differ from hlc's ({entry.samples}, {entry.verification_samples})")
            if not verification:
                notes.append(f"{implementation.name}: not compared, no verification samples")
                continue
            extrap, extrap_notes = extrap_mre(fitting, verification)
            notes += [f"{implementation.name}: Extra-P warned: {note}" for note in extrap_notes]
            scores = {"hlc": entry.verification_mre, "gradient boosting": boosting_mre(fitting, verification),
                      "Extra-P": extrap}
            notes += [f"{implementation.name}: {method} has no model: {why}"
                      for method, why in scores.items() if isinstance(why, str)]
            ranks = sorted({s.P for s in fitting + verification})
            rows.append(Row(implementation.name, ranks, fitting, verification, scores))
    return rows, notes


def cell(score: Score, best: bool) -> str:
    """A method's verification MRE in the table: "—" where the peer is not
    installed, "no model" where it found none (the notes say why)."""
    if score is None:
        return "—"
    if isinstance(score, str):
        return "no model"
    return f"{score:.3f}" + ("*" if best else "")


def table(rows: list[Row]) -> str:
    """One line per implementation; * marks the least verification MRE where
    there are two or more to compare."""
    lines = [f"{'implementation':<16} {'ranks':>5} {'fitting':>7} {'verif.':>6} "
             + " ".join(f"{method:>18}" for method in METHODS)]
    for row in rows:
        numbers = [round(s, 3) for s in row.scores.values() if isinstance(s, float)]
        least = min(numbers) if len(numbers) > 1 else None
        cells = [cell(s, isinstance(s, float) and round(s, 3) == least) for s in row.scores.values()]
        lines.append(f"{row.implementation:<16} {','.join(map(str, row.ranks)):>5} {len(row.fitting):>7} "
                     f"{len(row.verification):>6} " + " ".join(f"{c:>18}" for c in cells))
    return "\n".join(lines)


def worst_line(rows: list[Row]) -> tuple[str, list[str]]:
    """The largest verification MRE of each method over the one-rank models,
    and a note for each method that has no model for some of them."""
    one_rank = [row for row in rows if row.ranks == [1]]
    parts, notes = [], []
    for method in METHODS:
        numbers = [row.scores[method] for row in one_rank if isinstance(row.scores[method], float)]
        unmodelled = [row.implementation for row in one_rank if isinstance(row.scores[method], str)]
        if unmodelled:
            notes.append(f"{method} has no model of {', '.join(unmodelled)}: the worst is over the others")
        parts.append(f"{method} {max(numbers):.3f}" if numbers else f"{method} —")
    return "worst verification MRE over one-rank models: " + ", ".join(parts), notes


def uses(values: list[str] | None) -> dict[str, Path] | None:
    """``NAME=MODELS`` options as calibrate's models_of."""
    if values is None:
        return None
    pairs = {}
    for value in values:
        name, separator, path = value.partition("=")
        if not separator:
            raise SystemExit(f"--stencil-uses takes NAME=MODELS, not '{value}'")
        pairs[name] = Path(path)
    return pairs


def data_sets(args: argparse.Namespace) -> list[DataSet]:
    """The data sets the options name: sort, then stencil."""
    stencil_uses = uses(args.stencil_uses)
    if stencil_uses is None:
        stencil_uses = {"runtime": DATA / "stencil" / "runtime_models.json"}
    return [DataSet("sort", Path(args.sort_samples), Path(args.sort_description)),
            DataSet("stencil", Path(args.stencil_samples), Path(args.stencil_description), stencil_uses)]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--sort-samples", default=str(DATA / "sort" / "samples.jsonl"))
    options.add_argument("--sort-description", default=str(ROOT / "libraries" / "sort.hl"))
    options.add_argument("--stencil-samples", default=str(DATA / "stencil" / "samples.jsonl"))
    options.add_argument("--stencil-description", default=str(ROOT / "libraries" / "stencil.hl"))
    options.add_argument("--stencil-uses", action="append", metavar="NAME=MODELS",
                         help="models of a library the stencil description uses "
                              "(default: runtime=tests/data/stencil/runtime_models.json)")
    args = options.parse_args()
    if HistGradientBoostingRegressor is None:
        print("gradient boosting skipped: scikit-learn is not installed (pip install -e '.[peers]')")
    if Experiment is None:
        print("Extra-P skipped: extrap is not installed (pip install -e '.[peers]')")
    everything: list[Row] = []
    for data in data_sets(args):
        missing = data.missing()
        if missing:
            print(f"{data.name}: skipped, {', '.join(map(str, missing))} missing")
            continue
        rows, notes = compare(data)
        if rows:
            print(f"\n{data.name}: {data.description} on {data.samples}")
            print(table(rows))
        for note in notes:
            print(f"  {note}" if rows else note)
        everything += rows
    print("\n* the least verification MRE of the row (geometric mean of 1 + |t - t̂| / t)")
    line, notes = worst_line(everything)
    for note in notes:
        print(note)
    print(line)


if __name__ == "__main__":
    main()
