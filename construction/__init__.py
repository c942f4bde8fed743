"""Construction: turn sources (NL2SQL pairs, tool catalogs, models) into benchsmith samples.

Deterministic converters (``benchsmith.construction.nl2api``) and LangGraph agent graphs run by
:func:`run_graph` (``queries``, ``chains``, ...): each model node builds its messages from the
state (pure), calls the model of its role, and parses the reply (pure); an unreadable reply
sends the item to review with the raw text.

>>> from benchsmith.construction import GRAPHS, get_graph
>>> get_graph("queries").roles
('generator', 'refiner')
"""

from typing import TYPE_CHECKING

from benchsmith.schemas import lazy_exports

from ._private.envs import (
    ENVIRONMENTS,
    EnvContext,
    KeptEnvironments,
    ToolEnvironment,
    call_with_outputs,
    close_environment,
    environment,
    folder_digest,
    json_view,
    open_environment,
    read_probes,
    shared_service,
    state_changes,
    state_of,
    without_volatile,
)

if TYPE_CHECKING:
    from ._private.catalog import CatalogEntry, draw_tools, load_catalog, raw_rows, tool_dict
    from ._private.engine import (
        ACCEPTED,
        FINAL,
        GRAPHS,
        REJECTED,
        REVIEW,
        RUNNING,
        BaseState,
        BuildContext,
        ConstructionGraph,
        GraphOptions,
        ModelStep,
        ParseError,
        apply_step,
        call_model,
        get_graph,
        go_on,
        graph,
        item_rng,
        json_object,
        model_node,
        nonempty_text,
        options_help,
        pipeline,
        read_json_reply,
        reason,
        reject,
    )
    from ._private.inspection import inspect_samples
    from ._private.roles import ROLES, ChatModelRole, RoleModels, parse_role_spec, role_models
    from ._private.run import ConstructSummary, run_graph

# the graph engine (LangGraph), the runner (SQLite checkpoints), roles and inspection, imported on
# first use: a sub-package (the sandbox, nl2api) imports this package first, and scoring ACEBench's
# agent records needs the sandbox, not the engine
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("CatalogEntry", "draw_tools", "load_catalog", "raw_rows", "tool_dict"), "._private.catalog"),
        **dict.fromkeys(
            (
                "ACCEPTED",
                "FINAL",
                "GRAPHS",
                "REJECTED",
                "REVIEW",
                "RUNNING",
                "BaseState",
                "BuildContext",
                "ConstructionGraph",
                "GraphOptions",
                "ModelStep",
                "ParseError",
                "apply_step",
                "call_model",
                "get_graph",
                "go_on",
                "graph",
                "item_rng",
                "json_object",
                "model_node",
                "nonempty_text",
                "options_help",
                "pipeline",
                "read_json_reply",
                "reason",
                "reject",
            ),
            "._private.engine",
        ),
        **dict.fromkeys(("inspect_samples",), "._private.inspection"),
        **dict.fromkeys(("ROLES", "ChatModelRole", "RoleModels", "parse_role_spec", "role_models"), "._private.roles"),
        **dict.fromkeys(("ConstructSummary", "run_graph"), "._private.run"),
    },
)

__all__ = [
    "ACCEPTED",
    "ENVIRONMENTS",
    "FINAL",
    "GRAPHS",
    "REJECTED",
    "REVIEW",
    "ROLES",
    "RUNNING",
    "BaseState",
    "BuildContext",
    "CatalogEntry",
    "ChatModelRole",
    "ConstructSummary",
    "ConstructionGraph",
    "GraphOptions",
    "EnvContext",
    "call_with_outputs",
    "close_environment",
    "folder_digest",
    "json_view",
    "state_changes",
    "state_of",
    "read_probes",
    "KeptEnvironments",
    "shared_service",
    "without_volatile",
    "ModelStep",
    "ParseError",
    "RoleModels",
    "ToolEnvironment",
    "apply_step",
    "call_model",
    "draw_tools",
    "environment",
    "get_graph",
    "options_help",
    "go_on",
    "graph",
    "inspect_samples",
    "item_rng",
    "json_object",
    "load_catalog",
    "raw_rows",
    "model_node",
    "nonempty_text",
    "open_environment",
    "parse_role_spec",
    "pipeline",
    "read_json_reply",
    "reason",
    "reject",
    "role_models",
    "run_graph",
    "tool_dict",
]
