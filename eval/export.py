"""Writing an exporter: a benchsmith split in a benchmark's own layout (``benchsmith eval export``;
``docs/eval/export.md``). An exporter is ``export(split_dir, out_dir) -> report``, named by its
benchmark (``Benchmark.exporter``); every sample is exported or skipped with a reason code.

* reading and preparing samples: :func:`split_samples`, :func:`prepare_sample` (references
  resolved, calls labelled), :func:`sample_id`, :func:`messages_with_notes`,
  :func:`check_python_syntax`; :class:`SkipSample` (raise it to skip one, with its reason)
* schemas in another benchmark's dialect: :func:`schema_dialect`
* writing: :func:`export_with_answers`, :class:`CategoryFiles` (one file per category),
  :class:`ExportReport` (``export_report.json``, :data:`REPORT_FILE`; ``id_map.json``,
  :data:`ID_MAP_FILE`); :data:`MAX_ANSWER_CELLS`

>>> from benchsmith.eval.export import REPORT_FILE, ID_MAP_FILE
>>> REPORT_FILE, ID_MAP_FILE
('export_report.json', 'id_map.json')
"""

from benchsmith.eval._private.export import (
    ID_MAP_FILE,
    MAX_ANSWER_CELLS,
    REPORT_FILE,
    CategoryFiles,
    ExportReport,
    SkipSample,
    check_python_syntax,
    export_with_answers,
    messages_with_notes,
    prepare_sample,
    sample_id,
    schema_dialect,
    split_samples,
)

__all__ = [
    "ID_MAP_FILE",
    "MAX_ANSWER_CELLS",
    "REPORT_FILE",
    "CategoryFiles",
    "ExportReport",
    "SkipSample",
    "check_python_syntax",
    "export_with_answers",
    "messages_with_notes",
    "prepare_sample",
    "sample_id",
    "schema_dialect",
    "split_samples",
]
