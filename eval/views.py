"""Writing a report view: how the report shows a benchmark (``Benchmark.report``, a
``benchsmith.eval.ReportView`` subclass) from its scores.json. The report names no benchmark; it
asks the views.

Reading a scores.json shape safely (a missing key is None, never an error): :func:`get`,
:func:`num`, :func:`put`, :func:`counts`, :func:`flatten`, :func:`read_reliability` (the pass^k /
pass@k block); :func:`record_categories` (per-category figures from records.jsonl); :func:`pct`
(how every table prints a fraction).

>>> from benchsmith.eval.views import get, pct
>>> pct(get({"a": {"b": 0.5088}}, "a", "b"))
'50.9%'
"""

from benchsmith.eval._private.reportview import (
    counts,
    flatten,
    get,
    num,
    pct,
    put,
    read_reliability,
    record_categories,
)

__all__ = ["counts", "flatten", "get", "num", "pct", "put", "read_reliability", "record_categories"]
