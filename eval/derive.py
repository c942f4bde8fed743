"""Writing a deriver: benchmark cases derived from an NL2API split's verified gold chains
(``benchsmith eval derive``; ``docs/eval/derive.md``). A deriver is ``derive(split_dir, out_dir,
seed=0) -> report``, named by its benchmark (``Benchmark.derivers``); it streams the split and
writes through temporary files swapped in at the end, so memory does not grow with the split.

* reading the split: :class:`SplitSamples` (one sample at a time), :func:`load_split`
* writing: :class:`Outputs` (files swapped in together), :class:`Spool` (lines kept on disk until
  the end), :func:`derive_report` (``derive_report.json``, :data:`REPORT`), :func:`note_skip`
* choosing: :func:`seeded_rng` (randomness from the seed, the sample and a purpose),
  :func:`chain_tools`, :func:`candidate_tools` (gold tools plus seeded distractors), :func:`tool_entry`
* :data:`DERIVED_BENCHMARK` (derived set -> benchmark that scores it), :class:`BenchmarkView` (a
  name table read off the registered benchmarks)

>>> from benchsmith.eval.derive import seeded_rng
>>> seeded_rng(0, "s1", "distractors").random() == seeded_rng(0, "s1", "distractors").random()
True
"""

from benchsmith.eval._private.derive import (
    DERIVED_BENCHMARK,
    REPORT,
    BenchmarkView,
    Outputs,
    SplitSamples,
    Spool,
    candidate_tools,
    chain_tools,
    derive_report,
    load_split,
    note_skip,
    seeded_rng,
    tool_entry,
)

__all__ = [
    "DERIVED_BENCHMARK",
    "REPORT",
    "BenchmarkView",
    "Outputs",
    "SplitSamples",
    "Spool",
    "candidate_tools",
    "chain_tools",
    "derive_report",
    "load_split",
    "note_skip",
    "seeded_rng",
    "tool_entry",
]
