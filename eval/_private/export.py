"""Exporters: a benchsmith split (``samples.jsonl``) written in other benchmarks' own layouts.

``export_bfcl``, ``export_acebench`` and ``export_gta`` are pure functions of the split folder:
they read ``samples.jsonl``, write the benchmark's files to ``out_dir`` (plus ``id_map.json``
and ``export_report.json``) and return the report. Every sample is either exported or listed
under ``skipped`` with a reason code; the same split gives the same files byte for byte.
``EXPORTERS`` maps a format name to its exporter (``teval`` wraps ``derive_teval``). Every
mapping choice is documented in ``docs/eval/export.md``.

>>> bfcl_schema({"type": ["string", "integer"], "description": "A value."})
{'type': 'any', 'description': 'A value. (accepts: string | integer)'}
>>> bfcl_schema({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}})
{'type': 'array', 'items': {'type': 'dict', 'properties': {'n': {'type': 'float'}}}}
>>> gta_aliases(2.0), gta_aliases(1234), gta_aliases(0.333333)
(['2.0', '2'], ['1234', '1,234'], ['0.333333', '0.33'])
"""

from __future__ import annotations

import copy
import json
import keyword
import math
import re
import string
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsmith.schemas import (
    ExactAnswer,
    NoAnswer,
    ReferenceAnswer,
    Sample,
    Tool,
    ToolCall,
    UserError,
    WhitelistAnswer,
    parse_reference,
    read_jsonl,
    write_json,
)

REPORT_FILE = "export_report.json"
ID_MAP_FILE = "id_map.json"
CALL_LABEL = "call_{}"            # the K-th exported call's output is written $call_K$
MAX_ANSWER_CELLS = 100            # GTA: a longer exact answer is skipped (answer_too_long)

# skip reasons (codes in the report)
REASONS = {
    "not_verified": "the sample's verification status is not 'verified'",
    "no_gold_calls": "the gold trajectory has no visible tool call",
    "unsupported_dialogue": "the dialogue holds assistant/tool messages (only system and user messages map)",
    "gold_tool_missing": "a gold call names a tool the sample does not offer",
    "gold_call_off_schema": "a gold call misses a required argument or passes one the tool does not define",
    "unresolved_reference": "a gold call refers to a label no earlier call sets",
    "label_collision": "a set-up label already has the $call_K$ form used for exported calls",
    "multi_step_chain": "a gold call uses an earlier gold call's output (BFCL is single-turn, calls are independent)",
    "not_python_syntax": "a gold call's name or argument names cannot be written as a Python call",
    "empty_string_value": "a gold argument is '' (BFCL reads '' as 'may be omitted')",
    "ambiguous_duplicate_name": "a repeated call's <name>_<n> answer key is itself a tool name",
    "no_answer": "the sample has no judged answer (answer kind 'none')",
    "empty_answer": "the exact answer has no cell that can be written as text",
    "answer_too_long": f"the exact answer has more than {MAX_ANSWER_CELLS} distinct cells",
}

_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class _Skip(Exception):
    def __init__(self, reason: str, message: str = "") -> None:
        assert reason in REASONS, reason
        self.reason = reason
        self.message = message or REASONS[reason]
        super().__init__(self.message)


# ---- reading the split and preparing each sample --------------------------------------------------
def _load_split(split_dir: str | Path) -> tuple[Path, list[Sample]]:
    split = Path(split_dir)
    path = split / "samples.jsonl"
    if not path.is_file():
        raise UserError(f"{split} has no samples.jsonl", fix="pass a split folder written by `benchsmith nl2api build`")
    return split, read_jsonl(path, Sample)


@dataclass
class _Prepared:
    """A sample reduced to what every format needs: messages, relabelled calls, observations."""

    sample: Sample
    sid: str
    messages: list[dict[str, str]]          # system/user messages, without the notes
    available: list[tuple[str, ToolCall]]    # set-up and hidden calls the model may refer to, by label
    calls: list[ToolCall]                    # visible gold calls, labels rewritten to call_K
    observations: list[Any]
    thoughts: list[str | None]
    final_thought: str | None
    chained: bool                            # some call refers to an earlier visible call's output
    tools: dict[str, Tool] = field(default_factory=dict)


def _rewrite_refs(value: Any, mapping: dict[str, str]) -> Any:
    """``value`` with every exact ``$label(.key)$`` whose label is in ``mapping`` renamed."""
    if isinstance(value, str):
        ref = parse_reference(value)
        if ref is not None and ref.label in mapping:
            return f"${mapping[ref.label]}.{ref.key}$" if ref.key else f"${mapping[ref.label]}$"
        return value
    if isinstance(value, list):
        return [_rewrite_refs(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: _rewrite_refs(v, mapping) for k, v in value.items()}
    return value


def _prepare(sample: Sample, index: int) -> _Prepared:
    sid = sample.id or f"sample{index}"
    if sample.verification is not None and sample.verification.status != "verified":
        raise _Skip("not_verified", f"verification status is {sample.verification.status!r}")
    if sample.dialogue is not None:
        bad = sorted({m.role for m in sample.dialogue if m.role not in ("system", "user") or m.tool_calls})
        if bad:
            raise _Skip("unsupported_dialogue", f"the dialogue has {', '.join(bad)} messages")
        messages = [{"role": m.role, "content": m.content} for m in sample.dialogue]
    else:
        messages = [{"role": "user", "content": sample.query or ""}]
    users = [m["content"] for m in messages if m["role"] == "user"]
    if not users:
        raise _Skip("unsupported_dialogue", "the dialogue has no user message")

    available = [(c.label, c) for c in sample.setup if c.label]
    available += [(st.call.label, st.call) for st in sample.gold if st.hidden and st.call and st.call.label]
    visible = [st for st in sample.gold if st.call is not None and not st.hidden]
    if not visible:
        raise _Skip("no_gold_calls")
    for label, _ in available:
        if re.fullmatch(CALL_LABEL.format(r"\d+"), label):
            raise _Skip("label_collision", f"set-up label {label!r}")
    tools = {t.name: t for t in sample.tools}
    mapping = {st.call.label: CALL_LABEL.format(k) for k, st in enumerate(visible, 1) if st.call and st.call.label}
    known = {label for label, _ in available}
    calls, chained, seen = [], False, set()
    for k, st in enumerate(visible, 1):
        call = st.call
        assert call is not None
        tool = tools.get(call.name)
        if tool is None:
            raise _Skip("gold_tool_missing", f"call {k} names {call.name!r}")
        props, required = tool.parameters.properties, tool.parameters.required
        missing = [p for p in required if p not in call.arguments]
        extra = [p for p in call.arguments if p not in props]
        if missing or extra:
            raise _Skip("gold_call_off_schema", f"call {k} ({call.name}): missing {missing}, undefined {extra}")
        for ref in call.references():
            if ref.label in seen:
                chained = True
            elif ref.label not in known:
                raise _Skip("unresolved_reference", f"call {k} ({call.name}) refers to ${ref.label}$")
        if call.label:
            seen.add(call.label)
        calls.append(ToolCall(name=call.name, arguments=_rewrite_refs(copy.deepcopy(call.arguments), mapping),
                              label=mapping.get(call.label or "")))
    thoughts: list[str | None] = []
    pending: list[str] = []
    final_thought = None
    for st in sample.gold:
        if st.hidden:
            continue
        if st.thought:
            pending.append(st.thought)
        if st.call is not None:
            thoughts.append(" ".join(pending) or None)
            pending = []
    final_thought = " ".join(pending) or None
    return _Prepared(sample=sample, sid=sid, messages=messages, available=available, calls=calls,
                     observations=[st.observation for st in visible], thoughts=thoughts,
                     final_thought=final_thought, chained=chained, tools=tools)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _notes(p: _Prepared, positional: bool) -> str:
    """What the model needs beyond the query: the outputs already available, the $call_K$ rule."""
    lines = []
    if p.available:
        items = "; ".join(f"${label}$ = the output of {c.name}({_dump(c.arguments)})" for label, c in p.available)
        lines.append(f"Already available (pass them by label): {items}.")
    if positional:
        lines.append("To pass the output of one of your calls to a later call, write $call_K$ (or "
                     "$call_K.key$ for a part of it), where K is that call's position among your calls "
                     "(1 for the first).")
    return "\n".join(lines)


def _with_notes(p: _Prepared, positional: bool) -> list[dict[str, str]]:
    """The messages, the notes appended to the last user message."""
    notes = _notes(p, positional)
    msgs = [dict(m) for m in p.messages]
    last = max(i for i, m in enumerate(msgs) if m["role"] == "user")
    if p.sample.context:
        msgs[last]["content"] += f"\n(Hint: {p.sample.context})"
    if notes:
        msgs[last]["content"] += "\n\n" + notes
    return msgs


def _python_syntax(calls: list[ToolCall]) -> None:
    for k, call in enumerate(calls, 1):
        if not _DOTTED.match(call.name) or any(keyword.iskeyword(part) for part in call.name.split(".")):
            raise _Skip("not_python_syntax", f"call {k}: tool name {call.name!r}")
        bad = [a for a in call.arguments if not a.isidentifier() or keyword.iskeyword(a)]
        if bad:
            raise _Skip("not_python_syntax", f"call {k} ({call.name}): argument names {bad}")


# ---- schema conversion ---------------------------------------------------------------------------
_BFCL_TYPES = {"string": "string", "integer": "integer", "number": "float", "boolean": "boolean",
               "array": "array", "object": "dict", "null": "any"}


def _enum_type(enum: Any) -> str | None:
    if not isinstance(enum, list) or not enum:
        return None
    kinds = set()
    for v in enum:
        if isinstance(v, bool):
            kinds.add("boolean")
        elif isinstance(v, int):
            kinds.add("integer")
        elif isinstance(v, float):
            kinds.add("number")
        elif isinstance(v, str):
            kinds.add("string")
        else:
            return None
    if kinds == {"integer", "number"}:
        return "number"
    return kinds.pop() if len(kinds) == 1 else None


def _convert(schema: Any, names: dict[str, str], union: str, object_name: str) -> Any:
    """A JSON-Schema property in a dialect: ``type`` renamed by ``names`` (unknown -> ``union``),
    type lists collapsed to ``union`` (the accepted types appended to the description),
    ``items`` / ``properties`` converted recursively; every other keyword kept as is."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    t = schema.get("type")
    note = None
    if isinstance(t, list):
        members = [str(x) for x in t]
        mapped = {names.get(m, union) for m in members}
        if len(mapped) == 1:
            new_t = mapped.pop()
        else:
            new_t, note = union, " | ".join(members)
    elif isinstance(t, str):
        new_t = names.get(t, union)
    else:
        et = _enum_type(schema.get("enum"))
        new_t = names.get(et, union) if et else (object_name if isinstance(schema.get("properties"), dict) else union)
    out["type"] = new_t
    for key, value in schema.items():
        if key == "type":
            continue
        if key == "items":
            out["items"] = _convert(value, names, union, object_name)
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {k: _convert(v, names, union, object_name) for k, v in value.items()}
        else:
            out[key] = copy.deepcopy(value)
    if note:
        desc = str(out.get("description", "")).rstrip()
        out["description"] = f"{desc} (accepts: {note})" if desc else f"Accepts: {note}."
    if out["type"] == "array" and "items" not in out:
        out["items"] = {"type": union}
    return out


def bfcl_schema(schema: Any) -> Any:
    """A JSON-Schema property in BFCL's dialect (``dict``, ``float``, ``any``)."""
    return _convert(schema, _BFCL_TYPES, "any", "dict")


_ACE_TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
              "array": "array", "object": "object", "null": "any"}


def acebench_schema(schema: Any) -> Any:
    """A JSON-Schema property in ACEBench's dialect (JSON Schema; unions become ``any``)."""
    return _convert(schema, _ACE_TYPES, "any", "object")


def bfcl_function(tool: Tool) -> dict[str, Any]:
    params = tool.parameters
    return {"name": tool.name, "description": tool.description,
            "parameters": {"type": "dict",
                           "properties": {k: bfcl_schema(v) for k, v in params.properties.items()},
                           "required": list(params.required)}}


def acebench_function(tool: Tool) -> dict[str, Any]:
    """A tool in ACEBench's layout; a tool without parameters gets ``"parameters": {}`` (the only
    form ACEBench's official checker accepts for a call without arguments)."""
    params = tool.parameters
    if not params.properties:
        return {"name": tool.name, "description": tool.description, "parameters": {}}
    return {"name": tool.name, "description": tool.description,
            "parameters": {"type": "object",
                           "properties": {k: acebench_schema(v) for k, v in params.properties.items()},
                           "required": list(params.required)}}


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


_GTA_TYPES = {"string": "text", "integer": "int", "number": "float", "boolean": "bool"}


def gta_tool(tool: Tool) -> dict[str, Any]:
    """A tool in GTA's (AgentLego's) layout; each input keeps its full JSON Schema under ``schema``;
    ``category`` is the one GTA's end-to-end F1 counts it under (GTA's own for its 14 tools)."""
    params = tool.parameters
    inputs = []
    for name, prop in params.properties.items():
        t = prop.get("type")
        entry: dict[str, Any] = {"type": _GTA_TYPES.get(t, "text") if isinstance(t, str) else "text",
                                 "name": name, "description": prop.get("description"),
                                 "optional": name not in params.required, "default": prop.get("default"),
                                 "filetype": None}
        if "enum" in prop:
            entry["enum"] = copy.deepcopy(prop["enum"])
        entry["schema"] = copy.deepcopy(prop)
        inputs.append(entry)
    returns = tool.returns or {}
    outputs = [{"type": "text", "name": None,
                "description": returns.get("description") if isinstance(returns, dict) else None,
                "optional": False, "default": None, "filetype": None}]
    from benchsmith.eval.gta import suggest_category  # lazy: the GTA plug-in imports benchsmith.eval

    return {"name": tool.name, "description": tool.description, "category": suggest_category(tool.name),
            "inputs": inputs, "outputs": outputs}


# ---- writing ------------------------------------------------------------------------------------
def _jsonl_text(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows)


def _check_stale(out: Path, patterns: list[str], keep: set[Path]) -> None:
    stale = sorted(str(p) for pat in patterns for p in out.glob(pat) if p not in keep)
    if stale:
        raise UserError(f"{out} already holds {', '.join(stale)}, which this export would not overwrite "
                        "(its loader would read them too)", fix="export into an empty folder or remove them")


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class _Report:
    def __init__(self, fmt: str, split: Path, n_samples: int) -> None:
        self.fmt, self.split, self.n_samples = fmt, split, n_samples
        self.skipped: list[dict[str, str]] = []
        self.records: Counter[str] = Counter()
        self.id_map: dict[str, str] = {}

    def skip(self, sid: str, exc: _Skip) -> None:
        self.skipped.append({"sample": sid, "reason": exc.reason, "message": exc.message})

    def done(self, out: Path, written: list[str]) -> dict[str, Any]:
        report = {
            "format": self.fmt, "split": str(self.split), "samples": self.n_samples,
            "written": sorted([*written, ID_MAP_FILE, REPORT_FILE]),
            "records": dict(sorted(self.records.items())), "total": sum(self.records.values()),
            "skipped": self.skipped,
            "skipped_by_reason": dict(sorted(Counter(s["reason"] for s in self.skipped).items())),
        }
        write_json(out / ID_MAP_FILE, self.id_map)
        write_json(out / REPORT_FILE, report)
        return report


def _write_with_answers(out: Path, by_cat: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]],
                        prefix: str) -> list[str]:
    """``<prefix><category>.json`` with the records and ``possible_answer/`` with the answers of each
    category (JSON Lines, as BFCL and ACEBench ship them); stale files of earlier exports go first."""
    names = {f"{prefix}{cat}.json" for cat in by_cat}
    out.mkdir(parents=True, exist_ok=True)
    _check_stale(out, [f"{prefix}*.json", f"possible_answer/{prefix}*.json"],
                 {out / n for n in names} | {out / "possible_answer" / n for n in names})
    written = []
    for cat, rows in sorted(by_cat.items()):
        name = f"{prefix}{cat}.json"
        _write_text(out / name, _jsonl_text([r for r, _ in rows]))
        _write_text(out / "possible_answer" / name, _jsonl_text([a for _, a in rows]))
        written += [name, f"possible_answer/{name}"]
    return written


def _sid(sample: Sample, index: int) -> str:
    return sample.id or f"sample{index}"


# ---- BFCL -------------------------------------------------------------------------------------------
def _bfcl_allowed(value: Any, schema: dict[str, Any]) -> list[Any]:
    """BFCL's allowed-value list for a gold value: a dict (or a list of dicts) is written in the
    nested ``{key: [allowed...]}`` form its checker expects; anything else as ``[value]``."""
    t = schema.get("type")
    if t == "dict" and isinstance(value, dict):
        return [_bfcl_dict(value, schema)]
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    if t in ("array", "tuple") and items.get("type") == "dict" and isinstance(value, list) \
            and all(isinstance(v, dict) for v in value):
        return [[_bfcl_dict(v, items) for v in value]]
    return [value]


def _bfcl_omitted(schema: dict[str, Any]) -> list[Any]:
    return ["", schema["default"]] if "default" in schema and schema["default"] not in ("", None) else [""]


def _bfcl_dict(value: dict[str, Any], schema: dict[str, Any]) -> dict[str, list[Any]]:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    out = {k: [v] for k, v in value.items()}
    for k, prop in props.items():
        if k not in value and k not in required:
            out[k] = _bfcl_omitted(prop if isinstance(prop, dict) else {})
    return out


def _has_empty_string(value: Any, depth: int = 0) -> bool:
    if value == "" and isinstance(value, str):
        return True
    if depth < 2 and isinstance(value, dict):
        return any(_has_empty_string(v, depth + 1) for v in value.values())
    if depth < 2 and isinstance(value, list):
        return any(isinstance(v, dict) and _has_empty_string(v, depth + 1) for v in value)
    return False


def bfcl_answer(call: ToolCall, function: dict[str, Any]) -> dict[str, dict[str, list[Any]]]:
    """``{name: {param: [allowed values]}}``: the gold value for each passed argument, ``""``
    (plus the schema's default, if any) for each optional parameter the gold call omits."""
    params = function["parameters"]
    props, required = params["properties"], set(params["required"])
    allowed = {k: _bfcl_allowed(v, props.get(k, {})) for k, v in call.arguments.items()}
    for k, prop in props.items():
        if k not in call.arguments and k not in required:
            allowed[k] = _bfcl_omitted(prop)
    return {call.name: allowed}


def export_bfcl(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write ``BFCL_v4_<category>.json`` + ``possible_answer/`` (BFCL v4 AST layout).

    One call: ``simple_python`` (one tool offered) or ``multiple``; several independent calls:
    ``parallel`` (one tool offered) or ``parallel_multiple``; chains are skipped
    (``multi_step_chain``)."""
    split, samples = _load_split(split_dir)
    out = Path(out_dir)
    rep = _Report("bfcl", split, len(samples))
    by_cat: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for i, sample in enumerate(samples):
        try:
            p = _prepare(sample, i)
            if p.chained:
                raise _Skip("multi_step_chain", f"{len(p.calls)} calls, later ones use earlier outputs")
            _python_syntax(p.calls)
            if any(_has_empty_string(c.arguments) for c in p.calls):
                raise _Skip("empty_string_value")
            single_tool = len(p.sample.tools) == 1
            if len(p.calls) == 1:
                cat = "simple_python" if single_tool else "multiple"
            else:
                cat = "parallel" if single_tool else "parallel_multiple"
            functions = [bfcl_function(t) for t in p.sample.tools]
            fn_of = {f["name"]: f for f in functions}
            rid = f"{cat}_{len(by_cat.get(cat, []))}"
            record = {"id": rid, "question": [_with_notes(p, positional=False)], "function": functions}
            answer = {"id": rid, "ground_truth": [bfcl_answer(c, fn_of[c.name]) for c in p.calls]}
            by_cat.setdefault(cat, []).append((record, answer))
            rep.records[cat] += 1
            rep.id_map[rid] = p.sid
        except _Skip as exc:
            rep.skip(_sid(sample, i), exc)
    return rep.done(out, _write_with_answers(out, by_cat, "BFCL_v4_"))


# ---- ACEBench ---------------------------------------------------------------------------------------
def acebench_answer(calls: list[ToolCall], tool_names: set[str]) -> dict[str, dict[str, Any]]:
    """``{key: arguments}`` in call order; a tool called n > 1 times gets keys ``<name>_1`` ..
    ``<name>_n`` (ACEBench's convention). Raises ``_Skip`` if such a key is a tool name."""
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
                raise _Skip("ambiguous_duplicate_name", f"answer key {key!r} is also a tool name")
        out[key] = copy.deepcopy(c.arguments)
    return out


def export_acebench(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write ``data_<category>.json`` + ``possible_answer/`` (ACEBench normal family).

    One call: ``normal_single_turn_single_function``; several (chains included, outputs passed
    as ``$call_K$``): ``normal_single_turn_parallel_function``."""
    split, samples = _load_split(split_dir)
    out = Path(out_dir)
    rep = _Report("acebench", split, len(samples))
    by_cat: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for i, sample in enumerate(samples):
        try:
            p = _prepare(sample, i)
            _python_syntax(p.calls)
            cat = "normal_single_turn_single_function" if len(p.calls) == 1 else "normal_single_turn_parallel_function"
            gold = acebench_answer(p.calls, set(p.tools))
            rid = f"{cat}_{len(by_cat.get(cat, []))}"
            msgs = _with_notes(p, positional=True)
            # ACEBench reads "system:" lines as the assistant's replies: system text joins the first user line
            system = "\n".join(m["content"] for m in msgs if m["role"] == "system")
            users = [m["content"] for m in msgs if m["role"] == "user"]
            if system:
                users[0] = f"{system}\n{users[0]}"
            question = "\n".join(f"user: {u}" for u in users)
            record = {"id": rid, "question": question + "\n",
                      "function": [acebench_function(t) for t in acebench_order(p.sample.tools)]}
            by_cat.setdefault(cat, []).append((record, {"id": rid, "ground_truth": gold}))
            rep.records[cat] += 1
            rep.id_map[rid] = p.sid
        except _Skip as exc:
            rep.skip(_sid(sample, i), exc)
    return rep.done(out, _write_with_answers(out, by_cat, "data_"))


# ---- GTA --------------------------------------------------------------------------------------------
def gta_aliases(value: Any) -> list[str]:
    """The phrasings of one answer cell: its text; integral floats also without ``.0``; other
    floats also rounded to 2 decimals; integers of 4+ digits also with thousands separators;
    strings also without leading/trailing punctuation."""
    if value is None or isinstance(value, (dict, list)):
        return []
    if isinstance(value, bool):
        return [str(value)]
    if isinstance(value, int):
        out = [str(value)]
        if abs(value) >= 1000:
            out.append(f"{value:,}")
        return out
    if isinstance(value, float):
        if not math.isfinite(value):
            return []
        out = [repr(value)]
        if value.is_integer():
            out.append(str(int(value)))
        else:
            short = f"{value:.2f}"
            if short != out[0] and float(short) != 0.0:
                out.append(short)
        return out
    text = str(value).strip()
    if not text:
        return []
    out = [text]
    bare = text.strip(string.punctuation + " ")
    if bare != text and re.search(r"\w", bare):
        out.append(bare)   # "Google Inc." -> also "Google Inc" (a \b-bounded match needs it)
    return out


def _cells(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [c for v in value for c in _cells(v)]
    if isinstance(value, dict):
        return [c for v in value.values() for c in _cells(v)]
    return [value]


def gta_answer(answer: Any) -> tuple[Any, str]:
    """``(gt_answer, gold answer text)`` for a sample's answer spec (raises ``_Skip``)."""
    if isinstance(answer, NoAnswer):
        raise _Skip("no_answer")
    if isinstance(answer, WhitelistAnswer):
        gt = {"whitelist": [list(g) for g in answer.whitelist],
              "blacklist": [list(g) for g in answer.blacklist] or None}
        return gt, "; ".join(g[0] for g in answer.whitelist)
    if isinstance(answer, ReferenceAnswer):
        return list(answer.references), answer.references[0]
    assert isinstance(answer, ExactAnswer)
    groups: list[list[str]] = []
    seen: set[str] = set()
    for cell in _cells(answer.value):
        aliases = gta_aliases(cell)
        if not aliases or aliases[0].casefold() in seen:
            continue
        seen.add(aliases[0].casefold())
        groups.append(aliases)
    if not groups:
        raise _Skip("empty_answer")
    if len(groups) > MAX_ANSWER_CELLS:
        raise _Skip("answer_too_long", f"{len(groups)} distinct cells")
    return {"whitelist": groups, "blacklist": None}, "The answer is: " + "; ".join(g[0] for g in groups) + "."


def export_gta(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write GTA's ``dataset.json`` (one sample per exported split sample, keyed ``"0"``, ``"1"``,
    ... as GTA's loader needs; ``id_map.json`` gives the sample id of each) and ``toolmeta.json``
    (the tools as GTA's executor reads them)."""
    from benchsmith.eval.gta import write_gta_dataset  # lazy: the GTA plug-in imports benchsmith.eval

    split, samples = _load_split(split_dir)
    out = Path(out_dir)
    rep = _Report("gta", split, len(samples))
    dataset: list[tuple[str, dict[str, Any]]] = []
    for i, sample in enumerate(samples):
        try:
            p = _prepare(sample, i)
            gt, text = gta_answer(p.sample.answer)
            dialogs: list[dict[str, Any]] = list(_with_notes(p, positional=True))
            for k, (call, obs, thought) in enumerate(zip(p.calls, p.observations, p.thoughts), 1):
                tool = p.tools[call.name]
                what = tool.description.split(". ")[0].rstrip(".")
                dialogs.append({"role": "assistant",
                                "thought": thought or f"Step {k}: {call.name} ({what[:1].lower() + what[1:]}).",
                                "tool_calls": [{"type": "function",
                                                "function": {"name": call.name, "arguments": call.arguments}}]})
                dialogs.append({"role": "tool", "name": call.name,
                                "content": {"type": "text", "content": obs if isinstance(obs, str) else _dump(obs)}})
            final: dict[str, Any] = {"role": "assistant", "content": text}
            if p.final_thought:
                final = {"role": "assistant", "thought": p.final_thought, "content": text}
            dialogs.append(final)
            dataset.append((p.sid, {"tools": [gta_tool(t) for t in p.sample.tools], "files": [], "dialogs": dialogs,
                                    "gt_answer": gt}))
            rep.records["gta"] += 1
        except _Skip as exc:
            rep.skip(_sid(sample, i), exc)
    written = write_gta_dataset(out, dataset)
    rep.id_map = written["id_map"]
    report = rep.done(out, [f for f in written["files"] if f != ID_MAP_FILE])
    report["id_map"] = rep.id_map   # GTA id -> sample id, also in id_map.json
    write_json(out / REPORT_FILE, report)
    return report


# ---- T-Eval -----------------------------------------------------------------------------------------
def export_teval(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """``derive_teval`` with the exporters' report shape (its own report under ``derive``)."""
    from benchsmith.eval.teval import derive_teval  # lazy: the T-Eval plug-in imports benchsmith.eval

    split, samples = _load_split(split_dir)
    skipped = []
    for i, s in enumerate(samples):
        if s.verification is not None and s.verification.status != "verified":
            exc = _Skip("not_verified", f"verification status is {s.verification.status!r}")
        elif not any(st.call is not None and not st.hidden for st in s.gold):
            exc = _Skip("no_gold_calls")
        else:
            continue
        skipped.append({"sample": _sid(s, i), "reason": exc.reason, "message": exc.message})
    derived = derive_teval(split, out_dir)
    records = {f"{ability}/{fmt}": n for ability, by_fmt in derived["records"].items() for fmt, n in by_fmt.items()}
    return {"format": "teval", "split": str(split), "samples": len(samples),
            "written": sorted([*derived["files"], "derive_report.json"]), "records": records,
            "total": sum(records.values()), "skipped": skipped,
            "skipped_by_reason": dict(sorted(Counter(s["reason"] for s in skipped).items())), "derive": derived}


Exporter = Callable[[str | Path, str | Path], dict[str, Any]]
EXPORTERS: dict[str, Exporter] = {"bfcl": export_bfcl, "acebench": export_acebench, "gta": export_gta,
                                  "teval": export_teval}
