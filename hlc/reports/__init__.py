"""``hlc report``: an offline HTML page of a built library — models, their fit,
where each implementation is chosen, and (when ``hlc evaluate`` ran) how
often the choice was right.  See docs/report.md."""

from hlc.reports.write import Report, write_report

__all__ = ["Report", "write_report"]
