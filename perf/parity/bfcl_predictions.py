"""Seeded BFCL prediction sets for parity checks: gold plus realistic mistakes, in both formats.

For every record of a BFCL folder (e.g. the shared v4 data) and every round this writes one
prediction in the prompt format (``prompt_r<N>.jsonl``: Python call text, what a prompt-mode
model's result file holds) and one in the FC format (``fc_r<N>.jsonl``: ``[{name: arguments
JSON text}]`` as an FC model's result file holds, or a text reply). Each line is
``{"id", "result", "kind"}``; ``kinds.json`` counts the kinds per file.

    python perf/parity/bfcl_predictions.py --data DATA --out OUT [--seed 0] [--rounds 2]

A prediction is the record's gold calls (``benchsmith.eval.bfcl.gold_calls``; a call to the most
related function for ``live_relevance``; no call for the irrelevance categories), then a
value-level mistake (wrong function name, missing required parameter, extra parameter, wrong
type, wrong string / number / list value, ints for floats, booleans as numbers, omitted optional
parameter, swapped / dropped / duplicated / extra calls, nested calls, "." vs "_" in names, a
call where none is due, ...) and, for about a third of the records, a way of writing the output
that a model gets wrong (prompt: JSON call lists, Markdown fences, positional arguments, prose,
empty output, unary operators, repeated keywords, ``**kwargs``, tags, ...; FC: arguments as an
object instead of JSON text, ``{"name", "arguments"}`` objects, OpenAI's tool-call wrapper, a
text reply, truncated JSON, ...). Everything is decided by ``random.Random(seed, round, id)``.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from benchsmith.eval import get_benchmark
from benchsmith.eval.bfcl import AST_CATEGORIES, IRRELEVANCE, gold_calls, relevance_call

Call = tuple[str, dict[str, Any]]


# ---- rendering ----------------------------------------------------------------------------------
def py(v: Any) -> str:
    """A value as Python source."""
    if isinstance(v, Raw):
        return v.src
    if isinstance(v, dict):
        return "{" + ", ".join(f"{py(k)}: {py(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(py(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(py(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


class Raw:
    """Python source written as is (nested calls, unary operators, ...); JSON: its ``json`` value."""

    def __init__(self, src: str, json_value: Any = None) -> None:
        self.src, self.json_value = src, json_value


def to_json(v: Any) -> Any:
    if isinstance(v, Raw):
        return v.json_value
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    return v


def py_call(name: str, args: dict[str, Any], positional: int = 0) -> str:
    items = list(args.items())
    parts = [py(v) for _, v in items[:positional]] + [f"{k}={py(v)}" for k, v in items[positional:]]
    return f"{name}({', '.join(parts)})"


def py_calls(calls: list[Call]) -> str:
    return "[" + ", ".join(py_call(n, a) for n, a in calls) + "]"


def fc_name(name: str) -> str:
    return name.replace(".", "_")


def fc_calls(calls: list[Call], keep_dots: bool = False) -> list[dict[str, str]]:
    return [
        {(name if keep_dots else fc_name(name)): json.dumps(to_json(args), ensure_ascii=False)} for name, args in calls
    ]


# ---- value-level mistakes ----------------------------------------------------------------------------
def _schema(functions: list, name: str) -> dict[str, Any]:
    for f in functions:
        if f.get("name") == name:
            p = f.get("parameters") or {}
            return p if isinstance(p, dict) else {}
    return {}


def _pick_arg(rng: random.Random, calls: list[Call], pred: Callable[[Any], bool]) -> tuple[int, str] | None:
    spots = [(i, k) for i, (_, a) in enumerate(calls) for k, v in a.items() if pred(v)]
    return rng.choice(spots) if spots else None


def _change_arg(
    rng: random.Random, calls: list[Call], pred: Callable[[Any], bool], change: Callable[[Any], Any]
) -> list[Call] | None:
    """``calls`` with one argument that passes ``pred`` (picked by ``rng``) replaced by ``change(value)``."""
    spot = _pick_arg(rng, calls, pred)
    if spot is None:
        return None
    j, k = spot
    calls[j][1][k] = change(calls[j][1][k])
    return calls


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def mutate(kind: str, rng: random.Random, calls: list[Call], functions: list, question: Any) -> list[Call] | None:
    """``calls`` with one mistake of ``kind``; ``None`` when the kind does not apply."""
    calls = copy.deepcopy(calls)
    names = [f.get("name") for f in functions if isinstance(f.get("name"), str)]
    if kind == "gold":
        return calls
    if kind == "call_where_none_due":
        if calls:
            return None
        c = relevance_call(functions, question)
        return [c] if c else None
    if not calls:
        return None
    i = rng.randrange(len(calls))
    name, args = calls[i]
    if kind == "wrong_func_name":
        others = [n for n in names if n != name]
        calls[i] = (rng.choice(others) if others else name + "_v2", args)
        return calls
    if kind == "dot_underscore_name":  # prompt: "_" for "."; fc: keeps "." (handled at rendering)
        return calls if any("." in n for n, _ in calls) else None
    if kind == "missing_required":
        req = [p for p in _schema(functions, name).get("required", []) if p in args]
        if not req:
            return None
        del args[rng.choice(req)]
        return calls
    if kind == "optional_omitted":
        req = set(_schema(functions, name).get("required", []))
        opt = [p for p in args if p not in req]
        if not opt:
            return None
        del args[rng.choice(opt)]
        return calls
    if kind == "extra_param":
        args[rng.choice(["verbose", "unit", "format", "limit", "debug"])] = rng.choice([True, "json", 10])
        return calls
    if kind == "optional_default_added":
        props = _schema(functions, name).get("properties", {})
        missing = [p for p in props if p not in args and isinstance(props[p], dict) and "default" in props[p]]
        if not missing:
            return None
        p = rng.choice(missing)
        args[p] = props[p]["default"]
        return calls
    if kind == "wrong_type":
        spot = _pick_arg(rng, calls, lambda v: True)
        if spot is None:
            return None
        j, k = spot
        v = calls[j][1][k]
        if isinstance(v, bool):
            calls[j][1][k] = rng.choice(["true" if v else "false", int(v)])
        elif _is_num(v):
            calls[j][1][k] = str(v)
        elif isinstance(v, str):
            calls[j][1][k] = rng.choice([[v], 5, True])
        elif isinstance(v, list):
            calls[j][1][k] = ", ".join(map(str, v))
        elif isinstance(v, dict):
            calls[j][1][k] = json.dumps(v)
        else:
            calls[j][1][k] = "none"
        return calls
    if kind == "wrong_string_value":
        return _change_arg(
            rng,
            calls,
            lambda v: isinstance(v, str) and v,
            lambda v: rng.choice([v + " City", v[: max(1, len(v) // 2)], "Unknown", v + "s"]),
        )
    if kind == "string_variant":  # case, spaces, punctuation: equal after BFCL's normalisation
        return _change_arg(
            rng,
            calls,
            lambda v: isinstance(v, str) and v,
            lambda v: rng.choice([v.upper(), v.lower(), v.replace(" ", "-"), v.replace(" ", "_"), v + ".", " " + v]),
        )
    if kind == "wrong_number":
        return _change_arg(rng, calls, _is_num, lambda v: rng.choice([v + 1, v * 2, -v if v else 7]))
    if kind == "int_for_float":

        def intish(v: Any) -> Any:
            if isinstance(v, float) and v.is_integer():
                return int(v)
            if isinstance(v, list):
                return [intish(x) for x in v]
            if isinstance(v, dict):
                return {a: intish(b) for a, b in v.items()}
            return v

        new = [(n, intish(a)) for n, a in calls]
        return new if new != calls or any(isinstance(x, float) for _, a in calls for x in a.values()) else None
    if kind == "bool_as_number":
        return _change_arg(rng, calls, lambda v: isinstance(v, bool), int)
    if kind == "list_value_changed":
        return _change_arg(
            rng,
            calls,
            lambda v: isinstance(v, list) and v,
            lambda v: rng.choice(
                [v[::-1], v[:-1], v + v[:1], [str(x) if not isinstance(x, str) else x.upper() for x in v]]
            ),
        )
    if kind == "dict_value_changed":
        spot = _pick_arg(rng, calls, lambda v: isinstance(v, dict) and v)
        if spot is None:
            return None
        j, k = spot
        v = calls[j][1][k]
        key = rng.choice(list(v))
        choice = rng.randrange(3)
        if choice == 0:
            del v[key]
        elif choice == 1:
            v["extra_key"] = "x"
        else:
            v[key] = str(v[key]) + "x" if not isinstance(v[key], str) else v[key] + "x"
        return calls
    if kind == "nested_call":
        spot = _pick_arg(rng, calls, lambda v: True)
        if spot is None:
            return None
        j, k = spot
        calls[j][1][k] = rng.choice(
            [
                Raw("get_current_date()", "get_current_date()"),
                Raw(f"lookup(value={py(calls[j][1][k])})", {"lookup": {"value": to_json(calls[j][1][k])}}),
            ]
        )
        return calls
    if kind == "swapped_order":
        if len(calls) < 2:
            return None
        return calls[::-1]
    if kind == "dropped_call":
        if len(calls) < 2:
            return None
        del calls[i]
        return calls
    if kind == "duplicated_call":
        calls.insert(i, copy.deepcopy(calls[i]))
        return calls
    if kind == "extra_call":
        c = relevance_call(functions, question)
        return calls + [c] if c else None
    if kind == "merged_parallel":  # one call with list values instead of several calls
        if len(calls) < 2 or len({n for n, _ in calls}) != 1:
            return None
        keys = list(calls[0][1])
        merged = {k: [a.get(k) for _, a in calls] for k in keys}
        return [(calls[0][0], merged)]
    raise ValueError(kind)


VALUE_KINDS = [
    "wrong_func_name",
    "dot_underscore_name",
    "missing_required",
    "optional_omitted",
    "extra_param",
    "optional_default_added",
    "wrong_type",
    "wrong_string_value",
    "string_variant",
    "wrong_number",
    "int_for_float",
    "bool_as_number",
    "list_value_changed",
    "dict_value_changed",
    "nested_call",
    "swapped_order",
    "dropped_call",
    "duplicated_call",
    "extra_call",
    "merged_parallel",
]

# ---- ways of writing the output -----------------------------------------------------------------------
PROMPT_STYLES = [
    "json_name_arguments",
    "json_name_dict",
    "fenced_python",
    "fenced_json",
    "fenced_plain",
    "positional_args",
    "prose",
    "prose_then_call",
    "empty",
    "empty_list",
    "no_brackets",
    "unary_sign",
    "repeated_keyword",
    "kwargs_unpacking",
    "lowercase_true",
    "quoted",
    "tool_call_tags",
    "newline_separated",
    "tuple_for_list",
    "trailing_text",
]
FC_STYLES = [
    "args_object",
    "name_arguments",
    "name_arguments_object",
    "openai_wrapper",
    "text_reply",
    "empty_list",
    "empty_text",
    "truncated_args",
    "args_not_object",
    "single_object",
    "python_text",
    "two_keys_in_one_item",
    "empty_item",
    "args_empty_string",
    "args_json_text",
]


def render_prompt(style: str | None, rng: random.Random, calls: list[Call]) -> str | None:
    if style is None:
        return py_calls(calls) if calls else rng.choice(["", "[]"])
    body = py_calls(calls) if calls else "[]"
    if style == "json_name_arguments":
        return json.dumps([{"name": n, "arguments": to_json(a)} for n, a in calls])
    if style == "json_name_dict":
        return json.dumps([{n: to_json(a)} for n, a in calls])
    if style == "fenced_python":
        return f"```python\n{body}\n```"
    if style == "fenced_json":
        return "```json\n" + json.dumps([{"name": n, "arguments": to_json(a)} for n, a in calls], indent=2) + "\n```"
    if style == "fenced_plain":
        return f"```\n{body}\n```"
    if style == "positional_args":
        if not calls or not calls[0][1]:
            return None
        return "[" + ", ".join(py_call(n, a, positional=1 if k == 0 else 0) for k, (n, a) in enumerate(calls)) + "]"
    if style == "prose":
        return rng.choice(
            [
                "I'm sorry, but I can't help with that request.",
                "None of the available functions can answer this question.",
                "The result is 42.",
            ]
        )
    if style == "prose_then_call":
        return f"Sure! Here is the call you need: {body}"
    if style == "empty":
        return ""
    if style == "empty_list":
        return "[]"
    if style == "no_brackets":
        return ", ".join(py_call(n, a) for n, a in calls) if calls else None
    if style == "unary_sign":
        spots = [(j, k) for j, (_, a) in enumerate(calls) for k, v in a.items() if _is_num(v)]
        if not spots:
            return None
        j, k = rng.choice(spots)
        v = calls[j][1][k]
        calls = copy.deepcopy(calls)
        calls[j][1][k] = Raw(f"-{abs(v)!r}" if v < 0 else f"+{v!r}")  # a needless "+" on a positive number
        return py_calls(calls)
    if style == "repeated_keyword":
        if not calls or not calls[0][1]:
            return None
        n, a = calls[0]
        k, v = next(iter(a.items()))
        first = py_call(n, a)
        return "[" + first[:-1] + f", {k}={py(v)})" + "".join(", " + py_call(x, y) for x, y in calls[1:]) + "]"
    if style == "kwargs_unpacking":
        if not calls:
            return None
        return "[" + ", ".join(f"{n}(**{py(a)})" for n, a in calls) + "]"
    if style == "lowercase_true":
        spots = [(j, k) for j, (_, a) in enumerate(calls) for k, v in a.items() if isinstance(v, bool)]
        if not spots:
            return None
        calls = copy.deepcopy(calls)
        j, k = rng.choice(spots)
        calls[j][1][k] = Raw(str(calls[j][1][k]).lower())
        return py_calls(calls)
    if style == "quoted":
        return f"'{body}'"
    if style == "tool_call_tags":
        return f"<TOOLCALL>{body}</TOOLCALL>"
    if style == "newline_separated":
        return "\n".join(py_call(n, a) for n, a in calls) if len(calls) > 1 else None
    if style == "tuple_for_list":
        spots = [(j, k) for j, (_, a) in enumerate(calls) for k, v in a.items() if isinstance(v, list)]
        if not spots:
            return None
        calls = copy.deepcopy(calls)
        j, k = rng.choice(spots)
        calls[j][1][k] = tuple(calls[j][1][k])
        return py_calls(calls)
    if style == "trailing_text":
        return body + "\nLet me know if you need anything else."
    raise ValueError(style)


def render_fc(style: str | None, rng: random.Random, calls: list[Call], keep_dots: bool) -> Any:
    if style is None:
        return fc_calls(calls, keep_dots) if calls else rng.choice(["", []])
    if style == "args_object":
        return [{fc_name(n): to_json(a)} for n, a in calls] if calls else None
    if style == "name_arguments":
        return [{"name": fc_name(n), "arguments": json.dumps(to_json(a))} for n, a in calls] if calls else None
    if style == "name_arguments_object":
        return [{"name": fc_name(n), "arguments": to_json(a)} for n, a in calls] if calls else None
    if style == "openai_wrapper":
        return (
            [
                {"type": "function", "function": {"name": fc_name(n), "arguments": json.dumps(to_json(a))}}
                for n, a in calls
            ]
            if calls
            else None
        )
    if style == "text_reply":
        return rng.choice(
            [
                "I'm sorry, but none of the tools can do that.",
                "Could you tell me which city you mean?",
                "The answer is 42.",
            ]
        )
    if style == "empty_list":
        return []
    if style == "empty_text":
        return ""
    if style == "truncated_args":
        if not calls:
            return None
        out = fc_calls(calls)
        k = next(iter(out[0]))
        out[0][k] = out[0][k][: max(1, len(out[0][k]) // 2)]
        return out
    if style == "args_not_object":
        if not calls:
            return None
        return [{fc_name(n): json.dumps(list(to_json(a).values()))} for n, a in calls]
    if style == "single_object":
        return fc_calls(calls[:1])[0] if calls else None
    if style == "python_text":
        return py_calls(calls) if calls else None
    if style == "two_keys_in_one_item":
        if len(calls) < 2:
            return None
        merged: dict[str, str] = {}
        for item in fc_calls(calls):
            merged.update(item)
        return [merged]
    if style == "empty_item":
        return [{}]
    if style == "args_empty_string":
        if not calls:
            return None
        return [{fc_name(n): "" if not a else json.dumps(to_json(a))} for n, a in calls]
    if style == "args_json_text":  # the whole list given as a JSON string
        return json.dumps(fc_calls(calls)) if calls else None
    raise ValueError(style)


# ---- the sets ---------------------------------------------------------------------------------------
def base_calls(case: Any) -> list[Call]:
    functions = case.input.get("functions") or []
    if case.category in AST_CATEGORIES:
        return gold_calls(functions, case.gold or [])
    if case.category in IRRELEVANCE:
        return []
    c = relevance_call(functions, case.input.get("question"))
    return [c] if c else []


def one(case: Any, fmt: str, rng: random.Random) -> tuple[Any, str]:
    functions = case.input.get("functions") or []
    calls = base_calls(case)
    styles = PROMPT_STYLES if fmt == "prompt" else FC_STYLES
    kinds = ["call_where_none_due"] if case.category in IRRELEVANCE else VALUE_KINDS
    for _ in range(50):
        kind = "gold" if rng.random() < 0.15 else rng.choice(kinds)
        new = mutate(kind, rng, calls, functions, case.input.get("question"))
        if new is None:
            continue
        style = rng.choice(styles) if rng.random() < 0.35 else None
        if fmt == "prompt":
            if kind == "dot_underscore_name":
                new = [(fc_name(n), a) for n, a in new]
            result = render_prompt(style, rng, new)
        else:
            result = render_fc(style, rng, new, keep_dots=kind == "dot_underscore_name")
        if result is None:
            continue
        return result, kind + (f"+{style}" if style else "")
    return render_prompt(None, rng, calls) if fmt == "prompt" else render_fc(None, rng, calls, False), "gold"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, type=Path, help="a BFCL folder (BFCL_v4_*.json + possible_answer/)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    cases = get_benchmark("bfcl").load(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, dict[str, int]] = {}
    for r in range(args.rounds):
        for fmt in ("prompt", "fc"):
            name = f"{fmt}_r{r}.jsonl"
            counts: Counter[str] = Counter()
            lines = []
            for case in cases:
                rng = random.Random(f"{args.seed}:{r}:{fmt}:{case.id}")
                result, kind = one(case, fmt, rng)
                counts[kind.split("+")[0]] += 1
                if "+" in kind:
                    counts["style:" + kind.split("+")[1]] += 1
                lines.append(json.dumps({"id": case.id, "result": result, "kind": kind}, ensure_ascii=False))
            (args.out / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
            summary[name] = dict(sorted(counts.items()))
            print(f"{args.out / name}: {len(lines)} predictions, {len(counts)} kinds")
    (args.out / "kinds.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
