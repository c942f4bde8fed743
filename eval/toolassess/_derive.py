"""ToolAssess cases derived from an NL2API split (``benchsmith eval derive``): tool-use awareness
(the original question, one answerable without tools, one the tools cannot serve) and tool
selection among seeded distractors (docs/eval/derive.md)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any, TypeVar

from benchsmith.construction.variants import (
    cannot_variant,
    no_tool_variant,
    sample_query,
    tools_text,
    visible_steps,
    with_hint,
)
from benchsmith.eval.derive import (
    REPORT,
    Outputs,
    SplitSamples,
    candidate_tools,
    chain_tools,
    derive_report,
    note_skip,
    seeded_rng,
    tool_entry,
)
from benchsmith.schemas import UserError

SELECTION_DISTRACTORS = 3
FILES = ("awareness.jsonl", "selection.jsonl", "multi.jsonl")


# ---- ToolAssess --------------------------------------------------------------------------------


_K = TypeVar("_K")


def _balanced(kinds: tuple[_K, ...], n: int, rng: random.Random) -> list[_K]:
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
    ``multi.jsonl`` (scenarios of 2-3 awareness or selection sub-tasks). Returns the report.

    Streams in two passes over the split: the first counts the samples (the balanced variant
    kinds need the count), the second makes each sample's records. Selection records are written
    as they are made; awareness records (written in a seeded shuffled order) and the records the
    multi scenarios draw on wait in scratch files on disk, found again by their position, so only
    positions, counters and sample ids stay in memory."""
    samples = SplitSamples(split_dir)
    n_samples = sum(1 for _ in samples)
    rng = seeded_rng(seed, "toolassess")
    no_kinds = _balanced(("answer_given", "rephrase", "general"), n_samples, rng)
    cannot_kinds = _balanced(("missing_column", "write_action", "missing_table"), n_samples, rng)
    skipped: list[dict[str, Any]] = []
    variants: Counter[str] = Counter()
    aware_labels: Counter[str] = Counter()
    selection_labels: Counter[str] = Counter()
    per_sample_aware: dict[str, list[int]] = {}  # sample id -> its awareness records (positions in the spool)
    selection_sources: list[Any] = []  # the source sample of each selection record

    def strip(rec: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in rec.items() if k not in ("id", "meta", "task")}

    def ordered(rec: dict[str, Any], rid: str) -> dict[str, Any]:
        return {"id": rid, **{k: v for k, v in rec.items() if k != "id"}}

    with Outputs(out_dir) as files:
        awareness, selected = files.spool(), files.spool()
        awareness_file, selection_file, multi_file = (files.lines(n) for n in FILES)
        for n, sample in enumerate(samples):
            if n >= n_samples:
                raise UserError(f"{samples.path} changed while it was read", fix="derive again")
            srng = seeded_rng(seed, sample.id, "toolassess")
            tools = [tool_entry(t) for t in candidate_tools(sample, seed, "toolassess")]
            tool_text = tools_text(sample)
            items = [("requires_tool", "original", with_hint(sample_query(sample), sample.context))]
            for label, kinds in (
                ("no_tool", (no_kinds[n], "rephrase", "general")),
                ("cannot_complete", (cannot_kinds[n], "missing_column", "write_action")),
            ):
                for kind in dict.fromkeys(kinds):  # the assigned variant first, then fallbacks that always apply
                    text = (
                        no_tool_variant(sample, kind, srng)
                        if label == "no_tool"
                        else cannot_variant(sample, kind, srng, tool_text)
                    )
                    if text:
                        items.append((label, kind, text))
                        break
                else:
                    note_skip(skipped, sample, f"awareness:{label}", "no_variant_applies")
            recs = []
            for label, kind, text in items:
                variants[f"{label}:{kind}"] += 1
                aware_labels[label] += 1
                recs.append(
                    awareness.put(
                        {
                            "task": "awareness",
                            "query": text,
                            "tools": tools,
                            "label": label,
                            "meta": {"source_sample": sample.id, "variant": kind},
                        }
                    )
                )
            per_sample_aware[sample.id or ""] = recs

            first = visible_steps(sample)[0].call
            assert first is not None
            chain = set(chain_tools(sample))
            others = [t for t in sample.tools if t.name not in chain]
            if not any(t.name == first.name for t in sample.tools):
                note_skip(skipped, sample, "selection", "first_tool_not_among_tools")
                continue
            if not others:
                note_skip(skipped, sample, "selection", "no_distractor")
                continue
            picks = srng.sample(others, min(SELECTION_DISTRACTORS, len(others)))
            cands = [next(t for t in sample.tools if t.name == first.name), *picks]
            srng.shuffle(cands)
            question = (
                "Which of the candidate tools should be called first to answer this request (none, if no "
                "candidate can serve it)? " + with_hint(sample_query(sample), sample.context)
            )
            made: list[dict[str, Any]] = [
                {
                    "task": "selection",
                    "query": question,
                    "tools": [tool_entry(t) for t in cands],
                    "answer_tools": [first.name],
                    "meta": {"source_sample": sample.id, "label": "true_tool"},
                }
            ]
            # the false-tool situation: the same request among candidates that are all tools its chain never uses
            if len(others) < 2:
                note_skip(skipped, sample, "selection:false_tool", "too_few_distractors")
            else:
                false_cands = srng.sample(others, min(SELECTION_DISTRACTORS + 1, len(others)))
                made.append(
                    {
                        "task": "selection",
                        "query": question,
                        "tools": [tool_entry(t) for t in false_cands],
                        "answer_tools": [],
                        "meta": {"source_sample": sample.id, "label": "false_tool"},
                    }
                )
            for rec in made:
                selection_sources.append(rec["meta"]["source_sample"])
                selection_labels[rec["meta"]["label"]] += 1
                selection_file.add(ordered(rec, f"selection-{len(selection_sources):04d}"))
                selected.put(strip(rec))

        shuffled = list(range(len(awareness)))  # the awareness records in a seeded order
        rng.shuffle(shuffled)
        for i, k in enumerate(shuffled, 1):
            awareness_file.add(ordered(awareness.get(k), f"awareness-{i:04d}"))

        multi: Counter[str] = Counter()
        sizes: Counter[int] = Counter()

        def scenario(kind: str, text: str, subs: list[dict[str, Any]], sources: list[Any]) -> None:
            multi[kind] += 1
            sizes[len(subs)] += 1
            multi_file.add(
                {
                    "id": f"multi-{kind}-{sum(multi.values()):04d}",
                    "task": "multi",
                    "kind": kind,
                    "scenario": text,
                    "subtasks": subs,
                    "meta": {"source_samples": sources},
                }
            )

        # awareness scenarios: 2-3 samples each, one of each sample's variants (labels balanced)
        order = list(per_sample_aware)
        rng.shuffle(order)
        variant_picks = _balanced((0, 1, 2), len(order), rng)
        pos = 0
        for size in _group_sizes(len(order)):
            group = order[pos : pos + size]
            pos += size
            subs = []
            for sid, k in zip(group, variant_picks[pos - size : pos], strict=True):
                recs = per_sample_aware[sid]
                subs.append(strip(awareness.get(recs[int(k) % len(recs)])))
            scenario(
                "awareness",
                "A user asks the data assistant several things in a row. For each sub-task, in "
                "order, say whether it requires a tool, needs no tool, or cannot be completed "
                "with the tools given.",
                subs,
                group,
            )
        sel_order = list(range(len(selected)))
        rng.shuffle(sel_order)
        pos = 0
        for size in _group_sizes(len(sel_order)):
            group_ids = sel_order[pos : pos + size]
            pos += size
            scenario(
                "selection",
                "A user asks the data assistant several things in a row. For each sub-task, in "
                "order, choose the candidate tool to call first.",
                [selected.get(i) for i in group_ids],
                [selection_sources[i] for i in group_ids],
            )

        counts = {
            "awareness": dict(sorted(aware_labels.items())),
            "selection": len(selection_sources),
            "selection_labels": dict(sorted(selection_labels.items())),
            "multi": dict(sorted(multi.items())),
            "multi_subtasks": {str(k): v for k, v in sorted(sizes.items())},
            "variants": dict(sorted(variants.items())),
        }
        report = derive_report("toolassess", samples.root, samples.count or 0, seed, list(FILES), counts, skipped)
        files.json(REPORT, report)
        files.commit()
    return report
