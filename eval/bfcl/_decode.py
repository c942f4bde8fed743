"""Turn a model's raw BFCL output into calls ``[{name: {param: value}}]`` without ever running it.

Two output formats exist, one per kind of model BFCL evaluates:

- the *prompt* format (prompt-mode models: a raw text result), Python call syntax such as
  ``[get_weather(city="Paris"), math.sqrt(x=4)]`` (brackets optional), read with :mod:`ast` only;
- the *function-calling* (FC) format (FC models: the handler stores the native tool calls),
  ``[{"get_weather": "{\\"city\\": \\"Paris\\"}"}]``: one object per call, the function name as
  its key, the arguments as JSON text.

``official`` mode decodes with the decoder of the format it is told (:data:`PROMPT` or
:data:`FC`), exactly as BFCL's prompt-mode decoder or its FC decoder (OpenAI, Anthropic and
Mistral handlers) does, quirks included (``docs/eval/bfcl.md``): JSON is no Python call syntax,
so JSON calls fail the prompt decoder; the FC decoder takes nothing but the shape above.
``strict`` mode reads either format whatever it is told (JSON call shapes as FC, anything else
as the prompt format) and fixes the decoders' quirks; :attr:`Decoded.fmt` says which it read.
A prediction line's ``result`` given as a JSON value (not a string) arrives as a
JSON-value text (:func:`value_prediction`): for the official decoders that is a value (an FC
model's calls), while a string is text (a prompt-mode output, or an FC model's text reply).
Decoding never raises: every failure is a :class:`Decoded` with an ``error``.

>>> from benchsmith.eval.bfcl import BFCL
>>> OFFICIAL, STRICT = BFCL.rules["official"], BFCL.rules["strict"]
>>> decode('[get_weather(city="Paris"), math.sqrt(x=4)]', OFFICIAL).calls
[{'get_weather': {'city': 'Paris'}}, {'math.sqrt': {'x': 4}}]
>>> decode('```python\\nf(x=+2)\\n```', OFFICIAL).error
'ast_decoder:decoder_failed'
>>> decode('```python\\nf(x=+2)\\n```', STRICT).calls
[{'f': {'x': 2}}]
>>> decode('[{"name": "f", "arguments": {"x": 1}}]', OFFICIAL, "prompt").error
'ast_decoder:decoder_failed'
>>> decode([{"f": "{}"}], OFFICIAL, "fc").calls
[{'f': {}}]
>>> decode([{"f": "{}"}, {"g": {}}], OFFICIAL, "fc").error   # arguments must be JSON text
'ast_decoder:decoder_failed'
>>> decode('[{"f": "{}"}]', OFFICIAL, "fc").error      # a string is the model's text reply
'ast_decoder:decoder_failed'
>>> d = decode('[{"name": "f", "arguments": {"x": 1}}]', STRICT)
>>> d.fmt, d.calls
('fc', [{'f': {'x': 1}}])
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from benchsmith.eval.budget import MODEL_OUTPUT, FoldBudget
from benchsmith.eval.calls import JSONValueText
from benchsmith.models import ParseError as _ReplyError

from ._rules import STRICT, BFCLRules

PROMPT = "prompt"  # Python call syntax (prompt-mode models)
FC = "fc"  # native function calls (FC models)
FORMATS = (PROMPT, FC)

DECODER_FAILED = "ast_decoder:decoder_failed"
WRONG_FORMAT = "ast_decoder:decoder_wrong_output_format"
POSITIONAL = "ast_decoder:positional_args"
REPEATED = "ast_decoder:repeated_keyword"
UNPACKING = "ast_decoder:kwargs_unpacking"

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)
_MAX_REPEAT = 100_000  # heaviest value (string length, list elements at every level) folded
_MAX_FOLDED = 1_000_000  # total weight of the values folded in one output
_MAX_POW_BITS = 4_096  # largest integer power folded
_MAX_INT_BITS = 14_000  # largest integer a fold may produce (about 4,200 digits)


class DecodeError(_ReplyError):
    """A value or call the decoder cannot read (always caught inside this module; a
    :class:`benchsmith.models.ParseError` with the code ``decoder_failed``)."""

    def __init__(self, reason: str = "") -> None:
        super().__init__("decoder_failed", reason)


@dataclass
class Decoded:
    """What a raw output decodes to.

    ``calls`` is the decoded list (``None`` when decoding failed); ``problems`` lists
    strict-mode defects of calls that were otherwise read (positional arguments, repeated
    keywords): the AST check fails on them, the relevance check still counts the call.
    """

    calls: list[Any] | None
    fmt: str  # the format read: "prompt" | "fc"
    error: str | None = None  # an official-style error type
    message: str = ""
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None and self.calls is not None


# ---- shared helpers ---------------------------------------------------------------------------
def strip_fence(text: str) -> str:
    """The body of the first Markdown code fence in ``text``, else ``text`` itself, stripped.

    >>> strip_fence("Here:\\n```python\\n[f(a=1)]\\n```")
    '[f(a=1)]'
    """
    m = _FENCE.search(text)
    return (m.group(2) if m else text).strip()


def is_call_list(decoded: Any) -> bool:
    """True for the official call shape: a list of one-key dicts whose value is a dict."""
    if type(decoded) is not list:
        return False
    for item in decoded:
        if type(item) is not dict or len(item) != 1:
            return False
        if type(next(iter(item.values()))) is not dict:
            return False
    return True


def has_call(decoded: Decoded) -> bool:
    """BFCL's relevance notion: decoding succeeded and yielded at least one call.

    (A result that is not in the call shape, ``[]`` and ``[{}]`` count as no call.)
    """
    calls = decoded.calls
    if decoded.error is not None or calls is None or not is_call_list(calls):
        return False
    return not (len(calls) == 0 or (len(calls) == 1 and len(calls[0]) == 0))


# ---- JSON (function-calling) format -----------------------------------------------------------
_ARG_KEYS = ("arguments", "parameters", "args")


def _json_item(item: Any) -> Any:
    """One FC item as ``{name: args}``; shapes that are not calls are returned unchanged."""
    if not isinstance(item, dict):
        return item
    if set(item) <= {"type", "function", "id"} and isinstance(item.get("function"), dict):
        item = item["function"]  # OpenAI tool_call wrapper
    name = item.get("name")
    if isinstance(name, str) and set(item) - {"name", "id", "type"} <= set(_ARG_KEYS):
        args: Any = {}
        for key in _ARG_KEYS:
            if key in item:
                args = item[key]
                break
        return {name: _json_args(args)}
    if len(item) == 1:
        key, value = next(iter(item.items()))
        return {key: _json_args(value)}
    return item


def _json_args(args: Any) -> Any:
    if isinstance(args, str):
        try:
            return json.loads(args)
        except (ValueError, RecursionError) as exc:
            raise DecodeError(f"arguments are not JSON: {exc}") from None
    return args


def _try_json(text: str) -> Decoded | None:
    """The FC reading of ``text`` if it is JSON shaped like calls, else ``None``."""
    body = strip_fence(text)
    if not body or body[0] not in "[{":
        return None
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(obj, dict):
        obj = [obj]
    if not isinstance(obj, list) or not obj or not all(isinstance(x, dict) for x in obj):
        return None
    try:
        calls = [_json_item(x) for x in obj]
    except DecodeError as exc:
        return Decoded(None, FC, DECODER_FAILED, str(exc))
    if not is_call_list(calls):
        return Decoded(calls, FC, WRONG_FORMAT, "the JSON is not a list of {name: {arguments}} calls")
    return Decoded(calls, FC)


def value_prediction(value: Any) -> str:
    """A prediction given as a JSON value rather than a string, as ``read_predictions`` passes a
    line whose ``result`` is a list, an object, a number ...: its JSON text, marked as a value.

    >>> value_prediction([{"f": "{}"}])
    '[{"f": "{}"}]'
    """
    return JSONValueText(json.dumps(value, ensure_ascii=False))


def fc_value(raw: str) -> Any:
    """An FC result as BFCL's result file holds it: a prediction given as a JSON value
    (:func:`value_prediction`, e.g. the list of calls) is that value; a string is the model's
    text reply, kept as text even when it looks like JSON."""
    if isinstance(raw, JSONValueText):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw


def _decode_fc_official(raw: str) -> Decoded:
    """BFCL's FC decoder: for each item of the result, its first key is the function name and the
    value under it the arguments as JSON text. Iterating a text reply yields characters, which
    fail (an empty text yields no call); so does an item that is not an object, an empty object,
    or arguments that are not JSON text (an object, a list ...)."""
    calls: list[Any] = []
    try:
        for item in fc_value(raw):
            if type(item) is not dict:
                raise DecodeError(f"a call is a {type(item).__name__}, not an object")
            if not item:
                raise DecodeError("a call is an empty object")
            name = next(iter(item))
            args = item[name]
            if not isinstance(args, str):
                raise DecodeError(f"the arguments of {name!r} are a {type(args).__name__}, not JSON text")
            calls.append({name: json.loads(args)})
    except (DecodeError, ValueError, RecursionError) as exc:
        return Decoded(None, FC, DECODER_FAILED, f"{type(exc).__name__}: {exc}")
    if not is_call_list(calls):
        return Decoded(calls, FC, WRONG_FORMAT, "the arguments of a call are not a JSON object")
    return Decoded(calls, FC)


# ---- Python (prompt) format -------------------------------------------------------------------
def _wrap(text: str) -> str:
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    return text.strip().strip("'")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float, complex)) and not isinstance(v, bool)


def _constant(v: Any) -> Any:
    """A literal's value; an integer literal too large to print (a 4,300+-digit hexadecimal
    literal parses) is refused."""
    if isinstance(v, int) and v.bit_length() > _MAX_INT_BITS:
        raise DecodeError("integer literal too large")
    return v


class _Folder:
    """Folds constant arithmetic (what the official decoder gets from ``eval``) without eval,
    within a :class:`FoldBudget` (so ``"x"*99999 + "x"*99999 + ...`` stops at once instead of
    copying ever longer strings) and the power, shift and format-width limits below."""

    def __init__(self) -> None:
        self.budget = FoldBudget(_MAX_REPEAT, _MAX_FOLDED, _MAX_INT_BITS)

    def fold(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float, complex, str, bytes)):
                return _constant(node.value)
            raise DecodeError(f"cannot fold {node.value!r}")
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.fold(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.UnaryOp):
            v = self.fold(node.operand)
            if isinstance(node.op, ast.USub) and _number(v):
                return -v
            if isinstance(node.op, ast.UAdd) and _number(v):
                return +v
            if isinstance(node.op, ast.Not) and isinstance(v, bool):
                return not v
            raise DecodeError("unsupported unary operation")
        if isinstance(node, ast.BinOp):
            a, b = self.fold(node.left), self.fold(node.right)
            return self.binop(node.op, a, b)
        raise DecodeError(f"cannot fold {type(node).__name__}")

    def binop(self, op: ast.operator, a: Any, b: Any) -> Any:
        if (
            isinstance(op, ast.Pow)
            and isinstance(a, int)
            and isinstance(b, int)
            and b > 0
            and abs(a) > 1
            and b * int(abs(a)).bit_length() > _MAX_POW_BITS
        ):
            raise DecodeError("power too large")
        if isinstance(op, ast.Pow) and isinstance(b, (int, float)) and abs(b) > 10_000:
            raise DecodeError("power too large")
        seqs = (str, bytes, list, tuple)
        weigh = self.budget.weight
        if isinstance(op, ast.Mult):
            for seq, n in ((a, b), (b, a)):
                if isinstance(seq, seqs) and isinstance(n, int):
                    self.budget.check(max(n, 0) * weigh(seq))
        if isinstance(op, ast.Add) and isinstance(a, seqs) and isinstance(b, seqs):
            self.budget.check(weigh(a) + weigh(b))
        if (
            isinstance(op, ast.Mod)
            and isinstance(a, (str, bytes))
            and _WIDE_FORMAT.search(a if isinstance(a, str) else a.decode("latin-1"))
        ):
            raise DecodeError("format width too large")
        if isinstance(op, (ast.LShift, ast.RShift)) and isinstance(b, int) and b > _MAX_POW_BITS:
            raise DecodeError("shift too large")
        if (
            isinstance(op, ast.Mult)
            and isinstance(a, int)
            and isinstance(b, int)
            and a.bit_length() + b.bit_length() > _MAX_INT_BITS
        ):
            raise DecodeError("product too large")
        fn = _OPS.get(type(op))
        if fn is None:
            raise DecodeError(f"unsupported operator {type(op).__name__}")
        try:
            value = fn(a, b)
        except Exception as exc:  # noqa: BLE001 - TypeError, ZeroDivisionError, OverflowError ...
            raise DecodeError(f"{type(exc).__name__}: {exc}") from None
        return self.budget.keep(value)


# a %-format whose width or precision is given by an argument (*) or has 5+ digits
_WIDE_FORMAT = re.compile(r"%[^a-zA-Z%]*(?:\*|\d{5})")


_OPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}


class _PyReader:
    """Reads calls and values out of a parsed Python expression (mode-dependent)."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.problems: list[tuple[str, str]] = []
        self._folder: _Folder | None = None

    @property
    def folder(self) -> _Folder:
        """One fold budget for the whole output (made when something is folded)."""
        if self._folder is None:
            self._folder = _Folder()
        return self._folder

    def call(self, node: ast.Call, top: bool) -> dict[str, dict[Any, Any]]:
        parts: list[str] = []
        func: ast.AST = node.func
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if isinstance(func, ast.Name):
            parts.append(func.id)
        name = ".".join(reversed(parts))
        args: dict[Any, Any] = {}
        for kw in node.keywords:
            if self.strict and top and kw.arg in args:
                self.problems.append((REPEATED, f"{name}: keyword {kw.arg!r} given twice"))
            args[kw.arg] = self.value(kw.value)
        if self.strict and top:
            if node.args:
                why = f"{name}: {len(node.args)} positional argument(s); the format takes keyword arguments only"
                self.problems.append((POSITIONAL, why))
            if any(kw.arg is None for kw in node.keywords):
                self.problems.append((UNPACKING, f"{name}: **mapping unpacking instead of keyword arguments"))
        return {name: args}

    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return "..." if node.value is Ellipsis else _constant(node.value)
        if isinstance(node, ast.UnaryOp):
            if self.strict:
                return self.folder.fold(node)
            operand = node.operand
            if not isinstance(operand, ast.Constant):
                raise DecodeError("unary operator on a non-constant")
            # any constant: one that cannot be negated raises the TypeError caught below
            constant: Any = operand.value
            try:
                return -constant  # the official decoder negates whatever the operator
            except TypeError as exc:
                raise DecodeError(str(exc)) from None
        if isinstance(node, ast.List):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self.value(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values):
                if k is None:
                    raise DecodeError("** unpacking inside a dict")
                key = self.value(k)
                try:
                    out[key] = self.value(v)
                except TypeError as exc:  # unhashable key
                    raise DecodeError(str(exc)) from None
            return out
        if isinstance(node, ast.BinOp):
            return self.folder.fold(node)
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Call):
            return ast.unparse(node) if not node.keywords else self.call(node, top=False)
        if isinstance(node, ast.Subscript):
            return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
        raise DecodeError(f"unsupported value {type(node).__name__}")


def _decode_python(raw: str, strict: bool) -> Decoded:
    text = strip_fence(raw).strip("`\n \t\r") if strict else raw.strip("`\n ")
    try:
        tree = ast.parse(_wrap(text), filename=MODEL_OUTPUT, mode="eval")
        reader = _PyReader(strict)
        body = tree.body
        if isinstance(body, ast.Call):
            calls = [reader.call(body, top=True)]
        else:
            elts = getattr(body, "elts", None)
            if elts is None:
                raise DecodeError(f"expected a list of calls, got {type(body).__name__}")
            calls = []
            for elem in elts:
                if not isinstance(elem, ast.Call):
                    raise DecodeError(f"list item is a {type(elem).__name__}, not a call")
                calls.append(reader.call(elem, top=True))
    except Exception as exc:  # noqa: BLE001 - SyntaxError, ValueError, RecursionError, MemoryError ...
        return Decoded(None, PROMPT, DECODER_FAILED, f"{type(exc).__name__}: {exc}")
    return Decoded(calls, PROMPT, problems=reader.problems)


def decode(raw: Any, rules: BFCLRules = STRICT, fmt: str = PROMPT) -> Decoded:
    """Decode one raw model output; never raises.

    With ``rules.declared_decoder_only`` (official): with BFCL's decoder of ``fmt`` only. Else JSON
    call shapes as FC, anything else as the prompt format, whatever ``fmt`` says.
    """
    if not isinstance(raw, str):
        try:
            raw = value_prediction(raw)
        except Exception:  # noqa: BLE001
            raw = str(raw)
    official = rules.declared_decoder_only
    try:
        if official:
            if fmt == FC:
                return _decode_fc_official(raw)
            if isinstance(raw, JSONValueText):  # the prompt decoder strips text: a list or number raises
                return Decoded(None, PROMPT, DECODER_FAILED, "a prompt-format result is text, not a JSON value")
            return _decode_python(raw, False)
        as_json = _try_json(raw)
        if as_json is not None:
            return as_json
        return _decode_python(raw, True)
    except Exception as exc:  # noqa: BLE001 - last line of defence: decoding must not raise
        return Decoded(None, fmt if official else PROMPT, DECODER_FAILED, f"{type(exc).__name__}: {exc}")


def is_finite_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
