"""ACEBench's special family derived from an NL2API split (``benchsmith eval derive``): requests
the tools cannot serve (irrelevant), and questions with a value missing or corrupted, each with
the answer ACEBench expects (docs/eval/derive.md)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from benchsmith.construction.variants import (
    FILL_VALUES, IRRELEVANT_GOLD, IRRELEVANT_QUESTIONS, acebench_question, argument_noun,
    call_literals, corrupt_value, find_form, form_spans, is_number_like,
    replace_forms, sample_query, sample_setup_note, value_forms,
)
from benchsmith.eval._private.derive import (
    REPORT, _report, _rng, _skip, _tool_entry, candidate_tools, load_split,
)
from benchsmith.schemas import (
    write_json, write_jsonl,
)


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


