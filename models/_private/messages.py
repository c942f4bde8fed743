"""OpenAI-style message dicts -> langchain messages, and a model's answer -> a plain assistant message."""

from __future__ import annotations

import json
from typing import Any

from benchsmith.schemas import UserError


def _text(content: Any) -> Any:
    """Message content for langchain: None -> "" (some servers crash on null), lists kept as parts."""
    if content is None:
        return ""
    return content


def _call_parts(call: dict[str, Any], where: str) -> tuple[str, str, Any]:
    """(id, name, arguments) of a tool call in OpenAI form ({id, function: {name, arguments}}),
    benchsmith ``Reply`` form ({id, name, arguments}) or langchain form ({id, name, args})."""
    if not isinstance(call, dict):
        raise UserError(f"{where}: a tool call must be an object, got {type(call).__name__}")
    inner = call.get("function")
    fn = inner if isinstance(inner, dict) else call
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise UserError(f"{where}: a tool call has no function name")
    args = fn.get("arguments", fn.get("args", {}))
    return str(call.get("id") or ""), name, args


def to_langchain(messages: list[dict[str, Any]]) -> list[Any]:
    """Convert ``[{role, content, tool_calls?, tool_call_id?, name?}, ...]`` into langchain messages."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    if not isinstance(messages, list) or not messages:
        raise UserError("messages must be a non-empty list of {role, content} objects")
    out: list[Any] = []
    for i, m in enumerate(messages):
        where = f"message {i}"
        if not isinstance(m, dict):
            raise UserError(f"{where} is a {type(m).__name__}, not a {{role, content}} object")
        role = m.get("role")
        content = _text(m.get("content"))
        name = m.get("name")
        extra = {"name": name} if isinstance(name, str) and name else {}
        if role in ("system", "developer"):
            out.append(SystemMessage(content=content, **extra))
        elif role == "user":
            out.append(HumanMessage(content=content, **extra))
        elif role == "assistant":
            calls, invalid = [], []
            for j, call in enumerate(m.get("tool_calls") or []):
                cid, fname, args = _call_parts(call, f"{where}, tool call {j}")
                cid = cid or f"call_{i}_{j}"
                if isinstance(args, str):
                    try:
                        parsed = json.loads(args) if args.strip() else {}
                    except ValueError:
                        parsed = None
                    if isinstance(parsed, dict):
                        args = parsed
                if isinstance(args, dict):
                    calls.append({"id": cid, "name": fname, "args": args, "type": "tool_call"})
                else:
                    raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                    invalid.append({"id": cid, "name": fname, "args": raw, "error": None, "type": "invalid_tool_call"})
            out.append(AIMessage(content=content, tool_calls=calls, invalid_tool_calls=invalid, **extra))
        elif role == "tool":
            call_id = m.get("tool_call_id")
            if not call_id:
                raise UserError(f"{where} (role tool) has no tool_call_id")
            if not isinstance(content, (str, list)):
                content = json.dumps(content, ensure_ascii=False)
            out.append(ToolMessage(content=content, tool_call_id=str(call_id), **extra))
        else:
            raise UserError(f"{where} has role {role!r}", fix="use system, user, assistant or tool")
    return out


def parse_arguments(raw: Any) -> Any:
    """A tool call's arguments: the parsed object when they are a JSON object, else the raw string."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return json.dumps(raw, ensure_ascii=False)
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw
    return parsed if isinstance(parsed, dict) else raw


def content_text(content: Any) -> str:
    """A reply's text: str content as is, text parts joined, None -> ""."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p if isinstance(p, str) else str(p.get("text") or "")
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and p.get("type") in (None, "text"))
        )
    return str(content)


def ai_to_openai(msg: Any) -> dict[str, Any]:
    """A langchain ``AIMessage`` as an OpenAI assistant message dict (arguments as JSON strings)."""
    raw: dict[str, Any] = {"role": "assistant", "content": content_text(msg.content)}
    calls = []
    for tc in getattr(msg, "tool_calls", None) or []:
        calls.append(
            {
                "id": tc.get("id") or "",
                "type": "function",
                "function": {
                    "name": tc.get("name") or "",
                    "arguments": json.dumps(tc.get("args") or {}, ensure_ascii=False),
                },
            }
        )
    for tc in getattr(msg, "invalid_tool_calls", None) or []:
        args = tc.get("args")
        calls.append(
            {
                "id": tc.get("id") or "",
                "type": "function",
                "function": {
                    "name": tc.get("name") or "",
                    "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                },
            }
        )
    if calls:
        raw["tool_calls"] = calls
    return raw


def reply_calls(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{id, name, arguments}]`` from a plain assistant message dict."""
    return [
        {"id": c["id"], "name": c["function"]["name"], "arguments": parse_arguments(c["function"]["arguments"])}
        for c in raw.get("tool_calls") or []
    ]
