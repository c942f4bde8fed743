"""Special cases from accepted samples (ACEBench special + ToolAssess awareness): a request with a
required value left out (``incomplete``), with a wrong value (``error_param``), one the tools
cannot serve (``irrelevant``), one answerable without tools (``no_tool``) and one that needs an
action the tools lack (``cannot_complete``).

Per item (a sample times a kind): ``pick`` (pure, seeded by :func:`item_rng`) chooses what to
change and writes a deterministic draft with the helpers of ``benchsmith.eval`` derive (which
literal to drop or corrupt, which out-of-scope template); ``rewrite`` (generator) turns the draft
into a natural request; ``check`` (pure) rejects a rewrite that still states the dropped value
(``value_still_present``), lost the wrong value (``wrong_value_missing``), kept the right one
(``original_value_present``), names a tool, repeats the original, and so on.

Outputs keep the sample's tools and set-up, have no gold call, ``categories ["special", kind]``
and the answer each benchmark scores: ``{api: [argument]}`` (incomplete) and ``{argument:
[wrong value]}`` (error_param) as in ACEBench's possible answers, the "limitations of the
function" reference (irrelevant), ``{"label": "no_tool" | "cannot_complete"}`` (ToolAssess
awareness). ``metadata.special.record`` holds the benchmark's own record fields.

>>> parse_kinds("incomplete, irrelevant")
('incomplete', 'irrelevant')
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from benchsmith.construction import (
    ACCEPTED,
    BaseState,
    ConstructionGraph,
    GraphOptions,
    ModelStep,
    graph,
    item_rng,
    json_object,
    model_node,
    nonempty_text,
    pipeline,
    reject,
)
from benchsmith.schemas import Sample, UserError

from ._tools import fewshot_texts, names_tool, normal, setup_text, tool_view

KINDS = ("incomplete", "error_param", "irrelevant", "no_tool", "cannot_complete")
ACEBENCH_KINDS = ("incomplete", "error_param", "irrelevant")
QUERY = {"type": "string", "minLength": 12, "maxLength": 500}
MIN_LEN, MAX_LEN = 12, 600


def parse_kinds(value: Any) -> tuple[str, ...]:
    """The kinds of option ``kinds`` (a list or a comma-separated string; default all five)."""
    if value is None or value == "":
        return KINDS
    names = [k.strip() for k in (value.split(",") if isinstance(value, str) else value) if str(k).strip()]
    unknown = [k for k in names if k not in KINDS]
    if unknown or not names:
        raise UserError(
            f"unknown special kind(s): {', '.join(unknown) or '(none)'}", fix=f"choose from {', '.join(KINDS)}"
        )
    return tuple(dict.fromkeys(names))


def read_samples(source: Any, what: str) -> list[Sample]:
    """Accepted samples with a query and at least one visible gold call, from a samples JSONL file,
    a run folder or a split folder (``samples.jsonl`` inside). Rejected samples are left out."""
    from benchsmith.schemas import Split, read_jsonl

    path = Split.samples_file(source, fix=f"pass a samples JSONL file or a split folder ({what})")
    out = []
    for s in read_jsonl(path, Sample):
        if s.query is None or (s.verification is not None and s.verification.status == "rejected"):
            continue
        if any(st.call is not None and not st.hidden for st in s.gold):
            out.append(s)
    if not out:
        raise UserError(f"{path} has no sample with a query and gold calls", fix=f"pass accepted samples ({what})")
    return out


def sample_of(data: dict[str, Any]) -> Sample:
    return Sample.model_validate(data)


# -- pick (pure) --------------------------------------------------------------------------------------
def _required(sample: Sample, name: str) -> set[str]:
    tool = next((t for t in sample.tools if t.name == name), None)
    return set(tool.parameters.required) if tool is not None else set()


def pick(state: dict[str, Any]) -> dict[str, Any]:
    """What to change (seeded by the item), a deterministic draft and the expected answer."""
    from benchsmith.construction import variants as v

    kind = state["item"]["kind"]
    sample = sample_of(state["item"]["sample"])
    rng = item_rng(state, "pick")
    query, hint = v.sample_query(sample), sample.context
    sid = sample.id or state["item_id"]
    context: str | None = None
    if kind == "incomplete":
        lits = v.call_literals(sample)
        if not lits:
            return reject("pick", "no_literal", "the request states no argument value of its gold calls")
        required = [lit for lit in lits if lit[1] in _required(sample, lit[0].name)]
        call, arg, value, _form = rng.choice(required or lits)
        forms = v.value_forms(value)
        tool = next((t for t in sample.tools if t.name == call.name), None)
        noun = v.argument_noun(call, arg, tool)
        placeholder = "N" if v.is_number_like(value) else f"a certain {noun}"
        draft = v.replace_forms(query, forms, placeholder, eat_quotes=True)
        draft = re.sub(r"\b(?:the|a|an) (a certain )", r"\1", draft, flags=re.IGNORECASE)
        context = hint if hint and not any(v.find_form(hint, f) for f in forms) else None
        change = {
            "api": call.name,
            "argument": arg,
            "value": value,
            "forms": forms,
            "placeholder": placeholder,
            "noun": noun,
            "required": bool(required),
        }
        truth: Any = {call.name: [arg]}
    elif kind == "error_param":
        options = []
        for call, arg, value, form in v.call_literals(sample):
            bad = v.corrupt_value(value, form, state.get("seed", 0), sid)
            if bad is not None:
                options.append((call, arg, value, form, *bad))
        if not options:
            return reject("pick", "no_corruptible_value", "no argument value stated in the request can be corrupted")
        call, arg, value, form, wrong, rule = rng.choice(options)
        draft = v.replace_forms(query, [form], wrong, eat_quotes=False)
        context = v.replace_forms(hint, [form], wrong, eat_quotes=False) if hint else None
        tool = next((t for t in sample.tools if t.name == call.name), None)
        change = {
            "api": call.name,
            "argument": arg,
            "value": value,
            "forms": v.value_forms(value),
            "wrong": wrong,
            "rule": rule,
            "noun": v.argument_noun(call, arg, tool),
        }
        truth = {arg: [wrong]}
    elif kind == "irrelevant":
        fill = {k: rng.choice(v) for k, v in v.FILL_VALUES.items()}
        draft = rng.choice(v.IRRELEVANT_QUESTIONS).format(**fill)
        change, truth = {"topic": draft}, v.IRRELEVANT_GOLD
    elif kind == "no_tool":
        variant = rng.choice(("answer_given", "rephrase"))
        draft = v.no_tool_variant(sample, variant, rng) or v.no_tool_variant(sample, variant := "rephrase", rng)
        change, truth = {"variant": variant}, {"label": "no_tool"}
    elif kind == "cannot_complete":
        text = v.tools_text(sample)
        variants = ["missing_column", "write_action", "missing_table"]
        first = rng.choice(variants)
        for variant in [first, *(v for v in variants if v != first)]:
            draft = v.cannot_variant(sample, variant, rng, text)
            if draft:
                break
        change, truth = {"variant": variant}, {"label": "cannot_complete"}
    else:
        return reject("pick", "unknown_kind", f"unknown special kind {kind!r}")
    return {"draft": draft, "context": context, "change": change, "truth": truth}


# -- rewrite (generator) --------------------------------------------------------------------------------
_TASKS = {
    "incomplete": "Leave out the {what}: the request must not state {value} (nor any other value for it), so the "
    "assistant has to ask for it.",
    "error_param": "State the {what} as {wrong} exactly as written, an invalid value the assistant must flag.",
    "irrelevant": "Write a request on this topic that none of the tools can serve.",
    "no_tool": "Write a request about the same subject that needs no tool: chit-chat, a rewrite or an answer "
    "already given.",
    "cannot_complete": "Write a request that needs an action or data the tools do not offer.",
}


def _rewrite_vars(state: dict[str, Any]) -> dict[str, Any]:
    item, change = state["item"], state["change"]
    sample = item["sample"]
    _, tools = tool_view(sample["tools"])
    what = str(change.get("noun") or change.get("argument") or "value").replace("_", " ")
    value = change.get("value")
    task = _TASKS[item["kind"]].format(what=what, value=f'"{value}"', wrong=f'"{change.get("wrong", "")}"')
    return {
        "kind": item["kind"],
        "tools": tools,
        "setup_note": setup_text(sample.get("setup") or []),
        "original": sample["query"],
        "draft": state["draft"],
        "task": task,
    }


def _parse_rewrite(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("query",))
    return {"query": nonempty_text(value["query"], "query", min_len=5)}


REWRITE = ModelStep(
    "rewrite",
    "generator",
    "construction/special_rewrite",
    _rewrite_vars,
    _parse_rewrite,
    schema=lambda s: {"type": "object", "properties": {"query": QUERY}, "required": ["query"]},
    max_tokens=200,
)


# -- check (pure) -----------------------------------------------------------------------------------------
def check_rewrite(
    kind: str, query: str, original: str, change: dict[str, Any], tools: list[dict[str, Any]]
) -> tuple[str, str] | None:
    """(code, reason) when the rewritten ``query`` fails the checks of ``kind``, else None.

    >>> check_rewrite("incomplete", "List the customers based in a certain country.", "List the customers in Brazil.",
    ...               {"forms": ["Brazil"]}, [])
    >>> check_rewrite("incomplete", "List the customers who live in Brazil.", "List the customers in Brazil.",
    ...               {"forms": ["Brazil"]}, [])[0]
    'value_still_present'
    """
    from benchsmith.construction import variants as v

    if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", query):
        return "control_characters", "the query contains control characters"
    if not MIN_LEN <= len(query) <= MAX_LEN:
        return "bad_length", f"the query has {len(query)} characters ({MIN_LEN}-{MAX_LEN} allowed)"
    named = names_tool(query, tools)
    if named:
        return "names_tool", f"the query names the tool {named!r}"
    if kind == "incomplete":
        left = [f for f in change.get("forms") or [] if v.form_spans(query, f)]
        if left:
            return "value_still_present", f"the query still states the dropped value {left[0]!r}"
    elif kind == "error_param":
        if not v.form_spans(query, str(change["wrong"])):
            return "wrong_value_missing", f"the query does not state the wrong value {change['wrong']!r}"
        left = [f for f in change.get("forms") or [] if v.form_spans(query, f)]
        if left:
            return "original_value_present", f"the query still states the right value {left[0]!r}"
    if normal(query) == normal(original):
        return "unchanged", "the query repeats the original request"
    return None


def _record(kind: str, sample: Sample, query: str, context: str | None, truth: Any) -> dict[str, Any]:
    from benchsmith.construction import variants as v

    if kind in ACEBENCH_KINDS:
        note = v.sample_setup_note(sample) if kind != "irrelevant" else ""
        return {
            "benchmark": "acebench",
            "category": f"special_{kind}",
            "question": v.acebench_question(query, context, note),
            "ground_truth": truth,
        }
    return {
        "benchmark": "toolassess",
        "task": "awareness",
        "query": v.with_hint(query, context),
        "label": truth["label"],
    }


def check(state: dict[str, Any]) -> dict[str, Any]:
    """Pure checks of the rewrite, then the special sample."""
    from benchsmith.construction import variants as v

    item, query, change = state["item"], state["query"], state["change"]
    kind, raw = item["kind"], item["sample"]
    failed = check_rewrite(kind, query, raw["query"], change, raw["tools"])
    if failed is None and normal(query) in fewshot_texts(REWRITE.messages(state)):
        failed = ("copied_fewshot", "the query copies a few-shot example of the prompt")
    if failed is not None:
        return reject("check", *failed)
    sample = sample_of(raw)
    context = state.get("context") if kind in ("incomplete", "error_param") else None
    truth = state["truth"]
    if kind == "irrelevant":
        answer: dict[str, Any] = {"kind": "reference", "references": [v.IRRELEVANT_GOLD]}
    else:
        answer = {"kind": "exact", "value": truth}
    metadata = {
        "special": {
            "kind": kind,
            "source_sample": sample.id,
            "original_query": raw["query"],
            "draft": state["draft"],
            "change": change,
            "record": _record(kind, sample, query, context, truth),
        }
    }
    env = (raw.get("metadata") or {}).get("environment")
    if env:
        metadata["environment"] = env
    out = {
        "query": query,
        "context": context,
        "tools": raw["tools"],
        "setup": raw.get("setup") or [],
        "gold": [],
        "answer": answer,
        "categories": ["special", kind],
        "metadata": metadata,
    }
    return {"status": ACCEPTED, "outputs": [out]}


class SpecialState(BaseState, total=False):
    draft: str
    context: str | None
    change: dict[str, Any]
    truth: Any
    query: str


class SpecialOptions(GraphOptions):
    kinds: list[str] | str | None = Field(
        None, description="kinds to make (a list, or names separated by commas); default all five"
    )


@graph("special")
class SpecialGraph(ConstructionGraph):
    description = "accepted sample x kind -> pick what to change (pure) -> generator rewrites -> pure checks"
    roles = ("generator",)
    steps = (REWRITE,)
    Options = SpecialOptions

    def read_items(self, source: Any) -> list[tuple[str, dict[str, Any]]]:
        kinds = parse_kinds(self.options.kinds)
        items = []
        for s in read_samples(source, "accepted samples with gold calls"):
            data = s.model_dump(mode="json", exclude_none=True, exclude={"verification"})
            for kind in kinds:
                items.append((f"{s.id}:{kind}", {"kind": kind, "sample": data}))
        return items

    def build(self) -> Any:
        return pipeline(
            SpecialState,
            [
                ("pick", pick),
                ("rewrite", model_node(REWRITE)),
                ("check", check),
            ],
        )


__all__ = ["KINDS", "SpecialGraph", "check_rewrite", "parse_kinds", "pick", "read_samples"]
