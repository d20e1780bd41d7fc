"""``hlc evaluate``: a built library's choices measured against an oracle, and replayed.

* :mod:`~hlc.evaluation.oracle`: the measuring, inside the build's
  profiling program: every alternative timed side by side at held-out points;
* :mod:`~hlc.evaluation.measure`: run the build's profiling program in its
  evaluation mode and write ``evaluation.json`` (:func:`evaluate`);
* :mod:`~hlc.evaluation.verdicts`: each point judged against the fastest
  measured alternative, and the figures over the judged points;
* :mod:`~hlc.evaluation.replay`: other models judged against a stored
  evaluation's timings, nothing timed;
* :mod:`~hlc.evaluation.text`: the figures in words;
* :mod:`~hlc.evaluation.inputs`: what an evaluation reads of a build.

The names below are imported on first use: the profiling program imports
the oracle's module from this package, and should not pay for the parser, the
fitter's predictions and the profile runner it never calls.  No module of
this package is named like a function it exports, so that ``from
hlc.evaluation import judge`` gives the function whichever submodules are
loaded.
"""

__all__ = ["TOLERANCE", "Evaluation", "Replay", "evaluate", "format_summary", "geometric_mean", "judge", "label",
           "oracle_verdict", "ratio", "ratio_of", "rejudge", "summarize", "summary_rows", "turns_on_the_input"]

_LAZY = {
    "evaluate": "hlc.evaluation.measure", "Evaluation": "hlc.evaluation.measure",
    "TOLERANCE": "hlc.evaluation.oracle", "judge": "hlc.evaluation.verdicts",
    "oracle_verdict": "hlc.evaluation.verdicts", "summarize": "hlc.evaluation.verdicts",
    "geometric_mean": "hlc.evaluation.verdicts", "ratio_of": "hlc.evaluation.verdicts",
    "turns_on_the_input": "hlc.evaluation.verdicts",
    "label": "hlc.evaluation.oracle", "ratio": "hlc.evaluation.oracle",
    "summary_rows": "hlc.evaluation.text", "format_summary": "hlc.evaluation.text",
    "Replay": "hlc.evaluation.replay", "rejudge": "hlc.evaluation.replay",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hlc.evaluation' has no attribute '{name}'")
