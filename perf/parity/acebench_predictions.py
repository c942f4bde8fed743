"""Seeded ACEBench prediction sets for parity checks: gold plus realistic mistakes.

For every record of an ACEBench folder (``data_<category>.json`` + ``possible_answer/``, e.g. the
shared EN data) and every round this writes one prediction, ``r<N>.jsonl`` with lines
``{"id", "result", "kind"}`` (``result`` as benchsmith reads it: the raw output; for the agent
categories the JSON text of ``{"result": [end state], "process": [calls]}``); ``kinds.json``
counts the kinds per file.

    python perf/parity/acebench_predictions.py --data DATA --out OUT [--seed 0] [--rounds 2]

Normal categories start from the gold calls (``AceBench.gold_prediction``) and apply one of:
a changed string value, a string value with extra words (a superset), a changed number, a number
written as a string, a dropped or an extra argument, a renamed function, a dropped or a
duplicated call, calls in reverse order, upper-cased strings, JSON instead of call syntax, prose
around the calls, a Markdown fence, an empty output, or nothing (gold). Special categories start
from the gold message and drop a parameter name or value, change the key phrase's case, answer
with a call, or add words. Agent records change a state value, drop or reorder a process call,
or leave the state empty. Everything is decided by ``random.Random(seed, round, id)``.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from benchsmith.eval import EvalCase, get_benchmark

NORMAL_KINDS = (
    "gold",
    "string_changed",
    "string_superset",
    "number_changed",
    "number_as_string",
    "drop_arg",
    "extra_arg",
    "renamed",
    "drop_call",
    "duplicate_call",
    "reversed",
    "upper_case",
    "json_calls",
    "prose",
    "fenced",
    "empty",
)
SPECIAL_KINDS = ("gold", "drop_name", "lower_phrase", "call_instead", "extra_words", "first_half", "empty")
AGENT_KINDS = ("gold", "state_changed", "drop_process", "reorder_process", "empty_state", "extra_process")


# ---- normal: mutate the gold calls as a Python AST ------------------------------------------------
def _calls(text: str) -> list[ast.Call] | None:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    items = tree.elts if isinstance(tree, ast.List) else [tree]
    return [c for c in items if isinstance(c, ast.Call)] or None


def _render(calls: list[ast.Call]) -> str:
    return "[" + ", ".join(ast.unparse(c) for c in calls) + "]"


def _constants(calls: list[ast.Call], kind: type) -> list[ast.Constant]:
    return [n for c in calls for n in ast.walk(c) if isinstance(n, ast.Constant) and type(n.value) is kind]


def _mutate_normal(gold: str, kind: str, rng: random.Random) -> str | None:
    """The gold output with one mistake of ``kind``; None when the kind does not apply."""
    if kind == "gold":
        return gold
    if kind == "empty":
        return ""
    if kind == "prose":
        return f"Sure, I will call the API for you: {gold}"
    if kind == "fenced":
        return f"```python\n{gold}\n```"
    calls = _calls(gold)
    if not calls:
        return None
    if kind in ("string_changed", "string_superset", "upper_case"):
        strings = [s for s in _constants(calls, str) if s.value]
        if not strings:
            return None
        s = rng.choice(strings)
        s.value = {
            "string_changed": s.value + "x",
            "string_superset": s.value + " and more",
            "upper_case": s.value.upper(),
        }[kind]
        return _render(calls) if kind != "upper_case" or s.value != s.value.lower() else None
    if kind in ("number_changed", "number_as_string"):
        nums = _constants(calls, int) + _constants(calls, float)
        if not nums:
            return None
        n = rng.choice(nums)
        n.value = n.value + 1 if kind == "number_changed" else str(n.value)
        return _render(calls)
    if kind in ("drop_arg", "extra_arg"):
        call = rng.choice(calls)
        if kind == "drop_arg":
            if not call.keywords:
                return None
            call.keywords.pop(rng.randrange(len(call.keywords)))
        else:
            call.keywords.append(ast.keyword(arg="note", value=ast.Constant("extra")))
        return _render(calls)
    if kind == "renamed":
        call = rng.choice(calls)
        if isinstance(call.func, ast.Name):
            call.func.id += "_v2"
        elif isinstance(call.func, ast.Attribute):
            call.func.attr += "_v2"
        return _render(calls)
    if kind == "drop_call":
        return _render(calls[:-1]) if len(calls) > 1 else "[]"
    if kind == "duplicate_call":
        return _render(calls + [calls[-1]])
    if kind == "reversed":
        return _render(calls[::-1]) if len(calls) > 1 else None
    if kind == "json_calls":
        out = []
        for c in calls:
            try:
                args = {k.arg: ast.literal_eval(k.value) for k in c.keywords}
            except ValueError:
                return None
            out.append({"name": ast.unparse(c.func), "arguments": args})
        return json.dumps(out, ensure_ascii=False)
    raise ValueError(kind)


# ---- special: mutate the gold message ----------------------------------------------------------------
def _mutate_special(gold: str, case: EvalCase, kind: str, rng: random.Random) -> str | None:
    if kind == "gold":
        return gold
    if kind == "empty":
        return ""
    if kind == "extra_words":
        return gold + " Please tell me what to do next."
    if kind == "first_half":
        return gold[: len(gold) // 2]
    if kind == "lower_phrase":
        lowered = (
            gold.replace("Missing necessary parameters", "missing necessary parameters")
            .replace("There is incorrect value", "there is incorrect value")
            .replace("the limitations", "The limitations")
        )
        return lowered if lowered != gold else None
    if kind == "call_instead":
        names = [f.get("name") for f in case.input.get("function") or [] if isinstance(f, dict) and f.get("name")]
        return f"[{names[0]}()]" if names else None
    if kind == "drop_name":
        inner = re.findall(r"\(([^()]*)\)", gold)
        if not inner:
            return None
        target = rng.choice(inner)
        parts = [p.strip() for p in target.split(",") if p.strip()]
        if not parts:
            return None
        drop = rng.choice(parts)
        kept = ", ".join(p for p in parts if p != drop)
        return gold.replace(f"({target})", f"({kept})", 1)
    raise ValueError(kind)


# ---- agent: mutate the reported end state and process ------------------------------------------------
def _mutate_agent(gold: str, kind: str, rng: random.Random) -> str | None:
    value = json.loads(gold)
    state, process = value.get("result") or [], value.get("process") or []
    if kind == "gold":
        return gold
    if kind == "empty_state":
        value["result"] = []
    elif kind == "state_changed":
        leaves = [
            (d, k)
            for cls in state
            if isinstance(cls, dict)
            for v in cls.values()
            if isinstance(v, dict)
            for d, k in ((v, k) for k in v)
            if isinstance(v[k], (str, int, bool))
        ]
        if not leaves:
            return None
        d, k = rng.choice(leaves)
        d[k] = (not d[k]) if isinstance(d[k], bool) else (d[k] + 1 if isinstance(d[k], int) else d[k] + "x")
    elif kind == "drop_process":
        if not process:
            return None
        process.pop(rng.randrange(len(process)))
    elif kind == "reorder_process":
        if len(process) < 2:
            return None
        process.reverse()
    elif kind == "extra_process":
        process.append("get_latest_message_id()")
    else:
        raise ValueError(kind)
    return json.dumps(value, ensure_ascii=False)


def predictions(cases: list[EvalCase], gold_of: Callable[[EvalCase], str], seed: int, rnd: int) -> list[dict[str, Any]]:
    out = []
    for case in cases:
        rng = random.Random(f"{seed}/{rnd}/{case.id}")
        gold = gold_of(case)
        fam = case.category.split("_", 1)[0]
        kinds = {"normal": NORMAL_KINDS, "special": SPECIAL_KINDS, "agent": AGENT_KINDS}[fam]
        order = list(kinds)
        rng.shuffle(order)
        for kind in order:
            if fam == "normal":
                text = _mutate_normal(gold, kind, rng)
            elif fam == "special":
                text = _mutate_special(gold, case, kind, rng)
            else:
                text = _mutate_agent(gold, kind, rng)
            if text is not None:
                out.append({"id": case.id, "result": text, "kind": f"{fam}:{kind}"})
                break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="an ACEBench folder (data_<category>.json + possible_answer/)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    bench = get_benchmark("acebench")
    cases = bench.load(Path(args.data))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, dict[str, int]] = {}
    for rnd in range(args.rounds):
        rows = predictions(cases, bench.gold_prediction, args.seed, rnd)
        name = f"r{rnd}.jsonl"
        (out / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        kinds[name] = dict(sorted(Counter(r["kind"] for r in rows).items()))
        print(f"{name}: {len(rows)} predictions, {len(kinds[name])} kinds")
    (out / "kinds.json").write_text(json.dumps(kinds, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
