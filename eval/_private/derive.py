"""Derive benchmark cases from an NL2API split's verified gold chains: GTA, ToolAssess and the
ACEBench special family (T-Eval lives in ``benchsmith.eval.teval``; :data:`DERIVERS` lists all four).

Every function is pure in the sense that matters here: it reads ``<split>/samples.jsonl``,
writes its benchmark's own layout plus ``derive_report.json`` to ``out_dir`` and returns the
report; the same split and seed give the same bytes. Randomness comes only from
``random.Random`` seeded with a string made of the seed, the sample id and a purpose.

>>> sorted(DERIVERS)
['acebench_special', 'gta', 'teval', 'toolassess']
>>> _corrupt_number("300000"), _corrupt_number("7"), _corrupt_date("2021-01-05")
('300x000', '7x', '05-Jan-2021')
>>> _string_aliases("Embraer S.A."), _number_aliases(1069), _number_aliases(2.5)
(['Embraer S.A'], ['1069', '1,069'], ['2.5', '2.50'])
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable

from benchsmith.schemas import (
    ExactAnswer, ReferenceAnswer, Sample, Step, Tool, ToolCall, UserError, WhitelistAnswer, read_jsonl, write_json,
    write_jsonl,
)

REPORT = "derive_report.json"
MAX_TOOLS = 12            # candidate tools per derived record: every gold-chain tool + seeded distractors
MAX_ANSWER_VALUES = 30    # GTA: answers with more distinct values are skipped (answer_too_long)
SELECTION_DISTRACTORS = 3
_REF = re.compile(r"^\$[A-Za-z_][A-Za-z0-9_]*(\.[^$]*)?\$$")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
                 10: "ten", 11: "eleven", 12: "twelve", 15: "fifteen", 20: "twenty"}


# ---- the split ---------------------------------------------------------------------------------
def _visible_steps(sample: Sample) -> list[Step]:
    return [s for s in sample.gold if s.call is not None and not s.hidden]


def load_split(split_dir: str | Path) -> tuple[Path, list[Sample]]:
    """The verified samples with at least one visible gold call, in file order."""
    split = Path(split_dir)
    path = split / "samples.jsonl"
    if not path.is_file():
        raise UserError(f"{split} has no samples.jsonl", fix="pass a split folder written by `benchsmith nl2api build`")
    samples = [s for s in read_jsonl(path, Sample)
               if (s.verification is None or s.verification.status == "verified") and _visible_steps(s)]
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


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _query(sample: Sample) -> str:
    if sample.query is not None:
        return sample.query
    return "\n".join(m.content for m in sample.dialogue or [] if m.role == "user")


def _with_hint(query: str, hint: str | None) -> str:
    return f"{query}\n(Hint: {hint})" if hint else query


def _setup_note(sample: Sample) -> str:
    """``Data already loaded for you: $data_1$ = tracks joined with albums ...`` (empty without a setup)."""
    return setup_note(sample.setup)


def setup_note(setup: Iterable[ToolCall]) -> str:
    """What a sample's hidden set-up calls loaded, in words a model can use (empty without a setup)."""
    parts = []
    for call in setup:
        if not call.label:
            continue
        src = call.arguments.get("source")
        what = str(src) if isinstance(src, str) else call.name
        joins = [j.get("table") for j in call.arguments.get("joins") or [] if isinstance(j, dict) and j.get("table")]
        if joins:
            what += " joined with " + ", ".join(str(j) for j in joins)
        parts.append(f"${call.label}$ = {what}")
    if not parts:
        return ""
    return ("Data already loaded for you: " + "; ".join(parts) + " (pass it as data_source). Every tool output "
            "is kept under a label; later calls refer to it as $label$.")


def _chain_tools(sample: Sample) -> list[str]:
    out: list[str] = []
    for st in _visible_steps(sample):
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


def _tool_text(sample: Sample) -> str:
    return _dump([t.model_dump(mode="json") for t in sample.tools]).lower()


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
def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _rows(value: Any) -> list[list[Any]]:
    if isinstance(value, (list, tuple)):
        return [list(_flatten(r)) if isinstance(r, (list, tuple)) else [r] for r in value]
    return [[value]]


def _number_text(v: int | float) -> str:
    if isinstance(v, float):
        if v.is_integer():
            return str(int(v))
        text = repr(v)
        return text if len(text) <= 8 else f"{v:.2f}"
    return str(v)


def _cell_text(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return _number_text(v)
    return str(v)


def answer_text(value: Any) -> str:
    """The exact answer as prose: cells joined by ", ", rows by "; ".

    >>> answer_text([["Luís", "Gonçalves"], ["Eduardo", "Martins"]]), answer_text([[1069]])
    ('Luís, Gonçalves; Eduardo, Martins', '1069')
    """
    return "; ".join(", ".join(_cell_text(c) for c in row) for row in _rows(value))


def _string_aliases(s: str) -> list[str]:
    """The string without non-word characters at its ends (so whole-word matching works in both
    GTA modes: ``\\b`` never matches next to a trailing ``.``)."""
    core = re.sub(r"^\W+|\W+$", "", s.strip())
    return [core] if core else []


def _number_aliases(v: int | float) -> list[str]:
    out = [_number_text(v)]
    if isinstance(v, float):
        out += [repr(v)] + ([str(int(v))] if v.is_integer() else [f"{v:.2f}"])
    elif abs(v) >= 1000:
        out.append(f"{v:,}")
    return list(dict.fromkeys(out))


def _whitelist(value: Any) -> list[list[str]] | None:
    groups: dict[str, list[str]] = {}
    for cell in _flatten(value):
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
        user = _with_hint(_query(sample), sample.context)
        note = _setup_note(sample)
        dialogs: list[dict[str, Any]] = [{"role": "user", "content": f"{user}\n{note}" if note else user}]
        for i, st in enumerate(_visible_steps(sample)):
            call = st.call
            assert call is not None
            dialogs.append({"role": "assistant", "thought": st.thought or step_thought(call, tools.get(call.name), i),
                            "tool_calls": [{"type": "function",
                                            "function": {"name": call.name, "arguments": call.arguments}}]})
            ret: dict[str, Any] = {"role": "tool", "name": call.name,
                                   "content": {"type": "text", "content": _dump(st.observation)}}
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
_GENERAL_QUESTIONS = (
    "What is the chemical symbol for gold?",
    "How many days does a leap year have?",
    "Which planet is closest to the Sun?",
    "What is the capital city of Japan?",
    "How many sides does a hexagon have?",
    "In which continent is Kenya?",
    "What is the boiling point of water at sea level, in degrees Celsius?",
    "Who wrote the play 'Romeo and Juliet'?",
    "What is the plural of the word 'mouse'?",
    "How many centimetres are there in one metre?",
    "What is the opposite of the word 'ancient'?",
    "Which ocean lies between Africa and Australia?",
    "What gas do plants take in from the air for photosynthesis?",
    "How many hours are there in one day?",
    "What is the largest mammal on Earth?",
    "Which language has the most native speakers in Brazil?",
)
_MISSING_ATTRIBUTES = {  # per table: attributes a music-store database does not record (checked against the tools)
    "tracks": ("number of streams on Spotify", "beats per minute", "lyrics"),
    "albums": ("number of copies sold", "critic score", "cover designer"),
    "artists": ("number of social media followers", "home town", "date of birth"),
    "customers": ("annual income", "shoe size", "loyalty points balance"),
    "employees": ("salary", "annual bonus", "performance rating"),
    "invoices": ("payment method", "delivery date", "discount code"),
    "invoice_items": ("discount applied", "refund status", "delivery date"),
    "genres": ("year of origin", "number of streams", "founding artist"),
    "media_types": ("licence cost", "file extension popularity", "release year"),
    "playlists": ("number of followers", "creator", "creation date"),
    "playlist_track": ("date added", "number of skips", "position rating"),
}
_GENERIC_ATTRIBUTES = ("carbon footprint", "rating on social media", "weight in kilograms")
_MISSING_DATA = ("product reviews", "website visits", "shipping delays", "concert tickets", "refund requests",
                 "newsletter subscriptions")
_NOT_KEYWORDS = {"number", "of", "on", "in", "the", "date", "year", "rate", "rating", "cost", "count", "and"}


def _entity(sample: Sample) -> tuple[str, str]:
    """(table, plural phrase) of the sample's main data (``invoice_items`` -> "invoice items")."""
    src = next((c.arguments.get("source") for c in sample.setup if isinstance(c.arguments.get("source"), str)), None)
    if src is None:  # REST: the table named in the first gold tool's description ("... from tracks where ...")
        first = _visible_steps(sample)[0].call
        tool = next((t for t in sample.tools if first is not None and t.name == first.name), None)
        m = re.search(r"\bfrom (\w+)", tool.description) if tool is not None else None
        src = m.group(1) if m else "records"
    return src, src.replace("_", " ")


def _absent(phrase: str, tool_text: str) -> bool:
    words = [w for w in re.findall(r"[a-z]+", phrase.lower()) if w not in _NOT_KEYWORDS and len(w) > 2]
    return bool(words) and not any(w in tool_text for w in words)


def _no_tool_variant(sample: Sample, kind: str, rng: random.Random) -> str | None:
    q = _with_hint(_query(sample), sample.context)
    if kind == "answer_given":
        if not isinstance(sample.answer, ExactAnswer) or len(_flatten(sample.answer.value)) > 10:
            return None
        return (f'A colleague already looked this up: the answer to "{_query(sample)}" is '
                f"{answer_text(sample.answer.value)}. Without looking anything up, repeat that answer as one "
                "complete sentence.")
    if kind == "rephrase":
        return f'Rewrite this question in simpler words, without answering it: "{q}"'
    return rng.choice(_GENERAL_QUESTIONS)


def _cannot_variant(sample: Sample, kind: str, rng: random.Random, tool_text: str) -> str | None:
    table, entity = _entity(sample)
    q = _with_hint(_query(sample), sample.context)
    if kind == "missing_column":
        options = [a for a in (*_MISSING_ATTRIBUTES.get(table, ()), *_GENERIC_ATTRIBUTES) if _absent(a, tool_text)]
        if not options:
            return None
        attr = rng.choice(options)
        return f"Answer this question, and include the {attr} of each of the {entity} involved: {q}"
    if kind == "missing_table":
        options = [d for d in _MISSING_DATA if _absent(d, tool_text)]
        if not options:
            return None
        return f"Which of the {entity} are linked to the most {rng.choice(options)}? Use the store's records."
    templates = (f"Permanently delete from the database every one of the {entity} this question is about: {q}",
                 f"Add a new entry to the {table} table in the database, then answer: {q}",
                 f"Update the database so that the answer to this question becomes empty: {q}")
    return rng.choice(templates)


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
        tool_text = _tool_text(sample)
        items = [("requires_tool", "original", _with_hint(_query(sample), sample.context))]
        for label, kinds in (("no_tool", (no_kinds[n], "rephrase", "general")),
                             ("cannot_complete", (cannot_kinds[n], "missing_column", "write_action"))):
            for kind in dict.fromkeys(kinds):  # the assigned variant first, then fallbacks that always apply
                text = (_no_tool_variant(sample, kind, srng) if label == "no_tool"
                        else _cannot_variant(sample, kind, srng, tool_text))
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

        first = _visible_steps(sample)[0].call
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
                    "candidate can serve it)? " + _with_hint(_query(sample), sample.context))
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
_IRRELEVANT = (
    "Book a table for {n} at an Italian restaurant in {city} for 8 pm tonight.",
    "What will the weather be like in {city} this weekend?",
    "Send an email to {person} saying that I will be late for the meeting.",
    "Set an alarm for 6:30 tomorrow morning and call it '{thing}'.",
    "Book a flight from {city} to {city2} for next Friday, economy class.",
    "Order a large pepperoni pizza to be delivered to my flat in {city}.",
    "Turn off the lights in the living room and lower the thermostat to {n}0 degrees Fahrenheit.",
    "What is the current share price of {company}?",
    "Schedule a dentist appointment for me next Tuesday afternoon in {city}.",
    "Call a taxi to take {n} people from {city} central station to the airport.",
    "How much money is left in my checking account?",
    "Find a hotel in {city2} under 100 euros per night for {n} nights.",
    "Remind me to water the plants at 7 pm and tell {person} about it.",
    "Post 'Happy Friday!' on my social media accounts.",
    "Track the parcel that {company} shipped to me yesterday.",
    "Rent a small car in {city} for the weekend.",
    "How many steps did I walk today according to my fitness tracker?",
    "Pay my electricity bill from my savings account.",
    "Cancel my gym membership and send {person} the confirmation.",
    "Translate my last text message to {person} into Japanese and send it again.",
)
_FILL = {"city": ("Lisbon", "Oslo", "Toronto", "Nairobi", "Kyoto", "Lima", "Prague"),
         "city2": ("Madrid", "Berlin", "Seoul", "Cairo", "Sydney", "Quito"),
         "person": ("my landlord", "Dr. Alvarez", "my sister", "the project team", "Mr. Okafor"),
         "company": ("Tesla", "Siemens", "Toyota", "Unilever", "DHL"),
         "thing": ("gym", "standup", "flight"), "n": ("2", "3", "4", "6")}
IRRELEVANT_GOLD = "Due to the limitations of the function, I cannot solve this problem."


def _forms(value: Any) -> list[str]:
    """How a literal argument value may be written in the question."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str):
        v = value.strip()
        if len(v) < 2 or not re.search(r"\w", v) or _REF.match(v):
            return []
        return [v]
    if isinstance(value, int):
        out = [str(value)] + ([f"{value:,}"] if abs(value) >= 1000 else [])
        return out + ([_NUMBER_WORDS[value]] if value in _NUMBER_WORDS else [])
    if isinstance(value, float):
        return [str(int(value)), repr(value)] if value.is_integer() else [repr(value)]
    return []


_STOPWORDS = {"the", "a", "an", "and", "or", "of", "in", "on", "at", "to", "for", "by", "with", "is", "are", "was",
              "it", "as", "be", "no", "not", "all", "any", "one", "me", "my", "we", "us"}


def _find(text: str, form: str, flags: int = re.IGNORECASE) -> list[tuple[int, int]]:
    """Spans of ``form`` as a whole token of ``text``."""
    pat = (r"(?<!\w)" if re.match(r"\w", form) else "") + re.escape(form) \
        + (r"(?!\w)" if re.search(r"\w$", form) else "")
    return [(m.start(), m.end()) for m in re.finditer(pat, text, flags)]


def _spans(text: str, form: str) -> list[tuple[int, int]]:
    """Where the question mentions a literal: its quoted occurrences ('Love') if any; else exact-case
    whole-token occurrences (a common word only when quoted); else case-insensitive ones for
    forms of four characters or more (``yahoo`` in "Yahoo").

    >>> _spans("Titles by artists whose name begins with 'The'", "The"), _spans("Is it Yahoo?", "yahoo")
    ([(42, 45)], [(6, 11)])
    """
    quoted = [(m.start() + 1, m.end() - 1) for m in re.finditer(r"(['\"])" + re.escape(form) + r"\1", text,
                                                                 re.IGNORECASE)]
    if quoted:
        return quoted
    if form.lower() in _STOPWORDS:
        return []
    return _find(text, form, 0) or (_find(text, form) if len(form) >= 4 else [])


def _literals(sample: Sample) -> list[tuple[ToolCall, str, Any, str]]:
    """(call, argument, value, form found in the query) for each top-level scalar, non-enum,
    non-reference argument of a visible gold call whose value the query mentions; required
    arguments first, then chain order."""
    query = _query(sample)
    tools = {t.name: t for t in sample.tools}
    found = []
    for st in _visible_steps(sample):
        call = st.call
        assert call is not None
        tool = tools.get(call.name)
        props = tool.parameters.properties if tool is not None else {}
        required = set(tool.parameters.required) if tool is not None else set()
        for arg, value in call.arguments.items():
            if "enum" in props.get(arg, {}):
                continue
            for form in _forms(value):
                if _spans(query, form):
                    found.append((0 if arg in required else 1, call, arg, value, form))
                    break
    found.sort(key=lambda x: x[0])  # stable: chain order within each group
    return [(c, a, v, f) for _, c, a, v, f in found]


def _noun(call: ToolCall, arg: str, tool: Tool | None = None) -> str:
    """What the dropped value is ("country", "track name"): from the call's column (``key_name``,
    or a ``table.column`` named in the argument's description), else from the argument name."""
    key = call.arguments.get("key_name")
    if not (isinstance(key, str) and key) and tool is not None:
        m = re.search(r"\b([a-z_]+\.[a-z_]+)\b", str(tool.parameters.properties.get(arg, {}).get("description", "")))
        key = m.group(1) if m else None
    if isinstance(key, str) and key:
        table, _, col = key.rpartition(".")
        words = col.replace("_", " ")
        if col in ("name", "title") and table:
            single = table.split(".")[-1].rstrip("s").replace("_", " ")
            words = f"{single} {col}"
        return words
    base = re.sub(r"_(above|below|min|max|from|to|not|like|contains|starts|ends|before|after|low|high|at_least|"
                  r"at_most|prefix|suffix)$", "", arg)
    return base.replace("_", " ") or "value"


def _is_number_like(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or \
        (isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value.strip()) is not None)


def _replace_all(text: str, forms: Iterable[str], new: str, eat_quotes: bool) -> str:
    for form in forms:
        spans = _spans(text, form)
        for start, end in reversed(spans):
            if eat_quotes and start > 0 and end < len(text) and text[start - 1] == text[end] and text[end] in "'\"":
                start, end = start - 1, end + 1
            text = text[:start] + new + text[end:]
    return text


def _corrupt_number(text: str) -> str:
    """A number with a letter inside (``300000`` -> ``300x000``): not a valid number any more."""
    if len(text) < 2:
        return text + "x"
    mid = len(text) // 2
    return text[:mid] + "x" + text[mid:]


def _corrupt_date(text: str) -> str | None:
    """An ISO date in another format (``2021-01-05`` -> ``05-Jan-2021``), as ACEBench does."""
    m = _ISO_DATE.match(text)
    if not m or not 1 <= int(m.group(2)) <= 12:
        return None
    return f"{m.group(3)}-{_MONTHS[int(m.group(2)) - 1]}-{m.group(1)}"


def _corrupt(value: Any, form: str, seed: int, sid: str) -> tuple[str, str] | None:
    """(corrupted text, rule) for a literal as written in the question, or None."""
    if isinstance(value, str) and _ISO_DATE.match(value.strip()):
        bad = _corrupt_date(form)
        return (bad, "date_format") if bad else None
    if _is_number_like(value):
        if not re.fullmatch(r"-?[\d,]+(\.\d+)?", form):
            return None  # a number word: no digit to corrupt
        return _corrupt_number(form), "letter_in_number"
    if isinstance(value, str) and re.fullmatch(r"[^\W\d_]+(?:[\s'.&/-]+[^\W\d_]+)*\.?", form):
        digest = hashlib.sha256(f"{seed}:{sid}:{form}".encode("utf-8")).hexdigest()
        return str(10000 + int(digest[:8], 16) % 90000), "number_for_name"
    return None


def _ace_question(text: str, hint: str | None, note: str) -> str:
    lines = [f"user: {text}"] + ([f"(Hint: {hint})"] if hint else []) + ([note] if note else [])
    return "\n".join(lines)


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
    order = list(range(len(_IRRELEVANT)))
    rng.shuffle(order)
    for n, sample in enumerate(samples):
        sid = sample.id or f"sample{n}"
        functions = [_tool_entry(t) for t in candidate_tools(sample, seed, "acebench")]
        note = _setup_note(sample)
        query, hint = _query(sample), sample.context
        lits = _literals(sample)
        made_here: list[tuple[str, str, Any, dict[str, Any]]] = []  # (category, question, gold, provenance)

        # incomplete
        if not lits:
            _skip(skipped, sample, "special_incomplete", "no_literal_in_question")
        else:
            call, arg, value, _form = lits[0]
            forms = _forms(value)
            placeholder = "N" if _is_number_like(value) else \
                f"a certain {_noun(call, arg, next((t for t in sample.tools if t.name == call.name), None))}"
            text = _replace_all(query, forms, placeholder, eat_quotes=True)
            text = re.sub(r"\b(?:the|a|an) (a certain )", r"\1", text, flags=re.IGNORECASE)
            keep_hint = hint if hint and not any(_find(hint, f) for f in forms) else None
            if any(_spans(text, f) for f in forms):
                _skip(skipped, sample, "special_incomplete", "literal_still_in_question")
            else:
                made_here.append(("special_incomplete", _ace_question(text, keep_hint, note), {call.name: [arg]},
                                  {"api": call.name, "argument": arg}))
        # error_param
        made = False
        for call, arg, value, form in lits:
            bad = _corrupt(value, form, seed, sid)
            if bad is None:
                continue
            token, rule = bad
            text = _replace_all(query, [form], token, eat_quotes=False)
            new_hint = _replace_all(hint, [form], token, eat_quotes=False) if hint else None
            if not _spans(text, token) or any(_spans(text, f) for f in _forms(value)):
                continue
            rules[rule] += 1
            made_here.append(("special_error_param", _ace_question(text, new_hint, note), {arg: [token]},
                              {"api": call.name, "argument": arg, "rule": rule}))
            made = True
            break
        if not made:
            _skip(skipped, sample, "special_error_param",
                  "no_literal_in_question" if not lits else "no_corruption_rule")
        # irrelevant
        template = _IRRELEVANT[order[n % len(order)]]
        srng = _rng(seed, sid, "irrelevant")
        fill = {k: srng.choice(v) for k, v in _FILL.items()}
        made_here.append(("special_irrelevant", _ace_question(template.format(**fill), None, ""), IRRELEVANT_GOLD, {}))
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

