"""Exporters: a benchsmith split (``samples.jsonl``) written in other benchmarks' own layouts.

This module is the exporters' ground floor (reading and preparing the split, schema dialects,
the report, writing); each benchmark's exporter lives in its folder (``eval/<benchmark>/_export.py``)
and is named by its :class:`~benchsmith.eval.Benchmark` (``exporter``). An exporter is a pure
function of the split folder: it reads ``samples.jsonl``, writes the benchmark's files to
``out_dir`` (plus ``id_map.json`` and ``export_report.json``) and returns the report. Every sample
is either exported or listed under ``skipped`` with a reason code; the same split gives the same
files byte for byte. :data:`EXPORTERS` (format name -> exporter) is a view over the benchmarks.
Every mapping choice is documented in ``docs/eval/export.md``.
"""

from __future__ import annotations

import copy
import json
import keyword
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsmith.eval._private.derive import BenchmarkView, Outputs, SplitSamples
from benchsmith.schemas import (
    Sample,
    Tool,
    ToolCall,
    UserError,
    parse_reference,
)

REPORT_FILE = "export_report.json"
ID_MAP_FILE = "id_map.json"
MAX_ANSWER_CELLS = 100  # GTA: a longer exact answer is skipped (answer_too_long)
CALL_LABEL = "call_{}"  # the K-th exported call's output is written $call_K$

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


class SkipSample(Exception):
    def __init__(self, reason: str, message: str = "") -> None:
        assert reason in REASONS, reason
        self.reason = reason
        self.message = message or REASONS[reason]
        super().__init__(self.message)


# ---- reading the split and preparing each sample --------------------------------------------------
def split_samples(split_dir: str | Path) -> SplitSamples:
    """Every sample of the split, read one line at a time (``.root``; ``.count`` after a pass)."""
    return SplitSamples(split_dir, usable=False)


@dataclass
class PreparedSample:
    """A sample reduced to what every format needs: messages, relabelled calls, observations."""

    sample: Sample
    sid: str
    messages: list[dict[str, str]]  # system/user messages, without the notes
    available: list[tuple[str, ToolCall]]  # set-up and hidden calls the model may refer to, by label
    calls: list[ToolCall]  # visible gold calls, labels rewritten to call_K
    observations: list[Any]
    thoughts: list[str | None]
    final_thought: str | None
    chained: bool  # some call refers to an earlier visible call's output
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


def prepare_sample(sample: Sample, index: int) -> PreparedSample:
    sid = sample.id or f"sample{index}"
    if sample.verification is not None and sample.verification.status != "verified":
        raise SkipSample("not_verified", f"verification status is {sample.verification.status!r}")
    if sample.dialogue is not None:
        bad = sorted({m.role for m in sample.dialogue if m.role not in ("system", "user") or m.tool_calls})
        if bad:
            raise SkipSample("unsupported_dialogue", f"the dialogue has {', '.join(bad)} messages")
        messages = [{"role": m.role, "content": m.content} for m in sample.dialogue]
    else:
        messages = [{"role": "user", "content": sample.query or ""}]
    users = [m["content"] for m in messages if m["role"] == "user"]
    if not users:
        raise SkipSample("unsupported_dialogue", "the dialogue has no user message")

    available = [(c.label, c) for c in sample.setup if c.label]
    available += [(st.call.label, st.call) for st in sample.gold if st.hidden and st.call and st.call.label]
    visible = [st for st in sample.gold if st.call is not None and not st.hidden]
    if not visible:
        raise SkipSample("no_gold_calls")
    for label, _ in available:
        if re.fullmatch(CALL_LABEL.format(r"\d+"), label):
            raise SkipSample("label_collision", f"set-up label {label!r}")
    tools = {t.name: t for t in sample.tools}
    mapping = {st.call.label: CALL_LABEL.format(k) for k, st in enumerate(visible, 1) if st.call and st.call.label}
    known = {label for label, _ in available}
    calls, chained, seen = [], False, set()
    for k, st in enumerate(visible, 1):
        call = st.call
        assert call is not None
        tool = tools.get(call.name)
        if tool is None:
            raise SkipSample("gold_tool_missing", f"call {k} names {call.name!r}")
        props, required = tool.parameters.properties, tool.parameters.required
        missing = [p for p in required if p not in call.arguments]
        extra = [p for p in call.arguments if p not in props]
        if missing or extra:
            raise SkipSample("gold_call_off_schema", f"call {k} ({call.name}): missing {missing}, undefined {extra}")
        for ref in call.references():
            if ref.label in seen:
                chained = True
            elif ref.label not in known:
                raise SkipSample("unresolved_reference", f"call {k} ({call.name}) refers to ${ref.label}$")
        if call.label:
            seen.add(call.label)
        calls.append(
            ToolCall(
                name=call.name,
                arguments=_rewrite_refs(copy.deepcopy(call.arguments), mapping),
                label=mapping.get(call.label or ""),
            )
        )
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
    return PreparedSample(
        sample=sample,
        sid=sid,
        messages=messages,
        available=available,
        calls=calls,
        observations=[st.observation for st in visible],
        thoughts=thoughts,
        final_thought=final_thought,
        chained=chained,
        tools=tools,
    )


def _notes(p: PreparedSample, positional: bool) -> str:
    """What the model needs beyond the query: the outputs already available, the $call_K$ rule."""
    lines = []
    if p.available:
        from benchsmith.construction.variants import dump_text  # construction loads on use: scoring never needs it

        items = "; ".join(f"${label}$ = the output of {c.name}({dump_text(c.arguments)})" for label, c in p.available)
        lines.append(f"Already available (pass them by label): {items}.")
    if positional:
        lines.append(
            "To pass the output of one of your calls to a later call, write $call_K$ (or "
            "$call_K.key$ for a part of it), where K is that call's position among your calls "
            "(1 for the first)."
        )
    return "\n".join(lines)


def messages_with_notes(p: PreparedSample, positional: bool) -> list[dict[str, str]]:
    """The messages, the notes appended to the last user message."""
    notes = _notes(p, positional)
    msgs = [dict(m) for m in p.messages]
    last = max(i for i, m in enumerate(msgs) if m["role"] == "user")
    if p.sample.context:
        msgs[last]["content"] += f"\n(Hint: {p.sample.context})"
    if notes:
        msgs[last]["content"] += "\n\n" + notes
    return msgs


def check_python_syntax(calls: list[ToolCall]) -> None:
    for k, call in enumerate(calls, 1):
        if not _DOTTED.match(call.name) or any(keyword.iskeyword(part) for part in call.name.split(".")):
            raise SkipSample("not_python_syntax", f"call {k}: tool name {call.name!r}")
        bad = [a for a in call.arguments if not a.isidentifier() or keyword.iskeyword(a)]
        if bad:
            raise SkipSample("not_python_syntax", f"call {k} ({call.name}): argument names {bad}")


# ---- schema conversion ---------------------------------------------------------------------------


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


def schema_dialect(names: dict[str, str], union: str, object_name: str, doc: str) -> Callable[[Any], Any]:
    """A converter of JSON-Schema properties into a benchmark's dialect (:func:`_convert` with
    these type names), documented by ``doc``."""

    def convert(schema: Any) -> Any:
        return _convert(schema, names, union, object_name)

    convert.__doc__ = doc
    return convert


# ---- writing ------------------------------------------------------------------------------------
# Exporters stream: each sample's records are appended to temporary files beside their targets
# (``Outputs``) as they are made, and every file is renamed in at the end; only the report's small
# parts (skips, counts, the id map) stay in memory.
def _jsonl_line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"


def _check_stale(out: Path, patterns: list[str], keep: set[Path]) -> None:
    stale = sorted(str(p) for pat in patterns for p in out.glob(pat) if p not in keep)
    if stale:
        raise UserError(
            f"{out} already holds {', '.join(stale)}, which this export would not overwrite "
            "(its loader would read them too)",
            fix="export into an empty folder or remove them",
        )


class ExportReport:
    def __init__(self, fmt: str, split: Path, n_samples: int = 0) -> None:
        self.fmt, self.split, self.n_samples = fmt, split, n_samples
        self.skipped: list[dict[str, str]] = []
        self.records: Counter[str] = Counter()
        self.id_map: dict[str, str] = {}

    def skip(self, sid: str, exc: SkipSample) -> None:
        self.skipped.append({"sample": sid, "reason": exc.reason, "message": exc.message})

    def report(self, written: list[str]) -> dict[str, Any]:
        return {
            "format": self.fmt,
            "split": str(self.split),
            "samples": self.n_samples,
            "written": sorted([*written, ID_MAP_FILE, REPORT_FILE]),
            "records": dict(sorted(self.records.items())),
            "total": sum(self.records.values()),
            "skipped": self.skipped,
            "skipped_by_reason": dict(sorted(Counter(s["reason"] for s in self.skipped).items())),
        }

    def done(self, files: Outputs, written: list[str]) -> dict[str, Any]:
        """Write ``id_map.json`` and the report with the other files, rename them all in; the report."""
        report = self.report(written)
        files.json(ID_MAP_FILE, self.id_map)
        files.json(REPORT_FILE, report)
        files.commit()
        return report


class CategoryFiles:
    """``<prefix><category>.json`` with the records and ``possible_answer/`` with the answers of each
    category (JSON Lines, as BFCL and ACEBench ship them), appended one record at a time:
    ``add(category, record, answer)``; ``count(category)`` is how many it holds."""

    def __init__(self, files: Outputs, prefix: str) -> None:
        self.files, self.prefix = files, prefix
        self.counts: Counter[str] = Counter()

    def count(self, cat: str) -> int:
        return self.counts[cat]

    def add(self, cat: str, record: dict[str, Any], answer: dict[str, Any]) -> None:
        name = f"{self.prefix}{cat}.json"
        self.files.lines(name).write(_jsonl_line(record))
        self.files.lines(f"possible_answer/{name}").write(_jsonl_line(answer))
        self.counts[cat] += 1

    def finish(self) -> list[str]:
        """The files written, by category; files of earlier exports that this one would not replace
        are a :class:`UserError` (nothing is renamed in then)."""
        out = self.files.folder
        names = {f"{self.prefix}{cat}.json" for cat in self.counts}
        out.mkdir(parents=True, exist_ok=True)
        _check_stale(
            out,
            [f"{self.prefix}*.json", f"possible_answer/{self.prefix}*.json"],
            {out / n for n in names} | {out / "possible_answer" / n for n in names},
        )
        written = []
        for cat in sorted(self.counts):
            name = f"{self.prefix}{cat}.json"
            written += [name, f"possible_answer/{name}"]
        return written


def sample_id(sample: Sample, index: int) -> str:
    return sample.id or f"sample{index}"


def export_with_answers(
    fmt: str,
    prefix: str,
    split_dir: str | Path,
    out_dir: str | Path,
    export_sample: Callable[[int, Sample, CategoryFiles, ExportReport], None],
) -> dict[str, Any]:
    """The streaming export of a format whose records and answers go to ``<prefix><category>.json``
    and ``possible_answer/`` (BFCL, ACEBench): ``export_sample(i, sample, by_category, report)`` for
    one sample at a time, then ``id_map.json`` and the report, all renamed in together; the report."""
    samples = split_samples(split_dir)
    rep = ExportReport(fmt, samples.root)
    with Outputs(out_dir) as files:
        by_cat = CategoryFiles(files, prefix)
        for i, sample in enumerate(samples):
            export_sample(i, sample, by_cat, rep)
        rep.n_samples = samples.count or 0
        return rep.done(files, by_cat.finish())


Exporter = Callable[[str | Path, str | Path], dict[str, Any]]


def _exporters() -> dict[str, Exporter]:
    from .core import BENCHMARKS

    return dict(sorted((cls.name, cls.exporter) for cls in BENCHMARKS.values() if cls.exporter is not None))


#: format name (the benchmark's name) -> ``export(split_dir, out_dir) -> report``
EXPORTERS: Mapping[str, Exporter] = BenchmarkView(_exporters)
