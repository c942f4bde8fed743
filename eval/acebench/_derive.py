"""ACEBench's special family derived from an NL2API split (``benchsmith eval derive``): requests
the tools cannot serve (irrelevant), and questions with a value missing or corrupted, each with
the answer ACEBench expects (docs/eval/derive.md)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from benchsmith.construction.variants import (
    FILL_VALUES,
    IRRELEVANT_GOLD,
    IRRELEVANT_QUESTIONS,
    acebench_question,
    argument_noun,
    call_literals,
    corrupt_value,
    find_form,
    form_spans,
    is_number_like,
    replace_forms,
    sample_query,
    sample_setup_note,
    value_forms,
)
from benchsmith.eval.derive import (
    REPORT,
    Outputs,
    SplitSamples,
    candidate_tools,
    derive_report,
    note_skip,
    seeded_rng,
    tool_entry,
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

    Returns the report (with each record's source sample). Streams: one sample at a time, each
    record appended to its category's files as it is made."""
    samples = SplitSamples(split_dir)
    rng = seeded_rng(seed, "acebench_special")
    counts: dict[str, int] = {"special_incomplete": 0, "special_error_param": 0, "special_irrelevant": 0}
    skipped: list[dict[str, Any]] = []
    sources: dict[str, dict[str, Any]] = {}
    rules: Counter[str] = Counter()
    order = list(range(len(IRRELEVANT_QUESTIONS)))
    rng.shuffle(order)
    out = Path(out_dir)
    with Outputs(out) as files:
        for n, sample in enumerate(samples):
            _special_records(n, sample, seed, order, files, counts, skipped, sources, rules)
        (out / "possible_answer").mkdir(parents=True, exist_ok=True)
        report = derive_report(
            "acebench",
            samples.root,
            samples.count or 0,
            seed,
            list(files.files),
            counts,
            skipped,
            error_param_rules=dict(sorted(rules.items())),
            sources=sources,
        )
        files.json(REPORT, report)
        files.commit()
    return report


def _special_records(
    n: int,
    sample: Any,
    seed: int,
    order: list[int],
    files: Outputs,
    counts: dict[str, int],
    skipped: list[dict[str, Any]],
    sources: dict[str, dict[str, Any]],
    rules: Counter[str],
) -> None:
    """One sample's special records, appended to ``data_<category>.json`` and ``possible_answer/``."""
    sid = sample.id or f"sample{n}"
    functions = [tool_entry(t) for t in candidate_tools(sample, seed, "acebench")]
    note = sample_setup_note(sample)
    query, hint = sample_query(sample), sample.context
    lits = call_literals(sample)
    made_here: list[tuple[str, str, Any, dict[str, Any]]] = []  # (category, question, gold, provenance)

    # incomplete
    if not lits:
        note_skip(skipped, sample, "special_incomplete", "no_literal_in_question")
    else:
        call, arg, value, _form = lits[0]
        forms = value_forms(value)
        placeholder = (
            "N"
            if is_number_like(value)
            else f"a certain {argument_noun(call, arg, next((t for t in sample.tools if t.name == call.name), None))}"
        )
        text = replace_forms(query, forms, placeholder, eat_quotes=True)
        text = re.sub(r"\b(?:the|a|an) (a certain )", r"\1", text, flags=re.IGNORECASE)
        keep_hint = hint if hint and not any(find_form(hint, f) for f in forms) else None
        if any(form_spans(text, f) for f in forms):
            note_skip(skipped, sample, "special_incomplete", "literal_still_in_question")
        else:
            made_here.append(
                (
                    "special_incomplete",
                    acebench_question(text, keep_hint, note),
                    {call.name: [arg]},
                    {"api": call.name, "argument": arg},
                )
            )
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
        made_here.append(
            (
                "special_error_param",
                acebench_question(text, new_hint, note),
                {arg: [token]},
                {"api": call.name, "argument": arg, "rule": rule},
            )
        )
        made = True
        break
    if not made:
        note_skip(
            skipped, sample, "special_error_param", "no_literal_in_question" if not lits else "no_corruption_rule"
        )
    # irrelevant
    template = IRRELEVANT_QUESTIONS[order[n % len(order)]]
    srng = seeded_rng(seed, sid, "irrelevant")
    fill = {k: srng.choice(v) for k, v in FILL_VALUES.items()}
    made_here.append(("special_irrelevant", acebench_question(template.format(**fill), None, ""), IRRELEVANT_GOLD, {}))
    for category, question, gold, prov in made_here:
        rid = f"{category}_{counts[category]}"
        name = f"data_{category}.json"
        files.lines(name).add({"id": rid, "question": question, "function": functions})
        files.lines(f"possible_answer/{name}").add({"id": rid, "ground_truth": gold})
        counts[category] += 1
        sources[rid] = {"source_sample": sid, **prov}
