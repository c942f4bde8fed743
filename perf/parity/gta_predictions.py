"""Seeded GTA prediction sets for parity checks: gold plus realistic mistakes.

For every case of a GTA folder (``dataset.json`` [+ ``toolmeta.json``], e.g. one written by
``benchsmith eval derive --only gta`` or ``eval export --format gta``) and every round this writes
one prediction, ``r<N>.jsonl`` with lines ``{"id", "result", "kind"}`` (``result`` as benchsmith
reads it); ``kinds.json`` counts the kinds per file.

    python perf/parity/gta_predictions.py --data DATA --out OUT [--seed 0] [--rounds 3]

Step-by-step tool turns start from the gold call and: call a tool that is not among the case's
tools (another GTA tool, an OpenAI-style ``functions.`` prefix), add an unknown argument or
misspell one, drop a required argument, give a value its input's type cannot take (a word for an
``int``, a missing file for an ``image``), give a value that converts (``"5"`` for an ``int``),
call another offered tool, change an argument value, make two calls (the gold one first or
second), answer instead of calling, write the arguments as JSON text or as text that is not JSON,
put spaces around the tool name, or send an unreadable turn. Answer turns: call a tool instead,
miss a whitelist value, name only part of the values, name a blacklisted alias, write the alias
inside a longer word or with punctuation, paraphrase or replace a subjective answer, answer
nothing, or send plain text. End-to-end records: a wrong or empty final answer, a dropped or an
extra call, a call to a tool outside the case's tools, a call the executor rejects, the
trajectory as chat messages (gold, with several calls in one message, with extra steps after the
answer, ending on a tool return, with an earlier answer), only an answer, or changed arguments of
image-generating calls. Everything is decided by ``random.Random(seed, round, id)``.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

from benchsmith.eval import EvalCase
from benchsmith.eval.gta import GTA, IMAGE_GEN_TOOLS, TOOL_CATEGORIES, answer_kind

TOOL_KINDS = (
    "gold",
    "gold",
    "tool_not_offered",
    "prefixed_name",
    "unknown_argument",
    "misspelled_argument",
    "missing_argument",
    "unconvertible_value",
    "unconvertible_value",
    "convertible_value",
    "wrong_tool",
    "wrong_value",
    "two_calls_gold_first",
    "two_calls_gold_second",
    "answer_instead",
    "arguments_as_json_text",
    "arguments_not_json",
    "spaced_name",
    "unreadable",
    "empty_object",
)
ANSWER_KINDS = (
    "gold",
    "gold",
    "call_instead",
    "call_not_offered",
    "whitelist_miss",
    "partial_values",
    "blacklist_hit",
    "alias_in_word",
    "alias_punctuated",
    "paraphrase",
    "unrelated",
    "empty_answer",
    "plain_text",
    "unreadable",
)
E2E_KINDS = (
    "gold",
    "gold",
    "wrong_answer",
    "empty_answer",
    "drop_call",
    "extra_call",
    "call_not_offered",
    "rejected_call",
    "trajectory",
    "trajectory_multi_call",
    "trajectory_extra_steps",
    "trajectory_ends_on_tool",
    "trajectory_early_answer",
    "answer_only",
    "changed_image_args",
    "unreadable",
)


def _call(name: str, args: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": args}}


def _turn(calls: list[dict[str, Any]], thought: str = "Next step.") -> str:
    return json.dumps({"thought": thought, "tool_calls": calls}, ensure_ascii=False)


def _answer(text: str) -> str:
    return json.dumps({"thought": "I can answer now.", "content": text}, ensure_ascii=False)


def _inputs(case: EvalCase, name: str) -> dict[str, tuple[str, bool]]:
    """{argument: (type, required)} of a case tool (from the specs the loader read)."""
    types, required = (case.gold.get("specs") or {}).get(name, ({}, frozenset()))
    return {k: (t, k in required) for k, t in types.items()}


def _foreign_tool(case: EvalCase, universe: list[str], rng: random.Random) -> str:
    offered = {t["name"] for t in case.input.get("tools") or []}
    pool = [n for n in universe if n not in offered] or ["Calculator"]
    return rng.choice(pool)


def _other_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + " x" if value else "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    return "changed"


# ---- step-by-step tool turns ---------------------------------------------------------------------
def tool_turn(case: EvalCase, kind: str, rng: random.Random, universe: list[str]) -> str | None:
    gold = case.gold["tool_calls"]
    first = gold[0]
    name, args = first["name"], dict(first["arguments"])
    inputs = _inputs(case, name)
    offered = [t["name"] for t in case.input.get("tools") or [] if t["name"] != name]
    if kind == "gold":
        return _turn([_call(c["name"], c["arguments"]) for c in gold], case.gold.get("thought") or "")
    if kind == "tool_not_offered":
        return _turn([_call(_foreign_tool(case, universe, rng), args)])
    if kind == "prefixed_name":
        return _turn([_call(f"functions.{name}", args)])
    if kind == "unknown_argument":
        return _turn([_call(name, {**args, rng.choice(["verbose", "limit_rows", "format"]): True})])
    if kind == "misspelled_argument":
        if not args:
            return None
        k = rng.choice(sorted(args))
        return _turn([_call(name, {(k + "s" if j == k else j): v for j, v in args.items()})])
    if kind == "missing_argument":
        req = [k for k, (_, r) in inputs.items() if r and k in args]
        if not req:
            return None
        k = rng.choice(req)
        return _turn([_call(name, {j: v for j, v in args.items() if j != k})])
    if kind in ("unconvertible_value", "convertible_value"):
        typed = [k for k, (t, _) in inputs.items() if k in args and t in ("int", "float", "image", "file")]
        if not typed:
            return None
        k = rng.choice(typed)
        t = inputs[k][0]
        if kind == "unconvertible_value":
            bad = {
                "int": rng.choice(["five", "n/a", None, [1, 2]]),
                "float": rng.choice(["about 3", None, {}]),
                "image": "image/does_not_exist.jpg",
                "file": "files/missing.csv",
            }[t]
            return _turn([_call(name, {**args, k: bad})])
        if t not in ("int", "float"):
            return None
        v = args[k]
        good = str(v) if not isinstance(v, str) else (float(v) if re.fullmatch(r"-?\d+", v.strip()) else None)
        if good is None or isinstance(v, bool):
            return None
        return _turn([_call(name, {**args, k: good})])
    if kind == "wrong_tool":
        if not offered:
            return None
        other = rng.choice(offered)
        return _turn([_call(other, {k: v for k, v in args.items() if k in _inputs(case, other)})])
    if kind == "wrong_value":
        if not args:
            return None
        k = rng.choice(sorted(args))
        return _turn([_call(name, {**args, k: _other_value(args[k])})])
    if kind in ("two_calls_gold_first", "two_calls_gold_second"):
        extra = _call(rng.choice(offered + [_foreign_tool(case, universe, rng)]), {})
        pair = [_call(name, args), extra] if kind == "two_calls_gold_first" else [extra, _call(name, args)]
        return _turn(pair)
    if kind == "answer_instead":
        return _answer("I think the answer is 42.")
    if kind == "arguments_as_json_text":
        return _turn([_call(name, json.dumps(args, ensure_ascii=False))])
    if kind == "arguments_not_json":
        return _turn([_call(name, ", ".join(f"{k}={v}" for k, v in args.items()) or "none")])
    if kind == "spaced_name":
        return _turn([_call(f" {name} ", args)])
    if kind == "unreadable":
        return rng.choice(
            [
                json.dumps({"tool_calls": name}),
                json.dumps({"tool_calls": [name]}),
                json.dumps({"tool_calls": [{"arguments": args}]}),
            ]
        )
    if kind == "empty_object":
        return "{}"
    raise ValueError(kind)


# ---- step-by-step answer turns -------------------------------------------------------------------
def _whitelist_text(gt: dict[str, Any]) -> list[str]:
    return [g[0] for g in gt.get("whitelist") or [] if isinstance(g, list) and g]


def answer_turn(case: EvalCase, kind: str, rng: random.Random, universe: list[str], gold_text: str) -> str | None:
    gt = case.gold.get("gt_answer")
    ak = answer_kind(gt)
    tools = [t["name"] for t in case.input.get("tools") or []]
    if kind == "gold":
        return gold_text
    if kind == "call_instead":
        return _turn([_call(rng.choice(tools), {})]) if tools else None
    if kind == "call_not_offered":
        return _turn([_call(_foreign_tool(case, universe, rng), {"text": "x"})])
    if kind == "empty_answer":
        return _answer("")
    if kind == "plain_text":
        return json.loads(gold_text)["content"] if ak != "subjective" else "Go to the lake."
    if kind == "unreadable":
        return json.dumps({"thought": "hmm"})
    if ak == "objective":
        values = _whitelist_text(gt)
        if kind == "whitelist_miss":
            return _answer("I could not find it; maybe 0 or none.")
        if kind == "partial_values":
            return _answer("The answer is: " + values[0] + ".") if len(values) > 1 else None
        if kind == "blacklist_hit":
            black = [a for g in gt.get("blacklist") or [] for a in g]
            if black:
                return _answer(f"The answer is {'; '.join(values)}, not {black[0]}.")
            return _answer(f"The answer is {'; '.join(values)} or maybe {values[0]}0.")
        if kind == "alias_in_word":
            return _answer("The answer is: " + "; ".join(v + "x" for v in values) + ".")
        if kind == "alias_punctuated":
            return _answer("Answer: " + "; ".join(f"'{v}'" if rng.random() < 0.5 else f"({v})" for v in values))
        if kind in ("paraphrase", "unrelated"):
            return _answer(f"Result = {values[0]}" if kind == "paraphrase" else "Quantum chromodynamics.")
    if ak == "subjective":
        if kind == "paraphrase":
            words = gt[0].split()
            return _answer(" ".join(words[: max(2, len(words) // 2)]))
        if kind == "unrelated":
            return _answer("Quantum chromodynamics describes gluons.")
        return None
    if ak == "none" and kind in ("paraphrase", "unrelated"):
        return _answer("Done, the image is ready.")
    return None


# ---- end to end ----------------------------------------------------------------------------------
def _assistant(calls: list[dict[str, Any]], content: str = "") -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": calls}


def e2e_prediction(case: EvalCase, kind: str, rng: random.Random, universe: list[str], gold_answer: str) -> str | None:
    calls = [_call(c["name"], c["arguments"]) for c in case.gold["tool_calls"]]
    answer = gold_answer
    tools = [t["name"] for t in case.input.get("tools") or []]
    if kind == "gold":
        return json.dumps({"answer": answer, "tool_calls": calls}, ensure_ascii=False)
    if kind == "wrong_answer":
        return json.dumps({"answer": "I am not sure, maybe 0.", "tool_calls": calls}, ensure_ascii=False)
    if kind == "empty_answer":
        return json.dumps({"answer": rng.choice(["", None]), "tool_calls": calls}, ensure_ascii=False)
    if kind == "drop_call":
        if not calls:
            return None
        i = rng.randrange(len(calls))
        return json.dumps({"answer": answer, "tool_calls": calls[:i] + calls[i + 1 :]}, ensure_ascii=False)
    if kind == "extra_call":
        extra = copy.deepcopy(rng.choice(calls)) if calls and rng.random() < 0.5 else _call(rng.choice(tools), {})
        return json.dumps({"answer": answer, "tool_calls": calls + [extra]}, ensure_ascii=False)
    if kind == "call_not_offered":
        return json.dumps(
            {"answer": answer, "tool_calls": [_call(_foreign_tool(case, universe, rng), {})] + calls},
            ensure_ascii=False,
        )
    if kind == "rejected_call":
        if not calls:
            return None
        bad = copy.deepcopy(calls)
        i = rng.randrange(len(bad))
        bad[i]["function"]["arguments"] = {**bad[i]["function"]["arguments"], "unknown_option": 1}
        return json.dumps({"answer": answer, "tool_calls": bad}, ensure_ascii=False)
    if kind.startswith("trajectory"):
        msgs: list[dict[str, Any]] = [{"role": "user", "content": "question"}]
        if kind == "trajectory_multi_call" and len(calls) >= 2:
            msgs += [
                _assistant(calls[:2], "Both at once."),
                {"role": "tool", "name": calls[0]["function"]["name"], "content": "r"},
            ]
            rest = calls[2:]
        elif kind == "trajectory_multi_call":
            return None
        else:
            rest = calls
        for c in rest:
            msgs += [_assistant([c], "Next."), {"role": "tool", "name": c["function"]["name"], "content": "r"}]
        if kind == "trajectory_early_answer":
            msgs.insert(1, {"role": "assistant", "content": "Let me work it out: maybe 0."})
        if kind == "trajectory_ends_on_tool":
            return json.dumps(msgs, ensure_ascii=False)
        msgs.append({"role": "assistant", "content": answer})
        if kind == "trajectory_extra_steps":
            extra = rng.choice(calls) if calls else _call(rng.choice(tools), {})
            msgs += [_assistant([extra], "Double-check."), {"role": "tool", "name": "x", "content": "r"}]
            if rng.random() < 0.5:
                msgs.append({"role": "assistant", "content": "Checked."})
        return json.dumps(msgs, ensure_ascii=False)
    if kind == "answer_only":
        return answer if rng.random() < 0.5 else json.dumps({"answer": answer}, ensure_ascii=False)
    if kind == "changed_image_args":
        gen = [i for i, c in enumerate(calls) if c["function"]["name"] in IMAGE_GEN_TOOLS]
        if not gen:
            return None
        bad = copy.deepcopy(calls)
        args = bad[rng.choice(gen)]["function"]["arguments"]
        k = rng.choice(sorted(args)) if args else None
        if k is not None:
            args[k] = _other_value(args[k])
        return json.dumps({"answer": answer, "tool_calls": bad}, ensure_ascii=False)
    if kind == "unreadable":
        return rng.choice(
            [
                json.dumps({"answer": answer, "tool_calls": "all"}),
                json.dumps([1, 2]),
                json.dumps({"answer": answer, "tool_calls": [{"arguments": {}}]}),
            ]
        )
    raise ValueError(kind)


# ---- driver ----------------------------------------------------------------------------------------
def predictions(
    cases: list[EvalCase], bench: GTA, seed: int, rnd: int, gold_only: bool = False
) -> list[dict[str, Any]]:
    universe = sorted(set(TOOL_CATEGORIES) | {t["name"] for c in cases for t in c.input.get("tools") or []})
    rows = []
    for case in cases:
        rng = random.Random(f"{seed}:{rnd}:{case.id}")
        gold = bench.gold_prediction(case)
        kinds = {"step:tool": TOOL_KINDS, "step:answer": ANSWER_KINDS, "e2e": E2E_KINDS}[case.category]
        order = list(kinds)
        rng.shuffle(order)
        if gold_only:
            order = ["gold"]
        for kind in order:
            if case.category == "step:tool":
                pred = tool_turn(case, kind, rng, universe)
            elif case.category == "step:answer":
                pred = answer_turn(case, kind, rng, universe, gold)
            else:
                pred = e2e_prediction(case, kind, rng, universe, json.loads(gold)["answer"])
            if pred is not None:
                rows.append({"id": case.id, "result": pred, "kind": f"{case.category}/{kind}"})
                break
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="GTA folder (dataset.json [+ toolmeta.json])")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gold-only", action="store_true", help="one round of gold predictions only")
    args = ap.parse_args()
    bench = GTA(similarity=None)
    cases = bench.load(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for rnd in range(1 if args.gold_only else args.rounds):
        rows = predictions(cases, bench, args.seed, rnd, args.gold_only)
        name = f"r{rnd}.jsonl"
        (args.out / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        counts[name] = dict(sorted(Counter(r["kind"] for r in rows).items()))
    (args.out / "kinds.json").write_text(json.dumps(counts, indent=1) + "\n", encoding="utf-8")
    total = sum(sum(c.values()) for c in counts.values())
    print(json.dumps({"out": str(args.out), "records": total, "kinds": len({k for c in counts.values() for k in c})}))


if __name__ == "__main__":
    main()
