"""Tools (function definitions) and tool calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from benchsmith.schemas._private.errors import UserError
from benchsmith.schemas._private.refs import Reference, find_references

TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$"
LABEL_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"

# A JSON-Schema property must say what it accepts through at least one of these keys.
_PROPERTY_TYPE_KEYS = ("type", "enum", "anyOf", "oneOf", "$ref", "const")


class StrictModel(BaseModel):
    """Base of every benchsmith schema model: unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # schemas built on first use: a scoring run uses few


class RestBinding(StrictModel):
    """How a tool maps onto a REST endpoint."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    path: str = Field(pattern=r"^/")


class ToolParameters(StrictModel):
    """The JSON Schema (an object) of a tool's arguments."""

    type: Literal["object"] = "object"
    properties: dict[str, dict[str, Any]] = Field(default_factory=dict)
    required: list[str] = Field(default_factory=list)
    additionalProperties: bool | None = None

    @field_validator("properties")
    @classmethod
    def _each_property_is_typed(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        untyped = [name for name, prop in value.items() if not any(k in prop for k in _PROPERTY_TYPE_KEYS)]
        if untyped:
            keys = "/".join(_PROPERTY_TYPE_KEYS)
            raise ValueError(f"properties {untyped} need at least one of {keys}")
        return value

    @model_validator(mode="after")
    def _required_are_properties(self) -> ToolParameters:
        missing = [name for name in self.required if name not in self.properties]
        if missing:
            raise ValueError(f"required names {missing} are not in properties")
        return self


class ToolHints(StrictModel):
    """What a tool's server says of its behaviour (an MCP tool's annotations): hints, not
    guarantees; None where the server says nothing (MCP's defaults: not read-only, destructive,
    not idempotent, open world)."""

    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None


class Tool(StrictModel):
    """A tool the model may call: name, description, argument schema and optional extras."""

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = Field(min_length=1)
    parameters: ToolParameters = Field(default_factory=ToolParameters)
    returns: dict[str, Any] | None = None
    rest: RestBinding | None = None
    category: str | None = None
    domain: str | None = None
    tags: list[str] = Field(default_factory=list)
    # left out of the written tool when absent: tools without hints keep their bytes and content ids
    hints: ToolHints | None = Field(default=None, exclude_if=lambda value: value is None)

    @field_validator("description")
    @classmethod
    def _description_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("description must not be blank")
        return value

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool.

        >>> from benchsmith.schemas import Tool
        >>> params = {"properties": {"city": {"type": "string"}}, "required": ["city"]}
        >>> tool = Tool(name="get_weather", description="Weather for a city.", parameters=params)
        >>> tool.to_openai()["function"]["parameters"]
        {'type': 'object', 'properties': {'city': {'type': 'string'}}, 'required': ['city']}
        """
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters.model_dump(mode="json", exclude_none=True),
            },
        }

    @classmethod
    def from_openai(cls, d: Mapping[str, Any]) -> Tool:
        """Build a Tool from an OpenAI ``tools`` entry or its bare ``function`` dict.

        The flat form (``{"type": "function", "name": ...}``) is accepted too. A missing
        ``parameters`` means no arguments; the OpenAI-only ``strict`` flag is dropped.

        >>> from benchsmith.schemas import Tool
        >>> entry = {"type": "function", "function": {"name": "ping", "description": "Ping."}}
        >>> Tool.from_openai(entry).to_openai() == {
        ...     "type": "function",
        ...     "function": {"name": "ping", "description": "Ping.",
        ...                  "parameters": {"type": "object", "properties": {}, "required": []}}}
        True
        """
        if not isinstance(d, Mapping):
            raise UserError(
                f"an OpenAI tool must be a JSON object, got {type(d).__name__}",
                fix='pass {"type": "function", "function": {...}} or the function dict itself',
            )
        if "function" in d:
            extra = set(d) - {"type", "function"}
            if d.get("type", "function") != "function" or extra:
                raise UserError(
                    f"not an OpenAI function tool: keys {sorted(d)}, type {d.get('type')!r}",
                    fix='use {"type": "function", "function": {...}}',
                )
            fn = d["function"]
            if not isinstance(fn, Mapping):
                raise UserError(
                    f"OpenAI tool 'function' must be a JSON object, got {type(fn).__name__}",
                    fix="put the name, description and parameters in an object",
                )
        else:
            fn = d
        # The flat Responses-API form carries "type": "function" next to the name.
        data = {k: v for k, v in fn.items() if k != "strict" and not (k == "type" and v == "function")}
        return cls.model_validate(data)


class ToolCall(StrictModel):
    """One call of a tool, optionally labelled so later calls can reference its output."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    label: str | None = Field(default=None, pattern=LABEL_PATTERN)

    def references(self) -> list[Reference]:
        """References to earlier outputs in the arguments (see ``find_references``).

        >>> from benchsmith.schemas import ToolCall
        >>> ToolCall(name="buy", arguments={"ids": ["$s.items.0$", "$s.items.1$"]}).references()
        [Reference(label='s', key='items.0'), Reference(label='s', key='items.1')]
        """
        return find_references(self.arguments)
