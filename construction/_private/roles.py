"""Model roles: every agent of a construction graph (generator, refiner, planner, ...) answers
through its own OpenAI-compatible endpoint; unset roles use the default model (the local one).

A role model is anything with ``complete(messages, json_schema=None, max_tokens=None) -> Reply``
and a ``name``: a :class:`~benchsmith.models.ModelClient`, or :class:`ChatModelRole` around any
langchain chat model (the scripted test double of the unit tests). A role model may also carry
``file_sha256`` (a local model's weights file), which call records and provenance then name.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchsmith.schemas import UserError

ROLES: tuple[str, ...] = (
    "generator",
    "refiner",
    "planner",
    "executor",
    "reviewer",
    "tool_simulator",
    "user",
    "assistant",
    "voter",
)
"""Every role a built-in graph uses."""


class RoleModel(Protocol):
    name: str

    def complete(
        self, messages: list[dict[str, Any]], *, json_schema: dict | None = None, max_tokens: int | None = None
    ) -> Any: ...


class ChatModelRole:
    """A langchain ``BaseChatModel`` as a role model (blocking ``invoke``; JSON schemas are not sent)."""

    def __init__(self, chat: Any, name: str | None = None) -> None:
        self.chat = chat
        self.name = name or type(chat).__name__
        self.file_sha256: str | None = None

    def complete(
        self, messages: list[dict[str, Any]], *, json_schema: dict | None = None, max_tokens: int | None = None
    ) -> Any:
        from benchsmith.models import reply_from_message, to_langchain

        t0 = time.monotonic()
        message = self.chat.invoke(to_langchain(messages))
        return reply_from_message(message, time.monotonic() - t0, 1)


class _ClientRole:
    """A ModelClient with the role-model interface (its name is the model id)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.name = client.config.name
        self.file_sha256: str | None = client.config.file_sha256

    def complete(
        self, messages: list[dict[str, Any]], *, json_schema: dict | None = None, max_tokens: int | None = None
    ) -> Any:
        return self.client.complete(messages, json_schema=json_schema, max_tokens=max_tokens)


def as_role_model(model: Any) -> RoleModel:
    from benchsmith.models import ModelClient

    if isinstance(model, ModelClient):
        return _ClientRole(model)
    if hasattr(model, "complete") and hasattr(model, "name"):
        return model
    if hasattr(model, "invoke"):
        return ChatModelRole(model)
    raise TypeError(f"not a role model: {type(model).__name__}")


@dataclass
class RoleModels:
    """Which model answers each role. ``voters`` are the k models of the vote check (default: the
    default model, k=1)."""

    default: RoleModel
    roles: dict[str, RoleModel] = field(default_factory=dict)
    voters: list[RoleModel] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.default = as_role_model(self.default)
        unknown = sorted(set(self.roles) - set(ROLES))
        if unknown:
            raise UserError(f"unknown model role(s): {', '.join(unknown)}", fix=f"roles are {', '.join(ROLES)}")
        self.roles = {k: as_role_model(v) for k, v in self.roles.items()}
        self.voters = [as_role_model(v) for v in self.voters]

    def for_role(self, role: str) -> RoleModel:
        return self.roles.get(role, self.default)

    def voter_models(self) -> list[RoleModel]:
        return self.voters or [self.for_role("voter")]

    def describe(self) -> dict[str, Any]:
        """Role -> model id (what run.json and provenance record; never keys or credentials), and
        ``files``: model id -> sha256 of the weights file, for local models."""
        out: dict[str, Any] = {"default": self.default.name}
        out.update({role: m.name for role, m in sorted(self.roles.items())})
        if self.voters:
            out["voters"] = [m.name for m in self.voters]
        everyone = [self.default, *self.roles.values(), *self.voters]
        files = {m.name: sha for m in everyone if (sha := role_file_sha256(m))}
        if files:
            out["files"] = dict(sorted(files.items()))
        return out


def role_file_sha256(model: Any) -> str | None:
    """The sha256 of a role model's weights file, when it names one (a local model)."""
    sha = getattr(model, "file_sha256", None)
    return sha if isinstance(sha, str) and sha else None


def parse_role_spec(spec: str) -> tuple[str, str | None, str | None]:
    """``ROLE=MODEL`` or ``ROLE=MODEL@BASE_URL`` (``ROLE=@BASE_URL`` for the endpoint's only model).

    >>> parse_role_spec("refiner=qwen2.5-7b@http://127.0.0.1:8001/v1")
    ('refiner', 'qwen2.5-7b', 'http://127.0.0.1:8001/v1')
    >>> parse_role_spec("planner=gpt-4o-mini")
    ('planner', 'gpt-4o-mini', None)
    """
    role, sep, rest = spec.partition("=")
    role = role.strip()
    if not sep or role not in (*ROLES, "voters"):
        raise UserError(
            f"bad role model {spec!r}", fix=f"write ROLE=MODEL[@BASE_URL] with ROLE one of {', '.join(ROLES)}"
        )
    model, at, url = rest.strip().partition("@")
    return role, (model.strip() or None), (url.strip() or None) if at else None


def role_models(
    model: str | None = None,
    base_url: str | None = None,
    *,
    roles: list[str] | None = None,
    voters: list[str] | None = None,
    **overrides: Any,
) -> RoleModels:
    """Build role models from the CLI/environment: a default model and endpoint, ``roles`` as
    ``ROLE=MODEL[@URL]`` specs, ``voters`` as ``MODEL[@URL]`` specs; overrides (timeout,
    max_tokens, ...) apply to all. With nothing given every role uses the local default model."""
    from benchsmith.models import ModelClient, resolve_model

    def client(name: str | None, url: str | None) -> RoleModel:
        return _ClientRole(ModelClient(resolve_model(name, url, start_local=False, **overrides)))

    default = client(model, base_url)
    by_role = {}
    for spec in roles or []:
        role, name, url = parse_role_spec(spec)
        by_role[role] = client(name, url)
    voter_models = []
    for i, spec in enumerate(voters or []):
        name, at, url = spec.partition("@")
        voter_models.append(client(name.strip() or None, url.strip() or None) if (name.strip() or at) else default)
        if not (name.strip() or at):
            raise UserError(f"voter {i + 1} is empty", fix="write MODEL[@BASE_URL]")
    return RoleModels(default=default, roles=by_role, voters=voter_models)
