"""The data model of benchsmith: tools, samples, splits, and safe JSON/JSONL files.

Every model rejects unknown fields and can be exported as JSON Schema (``json_schemas``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter

from benchsmith.schemas._private.compare import (
    COMPARE_FORMAT,
    ComparedFigure,
    NoiseFigure,
    RunComparison,
    write_comparisons,
)
from benchsmith.schemas._private.encode import SampleEncoder
from benchsmith.schemas._private.episode import (
    AssistantEvent,
    EndEvent,
    EpisodeEvent,
    EventCall,
    EventError,
    JournalLine,
    Observation,
    ToolEvent,
    UserEvent,
    append_journal,
    episode_event,
    iter_journal,
)
from benchsmith.schemas._private.errors import (
    BenchsmithError,
    EnvironmentFault,
    RuntimeFault,
    ToolError,
    UserError,
    first_problem,
)
from benchsmith.schemas._private.folders import check_out_dir, swap_folder, writer_alive
from benchsmith.schemas._private.jobs import FailureStreak, failure_limit, run_items, run_items_in_threads
from benchsmith.schemas._private.jsonl import (
    JsonlError,
    RowError,
    append_jsonl,
    appended_line,
    check_jsonl,
    dumps_json,
    iter_appended,
    iter_jsonl_lenient,
    json_default,
    loads_json,
    read_json,
    read_jsonl,
    read_text,
    scan_jsonl,
    validate_shape,
    write_json,
    write_json_streamed,
    write_jsonl,
)
from benchsmith.schemas._private.jsonschema import ANY_JSON, MAX_REF_DEPTH, inline_refs, typed
from benchsmith.schemas._private.pairs import (
    PairAccepted,
    PairConversion,
    PairJournalHead,
    PairRecord,
    PairRejected,
    pair_record,
)
from benchsmith.schemas._private.progress import Bar, Bars, progress_bar
from benchsmith.schemas._private.refs import (
    Reference,
    UnresolvedReference,
    find_references,
    parse_reference,
    resolve_references,
)
from benchsmith.schemas._private.registry import ENV_PLUGINS, Registry, lazy_exports, load_plugins
from benchsmith.schemas._private.run import (
    RUN_FORMAT,
    BadPredictionLine,
    EvalCase,
    GoldSelftest,
    RecordResult,
    ReplyError,
    ReplyLine,
    ReplyStatus,
    ReplyTurn,
    RunManifest,
    RunModel,
    RunTask,
    ScoreHead,
    ScoreIntervals,
    Selftest,
    SelftestFailure,
    append_reply,
    iter_cases,
    iter_records,
    iter_reply_lines,
    read_replies,
    read_run_manifest,
    read_selftest,
    record_line,
    reply_line,
    score_head,
    score_intervals,
    scores_object,
    write_cases,
    write_records,
    write_run_manifest,
    write_scores,
    write_selftest,
)
from benchsmith.schemas._private.sample import (
    AnswerSpec,
    CheckResult,
    ExactAnswer,
    Message,
    NoAnswer,
    Provenance,
    ReferenceAnswer,
    Sample,
    Step,
    Verification,
    WhitelistAnswer,
    content_id,
)
from benchsmith.schemas._private.split import Split, SplitManifest, file_sha256, samples_content_hash
from benchsmith.schemas._private.tool import (
    TOOL_NAME_PATTERN,
    RestBinding,
    StrictModel,
    Tool,
    ToolCall,
    ToolHints,
    ToolParameters,
)
from benchsmith.schemas._private.usage import (
    CallUsage,
    CostSummary,
    ModelPrice,
    PriceTable,
    RoleUsage,
    price_usage,
    read_prices,
    tally_usage,
)

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_SCHEMA_TYPES: dict[str, Any] = {
    "Tool": Tool,
    "ToolParameters": ToolParameters,
    "RestBinding": RestBinding,
    "ToolCall": ToolCall,
    "Step": Step,
    "Message": Message,
    "ExactAnswer": ExactAnswer,
    "WhitelistAnswer": WhitelistAnswer,
    "ReferenceAnswer": ReferenceAnswer,
    "NoAnswer": NoAnswer,
    "AnswerSpec": AnswerSpec,
    "CheckResult": CheckResult,
    "Verification": Verification,
    "Provenance": Provenance,
    "Sample": Sample,
    "SplitManifest": SplitManifest,
    "RunManifest": RunManifest,
    "ReplyLine": ReplyLine,
    "RecordResult": RecordResult,
    "EvalCase": EvalCase,
    "JournalLine": JournalLine,
    "ScoreHead": ScoreHead,
    "ScoreIntervals": ScoreIntervals,
    "RunComparison": RunComparison,
    "PriceTable": PriceTable,
    "Selftest": Selftest,
}


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas (draft 2020-12) of the public models, by name.

    >>> from benchsmith.schemas import json_schemas
    >>> schemas = json_schemas()
    >>> sorted(schemas["Tool"]["required"])
    ['description', 'name']
    >>> schemas["AnswerSpec"]["discriminator"]["propertyName"]
    'kind'
    """
    result: dict[str, dict[str, Any]] = {}
    for name, tp in _SCHEMA_TYPES.items():
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            schema = tp.model_json_schema()
        else:
            schema = TypeAdapter(tp).json_schema()
            schema.setdefault("title", name)
        result[name] = {"$schema": JSON_SCHEMA_DIALECT, **schema}
    return result


def export_json_schemas(directory: str | os.PathLike[str]) -> list[Path]:
    """Write ``<Name>.schema.json`` for every public model into ``directory``; returns the paths.

    >>> import tempfile
    >>> from benchsmith.schemas import export_json_schemas
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in export_json_schemas(d)][:2]
    ['AnswerSpec.schema.json', 'CheckResult.schema.json']
    """
    out = Path(directory)
    paths = []
    for name, schema in sorted(json_schemas().items()):
        path = out / f"{name}.schema.json"
        write_json(path, schema)
        paths.append(path)
    return paths


if TYPE_CHECKING:
    from benchsmith.schemas._private.mcp import (
        McpEnvironment,
        McpServer,
        StateProbe,
        read_mcp_environment,
        read_mcp_server,
        write_mcp_environment,
        write_mcp_server,
    )
    from benchsmith.schemas._private.openapi import (
        OpenApiArg,
        OpenApiAuth,
        OpenApiEnvironment,
        OpenApiOperation,
        OpenApiService,
        ServiceCall,
        read_openapi_environment,
        read_openapi_service,
        write_openapi_environment,
        write_openapi_service,
    )

# tool servers' files, imported on first use: scoring and most commands need none of them
_MCP = "._private.mcp"
_OPENAPI = "._private.openapi"
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            (
                "McpEnvironment",
                "McpServer",
                "StateProbe",
                "read_mcp_environment",
                "read_mcp_server",
                "write_mcp_environment",
                "write_mcp_server",
            ),
            _MCP,
        ),
        **dict.fromkeys(
            (
                "OpenApiEnvironment",
                "ServiceCall",
                "read_openapi_environment",
                "write_openapi_environment",
                "OpenApiArg",
                "OpenApiAuth",
                "OpenApiOperation",
                "OpenApiService",
                "read_openapi_service",
                "write_openapi_service",
            ),
            _OPENAPI,
        ),
    },
)

__all__ = [
    # run folders
    "RUN_FORMAT",
    "RunManifest",
    "RunModel",
    "RunTask",
    "read_run_manifest",
    "write_run_manifest",
    "ReplyError",
    "ReplyLine",
    "RecordResult",
    "EvalCase",
    "BadPredictionLine",
    "GoldSelftest",
    "ScoreHead",
    "score_head",
    "Selftest",
    "SelftestFailure",
    "write_selftest",
    "read_selftest",
    "ScoreIntervals",
    "score_intervals",
    "CallUsage",
    "CostSummary",
    "ModelPrice",
    "PriceTable",
    "RoleUsage",
    "price_usage",
    "read_prices",
    "tally_usage",
    "COMPARE_FORMAT",
    "ComparedFigure",
    "NoiseFigure",
    "RunComparison",
    "write_comparisons",
    "scores_object",
    "write_scores",
    "AssistantEvent",
    "EndEvent",
    "EpisodeEvent",
    "EventCall",
    "EventError",
    "JournalLine",
    "Observation",
    "ToolEvent",
    "UserEvent",
    "append_journal",
    "episode_event",
    "iter_journal",
    "iter_cases",
    "write_cases",
    "iter_records",
    "record_line",
    "write_records",
    "ReplyStatus",
    "ReplyTurn",
    "append_reply",
    "iter_reply_lines",
    "read_replies",
    "reply_line",
    "ENV_PLUGINS",
    "load_plugins",
    # errors
    "BenchsmithError",
    "Registry",
    "lazy_exports",
    "Bar",
    "Bars",
    "progress_bar",
    "PairAccepted",
    "PairConversion",
    "PairJournalHead",
    "PairRecord",
    "PairRejected",
    "pair_record",
    "FailureStreak",
    "failure_limit",
    "run_items",
    "run_items_in_threads",
    "ToolError",
    "UserError",
    "RuntimeFault",
    "EnvironmentFault",
    "first_problem",
    "JsonlError",
    "UnresolvedReference",
    # tools
    "StrictModel",
    "TOOL_NAME_PATTERN",
    "Tool",
    "ToolHints",
    "ToolParameters",
    "RestBinding",
    "ToolCall",
    # MCP servers
    "McpServer",
    "read_mcp_server",
    "write_mcp_server",
    "McpEnvironment",
    "StateProbe",
    "read_mcp_environment",
    "write_mcp_environment",
    # OpenAPI services
    "OpenApiArg",
    "OpenApiAuth",
    "OpenApiOperation",
    "OpenApiService",
    "read_openapi_service",
    "write_openapi_service",
    "OpenApiEnvironment",
    "ServiceCall",
    "read_openapi_environment",
    "write_openapi_environment",
    # JSON Schemas of tool sources
    "ANY_JSON",
    "MAX_REF_DEPTH",
    "inline_refs",
    "typed",
    # references
    "Reference",
    "parse_reference",
    "find_references",
    "resolve_references",
    # samples
    "Step",
    "Message",
    "AnswerSpec",
    "ExactAnswer",
    "WhitelistAnswer",
    "ReferenceAnswer",
    "NoAnswer",
    "CheckResult",
    "Verification",
    "Provenance",
    "Sample",
    "content_id",
    # splits
    "Split",
    "SplitManifest",
    "file_sha256",
    "samples_content_hash",
    # files
    "RowError",
    "read_jsonl",
    "iter_jsonl_lenient",
    "scan_jsonl",
    "check_jsonl",
    "SampleEncoder",
    "swap_folder",
    "check_out_dir",
    "writer_alive",
    "json_default",
    "write_jsonl",
    "dumps_json",
    "loads_json",
    "append_jsonl",
    "appended_line",
    "iter_appended",
    "read_json",
    "read_text",
    "validate_shape",
    "write_json",
    "write_json_streamed",
    # JSON Schema
    "json_schemas",
    "export_json_schemas",
]
