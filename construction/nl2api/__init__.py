"""NL2SQL -> NL2API: executable tools and execution-verified gold chains from SQLite + SQL.

>>> from benchsmith.construction.nl2api import REASONS
>>> "result_mismatch" in REASONS
True
"""

from ._private.build import (
    STYLES,
    BuildOptions,
    Pair,
    build_split,
    build_universes,
    default_pairs_path,
    parse_universe,
    universe_label,
    universe_size,
)
from ._private.chinook import chinook_db, column_descriptions
from ._private.columns import hoist_columns
from ._private.compare import multiset_equal, ordered_equal, values_equal
from ._private.converter import REASONS, Conversion, Rejection, convert
from ._private.database import MAX_ROWS, Database, QueryTimeout, ReadOnlyViolation
from ._private.dataset_build import build_dataset, merge_splits
from ._private.datasets import KINDS, Dataset, DatasetDB, example_names, materialize_example, read_dataset, write_pairs
from ._private.jsonvalues import from_json_value, json_value
from ._private.relation import MAX_SQL_CHARS, Relation, ToolError
from ._private.rest import create_app, run_endpoint, serve_split
from ._private.runtime import Binding, Runtime, load_bindings, observation, result_rows
from ._private.splitfiles import SplitTools, read_endpoints, read_manifest, read_toolset
from ._private.toolenv import ToolEnv, compact_tools, setup_note, step_schema
from ._private.tools import MAX_LIST_ITEMS, MAX_TEXT_CHARS, SLOT_TOOLS, slot_tool
from ._private.verify import ChainRun, execute_sql, run_and_check

__all__ = [
    "KINDS",
    "Dataset",
    "DatasetDB",
    "build_dataset",
    "build_universes",
    "example_names",
    "materialize_example",
    "merge_splits",
    "parse_universe",
    "read_dataset",
    "universe_label",
    "universe_size",
    "write_pairs",
    "MAX_LIST_ITEMS",
    "MAX_ROWS",
    "MAX_SQL_CHARS",
    "MAX_TEXT_CHARS",
    "REASONS",
    "STYLES",
    "Binding",
    "BuildOptions",
    "ChainRun",
    "Conversion",
    "Database",
    "Pair",
    "QueryTimeout",
    "ReadOnlyViolation",
    "Rejection",
    "Relation",
    "Runtime",
    "SLOT_TOOLS",
    "SplitTools",
    "ToolEnv",
    "ToolError",
    "build_split",
    "default_pairs_path",
    "compact_tools",
    "hoist_columns",
    "setup_note",
    "step_schema",
    "chinook_db",
    "column_descriptions",
    "convert",
    "create_app",
    "execute_sql",
    "from_json_value",
    "json_value",
    "load_bindings",
    "multiset_equal",
    "observation",
    "ordered_equal",
    "values_equal",
    "read_endpoints",
    "read_manifest",
    "read_toolset",
    "result_rows",
    "run_and_check",
    "run_endpoint",
    "serve_split",
    "slot_tool",
]
