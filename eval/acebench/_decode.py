"""Decoding ACEBench's native output format, ``[Api(k='v'), ...]``, with :mod:`ast` (never ``eval``).

Two decoders:

* :func:`decode_official` mirrors the official pipeline: every whitespace character of the raw
  output is deleted first, the text must parse as a Python list/tuple whose elements are all
  calls; keyword arguments only (positional ones are dropped); a bare name becomes its own
  string, a unary operator always negates its operand, arithmetic on constants is folded.
* :func:`decode_strict` keeps whitespace, accepts one bare call as well as a list of calls,
  and only literal values (strings, numbers, booleans, None, lists, tuples, dicts, signed
  numbers); bare names, positional arguments and anything else are a format error.

Both raise :class:`DecodeError` for anything they refuse, never another exception.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import operator
import warnings
from collections.abc import Iterator
from typing import Any

from benchsmith.eval.budget import FoldBudget, FoldLimit
from benchsmith.models import ParseError as _ReplyError

MAX_CHARS = 200_000  # longer outputs are refused rather than parsed
MAX_INT_BITS = 14_000  # larger integer literals (a 4,300+-digit hexadecimal literal parses) are refused


class DecodeError(_ReplyError):
    """The output is not a list of calls (a :class:`benchsmith.models.ParseError` with the code
    ``decoder_failed``)."""

    def __init__(self, reason: str) -> None:
        super().__init__("decoder_failed", reason)


Call = dict[str, dict[str, Any]]  # {name: {arg: value}}

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


# the fold budget of the output being decoded (one per decode call; see FoldBudget)
_FOLDS: contextvars.ContextVar[FoldBudget | None] = contextvars.ContextVar("acebench_folds", default=None)


@contextlib.contextmanager
def _fold_budget() -> Iterator[None]:
    token = _FOLDS.set(FoldBudget())
    try:
        yield
    finally:
        _FOLDS.reset(token)


def _constant(v: Any) -> Any:
    if isinstance(v, int) and v.bit_length() > MAX_INT_BITS:
        raise DecodeError("integer literal too large")
    return v


def _fold(op: ast.operator, left: Any, right: Any) -> Any:
    """Constant folding of one arithmetic node, with size limits (no ``eval``): besides the
    limits below, the values folded in one output stay within a :class:`FoldBudget` (so a chain
    ``"x"*9999 + "x"*9999 + ...`` stops at once instead of copying ever longer strings)."""
    try:
        return _fold_within(_FOLDS.get() or FoldBudget(), op, left, right)
    except FoldLimit as exc:
        raise DecodeError(str(exc)) from None


def _fold_within(budget: FoldBudget, op: ast.operator, left: Any, right: Any) -> Any:
    fn = _BINOPS.get(type(op))
    if fn is None:
        raise DecodeError(f"unsupported operator {type(op).__name__}")
    nums = (int, float)
    if (
        isinstance(left, nums)
        and isinstance(right, nums)
        and not isinstance(left, bool)
        and not isinstance(right, bool)
    ):
        if abs(left) > 1e15 or abs(right) > 1e15:
            raise DecodeError("number too large")
        try:
            return fn(left, right)
        except (ZeroDivisionError, OverflowError, ValueError) as exc:
            raise DecodeError(str(exc)) from None
    if isinstance(op, ast.Add) and isinstance(left, str) and isinstance(right, str):
        budget.check(budget.weight(left) + budget.weight(right))
        return budget.keep(left + right)
    if isinstance(op, ast.Add) and isinstance(left, list) and isinstance(right, list):
        budget.check(budget.weight(left) + budget.weight(right))
        return budget.keep(left + right)
    if (
        isinstance(op, ast.Mult)
        and isinstance(left, (str, list))
        and isinstance(right, int)
        and not isinstance(right, bool)
        and 0 <= right * max(len(left), 1) <= 10_000
    ):
        budget.check(right * budget.weight(left))
        return budget.keep(left * right)
    raise DecodeError("unsupported arithmetic operands")


# ---- official ---------------------------------------------------------------------------------
def _official_value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else _constant(node.value)
    if isinstance(node, ast.UnaryOp):
        # the official resolver negates whatever the operator is (``+5`` -> -5, ``not True`` -> -1)
        if not isinstance(node.operand, ast.Constant):
            raise DecodeError("unary operator on a non-constant")
        val = node.operand.value
        if not isinstance(val, (int, float, complex)):
            raise DecodeError("bad operand type for unary -")
        return -val
    if isinstance(node, ast.List):
        return [_official_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise DecodeError("dict unpacking")
            key = _official_value(k)
            try:
                out[key] = _official_value(v)
            except TypeError:
                raise DecodeError("unhashable dict key") from None
        return out
    if isinstance(node, ast.BinOp):
        return _fold(node.op, _official_value(node.left), _official_value(node.right))
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if not node.keywords:
            return {_dotted(node.func): {}}
        return _official_call(node)
    if isinstance(node, ast.Tuple):
        return tuple(_official_value(v) for v in node.elts)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise DecodeError(f"unsupported value {type(node).__name__}")


def _official_call(node: ast.Call) -> Call:
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise DecodeError("**kwargs")
        args[kw.arg] = _official_value(kw.value)
    return {_dotted(node.func): args}


def _parse(text: str) -> ast.Expression:
    if len(text) > MAX_CHARS:
        raise DecodeError("output too long")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for "1_a"
            return ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        raise DecodeError(f"not Python syntax: {type(exc).__name__}") from None


def decode_official(text: Any) -> list[Call]:
    """Decode like the official evaluator (whitespace deleted first; list of calls only)."""
    if not isinstance(text, str):
        raise DecodeError("output is not a string")
    squeezed = "".join(text.split())
    try:
        tree = _parse(squeezed)
        if not isinstance(tree.body, (ast.List, ast.Tuple)):
            raise DecodeError("not a list of calls")
        out = []
        with _fold_budget():
            for elem in tree.body.elts:
                if not isinstance(elem, ast.Call):
                    raise DecodeError("list element is not a call")
                out.append(_official_call(elem))
        return out
    except DecodeError:
        raise
    except (RecursionError, MemoryError, TypeError, ValueError, AttributeError) as exc:
        raise DecodeError(f"cannot decode: {type(exc).__name__}") from None


# ---- strict -----------------------------------------------------------------------------------
def _strict_value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis or isinstance(node.value, (bytes, complex)):
            raise DecodeError(f"unsupported literal {node.value!r}"[:80])
        return _constant(node.value)
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_strict_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise DecodeError("dict unpacking")
            key = _strict_value(k)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise DecodeError("unhashable dict key")
            out[key] = _strict_value(v)
        return out
    if isinstance(node, ast.BinOp):
        left, right = _strict_value(node.left), _strict_value(node.right)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (left, right)):
            raise DecodeError("arithmetic on non-numbers")
        return _fold(node.op, left, right)
    raise DecodeError(f"unsupported value {type(node).__name__}")


def _strict_call(node: ast.AST) -> Call:
    if not isinstance(node, ast.Call):
        raise DecodeError("list element is not a call")
    name = _dotted(node.func)
    if not name or not isinstance(node.func, (ast.Name, ast.Attribute)):
        raise DecodeError("call without a function name")
    if node.args:
        raise DecodeError(f"positional arguments in call to {name}")
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise DecodeError("**kwargs")
        if kw.arg in args:
            raise DecodeError(f"argument {kw.arg} given twice")
        args[kw.arg] = _strict_value(kw.value)
    return {name: args}


def decode_strict(text: Any) -> list[Call]:
    """Decode a list of calls (or one bare call) with literal values only."""
    if not isinstance(text, str):
        raise DecodeError("output is not a string")
    try:
        tree = _parse(text.strip())
        body = tree.body
        if isinstance(body, ast.Call):
            return [_strict_call(body)]
        if not isinstance(body, (ast.List, ast.Tuple)):
            raise DecodeError("not a list of calls")
        return [_strict_call(e) for e in body.elts]
    except DecodeError:
        raise
    except (RecursionError, MemoryError, TypeError, ValueError, AttributeError) as exc:
        raise DecodeError(f"cannot decode: {type(exc).__name__}") from None


# ---- writing calls back -----------------------------------------------------------------------
def format_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return repr(value)


def format_call(name: str, args: dict[str, Any]) -> str:
    return f"{name}(" + ", ".join(f"{k}={format_value(v)}" for k, v in args.items()) + ")"


def format_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    return "[" + ", ".join(format_call(n, a) for n, a in calls) + "]"


def official_agent_turn(text: Any) -> list[Call]:
    """One agent turn decoded like the benchmark's executor (brackets added, calls kept, the rest dropped)."""
    if not isinstance(text, str):
        raise DecodeError("turn is not a string")
    func = text.strip()
    if not func.startswith("["):
        func = "[" + func
    if not func.endswith("]"):
        func = func + "]"
    try:
        tree = _parse(func.strip("[]'"))
        body = tree.body
        with _fold_budget():
            if isinstance(body, ast.Call):
                return [_agent_call(body)]
            if isinstance(body, (ast.List, ast.Tuple)):
                return [_agent_call(e) for e in body.elts if isinstance(e, ast.Call)]
        return []
    except DecodeError:
        raise
    except (RecursionError, MemoryError, TypeError, ValueError, AttributeError) as exc:
        raise DecodeError(f"cannot decode: {type(exc).__name__}") from None


def _agent_call(node: ast.Call) -> Call:
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise DecodeError("**kwargs")
        val = kw.value
        if isinstance(val, ast.Call) and not val.keywords:
            args[kw.arg] = ast.unparse(val)
        else:
            args[kw.arg] = _official_value(val)
    return {_dotted(node.func): args}
