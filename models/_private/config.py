"""``ModelConfig`` (which endpoint and model, how to call it) and ``resolve_model``."""

from __future__ import annotations

import os
import re
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator

from benchsmith.models._private.local import PREFIX, local_model, model_file_sha256, resolve_local_model
from benchsmith.schemas import StrictModel, UserError

OPENAI_KEY_ENV = "OPENAI_API_KEY"


def mask_url(url: str | None) -> str | None:
    """``url`` with any ``user:password@`` part replaced by ``***@``."""
    if url is None:
        return None
    return re.sub(r"(?<=://)[^/@]+@", "***@", url)


class ModelConfig(StrictModel):
    """Which model to call and how. Holds the NAME of the API key's environment variable, never the key.

    >>> ModelConfig(name="gpt-4o-mini")
    ModelConfig(name='gpt-4o-mini', base_url=None, api_key_env='OPENAI_API_KEY', timeout=60.0, max_retries=4, \
backoff_base=0.5, backoff_max=20.0, requests_per_second=None, temperature=0.0, max_tokens=512, seed=0, local=False, \
file_sha256=None)
    """

    # allow_inf_nan=False: an infinite timeout or rate is a mistake, refused here rather than in the CLI only
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1, description="model id sent to the server")
    base_url: str | None = Field(None, description="OpenAI-compatible base URL (ending in /v1); None = OpenAI")
    api_key_env: str = Field(OPENAI_KEY_ENV, min_length=1, description="name of the env var holding the API key")
    timeout: float = Field(60.0, gt=0, description="seconds per request attempt")
    max_retries: int = Field(4, ge=0, description="retries after the first attempt (connection, timeout, 429, 5xx)")
    backoff_base: float = Field(0.5, ge=0, description="first backoff ceiling in seconds (doubles per retry)")
    backoff_max: float = Field(20.0, ge=0, description="largest backoff ceiling in seconds")
    requests_per_second: float | None = Field(None, gt=0, description="client-side rate limit; None = unlimited")
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(512, ge=1)
    seed: int | None = 0
    local: bool = Field(False, description="the local default model (no API key needed)")
    file_sha256: str | None = Field(
        None, pattern=r"^[0-9a-f]{64}$", description="sha256 of a local model's weights file (None: a remote model)"
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is None:
            return None
        v = v.strip().rstrip("/")
        if not re.match(r"^https?://[^/\s]+", v):
            raise ValueError(f"base_url must start with http:// or https://, got {mask_url(v)!r}")
        return v

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError(
                "api_key_env is the NAME of an environment variable (e.g. OPENAI_API_KEY), not the key itself"
            )
        return v

    def describe(self) -> dict[str, Any]:
        """What a run records of this configuration: no key, and a URL's credentials masked."""
        return {
            "name": self.name,
            "base_url": mask_url(self.base_url),
            "local": self.local,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "timeout": self.timeout,
            **({"file_sha256": self.file_sha256} if self.file_sha256 else {}),
        }

    def __repr_args__(self):
        for k, v in super().__repr_args__():
            yield k, (mask_url(v) if k == "base_url" else v)

    def api_key(self) -> str | None:
        """The key from ``$api_key_env`` at call time (``"local"`` for the local model)."""
        if self.local:
            return "local"
        return os.environ.get(self.api_key_env) or None


def _config(**fields: Any) -> ModelConfig:
    try:
        return ModelConfig(**fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors())
        raise UserError(
            f"invalid model configuration: {problems}",
            fix="check the model options (see `benchsmith --help` of the command)",
        ) from None


def check_endpoint(base_url: str, timeout: float) -> None:
    """Fail fast, with one clear line, when nothing answers at ``base_url`` (any HTTP answer will do)."""
    import httpx

    try:
        httpx.get(base_url.rstrip("/") + "/models", timeout=timeout)
    except httpx.HTTPError as exc:
        raise UserError(
            f"cannot reach the model endpoint {mask_url(base_url)} ({type(exc).__name__})",
            fix="start the server or check --base-url / BENCHSMITH_BASE_URL",
        ) from None


def _served_model(base_url: str, api_key: str | None, timeout: float) -> str:
    """The id of the model an endpoint serves, from ``GET base_url/models`` (when it serves exactly one)."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.get(f"{base_url}/models", headers=headers, timeout=min(timeout, 10.0))
    except httpx.HTTPError as exc:
        raise UserError(
            f"cannot reach the model endpoint {mask_url(base_url)} ({type(exc).__name__})",
            fix="check the base URL (BENCHSMITH_BASE_URL / --base-url) and that the server runs",
        ) from None
    if resp.status_code != 200:
        raise UserError(
            f"{mask_url(base_url)}/models answered HTTP {resp.status_code}; no model name was given",
            fix="pass the model name (BENCHSMITH_MODEL / --model)",
        )
    try:
        ids = [m["id"] for m in resp.json().get("data", [])]
    except (ValueError, KeyError, TypeError, AttributeError):
        ids = []
    if len(ids) != 1:
        listed = ", ".join(ids[:10]) or "none"
        raise UserError(
            f"{mask_url(base_url)} serves {len(ids)} models ({listed}) and no model name was given",
            fix="pass the model name (BENCHSMITH_MODEL / --model)",
        )
    return ids[0]


def resolve_model(
    model: str | None = None, base_url: str | None = None, *, start_local: bool = True, **overrides: Any
) -> ModelConfig:
    """The ``ModelConfig`` for a model name and/or endpoint; ``overrides`` set other fields (timeout, ...).

    * ``base_url`` given: that endpoint; without ``model``, the one model it lists at ``/models``.
    * no ``base_url`` but ``$OPENAI_API_KEY`` (or ``api_key_env``) set: OpenAI; ``model`` is required.
    * no ``base_url`` and either no key and no ``model``, or a ``model`` naming a local model
      (``local``, ``local:NAME``, a registered ``NAME`` such as ``gemma3-270m``): that local model
      (``local`` / none: the default local model), its server started unless ``start_local=False``
      (then ``base_url`` is the running server's or None, and the client starts the server on
      first use). The model's weights are fetched here if need be; a model whose weights cannot be
      had is replaced by Gemma with one warning line (:func:`resolve_local_model`), and the config
      names the model that will run and its file's sha256.
    """
    for key in ("name", "base_url", "local", "file_sha256"):
        if key in overrides:
            raise UserError(
                f"resolve_model() takes {key!r} from its arguments, not as an override",
                fix="pass model=... / base_url=...",
            )
    key_env = overrides.get("api_key_env", OPENAI_KEY_ENV)
    if base_url and model and model.strip().startswith(PREFIX):
        raise UserError(
            f"model {model!r} is a local model, but a base URL is given ({mask_url(base_url)})",
            fix="leave the base URL out (BENCHSMITH_BASE_URL / --base-url) to run it locally, "
            "or name the endpoint's model",
        )
    if base_url:
        if not model:
            probe = _config(name="probe", base_url=base_url, **overrides)
            assert probe.base_url is not None  # validated from the non-empty base_url above
            model = _served_model(probe.base_url, probe.api_key(), probe.timeout)
        return _config(name=model, base_url=base_url, **overrides)
    named = local_model(model)
    if os.environ.get(key_env) and named is None:
        if not model:
            raise UserError(
                "no model name given for the OpenAI API",
                fix="pass the model name (BENCHSMITH_MODEL / --model), e.g. gpt-4o-mini",
            )
        return _config(name=model, **overrides)
    if model and named is None:
        raise UserError(
            f"model {model!r} needs an endpoint: no base URL is given and ${key_env} is not set",
            fix=f"set {key_env}, or pass a base URL (BENCHSMITH_BASE_URL / --base-url), "
            f"or leave the model out (or write local:NAME) to use a local model",
        )
    _config(name="check", **overrides)  # bad settings are refused before a download or a server start
    chosen = resolve_local_model(named)
    if start_local:
        from benchsmith.models._private.server import ensure_local_server

        local_url: str | None = ensure_local_server(chosen)
    else:
        from benchsmith.models._private.server import local_server_status

        info = local_server_status(chosen)
        local_url = info.base_url if info else None
    return _config(name=chosen.name, base_url=local_url, local=True, file_sha256=model_file_sha256(chosen), **overrides)
