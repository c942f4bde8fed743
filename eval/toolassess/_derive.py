"""ToolAssess cases derived from an NL2API split (``benchsmith eval derive``): tool-use awareness
(the original question, one answerable without tools, one the tools cannot serve) and tool
selection among seeded distractors (docs/eval/derive.md)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

from benchsmith.construction.variants import (
    cannot_variant, no_tool_variant, sample_query, tools_text, visible_steps, with_hint,
)
from benchsmith.eval._private.derive import (
    REPORT, _chain_tools, _report, _rng, _skip, _tool_entry, candidate_tools, load_split,
)
from benchsmith.schemas import (
    write_json, write_jsonl,
)

SELECTION_DISTRACTORS = 3


# ---- ToolAssess --------------------------------------------------------------------------------


def _balanced(kinds: tuple[str, ...], n: int, rng: random.Random) -> list[str]:
    out = [kinds[i % len(kinds)] for i in range(n)]
    rng.shuffle(out)
    return out


def _group_sizes(n: int) -> list[int]:
    """Sizes of 2 or 3 summing to n (n >= 2)."""
    if n < 2:
        return []
    threes, rest = divmod(n, 3)
    if rest == 1:
        return [3] * (threes - 1) + [2, 2]
    return [3] * threes + ([2] if rest == 2 else [])


def derive_toolassess(split_dir: str | Path, out_dir: str | Path, seed: int = 0) -> dict[str, Any]:
    """Write benchsmith's ToolAssess JSONL: ``awareness.jsonl`` (per sample: the original question
    -> requires_tool; a question answerable without tools -> no_tool; the question rewritten to
    need data or a write action the tools lack -> cannot_complete), ``selection.jsonl`` (per
    sample: the gold's first tool among up to three distractors the chain never uses, a true-tool
    record; and the same request among up to four such distractors only, a false-tool record whose
    answer is no tool) and
    ``multi.jsonl`` (scenarios of 2-3 awareness or selection sub-tasks). Returns the report."""
    split, samples = load_split(split_dir)
    rng = _rng(seed, "toolassess")
    no_kinds = _balanced(("answer_given", "rephrase", "general"), len(samples), rng)
    cannot_kinds = _balanced(("missing_column", "write_action", "missing_table"), len(samples), rng)
    skipped: list[dict[str, Any]] = []
    awareness: list[dict[str, Any]] = []
    selection: list[dict[str, Any]] = []
    per_sample_aware: dict[str, list[dict[str, Any]]] = {}
    variants: Counter[str] = Counter()
    for n, sample in enumerate(samples):
        srng = _rng(seed, sample.id, "toolassess")
        tools = [_tool_entry(t) for t in candidate_tools(sample, seed, "toolassess")]
        tool_text = tools_text(sample)
        items = [("requires_tool", "original", with_hint(sample_query(sample), sample.context))]
        for label, kinds in (("no_tool", (no_kinds[n], "rephrase", "general")),
                             ("cannot_complete", (cannot_kinds[n], "missing_column", "write_action"))):
            for kind in dict.fromkeys(kinds):  # the assigned variant first, then fallbacks that always apply
                text = (no_tool_variant(sample, kind, srng) if label == "no_tool"
                        else cannot_variant(sample, kind, srng, tool_text))
                if text:
                    items.append((label, kind, text))
                    break
            else:
                _skip(skipped, sample, f"awareness:{label}", "no_variant_applies")
        recs = []
        for label, kind, text in items:
            variants[f"{label}:{kind}"] += 1
            recs.append({"task": "awareness", "query": text, "tools": tools, "label": label,
                         "meta": {"source_sample": sample.id, "variant": kind}})
        per_sample_aware[sample.id or ""] = recs
        awareness.extend(recs)

        first = visible_steps(sample)[0].call
        assert first is not None
        chain = set(_chain_tools(sample))
        others = [t for t in sample.tools if t.name not in chain]
        if not any(t.name == first.name for t in sample.tools):
            _skip(skipped, sample, "selection", "first_tool_not_among_tools")
            continue
        if not others:
            _skip(skipped, sample, "selection", "no_distractor")
            continue
        picks = srng.sample(others, min(SELECTION_DISTRACTORS, len(others)))
        cands = [next(t for t in sample.tools if t.name == first.name), *picks]
        srng.shuffle(cands)
        question = ("Which of the candidate tools should be called first to answer this request (none, if no "
                    "candidate can serve it)? " + with_hint(sample_query(sample), sample.context))
        selection.append({"task": "selection", "query": question,
                          "tools": [_tool_entry(t) for t in cands], "answer_tools": [first.name],
                          "meta": {"source_sample": sample.id, "label": "true_tool"}})
        # the false-tool situation: the same request among candidates that are all tools its chain never uses
        if len(others) < 2:
            _skip(skipped, sample, "selection:false_tool", "too_few_distractors")
            continue
        false_cands = srng.sample(others, min(SELECTION_DISTRACTORS + 1, len(others)))
        selection.append({"task": "selection", "query": question,
                          "tools": [_tool_entry(t) for t in false_cands], "answer_tools": [],
                          "meta": {"source_sample": sample.id, "label": "false_tool"}})

    rng.shuffle(awareness)
    for i, rec in enumerate(awareness, 1):
        rec["id"] = f"awareness-{i:04d}"
    for i, rec in enumerate(selection, 1):
        rec["id"] = f"selection-{i:04d}"

    def strip(rec: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in rec.items() if k not in ("id", "meta", "task")}

    multi: list[dict[str, Any]] = []
    # awareness scenarios: 2-3 samples each, one of each sample's variants (labels balanced)
    order = list(per_sample_aware)
    rng.shuffle(order)
    picks = _balanced((0, 1, 2), len(order), rng)  # type: ignore[arg-type]
    pos = 0
    for size in _group_sizes(len(order)):
        group = order[pos:pos + size]
        pos += size
        subs = []
        for sid, k in zip(group, picks[pos - size:pos], strict=True):
            recs = per_sample_aware[sid]
            subs.append(strip(recs[int(k) % len(recs)]))
        multi.append({"task": "multi", "kind": "awareness",
                      "scenario": ("A user asks the data assistant several things in a row. For each sub-task, in "
                                   "order, say whether it requires a tool, needs no tool, or cannot be completed "
                                   "with the tools given."),
                      "subtasks": subs, "meta": {"source_samples": group}})
    sel_order = list(range(len(selection)))
    rng.shuffle(sel_order)
    pos = 0
    for size in _group_sizes(len(sel_order)):
        group = [selection[i] for i in sel_order[pos:pos + size]]
        pos += size
        multi.append({"task": "multi", "kind": "selection",
                      "scenario": ("A user asks the data assistant several things in a row. For each sub-task, in "
                                   "order, choose the candidate tool to call first."),
                      "subtasks": [strip(r) for r in group],
                      "meta": {"source_samples": [r["meta"]["source_sample"] for r in group]}})
    for i, rec in enumerate(multi, 1):
        rec["id"] = f"multi-{rec['kind']}-{i:04d}"

    def ordered(rec: dict[str, Any]) -> dict[str, Any]:
        return {"id": rec["id"], **{k: v for k, v in rec.items() if k != "id"}}

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"awareness.jsonl": awareness, "selection.jsonl": selection, "multi.jsonl": multi}
    for name, recs in files.items():
        write_jsonl(out / name, [ordered(r) for r in recs])
    counts = {
        "awareness": dict(sorted(Counter(r["label"] for r in awareness).items())),
        "selection": len(selection),
        "selection_labels": dict(sorted(Counter(r["meta"]["label"] for r in selection).items())),
        "multi": dict(sorted(Counter(r["kind"] for r in multi).items())),
        "multi_subtasks": {str(k): v for k, v in sorted(Counter(len(r["subtasks"]) for r in multi).items())},
        "variants": dict(sorted(variants.items())),
    }
    report = _report("toolassess", split, samples, seed, list(files), counts, skipped)
    write_json(out / REPORT, report)
    return report


