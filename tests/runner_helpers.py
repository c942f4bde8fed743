"""Test doubles for the evaluation runner: scripted chat clients whose reply is a pure function of
the request (no network). ``GoldClient`` answers every case with its gold answer, which lets a
test check that a perfect model gets the maximum score through run -> score."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from benchsmith.eval import EvalCase, get_benchmark
from benchsmith.eval.tasks import Request

REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[^$]*)?)\$")


@dataclass
class FakeReply:
    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 5})
    latency_s: float = 0.001
    attempts: int = 1


class ScriptedClient:
    """``acomplete`` = ``fn(messages, json_schema, tools)``; counts calls; optional delay."""

    def __init__(self, fn: Callable[..., Any], delay: float = 0.0) -> None:
        self.fn = fn
        self.delay = delay
        self.calls = 0
        self.requests: list[dict[str, Any]] = []

    async def acomplete(self, messages, *, tools=None, json_schema=None, max_tokens=None, stop=None):  # noqa: ANN001
        self.calls += 1
        self.requests.append({"messages": messages, "json_schema": json_schema, "tools": tools})
        if self.delay:
            await asyncio.sleep(self.delay)
        out = self.fn(messages, json_schema, tools)
        if isinstance(out, BaseException):
            raise out
        return out if isinstance(out, FakeReply) else FakeReply(str(out))


def _remap(value: Any, labels: dict[str, str]) -> Any:
    if isinstance(value, str):
        return REF.sub(lambda m: f"${labels.get(m.group(1), m.group(1))}{m.group(2)}$", value)
    if isinstance(value, list):
        return [_remap(v, labels) for v in value]
    if isinstance(value, dict):
        return {k: _remap(v, labels) for k, v in value.items()}
    return value


_ACE = [
    (
        re.compile(r"^Missing necessary parameters \((.*)\) for the api \((.*)\)$"),
        lambda m: {
            "decision": "missing_parameters",
            "calls": [],
            "api": m.group(2),
            "parameters": [p.strip() for p in m.group(1).split(",")],
            "values": [],
        },
    ),
    (
        re.compile(r"^There is incorrect value \((.*)\) for the parameters \((.*)\) in the conversation history\.$"),
        lambda m: {
            "decision": "incorrect_value",
            "calls": [],
            "api": "",
            "parameters": [m.group(2)],
            "values": [m.group(1)],
        },
    ),
    (
        re.compile(r"^Due to the limitations of the function, I cannot solve this problem\.$"),
        lambda m: {"decision": "cannot_solve", "calls": [], "api": "", "parameters": [], "values": []},
    ),
]


def gold_reply(task_name: str, case: EvalCase) -> str:
    """The reply text a perfect model would give to a single-call task's request for ``case``."""
    bench = get_benchmark("acebench" if task_name.startswith("acebench") else task_name)
    gold = bench.gold_prediction(case)
    if task_name == "teval":
        return gold
    if task_name == "toolassess":
        value = json.loads(gold)
        if case.category.startswith("multi:"):
            return json.dumps(
                {"answers": value if case.category.endswith("awareness") else [v[0] if v else "none" for v in value]}
            )
        return json.dumps(
            {"decision": value} if case.category == "awareness" else {"tool": value[0] if value else "none"}
        )
    if task_name == "gta":
        value = json.loads(gold)
        return json.dumps(
            {
                "thought": value.get("thought", ""),
                "tool_calls": value.get("tool_calls") or [],
                "content": value.get("content", ""),
            }
        )
    if task_name.startswith("acebench"):
        text = json.loads(gold)[0]
        for rx, make in _ACE:
            m = rx.match(text)
            if m:
                return json.dumps(make(m))
        raise AssertionError(f"no JSON decision for ACEBench gold {text!r}")
    raise AssertionError(task_name)


class GoldClient(ScriptedClient):
    """A perfect model for the planned tasks of a run (single-call tasks by request key,
    nl2api by playing the gold chain step by step)."""

    def __init__(self, planned: list[Any], delay: float = 0.0) -> None:
        self.by_key: dict[str, str] = {}
        self.nl2api: dict[str, EvalCase] = {}
        self.gta_e2e: dict[str, tuple[EvalCase, list[str]]] = {}
        for p in planned:
            for c in p.cases:
                if p.task.name == "nl2api":
                    self.nl2api[f"Question: {c.input['query']}"] = c
                elif p.task.name == "gta" and c.category == "e2e":  # a solo episode with the split's tools
                    dataset = json.loads((Path(c.meta["root"]) / "dataset.json").read_text(encoding="utf-8"))
                    labels = [
                        m["label"]
                        for m in dataset[c.meta["sample"]]["dialogs"]
                        if m.get("role") == "tool" and m.get("label")
                    ]
                    self.gta_e2e[f"User: {c.input['dialogs'][0]['content']}"] = (c, labels)
                else:
                    req: Request = p.task.request(c)
                    self.by_key[self._key(req.messages, req.json_schema, req.tools)] = gold_reply(p.task.name, c)
        super().__init__(self._answer, delay)

    @staticmethod
    def _key(messages: Any, json_schema: Any, tools: Any) -> str:
        return json.dumps([messages, json_schema, tools], sort_keys=True, ensure_ascii=False)

    def _answer(self, messages, json_schema, tools):  # noqa: ANN001
        hit = self.by_key.get(self._key(messages, json_schema, tools))
        if hit is not None:
            return hit
        episode = [i for i, m in enumerate(messages) if m["role"] == "user" and m["content"] in self.gta_e2e]
        if episode:  # GTA end to end: replay the gold calls (outputs passed on by their reported labels), answer
            qi = episode[-1]
            case, gold_labels = self.gta_e2e[messages[qi]["content"]]
            results = [m["content"] for m in messages[qi + 1 :] if m["content"].startswith("Results:")]
            kept = [k for r in results for k in re.findall(r"\(kept as \$(\w+)\$\)", r)]
            calls = case.gold["tool_calls"]
            if len(results) < len(calls):
                args = json.dumps(calls[len(results)]["arguments"])
                for g, k in zip(gold_labels, kept):
                    args = args.replace(f"${g}", f"${k}")
                return json.dumps(
                    {"tool_calls": [{"name": calls[len(results)]["name"], "arguments": json.loads(args)}]}
                )
            from benchsmith.eval.gta import parse_final

            answer, _ = parse_final(get_benchmark("gta").gold_prediction(case))
            return json.dumps({"message": answer})
        # nl2api: find the case by its question (the last user message that starts with "Question:")
        qi = max(i for i, m in enumerate(messages) if m["role"] == "user" and m["content"].startswith("Question:"))
        question = messages[qi]["content"].split("\n")[0]
        case = self.nl2api[question]
        done = sum(1 for m in messages[qi + 1 :] if m["role"] == "user" and m["content"].startswith("Output $out_"))
        calls = case.gold["calls"]
        if done >= len(calls):
            return json.dumps({"thought": "done", "action": "finish", "arguments": {}})
        labels = {c.get("label"): f"out_{i + 1}" for i, c in enumerate(calls) if c.get("label")}
        call = calls[done]
        return json.dumps(
            {"thought": f"step {done + 1}", "action": call["name"], "arguments": _remap(call["arguments"], labels)}
        )


class GoldToolsClient(ScriptedClient):
    """A perfect model in native tool-calling mode for nl2api cases (tool_calls + tool messages)."""

    def __init__(self, cases: list[EvalCase]) -> None:
        self.cases = {f"Question: {c.input['query']}": c for c in cases}
        super().__init__(self._answer)

    def _answer(self, messages, json_schema, tools):  # noqa: ANN001
        assert tools and json_schema is None
        question = next(
            m["content"].split("\n")[0]
            for m in messages
            if m["role"] == "user" and m["content"].startswith("Question:")
        )
        case = self.cases[question]
        done = sum(1 for m in messages if m["role"] == "tool")
        assert all(not m["content"].startswith("Error") for m in messages if m["role"] == "tool"), messages[-1]
        calls = case.gold["calls"]
        if done >= len(calls):
            return FakeReply("The answer is in the last output.")
        labels = {c.get("label"): f"out_{i + 1}" for i, c in enumerate(calls) if c.get("label")}
        call = calls[done]
        return FakeReply(
            "",
            tool_calls=[
                {"id": f"call_{done}", "name": call["name"], "arguments": json.dumps(_remap(call["arguments"], labels))}
            ],
        )
