"""A benchsmith split written in ACEBench's own layout (``benchsmith eval export --to acebench``;
docs/eval/export.md)."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

from benchsmith.construction.sandbox import Sandbox
from benchsmith.eval.calls import python_calls
from benchsmith.eval.export import (
    CategoryFiles,
    ExportReport,
    SkipSample,
    check_python_syntax,
    export_with_answers,
    messages_with_notes,
    prepare_sample,
    sample_id,
    schema_dialect,
)
from benchsmith.schemas import Sample, Tool, ToolCall, ToolError

acebench_schema = schema_dialect(
    {
        "string": "string",
        "integer": "integer",
        "number": "number",
        "boolean": "boolean",
        "array": "array",
        "object": "object",
        "null": "any",
    },
    "any",
    "object",
    "A JSON-Schema property in ACEBench's dialect (JSON Schema; unions become ``any``).",
)


def acebench_function(tool: Tool) -> dict[str, Any]:
    """A tool in ACEBench's layout; a tool without parameters gets ``"parameters": {}`` (the only
    form ACEBench's official checker accepts for a call without arguments)."""
    params = tool.parameters
    if not params.properties:
        return {"name": tool.name, "description": tool.description, "parameters": {}}
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": {
            "type": "object",
            "properties": {k: acebench_schema(v) for k, v in params.properties.items()},
            "required": list(params.required),
        },
    }


def acebench_order(tools: list[Tool]) -> list[Tool]:
    """The tools, stably reordered so that a name containing another tool's name comes first
    (ACEBench's official checker takes the first function whose name is a substring of the
    answer key).

    >>> [t.name for t in acebench_order([Tool(name=n, description="d") for n in ("get", "get_all", "put")])]
    ['get_all', 'get', 'put']
    """
    names = [t.name for t in tools]
    inside = {n: sum(1 for m in names if m != n and m in n) for n in names}
    return sorted(tools, key=lambda t: -inside[t.name])


def acebench_answer(calls: list[ToolCall], tool_names: set[str]) -> dict[str, dict[str, Any]]:
    """``{key: arguments}`` in call order; a tool called n > 1 times gets keys ``<name>_1`` ..
    ``<name>_n`` (ACEBench's convention). Raises ``SkipSample`` if such a key is a tool name."""
    counts = Counter(c.name for c in calls)
    seen: Counter[str] = Counter()
    out: dict[str, dict[str, Any]] = {}
    for c in calls:
        if counts[c.name] == 1:
            key = c.name
        else:
            seen[c.name] += 1
            key = f"{c.name}_{seen[c.name]}"
            if key in tool_names or key in counts:
                raise SkipSample("ambiguous_duplicate_name", f"answer key {key!r} is also a tool name")
        out[key] = copy.deepcopy(c.arguments)
    return out


def is_agent_sample(sample: Sample) -> bool:
    """A sandbox episode: a dialogue, a scenario or an expected end state on a sandbox environment."""
    env = sample.metadata.get("environment")
    return (
        isinstance(env, dict)
        and env.get("kind") == "sandbox"
        and bool(sample.dialogue or "scenario_id" in sample.metadata or "expected_state" in sample.metadata)
    )


def agent_record(sample: Sample) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(category, record, answer)`` of a sandbox episode in ACEBench's agent layout (the id is set
    by the caller). A dialogue becomes ``agent_multi_turn`` (its goal and persona are the simulated
    user's instruction); a scenario ``agent_multi_step`` (its query is the one user message). The
    sandbox domains are the involved classes, configured by their initial state; the gold calls run
    in a fresh sandbox give the milestones (arguments resolved: ACEBench has no references; one
    milestone per assistant reply of a dialogue, one per call of a scenario) and the ground truth
    (each domain's full end state). Raises ``SkipSample`` when the gold calls do not replay."""
    config = sample.metadata["environment"].get("config")
    if not isinstance(config, dict) or not config:
        raise SkipSample("no_gold_calls", "the sandbox environment has no config")
    box = Sandbox(config)
    calls = [st.call for st in sample.gold if st.call is not None and st.verdict in (None, "success")]
    if not calls:
        raise SkipSample("no_gold_calls")
    for call in calls:
        try:
            box.call(call.name, call.arguments, call.label)
        except ToolError as exc:
            raise SkipSample(
                "unresolved_reference" if exc.code == "unresolved_reference" else "gold_call_off_schema",
                f"gold call {call.name} does not replay: {exc}",
            ) from None
    resolved = [{"name": r.name, "arguments": r.arguments} for r in box.log]
    if sample.dialogue:
        groups: list[list[dict[str, Any]]] = []
        labels = {call.label: n for n, call in enumerate(calls)}
        for m in sample.dialogue:
            got = [resolved[labels[c.label]] for c in m.tool_calls if c.label in labels]
            if got:
                groups.append(got)
        category = "agent_multi_turn"
        persona = sample.metadata.get("persona")
        question = str(sample.metadata.get("goal") or sample.query or "") + (f" {persona}" if persona else "")
    else:
        groups = [[c] for c in resolved]
        category = "agent_multi_step"
        question = sample.query or ""
    check_python_syntax([ToolCall(name=c["name"], arguments=c["arguments"]) for c in resolved])
    state = box.state()
    record = {
        "question": question,
        "initial_config": config,
        "path": [],
        "function": [acebench_function(t) for t in acebench_order(sample.tools)],
        "involved_classes": list(config),
    }
    answer = {"ground_truth": [{d: state[d]} for d in config], "mile_stone": [python_calls(g) for g in groups]}
    return category, record, answer


def export_acebench(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write ``data_<category>.json`` + ``possible_answer/`` (ACEBench normal and agent families).

    One call: ``normal_single_turn_single_function``; several (chains included, outputs passed
    as ``$call_K$``): ``normal_single_turn_parallel_function``. Sandbox dialogues and scenarios:
    ``agent_multi_turn`` / ``agent_multi_step`` (:func:`agent_record`). Streams: one sample at a
    time, each record appended to its category's files."""
    return export_with_answers("acebench", "data_", split_dir, out_dir, _export_sample)


def _export_sample(i: int, sample: Sample, by_cat: CategoryFiles, rep: ExportReport) -> None:
    if is_agent_sample(sample):
        try:
            cat, record, answer = agent_record(sample)
        except SkipSample as exc:
            rep.skip(sample_id(sample, i), exc)
            return
        rid = f"{cat}_{by_cat.count(cat)}"
        by_cat.add(cat, {"id": rid, **record}, {"id": rid, **answer})
        rep.records[cat] += 1
        rep.id_map[rid] = sample_id(sample, i)
        return
    try:
        p = prepare_sample(sample, i)
        check_python_syntax(p.calls)
        cat = "normal_single_turn_single_function" if len(p.calls) == 1 else "normal_single_turn_parallel_function"
        gold = acebench_answer(p.calls, set(p.tools))
        rid = f"{cat}_{by_cat.count(cat)}"
        msgs = messages_with_notes(p, positional=True)
        # ACEBench reads "system:" lines as the assistant's replies: system text joins the first user line
        system = "\n".join(m["content"] for m in msgs if m["role"] == "system")
        users = [m["content"] for m in msgs if m["role"] == "user"]
        if system:
            users[0] = f"{system}\n{users[0]}"
        question = "\n".join(f"user: {u}" for u in users)
        record = {
            "id": rid,
            "question": question + "\n",
            "function": [acebench_function(t) for t in acebench_order(p.sample.tools)],
        }
        by_cat.add(cat, record, {"id": rid, "ground_truth": gold})
        rep.records[cat] += 1
        rep.id_map[rid] = p.sid
    except SkipSample as exc:
        rep.skip(sample_id(sample, i), exc)
