"""Tool calls in prompts and in predictions: writing calls the way a benchmark shows them, and
reading the calls a model returned.

* writing: :func:`python_calls` (``[f(a=1)]`` text), :func:`native_tool_calls` (OpenAI tool calls
  as ``{"name", "arguments"}``), :func:`chat_messages`, :data:`THOUGHT` (the reasoning field of a
  structured reply); the JSON-schema builders (``call_schema``, ``openai_tool``, ``enum_or_string``)
  are :mod:`benchsmith.models`'
* reading: :func:`tool_call_parts` (name, arguments, the rest of one call entry; raises
  :class:`CallShapeError`), :class:`JSONValueText` (a JSON value kept as its text)

>>> from benchsmith.eval.calls import python_calls
>>> python_calls([{"name": "f", "arguments": {"a": 1, "b": "x"}}])
"[f(a=1, b='x')]"
"""

from benchsmith.eval._private.calls import THOUGHT, chat_messages, native_tool_calls, python_calls
from benchsmith.eval._private.core import CallShapeError, JSONValueText, tool_call_parts

__all__ = [
    "THOUGHT",
    "CallShapeError",
    "JSONValueText",
    "chat_messages",
    "native_tool_calls",
    "python_calls",
    "tool_call_parts",
]
