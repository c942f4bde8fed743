"""Sandbox tools from plain methods: ``@tool`` marks a method, :func:`build_spec` turns its type
hints and docstring into a benchsmith :class:`~benchsmith.schemas.Tool`, and :meth:`ToolSpec.bind`
checks call arguments against it before anything runs.

Supported parameter types: ``str``, ``int``, ``float``, ``bool``, ``Literal[...]``, ``list[T]``,
``dict[str, T]`` (``T`` may be ``Any``: any JSON object), ``T | None`` (optional; ``null`` counts
as omitted) and pydantic models (JSON objects whose fields carry ``Field(description=...)``). The
docstring's first paragraph describes the tool; an ``Args:`` section gives one ``name:
description`` line (indented continuation lines allowed) per parameter, and every parameter must
be documented.
"""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Union

from pydantic import BaseModel

from benchsmith.schemas import Tool, ToolError

_MARK = "__sandbox_tool__"
_ARG_LINE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(?P<text>.*)$")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Example|Examples):\s*$")


def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a domain method as a sandbox tool (its schema is built when the domain is registered)."""
    setattr(fn, _MARK, True)
    return fn


def is_tool(obj: Any) -> bool:
    return callable(obj) and getattr(obj, _MARK, False) is True


@dataclass(frozen=True)
class Param:
    """One tool parameter: its name, type hint, whether it is required, default and description."""

    name: str
    hint: Any
    required: bool
    default: Any
    description: str


@dataclass(frozen=True)
class ToolSpec:
    """A tool of a domain: the method to run and the schema its arguments are checked against."""

    name: str
    domain: str
    method: str
    params: tuple[Param, ...]
    description: str = field(compare=False)
    #: the JSON Schema of the arguments (``properties``, ``required``), built at registration
    parameters: dict[str, Any] = field(compare=False)

    @functools.cached_property
    def schema(self) -> Tool:
        """The tool as a benchsmith :class:`~benchsmith.schemas.Tool`, made when first asked for:
        replaying calls needs none, and the first ``Tool`` made builds its validator (about 45 ms,
        a tenth of scoring ACEBench's English data)."""
        return Tool(
            name=self.name,
            description=self.description,
            domain=self.domain,
            category="sandbox",
            parameters=self.parameters,
        )

    def bind(self, arguments: Any) -> dict[str, Any]:
        """Keyword arguments for the method, or ``ToolError`` (``bad_arguments``,
        ``missing_argument``, ``unknown_argument``) when ``arguments`` does not fit the schema."""
        if not isinstance(arguments, dict):
            raise ToolError(
                f"{self.name}: arguments must be a JSON object, got {_json_type(arguments)}", code="bad_arguments"
            )
        by_name = {p.name: p for p in self.params}
        unknown = sorted(k for k in arguments if k not in by_name)
        if unknown:
            allowed = ", ".join(by_name) or "none"
            raise ToolError(
                f"{self.name} has no parameter {unknown[0]!r} (parameters: {allowed})", code="unknown_argument"
            )
        bound: dict[str, Any] = {}
        for p in self.params:
            value = arguments.get(p.name)
            if p.name not in arguments or (value is None and not p.required):
                if p.required:
                    raise ToolError(f"{self.name} needs argument {p.name!r} ({p.description})", code="missing_argument")
                bound[p.name] = p.default
                continue
            bound[p.name] = convert(value, p.hint, f"{self.name}: {p.name}")
        return bound


# ----------------------------------------------------------------------------- schema


def build_spec(domain: str, method: Callable[..., Any]) -> ToolSpec:
    """The :class:`ToolSpec` of a ``@tool`` method; raises ``TypeError`` for an undocumented or
    untyped parameter (a programming error of the domain, found at registration)."""
    name = method.__name__
    summary, arg_docs = parse_docstring(inspect.getdoc(method) or "")
    if not summary:
        raise TypeError(f"sandbox tool {domain}.{name} needs a docstring")
    hints = typing.get_type_hints(method)
    params: list[Param] = []
    for p in list(inspect.signature(method).parameters.values())[1:]:  # skip self
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise TypeError(f"sandbox tool {domain}.{name}: parameter {p.name} must be a plain named parameter")
        if p.name not in hints:
            raise TypeError(f"sandbox tool {domain}.{name}: parameter {p.name} has no type hint")
        if not arg_docs.get(p.name):
            raise TypeError(f"sandbox tool {domain}.{name}: parameter {p.name} is not described under Args:")
        required = p.default is inspect.Parameter.empty
        params.append(Param(p.name, hints[p.name], required, None if required else p.default, arg_docs[p.name]))
    extra = sorted(set(arg_docs) - {p.name for p in params})
    if extra:
        raise TypeError(f"sandbox tool {domain}.{name}: Args: documents unknown parameter(s) {extra}")
    properties = {}
    for p in params:
        prop = {**json_schema(p.hint), "description": p.description}
        if not p.required and p.default is not None:
            prop["default"] = p.default
        properties[p.name] = prop
    return ToolSpec(
        name=name,
        domain=domain,
        method=name,
        params=tuple(params),
        description=summary,
        parameters={"properties": properties, "required": [p.name for p in params if p.required]},
    )


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """``(summary, {parameter: description})`` of a Google-style docstring.

    >>> parse_docstring('''Send a text.
    ...
    ... Args:
    ...     to: Who gets it.
    ...     text: The words,
    ...         at most 160 characters.
    ... ''')
    ('Send a text.', {'to': 'Who gets it.', 'text': 'The words, at most 160 characters.'})
    """
    summary: list[str] = []
    args: dict[str, str] = {}
    section = None
    current = None
    for raw in doc.splitlines():
        line = raw.strip()
        head = _SECTION.match(line)
        if head:
            section, current = head.group(1), None
            continue
        if section is None:
            if not line and summary:
                section = "body"  # first paragraph ends
            elif line:
                summary.append(line)
        elif section in ("Args", "Arguments", "Parameters") and line:
            m = _ARG_LINE.match(line)
            if m and not raw.startswith(" " * 8):
                current = m.group("name")
                args[current] = m.group("text").strip()
            elif current:
                args[current] = f"{args[current]} {line}".strip()
    return " ".join(summary), args


def json_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a supported type hint.

    >>> json_schema(list[int])
    {'type': 'array', 'items': {'type': 'integer'}}
    >>> json_schema(Literal["newest", "oldest"])
    {'type': 'string', 'enum': ['newest', 'oldest']}
    """
    inner = _optional_inner(hint)
    if inner is not None:
        return json_schema(inner)
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = list(typing.get_args(hint))
        kind = "string" if all(isinstance(c, str) for c in choices) else "integer"
        return {"type": kind, "enum": choices}
    if origin is list:
        (item,) = typing.get_args(hint)
        return {"type": "array", "items": json_schema(item)}
    if origin is dict:
        key, item = typing.get_args(hint)
        if key is not str:
            raise TypeError(f"unsupported sandbox parameter type {hint!r} (object keys are strings)")
        return {"type": "object"} if item is Any else {"type": "object", "additionalProperties": json_schema(item)}
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        props, required = {}, []
        for fname, finfo in hint.model_fields.items():
            if not finfo.description:
                raise TypeError(f"field {hint.__name__}.{fname} needs Field(description=...)")
            props[fname] = {**json_schema(finfo.annotation), "description": finfo.description}
            if finfo.is_required():
                required.append(fname)
            elif finfo.default is not None:
                props[fname]["default"] = finfo.default
        return {"type": "object", "properties": props, "required": required, "additionalProperties": False}
    raise TypeError(f"unsupported sandbox parameter type {hint!r}")


# ----------------------------------------------------------------------------- validation


def convert(value: Any, hint: Any, where: str) -> Any:
    """``value`` checked against ``hint`` (models are built from their JSON objects); a misfit is a
    ``ToolError`` naming the argument path. Nothing is parsed or evaluated: strings stay strings."""
    inner = _optional_inner(hint)
    if inner is not None:
        return None if value is None else convert(value, inner, where)
    if hint is str:
        return _expect(value, isinstance(value, str), "a string", where)
    if hint is bool:
        return _expect(value, isinstance(value, bool), "true or false", where)
    if hint is int:
        return _expect(value, isinstance(value, int) and not isinstance(value, bool), "an integer", where)
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return float(_expect(value, ok, "a number", where))
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if not any(value == c and type(value) is type(c) for c in choices):
            raise ToolError(f"{where} must be one of {list(choices)}, got {value!r}", code="bad_arguments")
        return value
    if origin is list:
        _expect(value, isinstance(value, list), "an array", where)
        (item,) = typing.get_args(hint)
        return [convert(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        _expect(value, isinstance(value, dict) and all(isinstance(k, str) for k in value), "an object", where)
        item = typing.get_args(hint)[1]
        return dict(value) if item is Any else {k: convert(v, item, f"{where}.{k}") for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        _expect(value, isinstance(value, dict), "an object", where)
        fields = hint.model_fields
        unknown = sorted(k for k in value if k not in fields)
        if unknown:
            raise ToolError(
                f"{where} has no field {unknown[0]!r} (fields: {', '.join(fields)})", code="unknown_argument"
            )
        data = {}
        for fname, finfo in fields.items():
            if fname not in value or value[fname] is None and not finfo.is_required():
                if finfo.is_required():
                    raise ToolError(f"{where} needs field {fname!r} ({finfo.description})", code="missing_argument")
                continue
            data[fname] = convert(value[fname], finfo.annotation, f"{where}.{fname}")
        return hint(**data)
    raise TypeError(f"unsupported sandbox parameter type {hint!r}")


def _expect(value: Any, ok: bool, what: str, where: str) -> Any:
    if not ok:
        got = "null" if value is None else f"{_json_type(value)} {_short(value)}"
        raise ToolError(f"{where} must be {what}, got {got}", code="bad_arguments")
    return value


def _optional_inner(hint: Any) -> Any:
    """``T`` for ``T | None`` / ``Optional[T]``, else None."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0]
        raise TypeError(f"unsupported sandbox parameter type {hint!r} (only T | None unions)")
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
