"""Parsing T-Eval model responses (both modes). Pure functions; nothing here raises on model text
except :class:`ResponseError`, which the scorers turn into a zero score, and ``TooDeep`` for a value
nested deeper than :data:`~benchsmith.eval.budget.MAX_DEPTH` (a ``too_deep`` record)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from string import Formatter
from typing import Any

from benchsmith.eval.budget import MODEL_OUTPUT, TooDeep, check_value
from benchsmith.models import ParseError as _ReplyError

from ._rules import TEvalRules

FINISH = "FinishAction"


class ResponseError(_ReplyError):
    """The response cannot be read in the requested format (a :class:`benchsmith.models.ParseError`
    with the code ``unreadable``)."""

    def __init__(self, reason: str) -> None:
        super().__init__("unreadable", reason)


def load_response(raw: Any, start: str = "", end: str = "") -> Any:
    """T-Eval's lenient loader: keep the text after a ```json fence, optionally cut from the first
    ``start`` to the last ``end`` character, then try a Python literal, JSON, and JSON with
    single quotes turned into double quotes. Non-strings are returned as they are."""
    if not isinstance(raw, str):
        return raw
    text = raw
    if "```json" in text:
        text = text[text.find("```json") + len("```json") :].strip("`")
    if start:
        text = text[text.find(start) :]  # as the original: a missing start keeps the last character
    if end:
        text = text[: text.rfind(end) + len(end)]
    value = _read_value(text)
    check_value(value, text)  # within the record's budget (nesting depth, string length) and MAX_DEPTH (else TooDeep)
    if len(text) > _MIN_HUGE_INT_CHARS:
        _refuse_huge_ints(value)
    return value


_MAX_INT_BITS = 14_000  # about 4,200 digits: str() of a larger int raises ValueError
_MIN_HUGE_INT_CHARS = 3_000  # a shorter text holds no such literal (hexadecimal: 3,500 digits)


def _refuse_huge_ints(value: Any) -> None:
    """ResponseError for an integer too large to print (a 4,300+-digit hexadecimal literal parses)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, int) and v.bit_length() > _MAX_INT_BITS:
            raise ResponseError("a number too large to print")
        if isinstance(v, dict):
            stack.extend(v)
            stack.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend(v)


def _literal(text: str) -> Any:
    """``ast.literal_eval(text)``, parsed under the model-output file name (whose parser warnings
    are not shown)."""
    return ast.literal_eval(ast.parse(text.lstrip(" \t"), filename=MODEL_OUTPUT, mode="eval"))


def _read_value(text: str) -> Any:
    try:
        return _literal(text)
    except Exception:  # noqa: BLE001 - any failure means "try the next reading" (also RecursionError)
        pass
    try:
        return json.loads(text)
    except Exception:  # noqa: BLE001
        pass
    try:
        return json.loads(text.replace("'", '"'))
    except Exception:  # noqa: BLE001
        raise ResponseError("neither a Python literal nor JSON") from None


def literal_args(text: str, literal_only: bool) -> dict[str, Any]:
    """Arguments written after a string-format marker: a Python literal only (``literal_only``,
    as T-Eval) or any reading of :func:`load_response`; anything but a dict becomes ``{}``."""
    try:
        value = _literal(text.strip()) if literal_only else load_response(text.strip())
        if literal_only:
            check_value(value, text)  # as load_response does
            if len(text) > _MIN_HUGE_INT_CHARS:
                _refuse_huge_ints(value)
    except TooDeep:
        raise  # not a reading that failed: a value no scorer walks (a too_deep record)
    except Exception:  # noqa: BLE001
        return {}
    return value if isinstance(value, dict) else {}


# ---- instruct: string templates ---------------------------------------------------------------
STRING_FIELDS = ("thought", "action", "args")


def string_template(template: dict[str, Any]) -> str:
    parts = []
    for field in STRING_FIELDS:
        parts.append(f"{template.get(f'{field}_start', '')}{{{field}}}{template.get(f'{field}_end', '')}")
    return "".join(parts)


class TemplateError(ResponseError):
    """The template cannot be used as a regular expression (T-Eval's evaluator raises here and stops)."""


def parse_template(template: str, text: str, as_regex: bool) -> dict[str, Any] | None:
    """Match ``text`` against a ``{field}`` template; None when it does not match.

    ``as_regex`` (as T-Eval): the template's literal text is used as a regular expression as it is
    (so regex characters in it act as operators, and extra groups shift the fields) and any match
    anywhere counts; a template that is not a format string or not a regular expression raises
    :class:`TemplateError`, where T-Eval's evaluator crashes. Else the literal text is escaped
    first (an unusable template is None). Both: each field is ``(.*)`` with DOTALL. A pattern
    whose literal parts hold no regex operator is matched by :func:`first_match` (linear time);
    :mod:`re` backtracks cubically on such patterns (36 s for 22 kB)."""
    keys: list[str] = []
    literals: list[str] = []
    try:
        for literal, field, _, _ in Formatter().parse(template):
            literals.append(literal)
            if field is not None:
                keys.append(field)
    except ValueError as exc:
        if not as_regex:
            return None
        raise TemplateError(
            f"the official evaluator crashes on this template (string.Formatter: {exc}); scored 0"
        ) from None
    if not as_regex:  # the literals, escaped, with a group after each of the first len(keys) of them
        parts = [""]
        for i, literal in enumerate(literals):
            parts[-1] += literal
            if i < len(keys):
                parts.append("")
        return _fields(keys, first_match(parts, text))
    pattern = template
    for k in keys:
        pattern = pattern.replace("{" + k + "}", "(.*)")
    parts = pattern.split("(.*)")
    if not any(_REGEX_OPERATOR.search(p) for p in parts):
        return _fields(keys, first_match(parts, text))
    try:
        found = re.findall(pattern, text, re.DOTALL)
    except re.error as exc:
        raise TemplateError(f"the official evaluator crashes on this template (re.error: {exc}); scored 0") from None
    except RecursionError:
        return None
    return _fields(keys, found)


_REGEX_OPERATOR = re.compile(r"[()\[\]{}?*+|^$\\.]")


def first_match(parts: list[str], text: str) -> list[tuple[str, ...]]:
    """The groups of the first match of ``P0(.*)P1(.*)...Pk`` (each ``Pi`` literal text) in
    ``text`` with DOTALL, as ``re.findall(...)[:1]`` gives them, in linear time.

    The leftmost match starts at the first ``P0`` (if any match exists, one starts there); the
    greedy groups then end at the last ``P1`` that still leaves room for the rest, and each
    later group at the last occurrence of its literal that leaves room for the literals after it."""
    start = text.find(parts[0])
    if start < 0:
        return []
    k = len(parts) - 1
    if k == 0:
        return [()]
    latest = [0] * (k + 1)  # latest[j]: the last start of parts[j] with the later parts still after it
    end = len(text)
    for j in range(k, 1, -1):
        end = text.rfind(parts[j], 0, end)
        if end < 0:
            return []
        latest[j] = end
    first = text.rfind(parts[1], start + len(parts[0]), latest[2] if k > 1 else len(text))
    if first < 0:
        return []
    latest[1] = first
    groups = [text[start + len(parts[0]) : first]]
    for j in range(2, k + 1):
        groups.append(text[latest[j - 1] + len(parts[j - 1]) : latest[j]])
    return [tuple(groups)]


def _fields(keys: list[str], found: list[Any]) -> dict[str, Any] | None:
    if not found:
        return None
    first = found[0] if isinstance(found[0], tuple) else (found[0],)
    out: dict[str, Any] = {}
    for k, v in zip(keys, first):
        if k in out:
            out[k] = (out[k] if isinstance(out[k], list) else [out[k]]) + [v]
        else:
            out[k] = v
    return out


def parse_markers(template: dict[str, Any], text: str) -> dict[str, Any] | None:
    """Strict reading of a string-format response: the template's start/end markers taken
    literally (braces and regex characters included), each field ``(.*)`` with DOTALL."""
    parts = [""]
    for f in STRING_FIELDS:
        parts[-1] += str(template.get(f"{f}_start", ""))
        parts.append(str(template.get(f"{f}_end", "")))
    return _fields(list(STRING_FIELDS), first_match(parts, text))


# ---- plan ------------------------------------------------------------------------------------
def plan_from_json(raw: Any) -> list[dict[str, Any]]:
    """Steps ``{name: str, id: int, args: str}`` sorted by id; ResponseError when unreadable."""
    data = load_response(raw, "[", "]")
    if not isinstance(data, list):
        raise ResponseError("the plan is not a list")
    steps = []
    for item in data:
        try:
            steps.append({"name": str(item["name"]), "id": int(item["id"]), "args": str(item["args"])})
        except Exception:  # noqa: BLE001
            raise ResponseError("a plan step lacks name, id or args") from None
    if not steps:
        raise ResponseError("the plan is empty")
    return sorted(steps, key=lambda s: s["id"])


_LEAD = re.compile(r"^\s*(?:with|using|to)?\s*[:,\-]?\s*", re.IGNORECASE)


def plan_from_text(raw: str, api_list: Iterable[str], rules: TEvalRules) -> list[dict[str, Any]]:
    """One step per fragment (split on '. ' and newlines) that names an API of ``api_list``.

    The API found earliest wins; a tie goes to the first in the list, as T-Eval (so ``filter_data``
    wins over ``filter_data_any``), or with ``rules.plan_ties_to_longest_name`` to the longest name.
    The step's args are the whole fragment, as T-Eval, or with ``rules.plan_args_after_name`` the
    text after the name (a leading "with"/"using"/"to" dropped), so a step without arguments can
    match "{}"."""
    apis = [a for a in api_list if isinstance(a, str) and a]
    steps: list[dict[str, Any]] = []
    for fragment in raw.replace(". ", "\n").split("\n"):
        best, best_at = "", None
        for api in apis:
            at = fragment.find(api)
            if at == -1:
                continue
            longer = rules.plan_ties_to_longest_name and at == best_at and len(api) > len(best)
            if best_at is None or at < best_at or longer:
                best, best_at = api, at
        if best:
            args = fragment
            if rules.plan_args_after_name:  # only what follows the API name: the name is not an argument
                args = _LEAD.sub("", fragment[(best_at or 0) + len(best) :]).strip()
            steps.append({"id": len(steps), "name": best, "args": args})
    if not steps:
        raise ResponseError("no step names an API of the list")
    return steps


def drop_finish(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return steps[:-1] if steps and steps[-1]["name"] == FINISH else steps


# ---- reason / retrieve / understand (json) ----------------------------------------------------
def rru_from_json(raw: Any) -> dict[str, Any]:
    """``{thought: str, name: str, args: dict}``; missing keys read as '' / {}."""
    data = load_response(raw, "{", "}")
    if not isinstance(data, dict):
        raise ResponseError("the response is not an object")
    out: dict[str, Any] = {"thought": str(data.get("thought", "")), "name": str(data.get("name", ""))}
    args = data.get("args", {})
    out["args"] = args if isinstance(args, dict) else {}
    return out


# a match starts where a word starts (a word inside a longer one could only match from the word's
# start, which findall tries first): the same matches as r"\w+\.\w+" without its quadratic
# retries inside long words
_DOTTED = re.compile(r"(?<!\w)\w+\.\w+")


def other_api_names(text: str) -> list[str]:
    """Every ``X.y`` name and ``FinishAction`` mentioned in ``text``."""
    return _DOTTED.findall(text) + re.findall(FINISH, text)


# ---- review ----------------------------------------------------------------------------------
REVIEW_LETTERS = "ABCDE"


def review_letter(raw: str, fullwidth_colon: bool) -> str:
    """The option letter after the first colon: ASCII ':' only, as T-Eval, or with
    ``fullwidth_colon`` the first of ':' and '：'."""
    if fullwidth_colon:
        positions = [p for p in (raw.find(":"), raw.find("：")) if p != -1]
        cut = min(positions) if positions else -1
    else:
        cut = raw.find(":")
    rest = raw[cut + 1 :].strip()
    if rest and rest[0] in REVIEW_LETTERS:
        return rest[0]
    raise ResponseError("no option letter A-E after the colon")
