"""Derive benchmark cases from an NL2API split's verified gold chains: GTA, ToolAssess and the
ACEBench special family (T-Eval lives in ``benchsmith.eval.teval``; :data:`DERIVERS` lists all four).

Every function is pure in the sense that matters here: it reads ``<split>/samples.jsonl``,
writes its benchmark's own layout plus ``derive_report.json`` to ``out_dir`` and returns the
report; the same split and seed give the same bytes. Randomness comes only from
``random.Random`` seeded with a string made of the seed, the sample id and a purpose.

>>> sorted(DERIVERS)
['acebench_special', 'gta', 'teval', 'toolassess']
>>> _string_aliases("Embraer S.A."), _number_aliases(1069), _number_aliases(2.5)
(['Embraer S.A'], ['1069', '1,069'], ['2.5', '2.50'])
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable

from benchsmith.construction.variants import (
    FILL_VALUES, IRRELEVANT_GOLD, IRRELEVANT_QUESTIONS, acebench_question, answer_text, argument_noun,
    call_literals, cannot_variant, corrupt_value, dump_text, find_form, flatten, form_spans, is_number_like,
    no_tool_variant, number_text, replace_forms, sample_query, sample_setup_note, tools_text, value_forms,
    visible_steps, with_hint,
)
from benchsmith.schemas import (
    ExactAnswer, ReferenceAnswer, Sample, Tool, UserError, WhitelistAnswer, read_jsonl, write_json,
    write_jsonl,
)

REPORT = "derive_report.json"
MAX_TOOLS = 12            # candidate tools per derived record: every gold-chain tool + seeded distractors
MAX_ANSWER_VALUES = 30    # GTA: answers with more distinct values are skipped (answer_too_long)
SELECTION_DISTRACTORS = 3


# ---- the split ---------------------------------------------------------------------------------


def load_split(split_dir: str | Path) -> tuple[Path, list[Sample]]:
    """The verified samples with at least one visible gold call, in file order."""
    split = Path(split_dir)
    path = split / "samples.jsonl"
    if not path.is_file():
        raise UserError(f"{split} has no samples.jsonl", fix="pass a split folder written by `benchsmith nl2api build`")
    samples = [s for s in read_jsonl(path, Sample)
               if (s.verification is None or s.verification.status == "verified") and visible_steps(s)]
    if not samples:
        raise UserError(f"{path} has no verified sample with gold calls", fix="build the split first")
    return split, samples


def _source(split: Path, samples: list[Sample], seed: int | None) -> dict[str, Any]:
    source: dict[str, Any] = {"split": str(split), "samples": len(samples)}
    if seed is not None:
        source["seed"] = seed
    manifest = split / "manifest.json"
    if manifest.is_file():
        try:
            m = json.loads(manifest.read_text(encoding="utf-8"))
            source.update(name=m.get("name"), content_hash=m.get("content_hash"))
        except (OSError, json.JSONDecodeError, AttributeError):
            pass
    return source


def _rng(seed: int, *parts: Any) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed, *parts)))  # str seeds hash with SHA-512: stable










def _chain_tools(sample: Sample) -> list[str]:
    out: list[str] = []
    for st in visible_steps(sample):
        if st.call is not None and st.call.name not in out:
            out.append(st.call.name)
    return out


def candidate_tools(sample: Sample, seed: int, purpose: str, limit: int = MAX_TOOLS) -> list[Tool]:
    """The sample's tools when there are at most ``limit``; else every gold-chain tool plus seeded
    distractors up to ``limit``, in the sample's tool order."""
    if len(sample.tools) <= limit:
        return list(sample.tools)
    chain = set(_chain_tools(sample))
    others = [t.name for t in sample.tools if t.name not in chain]
    keep = chain | set(_rng(seed, sample.id, purpose, "tools").sample(others, max(0, min(len(others),
                                                                                           limit - len(chain)))))
    return [t for t in sample.tools if t.name in keep]




def _skip(skipped: list[dict[str, Any]], sample: Sample, category: str, reason: str) -> None:
    skipped.append({"sample": sample.id, "category": category, "reason": reason})


def _skip_summary(skipped: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for s in skipped:
        out.setdefault(s["category"], Counter())[s["reason"]] += 1  # type: ignore[index]
    return {c: dict(sorted(v.items())) for c, v in sorted(out.items())}


def _report(benchmark: str, split: Path, samples: list[Sample], seed: int | None, files: list[str],
            counts: dict[str, Any], skipped: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"benchmark": benchmark, "source": _source(split, samples, seed), "files": sorted(files),
            "counts": counts, "skipped_by_reason": _skip_summary(skipped), "skipped": skipped, **extra}


# ---- answers -----------------------------------------------------------------------------------










def _string_aliases(s: str) -> list[str]:
    """The string without non-word characters at its ends (so whole-word matching works in both
    GTA modes: ``\\b`` never matches next to a trailing ``.``)."""
    core = re.sub(r"^\W+|\W+$", "", s.strip())
    return [core] if core else []


def _number_aliases(v: int | float) -> list[str]:
    out = [number_text(v)]
    if isinstance(v, float):
        out += [repr(v)] + ([str(int(v))] if v.is_integer() else [f"{v:.2f}"])
    elif abs(v) >= 1000:
        out.append(f"{v:,}")
    return list(dict.fromkeys(out))


def _whitelist(value: Any) -> list[list[str]] | None:
    groups: dict[str, list[str]] = {}
    for cell in flatten(value):
        if cell is None or isinstance(cell, bool):
            continue
        aliases = _number_aliases(cell) if isinstance(cell, (int, float)) else _string_aliases(str(cell))
        if aliases:
            groups.setdefault(aliases[0].casefold(), aliases)
    return list(groups.values()) or None


# ---- GTA ---------------------------------------------------------------------------------------
def _gta_tool(tool: Tool) -> dict[str, Any]:
    """A tool in GTA's layout: inputs typed as AgentLego types (``gta_input_type``), the category
    the end-to-end F1 counts it under, and the JSON Schema under ``parameters`` (benchsmith's
    prompt uses it; GTA's loader reads only the name, its executor reads ``toolmeta.json``)."""
    from benchsmith.eval.gta import gta_input_type, suggest_category

    props, required = tool.parameters.properties, set(tool.parameters.required)
    inputs = [{"type": gta_input_type(p), "name": n, "description": p.get("description"), "optional": n not in required,
               "default": p.get("default"), "filetype": None, **({"enum": p["enum"]} if "enum" in p else {})}
              for n, p in props.items()]
    return {"name": tool.name, "description": tool.description, "category": suggest_category(tool.name),
            "inputs": inputs,
            "outputs": [{"type": "text", "name": None, "description": "the result (JSON), kept under the call's label",
                         "optional": False, "default": None, "filetype": None}],
            "parameters": tool.parameters.model_dump(mode="json", exclude_none=True)}


def _gta_answer(sample: Sample) -> tuple[Any, str] | str:
    """(gt_answer, gold answer text) or a skip reason."""
    ans = sample.answer
    if isinstance(ans, ExactAnswer):
        wl = _whitelist(ans.value)
        if wl is None:
            return "answer_has_no_matchable_value"
        if len(wl) > MAX_ANSWER_VALUES:
            return "answer_too_long"
        return {"whitelist": wl, "blacklist": None}, f"The answer is: {answer_text(ans.value)}."
    if isinstance(ans, WhitelistAnswer):
        return ({"whitelist": ans.whitelist, "blacklist": ans.blacklist or None},
                "The answer is: " + "; ".join(g[0] for g in ans.whitelist) + ".")
    if isinstance(ans, ReferenceAnswer):
        return list(ans.references), ans.references[0]
    return "no_answer"


def derive_gta(split_dir: str | Path, out_dir: str | Path, seed: int = 0) -> dict[str, Any]:
    """Write GTA's ``dataset.json`` (id -> tools, files, dialogs, gt_answer) for every verified
    sample: the user turn (query, hint, the set-up labels), one assistant turn per gold call
    (thought + one tool call) followed by its tool return (labelled), and the final answer turn.
    Ids are ``"0"``, ``"1"``, ... (GTA's loader reads them as integers); ``id_map.json`` and the
    report's ``id_map`` give the sample id of each; ``toolmeta.json`` holds the tools as GTA's
    executor reads them. The gta plug-in then gives a step case per assistant turn (the prefix
    ``dialogs[:i]``) and an end-to-end case per sample. Exact answers become objective whitelists
    (one group per distinct value). Returns the report (also written as ``derive_report.json``)."""
    from benchsmith.eval.gta import whitelist_pass, write_gta_dataset
    from benchsmith.eval.teval import step_thought

    split, samples = load_split(split_dir)
    dataset: list[tuple[str, dict[str, Any]]] = []
    skipped: list[dict[str, Any]] = []
    steps_total = 0
    official_ok = 0
    for sample in samples:
        got = _gta_answer(sample)
        if isinstance(got, str):
            _skip(skipped, sample, "gta", got)
            continue
        gt, content = got
        if isinstance(gt, dict) and not whitelist_pass(content, gt["whitelist"], gt["blacklist"], "strict"):
            _skip(skipped, sample, "gta", "answer_not_matchable")
            continue
        if not isinstance(gt, dict) or whitelist_pass(content, gt["whitelist"], gt["blacklist"], "official"):
            official_ok += 1
        tools = {t.name: t for t in sample.tools}
        user = with_hint(sample_query(sample), sample.context)
        note = sample_setup_note(sample)
        dialogs: list[dict[str, Any]] = [{"role": "user", "content": f"{user}\n{note}" if note else user}]
        for i, st in enumerate(visible_steps(sample)):
            call = st.call
            assert call is not None
            dialogs.append({"role": "assistant", "thought": st.thought or step_thought(call, tools.get(call.name), i),
                            "tool_calls": [{"type": "function",
                                            "function": {"name": call.name, "arguments": call.arguments}}]})
            ret: dict[str, Any] = {"role": "tool", "name": call.name,
                                   "content": {"type": "text", "content": dump_text(st.observation)}}
            if call.label:
                ret["label"] = call.label
            dialogs.append(ret)
            steps_total += 1
        dialogs.append({"role": "assistant", "thought": "I have the result and can answer now.", "content": content})
        assert sample.id is not None
        dataset.append((sample.id, {"tools": [_gta_tool(t) for t in candidate_tools(sample, seed, "gta")], "files": [],
                                    "dialogs": dialogs, "gt_answer": gt}))
    out = Path(out_dir)
    written = write_gta_dataset(out, dataset)
    counts = {"samples": len(dataset), "step:tool": steps_total, "step:answer": len(dataset), "e2e": len(dataset)}
    report = _report("gta", split, samples, seed, written["files"], counts, skipped,
                     official_whitelist_pass=official_ok, id_map=written["id_map"])
    write_json(out / REPORT, report)
    return report


# ---- ToolAssess --------------------------------------------------------------------------------










def _tool_entry(tool: Tool) -> dict[str, Any]:
    return tool.to_openai()["function"]


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


# ---- ACEBench special ------------------------------------------------------------------------


























def derive_acebench_special(split_dir: str | Path, out_dir: str | Path, seed: int = 0) -> dict[str, Any]:
    """Write ACEBench special records (``data_special_{incomplete,error_param,irrelevant}.json`` with
    ``possible_answer/``) from every verified sample whose question allows it:

    - incomplete: a literal value of a gold call that the question mentions is replaced by a vague
      phrase ("a certain country", "N"); gold ``{api: [argument]}``;
    - error_param: that literal is corrupted (ISO date -> ``DD-Mon-YYYY``, a letter inside a
      number, a 5-digit number for a name); gold ``{argument: [corrupted text]}``;
    - irrelevant: the question replaced by a request no data tool can serve; gold the standard
      "limitations of the function" answer.

    Returns the report (with each record's source sample)."""
    split, samples = load_split(split_dir)
    rng = _rng(seed, "acebench_special")
    out_records: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {
        "special_incomplete": [], "special_error_param": [], "special_irrelevant": []}
    skipped: list[dict[str, Any]] = []
    sources: dict[str, dict[str, Any]] = {}
    rules: Counter[str] = Counter()
    order = list(range(len(IRRELEVANT_QUESTIONS)))
    rng.shuffle(order)
    for n, sample in enumerate(samples):
        sid = sample.id or f"sample{n}"
        functions = [_tool_entry(t) for t in candidate_tools(sample, seed, "acebench")]
        note = sample_setup_note(sample)
        query, hint = sample_query(sample), sample.context
        lits = call_literals(sample)
        made_here: list[tuple[str, str, Any, dict[str, Any]]] = []  # (category, question, gold, provenance)

        # incomplete
        if not lits:
            _skip(skipped, sample, "special_incomplete", "no_literal_in_question")
        else:
            call, arg, value, _form = lits[0]
            forms = value_forms(value)
            placeholder = "N" if is_number_like(value) else \
                f"a certain {argument_noun(call, arg, next((t for t in sample.tools if t.name == call.name), None))}"
            text = replace_forms(query, forms, placeholder, eat_quotes=True)
            text = re.sub(r"\b(?:the|a|an) (a certain )", r"\1", text, flags=re.IGNORECASE)
            keep_hint = hint if hint and not any(find_form(hint, f) for f in forms) else None
            if any(form_spans(text, f) for f in forms):
                _skip(skipped, sample, "special_incomplete", "literal_still_in_question")
            else:
                made_here.append(("special_incomplete", acebench_question(text, keep_hint, note), {call.name: [arg]},
                                  {"api": call.name, "argument": arg}))
        # error_param
        made = False
        for call, arg, value, form in lits:
            bad = corrupt_value(value, form, seed, sid)
            if bad is None:
                continue
            token, rule = bad
            text = replace_forms(query, [form], token, eat_quotes=False)
            new_hint = replace_forms(hint, [form], token, eat_quotes=False) if hint else None
            if not form_spans(text, token) or any(form_spans(text, f) for f in value_forms(value)):
                continue
            rules[rule] += 1
            made_here.append(("special_error_param", acebench_question(text, new_hint, note), {arg: [token]},
                              {"api": call.name, "argument": arg, "rule": rule}))
            made = True
            break
        if not made:
            _skip(skipped, sample, "special_error_param",
                  "no_literal_in_question" if not lits else "no_corruption_rule")
        # irrelevant
        template = IRRELEVANT_QUESTIONS[order[n % len(order)]]
        srng = _rng(seed, sid, "irrelevant")
        fill = {k: srng.choice(v) for k, v in FILL_VALUES.items()}
        made_here.append(("special_irrelevant", acebench_question(template.format(**fill), None, ""), IRRELEVANT_GOLD, {}))
        for category, question, gold, prov in made_here:
            rid = f"{category}_{len(out_records[category])}"
            out_records[category].append(({"id": rid, "question": question, "function": functions},
                                          {"id": rid, "ground_truth": gold}))
            sources[rid] = {"source_sample": sid, **prov}

    out = Path(out_dir)
    (out / "possible_answer").mkdir(parents=True, exist_ok=True)
    files = []
    for category, pairs in out_records.items():
        if not pairs:
            continue
        name = f"data_{category}.json"
        write_jsonl(out / name, [d for d, _ in pairs])
        write_jsonl(out / "possible_answer" / name, [a for _, a in pairs])
        files += [name, f"possible_answer/{name}"]
    counts = {c: len(p) for c, p in out_records.items()}
    report = _report("acebench", split, samples, seed, files, counts, skipped,
                     error_param_rules=dict(sorted(rules.items())), sources=sources)
    write_json(out / REPORT, report)
    return report


# ---- registry ----------------------------------------------------------------------------------
def _derive_teval(split_dir: str | Path, out_dir: str | Path, seed: int = 0) -> dict[str, Any]:
    """T-Eval's six abilities (``benchsmith.eval.teval.derive_teval``; deterministic, no seed)."""
    from benchsmith.eval.teval import derive_teval

    return derive_teval(split_dir, out_dir)


Deriver = Callable[..., dict[str, Any]]
DERIVERS: dict[str, Deriver] = {
    "teval": _derive_teval,
    "gta": derive_gta,
    "toolassess": derive_toolassess,
    "acebench_special": derive_acebench_special,
}
# the benchmark each deriver's output loads with (``get_benchmark(DERIVED_BENCHMARK[k]).load(out)``)
DERIVED_BENCHMARK = {"teval": "teval", "gta": "gta", "toolassess": "toolassess", "acebench_special": "acebench"}


def derive_all(split_dir: str | Path, out_dir: str | Path, benchmarks: Iterable[str] | None = None,
               seed: int = 0) -> dict[str, Any]:
    """Run every deriver in :data:`DERIVERS` (or the named ones) into ``out_dir/<name>/`` and write
    ``out_dir/derive_report.json`` listing each deriver's folder, benchmark and record counts.

    Unknown names are a :class:`UserError` raised before anything is written. ``out_dir`` is
    replaced as a whole (:func:`swap_in`): a kill leaves the old folder or the new one."""
    names = list(DERIVERS) if benchmarks is None else list(dict.fromkeys(benchmarks))
    unknown = [n for n in names if n not in DERIVERS]
    if unknown or not names:
        raise UserError(f"unknown deriver(s): {', '.join(unknown) or '(none given)'}",
                        fix=f"choose from {', '.join(DERIVERS)}")
    load_split(split_dir)  # fail on a bad split before any folder is made
    out = Path(out_dir)
    summary: dict[str, Any] = {"split": str(Path(split_dir)), "seed": seed, "derived": {}}

    def build(fresh: Path) -> None:
        for name in names:
            report = DERIVERS[name](split_dir, fresh / name, seed=seed)
            summary["derived"][name] = {"folder": name, "benchmark": DERIVED_BENCHMARK[name],
                                        "records": report.get("counts", report.get("records"))}
        write_json(fresh / REPORT, summary)

    swap_in(out, build, owned=set(DERIVERS) | {REPORT}, what="`benchsmith eval derive`")
    return summary


# ---- writing a whole folder --------------------------------------------------------------------
def _sibling(out: Path, kind: str, pid: int) -> Path:
    return out.parent / f".{out.name}.{kind}.{pid}"


def _siblings(out: Path, kind: str) -> list[tuple[Path, int]]:
    """``(path, writer pid)`` of the ``new`` / ``old`` folders derives into ``out`` left beside it."""
    prefix = f".{out.name}.{kind}."
    found = []
    if out.parent.is_dir():
        for p in out.parent.iterdir():
            if p.name.startswith(prefix) and p.name[len(prefix):].isdigit():
                found.append((p, int(p.name[len(prefix):])))
    return found


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a folder of this process's pid is left from an earlier, killed process that had it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _clean_stale(out: Path) -> None:
    """Undo what a killed swap left: if ``out`` is gone but the old folder survives (killed between
    the two renames), the old folder comes back; leftover new and old folders are removed."""
    for old, pid in _siblings(out, "old"):
        if _alive(pid):
            continue
        if not out.exists():
            os.rename(old, out)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for new, pid in _siblings(out, "new"):
        if not _alive(pid):
            shutil.rmtree(new, ignore_errors=True)


def swap_in(out: Path, build: Callable[[Path], None], *, owned: set[str], what: str) -> None:
    """Write a whole output folder: ``build(fresh)`` fills a fresh folder beside ``out``, which then
    replaces ``out`` by two renames, so a kill leaves the old folder or the new one, never a mix;
    what a killed swap left is cleaned up here first. ``out`` may only hold entries named in ``owned``
    (what this writer makes): anything else is a :class:`UserError`, so nobody's files are replaced."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is an existing file, not a folder", fix="give a folder path (new or existing)")
    _clean_stale(out)
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir()
                         if p.name not in owned and not (p.name.startswith(".") and p.name.endswith(".tmp")))
        if foreign:
            raise UserError(f"{out} holds {', '.join(foreign[:5])}, which {what} did not write; it replaces the whole "
                            "folder", fix="write into a new or empty folder (or one it wrote before), or move those away")
    fresh = _sibling(out, "new", os.getpid())
    old = _sibling(out, "old", os.getpid())
    try:
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir(parents=True)
        build(fresh)
        if out.exists():
            os.rename(out, old)
        os.rename(fresh, out)
    except BaseException as exc:
        shutil.rmtree(fresh, ignore_errors=True)
        if old.exists() and not out.exists():
            os.rename(old, out)
        if isinstance(exc, OSError):
            raise UserError(f"{out}: cannot write: {exc.strerror or exc}",
                            fix="check the folder, its parent and their permissions") from None
        raise
    shutil.rmtree(old, ignore_errors=True)

