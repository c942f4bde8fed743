"""Pure GTA checks: read an assistant turn, run a call through GTA's executor rules (tools,
argument names, typed inputs), whitelist/blacklist answers, subjective answers by best cosine
over the references, per-category tool counts.

>>> whitelist_pass("The total is 42 dollars.", [["42", "forty-two"]], None)
True
>>> whitelist_pass("It is 42, not 24.", [["42"]], [["24"]])
False
>>> parse_turn('{"thought": "look", "tool_calls": [{"name": "OCR", "arguments": "{\\\\"image\\\\": \\\\"a.jpg\\\\"}"}]}')["tool_calls"]
[{'name': 'OCR', 'arguments': {'image': 'a.jpg'}}]
>>> specs = tool_specs([{"name": "Calculator", "inputs": [{"name": "expression", "type": "text"}]}])
>>> check_call({"name": "Calculator", "arguments": {"expr": "1+1"}}, specs), check_call({"name": "OCR", "arguments": {}}, specs)
('unknown_argument', 'unknown_tool')
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

from benchsmith.eval import EvalCase, Mode, RecordResult, failed, passed, scorer
from benchsmith.eval.budget import check_limit, check_value
from benchsmith.eval.calls import CallShapeError, tool_call_parts

from ._rules import OFFICIAL, RULES, STRICT, GTARules

TOOL_CATEGORIES: dict[str, str] = {
    "OCR": "perception",
    "ImageDescription": "perception",
    "RegionAttributeDescription": "perception",
    "TextToBbox": "perception",
    "DrawBox": "operation",
    "AddText": "operation",
    "GoogleSearch": "operation",
    "Calculator": "logic",
    "Solver": "logic",
    "Plot": "logic",
    "MathOCR": "logic",
    "CountGivenObject": "logic",
    "TextToImage": "creativity",
    "ImageStylization": "creativity",
}
CATEGORIES = ("perception", "operation", "logic", "creativity")
# AgentLego's input types (the keys GTA's tool metadata may use); the file-like ones must name an existing path
GTA_TYPES = ("text", "int", "float", "bool", "image", "audio", "video", "file")
FILE_TYPES = frozenset({"image", "audio", "video", "file"})
# tools whose arguments GTA's end-to-end "answer_acc_w_imggen" compares on image-generation samples
IMAGE_GEN_TOOLS = frozenset({"DrawBox", "AddText", "Plot", "TextToImage", "ImageStylization"})
# executor errors raised while reading the arguments: the step then keeps the raw text, not the arguments
ARGUMENT_ERRORS = frozenset({"bad_arguments", "unknown_argument", "missing_argument"})
_RETRIEVAL = re.compile(r"^(get|retrieve|list|search|find|fetch|read|lookup|query|load)(_|[A-Z]|$)")

Similarity = Callable[[str, str], float]
# input types by argument name, required argument names (JSON-friendly: cases may be saved and read back)
Spec = tuple[dict[str, str], tuple[str, ...]]


class TurnError(ValueError):
    """A prediction that is not an assistant turn; ``code`` becomes the record's error type."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


# ---- tools ----------------------------------------------------------------------------------------
def gta_category(name: str, declared: Any = None) -> str | None:
    """GTA's category of a tool: its 14 tools by name; any other tool by the category its data
    declares (one of the four), else None.

    >>> gta_category("OCR"), gta_category("filter_data", "logic"), gta_category("filter_data")
    ('perception', 'logic', None)
    """
    return TOOL_CATEGORIES.get(name) or (declared if declared in CATEGORIES else None)


def suggest_category(name: str) -> str:
    """The category derive/export declare for a tool: GTA's own for its 14 tools; ``perception``
    for tools that read data (names starting with get/retrieve/list/search/find/fetch/read/lookup/
    query/load); ``logic`` for the rest (they compute over their inputs, like Calculator).

    >>> suggest_category("TextToBbox"), suggest_category("get_unique_values"), suggest_category("sort_data")
    ('perception', 'perception', 'logic')
    """
    return TOOL_CATEGORIES.get(name) or ("perception" if _RETRIEVAL.match(name) else "logic")


def tool_specs(tools: Iterable[Any], toolmeta: Mapping[str, Any] | None = None) -> dict[str, Spec]:
    """``{tool name: (input types, required inputs)}`` of a sample's tools, read from the tool
    metadata file when it lists the tool (GTA's executor reads that file), else from the sample.
    An input is required unless ``optional`` is true; an unknown type accepts any value."""
    specs: dict[str, Spec] = {}
    for tool in tools or []:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        meta = (toolmeta or {}).get(tool["name"]) or tool
        types: dict[str, str] = {}
        required = set()
        for inp in meta.get("inputs") or [] if isinstance(meta, dict) else []:
            if not isinstance(inp, dict) or not isinstance(inp.get("name"), str):
                continue
            types[inp["name"]] = str(inp.get("type") or "text")
            if not inp.get("optional"):
                required.add(inp["name"])
        specs[tool["name"]] = (types, tuple(sorted(required)))
    return specs


_PATH_MAX = 4096  # a longer value is no path (and is not kept in the cache below)


def _path_exists(root: str, value: str) -> bool:
    return len(value) <= _PATH_MAX and _cached_path_exists(root, value)


@lru_cache(maxsize=8192)
def _cached_path_exists(root: str, value: str) -> bool:
    return os.path.exists(os.path.join(root, value))


def _converts(value: Any, kind: str, root: str) -> bool:
    """Whether AgentLego's input parser accepts ``value`` for an input of ``kind``: it keeps a
    value of the right Python type and otherwise calls the type on it (``int("7")`` works,
    ``int("seven")`` does not; any value becomes text or a bool); file-like inputs need a path
    that exists (relative paths are taken from the data folder)."""
    if kind in ("int", "float"):
        cast = int if kind == "int" else float
        if isinstance(value, cast):
            return True
        try:
            cast(value)
        except (TypeError, ValueError, OverflowError):
            return False
        return True
    if kind in FILE_TYPES:
        return isinstance(value, str) and _path_exists(root, value)
    return True


def check_call(call: Mapping[str, Any], specs: Mapping[str, Spec], root: str = "") -> str | None:
    """The error GTA's executor raises on this call, or None when it runs: ``unknown_tool`` (not
    among the case's tools), ``bad_arguments`` (not a JSON object), ``unknown_argument``,
    ``missing_argument`` (a required input absent), ``bad_value`` (a value its input's type
    cannot take)."""
    spec = specs.get(call["name"])
    if spec is None:
        return "unknown_tool"
    args = call["arguments"]
    if not isinstance(args, dict):
        return "bad_arguments"
    types, required = spec
    if any(k not in types for k in args):
        return "unknown_argument"
    if any(r not in args for r in required):
        return "missing_argument"
    if any(not _converts(v, types[k], root) for k, v in args.items()):
        return "bad_value"
    return None


def executed_arguments(call: Mapping[str, Any], error: str | None) -> Any:
    """The arguments GTA's step record keeps after running the call: none when they could not be
    read (the raw text is kept), the ``inputs`` value when a failing call had an input of that name
    (the executor's fallback), else the arguments as given."""
    if error in ARGUMENT_ERRORS or error == "unknown_tool":
        return None
    args = call["arguments"]
    if error is not None and isinstance(args, dict) and "inputs" in args:
        return args["inputs"]
    return args


# ---- parsing ------------------------------------------------------------------------------------
def norm_call(item: Any) -> dict[str, Any]:
    """``{"name", "arguments"}`` from a GTA / OpenAI tool-call entry (arguments may be JSON text)."""
    try:
        name, args, _ = tool_call_parts(item)
    except CallShapeError as exc:
        raise TurnError("malformed_call", str(exc)) from None
    return {"name": name, "arguments": args}


def read_call(item: Any) -> dict[str, Any]:
    """A predicted call as GTA's ReAct parser reads it: the name (stripped) and the arguments,
    ``None`` when they are not a JSON object (the executor then fails the call, but the tool was
    still chosen). Raises :class:`TurnError` on an entry without a name."""
    if not isinstance(item, dict):
        raise TurnError("malformed_call", f"a tool call is a {type(item).__name__}, not an object")
    entry = (
        {**item["function"], **{k: v for k, v in item.items() if k != "function"}}
        if isinstance(item.get("function"), dict)
        else item
    )
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise TurnError("malformed_call", "a tool call has no name")
    args = entry.get("arguments", {})
    if args is None:
        args = {}
    if isinstance(args, str):
        args = _json(args) if args.strip() else {}
        check_value(args, entry["arguments"])
    return {"name": name.strip(), "arguments": args if isinstance(args, dict) else None}


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or a number of 4,300+ digits (as loads_json)
        return None


def _read_prediction(prediction: Any) -> Any:
    """The JSON value of a prediction (None: not JSON), within the record's budget."""
    if not isinstance(prediction, str):
        return prediction
    obj = _json(prediction)
    check_value(obj, prediction)
    return obj


def parse_turn(prediction: str, rules: GTARules = STRICT) -> dict[str, Any]:
    """An assistant turn: ``{"kind": "tool"|"answer", "tool_calls", "content", "thought"}``.

    A JSON object ``{thought, tool_calls}`` is a tool turn, ``{thought, content}`` an answer;
    any text that is not a JSON object is an answer with that text. With ``first_call_only``
    (official) only the first call is read (a ReAct step holds one action). Raises
    :class:`TurnError` on a JSON object whose (read) calls are malformed or that has neither calls
    nor content.
    """
    obj = _read_prediction(prediction)
    if isinstance(obj, str):  # a JSON string holding the turn
        inner = _read_prediction(obj)
        obj = inner if isinstance(inner, dict) else obj
    if not isinstance(obj, dict):
        return {
            "kind": "answer",
            "tool_calls": [],
            "content": prediction if isinstance(prediction, str) else "",
            "thought": None,
        }
    calls = obj.get("tool_calls")
    if calls not in (None, []):
        if not isinstance(calls, list):
            raise TurnError("malformed_call", "tool_calls is not a list")
        check_limit("calls", len(calls))
        read = [read_call(calls[0])] if rules.first_call_only else [read_call(c) for c in calls]
        return {"kind": "tool", "tool_calls": read, "content": None, "thought": obj.get("thought")}
    content = obj.get("content", obj.get("answer"))
    if content is None:
        raise TurnError("empty_turn", "the turn has neither tool_calls nor content")
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    return {"kind": "answer", "tool_calls": [], "content": content, "thought": obj.get("thought")}


def parse_final(prediction: str, rules: GTARules = STRICT) -> tuple[str, list[dict[str, Any]]]:
    """End-to-end prediction: (final answer text, the tool calls made).

    Accepted: ``{"answer"|"content": text, "tool_calls": [...]}`` (each call one step), a list of
    chat messages, or plain text (an answer without calls). In a message list the answer is the
    content of the last message when that message is an assistant answer (no calls); a trajectory
    that ends on a call or a tool return has no answer. With ``first_call_only`` (official) only the
    first call of a message is read (a ReAct step holds one action).
    """
    obj = _read_prediction(prediction)
    if isinstance(obj, dict):
        listed = obj.get("tool_calls") or []
        if not isinstance(listed, list):
            raise TurnError("malformed_call", "tool_calls is not a list")
        check_limit("calls", len(listed))
        answer = obj.get("answer", obj.get("content"))
        if answer is not None and not isinstance(answer, str):
            answer = json.dumps(answer, ensure_ascii=False)
        return answer or "", [read_call(c) for c in listed]
    if isinstance(obj, list):
        check_limit("calls", len(obj))
        calls: list[dict[str, Any]] = []
        answer = ""
        for msg in obj:
            if not isinstance(msg, dict):
                raise TurnError("malformed_trajectory", "a message of the trajectory is not an object")
            answer = ""
            if msg.get("role", "assistant") != "assistant":
                continue
            tc = msg.get("tool_calls") or []
            if not isinstance(tc, list):
                raise TurnError("malformed_call", "tool_calls is not a list")
            if tc:
                calls.extend([read_call(tc[0])] if rules.first_call_only else [read_call(c) for c in tc])
                check_limit("calls", len(calls))
            elif isinstance(msg.get("content"), str):
                answer = msg["content"]
        return answer, calls
    return (prediction if isinstance(prediction, str) else ""), []


# ---- answers ------------------------------------------------------------------------------------
def _groups(value: Any, rules: GTARules) -> list[list[str]]:
    """Alias groups. ``empty_aliases_match`` (official) keeps empty aliases (``\\b(?:|x)\\b``
    matches at any word boundary, as in GTA's pattern); strict drops them and empty groups."""
    if not value:
        return []
    out = []
    for g in value:
        if isinstance(g, (list, tuple)):
            out.append([str(a) for a in g if rules.empty_aliases_match or str(a)])
        elif g is not None and str(g):
            out.append([str(g)])
    return out if rules.empty_aliases_match else [g for g in out if g]


def _pattern(aliases: Sequence[str], rules: GTARules) -> re.Pattern[str]:
    alt = "|".join(re.escape(a) for a in aliases)
    if rules.word_boundaries:  # as GTA writes them (never match before '$', after '%', ...)
        return re.compile(rf"\b(?:{alt})\b", re.IGNORECASE)
    return re.compile(rf"(?<!\w)(?:{alt})(?!\w)", re.IGNORECASE)


_COMPILED: dict[tuple[int, int, GTARules], tuple[Any, Any, list[re.Pattern[str]] | None, re.Pattern[str] | None]] = {}


def _compiled(
    whitelist: Any, blacklist: Any, rules: GTARules
) -> tuple[list[re.Pattern[str]] | None, re.Pattern[str] | None]:
    """The whitelist patterns (None: no group) and the blacklist pattern, compiled once per
    answer object (the cases of a sample share it)."""
    key = (id(whitelist), id(blacklist), rules)
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is whitelist and hit[1] is blacklist:
        return hit[2], hit[3]
    groups = _groups(whitelist, rules)
    black = _groups(blacklist, rules)
    white = [_pattern(g, rules) for g in groups] if groups or rules.empty_whitelist_passes else None
    pattern = _pattern([a for g in black for a in g], rules) if black else None
    if len(_COMPILED) > 50_000:
        _COMPILED.clear()
    _COMPILED[key] = (whitelist, blacklist, white, pattern)
    return white, pattern


def whitelist_pass(text: str, whitelist: Any, blacklist: Any, rules: GTARules = OFFICIAL) -> bool:
    """Every whitelist group matches (any alias, whole word, case-insensitive) and no blacklist
    alias does. Strict uses "no word character around" instead of ``\\b`` (``word_boundaries``)
    so that aliases starting or ending with punctuation (``$5``, ``20%``) can match; an empty
    whitelist passes nothing in strict and everything in official (GTA counts 0 of 0 groups:
    ``empty_whitelist_passes``)."""
    white, black = _compiled(whitelist, blacklist, rules)
    if white is None or not all(p.search(text) for p in white):
        return False
    return black is None or not black.search(text)


def answer_kind(gt: Any) -> str:
    """``objective`` (whitelist), ``subjective`` (references) or ``none`` (image generation)."""
    if isinstance(gt, dict) and gt.get("whitelist"):
        return "objective"
    if isinstance(gt, list) and any(isinstance(r, str) and r.strip() for r in gt):
        return "subjective"
    if isinstance(gt, str) and gt.strip():
        return "subjective"
    return "none"


def official_kind(gt: Any) -> str:
    """How GTA's evaluator treats a gt_answer: a non-empty object is objective, a non-empty list
    subjective, any other non-empty value is counted but never scored (``counted``), an empty
    one (null: image generation) is not an answered sample."""
    if not gt:
        return "none"
    return "objective" if isinstance(gt, dict) else "subjective" if isinstance(gt, list) else "counted"


def scored_kind(gt: Any, rules: GTARules) -> str:
    """The kind of a gt_answer as the rules read it: :func:`official_kind` with
    ``gt_answer_by_type`` (official), else :func:`answer_kind`."""
    return official_kind(gt) if rules.gt_answer_by_type else answer_kind(gt)


def answered(gt: Any, rules: GTARules) -> bool:
    """Whether the sample counts in the answer denominators."""
    return scored_kind(gt, rules) != "none"


def references(gt: Any) -> list[str]:
    refs = [gt] if isinstance(gt, str) else gt if isinstance(gt, list) else []
    return [r for r in refs if isinstance(r, str) and r.strip()]


def answer_score(
    text: str, gt: Any, rules: GTARules, similarity: Similarity | None, setting: str = "step"
) -> tuple[float, str | None]:
    """(score, error type or None). Subjective: best cosine over the references, negative cosines
    count 0; an exact copy of a reference scores 1 without an embedder. Strict scores a blank
    answer 0; official embeds any step answer (even an empty one) and, end to end, skips only
    the empty answer, as GTA's evaluator does (``embeds_blank_answers``)."""
    kind = scored_kind(gt, rules)
    if kind == "objective":
        return (1.0 if whitelist_pass(text, gt.get("whitelist"), gt.get("blacklist"), rules) else 0.0), None
    if kind != "subjective":
        return 0.0, None
    refs = [r for r in gt if isinstance(r, str)] if rules.gt_answer_by_type else references(gt)
    if rules.embeds_blank_answers:
        if setting == "e2e" and not text:
            return 0.0, None
    elif not text.strip():
        return 0.0, None
    if any(text.strip() == r.strip() for r in refs):
        return 1.0, None
    if similarity is None:
        return 0.0, "no_embedder"
    try:
        best = max([0.0] + [float(similarity(text, r)) for r in refs])
    except Exception:  # noqa: BLE001 - a missing or broken embedding model fails this record only
        return 0.0, "no_embedder"
    return (0.0 if math.isnan(best) else min(1.0, max(0.0, best))), None


def image_gen_score(
    calls: list[dict[str, Any]],
    errors: list[str | None],
    gold_calls: list[dict[str, Any]],
    similarity: Similarity | None,
    root: str = "",
) -> tuple[float, str | None]:
    """GTA's end-to-end score of an image-generation sample (its ``answer_acc_w_imggen``): the
    product, over the gold calls to an image-generating tool, of the cosine between the gold
    arguments and the arguments of the model's last successful call to that tool (JSON text,
    file paths as GTA's loader writes them: absolute when the file exists); 0 when a tool is
    missing. An identical JSON text scores 1 without an embedder."""
    pred: dict[str, Any] = {}
    for call, err in zip(calls, errors):
        if err is None and call["name"] in IMAGE_GEN_TOOLS:
            pred[call["name"]] = call["arguments"]
    score = 1.0
    for g in gold_calls:
        if g["name"] not in IMAGE_GEN_TOOLS:
            continue
        if g["name"] not in pred:
            return 0.0, None
        a, b = json.dumps(_absolute(g["arguments"], root)), json.dumps(_absolute(pred[g["name"]], root))
        if a == b:
            continue
        if similarity is None:
            return 0.0, "no_embedder"
        try:
            score *= max(0.0, float(similarity(a, b)))
        except Exception:  # noqa: BLE001
            return 0.0, "no_embedder"
    return score, None


def _absolute(args: Any, root: str) -> Any:
    if not root or not isinstance(args, dict):
        return args
    return {
        k: (os.path.join(root, v) if isinstance(v, str) and v and os.path.isfile(os.path.join(root, v)) else v)
        for k, v in args.items()
    }


# ---- tool categories ----------------------------------------------------------------------------
def category_counts(
    pred: Iterable[str], gold: Iterable[str], rules: GTARules, categories: Mapping[str, str] | None = None
) -> dict[str, dict[str, int]]:
    """Per category: predicted calls, gold calls, and true positives. A name's category is GTA's
    for its 14 tools, else ``categories[name]`` (the case's declared ones), else it is not
    counted. Strict: matched pairs (the multiset intersection of tool names). Official
    (``tool_counts_as_sets``): gold calls whose tool was predicted at least once (counted per
    gold call, so it can exceed the predictions).

    >>> category_counts(["OCR"], ["OCR", "OCR"], OFFICIAL)["perception"]
    {'pred': 1, 'gold': 2, 'tp': 2}
    >>> category_counts(["OCR"], ["OCR", "OCR"], STRICT)["perception"]
    {'pred': 1, 'gold': 2, 'tp': 1}
    """
    cats = categories or {}
    p, g = Counter(pred), Counter(gold)
    out = {c: {"pred": 0, "gold": 0, "tp": 0} for c in CATEGORIES}
    for name, n in p.items():
        cat = TOOL_CATEGORIES.get(name) or cats.get(name)
        if cat in out:
            out[cat]["pred"] += n
    for name, n in g.items():
        cat = TOOL_CATEGORIES.get(name) or cats.get(name)
        if cat not in out:
            continue
        c = out[cat]
        c["gold"] += n
        c["tp"] += (n if name in p else 0) if rules.tool_counts_as_sets else min(n, p.get(name, 0))
    return out


def f1_from_counts(tp: float, n_pred: float, n_gold: float, rules: GTARules = STRICT) -> dict[str, float | None]:
    """P = TP / predicted, R = TP / gold, F1. Official (``f1_as_printed``) computes them as GTA
    prints them: ``P = TP / (pred + 1e-5)``, ``R = TP / gold`` (0 without gold calls), ``F1 = 2PR
    / (P + R + 1e-5)`` (0 without gold calls); strict gives None for an empty category."""
    if rules.f1_as_printed:
        p = tp / (n_pred + 1e-5)
        if not n_gold:
            return {"precision": p, "recall": 0.0, "f1": 0.0}
        r = tp / n_gold
        return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r + 1e-5)}
    if n_pred == 0 and n_gold == 0:
        return {"precision": None, "recall": None, "f1": None}
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


# ---- the registered leaf check: one step-by-step tool turn -----------------------------------------
@scorer("gta.tool_step")
def score_tool_step(case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    """A gold tool turn: a call that runs (InstAcc), the same tool (ToolAcc), the same arguments
    (ArgAcc). Strict compares every call of the turn; official only the first one
    (``first_call_only``), and keeps ToolAcc/ArgAcc for a call the executor rejects (GTA compares
    the recorded step: ``match_recorded_step``)."""
    rules = RULES[mode]
    try:
        turn = parse_turn(prediction, rules)
    except TurnError as exc:  # official: a reply GTA's ReAct parser cannot read is a failed call (NoAction)
        return failed(
            case,
            exc.code,
            str(exc),
            inst=False,
            tool=False,
            arg=False,
            called=rules.unreadable_is_failed_call,
            call_error="unreadable" if rules.unreadable_is_failed_call else None,
        )
    gold = case.gold["tool_calls"]
    specs, root = case.gold.get("specs") or {}, case.meta.get("root", "")
    if turn["kind"] != "tool":
        return failed(
            case,
            "type_mismatch",
            f"expected a call to {[c['name'] for c in gold]}, got an answer",
            inst=False,
            tool=False,
            arg=False,
            called=False,
            call_error=None,
        )
    calls = turn["tool_calls"]
    errors = [check_call(c, specs, root) for c in calls]
    # first_call_only: the turn's one call (all parse_turn read) against the gold turn's first call
    expected = [gold[0]] if rules.first_call_only else gold
    if rules.match_recorded_step:  # an unknown tool has no name, unread arguments none (the step record)
        tool = len(calls) == len(expected) and all(
            c["name"] == g["name"] and err != "unknown_tool" for c, g, err in zip(calls, expected, errors)
        )
        arg = tool and all(
            err not in ARGUMENT_ERRORS and executed_arguments(c, err) == g["arguments"]
            for c, g, err in zip(calls, expected, errors)
        )
    else:
        tool = [c["name"] for c in calls] == [g["name"] for g in expected]
        arg = tool and all(c["arguments"] == g["arguments"] for c, g in zip(calls, expected))
    error = next((e for e in errors if e), None)
    inst = error is None
    details: dict[str, Any] = {"inst": inst, "tool": tool, "arg": arg, "called": True, "call_error": error}
    if inst and tool and arg:
        return passed(case, 1.0, **details)
    if not tool:
        return failed(case, "wrong_tool", f"expected {[c['name'] for c in gold]}", **details)
    if not arg:
        return failed(
            case, "wrong_arguments", f"expected {[c['name'] for c in gold]} with the gold arguments", **details
        )
    return failed(case, "invalid_call", f"GTA's executor rejects the call ({error})", **details)
