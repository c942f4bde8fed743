"""Seeded T-Eval prediction sets for parity runs: the gold answer plus realistic mistakes.

Reads a folder of T-Eval files (``benchsmith eval derive --only teval`` output, or T-Eval's own
release) and writes ``{"id", "result"}`` JSONL that ``benchsmith eval score --benchmark teval``
reads, plus ``<out>.kinds.json`` (id -> the mistake made), so that a disagreement between two
evaluators can be traced to the kind of answer that caused it.

    python perf/parity/teval_predictions.py --data OUT/teval --out preds.jsonl [--seed 0]

Every record gets one answer; which mistake (or the gold) it gets is drawn from a random
generator seeded with the seed and the record id, so the same data and seed give the same file.
Mistake kinds, per ability (json and str formats unless noted):

* plan: duplicated step, the whole plan twice, interchangeable steps swapped, adjacent steps
  swapped, a step missing, an extra step, a wrong API name, a wrong argument value, a plan that
  is only ``FinishAction`` (json), no ``FinishAction``, steps listed out of id order (json), an
  empty list (json), every step renamed to one API, a step naming two APIs (str), prose,
  numbered lines and sentences joined with ". " (str), fenced JSON, Python-literal dicts,
  truncated JSON;
* instruct: wrong action, wrong / missing / string-typed / boolean-for-number argument, the
  template's keys or markers ignored, prose around the JSON, fenced JSON, Python literals,
  arguments as a JSON string, JSON arguments (``true`` / ``null``) in the string format;
* reason / retrieve / understand: a thought from another step, a restated call, an empty
  thought, a wrong API name, a name next to other ``X.y`` names (str), wrong / missing /
  string-typed arguments, JSON quoting of the arguments (str), prose around JSON, fenced JSON,
  Python literals;
* review: a wrong letter, a full-width colon, no colon, a lower-case letter, a bracketed letter,
  prose before the answer; json: a boolean or string ``is_finished``, fenced JSON.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any, Callable

FINISH = "FinishAction"
GOLD_SHARE = 0.2


def _rng(seed: int, key: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}|{key}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _other_value(value: Any, rng: random.Random) -> Any:
    """A plausible wrong value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([1, -1, 10])
    if isinstance(value, float):
        return round(value * 1.5 + 1, 2)
    if isinstance(value, str):
        if value.startswith("$") and value.endswith("$"):
            return value[:-1] + "_1$"
        if "." in value:  # a column name: another column of the same table
            table, _, col = value.partition(".")
            return f"{table}.{rng.choice(['name', 'id', 'title', 'total'])}" if col else value + "x"
        return value + rng.choice([" ", "s", "x"]) if value else "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {k: _other_value(v, rng) for k, v in value.items()}
    return "x"


def _wrong_args(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    if not args:
        return {"data_source": "$data_1$"}
    out = dict(args)
    key = rng.choice(sorted(out))
    out[key] = _other_value(out[key], rng)
    return out


def _stringly(args: dict[str, Any]) -> dict[str, Any]:
    """Numbers written as strings (equal as str(), not as values)."""
    return {k: (str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v) for k, v in args.items()}


def _boolish(args: dict[str, Any]) -> dict[str, Any]:
    """1/0 where the gold has True/False and True/False where it has 1/0."""
    out = {}
    for k, v in args.items():
        if isinstance(v, bool):
            out[k] = int(v)
        elif isinstance(v, int) and v in (0, 1):
            out[k] = bool(v)
        else:
            out[k] = v
    return out


def _drop_one(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    if not args:
        return args
    out = dict(args)
    out.pop(rng.choice(sorted(out)))
    return out


def _wrap(text: str, kind: str) -> str:
    if kind == "fenced":
        return f"```json\n{text}\n```"
    if kind == "prose":
        return f"Sure. Here is my answer:\n{text}\nLet me know if you need anything else."
    return text


def _pyrepr(value: Any) -> str:
    return repr(value)


# ---- plan ------------------------------------------------------------------------------------
def _plan_steps(gold: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    steps = [copy.deepcopy(s) for s in gold]
    has_finish = bool(steps) and steps[-1].get("name") == FINISH
    return (steps[:-1] if has_finish else steps), has_finish


def _renumber(steps: list[dict[str, Any]], finish: bool) -> list[dict[str, Any]]:
    out = [dict(s, id=i) for i, s in enumerate(steps)]
    if finish:
        out.append({"id": len(out), "prev": [len(out) - 1] if out else [], "name": FINISH, "args": {}})
    return out


def _same_name_pairs(steps: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(steps)) for j in range(i + 1, len(steps)) if steps[i]["name"] == steps[j]["name"]]


def plan_variants(gold: list[dict[str, Any]], api: list[str], rng: random.Random) -> dict[str, Callable[[], Any]]:
    """kind -> a function giving the predicted step list (or raw text for malformed kinds)."""
    steps, _ = _plan_steps(gold)
    n = len(steps)

    def duplicate() -> Any:
        i = rng.randrange(n)
        return _renumber(steps[: i + 1] + [copy.deepcopy(steps[i])] + steps[i + 1 :], True)

    def twice() -> Any:
        return _renumber(steps + copy.deepcopy(steps), True)

    def interchange() -> Any:
        pairs = _same_name_pairs(steps)
        if not pairs:
            return swap()
        i, j = rng.choice(pairs)
        s = list(steps)
        s[i], s[j] = s[j], s[i]
        return _renumber(s, True)

    def swap() -> Any:
        if n < 2:
            return duplicate()
        i = rng.randrange(n - 1)
        s = list(steps)
        s[i], s[i + 1] = s[i + 1], s[i]
        return _renumber(s, True)

    def missing() -> Any:
        if n < 2:
            return [{"id": 0, "name": FINISH, "args": {}}]
        i = rng.randrange(n)
        return _renumber(steps[:i] + steps[i + 1 :], True)

    def extra() -> Any:
        i = rng.randrange(n + 1)
        name = rng.choice(api) if api else "filter_data"
        return _renumber(steps[:i] + [{"name": name, "args": {"data_source": "$data_1$"}}] + steps[i:], True)

    def wrong_name() -> Any:
        s = [dict(x) for x in steps]
        i = rng.randrange(n)
        others = [a for a in api if a != s[i]["name"]] or ["lookup"]
        s[i]["name"] = rng.choice(others)
        return _renumber(s, True)

    def wrong_args() -> Any:
        s = [dict(x) for x in steps]
        i = rng.randrange(n)
        s[i]["args"] = _wrong_args(s[i].get("args") or {}, rng)
        return _renumber(s, True)

    def all_one_name() -> Any:
        name = steps[0]["name"]
        return _renumber([dict(x, name=name) for x in steps], True)

    def no_finish() -> Any:
        return _renumber(steps, False)

    def out_of_order() -> Any:
        full = _renumber(steps, True)
        rng.shuffle(full)
        return full

    return {
        "duplicate_step": duplicate,
        "plan_twice": twice,
        "interchangeable_swapped": interchange,
        "swapped_steps": swap,
        "missing_step": missing,
        "extra_step": extra,
        "wrong_api_name": wrong_name,
        "wrong_args": wrong_args,
        "one_api_name": all_one_name,
        "no_finish": no_finish,
        "out_of_id_order": out_of_order,
        "finish_only": lambda: [{"id": 0, "name": FINISH, "args": {}}],
    }


def plan_json_answer(gold: list[dict[str, Any]], api: list[str], rng: random.Random) -> tuple[str, str]:
    if rng.random() < GOLD_SHARE:
        return "gold", _dumps(gold)
    variants = plan_variants(gold, api, rng)
    kinds = list(variants) + ["fenced", "prose", "python_literal", "empty_list", "truncated"]
    kind = rng.choice(kinds)
    if kind in variants:
        steps = variants[kind]()
        style = rng.choice(["json", "json", "fenced", "python_literal"])
        text = _pyrepr(steps) if style == "python_literal" else _dumps(steps)
        return kind, _wrap(text, "fenced") if style == "fenced" else text
    if kind == "python_literal":
        return kind, _pyrepr(gold)
    if kind == "empty_list":
        return kind, "[]"
    if kind == "truncated":
        text = _dumps(gold)
        return kind, text[: len(text) // 2]
    return kind, _wrap(_dumps(gold), kind)


def _plan_line(step: dict[str, Any], style: str, n: int) -> str:
    args = step.get("args") or {}
    if style == "numbered":
        return f"{n}. Call {step['name']} with {args!r}"
    if style == "bare":
        return f"{step['name']}"
    return f"Use {step['name']} with {args!r}"


def plan_str_answer(gold: list[dict[str, Any]], api: list[str], rng: random.Random) -> tuple[str, str]:
    steps, _ = _plan_steps(gold)
    if rng.random() < GOLD_SHARE:
        return "gold", "\n".join(_plan_line(s, "use", i + 1) for i, s in enumerate(steps))
    variants = plan_variants(gold, api, rng)
    variants.pop("finish_only")
    variants.pop("out_of_id_order")
    kinds = list(variants) + ["numbered", "sentences", "bare_names", "two_apis_in_step", "prose", "nothing"]
    kind = rng.choice(kinds)
    if kind in variants:
        pred = [s for s in variants[kind]() if s["name"] != FINISH]
        return kind, "\n".join(_plan_line(s, "use", i + 1) for i, s in enumerate(pred))
    if kind == "numbered":
        return kind, "\n".join(_plan_line(s, "numbered", i + 1) for i, s in enumerate(steps))
    if kind == "sentences":
        return kind, ". ".join(_plan_line(s, "use", i + 1) for i, s in enumerate(steps)) + "."
    if kind == "bare_names":
        return kind, "\n".join(_plan_line(s, "bare", i + 1) for i, s in enumerate(steps))
    if kind == "two_apis_in_step":
        lines = []
        for s in steps:
            longer = [a for a in api if a != s["name"] and a.startswith(s["name"])]
            alt = longer[0] if longer else (rng.choice(api) if api else s["name"])
            lines.append(f"Use {s['name']} (or {alt}) with {s.get('args') or {}!r}")
        return kind, "\n".join(lines)
    if kind == "prose":
        body = "\n".join(_plan_line(s, "use", i + 1) for i, s in enumerate(steps))
        return kind, f"To answer this I will work step by step.\n{body}\nThen I report the result"
    return kind, "I would look the answer up in the database and report it."


# ---- instruct --------------------------------------------------------------------------------
def instruct_answer(rec: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    template = rec.get("template") or {}
    gold = rec["ground_truth"]
    action, args = gold.get("action"), dict(gold.get("args") or {})
    fmt = rec["meta_data"]["response_format"]
    thought = "I call the tool the user asked for."
    kinds = ["gold", "wrong_action", "wrong_args", "missing_arg", "string_numbers", "bool_numbers"]
    if fmt == "json":
        kinds += ["default_keys", "prose", "fenced", "python_literal", "args_as_string"]
    else:
        kinds += ["json_args", "missing_end_marker", "default_markers", "extra_spaces"]
    kind = "gold" if rng.random() < GOLD_SHARE else rng.choice(kinds[1:])
    if kind == "wrong_action":
        action = action + "_v2" if isinstance(action, str) else "unknown"
    elif kind == "wrong_args":
        args = _wrong_args(args, rng)
    elif kind == "missing_arg":
        args = _drop_one(args, rng)
    elif kind == "string_numbers":
        args = _stringly(args)
    elif kind == "bool_numbers":
        args = _boolish(args)
    if fmt == "json":
        keys = (template.get("thought", "thought"), template.get("action", "action"), template.get("args", "args"))
        if kind == "default_keys":
            keys = (
                ("thought", "action", "args")
                if keys != ("thought", "action", "args")
                else ("Thought", "Action", "Input")
            )
        obj: dict[str, Any] = {keys[0]: thought, keys[1]: action, keys[2]: args}
        if kind == "args_as_string":
            obj[keys[2]] = _dumps(args)
        text = _pyrepr(obj) if kind == "python_literal" else _dumps(obj)
        return kind, _wrap(text, kind)
    t = dict(template)
    if kind == "default_markers":
        t = {
            "thought_start": "Thought: ",
            "thought_end": "\n",
            "action_start": "Action: ",
            "action_end": "\n",
            "args_start": "Action Input: ",
            "args_end": "\n",
        }
        if t == template:
            t = {
                "thought_start": "<thought>",
                "thought_end": "</thought>\n",
                "action_start": "<name>",
                "action_end": "</name>\n",
                "args_start": "<args>",
                "args_end": "</args>",
            }
    args_text = _dumps(args) if kind == "json_args" else repr(args)
    sp = " " if kind == "extra_spaces" else ""
    text = (
        f"{t.get('thought_start', '')}{thought}{t.get('thought_end', '')}"
        f"{t.get('action_start', '')}{sp}{action}{sp}{t.get('action_end', '')}"
        f"{t.get('args_start', '')}{sp}{args_text}{sp}"
    )
    if kind != "missing_end_marker":
        text += t.get("args_end", "")
    return kind, text


# ---- reason / retrieve / understand ----------------------------------------------------------
def rru_json_answer(gold: dict[str, Any], other: dict[str, Any], api: list[str], rng: random.Random) -> tuple[str, str]:
    thought, name, args = gold.get("thought", ""), gold.get("name", ""), dict(gold.get("args") or {})
    kinds = [
        "other_thought",
        "restated_call",
        "empty_thought",
        "wrong_name",
        "wrong_args",
        "missing_arg",
        "string_numbers",
        "no_args_key",
        "prose",
        "fenced",
        "python_literal",
        "truncated",
    ]
    kind = "gold" if rng.random() < GOLD_SHARE else rng.choice(kinds)
    obj: dict[str, Any] = {"thought": thought, "name": name, "args": args}
    if kind == "other_thought":
        obj["thought"] = other.get("thought", "")
    elif kind == "restated_call":
        obj["thought"] = f"Call {name} with {_dumps(args)}."
    elif kind == "empty_thought":
        obj["thought"] = ""
    elif kind == "wrong_name":
        obj["name"] = rng.choice([a for a in api if a != name] or ["lookup"])
    elif kind == "wrong_args":
        obj["args"] = _wrong_args(args, rng)
    elif kind == "missing_arg":
        obj["args"] = _drop_one(args, rng)
    elif kind == "string_numbers":
        obj["args"] = _stringly(args)
    elif kind == "no_args_key":
        obj.pop("args")
    text = _pyrepr(obj) if kind == "python_literal" else _dumps(obj)
    if kind == "truncated":
        return kind, text[: len(text) // 2]
    return kind, _wrap(text, kind)


def reason_str_answer(gold: dict[str, Any], other: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    kind = (
        "gold"
        if rng.random() < GOLD_SHARE
        else rng.choice(["other_thought", "restated_call", "empty", "prefixed", "first_half"])
    )
    thought = gold.get("thought", "")
    if kind == "other_thought":
        return kind, other.get("thought", "")
    if kind == "restated_call":
        return kind, f"Call {gold.get('name')} with {_dumps(gold.get('args') or {})}."
    if kind == "empty":
        return kind, ""
    if kind == "prefixed":
        return kind, f"Thought: {thought}"
    if kind == "first_half":
        words = thought.split()
        return kind, " ".join(words[: max(1, len(words) // 2)])
    return kind, thought


def retrieve_str_answer(gold: dict[str, Any], api: list[str], rng: random.Random) -> tuple[str, str]:
    name = gold.get("name", "")
    kind = (
        "gold"
        if rng.random() < GOLD_SHARE
        else rng.choice(["wrong_name", "sentence", "with_dotted_column", "with_finish", "two_names", "quoted"])
    )
    if kind == "wrong_name":
        return kind, rng.choice([a for a in api if a != name] or ["lookup"])
    if kind == "sentence":
        return kind, f"The next API to call is {name}."
    if kind == "with_dotted_column":
        cols = [v for v in (gold.get("args") or {}).values() if isinstance(v, str) and re.fullmatch(r"\w+\.\w+", v)]
        return kind, f"{name} on {cols[0] if cols else 'tracks.name'}"
    if kind == "with_finish":
        return kind, f"{name}, then {FINISH}"
    if kind == "two_names":
        return kind, f"{name} or {rng.choice(api) if api else 'lookup'}"
    if kind == "quoted":
        return kind, f"'{name}'"
    return kind, name


def understand_str_answer(gold: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    args = dict(gold.get("args") or {})
    kind = (
        "gold"
        if rng.random() < GOLD_SHARE
        else rng.choice(["json_quoting", "quoted", "padded", "wrong_args", "missing_arg", "string_numbers", "prose"])
    )
    if kind == "json_quoting":
        return kind, _dumps(args)
    if kind == "quoted":
        return kind, f"'{args!r}'"
    if kind == "padded":
        return kind, f"  {args!r}\n"
    if kind == "wrong_args":
        return kind, repr(_wrong_args(args, rng))
    if kind == "missing_arg":
        return kind, repr(_drop_one(args, rng))
    if kind == "string_numbers":
        return kind, repr(_stringly(args))
    if kind == "prose":
        return kind, f"The arguments are {args!r}"
    return kind, repr(args)


# ---- review ----------------------------------------------------------------------------------
def review_answer(gold: dict[str, Any], fmt: str, rng: random.Random) -> tuple[str, str]:
    letter = str(gold.get("answer", "A"))[:1]
    wrong = rng.choice([x for x in "ABCDE" if x != letter])
    if fmt == "json":
        kind = (
            "gold"
            if rng.random() < GOLD_SHARE
            else rng.choice(["wrong_letter", "is_finished_string", "no_is_finished", "fenced", "prose"])
        )
        obj: dict[str, Any] = {"answer": letter, "is_finished": letter == "A"}
        if kind == "wrong_letter":
            obj = {"answer": wrong, "is_finished": wrong == "A"}
        elif kind == "is_finished_string":
            obj["is_finished"] = "yes" if letter == "A" else "no"
        elif kind == "no_is_finished":
            obj.pop("is_finished")
        return kind, _wrap(_dumps(obj), kind)
    kind = (
        "gold"
        if rng.random() < GOLD_SHARE
        else rng.choice(
            [
                "wrong_letter",
                "full_width_colon",
                "no_colon",
                "lower_case",
                "bracketed",
                "prose_before",
                "letter_and_label",
            ]
        )
    )
    if kind == "wrong_letter":
        return kind, f"Answer: {wrong}"
    if kind == "full_width_colon":
        return kind, f"Answer：{letter}"
    if kind == "no_colon":
        return kind, letter
    if kind == "lower_case":
        return kind, f"Answer: {letter.lower()}"
    if kind == "bracketed":
        return kind, f"Answer: [{letter}]"
    if kind == "prose_before":
        return kind, f"Looking at the response: it is clear. Answer: {letter}"
    if kind == "letter_and_label":
        return kind, f"Answer: {letter}: see the options above"
    return kind, f"Answer: {letter}"


# ---- driver ----------------------------------------------------------------------------------
def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _gold_step(gt: Any) -> dict[str, Any]:
    if isinstance(gt, str):
        try:
            gt = json.loads(gt)
        except json.JSONDecodeError:
            gt = ast.literal_eval(gt)
    return gt if isinstance(gt, dict) else {}


def _api_names(rec: dict[str, Any]) -> list[str]:
    meta = rec.get("meta") or {}
    names = meta.get("API_list")
    if isinstance(names, list) and names:
        return [str(n) for n in names]
    found = re.findall(r'"name": "([A-Za-z_][A-Za-z0-9_]*)", "description"', rec["origin_prompt"][0]["content"])
    return list(dict.fromkeys(found))


def generate(data: Path, seed: int) -> tuple[list[dict[str, str]], dict[str, str]]:
    preds: list[dict[str, str]] = []
    kinds: dict[str, str] = {}

    def add(stem: str, key: str, kind: str, text: str) -> None:
        rid = f"{stem}/{key}"
        preds.append({"id": rid, "result": text})
        kinds[rid] = kind

    for path in sorted(data.glob("*.json")):
        stem = path.stem
        content = _load(path)
        if not isinstance(content, dict) or stem == "derive_report":
            continue
        keys = list(content)
        for n, key in enumerate(keys):
            rec = content[key]
            rng = _rng(seed, f"{stem}/{key}")
            other = _gold_step(content[keys[(n + 1) % len(keys)]].get("ground_truth"))
            if stem.startswith("instruct"):
                add(stem, key, *instruct_answer(rec, rng))
            elif stem.startswith("plan_json"):
                add(stem, key, *plan_json_answer(rec["ground_truth"], _api_names(rec), rng))
            elif stem.startswith("plan_str"):
                add(stem, key, *plan_str_answer(rec["ground_truth"], _api_names(rec), rng))
            elif stem.startswith("reason_retrieve_understand_json"):
                add(stem, key, *rru_json_answer(_gold_step(rec["ground_truth"]), other, _api_names(rec), rng))
            elif stem.startswith("reason_str"):
                add(stem, key, *reason_str_answer(_gold_step(rec["ground_truth"]), other, rng))
            elif stem.startswith("retrieve_str"):
                add(stem, key, *retrieve_str_answer(_gold_step(rec["ground_truth"]), _api_names(rec), rng))
            elif stem.startswith("understand_str"):
                add(stem, key, *understand_str_answer(_gold_step(rec["ground_truth"]), rng))
            elif stem.startswith("review_str"):
                add(stem, key, *review_answer(rec["ground_truth"], "str", rng))
            elif stem.startswith("review_json"):
                add(stem, key, *review_answer(rec["ground_truth"], "json", rng))
    return preds, kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="folder of T-Eval files (eval derive --only teval output)")
    ap.add_argument("--out", required=True, type=Path, help="predictions JSONL to write")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    preds, kinds = generate(args.data, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in preds), encoding="utf-8")
    args.out.with_suffix(".kinds.json").write_text(json.dumps(kinds, indent=0, ensure_ascii=False), encoding="utf-8")
    counts: dict[str, int] = {}
    for k in kinds.values():
        counts[k] = counts.get(k, 0) + 1
    print(f"{len(preds)} predictions, {len(counts)} kinds -> {args.out}")
    print(json.dumps(dict(sorted(counts.items())), ensure_ascii=False))


if __name__ == "__main__":
    main()
